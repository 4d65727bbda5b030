"""What only the SQLite store does: its schema is dropped and rebuilt, never migrated;
its contentless full-text index is kept consistent; and SQLite's errors are translated into
messages that say what to do. What every store does is in test_store.py."""
from __future__ import annotations

import sqlite3

import pytest

from fourfold import Fourfold
from fourfold.errors import FourfoldError, IndexDamagedError, IndexWriteError
from fourfold.store.sqlite import SCHEMA_VERSION, SQLiteStore, trigram_match
from tests.store.records import alpha_record, needle_record, write_out_of_order


@pytest.fixture
def store(tmp_path):
    opened = SQLiteStore(tmp_path / "index.sqlite")
    yield opened
    opened.close()


# -- schema ---------------------------------------------------------------------------------
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


# -- the full-text index -------------------------------------------------------------------
def test_changed_and_deleted_files_leave_no_words_behind(make_tree):
    root = make_tree({"a.py": "def frobnicate_widget(size):\n    return size * 2\n",
                      "b.py": "def keep_me():\n    return 'quux_marker'\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    text_only = {"modalities": ("text",)}
    assert ff.search("frobnicate widget", **text_only).hits[0].path == "a.py"
    (root / "a.py").write_text("def other_name(size):\n    return size + 1\n")
    ff.index(embed=False)
    chunk_index = ff.store._chunk_index
    assert chunk_index.search(["frobnicate"], 10) == []
    assert len(chunk_index.search(["other"], 10)) == 1
    assert ff.search("frobnicate widget", **text_only).hits == []
    (root / "b.py").unlink()
    ff.index(embed=False)
    assert chunk_index.search(["quux_marker"], 10) == []
    held = {chunk_id for chunk_id, _ in chunk_index.search(["size", "def"], 100)}
    assert held == {row[0] for row in ff.store._query("SELECT id FROM chunks")} != set()


def test_a_document_shared_by_two_branches_is_written_once_and_kept_while_one_holds_it(store):
    main, feature = store.ensure_repo("/src/main", "app@main"), store.ensure_repo(
        "/src/feature", "app@feature")
    store.write_batch(main, [alpha_record()], [], [])
    shared = alpha_record()
    shared.text, shared.symbols, shared.chunks, shared.document_held = "", [], [], True
    store.write_batch(feature, [shared], [], [])  # the file alone: its rows are main's
    conn = store._conn()
    rows = "SELECT (SELECT count(*) FROM documents), (SELECT count(*) FROM chunks), " \
           "(SELECT count(*) FROM files)"
    assert conn.execute(rows).fetchone() == (1, 1, 2)
    derived = ("SELECT (SELECT count(*) FROM symbol_tokens WHERE symbol_tokens MATCH 'alpha'), "
               "(SELECT count(*) FROM file_refs)")
    assert conn.execute(derived).fetchone()[0] > 0
    assert [s.path for s in store.symbols_named(["alpha"], feature)] == ["pkg/a.py"]
    assert store.raw_references(feature) == store.raw_references(main) != []
    assert [c.path for c, _ in store.bm25_chunks(["beta"], 5, feature)] == ["pkg/a.py"]
    store.write_batch(main, [], ["pkg/a.py"], [])
    assert conn.execute(rows).fetchone() == (1, 1, 1)
    assert [f.repo_id for f, _ in store.trigram_candidates("alpha")] == [feature]
    store.write_batch(feature, [], ["pkg/a.py"], [])
    assert conn.execute(rows).fetchone() == (0, 0, 0)
    assert conn.execute(derived).fetchone() == (0, 0)  # found again from the symbol's name
    assert store.trigram_candidates("alpha") == [] and store.bm25_chunks(["beta"], 5) == []
    for table in ("content_trigrams", "symbol_tokens"):  # raises if an index disagrees
        conn.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")
    assert store._chunk_index.search(["alpha", "beta"], 10) == []
    shared.document_held = True  # its document is gone: refused, not written half
    with pytest.raises(FourfoldError, match="index again"):
        store.write_batch(feature, [shared], [], [])
    assert store.files() == []


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


def test_a_call_with_a_wrong_parameter_does_not_call_the_index_damaged(store, tmp_path):
    with pytest.raises(FourfoldError) as wrong:
        store.files(object())  # a repository id of the wrong type
    assert type(wrong.value) is FourfoldError
    assert str(wrong.value).startswith(f"the index at {tmp_path / 'index.sqlite'} was asked "
                                       "wrongly by files (Error binding parameter 1")
    assert str(wrong.value).endswith("the index is not damaged")
    assert store.files() == []  # and it answers on


# -- FTS5 expressions -----------------------------------------------------------------------
def test_required_text_becomes_an_fts5_trigram_expression():
    assert trigram_match("abcd") == '("abc" AND "bcd")'
    assert trigram_match('a"bc') == '("a""b" AND """bc")'  # quotes doubled inside phrases
    assert trigram_match(("or", ["abc", ("and", ["xyz", "uvw"])])) == \
        '(("abc") OR (("xyz") AND ("uvw")))'
    long = trigram_match("abcdefghijklmnopqrstuvwxyz")
    assert long.count(" AND ") == 11  # at most MAX_TRIGRAMS, spread over the literal


def test_a_written_chunk_is_in_the_chunk_index_at_once(store):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [alpha_record()], [], [])  # outside an indexing run: committed
    assert [c.path for c, _ in store.bm25_chunks(["alpha"], 5)] == ["pkg/a.py"]


def test_full_text_indexes_drive_queries_of_one_repository(store, monkeypatch):
    """With the repository's files looked up first, SQLite ran the trigram match once per
    file (12.9 s on 10,000 files); the full-text index must come first."""
    plans = []
    query = store._query

    def explained(sql, params=()):
        if "MATCH" in sql:
            plans.append(" | ".join(row[3] for row in query("EXPLAIN QUERY PLAN " + sql,
                                                             params)))
        return query(sql, params)
    monkeypatch.setattr(store, "_query", explained)
    store.trigram_candidates("beta", store.ensure_repo("/src/proj", "proj"))
    assert len(plans) == 1
    assert plans[0].startswith("SCAN ") and "VIRTUAL TABLE" in plans[0].split(" | ")[0], plans


def test_a_limited_listing_reads_the_trigram_index_in_document_order(store, monkeypatch):
    """A common pattern's first files: the trigram index read by document id, as far as
    needed, not every candidate sorted by path; too many files out of document order and
    the candidates are sorted after all, with the same answer."""
    first, _ = write_out_of_order(store)
    statements = []
    query = store._query

    def recorded(sql, params=()):
        statements.append(sql)
        return query(sql, params)
    monkeypatch.setattr(store, "_query", recorded)
    expected = [f.path for f, _ in store.trigram_candidates("needle", first)][:5]
    statements.clear()
    assert [f.path for f, _ in store.trigram_candidates("needle", first, limit=5)] == expected
    matches = [sql for sql in statements if "MATCH" in sql]
    assert matches and all("ORDER BY f.path" not in sql for sql in matches)
    assert "LIMIT" in matches[0] and store._document_order(first).late  # edits came last
    monkeypatch.setattr("fourfold.store.sqlite.MAX_LATE_FILES", 0)
    statements.clear()
    assert [f.path for f, _ in store.trigram_candidates("needle", first, limit=5)] == expected
    assert any("ORDER BY f.path" in sql for sql in statements if "MATCH" in sql)


def test_a_limited_listing_reads_one_state_of_the_index(tmp_path, monkeypatch):
    """The listing takes several statements (the files' order, the trigram index, the
    files' rows); another process writing between them must not make them disagree."""
    store = SQLiteStore(tmp_path / "index.sqlite")
    first, _ = write_out_of_order(store)
    expected = [f.path for f, _ in store.trigram_candidates("needle", first)][:5]
    writer = sqlite3.connect(tmp_path / "index.sqlite", isolation_level=None)
    order_of = store._document_order

    def then_written(repo_id):
        order = order_of(repo_id)
        # another process deletes two of the files meanwhile, as a write batch does
        writer.execute("BEGIN IMMEDIATE")
        writer.execute(f"DELETE FROM files WHERE path IN ('{expected[0]}', '{expected[1]}')")
        writer.execute("INSERT OR REPLACE INTO meta VALUES('files_version', 'another')")
        writer.execute("COMMIT")
        return order
    monkeypatch.setattr(store, "_document_order", then_written)
    assert [f.path for f, _ in store.trigram_candidates("needle", first, limit=5)] == expected
    monkeypatch.undo()
    now = [f.path for f, _ in store.trigram_candidates("needle", first)][:5]
    assert [f.path for f, _ in store.trigram_candidates("needle", first, limit=5)] == now
    assert expected[0] not in now
    writer.close()


def test_ids_become_a_few_ranges_and_paths_a_longest_ordered_run():
    from fourfold.store.sqlite import _longest_ordered, _spans
    assert _spans([3, 5, 2000, 2001, 9000]) == [(3, 5), (2000, 2001), (9000, 9000)]
    assert _spans(list(range(0, 40 * 2000, 2000))) == [(0, 78000)]  # too many: one range
    paths = ["a", "z", "b", "c", "y", "d"]
    run = _longest_ordered(paths)
    assert [paths[n] for n in run] == ["a", "b", "c", "d"]
    assert _longest_ordered([]) == [] and _longest_ordered(["x", "x"]) == [0, 1]


def test_a_long_limited_listing_stays_within_sqlites_bound_on_variables(store):
    """A limited grep's pages grow 4x each; its last ones list more files than one SQLite
    statement may name."""
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [needle_record(f"m{n:04}.py", "needle\n") for n in range(1200)],
                      [], [])
    store._conn().setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    listed = store.trigram_candidates("needle", repo, limit=1100)
    assert [f.path for f, _ in listed] == [f"m{n:04}.py" for n in range(1100)]


def test_symbol_token_texts_made_together_are_each_names_own():
    """A batch's plain identifiers get their token_text, made together; any other name
    (punctuation, digits first, non-ASCII letters) goes through symbol_token_text: the
    same texts either way, for random names over the characters that decide them."""
    import random

    from fourfold.store.sqlite import symbol_token_text, symbol_token_texts

    generator = random.Random(5)
    names = ["".join(generator.choice("aAzZ_09xX.:é+<>") for _ in range(generator.randint(1, 10)))
             for _ in range(5000)]
    names += ["___", "_", "__init__", "HTTPServer", "x1F", "9abc", "operator+", "Foo::bar",
              "naïve", ""]
    assert symbol_token_texts(names) == [symbol_token_text(name) for name in names]


def test_names_by_token_are_the_rows_one_or_query_gives_read_as_they_come(make_tree, tmp_path):
    """symbols_by_token reads the word index's names as they come, then the names that
    begin with a token: the same rows, in the same order and up to the same limit, as the
    single OR of the two it replaced (which listed every match of the word index first),
    for each repository of an index holding two and for all of them."""
    import random

    from fourfold import Fourfold
    from fourfold.store.base import StoredSymbol
    from fourfold.store.sqlite import SYMBOL_COLS, _symbol_tokens_match

    words = ["parse", "config", "read", "write", "buffer", "handler", "get", "set", "io"]
    random.seed(7)

    def tree(name: str) -> dict[str, str]:
        return {f"{name}/m{i}.py": "".join(
            f"def {'_'.join(random.sample(words, random.randint(1, 3)))}_{i}_{j}(x):\n"
            f"    return x\n\n\nclass {random.choice(words).title()}Io{i}{j}:\n    pass\n\n\n"
            for j in range(6)) for i in range(15)}

    index = tmp_path / "index"
    stores = []
    for name in ("alpha", "beta"):
        ff = Fourfold(make_tree(tree(name), name), index_dir=index)
        ff.index(embed=False)
        stores.append((ff, ff.repo_id()))
    store = stores[0][0].store

    def one_or(tokens, repo_id, limit):
        tokens = sorted({t.lower() for t in tokens})
        prefix = " OR ".join("(s.name_lower >= ? AND s.name_lower < ?)" for _ in tokens)
        params = [value for t in tokens for value in (t, t + "\uffff")]
        sql = (f"SELECT {SYMBOL_COLS} FROM symbols s JOIN files f ON "
               "f.document_id=s.document_id WHERE (s.id IN (SELECT rowid FROM symbol_tokens "
               f"WHERE symbol_tokens MATCH ?) OR {prefix})"
               + (" AND +f.repo_id=?" if repo_id else "") + f" LIMIT {limit}")
        return [StoredSymbol(*row) for row in store._query(
            sql, [_symbol_tokens_match(tokens, "OR")] + params + ([repo_id] if repo_id else []))]

    compared = 0
    for _ in range(40):
        tokens = random.sample(words + ["pars", "conf", "han", "zzz"], random.randint(1, 4))
        for repo_id in (stores[0][1], stores[1][1], None):
            for limit in (1, 7, 60, 2000):
                expected = one_or(tokens, repo_id, limit)
                assert store.symbols_by_token(tokens, repo_id, limit) == expected
                compared += bool(expected)
    assert compared > 300
    for ff, _ in stores:
        ff.close()
