"""The learned ranking stage: the shipped model re-orders a pasted issue's candidates and
says which features decided each hit; a short question keeps the fused order."""
from __future__ import annotations

import math

import pytest

from fourfold import Fourfold
from fourfold.errors import QueryError
from fourfold.query.model import Query
from fourfold.ranking.learned import EXPLAINED, FEATURES, LearnedRanking, _booster, \
    candidate_features
from tests.conftest import write_tree
from tests.query.test_mentions import FILES, ISSUE


@pytest.fixture(scope="module")
def ff(tmp_path_factory):
    ff = Fourfold(write_tree(tmp_path_factory.mktemp("learned"), FILES))
    ff.index(embed=False)
    yield ff
    ff.close()


def test_the_shipped_model_reads_the_features_the_stage_computes():
    ranking = LearnedRanking()
    assert ranking.available
    assert _booster(str(ranking.path)).feature_name() == list(FEATURES)


def test_a_pasted_issue_is_ranked_by_the_model_and_explained(ff):
    response = ff.search(ISSUE, limit=5)
    assert response.hits
    for hit in response.hits:
        assert set(hit.learned) - {"score"} <= set(FEATURES)
        assert len(hit.learned) == EXPLAINED + 1
    scores = [h.learned["score"] for h in response.hits]
    assert scores == sorted(scores, reverse=True)
    assert "learned" in response.hits[0].to_dict()


def test_a_short_question_and_the_fused_ranking_leave_the_model_out(ff):
    assert not any(h.learned for h in ff.search("how is a message rendered").hits)
    assert not any(h.learned for h in ff.search(ISSUE, ranking="fused").hits)
    with pytest.raises(QueryError, match="unknown ranking"):
        ff.search(ISSUE, ranking="neural")


def test_features_name_the_files_and_frames_the_issue_mentions(ff):
    response = ff.search(ISSUE, ranking="fused", granularity="span", limit=50)
    query = Query(text=ISSUE, intent=response.intent)
    rows = candidate_features(response.hits, query, ff.snapshots.current())
    column = {name: i for i, name in enumerate(FEATURES)}
    by_path = {}
    for hit, row in zip(response.hits, rows):
        by_path.setdefault(hit.path, row)
    message = by_path["mailer/message.py"]
    assert message[column["path_mentioned"]] == 1.0
    # frames: test_mail.py (1 of 3), message.py (2 of 3); the stdlib frame is not indexed
    assert message[column["frame_position"]] == pytest.approx(2 / 3)
    assert by_path["mailer/tests/test_mail.py"][column["test"]] == 1.0
    if "docs/mail.md" in by_path:
        docs = by_path["docs/mail.md"]
        assert docs[column["prose"]] == 1.0 and math.isnan(docs[column["frame_position"]])


def test_without_lightgbm_a_pasted_text_keeps_the_fused_order_and_says_why(
        tmp_path, monkeypatch):
    import fourfold.ranking.learned as learned

    def no_runtime(path):
        raise OSError("libgomp.so.1: cannot open shared object file")

    monkeypatch.setattr(learned, "_booster", no_runtime)
    ff = Fourfold(write_tree(tmp_path, FILES))
    ff.index(embed=False)
    fused = [(h.path, h.start_line) for h in ff.search(ISSUE, ranking="fused").hits]
    response = ff.search(ISSUE)
    assert [(h.path, h.start_line) for h in response.hits] == fused
    assert "libgomp" in response.unavailable["learned_ranking"]
    assert not any(h.learned for h in response.hits)
    assert "learned_ranking" not in ff.search(ISSUE, ranking="fused").unavailable
    ff.close()
