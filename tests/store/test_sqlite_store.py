"""The SQLite store: its schema and version, the folder identity it records, a batch of
files written and read back whole, the full-text rows a rewrite leaves, packed edges, and
SQLite's errors translated into messages that say what to do."""
from __future__ import annotations

import sqlite3

import pytest

from fourfold import Fourfold
from fourfold.errors import FourfoldError, IndexDamagedError, IndexWriteError
from fourfold.model import Chunk, Reference, Symbol
from fourfold.store.base import (EdgeColumns, FileRecord, FileStamp, FileState, RepoInfo,
                                 StoredChunk, StoredEdge, StoredFile, StoredSymbol,
                                 decode_references, encode_references)
from fourfold.store.sqlite import SCHEMA_VERSION, SQLiteStore

ALPHA = "def alpha():\n    return beta()\n"


def alpha_record(stamp: FileStamp = FileStamp(30, 111, 222, 333)) -> FileRecord:
    return FileRecord(
        "pkg/a.py", stamp, "hash-a", "python", 0, ALPHA,
        [Symbol("alpha", "alpha", "function", 1, 2, "def alpha():", "Alpha.", None)],
        [Chunk(1, 2, ALPHA.rstrip("\n"), "alpha", "symbol")],
        encode_references([Reference("call", "beta", 2, "alpha")]),
        ["def alpha return beta"], ["chunk-a"])


def readme_record() -> FileRecord:
    return FileRecord("README.md", FileStamp(6, 1, 2, 3), "hash-b", None, 0, "hello\n", [],
                      [Chunk(1, 1, "hello", None, "text")], "[]", ["hello"], ["chunk-b"])


@pytest.fixture
def store(tmp_path):
    opened = SQLiteStore(tmp_path / "index.sqlite")
    yield opened
    opened.close()


# -- schema and identity ---------------------------------------------------------------------
def test_a_new_store_is_empty_and_remembers_its_settings_and_identity(store, tmp_path):
    assert store.is_empty() and store.repos() == [] and store.files() == []
    assert store.identity() is None and store.setting("max_file_bytes", 7) == 7
    store.mark_identity("/home/me/proj")
    store.set_setting("max_file_bytes", 8_000_000)
    repo = store.ensure_repo("/home/me/proj", "proj")
    assert store.ensure_repo("/home/me/proj", "proj") == repo == 1  # one row per root
    store.mark_indexed(repo, 1234.5, "parser-v1")
    store.close()
    again = SQLiteStore(tmp_path / "index.sqlite")
    assert again.identity() == "/home/me/proj"
    assert again.setting("max_file_bytes", 7) == 8_000_000
    assert again.parser_of(repo) == "parser-v1" and again.parser_of(99) is None
    assert again.generation() == ((1, 1234.5),)
    assert not again.is_empty()
    again.close()


def test_index_of_an_older_schema_is_rebuilt_not_refused(make_tree):
    root = make_tree({"a.py": "def alpha():\n    return 1\n"})
    Fourfold(root).index()
    db = root / ".fourfold" / "index.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value=? WHERE key='schema_version'",
                     (str(SCHEMA_VERSION - 1),))
    ff = Fourfold(root)
    assert not ff.is_indexed()  # the old layout is gone, nothing half-read
    ff.ensure_indexed()
    assert [m.line for m in ff.grep("alpha")] == [1]
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value=? WHERE key='schema_version'",
                     (str(SCHEMA_VERSION + 1),))
    with pytest.raises(FourfoldError, match="newer fourfold"):
        Fourfold(root)


def test_an_older_schema_is_dropped_whole_when_the_store_opens(tmp_path):
    db = tmp_path / "index.sqlite"
    store = SQLiteStore(db)
    repo = store.ensure_repo("/r", "r")
    store.write_batch(repo, [alpha_record()], [], [])
    store.close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value='1' WHERE key='schema_version'")
        conn.execute("CREATE TABLE leftover_of_an_old_layout(x)")
    store = SQLiteStore(db)
    assert store.is_empty() and store.files() == [] and store.identity() is None
    with sqlite3.connect(db) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "leftover_of_an_old_layout" not in tables
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() \
            == (str(SCHEMA_VERSION),)
    store.close()


def test_a_newer_schema_is_refused_with_what_to_do(tmp_path):
    db = tmp_path / "index.sqlite"
    SQLiteStore(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value=? WHERE key='schema_version'",
                     (str(SCHEMA_VERSION + 1),))
    with pytest.raises(FourfoldError) as refused:
        SQLiteStore(db)
    assert str(refused.value) == (
        f"index at {db} was written by a newer fourfold (schema {SCHEMA_VERSION + 1}, this "
        f"one reads {SCHEMA_VERSION}); upgrade fourfold or use another --index-dir, or "
        "replace it with `fourfold index --rebuild`")


# -- write_batch ----------------------------------------------------------------------------
def test_write_batch_round_trips_files_states_contents_symbols_chunks_and_references(store):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [alpha_record(), readme_record()], [], [])
    by_id = sorted(store.files(), key=lambda f: f.file_id)
    assert by_id == [StoredFile(1, repo, "pkg/a.py", "python", 0),
                     StoredFile(2, repo, "README.md", None, 0)]
    assert sorted(store.files(repo), key=lambda f: f.file_id) == by_id
    assert store.files(repo + 1) == []
    assert store.file_by_path("README.md") == StoredFile(2, repo, "README.md", None, 0)
    assert store.file_by_path("nowhere.py") is None
    assert store.file_states(repo) == {
        "pkg/a.py": FileState(1, FileStamp(30, 111, 222, 333), "hash-a"),
        "README.md": FileState(2, FileStamp(6, 1, 2, 3), "hash-b")}
    assert store.contents([1, 2]) == {1: ALPHA, 2: "hello\n"}
    assert store.content(1) == ALPHA and store.content(99) == ""
    assert store.symbols_of_file(1) == [StoredSymbol(1, 1, "pkg/a.py", "alpha", "alpha",
                                                     "function", 1, 2, "def alpha():", "Alpha.",
                                                     None, 0, "python")]
    assert store.symbols_named(["ALPHA"]) == store.symbols_of_file(1)  # case-insensitive
    assert store.chunks_of_file(1) == [StoredChunk(1, 1, "pkg/a.py", 1, 2, "alpha", "symbol", 0)]
    assert store.chunks([2]) == [StoredChunk(2, 2, "README.md", 1, 1, None, "text", 0)]
    assert sorted(store.raw_references(repo)) == [
        ("README.md", "[]"), ("pkg/a.py", '[["call", "beta", 2, "alpha"]]')]
    assert decode_references(dict(store.raw_references(repo))["pkg/a.py"]) == [
        Reference("call", "beta", 2, "alpha")]
    assert store.repos() == [RepoInfo(repo, "/src/proj", "proj", None, 2, 36, 2, 1,
                                      {"python": 1, "other": 1})]
    assert [f.path for f, _ in store.trigram_candidates("beta")] == ["pkg/a.py"]


def test_write_batch_replaces_deletes_and_restamps_in_one_transaction(store):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [alpha_record(), readme_record()], [], [])
    edited = alpha_record(FileStamp(12, 5, 6, 333))
    edited.text = "GAMMA = 1\n"
    edited.hash, edited.symbols, edited.references = "hash-a2", [], "[]"
    edited.chunks = [Chunk(1, 1, "GAMMA = 1", None, "window")]
    edited.chunk_tokens, edited.chunk_hashes = ["gamma 1"], ["chunk-a2"]
    store.write_batch(repo, [edited], ["README.md"], [])
    [file] = store.files()
    assert file.path == "pkg/a.py"
    assert store.contents([1, 2, 3]) == {file.file_id: "GAMMA = 1\n"}
    assert store.symbols_named(["alpha"]) == [] and store.raw_references(repo) == [
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
    broken.text = None  # contents.text is NOT NULL: the batch fails part way
    with pytest.raises(FourfoldError, match="NOT NULL constraint failed: contents.text"):
        store.write_batch(repo, [broken], ["README.md"], [])
    assert [f.path for f in store.files()] == ["README.md"]
    assert store.contents([1]) == {1: "hello\n"}


def test_changed_and_deleted_files_leave_no_words_behind(make_tree):
    root = make_tree({"a.py": "def frobnicate_widget(size):\n    return size * 2\n",
                      "b.py": "def keep_me():\n    return 'quux_marker'\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    text_only = {"modalities": ("text",)}
    assert ff.search("frobnicate widget", **text_only).hits[0].path == "a.py"
    (root / "a.py").write_text("def other_name(size):\n    return size + 1\n")
    ff.index(embed=False)
    conn = ff.store._conn()
    count = "SELECT count(*) FROM chunk_tokens WHERE chunk_tokens MATCH ?"
    assert conn.execute(count, ("frobnicate",)).fetchone()[0] == 0
    assert conn.execute(count, ("other",)).fetchone()[0] == 1
    assert ff.search("frobnicate widget", **text_only).hits == []
    (root / "b.py").unlink()
    ff.index(embed=False)
    assert conn.execute(count, ("quux_marker",)).fetchone()[0] == 0
    # FTS5's integrity check raises if the index and its rows disagree
    conn.execute("INSERT INTO chunk_tokens(chunk_tokens) VALUES('integrity-check')")


# -- edges ------------------------------------------------------------------------------------
def test_stored_edges_come_back_whole_per_repository(tmp_path):
    store = SQLiteStore(tmp_path / "index.db")
    first, second = store.ensure_repo("/a", "a"), store.ensure_repo("/b", "b")
    edges = [StoredEdge("call", 1, 7, 2, 9, 12, "helper", True),
             StoredEdge("call", 1, None, None, None, 3, "os.path.join", False),
             StoredEdge("import", 2, None, 1, None, 1, "./util:a as b", True)]
    store.replace_graph(first, EdgeColumns.of(edges), {7: 1.5, 9: 0.5}, {1: 1.2})
    store.replace_graph(second, EdgeColumns.of(edges[:1]), {}, {})
    assert store.all_edges(first) == edges
    assert store.all_edges() == edges + edges[:1]
    assert store.centrality() == ({7: 1.5, 9: 0.5}, {1: 1.2})
    store.replace_graph(first, EdgeColumns(), {}, {})
    assert store.all_edges(first) == [] and store.all_edges() == edges[:1]
    assert store.centrality() == ({}, {})


# -- SQLite's errors, translated -------------------------------------------------------------
def test_a_damaged_file_names_the_rebuild_command_of_its_folder(tmp_path):
    index_dir = tmp_path / "proj" / ".fourfold"
    index_dir.mkdir(parents=True)
    (index_dir / "index.sqlite").write_bytes(b"not a database at all" * 500)
    with pytest.raises(IndexDamagedError) as damaged:
        SQLiteStore(index_dir / "index.sqlite")
    assert str(damaged.value) == (
        f"the index at {index_dir / 'index.sqlite'} is damaged (file is not a database); "
        f"rebuild it with `fourfold index --rebuild {tmp_path / 'proj'}`")
    elsewhere = tmp_path / "custom.db"  # an --index-dir of one's own: no root to name
    elsewhere.write_bytes(b"\x00" * 8192)
    with pytest.raises(IndexDamagedError, match=r"rebuild it with `fourfold index --rebuild "
                                                r"PATH`$"):
        SQLiteStore(elsewhere)


def test_a_file_damaged_after_opening_fails_its_next_read_clearly(tmp_path):
    db = tmp_path / "index.sqlite"
    SQLiteStore(db).close()
    with open(db, "r+b") as handle:
        handle.write(b"\x00" * 100)  # the header is gone
    with pytest.raises(IndexDamagedError, match=r"is damaged \(file is not a database\)"):
        SQLiteStore(db, readonly=True).files()


@pytest.mark.parametrize("message, error, expected", [
    ("database or disk is full", IndexWriteError,
     "cannot write the index at {db}: database or disk is full; what was written before "
     "stays searchable (each batch of files is committed whole); free some space and index "
     "again"),
    ("database is locked", FourfoldError,
     "the index at {db} is busy (database is locked); try again"),
])
def test_a_full_disk_and_a_busy_database_are_told_apart(store, tmp_path, message, error,
                                                         expected):
    failure = store._failure(sqlite3.OperationalError(message))
    assert type(failure) is error
    assert str(failure) == expected.format(db=tmp_path / "index.sqlite")
