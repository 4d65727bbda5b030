"""The deep pass: the transformer embeds a repository's chunks after the index is complete,
and its codes then answer semantic questions in place of the static model's."""
from __future__ import annotations

import json
import threading
import time

import pytest

from fourfold import Fourfold
from fourfold.interfaces.cli import main
from fourfold.semantic.embedder import DEFAULT_MODEL, load_embedder
from fourfold.store.base import deep_codes_setting

FILES = {
    "mail.py": '''\
        def send_welcome_email(user):
            """Send a greeting message to a newly registered user."""
            return smtp.deliver(user.address, "Welcome aboard")
        ''',
    "geometry.py": '''\
        def polygon_area(points):
            """Area enclosed by a closed polygon (shoelace formula)."""
            total = 0
            for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1]):
                total += x1 * y2 - x2 * y1
            return abs(total) / 2
        ''',
    "cache.py": '''\
        def evict_oldest(entries):
            """Drop the least recently used entry of the cache."""
            return entries.popitem(last=False)
        ''',
}


@pytest.fixture(autouse=True)
def fresh_vector_cache(monkeypatch, tmp_path):
    """The counts of chunks a pass embeds assume no vector is known beforehand."""
    monkeypatch.setenv("FOURFOLD_CACHE_DIR", str(tmp_path / "vector-cache"))


def semantic_paths(ff: Fourfold, question: str) -> list[str]:
    return [h.path for h in ff.search(question, modalities=("semantic",)).hits]


def test_the_deep_model_answers_once_the_pass_has_made_its_codes(make_tree):
    root = make_tree(FILES)
    ff = Fourfold(root)
    ff.index()
    repo_id = ff.repo_id()
    assert ff.semantic.answering(repo_id).name == DEFAULT_MODEL
    assert "deep pass" not in ff.status()["modalities"]["semantic"]
    chunks = ff.store.repos(only=[repo_id])[0].chunks
    assert ff.deepen() == chunks > 0
    assert ff.store.code_mean(repo_id, "minilm") is not None
    assert ff.semantic.answering(repo_id).name == "minilm"
    assert ff.status()["modalities"]["semantic"].endswith(
        "answered by the deep pass's model, minilm)")
    assert semantic_paths(ff, "compute the area of a shape")[0] == "geometry.py"
    # the pass's model is its own: questions never wait for its batches
    assert ff.__dict__["_deep_pass_model"] is not ff.semantic.deep_embedder
    assert ff.deepen() == 0  # nothing twice
    # another process opening the index answers with it too; one without a deep model not
    assert Fourfold(root).semantic.answering(repo_id).name == "minilm"
    assert Fourfold(root, deep_embedder=None).semantic.answering(repo_id).name == DEFAULT_MODEL


def test_chunks_written_during_a_pass_are_embedded_before_its_codes_are_taken(
        make_tree, monkeypatch):
    from fourfold.semantic import indexing

    root = make_tree(FILES)
    ff = Fourfold(root)
    ff.index()
    embed_pending, calls = indexing.embed_pending, []

    def meanwhile_an_index_run(*args, **kwargs):
        done = embed_pending(*args, **kwargs)
        if kwargs.get("stage") != "deep":  # the index run's own embedding
            return done
        calls.append(done)
        if len(calls) == 1:  # between the pass's batches and its codes, a file is written
            (root / "billing.py").write_text(
                "def refund_order(order):\n    return order.reverse()\n")
            Fourfold(root).index()
        return done

    monkeypatch.setattr(indexing, "embed_pending", meanwhile_an_index_run)
    chunks = ff.store.repos(only=[ff.repo_id()])[0].chunks
    assert ff.deepen() == chunks + 1 and calls == [chunks, 1]
    assert ff.semantic.answering(ff.repo_id()).name == "minilm"
    assert ff.store.chunks_missing_vectors("minilm", 10, repo_id=ff.repo_id()) == []
    assert semantic_paths(ff, "give the customer their money back")[0] == "billing.py"


def test_a_repository_removed_during_a_pass_gets_no_codes(make_tree, tmp_path, monkeypatch):
    from fourfold.semantic import indexing

    where = {"index_dir": tmp_path / "index"}
    root = make_tree(FILES)
    ff = Fourfold(root, repository="acme/one", **where)
    ff.index()
    repo_id, embed_pending = ff.repo_id(), indexing.embed_pending

    def removed_meanwhile(*args, **kwargs):
        done = embed_pending(*args, **kwargs)
        if kwargs.get("stage") == "deep":
            Fourfold(root, **where).remove_repositories(["acme/one"])
        return done

    monkeypatch.setattr(indexing, "embed_pending", removed_meanwhile)
    assert ff.deepen() > 0
    assert ff.store.code_mean(repo_id, "minilm") is None
    assert ff.store.setting(deep_codes_setting(repo_id, "minilm"), 0) == 0


def test_where_the_deep_model_answers_the_learned_stage_uses_the_model_of_its_ranks(
        make_tree, monkeypatch):
    from fourfold.api import DEEP_EMBEDDER
    from fourfold.ranking import learned

    root = make_tree(FILES)
    Fourfold(root).index()
    Fourfold(root).deepen()
    loaded = []
    load = learned._loaded_model
    monkeypatch.setattr(learned, "_loaded_model", lambda path: loaded.append(path) or load(path))
    issue = ("The area computed for a closed polygon is wrong when the points are given "
             "clockwise: the shoelace total comes out negative and the result is not the "
             "absolute value we expected in the report")
    for deep_embedder, model, ranker in ((DEEP_EMBEDDER, "minilm", learned.DEEP_MODEL_PATH),
                                         (None, DEFAULT_MODEL, learned.MODEL_PATH)):
        response = Fourfold(root, deep_embedder=deep_embedder).search(issue)
        assert response.semantic_model == model and response.to_dict()["semantic_model"] == model
        assert loaded[-1] == str(ranker) and response.hits[0].learned
        assert response.hits[0].path == "geometry.py"
    # every chunk embedded by the deep pass's model while indexing: the same ranks
    other = make_tree(FILES)
    ff = Fourfold(other, embedder="minilm")
    ff.index()
    response = ff.search(issue)
    assert response.semantic_model == "minilm" and loaded[-1] == str(learned.DEEP_MODEL_PATH)


def test_a_title_is_searched_where_the_model_that_will_rank_reads_its_answers(
        make_tree, monkeypatch, tmp_path):
    """The title's search runs beside the modalities', so whether it is worth running is
    known before the semantic modality says which model answered: the model that will."""
    from fourfold.api import DEEP_EMBEDDER
    from fourfold.ranking.learned import MODEL_PATH, LearnedRanking
    from tests.routing.test_learned import _small_model

    root = make_tree(FILES)
    Fourfold(root).index()
    Fourfold(root).deepen()
    issue = ("Polygon area comes out negative for clockwise points\nThe shoelace total is "
             "negative when the points are given clockwise, and the report that lists every "
             "parcel shows the negative value as it is instead of the absolute area we "
             "expected, so the totals at the bottom of the page are wrong as well.")
    without_title = _small_model(tmp_path / "ranker-deep.txt", "fused_rank")
    for deep_embedder, searched in ((DEEP_EMBEDDER, False), (None, True)):
        ff = Fourfold(root, deep_embedder=deep_embedder)
        monkeypatch.setattr(ff.engine, "learned", LearnedRanking(MODEL_PATH, without_title))
        response = ff.search(issue)
        assert response.hits and response.hits[0].learned
        assert ("headline" in response.timings_ms) == searched


def test_after_an_edit_the_pass_codes_every_new_chunk(make_tree):
    root = make_tree(FILES)
    ff = Fourfold(root)
    ff.index()
    ff.deepen()
    billing = root / "billing.py"
    billing.write_text('def charge_credit_card(card, amount):\n'
                       '    """Take a payment from a customer\'s card."""\n'
                       '    return gateway.capture(card, amount)\n')
    ff.index()
    # its chunks have no deep code yet: the static model answers meanwhile, billing.py too
    assert ff.semantic.answering(ff.repo_id()).name == DEFAULT_MODEL
    assert "answers again once a pass has coded" in ff.status()["modalities"]["semantic"]
    assert semantic_paths(ff, "take a payment from a customer")[0] == "billing.py"
    assert ff.deepen() == 1
    assert ff.semantic.answering(ff.repo_id()).name == "minilm"
    assert semantic_paths(ff, "take a payment from a customer")[0] == "billing.py"
    # back to an earlier content: its vector is known, nothing is embedded, it is coded
    billing.write_text("def refund_order(order):\n    return order.reverse()\n")
    ff.index()
    ff.deepen()
    billing.write_text('def charge_credit_card(card, amount):\n'
                       '    """Take a payment from a customer\'s card."""\n'
                       '    return gateway.capture(card, amount)\n')
    ff.index()
    assert ff.deepen() == 0
    assert ff.semantic.answering(ff.repo_id()).name == "minilm"
    assert semantic_paths(ff, "take a payment from a customer")[0] == "billing.py"


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_an_indexer_without_the_deep_model_hands_back_to_the_static_one(make_tree, request,
                                                                        store):
    root = make_tree(FILES)
    where = {} if store == "sqlite" else {"store_url": request.getfixturevalue("postgres_url")}
    Fourfold(root, **where).index()
    Fourfold(root, **where).deepen()
    (root / "billing.py").write_text("def refund_order(order):\n    return order.reverse()\n")
    Fourfold(root, deep_embedder=None, **where).index()  # its writes clear the mark as well
    ff = Fourfold(root, **where)
    assert ff.semantic.answering(ff.repo_id()).name == DEFAULT_MODEL
    assert ff.deepen() == 1 and ff.semantic.answering(ff.repo_id()).name == "minilm"


def test_a_deep_model_that_cannot_be_loaded_leaves_the_indexing_model_answering(
        make_tree, monkeypatch):
    from fourfold.semantic.embedder import EmbedderUnavailable

    root = make_tree(FILES)
    Fourfold(root).index()
    Fourfold(root).deepen()
    ff = Fourfold(root)

    def broken():
        raise EmbedderUnavailable("embedding model file is corrupt")

    monkeypatch.setattr(ff, "_load_deep_embedder", broken)
    assert ff.semantic.answering(ff.repo_id()).name == DEFAULT_MODEL
    assert semantic_paths(ff, "compute the area of a shape")[0] == "geometry.py"
    # status says why, not that chunks were written since the pass
    assert ff.status()["modalities"]["semantic"].endswith(
        "; the deep pass's model, minilm, cannot be loaded here (embedding model file is "
        f"corrupt): model {DEFAULT_MODEL} answers)")


def test_an_interrupted_pass_keeps_what_it_embedded_and_answers_as_before(make_tree):
    root = make_tree(FILES)
    ff = Fourfold(root)
    ff.index()
    stop = threading.Event()
    stop.set()
    assert ff.deepen(interrupted=stop) == 0
    assert ff.store.code_mean(ff.repo_id(), "minilm") is None
    assert ff.semantic.answering(ff.repo_id()).name == DEFAULT_MODEL
    assert ff.deepen() > 0


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_the_pass_embeds_only_its_own_repository_of_a_shared_index(make_tree, tmp_path,
                                                                   request, store):
    where = ({"index_dir": tmp_path / "index"} if store == "sqlite"
             else {"store_url": request.getfixturevalue("postgres_url")})
    one = Fourfold(make_tree(FILES, name="one"), repository="acme/one", **where)
    two = Fourfold(make_tree({"two.py": "def beta():\n    return 2\n"}, name="two"),
                   repository="acme/two", **where)
    one.index()
    two.index()
    assert two.deepen() == two.store.repos(only=[two.repo_id()])[0].chunks == 1
    assert one.semantic.answering(one.repo_id()).name == DEFAULT_MODEL
    assert one.deepen() == one.store.repos(only=[one.repo_id()])[0].chunks
    # taken out, it takes its mark with it
    mark = deep_codes_setting(two.repo_id(), "minilm")
    assert two.store.setting(mark, 7) == 1
    one.remove_repositories(["acme/two"])
    assert one.store.setting(mark, 7) == 7


def test_index_deep_on_the_command_line(make_tree, capsys):
    root = make_tree(FILES)
    assert main(["index", str(root), "--deep", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["deep_embedded"] == payload["embedded"] > 0
    assert main(["status", str(root)]) == 0
    assert "answered by the deep pass's model, minilm" in capsys.readouterr().out


def test_closing_a_server_stops_its_deep_pass(make_tree):
    from fourfold.interfaces.mcp.tools import FourfoldService

    root = make_tree({f"m{i}.py": f"def handler_{i}(request):\n    return reply({i})\n"
                      for i in range(400)})
    service = FourfoldService(root, watch=False).start()
    deadline = time.monotonic() + 60
    while not service.ff.store.vector_count("minilm"):
        assert time.monotonic() < deadline, "the deep pass did not start"
        time.sleep(0.05)
    started = time.monotonic()
    service.close()
    assert time.monotonic() - started < 4  # it stopped after its batch, not at its end
    store = Fourfold(root).store
    embedded = store.vector_count("minilm")
    time.sleep(1.5)
    assert 0 < store.vector_count("minilm") == embedded < 400


def test_a_watcher_keeps_a_deep_pass_going_where_one_has_run(make_tree):
    root = make_tree(FILES)
    ff = Fourfold(root)
    ff.index()
    ff.deepen()
    stop = threading.Event()
    watcher = threading.Thread(target=ff.watch, kwargs={"stop": stop, "debounce_ms": 50})
    watcher.start()
    try:
        time.sleep(1.0)  # the watches are set up
        (root / "billing.py").write_text(
            'def charge_credit_card(card, amount):\n'
            '    """Take a payment from a customer\'s card."""\n'
            '    return gateway.capture(card, amount)\n')
        deadline = time.monotonic() + 30
        reader = Fourfold(root)
        while reader.store.file_by_path("billing.py", reader.repo_id()) is None or \
                reader.semantic.answering(reader.repo_id()).name != "minilm":
            assert time.monotonic() < deadline, "the watcher did not run the deep pass"
            time.sleep(0.1)
        assert semantic_paths(reader, "take a payment from a customer")[0] == "billing.py"
    finally:
        stop.set()
        watcher.join(timeout=10)


def test_a_change_under_a_server_comes_before_its_deep_pass(make_tree):
    from fourfold.interfaces.mcp.tools import FourfoldService

    root = make_tree({f"m{i}.py": f"def handler_{i}(request):\n    return reply({i})\n"
                      for i in range(800)})  # half a minute of the pass on one core
    service = FourfoldService(root, watch=True).start()
    try:
        deadline = time.monotonic() + 60
        while not service.ff.store.vector_count("minilm") or not service.watching:
            assert time.monotonic() < deadline, "the deep pass did not start"
            time.sleep(0.05)
        (root / "billing.py").write_text("def refund_order(order):\n    return order.reverse()\n")
        deadline = time.monotonic() + 10  # the pass gives way after its batch
        while service.ff.store.chunks_missing_vectors(DEFAULT_MODEL, 1) or \
                service.ff.store.file_by_path("billing.py", service.ff.repo_id()) is None:
            assert time.monotonic() < deadline, "the change waited for the deep pass"
            time.sleep(0.05)
        assert service.ff.store.vector_count("minilm") < 800
    finally:
        service.close()


def test_a_server_runs_the_pass_in_the_background(make_tree):
    from fourfold.interfaces.mcp.tools import FourfoldService

    root = make_tree(FILES)
    service = FourfoldService(root, watch=False).start()
    try:
        deadline = time.monotonic() + 60
        while service.ff.repo_id() is None or \
                service.ff.semantic.answering(service.ff.repo_id()).name != "minilm":
            assert time.monotonic() < deadline, "the deep pass did not run"
            time.sleep(0.1)
        found = service.semantic_search("compute the area of a shape", snippet_lines=0)
        assert found["results"][0]["path"] == "geometry.py"
        # questions have a model of their own: they never wait for the pass's batches
        assert service.ff.semantic.deep_embedder is not load_embedder(
            "minilm", threads=service.ff.deep_threads)
    finally:
        service.close()
