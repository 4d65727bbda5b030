"""What only the PostgreSQL store does: it ranks text as FTS5's bm25() does and as the
embedded store's Tantivy index mostly does, filters text as the SQLite store does (stems,
trigram candidates), takes hostile text as data, migrates its schema
under a lock, tells repositories apart by name, and reports a server that is down or a
connection lost mid-write clearly, never with the password of the URL."""
from __future__ import annotations

import itertools
import re
import sqlite3
import threading
import time
from contextlib import nullcontext
from urllib.parse import urlsplit

import numpy as np
import psycopg
import pytest

from fourfold.errors import FourfoldError, IndexBusyError, IndexWriteError, StoreUnavailable
from fourfold.store.base import (BM25_COLUMN_WEIGHTS, FileRecord, FileStamp, StoredChunk,
                                 StoredFile)
from fourfold.store.postgres import SCHEMA_VERSION, PostgresStore, index_terms
from fourfold.store.sqlite import SQLiteStore
from fourfold.tokens import token_text
from tests.servers import free_port
from tests.store.records import CORPUS, alpha_record, corpus_records, readme_record


@pytest.fixture
def store(postgres_url):
    opened = PostgresStore(postgres_url)
    yield opened
    opened.close()


@pytest.fixture
def both(postgres_url, tmp_path):
    """The same corpus in a SQLite and a PostgreSQL store."""
    stores = SQLiteStore(tmp_path / "index.sqlite"), PostgresStore(postgres_url)
    for opened in stores:
        opened.write_batch(opened.ensure_repo("/src/proj", "proj"), corpus_records(), [], [])
    yield stores
    for opened in stores:
        opened.close()


def _admin(url: str) -> psycopg.Connection:
    return psycopg.connect(url, autocommit=True)


# -- ranking as SQLite ranks ----------------------------------------------------------------
BM25_QUERIES = [["parse", "config"], ["read", "file"], ["config", "parser"], ["cache"],
                ["user", "email"], ["http", "client", "request"], ["snake_case"],
                ["configparser"], ["json"], ["error"], ["parse_config"],
                ["parsing", "configuration"], ["file", "reader"], ["lines", "path", "data"],
                ["session", "token", "user"], ["retry", "attempts"], ["truncate", "width"],
                ["self", "return"], ["main", "argv", "parser", "config", "load"]]


def _ties_grouped(ranked) -> list[tuple[float, set]]:
    """Scores best first, each with the chunks that have it: tied chunks come in no
    particular order from either store."""
    groups: list[tuple[float, set]] = []
    for chunk, score in ranked:
        key = (chunk.path, chunk.start_line)
        if groups and abs(groups[-1][0] - score) <= 1e-9 * abs(score):
            groups[-1][1].add(key)
        else:
            groups.append((score, {key}))
    return groups


def _fts5_bm25(terms: list[str], limit: int) -> list[tuple[StoredChunk, float]]:
    """SQLite FTS5's own bm25() with the store's column weights, over the corpus's chunks:
    the formula the PostgreSQL store follows."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(path, symbol, body, "
                 "tokenize=\"porter unicode61 tokenchars '_'\")")
    chunks = []
    for record in corpus_records():
        for chunk, body in zip(record.chunks, record.chunk_tokens):
            chunks.append(StoredChunk(len(chunks) + 1, 0, record.path, chunk.start_line,
                                      chunk.end_line, chunk.symbol, chunk.kind, 0))
            conn.execute("INSERT INTO t(rowid, path, symbol, body) VALUES(?,?,?,?)",
                         (len(chunks), token_text(record.path), token_text(chunk.symbol or ""),
                          body))
    weights = ", ".join(str(w) for w in BM25_COLUMN_WEIGHTS)
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    return [(chunks[rowid - 1], score) for rowid, score in conn.execute(
        f"SELECT rowid, -bm25(t, {weights}) FROM t WHERE t MATCH ? "
        f"ORDER BY bm25(t, {weights}) LIMIT ?", (match, limit))]


def test_bm25_ranks_and_scores_as_sqlite_fts5(store):
    store.write_batch(store.ensure_repo("/src/proj", "proj"), corpus_records(), [], [])
    postgres_store = store
    worst = 0.0
    for terms in BM25_QUERIES:
        expected = _fts5_bm25(terms, 1000)
        got = postgres_store.bm25_chunks(terms, 1000)
        assert expected, terms
        assert [keys for _, keys in _ties_grouped(got)] == \
            [keys for _, keys in _ties_grouped(expected)], terms
        for (_, want), (_, have) in zip(expected, got):
            worst = max(worst, abs(have - want) / abs(want))
        top = [(c.path, c.start_line) for c, _ in postgres_store.bm25_chunks(terms, 10)]
        assert top == [(c.path, c.start_line) for c, _ in got[:10]], terms
        in_repo = postgres_store.bm25_chunks(terms, 10, repo_id=1)
        assert [s for _, s in in_repo] == pytest.approx([s for _, s in got[:10]], rel=1e-12)
    assert worst < 1e-12  # the same formula on the same counts: equal to rounding


def test_the_corpus_has_enough_chunks_to_rank(both):
    sqlite_store, postgres_store = both
    assert len(sqlite_store.bm25_chunks(["def", "class"], 1000)) >= 30
    assert postgres_store.vector_progress("m") == sqlite_store.vector_progress("m") == (0, 36)


# Where the snowball Porter stemmer and SQLite's differ: the word SQLite's stemmer makes,
# and snowball's. SQLite applies 'logi' -> 'log' and 'bli' -> 'ble', removes any doubled
# consonant after -ed/-ing, and reads a whole word that is a suffix ('eed') differently.
KNOWN_STEM_DIFFERENCES = {"topology": ("topolog", "topologi"),
                          "possibly": ("possibl", "possibli"),
                          "assembly": ("assembl", "assembli"),
                          "specced": ("spec", "specc"),
                          "eed": ("e", "eed")}
CODE_WORDS = """configuration configure configured connection connections connected
initialize initialization initializer serialization serializer serialized generator
generational relational conditional rational optional dependencies dependency dependent
hopeful hopefulness goodness callable readable iterable iterator iterating iterated
running runner runs ran parsing parsed parser parses parse formalize formality
electrical electricity adjustment replacement agreement agreed feed sized sizing hopping
hoping filing filled falling controlling rolled happy happiness sky skies ponies caresses
ties cats caress generalization activate activation activity effective adoption
irritant dependent adjustable defensible homologous communism analogous probate goodness
utf8 v2 x86_64 __init__ i18n md5sum sha256 a1b2 _private_name ALLCAPS Café naïve Élan
straße""".split()


def _sqlite_terms(words: list[str]) -> list[str]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize=\"porter unicode61 "
                 "tokenchars '_'\")")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    conn.executemany("INSERT INTO t(rowid, x) VALUES(?, ?)", list(enumerate(words, 1)))
    return [term for _, term in sorted(conn.execute("SELECT doc, term FROM v"))]


def test_terms_are_stemmed_as_sqlite_stems_them_but_for_known_words():
    words = sorted(set(token_text(" ".join(CORPUS.values())).split() + CODE_WORDS
                       + list(KNOWN_STEM_DIFFERENCES)))
    assert len(words) > 250
    differences = {word: (sqlite_term, ours) for word, sqlite_term, [ours] in zip(
        words, _sqlite_terms(words), map(index_terms, words)) if sqlite_term != ours}
    assert differences == KNOWN_STEM_DIFFERENCES
    assert index_terms("Config-PARSER, read_file(é)") == ["config", "parser", "read_fil", "e"]


LITERAL_FILES = {
    "a.py": 'RATE = "100%"  # a_b and back\\slash\nname = "it\'s"\n',
    "b.py": 'say = \'he said "hi"\'\nPATTERN = "%_%"\n',
    "c.py": "plain words only\nAxB and 100 percent\n",
    "d.py": "UPPER_CASE_NAME = a_b_c\n",
}


def test_trigram_candidates_agree_with_sqlite_on_hostile_literals(postgres_url, tmp_path):
    stores = SQLiteStore(tmp_path / "index.sqlite"), PostgresStore(postgres_url)
    for opened in stores:
        repo = opened.ensure_repo("/src/proj", "proj")
        opened.write_batch(repo, [
            FileRecord(path, FileStamp(len(text), 1, 1, 1), f"h-{path}", "python", 0, text)
            for path, text in LITERAL_FILES.items()], [], [])
    cases = ["100%", "%_%", "a_b", "_b_", "k\\sl", "it's", '"hi"', "UPPER_case", "words",
             "100 percent", ("and", ["plain", "AxB"]), ("or", ["it's", "a_b_c"]),
             ("and", ["100", ("or", ["%_%", "100%"])]), ("or", ["nowhere", "'; DROP"]), None]
    for required in cases:
        got = [f.path for f, _ in stores[1].trigram_candidates(required)]
        assert got == [f.path for f, _ in stores[0].trigram_candidates(required)], required
        if isinstance(required, str):  # and both are exact here: no scattered trigrams
            assert got == sorted(p for p, text in LITERAL_FILES.items()
                                 if required.lower() in text.lower()), required
    # as written: the server compares case too (and LIKE's metacharacters stay literal)
    for required in ["AxB", "axb", "UPPER_CASE", "upper_case", "100%", ("or", ["AxB", "a_B"])]:
        got = [f.path for f, _ in stores[1].trigram_candidates(required, case_sensitive=True)]
        literals = [required] if isinstance(required, str) else required[1]
        assert got == sorted(p for p, text in LITERAL_FILES.items()
                             if any(literal in text for literal in literals)), required
    for opened in stores:
        opened.close()


def _many_files(store: PostgresStore) -> tuple[int, int, int]:
    """Three repositories (two of one family) of 40 files holding "return 0;" or not, at
    the same paths, some of one branch's changed."""
    def records(changed: bool) -> list[FileRecord]:
        texts = {f"src/f{i:02}.c": ("int x;\nreturn 0;\n" if i % 3 else "int y;\n")
                 for i in range(40)}
        if changed:
            texts.update({f"src/f{i:02}.c": "return 1;\n" for i in range(0, 40, 4)})
        return [FileRecord(path, FileStamp(len(text), 1, 1, 1), f"h-{path}-{text}", "c", 0,
                           text) for path, text in texts.items()]

    ids = (store.ensure_repo("/src/a", "acme/a"), store.ensure_repo("/src/a2", "acme/a@b"),
           store.ensure_repo("/src/z", "acme/z"))
    for repo_id, changed in zip(ids, (False, True, False)):
        store.write_batch(repo_id, records(changed), [], [])
    return ids


def test_a_page_of_candidates_in_path_order_is_the_trigram_index_s_page(store):
    """The two ways of listing a page of a grep's candidate files give the same page, for
    one repository (a branch sharing its family's documents) or all, from any key."""
    ids = _many_files(store)
    conn = store._conn()
    for required in ["return 0;", "RETURN", ("or", ["int y", "return 1"]), "nowhere"]:
        for repo_id in (*ids, None):
            everything = store.trigram_candidates(required, repo_id)
            for limit in (1, 7, 100):
                keys = [None] + [(f.path, f.file_id) for f, _ in everything[:12:5]]
                for after in keys:
                    indexed = store.trigram_candidates(required, repo_id, after=after,
                                                       limit=limit)
                    in_order = [(StoredFile(*row[:5]), row[5]) for row in conn.execute(
                        *store._path_ordered_page(required, repo_id, after, limit, False))]
                    assert in_order == indexed, (required, repo_id, limit, after)
                    assert len(indexed) == min(limit, sum(
                        1 for f, _ in everything if after is None or (f.path, f.file_id) > after))


def test_a_slow_page_of_candidates_is_also_asked_in_path_order(store, postgres_url,
                                                               monkeypatch):
    """Where the trigram index does not answer within INDEXED_PAGE_MS (here: its table
    locked for a moment), the page is asked in path order too, on a session of its own;
    the first answer is the same page."""
    import fourfold.store.postgres as postgres_store

    a, _, _ = _many_files(store)
    expected = store.trigram_candidates("return 0;", a, limit=10)
    sessions = []
    original = PostgresStore._session
    monkeypatch.setattr(PostgresStore, "_session",
                        lambda self: sessions.append(1) or original(self))
    monkeypatch.setattr(postgres_store, "INDEXED_PAGE_MS", 50)
    assert store.trigram_candidates("return 0;", a, limit=10) == expected
    assert sessions == []  # answered in time: no second session
    with psycopg.connect(postgres_url) as holder:
        holder.execute("LOCK TABLE fourfold.contents IN ACCESS EXCLUSIVE MODE")
        threading.Timer(0.5, holder.commit).start()
        started = time.monotonic()
        assert store.trigram_candidates("return 0;", a, limit=10) == expected
        assert time.monotonic() - started >= 0.4  # it waited for the lock, then listed
    # a second session (and this thread's own again, if the path order answered first)
    assert 1 <= len(sessions) <= 2
    conn = store._conn()
    made = len(sessions)
    with conn.transaction():  # inside a caller's transaction it only asks the index
        assert store.trigram_candidates("return 0;", a, limit=10) == expected
        assert conn.execute("SELECT 1").fetchall() == [(1,)]
    assert len(sessions) == made


def test_the_first_of_two_queries_to_answer_is_taken_and_the_other_cancelled(
        store, postgres_url):
    slow, quick = ("SELECT pg_sleep(20), 1", [], 0), ("SELECT %s", [7], 0)
    for _ in range(3):  # the other may not have begun when the first answers
        for (first, then), later_s in (((slow, quick), 0.05), ((quick, slow), 0.0)):
            started = time.monotonic()
            assert store._first_answer(first, [then], later_s) == [(7,)]
            assert time.monotonic() - started < 5
            assert store._query("SELECT 2") == [(2,)]  # its own session, anew if cancelled
    with pytest.raises(psycopg.errors.DivisionByZero):
        store._first_answer(("SELECT 1 / 0", [], 0), [("SELECT 1 / 0", [], 0)], 0.0)
    # an answer of fewer rows than its query names is no answer: a page not filled
    assert store._first_answer(("SELECT 1 FROM pg_sleep(0.3)", [], 0),
                               [("SELECT 5", [], 2)], 0.0) == [(1,)]
    # where no other session can be opened, the first query's answer is waited for
    original = store._session
    store._session = lambda: (_ for _ in ()).throw(FourfoldError("too many clients"))
    assert store._first_answer(("SELECT 1 FROM pg_sleep(0.2)", [], 0),
                               [("SELECT 5", [], 0)], 0.0) == [(1,)]
    store._session = original
    with psycopg.connect(postgres_url, autocommit=True) as admin:  # the others are closed
        for _ in range(40):
            others = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                                   "current_database() AND pid <> pg_backend_pid()"
                                   ).fetchone()[0]
            if others <= 1:  # the store's own
                break
            time.sleep(0.05)
        assert others <= 1


# -- hostile text ---------------------------------------------------------------------------
HOSTILE = ["'; DROP TABLE files; --", "Robert'); DROP TABLE repos;--", 'q"uote', "back\\slash",
           "semi;colon", "%", "_", "100%_\\", "$1", "%s", "%(name)s", "{trgm}"]


def test_sql_metacharacters_in_names_and_queries_are_only_data(store):
    ids = [store.ensure_repo(f"/src/{i}", name) for i, name in enumerate(HOSTILE)]
    assert len(set(ids)) == len(HOSTILE)
    assert [(r.name, r.root) for r in store.repos()] == [
        (name, f"/src/{i}") for i, name in enumerate(HOSTILE)]
    store.write_batch(ids[0], [alpha_record(), readme_record()], [], [])
    for text in HOSTILE:
        assert store.symbols_named([text]) == []
        assert store.symbols_by_token([text]) == []  # no wildcard: '%' is not "anything"
        assert store.symbols_with_words([text], text) == []
        assert store.trigram_candidates(text) == []
        assert store.trigram_candidates(("or", [text, text])) == []
        assert store.bm25_chunks([text], 10) == []
        assert store.file_by_path(text) is None
        store.set_setting(text, 5)
        assert store.setting(text, 0) == 5
    store.mark_identity(HOSTILE[0])
    assert store.identity() == HOSTILE[0]
    files = store.files()
    assert len(files) == 2 and store.content(files[0].file_id).startswith("def alpha")


def test_a_nul_character_is_refused_when_written_and_matches_nothing_when_read(store):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [alpha_record()], [], [])
    with pytest.raises(FourfoldError, match="NUL"):
        store.ensure_repo("/src/nul", "bad\x00name")
    broken = readme_record()
    broken.text = "hello\x00world\n"
    with pytest.raises(IndexWriteError, match="NUL"):
        store.write_batch(repo, [broken], [], [])
    assert store.symbols_named(["alpha\x00"]) == []
    assert store.symbols_by_token(["al\x00"]) == []
    assert store.symbols_with_words(["al\x00pha"], "al\x00pha") == []
    assert store.trigram_candidates("alp\x00ha") == []
    assert store.trigram_candidates(("or", ["alp\x00ha", "alpha"]))[0][0].path == "pkg/a.py"
    assert store.file_by_path("pkg/a.py\x00") is None
    assert [f.path for f in store.files()] == ["pkg/a.py"]


# -- repositories, schema, locks --------------------------------------------------------------
def test_a_repository_is_known_by_its_name_and_keeps_its_latest_root(store):
    first = store.ensure_repo("/home/ann/proj", "proj")
    assert store.ensure_repo("/home/bob/proj", "proj") == first
    assert [(r.name, r.root) for r in store.repos(counts=False)] == [("proj", "/home/bob/proj")]
    assert store.ensure_repo("/home/ann/proj", "other") != first


def test_the_schema_lives_in_its_own_schema_with_its_version(store, postgres_url):
    with _admin(postgres_url) as admin:
        tables = {row[0] for row in admin.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'fourfold'")}
        assert {"meta", "repos", "files", "contents", "chunks", "chunk_postings", "symbols",
                "symbol_postings", "edges", "vectors"} <= tables
        assert admin.execute("SELECT count(*) FROM information_schema.tables WHERE "
                             "table_schema = 'public'").fetchone() == (0,)
        assert admin.execute("SELECT value FROM fourfold.meta WHERE key = 'schema_version'"
                             ).fetchone() == (str(SCHEMA_VERSION),)
        assert any(row[0].endswith("gin_trgm_ops)") for row in admin.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'contents_local'"))


def test_a_newer_schema_is_refused_with_what_to_do(store, postgres_url):
    with _admin(postgres_url) as admin:
        admin.execute("UPDATE fourfold.meta SET value = %s WHERE key = 'schema_version'",
                      (str(SCHEMA_VERSION + 1),))
    with pytest.raises(FourfoldError) as refused:
        PostgresStore(postgres_url)
    url = urlsplit(postgres_url)
    assert store.location == f"{url.hostname}:{url.port}{url.path}"
    assert str(refused.value) == (
        f"the index on {store.location} was written by a newer fourfold (schema "
        f"{SCHEMA_VERSION + 1}, this one reads {SCHEMA_VERSION}); upgrade fourfold or use "
        "another database")


def test_stores_opening_a_fresh_database_at_once_migrate_it_once(postgres_url):
    openers = 4
    start = threading.Barrier(openers)
    opened, failures = [], []

    def open_store():
        start.wait()
        try:
            opened.append(PostgresStore(postgres_url))
        except Exception as exc:  # noqa: BLE001 - the test reports any failure
            failures.append(exc)

    threads = [threading.Thread(target=open_store) for _ in range(openers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == [] and len(opened) == openers
    with _admin(postgres_url) as admin:
        assert admin.execute("SELECT count(*) FROM fourfold.repository_totals").fetchone() == (0,)
    for one in opened:
        assert one.is_empty() and one.bm25_chunks(["x"], 1) == []
        one.close()


def test_one_indexer_per_repository(store):
    with store.indexing_lock("proj"):
        with pytest.raises(IndexBusyError, match="repository 'proj'"):
            with store.indexing_lock("proj", wait_s=0.3):
                pass
        with store.indexing_lock("other"):
            pass
    with store.indexing_lock("proj"):
        assert store.size_bytes() > 0


# each term's chunks per repository, counted in its postings (8 bytes a chunk id)
# how many chunks each term's lists hold, dead ones (dead_entries) left out
POSTINGS_COUNTED = (
    "SELECT p.term, p.repo_id, count(*) FROM fourfold.chunk_postings p, generate_series(0, "
    "length(p.chunk_ids) / 8 - 1) AS i WHERE NOT EXISTS (SELECT FROM fourfold.dead_entries d "
    "WHERE d.repo_id = p.repo_id AND d.id = ('x' || encode(substr(p.chunk_ids, i * 8 + 1, 8), "
    "'hex'))::bit(64)::bigint) GROUP BY 1, 2 ORDER BY 1, 2")


def test_deleted_files_take_their_terms_and_statistics_with_them(store, postgres_url):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, corpus_records(), [], [])
    with _admin(postgres_url) as admin:
        count = "SELECT count(*) FROM fourfold.chunk_postings"
        assert admin.execute(count).fetchone()[0] > 100
        assert admin.execute("SELECT chunks FROM fourfold.repository_totals").fetchone() == (36,)
        recount = POSTINGS_COUNTED
        kept = "SELECT term, repo_id, chunks FROM fourfold.term_counts ORDER BY 1, 2"
        assert admin.execute(kept).fetchall() == admin.execute(recount).fetchall()
        half = list(CORPUS)[: len(CORPUS) // 2]
        store.write_batch(repo, [r for r in corpus_records() if r.path in half[:2]], half[2:],
                          [])  # some replaced, some deleted: the counts follow
        assert admin.execute(kept).fetchall() == admin.execute(recount).fetchall()
        store.write_batch(repo, [], list(CORPUS), [])
        assert admin.execute(count).fetchone() == (0,)
        assert admin.execute("SELECT chunks, tokens FROM fourfold.repository_totals").fetchone() \
            == (0, 0)
        assert admin.execute(kept).fetchall() == []


def test_term_counts_are_written_in_parts_by_a_big_run_and_come_out_the_same(
        store, postgres_url, monkeypatch):
    from fourfold.store import postgres

    monkeypatch.setattr(postgres, "TERM_COUNTS_HELD", 5)  # written every few terms
    monkeypatch.setattr(postgres, "TERM_COUNTS_SENT", 3)  # three terms a statement
    repo = store.ensure_repo("/src/proj", "proj")
    recount = POSTINGS_COUNTED
    kept = "SELECT term, repo_id, chunks FROM fourfold.term_counts ORDER BY 1, 2"
    half = list(CORPUS)[: len(CORPUS) // 2]
    with store.indexing_run():
        store.write_batch(repo, corpus_records(), [], [])
        with _admin(postgres_url) as admin:  # some are written already, unseen outside
            assert admin.execute(kept).fetchall() == []
        assert store._query("SELECT count(*) FROM term_counts")[0][0] > 0
        store.write_batch(repo, [r for r in corpus_records() if r.path in half[:2]], half[2:],
                          [])  # some replaced, some deleted in the same run
    with _admin(postgres_url) as admin:
        assert admin.execute(kept).fetchall() == admin.execute(recount).fetchall()
        chunks = admin.execute("SELECT count(*) FROM fourfold.chunks").fetchone()[0]
        assert admin.execute("SELECT chunks FROM fourfold.repository_totals").fetchone() == \
            (chunks,)


# -- failures --------------------------------------------------------------------------------
def test_a_server_that_is_down_is_named_without_the_password():
    port = free_port()
    with pytest.raises(FourfoldError) as down:
        PostgresStore(f"postgresql://fourfold:secret@127.0.0.1:{port}/teamindex")
    message = str(down.value)
    assert f"127.0.0.1:{port}" in message and "'teamindex'" in message
    assert "is the server running" in message and "check --store" in message
    assert "secret" not in message and "secret" not in repr(down.value)
    assert down.value.__suppress_context__ and "secret" not in str(down.value.__context__)


def test_a_missing_database_and_a_bad_url_say_what_is_wrong(postgres_server):
    missing = re.sub(r"/[^/]*$", "/no_such_db", postgres_server)
    with pytest.raises(FourfoldError, match="database 'no_such_db'.*does not exist"):
        PostgresStore(missing.replace("postgres@", "postgres:secret@"))
    with pytest.raises(FourfoldError, match="not a PostgreSQL URL") as bad:
        PostgresStore("postgresql://me:secret@host:5432/db?nonsense_option=1")
    assert "secret" not in str(bad.value)


def test_a_shown_store_url_keeps_only_harmless_parameters():
    from fourfold.store import redacted

    shown = redacted("postgresql://u:pw@h:5432/db?sslmode=require&sslpassword=s3cret"
                     "&password=p2&sslkey=/home/u/key.pem&connect_timeout=5")
    assert shown == "postgresql://u@h:5432/db?sslmode=require&connect_timeout=5"


def test_the_password_never_shows(postgres_url):
    with_password = postgres_url.replace("postgres@", "postgres:secret@")
    store = PostgresStore(with_password)  # trust authentication: the password is unused
    assert "secret" not in repr(store) and "secret" not in store.location
    assert "secret" not in str(vars(store).get("location"))
    store.close()


def _backend_pid(store: PostgresStore) -> int:
    return store._conn().info.backend_pid


def test_a_connection_lost_between_batches_fails_the_next_write_and_keeps_the_last(
        store, postgres_url):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [readme_record()], [], [])
    with _admin(postgres_url) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (_backend_pid(store),))
    with pytest.raises(IndexWriteError) as lost:
        store.write_batch(repo, [alpha_record()], ["README.md"], [])
    assert "what was written before stays searchable" in str(lost.value)
    assert [f.path for f in store.files()] == ["README.md"]  # connected again
    assert store.bm25_chunks(["alpha"], 5) == [] and len(store.bm25_chunks(["hello"], 5)) == 1


def test_a_connection_lost_inside_a_write_leaves_nothing_of_that_batch(store, postgres_url):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [readme_record()], [], [])
    before = store.bm25_chunks(["hello"], 5)
    failures: list[Exception] = []

    def write():
        try:
            store.write_batch(repo, corpus_records(), ["README.md"], [])
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            failures.append(exc)

    with _admin(postgres_url) as admin, psycopg.connect(postgres_url) as holder:
        # the batch's last statement updates the totals: hold that row so the write waits
        # there, everything else of the batch already sent
        holder.execute("SELECT * FROM fourfold.repository_totals FOR UPDATE")
        writer = threading.Thread(target=write)
        writer.start()
        deadline = time.monotonic() + 30
        waiting = None
        while waiting is None and time.monotonic() < deadline:
            waiting = admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND "
                "wait_event_type = 'Lock' AND query LIKE 'INSERT INTO repository_totals%%'"
            ).fetchone()
            time.sleep(0.05)
        assert waiting is not None, "the write never reached the totals"
        admin.execute("SELECT pg_terminate_backend(%s)", waiting)
        writer.join(30)
        holder.rollback()
    assert len(failures) == 1 and isinstance(failures[0], IndexWriteError)
    assert [f.path for f in store.files()] == ["README.md"]
    assert store.bm25_chunks(["hello"], 5) == before  # the totals are untouched too
    assert store.bm25_chunks(["config"], 5) == []


def test_the_store_works_from_many_threads(store):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, corpus_records(), [], [])
    expected = store.bm25_chunks(["read", "file"], 10)
    results, threads = [], []
    for _ in range(6):
        threads.append(threading.Thread(
            target=lambda: results.append(store.bm25_chunks(["read", "file"], 10))))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 6



def test_a_giant_token_is_counted_not_kept(store):
    """Minified code or data holds words longer than a btree entry can hold (~2.7 kB)."""
    record = alpha_record()
    record.chunk_tokens = ["def alpha return beta " + "x" * 3000]
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [record], [], [])
    [(chunk, score)] = store.bm25_chunks(["beta"], 10)
    assert chunk.path == "pkg/a.py" and score > 0
    assert store.bm25_chunks(["x" * 3000], 10) == []


def test_an_older_schema_is_migrated_keeping_what_it_holds(postgres_url):
    """A database at schema 1 (before vector counts were kept in a row and term rows named
    their repository), written as schema 1 wrote, is brought to the current schema when
    opened, and answers as before."""
    from fourfold.store import postgres

    old = postgres.MIGRATIONS
    postgres.MIGRATIONS, postgres.SCHEMA_VERSION = old[:1], 1
    try:
        PostgresStore(postgres_url).close()
    finally:
        postgres.MIGRATIONS, postgres.SCHEMA_VERSION = old, len(old)
    with _admin(postgres_url) as admin:  # one repository, file, chunk and vector, as v1 kept them
        admin.execute("INSERT INTO fourfold.repos VALUES(1, 'proj', '/src/proj', 1.0)")
        admin.execute("INSERT INTO fourfold.files VALUES(1, 1, 'pkg/a.py', 'h', 6, 1, 1, 1, "
                      "'python', 0)")
        admin.execute("INSERT INTO fourfold.contents VALUES(1, 'alpha\n')")
        admin.execute("INSERT INTO fourfold.chunks VALUES(1, 1, 1, 1, 'alpha', 'symbol', "
                      "'chunk-a', 3)")
        admin.execute("INSERT INTO fourfold.chunk_terms VALUES('alpha', 1, 5.0), "
                      "('pkg', 1, 3.0), ('a', 1, 3.0)")
        admin.execute("UPDATE fourfold.chunk_totals SET chunks = 1, tokens = 3")
        admin.execute("INSERT INTO fourfold.vectors VALUES('m', 'chunk-a', %s, 0.5)",
                      (b"\x01\x02",))
    store = PostgresStore(postgres_url)
    moved = (1 << 40) | 1  # the chunk's id, its repository in its high bits
    assert store.vector_count("m") == 1
    assert list(store.vector_blocks("m")) == [([moved], [b"\x01\x02"], [0.5])]
    assert [c.path for c, _ in store.bm25_chunks(["alpha"], 5, repo_id=1)] == ["pkg/a.py"]
    assert store.bm25_chunks(["alpha"], 5, repo_id=2) == []
    assert store.held_documents(1, "") == {("pkg/a.py", "h")}  # each file its own document
    assert store.content(store.files(1)[0].file_id) == "alpha\n"
    store.put_vectors("m", [("chunk-a", b"\x03\x04", 0.25), ("more", b"\x05", 1.0)])
    assert store.vector_count("m") == 2 and store.vector_count("other") == 0
    with _admin(postgres_url) as admin:
        assert admin.execute("SELECT value FROM fourfold.meta WHERE key = 'schema_version'"
                             ).fetchone() == (str(SCHEMA_VERSION),)
    store.close()


def test_an_indexing_run_is_seen_whole_or_not_at_all(store, postgres_url):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [readme_record()], [], [])
    store.mark_indexed(repo, 1.0, "parser")
    reader = PostgresStore(postgres_url)
    with pytest.raises(IndexWriteError) as lost:
        with store.indexing_run():
            store.write_batch(repo, [alpha_record()], ["README.md"], [])
            assert [f.path for f in reader.files()] == ["README.md"]  # not while it runs
            with _admin(postgres_url) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (_backend_pid(store),))
            store.write_batch(repo, corpus_records(), [], [])
    assert "nothing of this index run was kept: the repository answers as it did before " \
        "it" in str(lost.value)
    # the lost run left the repository at its last complete generation, for every reader
    assert [f.path for f in reader.files()] == ["README.md"] == [f.path for f in store.files()]
    assert reader.bm25_chunks(["alpha"], 5) == [] and reader.generation() == ((repo, 1.0),)
    with store.indexing_run():
        store.write_batch(repo, [alpha_record()], ["README.md"], [])
        store.mark_indexed(repo, 2.0, "parser")
        assert reader.generation() == ((repo, 1.0),)
    assert reader.generation() == ((repo, 2.0),)  # all of it at once
    assert [f.path for f in reader.files()] == ["pkg/a.py"]
    reader.close()


def test_vectors_are_read_a_block_at_a_time_from_the_server(store, postgres_url):
    repo = store.ensure_repo("/src/proj", "proj")
    records = corpus_records()
    store.write_batch(repo, records, [], [])
    hashes = sorted({h for record in records for h in record.chunk_hashes})
    store.put_vectors("m", [(h, bytes([i % 256]), float(i)) for i, h in enumerate(hashes)])
    chunks = sorted(c.chunk_id for f in store.files(repo) for c in store.chunks_of_file(f.file_id))
    assert len(chunks) >= 6
    for run in (False, True):  # the codes are refreshed inside an indexing run and outside
        with store.indexing_run() if run else nullcontext():
            blocks = store.vector_blocks("m", repo, size=2)
            ids, _, _ = next(blocks)
            assert len(ids) == 2
            # the rest waits on the server, in a cursor of this connection, which meanwhile
            # answers other statements
            open_cursors = store._query("SELECT count(*) FROM pg_cursors WHERE name LIKE "
                                        "'vector_blocks_%%'")
            assert open_cursors == [(1,)]
            assert store.vector_count("m") == len(hashes)
            for more, rows, scales in blocks:
                assert 1 <= len(more) == len(rows) == len(scales) <= 2
                ids += more
            assert sorted(ids) == chunks
            assert store._query("SELECT count(*) FROM pg_cursors") == [(0,)]
    blocks = store.vector_blocks("m", size=2)
    next(blocks)
    with _admin(postgres_url) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (_backend_pid(store),))
    with pytest.raises(StoreUnavailable, match="lost the connection"):  # pages: 503
        list(blocks)
    assert len(list(itertools.chain.from_iterable(
        ids for ids, _, _ in store.vector_blocks("m", size=4)))) == len(chunks)


def test_codes_stream_into_the_server_as_they_are_made(store, postgres_url):
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [alpha_record(), readme_record()], [], [])
    first, second = sorted(c.chunk_id for f in store.files(repo)
                           for c in store.chunks_of_file(f.file_id))
    backend, writing = _backend_pid(store), []

    def codes():
        yield first, b"\xf0\x01"
        with _admin(postgres_url) as admin:  # what the store's connection does meanwhile
            writing.append(admin.execute("SELECT query FROM pg_stat_activity WHERE pid = %s",
                                         (backend,)).fetchone()[0])
        yield second, b"\x0f\x80"

    store.put_codes(repo, "m", b"mean", codes())
    assert writing[0].startswith("COPY chunk_codes")
    assert store.code_mean(repo, "m") == b"mean"
    assert store.nearest_codes(repo, "m", b"\xf0\x01", 2) == [first, second]
    assert store.nearest_codes(repo, "m", b"\x0f\x80", 1) == [second]


def test_the_embedded_and_the_server_store_agree_on_the_best_chunks(both):
    """Two BM25 formulas over the same weighted counts (the embedded index weighs length
    and rare terms as Tantivy does, the server as FTS5 does): the same chunks match, and
    mostly the same come first."""
    sqlite_store, postgres_store = both
    same_first = 0
    for terms in BM25_QUERIES:
        embedded = [(c.path, c.start_line) for c, _ in sqlite_store.bm25_chunks(terms, 1000)]
        server = [(c.path, c.start_line) for c, _ in postgres_store.bm25_chunks(terms, 1000)]
        assert sorted(embedded) == sorted(server), terms
        same_first += embedded[0] == server[0]
    assert same_first >= 0.8 * len(BM25_QUERIES)


def test_codes_held_in_memory_follow_what_another_process_writes(store, postgres_url,
                                                                  monkeypatch):
    """A searching process keeps a repository's codes in memory while their version holds,
    and sees another process's change (codes added, a chunk deleted, codes replaced) at its
    next search; a repository over the budget (FOURFOLD_CODES_MEMORY_MB) is searched in the
    database, alike."""
    from fourfold.store import postgres

    writer = PostgresStore(postgres_url)
    repo = writer.ensure_repo("/src/proj", "proj")
    writer.write_batch(repo, corpus_records(), [], [])
    chunks = sorted((c.chunk_id, f.path) for f in writer.files(repo)
                    for c in writer.chunks_of_file(f.file_id))
    ids = [c for c, _ in chunks]
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 256, (len(ids), 2), dtype=np.uint8)
    codes[5], codes[9] = codes[20], codes[20]  # ties, ordered by chunk id
    writer.put_codes(repo, "m", b"mean", zip(ids, map(bytes, codes)))
    questions = [bytes(q) for q in rng.integers(0, 256, (20, 2), dtype=np.uint8)]
    questions.append(bytes(codes[20]))
    held = [store.nearest_codes(repo, "m", q, 7) for q in questions]
    kept = store._codes._held[(repo, "m")]
    assert store.nearest_codes(repo, "m", questions[0], 7) == held[0]
    assert store._codes._held[(repo, "m")] is kept  # not read again
    assert held[-1][:3] == sorted([ids[5], ids[9], ids[20]])
    monkeypatch.setenv(postgres.CODES_MEMORY_ENV, "0")
    in_database = PostgresStore(postgres_url)  # holds none: searches them in the database
    assert [in_database.nearest_codes(repo, "m", q, 7) for q in questions] == held
    assert not in_database._codes._held
    in_database.close()
    monkeypatch.setenv(postgres.CODES_MEMORY_ENV, "lots")
    with pytest.raises(FourfoldError, match="FOURFOLD_CODES_MEMORY_MB='lots' is not a size"):
        PostgresStore(postgres_url)
    monkeypatch.delenv(postgres.CODES_MEMORY_ENV)
    # changes are read from their log (code_changes), not with every code again
    updated = []
    read_changes = store._codes.update
    monkeypatch.setattr(store._codes, "update",
                        lambda *args: updated.append(read_changes(*args)) or updated[-1])
    monkeypatch.setenv(postgres.CODES_MEMORY_ENV, "0")
    in_database = PostgresStore(postgres_url)
    writer.add_codes(repo, "m", [ids[3]], [b"\xab\xcd"])
    writer.add_codes(repo, "m", [ids[4], ids[6]], [b"\xab\xcc", b"\x01\x02"])
    assert store.nearest_codes(repo, "m", b"\xab\xcd", 1) == [ids[3]]
    assert updated[-1] is not None
    assert [store.nearest_codes(repo, "m", q, 7) for q in questions] == \
        [in_database.nearest_codes(repo, "m", q, 7) for q in questions]
    gone = chunks[3][1]
    writer.write_batch(repo, [], [gone], [])
    assert not {c for c, path in chunks if path == gone} & set(
        store.nearest_codes(repo, "m", b"\xab\xcd", len(ids)))
    assert updated[-1] is not None
    assert [store.nearest_codes(repo, "m", q, 7) for q in questions] == \
        [in_database.nearest_codes(repo, "m", q, 7) for q in questions]
    writer.put_codes(repo, "m", b"mean", [(ids[-1], b"\x00\x00")])
    assert store.nearest_codes(repo, "m", b"\xab\xcd", 5) == [ids[-1]]
    assert updated[-1] is None  # all made anew: read whole
    in_database.close()
    writer.close()


def _edges_naming_again():
    """Edges whose kinds and names recur, within a part of three and across parts."""
    from fourfold.store.base import Resolution, StoredEdge

    return [StoredEdge(kind, 1, n, None, n + 1, n, name, Resolution(n % 4)) for n, (kind, name)
            in enumerate(zip(["call", "ref", "call", "import", "call", "ref", "call", "ref"],
                             ["a", "b", "multi\nline", "", "a", "f", "b", "a"]))]


def test_an_upgrade_codes_the_kinds_and_names_of_stored_edges(postgres_url, monkeypatch):
    """Schema 16: rows of edges written with every kind and name spelled out are coded when
    the database is opened, and read as they were written."""
    from fourfold.store import postgres
    from fourfold.store.base import EdgeColumns
    from tests.store import schema9

    monkeypatch.setattr(postgres, "EDGES_A_ROW", 3)
    store = PostgresStore(postgres_url)
    first, second = store.ensure_repo("/a", "a"), store.ensure_repo("/b", "b")
    edges = _edges_naming_again()
    store.replace_graph(first, EdgeColumns.of(edges), {}, {})
    store.replace_graph(second, EdgeColumns.of(edges[2:5]), {}, {})
    store.close()
    with _admin(postgres_url) as admin, admin.cursor() as cur:
        schema9.edges_uncoded(cur, "edges_local")
        cur.execute("ALTER TABLE fourfold.edges DROP COLUMN kind_codes, DROP COLUMN name_codes")
        cur.execute("UPDATE fourfold.meta SET value = '15' WHERE key = 'schema_version'")
        assert cur.execute("SELECT names FROM fourfold.edges WHERE repo_id = %s ORDER BY part",
                           (first,)).fetchall() == [(["a", "b", "multi\nline"],),
                                                    (["", "a", "f"],), (["b", "a"],)]
    upgraded = PostgresStore(postgres_url)
    try:
        assert upgraded.all_edges(first) == edges and upgraded.all_edges(second) == edges[2:5]
        with _admin(postgres_url) as admin:
            assert admin.execute("SELECT names FROM fourfold.edges WHERE repo_id = %s AND "
                                 "part = 2", (first,)).fetchone() == (["b", "a"],)
            assert admin.execute("SELECT kinds FROM fourfold.edges WHERE repo_id = %s AND "
                                 "part = 0", (first,)).fetchone() == (["call", "ref"],)
            # a process of the schema before, still running, cannot write uncoded rows
            with pytest.raises(psycopg.errors.NotNullViolation):
                admin.execute("INSERT INTO fourfold.edges(repo_id, part, src_file, src_symbol, "
                              "dst_file, dst_symbol, line, resolution, kinds, names) VALUES "
                              "(%s, 9, '', '', '', '', '', '', '{}', '{}')", (second,))
    finally:
        upgraded.close()


def test_a_graph_is_written_and_read_in_parts(store, postgres_url, monkeypatch):
    from fourfold.store import postgres
    from fourfold.store.base import EdgeColumns

    monkeypatch.setattr(postgres, "EDGES_A_ROW", 3)
    first, second = store.ensure_repo("/a", "a"), store.ensure_repo("/b", "b")
    edges = _edges_naming_again()
    store.replace_graph(first, EdgeColumns.of(edges), {}, {})
    store.replace_graph(second, EdgeColumns.of(edges[:4]), {}, {})
    parts = "SELECT repo_id, count(*) FROM fourfold.edges GROUP BY 1 ORDER BY 1"
    with _admin(postgres_url) as admin:
        assert admin.execute(parts).fetchall() == [(first, 3), (second, 2)]
        assert store.all_edges(first) == edges and store.all_edges() == edges + edges[:4]
        store.replace_graph(first, EdgeColumns.of(edges[:2]), {}, {})  # fewer: one part
        assert admin.execute(parts).fetchall() == [(first, 1), (second, 2)]
        assert store.all_edges(first) == edges[:2]


def test_a_name_beginning_with_an_at_sign_is_a_family_of_its_own(postgres_url):
    """Every name beginning with @ (npm's @babel/core, @types/node) fell in one family
    (the text before the first @, empty): they shared documents and one indexing lock, and
    moved together between shards."""
    from fourfold.store.postgres import FAMILY_SQL, family

    names = ["acme/api", "acme/api@feature", "@babel/core", "@babel/core@next", "@types/node",
             "a@b@c", "@", "plain"]
    assert [family(n) for n in names] == ["acme/api", "acme/api", "@babel/core", "@babel/core",
                                          "@types/node", "a", "@", "plain"]
    with _admin(postgres_url) as admin:  # the SQL the store asks says the same
        rows = admin.execute(f"SELECT {FAMILY_SQL} FROM unnest(%s::text[]) AS t(name)",
                             (names,)).fetchall()
    assert [row[0] for row in rows] == [family(n) for n in names]
    store = PostgresStore(postgres_url)
    babel, types, branch = (store.ensure_repo(f"/src/{n}", n)
                            for n in ("@babel/core", "@types/node", "@babel/core@next"))
    homes = dict(store._query("SELECT id, home FROM repos WHERE id IN (%s, %s, %s)",
                              (babel, types, branch)))
    assert homes == {babel: babel, types: types, branch: babel}  # a branch shares its home
    # an index written before gave every such name one home: they share one lock too
    with _admin(postgres_url) as admin:
        admin.execute("UPDATE fourfold.repos SET home = %s WHERE id = %s", (babel, types))
    with store.indexing_lock("@babel/core"):
        with pytest.raises(IndexBusyError):
            with PostgresStore(postgres_url).indexing_lock("@types/node"):
                pass
    with store.indexing_lock("@types/node"):  # free again
        pass
    store.close()


def test_vectors_written_in_an_index_run_hold_no_other_indexer_back(postgres_url):
    """Vectors were written in the run's one transaction: the totals' row and any hash in
    common stayed locked until the run ended, and another repository's indexer embedding
    meanwhile waited for it (half a minute, measured)."""
    first, second = PostgresStore(postgres_url), PostgresStore(postgres_url)
    first.ensure_repo("/src/first", "first")
    done = threading.Event()
    try:
        with first.indexing_run():
            first.put_vectors("m", [("shared-hash", b"\x01\x02", 1.0)])
            writer = threading.Thread(target=lambda: (second.put_vectors(
                "m", [("shared-hash", b"\x01\x02", 1.0), ("other-hash", b"\x03\x04", 1.0)]),
                done.set()), daemon=True)
            writer.start()
            assert done.wait(10), "the second indexer waited for the first one's run"
        writer.join(5)
        assert second.vector_count("m") == 2
    finally:
        first.close()
        second.close()
