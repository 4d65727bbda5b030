"""The learned ranking stage: the shipped model re-orders a pasted issue's candidates and
says which features decided each hit; a short question keeps the fused order."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from fourfold import Fourfold
from fourfold.errors import QueryError
from fourfold.query.model import Query
from fourfold.model import Hit
from fourfold.ranking.learned import EXPLAINED, FEATURES, LearnedRanking, _loaded_model, \
    candidate_features, with_headline
from tests.conftest import write_tree
from tests.query.test_mentions import FILES, ISSUE


@pytest.fixture(scope="module")
def ff(tmp_path_factory):
    ff = Fourfold(write_tree(tmp_path_factory.mktemp("learned"), FILES))
    ff.index(embed=False)
    yield ff
    ff.close()


def _small_model(path: Path, feature: str) -> Path:
    """A model trained on one feature alone, a candidate's rank by it: the lower, the
    better."""
    import lightgbm
    import numpy as np

    ranks = np.tile(np.arange(1.0, 6.0), 40)[:, None]
    lightgbm.train({"objective": "lambdarank", "min_data_in_leaf": 1, "verbose": -1},
                   lightgbm.Dataset(ranks, 5 - ranks[:, 0], group=[5] * 40,
                                    feature_name=[feature]),
                   num_boost_round=5).save_model(str(path))
    return path


def test_the_shipped_models_read_features_the_stage_computes():
    ranking = LearnedRanking()
    assert ranking.available
    assert _loaded_model(str(ranking.path))[0].feature_name() == list(FEATURES)
    assert _loaded_model(str(ranking.deep_path))[0].feature_name() == list(FEATURES)
    assert ranking.reads_headline(deep=False) and ranking.reads_headline(deep=True)


def test_an_issue_title_is_its_headline():
    assert Query(ISSUE).headline == ("Email messages crash on non-ASCII domain when email "
                                     "encoding is non-unicode.")
    assert Query("how is a message rendered").headline is None  # a question, not a text
    body = "\n".join(ISSUE.splitlines()[1:])
    assert Query("Traceback (most recent call last):\n" + body).headline is None
    assert Query("Crash.\n" + body).headline is None  # a word is not a title
    assert Query(" ".join(["word"] * 40) + "\n" + body).headline is None  # nor a paragraph
    one_line = ("QuerySet.update crashes on a model whose primary key is a UUID field when "
                "called with F expressions on PostgreSQL")
    assert Query(one_line).pasted and Query(one_line).headline is None  # nothing below it
    assert Query(one_line + "\n" + body).headline == one_line


def test_files_only_the_headline_found_follow_the_candidates():
    listed = [Hit("a.py", 1, 5, 0.9, ranks={"text": 1}), Hit("b.py", 3, 4, 0.5, ranks={"text": 2})]
    headline = [Hit("b.py", 1, 9, 0.7, ranks={"semantic": 1}),
                Hit("c.py", 2, 8, 0.6, ranks={"text": 2}, contributions={"text": 0.6},
                    factors={"centrality": 1.2}, file_support=0.3, definition_support=0.2,
                    learned={"score": 1.0}, named=True, uses_mentioned=2)]
    merged = with_headline(listed, headline)
    assert [(h.path, h.start_line) for h in merged] == [("a.py", 1), ("b.py", 3), ("c.py", 2)]
    # what the headline's own search said of it is not shown as said here
    assert merged[2] == Hit("c.py", 2, 8, 0.0)
    assert headline[1].ranks == {"text": 2}  # the headline's own answers are left as they were


def test_features_say_where_the_headline_found_a_candidate(ff):
    response = ff.search(ISSUE, ranking="fused", granularity="span", limit=50)
    query = Query(text=ISSUE, intent=response.intent)
    message = next(h for h in response.hits if h.path == "mailer/message.py")
    others = [h for h in response.hits if h.path != "mailer/message.py"]
    elsewhere = Hit(message.path, message.end_line + 1, message.end_line + 3, 0.1)
    headline = [Hit("mailer/message.py", message.start_line, message.end_line, 1.0)]
    rows = candidate_features([message, elsewhere, *others], query, ff.snapshots.current(),
                              headline)
    rank, span = FEATURES.index("headline_rank"), FEATURES.index("headline_span")
    assert rows[0][rank] == 1.0 and rows[0][span] == 1.0
    assert rows[1][rank] == 1.0 and rows[1][span] == 0.0  # the same file, another span
    assert all(math.isnan(row[rank]) and row[span] == 0.0 for row in rows[2:])


def test_the_model_ranks_the_files_only_the_headline_found(ff, tmp_path):
    response = ff.search(ISSUE, ranking="fused", granularity="span", limit=50)
    query = Query(text=ISSUE, intent=response.intent)
    listed = [h for h in response.hits if h.path != "mailer/headers.py"]
    headline = [Hit("mailer/headers.py", 1, 2, 1.0, ranks={"text": 1})]
    ranked = LearnedRanking().rerank(listed, query, ff.snapshots.current(), headline=headline)
    assert len(ranked) == len(listed) + 1
    found = next(h for h in ranked if h.path == "mailer/headers.py")
    assert found.learned and not found.ranks
    # a model trained without the headline's features ranks the candidates alone
    without = LearnedRanking(path=_small_model(tmp_path / "ranker.txt", "fused_rank"))
    assert not without.reads_headline(deep=False)
    ranked = without.rerank(listed, query, ff.snapshots.current(), headline=headline)
    assert sorted(map(id, ranked)) == sorted(map(id, listed))


def test_an_issue_title_is_read_whatever_its_line_break():
    body = ("When the hostname is set in unicode, rendering any message fails.\nSteps: build "
            "a message, patch DNS_NAME with a non-ASCII host and call render().")
    for text in ("Email crashes on unicode domains.\r" + body.replace("\n", "\r"),
                 "Email crashes on unicode domains.\u2028" + body.replace("\n", "\u2028"),
                 "Email crashes on unicode domains.\r\n" + body.replace("\n", "\r\n")):
        assert Query(text).headline == "Email crashes on unicode domains."


def test_the_headline_answers_the_engine_hands_the_model_are_the_headlines(ff, monkeypatch):
    handed = []
    rerank = ff.engine.learned.rerank

    def spy(hits, query, snapshot, deep=False, headline=()):
        handed.append([h.path for h in headline])
        return rerank(hits, query, snapshot, deep=deep, headline=headline)

    monkeypatch.setattr(ff.engine.learned, "rerank", spy)
    ff.search(ISSUE)
    alone = ff.search(Query(ISSUE).headline, ranking="fused", granularity="file", limit=20)
    assert handed[0] == [h.path for h in alone.hits] and handed[0]


def test_a_filtered_issue_asks_its_headline_for_as_many_candidates_as_itself(ff, monkeypatch):
    asked = []
    text = ff.engine.retrievers["text"]
    search = text.search

    def spy(query, limit):
        asked.append((query.text, limit))
        return search(query, limit)

    monkeypatch.setattr(text, "search", spy)
    ff.search(ISSUE, languages=("python",))
    limits = dict(asked)
    assert limits[ISSUE] == limits[Query(ISSUE).headline]


def test_a_model_reads_its_own_features_by_name(ff, tmp_path):
    """A model trained on the headline's rank alone ranks by it, wherever that column is."""
    _small_model(tmp_path / "ranker.txt", "headline_rank")
    response = ff.search(ISSUE, ranking="fused", granularity="span", limit=50)
    listed = list({h.path: h for h in response.hits}.values())[:4]
    headline = [Hit(h.path, h.start_line, h.end_line, 1.0) for h in reversed(listed)]
    ranking = LearnedRanking(path=tmp_path / "ranker.txt")
    ranked = ranking.rerank(listed, Query(ISSUE, intent=response.intent),
                            ff.snapshots.current(), headline=headline)
    assert [h.path for h in ranked] == [h.path for h in headline]


@pytest.mark.parametrize("damage, said", [
    (lambda text: text[:5000], "ranker.txt"),  # cut short inside its trees
    (lambda text: text.replace("feature_names=pasted ", "feature_names=pasted_twice ", 1),
     "pasted_twice"),  # a feature this version does not compute
])
def test_a_damaged_model_file_keeps_the_fused_order_and_says_why(ff, tmp_path, monkeypatch,
                                                                 damage, said):
    model = tmp_path / "ranker.txt"
    model.write_text(damage(LearnedRanking().path.read_text()))
    monkeypatch.setattr(ff.engine, "learned", LearnedRanking(path=model))
    fused = [(h.path, h.start_line) for h in ff.search(ISSUE, ranking="fused").hits]
    response = ff.search(ISSUE)
    assert [(h.path, h.start_line) for h in response.hits] == fused
    assert said in response.unavailable["learned_ranking"]


def test_a_pasted_issue_searches_its_headline_where_the_model_reads_it(ff):
    assert "headline" in ff.search(ISSUE).timings_ms
    assert "headline" not in ff.search(ISSUE, ranking="fused").timings_ms
    no_title = "Traceback (most recent call last):\n" + ISSUE.split("\n", 1)[1]
    assert "headline" not in ff.search(no_title).timings_ms


def test_a_model_without_the_headline_features_is_not_given_its_search(ff, monkeypatch,
                                                                      tmp_path):
    without = _small_model(tmp_path / "ranker.txt", "fused_rank")
    monkeypatch.setattr(ff.engine, "learned", LearnedRanking(path=without))
    response = ff.search(ISSUE)
    assert "headline" not in response.timings_ms
    assert response.hits and all(h.learned for h in response.hits)


def test_a_pasted_issue_is_ranked_by_the_model_and_explained(ff):
    response = ff.search(ISSUE, limit=5)
    assert response.hits
    for hit in response.hits:
        assert set(hit.learned) - {"score"} <= set(FEATURES)
        assert len(hit.learned) == EXPLAINED + 1
    scores = [h.learned["score"] for h in response.hits]
    assert scores == sorted(scores, reverse=True)
    assert "learned" in response.hits[0].to_dict()


def test_only_the_answers_kept_are_explained_each_by_its_own_contributions(ff):
    """The model scores every candidate; the features that moved a score (SHAP values, many
    times the score's cost) are worked out for the answers kept, and are the model's own:
    the largest of the candidate's contributions, which sum to its score."""
    response = ff.search(ISSUE, ranking="fused", granularity="span", limit=30)
    ranking = LearnedRanking()
    ranked = ranking.rerank(response.hits, Query(ISSUE, intent=response.intent),
                            ff.snapshots.current())
    assert len(ranked) > 5 and all(set(hit.learned) == {"score"} for hit in ranked)
    booster, columns = _loaded_model(str(ranking.path))
    rows = [hit.learned_row.copy() for hit in ranked[:5]]
    ranking.explain(ranked[:5])
    for hit, contributions in zip(ranked, booster.predict(rows, pred_contrib=True)):
        assert sum(contributions) == pytest.approx(hit.learned["score"])
        largest = sorted(range(len(columns)), key=lambda f: -abs(contributions[f]))
        assert {name: value for name, value in hit.learned.items() if name != "score"} \
            == pytest.approx({FEATURES[columns[f]]: contributions[f]
                              for f in largest[:EXPLAINED]})
        assert hit.learned_row is None
    assert all(set(hit.learned) == {"score"} for hit in ranked[5:])


def test_an_issue_is_answered_where_no_semantic_model_loads(tmp_path, monkeypatch):
    """Whether the title's search is worth running asks which model will answer the
    semantic modality, before it runs: a model that cannot be loaded is said as the
    modality runs, and the others answer."""
    from fourfold.semantic.embedder import EmbedderUnavailable

    ff = Fourfold(write_tree(tmp_path, FILES))
    ff.index(embed=False)

    def broken():
        raise EmbedderUnavailable("onnxruntime is not installed")
    monkeypatch.setattr(ff.semantic, "_factory", broken)
    response = ff.search(ISSUE)
    assert response.hits and "onnxruntime" in response.unavailable["semantic"]
    assert "headline" in response.timings_ms
    ff.close()


def test_a_failing_title_search_leaves_no_modality_running(tmp_path, monkeypatch):
    """The title is searched while the modalities search the whole text: whatever it
    raises, they have finished when the question's error reaches the caller."""
    import time

    ff = Fourfold(write_tree(tmp_path, FILES))
    ff.index(embed=False)
    text = ff.engine.retrievers["text"]
    search, finished = text.search, []

    def slow(query, limit):
        time.sleep(0.2)
        hits = search(query, limit)
        finished.append(query.text)
        return hits
    monkeypatch.setattr(text, "search", slow)

    def failing(deep):
        raise RuntimeError("the title's search failed")
    monkeypatch.setattr(ff.engine.learned, "reads_headline", failing)
    with pytest.raises(RuntimeError, match="title's search failed"):
        ff.search(ISSUE)
    assert finished == [ISSUE]
    ff.close()


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

    monkeypatch.setattr(learned, "_loaded_model", no_runtime)
    ff = Fourfold(write_tree(tmp_path, FILES))
    ff.index(embed=False)
    fused = [(h.path, h.start_line) for h in ff.search(ISSUE, ranking="fused").hits]
    response = ff.search(ISSUE)
    assert [(h.path, h.start_line) for h in response.hits] == fused
    assert "libgomp" in response.unavailable["learned_ranking"]
    assert not any(h.learned for h in response.hits)
    assert "learned_ranking" not in ff.search(ISSUE, ranking="fused").unavailable
    ff.close()
