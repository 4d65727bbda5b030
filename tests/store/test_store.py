"""The storage interface, on each store: a new store, settings and identity, a batch of
files written and read back whole, replaced and deleted, atomically; text candidates, BM25,
symbols, packed edges, centrality and vectors."""
from __future__ import annotations

import sqlite3
import time
from dataclasses import replace

import pytest

from fourfold.errors import FourfoldError
from fourfold.store import base
from fourfold.model import Chunk, Reference, Symbol
from fourfold.store.base import (NO_REFERENCES, EdgeColumns, FileStamp, FileState, RepoInfo, Resolution,
                                 StoredChunk, StoredEdge, StoredFile, StoredSymbol, TokenRecord,
                                 decode_references)
from fourfold.store.postgres import PostgresStore
from fourfold.store.sqlite import SQLiteStore
from tests.store.records import (ALPHA, CORPUS, alpha_record, corpus_records, python_record,
                                 readme_record, write_out_of_order)


@pytest.fixture(params=["sqlite", "postgres"])
def open_store(request, tmp_path):
    """Opens the store under test; each call opens the same index again."""
    if request.param == "sqlite":
        def opener():
            return SQLiteStore(tmp_path / "index.sqlite")
    else:
        url = request.getfixturevalue("postgres_url")

        def opener():
            return PostgresStore(url)
    opened = []

    def open_again():
        opened.append(opener())
        return opened[-1]
    yield open_again
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store):
    return open_store()


def stored_vectors(store, model, repo_id=None) -> tuple[list, list, list]:
    """Every block vector_blocks gives, one chunk a block, put together in chunk id order
    (the order a repository's come in is not set)."""
    found = []
    for ids, rows, scales in store.vector_blocks(model, repo_id, size=1):
        assert len(ids) == len(rows) == len(scales) == 1
        found.append((ids[0], rows[0], scales[0]))
    if repo_id is None:
        assert found == sorted(found)
    return tuple(list(column) for column in zip(*sorted(found))) if found else ([], [], [])


def _raw_references(store, repo) -> list[tuple[str, str]]:
    """raw_references, each file's references decompressed (they come compressed)."""
    return [(path, base.decompress_references(refs))
            for path, refs in store.raw_references(repo)]


def chunk_ids(store, repo) -> list[int]:
    """A repository's chunk ids, in order (each store numbers rows its own way)."""
    return sorted(c.chunk_id for f in store.files(repo) for c in store.chunks_of_file(f.file_id))


# -- schema and identity ---------------------------------------------------------------------
def test_a_new_store_is_empty_and_remembers_its_settings_and_identity(store, open_store):
    assert store.is_empty() and store.repos() == [] and store.files() == []
    assert store.identity() is None and store.setting("max_file_bytes", 7) == 7
    store.mark_identity("/home/me/proj")
    store.set_setting("max_file_bytes", 8_000_000)
    repo = store.ensure_repo("/home/me/proj", "proj")
    assert store.ensure_repo("/home/me/proj", "proj") == repo == 1  # one row per repository
    assert store.generation() == ((1, None),)
    store.mark_indexed(repo, 1234.5, "parser-v1")
    store.close()
    again = open_store()
    assert again.identity() == "/home/me/proj"
    assert again.setting("max_file_bytes", 7) == 8_000_000
    assert again.parser_of(repo) == "parser-v1" and again.parser_of(99) is None
    assert again.generation() == ((1, 1234.5),)
    again.mark_indexed(repo, 1240.0, "parser-v2")
    assert again.generation() == ((1, 1240.0),) and again.parser_of(repo) == "parser-v2"
    assert not again.is_empty()


# -- write_batch ----------------------------------------------------------------------------
def test_write_batch_round_trips_files_states_contents_symbols_chunks_and_references(store):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [alpha_record(), readme_record()], [], [])
    by_id = sorted(store.files(), key=lambda f: f.file_id)
    a, b = [f.file_id for f in by_id]  # ids are the store's own (a server's carry the
    assert by_id == [StoredFile(a, repo, "pkg/a.py", "python", 0),  # repository)
                     StoredFile(b, repo, "README.md", None, 0)]
    assert sorted(store.files(repo), key=lambda f: f.file_id) == by_id
    assert store.files(repo + 1) == []
    assert store.file_by_path("README.md") == StoredFile(b, repo, "README.md", None, 0)
    assert store.file_by_path("README.md", repo) == StoredFile(b, repo, "README.md", None, 0)
    assert store.file_by_path("nowhere.py") is None
    assert store.file_states(repo) == {
        "pkg/a.py": FileState(a, FileStamp(30, 111, 222, 333), "hash-a"),
        "README.md": FileState(b, FileStamp(6, 1, 2, 3), "hash-b")}
    # a path as a file, and as a folder; never as a prefix of a name
    assert store.file_states(repo, ["pkg", "README.md", "pkg/a", "pk", "nowhere"]) == \
        store.file_states(repo)
    assert list(store.file_states(repo, ["pkg/a", "pk", "README"])) == []
    assert list(store.file_states(repo, ["pkg/a.py"])) == ["pkg/a.py"]
    assert store.contents([a, b]) == {a: ALPHA, b: "hello\n"}
    assert store.contents([]) == {}
    assert store.content(a) == ALPHA and store.content(b + 99) == ""
    [alpha] = store.symbols_of_file(a)
    assert alpha == StoredSymbol(alpha.symbol_id, a, "pkg/a.py", "alpha", "alpha", "function",
                                 1, 2, "def alpha():", "Alpha.", None, 0, "python")
    assert store.symbols_named(["ALPHA"]) == [alpha]  # case-insensitive
    assert store.symbols_by_id([alpha.symbol_id]) == [alpha]
    assert store.graph_symbols(repo) == [(alpha.symbol_id, "pkg/a.py", "alpha", "alpha",
                                          "function", None)]
    assert store.symbol_keys(repo, [a, b]) == [(alpha.symbol_id, a, "alpha")]
    assert store.symbol_keys(repo, [b]) == []
    [chunk_a] = store.chunks_of_file(a)
    [chunk_b] = store.chunks_of_file(b)
    assert chunk_a == StoredChunk(chunk_a.chunk_id, a, "pkg/a.py", 1, 2, "alpha", "symbol", 0)
    assert store.chunks([chunk_b.chunk_id]) == [
        StoredChunk(chunk_b.chunk_id, b, "README.md", 1, 1, None, "text", 0)]
    assert sorted(_raw_references(store, repo)) == [
        ("README.md", "[]"), ("pkg/a.py", '[["call", "beta", 2, "alpha"]]')]
    assert decode_references(dict(_raw_references(store, repo))["pkg/a.py"]) == [
        Reference("call", "beta", 2, "alpha")]
    assert store.repos() == [RepoInfo(repo, "/src/proj", "proj", None, 2, 36, 2, 1,
                                      {"python": 1, "other": 1})]
    assert store.repos(counts=False) == [RepoInfo(repo, "/src/proj", "proj", None, 0, 0, 0, 0,
                                                  {})]
    assert [f.path for f, _ in store.trigram_candidates("beta")] == ["pkg/a.py"]
    assert [(f.path, h) for f, h in store.trigram_candidates(None)] == [
        ("README.md", "hash-b"), ("pkg/a.py", "hash-a")]  # in path order, byte-wise


def test_write_batch_replaces_deletes_and_restamps_in_one_transaction(store):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [alpha_record(), readme_record()], [], [])
    edited = alpha_record(FileStamp(12, 5, 6, 333))
    edited.text = "GAMMA = 1\n"
    edited.hash, edited.symbols, edited.references = "hash-a2", [], NO_REFERENCES
    edited.chunks = [Chunk(1, 1, "GAMMA = 1", None, "window")]
    edited.chunk_tokens, edited.chunk_hashes = ["gamma 1"], ["chunk-a2"]
    store.write_batch(repo, [edited], ["README.md"], [])
    [file] = store.files()
    assert file.path == "pkg/a.py"
    assert store.contents([file.file_id, file.file_id + 1, file.file_id + 2]) == {
        file.file_id: "GAMMA = 1\n"}
    assert store.symbols_named(["alpha"]) == [] and _raw_references(store, repo) == [
        ("pkg/a.py", "[]")]
    assert [(c.start_line, c.symbol, c.kind) for c in store.chunks_of_file(file.file_id)] == [
        (1, None, "window")]
    assert store.trigram_candidates("beta") == []
    assert store.trigram_candidates("hello") == []
    assert [f.path for f, _ in store.trigram_candidates("gamma")] == ["pkg/a.py"]
    store.write_batch(repo, [], [], [("pkg/a.py", FileStamp(12, 50, 60, 444))])
    assert store.file_states(repo) == {
        "pkg/a.py": FileState(file.file_id, FileStamp(12, 50, 60, 444), "hash-a2")}
    assert store.content(file.file_id) == "GAMMA = 1\n"  # a touch keeps the content


def test_a_failed_batch_writes_nothing(store):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [readme_record()], [], [])
    broken = alpha_record()
    # chunks.start_line is NOT NULL: the batch fails part way, after the file's text
    broken.chunks = [replace(broken.chunks[0], start_line=None)]
    with pytest.raises(FourfoldError,
                       match=r"chunks\.start_line|\"start_line\" of relation \"chunks"):
        store.write_batch(repo, [broken], ["README.md"], [])
    [readme] = store.files()
    assert readme.path == "README.md"
    assert store.contents([readme.file_id]) == {readme.file_id: "hello\n"}
    assert [c.path for c, _ in store.bm25_chunks(["hello"], 10)] == ["README.md"]


def test_repositories_are_kept_apart(store):
    first, second = store.ensure_repo("/a", "a"), store.ensure_repo("/b", "b")
    assert first != second
    store.write_batch(first, [alpha_record()], [], [])
    store.write_batch(second, [alpha_record(), readme_record()], [], [])
    assert [f.repo_id for f in store.files(first)] == [first]
    assert {f.path for f in store.files(second)} == {"pkg/a.py", "README.md"}
    assert store.file_by_path("README.md", first) is None
    assert [f.repo_id for f, _ in store.trigram_candidates("alpha", second)] == [second]
    assert {f.repo_id for f, _ in store.trigram_candidates("alpha")} == {first, second}
    assert {c.file_id for c, _ in store.bm25_chunks(["alpha"], 10, first)} == {
        f.file_id for f in store.files(first)}
    assert len(store.bm25_chunks(["alpha"], 10)) == 2
    assert [s.name for s in store.symbols_named(["alpha"], second)] == ["alpha"]
    store.write_batch(first, [], ["pkg/a.py"], [])
    assert store.files(first) == [] and len(store.files(second)) == 2


# -- text ----------------------------------------------------------------------------------
def test_trigram_candidates_follow_and_or_trees_case_insensitively(store):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [alpha_record(), readme_record()], [], [])
    paths = lambda required: [f.path for f, _ in store.trigram_candidates(required)]  # noqa: E731
    assert paths("ALPHA") == ["pkg/a.py"]
    assert paths(("or", ["alpha", "hello"])) == ["README.md", "pkg/a.py"]
    assert paths(("and", ["alpha", "hello"])) == []
    assert paths(("and", ["alpha", ("or", ["nothing", "beta"])])) == ["pkg/a.py"]
    assert paths("zzz") == []


def test_a_limited_listing_is_the_first_files_by_path_whatever_order_they_came_in(store):
    """Pages of candidates (`limit`, then `after` the last file's (path, file id)) put
    together are the whole listing, in path order: with files written out of path order,
    edited and deleted since (new documents, numbered last), in two repositories sharing
    some documents, and over both, where one path is in both and a page may end between
    them."""
    first, second = write_out_of_order(store)
    for repo in (first, second, None):
        whole = [(f.path, f.file_id) for f, _ in store.trigram_candidates("needle", repo)]
        assert whole == sorted(whole) and len(whole) >= 20
        assert ("a/first.py" in {path for path, _ in whole}) == (repo != second)
        for limit in (1, 3, 8, 100):
            paged: list[tuple[str, int]] = []
            after = None
            while True:
                page = store.trigram_candidates("needle", repo, after=after, limit=limit)
                assert all(repo in (None, f.repo_id) for f, _ in page) and len(page) <= limit
                paged += [(f.path, f.file_id) for f, _ in page]
                if len(page) < limit:
                    break
                after = paged[-1]
            assert paged == whole, (repo, limit)
            assert repo is not None or len({path for path, _ in paged}) < len(paged)


def test_bm25_ranks_name_and_path_words_above_body_words(store):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, corpus_records(), [], [])
    ranked = store.bm25_chunks(["parse", "config"], 5)
    assert [c.symbol for c, _ in ranked][:2] == ["parse_config", "parse_config_string"]
    assert [score for _, score in ranked] == sorted((s for _, s in ranked), reverse=True)
    assert all(score > 0 for _, score in ranked)
    assert store.bm25_chunks(["parsing"], 5) == store.bm25_chunks(["parse"], 5)  # one stem
    assert store.bm25_chunks(["nowhere_at_all"], 5) == []
    assert store.bm25_chunks([], 5) == []
    assert len(store.bm25_chunks(["read", "file"], 3)) == 3


def test_changed_and_deleted_files_leave_no_words_behind(store):
    repo = store.ensure_repo("/src/proj", "proj")
    records = corpus_records()
    store.write_batch(repo, records, [], [])
    assert store.bm25_chunks(["snake_case"], 5)[0][0].symbol == "snake_case"
    store.write_batch(repo, [], ["util/strings.py"], [])
    assert store.bm25_chunks(["snake_case"], 5) == []
    assert store.symbols_by_token(["snake"]) == []
    before = store.bm25_chunks(["read", "file"], 50)
    store.write_batch(repo, [records[2]], [], [])  # io/files.py written again
    after = store.bm25_chunks(["read", "file"], 50)
    assert [(c.path, c.start_line, round(s, 9)) for c, s in after] == [
        (c.path, c.start_line, round(s, 9)) for c, s in before]


# -- symbols -------------------------------------------------------------------------------
def test_symbols_by_token_and_with_words(store):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, corpus_records(), [], [])
    by_token = {s.name for s in store.symbols_by_token(["Config"])}
    assert {"ConfigParser", "parse_config", "load_config", "ConfigError",
            "default_config"} <= by_token
    assert {s.name for s in store.symbols_by_token(["snak"])} == {"snake_case"}  # a prefix
    assert len(store.symbols_by_token(["config"], limit=2)) == 2
    assert store.symbols_by_token([""]) == [] and store.symbols_by_token([]) == []
    assert {s.name for s in store.symbols_with_words(["config", "parse"], "nothing")} == {
        "parse_config", "parse_config_string"}  # ConfigParser has "parser", not "parse"
    assert {s.name for s in store.symbols_with_words(["x"], "lrucache")} == {"LruCache"}
    assert store.symbols_with_words([], "lrucache") == []
    assert [s.name for s in store.symbols_named(["configparser"], repo)] == ["ConfigParser"]



def test_symbols_of_any_name_are_found_by_their_tokens_and_qualified_names(store):
    """Names outside ASCII identifiers, and qualified names that equal the name or not, come
    back as written, are found by token and by qualified name, and leave nothing behind."""
    repo = store.ensure_repo("/src/proj", "proj")
    names = [("größeBerechnen", "größeBerechnen"), ("$scope", "$scope"),
             ("operator<<", "Stream.operator<<"), ("parse", "Config.parse"),
             ("Parse", "Parse")]
    record = replace(alpha_record(), path="odd.py", hash="hash-odd", symbols=[
        Symbol(name, qualname, "function", 1, 2, None, None, None)
        for name, qualname in names])
    store.write_batch(repo, [record], [], [])
    assert sorted((s.name, s.qualname) for s in store.symbols_named(["parse"])) == [
        ("Parse", "Parse"), ("parse", "Config.parse")]
    assert [s.name for s in store.symbols_named(["config.parse"])] == ["parse"]
    assert [s.name for s in store.symbols_named(["stream.operator<<"])] == ["operator<<"]
    assert {s.name for s in store.symbols_by_token(["größe"])} == {"größeBerechnen"}
    assert {s.name for s in store.symbols_by_token(["größeberechnen"])} == {"größeBerechnen"}
    assert {s.name for s in store.symbols_by_token(["$scope"])} == {"$scope"}
    assert {s.name for s in store.symbols_with_words(["x"], "größeberechnen")} == {
        "größeBerechnen"}
    assert {s.name for s in store.symbols_with_words(["x"], "operator<<")} == {"operator<<"}
    assert [(s.name, s.qualname) for s in store.symbols_of_file(
        store.file_by_path("odd.py").file_id)] == names
    store.write_batch(repo, [], ["odd.py"], [])
    assert store.symbols_by_token(["größe", "$scope", "parse"]) == []
    assert store.symbols_named(["config.parse"]) == []


def test_names_holding_two_of_the_words_are_found_apart_from_those_holding_one(store):
    repo = store.ensure_repo("/src/proj", "proj")
    names = ["pick_next_task", "next_task", "task_run", "run", "next", "runTask",
             "taskRunner", "pick"]
    record = replace(alpha_record(), path="sched.c", hash="hash-sched", symbols=[
        Symbol(name, name, "function", 1, 2, None, None, None) for name in names])
    store.write_batch(repo, [record], [], [])
    assert sorted(s.name for s in store.symbols_with_two_words(["pick", "next", "task"])) == \
        ["next_task", "pick_next_task"]
    assert sorted(s.name for s in store.symbols_with_two_words(["run", "task"])) == \
        ["runTask", "task_run"]  # taskRunner holds "runner", not "run"
    assert store.symbols_with_two_words(["task"]) == []
    assert len(store.symbols_with_two_words(["pick", "next", "task"], limit=1)) == 1
    other = store.ensure_repo("/src/other", "other")
    assert store.symbols_with_two_words(["pick", "next", "task"], other) == []


# -- edges and centrality --------------------------------------------------------------------
def test_stored_edges_come_back_whole_per_repository(store):
    first, second = store.ensure_repo("/a", "a"), store.ensure_repo("/b", "b")
    edges = [StoredEdge("call", 1, 7, 2, 9, 12, "helper", Resolution.EXACT),
             StoredEdge("call", 1, None, None, None, 3, "os.path.join", Resolution.NONE),
             StoredEdge("import", 2, None, 1, None, 1, "./util:a as b", Resolution.INFERRED),
             StoredEdge("call", 2, 4, 1, 7, 2**40, "guess", Resolution.NAME_ONLY)]
    store.replace_graph(first, EdgeColumns.of(edges), {7: 1.5, 9: 0.5}, {1: 1.2})
    store.replace_graph(second, EdgeColumns.of(edges[:1]), {}, {})
    assert store.all_edges(first) == edges
    assert [e.resolution for e in store.all_edges(first)] == [3, 0, 2, 1]
    assert store.all_edges() == edges + edges[:1]
    assert store.centrality() == ({7: 1.5, 9: 0.5}, {1: 1.2})
    store.replace_graph(first, EdgeColumns(), {}, {})
    assert store.all_edges(first) == [] and store.all_edges() == edges[:1]
    assert store.centrality() == ({}, {})


@pytest.mark.parametrize("names", [["", "", "tail"], [""], ["multi\nline", "", "x"],
                                   ["a\\nb", "quote\"d", "{brace}", "com,ma", "NULL"]])
def test_edge_names_come_back_exactly_whatever_they_hold(store, names):
    repo = store.ensure_repo("/a", "a")
    edges = [StoredEdge("call", 1, None, None, None, line, name, Resolution.NONE)
             for line, name in enumerate(names, 1)]
    store.replace_graph(repo, EdgeColumns.of(edges), {}, {})
    assert store.all_edges(repo) == edges


def test_the_ranks_of_some_files_come_back_by_path_and_qualified_name(store):
    repo, other = store.ensure_repo("/src/proj", "proj"), store.ensure_repo("/src/other", "o")
    store.write_batch(repo, [alpha_record(), readme_record()], [], [])
    store.write_batch(other, [alpha_record()], [], [])  # the same document, another file
    [alpha] = store.symbols_named(["alpha"], repo)
    files = {f.path: f.file_id for f in store.files(repo)}
    store.replace_graph(repo, EdgeColumns(), {alpha.symbol_id: 2.5},
                        {files["pkg/a.py"]: 1.5, files["README.md"]: 0.5})
    both = {"pkg/a.py", "README.md"}
    assert store.ranks_of_files(repo, both) == ({("pkg/a.py", "alpha"): 2.5},
                                                {"pkg/a.py": 1.5, "README.md": 0.5})
    assert store.ranks_of_files(repo, {"README.md", "gone.py"}) == ({}, {"README.md": 0.5})
    assert store.ranks_of_files(other, both) == ({}, {})
    assert store.ranks_of_files(None, both) == store.ranks_of_files(repo, both)


# -- vectors -------------------------------------------------------------------------------
def test_vectors_are_kept_per_model_and_chunk_hash(store):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [alpha_record(), readme_record()], [], [])
    a, b = chunk_ids(store, repo)
    assert store.chunks_missing_vectors("m", 10) == [(a, "chunk-a"), (b, "chunk-b")]
    assert store.chunks_missing_vectors("m", 10, after=a) == [(b, "chunk-b")]
    assert store.chunks_missing_vectors("m", 10, within=[b, b + 99]) == [(b, "chunk-b")]
    assert store.chunks_missing_vectors("m", 10, within=[]) == []
    assert store.vector_progress("m") == (0, 2) and store.vector_count("m") == 0
    store.put_vectors("m", [("chunk-a", b"\x01\xff", 0.5)])
    store.put_vectors("m", [("chunk-a", b"\x02\x00", 0.25), ("other", b"\x03", 1.0)])
    assert stored_vectors(store, "m") == ([a], [b"\x02\x00"], [0.25])
    assert store.vector_count("m") == 2 and store.vector_progress("m") == (1, 2)
    assert store.chunks_missing_vectors("m", 10) == [(b, "chunk-b")]
    assert stored_vectors(store, "other-model") == ([], [], [])


def test_progress_once_complete_is_remembered_until_files_change(tmp_path, monkeypatch):
    """The embedded index counts chunks without a vector once they are all embedded, and
    answers from that until a write batch changes the files; a reader does not wait for a
    writer to remember it, and one opened read-only remembers nothing."""
    path = tmp_path / "index.sqlite"
    store = SQLiteStore(path)
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [alpha_record(), readme_record()], [], [])
    store.put_vectors("m", [("chunk-a", b"\x01", 1.0)])
    assert store.vector_progress("m") == (1, 2)
    assert store._meta("vectors_complete:m") is None
    reader = SQLiteStore(path, readonly=True)
    store.put_vectors("m", [("chunk-b", b"\x02", 1.0)])
    assert reader.vector_progress("m") == (2, 2) and store._meta("vectors_complete:m") is None
    busy = sqlite3.connect(path, isolation_level=None)
    busy.execute("BEGIN IMMEDIATE")  # a writer holds the database
    started = time.monotonic()
    assert store.vector_progress("m") == (2, 2) and time.monotonic() - started < 5
    assert store._meta("vectors_complete:m") is None
    busy.execute("ROLLBACK")
    assert store.vector_progress("m") == (2, 2)
    assert store._meta("vectors_complete:m") == store._meta("files_version")
    store.put_vectors("m", [])
    monkeypatch.setattr(store, "_conn", lambda real=store._conn: _no_join(real()))
    assert store.vector_progress("m") == (2, 2)  # remembered: no chunk looked up
    monkeypatch.undo()
    store.write_batch(repo, [python_record("pkg/b.py", "def beta():\n    pass\n")], [], [])
    # a new chunk, without a vector yet
    assert store.vector_progress("m") == (2, 3)


def test_a_run_that_writes_only_embedded_chunks_keeps_progress_remembered(tmp_path):
    """A run that begins with every chunk embedded and writes chunks that all have their
    vectors as it ends (a save under `watch`: embedded while parsed) leaves that
    remembered for the files it made; one that leaves a chunk without does not."""
    store = SQLiteStore(tmp_path / "index.sqlite")
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [alpha_record()], [], [])
    store.put_vectors("m", [("chunk-a", b"\x01", 1.0)])
    assert store.vector_progress("m") == (1, 1)  # counted and remembered
    with store.indexing_run():
        store.write_batch(repo, [readme_record()], [], [])
        store.put_vectors("m", [("chunk-b", b"\x02", 1.0)])
    assert store._meta("vectors_complete:m") == store._meta("files_version")
    beta = python_record("pkg/b.py", "def beta():\n    pass\n")
    with store.indexing_run():
        store.write_batch(repo, [beta], [], [])
    assert store._meta("vectors_complete:m") != store._meta("files_version")
    store.put_vectors("m", [("unrelated", b"\x03", 1.0)])
    assert store._meta("vectors_complete:m") != store._meta("files_version")
    store.put_vectors("m", [(beta.chunk_hashes[0], b"\x03", 1.0)])  # embedded after the run
    assert store._meta("vectors_complete:m") == store._meta("files_version")
    assert store.vector_progress("m") == (3, 3)
    with store.indexing_run():
        store.write_batch(repo, [replace(beta, path="pkg/c.py", chunk_hashes=["new"])], [], [])
    store.write_batch(repo, [], ["pkg/c.py"], [])  # the files change again meanwhile
    assert store.vector_progress("m") == (3, 3)  # counted, remembered for these files
    store.put_vectors("m", [("new", b"\x04", 1.0)])  # the run's last: it says nothing now
    assert store._meta("vectors_complete:m") == store._meta("files_version")


class _no_join:
    """A connection that refuses the count of chunks without a vector."""

    def __init__(self, conn):
        self.conn = conn

    def __getattr__(self, name):
        return getattr(self.conn, name)

    def __enter__(self):
        return self.conn.__enter__()

    def __exit__(self, *exc):
        return self.conn.__exit__(*exc)

    def execute(self, sql, *args):
        assert "LEFT JOIN vectors" not in sql
        return self.conn.execute(sql, *args)


def test_a_hash_given_twice_in_one_batch_is_one_vector_the_last_given(store):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [alpha_record()], [], [])
    [a] = chunk_ids(store, repo)
    store.put_vectors("m", [("chunk-a", b"\x01", 0.5), ("new", b"\x02", 1.0),
                            ("chunk-a", b"\x03", 0.75)])
    assert stored_vectors(store, "m") == ([a], [b"\x03"], [0.75])
    assert store.vector_count("m") == 2
    store.put_vectors("m", [("new", b"\x04", 2.0), ("new", b"\x05", 3.0)])  # only replaced
    assert store.vector_count("m") == 2 and store.vector_count("other") == 0


def test_vectors_of_one_repository_and_shared_by_content(store):
    first = store.ensure_repo("/src/proj", "proj")
    second = store.ensure_repo("/src/fork", "fork")
    store.write_batch(first, [alpha_record(), readme_record()], [], [])
    store.write_batch(second, [alpha_record()], [], [])  # the same chunk: one vector serves both
    store.put_vectors("m", [("chunk-a", b"\x02\x00", 0.25), ("chunk-b", b"\x01\x01", 0.5)])
    (a, b), [c] = chunk_ids(store, first), chunk_ids(store, second)
    # the embedded index shares the document's rows; a server keeps each repository's own
    shared = isinstance(store, SQLiteStore)
    assert (c == a) == shared
    assert stored_vectors(store, "m", second) == ([c], [b"\x02\x00"], [0.25])
    assert stored_vectors(store, "m", first) == ([a, b], [b"\x02\x00", b"\x01\x01"], [0.25, 0.5])
    assert stored_vectors(store, "m") == (
        ([a, b], [b"\x02\x00", b"\x01\x01"], [0.25, 0.5]) if shared else
        ([a, b, c], [b"\x02\x00", b"\x01\x01", b"\x02\x00"], [0.25, 0.5, 0.25]))


def test_staged_vectors_are_stored_by_the_end_of_the_indexing_run(store):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [alpha_record(), readme_record()], [], [])
    a, b = chunk_ids(store, repo)
    with store.indexing_run():
        store.stage_vectors("m", [("chunk-a", b"\x01\x00", 0.5)])
        store.stage_vectors("m", [("chunk-a", b"\x02\x00", 0.25), ("chunk-b", b"\x03", 1.0)])
        if isinstance(store, SQLiteStore):  # held back until put, then put in key order
            assert store.vector_count("m") == 0
            store.put_staged_vectors()
            assert stored_vectors(store, "m") == ([a, b], [b"\x02\x00", b"\x03"], [0.25, 1.0])
        store.stage_vectors("m", [("other", b"\x04", 1.0)])
    assert store.vector_count("m") == 3
    assert stored_vectors(store, "m") == ([a, b], [b"\x02\x00", b"\x03"], [0.25, 1.0])
    store.put_staged_vectors()  # nothing left: nothing changes
    assert store.vector_count("m") == 3


def test_a_stopped_indexing_run_keeps_its_staged_vectors_as_it_keeps_its_files(store):
    repo = store.ensure_repo("/src/proj", "proj")
    with pytest.raises(KeyboardInterrupt), store.indexing_run():
        store.write_batch(repo, [alpha_record()], [], [])
        store.stage_vectors("m", [("chunk-a", b"\x02\x00", 0.25)])
        raise KeyboardInterrupt
    if isinstance(store, SQLiteStore):  # each batch committed on its own
        assert stored_vectors(store, "m") == (chunk_ids(store, repo), [b"\x02\x00"], [0.25])
    else:  # the run is one transaction, and the repository made for it goes with it
        assert store.files(repo) == [] and store.vector_count("m") == 0
        assert repo not in {r.repo_id for r in store.repos(counts=False)}


# -- access tokens -------------------------------------------------------------------------
def test_access_tokens_are_kept_by_hash_and_revoked_by_name(store):
    reader = TokenRecord("ci", "h1", "read", ["proj", "lib"], 10.0, None)
    writer = TokenRecord("admin", "h2", "write", None, 20.0, None)
    nobody = TokenRecord("empty", "h3", "read", [], 15.0, None)
    for token in (writer, reader, nobody):
        store.put_token(token)
    assert store.tokens() == [reader, nobody, writer]  # oldest first
    assert store.token_by_hash("h2") == writer and store.token_by_hash("nope") is None
    assert store.revoke_token("ci", 30.0) and not store.revoke_token("ci", 31.0)
    assert not store.revoke_token("nobody-of-that-name", 30.0)
    assert store.token_by_hash("h1").revoked_at == 30.0


@pytest.mark.parametrize("rewrite_share", [0, float("inf")])
def test_codes_held_by_a_searcher_follow_another_process_s_changes_from_their_log(
        open_store, monkeypatch, rewrite_share):
    """A searcher holding a repository's codes reads, after another process added,
    replaced or deleted some, only those (the log of code changes), and answers as a
    searcher reading them all, whether it copies its rows into one array again at once
    (share 0) or marks and appends (inf); codes made anew are read all again."""
    monkeypatch.setattr(base, "HELD_CODES_REWRITE_SHARE", rewrite_share)
    writer, searcher = open_store(), open_store()
    repo = writer.ensure_repo("/src/proj", "proj")
    writer.write_batch(repo, corpus_records(), [], [])
    ids = chunk_ids(writer, repo)
    writer.put_codes(repo, "m", b"mean", [(i, bytes([i % 251, i % 7])) for i in ids])
    questions = [bytes([q, 255 - q]) for q in range(0, 256, 17)]

    def answers(store):
        return [store.nearest_codes(repo, "m", q, 5) for q in questions]

    answers(searcher)
    updates = []
    update = searcher._codes.update
    monkeypatch.setattr(searcher._codes, "update",
                        lambda *args: updates.append(update(*args)) or updates[-1])
    writer.add_codes(repo, "m", [ids[2], ids[3]], [b"\x00\x00", b"\xff\xff"])
    writer.add_codes(repo, "m", [ids[3]], [b"\x0f\x0f"])
    assert answers(searcher) == answers(open_store()) and updates[-1] is not None
    assert (updates[-1].dead is not None) == (rewrite_share > 0)
    writer.add_codes(repo, "m", [ids[3], ids[4]], [b"\xf0\xf0", b"\x0f\x0f"])  # again
    assert answers(searcher) == answers(open_store()) and updates[-1] is not None
    writer.write_batch(repo, [], [sorted(CORPUS)[0]], [])  # its chunks' codes go
    assert answers(searcher) == answers(open_store()) and updates[-1] is not None
    assert (updates[-1].more_ids is not None) == (rewrite_share > 0)
    writer.put_codes(repo, "m", b"other", [(ids[-1], b"\x01\x01")])
    assert answers(searcher) == answers(open_store()) == [[ids[-1]]] * len(questions)
    assert updates[-1] is None


def test_a_new_searcher_reads_the_codes_snapshot_and_the_changes_logged_since(tmp_path,
                                                                             monkeypatch):
    """The embedded index keeps a repository's codes as one row when they are all taken
    anew, and again before the log of changes since would no longer reach it: a new
    searcher reads that row and the changes logged since, not a row per code, and answers
    as one that reads every code."""
    from fourfold.store import sqlite as sqlite_store

    monkeypatch.setattr(sqlite_store, "CODE_CHANGES_KEPT", 6)  # taken again every 3 versions
    monkeypatch.setattr(sqlite_store, "SNAPSHOT_PIECE", 4)  # written in many pieces
    path = tmp_path / "index.sqlite"
    writer = SQLiteStore(path)
    repo = writer.ensure_repo("/src/proj", "proj")
    writer.write_batch(repo, corpus_records(), [], [])
    ids = chunk_ids(writer, repo)
    writer.put_codes(repo, "m", b"mean", reversed([(i, bytes([i % 251, i % 7])) for i in ids]))
    questions = [bytes([q, 255 - q]) for q in range(0, 256, 17)]

    def answers(rows_only: bool) -> list[list[int]]:
        searcher = SQLiteStore(path)
        read_whole = []
        all_codes = searcher._all_codes
        monkeypatch.setattr(searcher, "_all_codes", lambda *a: read_whole.append(a) or
                            all_codes(*a))
        if rows_only:
            monkeypatch.setattr(searcher, "_code_snapshot", lambda *a: None)
        found = [searcher.nearest_codes(repo, "m", q, 5) for q in questions]
        assert bool(read_whole) == rows_only
        return found

    def snapshot_version() -> int:
        return writer._query("SELECT version FROM code_snapshots")[0][0]

    assert answers(False) == answers(True) and snapshot_version() == 1
    writer.add_codes(repo, "m", [ids[2], ids[3]], [b"\x00\x00", b"\xff\xff"])
    writer.write_batch(repo, [], [sorted(CORPUS)[0]], [])  # its chunks' codes go
    assert answers(False) == answers(True) and snapshot_version() == 1
    writer.add_codes(repo, "m", [ids[3]], [b"\x0f\x0f"])  # version 4: 3 past the row
    assert snapshot_version() == 4 and answers(False) == answers(True)
    writer.put_codes(repo, "m", b"other", [(ids[-1], b"\x01\x01")])
    assert snapshot_version() == 5 and answers(False) == answers(True) == [[ids[-1]]] * 16
    searcher = SQLiteStore(path)  # a row the log no longer reaches is not read at all
    assert searcher._code_snapshot((repo, "m"), 2, 5 + 5) is not None
    assert searcher._code_snapshot((repo, "m"), 2, 5 + 6) is None
    whole = writer._query("SELECT ids FROM code_snapshots")[0][0]
    for damaged in (whole + b"\x00", whole.hex()):  # not read: the rows are, instead
        with writer._conn() as conn:
            conn.execute("UPDATE code_snapshots SET ids=?", (damaged,))
        assert SQLiteStore(path)._code_snapshot((repo, "m"), 2, 5) is None
        assert SQLiteStore(path).nearest_codes(repo, "m", b"\x01\x01", 1) == [ids[-1]]
    # none kept of codes of two widths, or of more than one of SQLite's values holds: an
    # empty row says so, and is not read; the next saves need not look again
    def kept() -> list[tuple[int, int]]:
        return writer._query("SELECT length(ids), length(codes) FROM code_snapshots")
    writer.put_codes(repo, "m", b"mean", [(ids[0], b"\x01"), (ids[1], b"\x01\x02")])
    assert kept() == [(0, 1)]
    writer._conn().setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 8 * len(ids) - 1)
    writer.put_codes(repo, "m", b"mean", [(i, b"\x00\x00") for i in ids])
    assert kept() == [(0, 1)] and SQLiteStore(path)._code_snapshot((repo, "m"), 2, 7) is None
    assert answers(True)[0] == sorted(ids)[:5]
    looked = []
    put_snapshot = sqlite_store._put_snapshot
    monkeypatch.setattr(sqlite_store, "_put_snapshot",
                        lambda *a: looked.append(a[3]) or put_snapshot(*a))
    for _ in range(4):
        writer.add_codes(repo, "m", [ids[3]], [b"\x0f\x0f"])
    assert looked == [10]  # versions 8, 9, 10, 11: due again at 7 + 6 // 2


def test_codes_added_to_a_repository_that_had_none_are_found(store):
    """A searcher holding a repository's codes while it has none finds the codes added
    later (held rows of no codes are rewritten with them)."""
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, corpus_records(), [], [])
    ids = chunk_ids(store, repo)
    store.put_codes(repo, "m", b"mean", [])
    assert store.nearest_codes(repo, "m", b"\x00\x00", 3) == []
    store.add_codes(repo, "m", [ids[1]], [b"\x01\x00"])
    assert store.nearest_codes(repo, "m", b"\x00\x00", 3) == [ids[1]]


def test_binary_codes_are_searched_by_hamming_distance_per_repository(store):
    first = store.ensure_repo("/src/proj", "proj")
    second = store.ensure_repo("/src/fork", "fork")
    store.write_batch(first, [alpha_record(), readme_record()], [], [])
    store.write_batch(second, [alpha_record()], [], [])
    (a, b), [c] = chunk_ids(store, first), chunk_ids(store, second)
    assert store.code_mean(first, "m") is None and store.nearest_codes(first, "m", b"\x00", 5) == []
    store.put_codes(first, "m", b"mean", iter([(a, b"\xf0"), (b, b"\x0f")]))
    store.put_codes(second, "m", b"other", [(c, b"\xff")])
    assert store.code_mean(first, "m") == b"mean" and store.code_mean(second, "m") == b"other"
    assert store.nearest_codes(first, "m", b"\xf1", 5) == [a, b]  # distances 1 and 7
    assert store.nearest_codes(first, "m", b"\x0e", 5) == [b, a]
    assert store.nearest_codes(first, "m", b"\x00", 5) == [a, b]  # a tie: by chunk id
    assert store.nearest_codes(first, "m", b"\x0f", 1) == [b]
    assert store.nearest_codes(second, "m", b"\x00", 5) == [c]
    assert store.nearest_codes(first, "other-model", b"\x00", 5) == []
    store.put_codes(first, "m", b"mean2", [(b, b"\x0f")])  # replaced whole
    assert store.nearest_codes(first, "m", b"\xf0", 5) == [b]
    store.add_codes(first, "m", [a, b], [b"\xf0", b"\xff"])  # added, one replaced
    assert store.code_mean(first, "m") == b"mean2"
    assert store.nearest_codes(first, "m", b"\xff", 5) == [b, a]
    store.put_codes(first, "m", b"mean2", [(b, b"\x0f")])
    store.write_batch(first, [], ["README.md"], [])  # a deleted chunk takes its code along
    assert store.nearest_codes(first, "m", b"\xf0", 5) == []
    store.put_vectors("m", [("chunk-a", b"\x02\x00", 0.25)])
    assert store.vectors_of("m", [a, c, c + 99]) == {a: (b"\x02\x00", 0.25),
                                                    c: (b"\x02\x00", 0.25)}


def test_damaged_rows_of_edges_are_a_clear_error():
    """A row whose columns do not hold one value an edge, or whose codes are not positions
    in its lists (written by something else than this fourfold), is refused, not read as
    another graph."""
    from fourfold.errors import FourfoldError
    from fourfold.store.sql_common import edge_columns_of

    ids = (1).to_bytes(8, "little") * 2  # two edges
    row = [["call"], bytes(8), ids, ids, ids, ids, ids, ["f"], bytes(8), bytes(2)]
    assert edge_columns_of([tuple(row)]).edges()[1].name == "f"
    minus_one = (-1).to_bytes(4, "little", signed=True)
    for column, damaged in ((1, bytes(4)), (8, bytes(4)),  # no kind, no name for an edge
                            (3, bytes(8)), (9, bytes(1)), (2, ids + b"\x00"),  # cut short
                            (8, bytes(4) + (1).to_bytes(4, "little")),  # past the names
                            (8, bytes(4) + minus_one), (1, minus_one * 2)):  # before them
        broken = list(row)
        broken[column] = damaged
        with pytest.raises(FourfoldError, match="--rebuild"):
            edge_columns_of([tuple(broken)])
