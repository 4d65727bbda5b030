"""The server's BM25 postings (postgres_postings.py): however a repository's chunks came to
be written (blocks written part way through a run, chunks deleted before and after their
block was written, many one-file runs whose small blocks are merged, an older schema's
term rows migrated), its postings hold exactly its chunks and their terms, its counts
agree with them, and it ranks as FTS5 ranks the same files indexed at once."""
from __future__ import annotations

from collections import Counter

import numpy as np
import psycopg
import pytest

from fourfold.store import postgres, postgres_postings
from fourfold.store.postgres import PostgresStore
from tests.store.records import CORPUS, corpus_records, python_record
from tests.store.test_postgres_store import (BM25_QUERIES, POSTINGS_COUNTED, _fts5_bm25,
                                             _ties_grouped)


@pytest.fixture
def store(postgres_url):
    opened = PostgresStore(postgres_url)
    yield opened
    opened.close()


def _ranks_as_fts5(store: PostgresStore) -> None:
    for terms in BM25_QUERIES:
        expected, got = _fts5_bm25(terms, 1000), store.bm25_chunks(terms, 1000)
        assert [keys for _, keys in _ties_grouped(got)] == \
            [keys for _, keys in _ties_grouped(expected)], terms
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-12)


def _consistent(url: str) -> int:
    """Check that the postings hold each chunk with a term once per term, exactly as each
    document's terms list them, and that the blocks' and the terms' counts agree; the
    number of blocks."""
    with psycopg.connect(url, autocommit=True) as admin:
        posted = Counter()
        for term, ids in admin.execute("SELECT term, chunk_ids FROM fourfold.chunk_postings"):
            posted.update((term, i) for i in np.frombuffer(ids, postgres_postings.IDS).tolist())
        listed = postgres_postings.chunk_terms(admin.execute(
            "SELECT chunk_ids, terms FROM fourfold.document_terms"))
        assert set(posted.values()) <= {1}
        assert set(posted) == {(term, c) for c, terms in listed.items() for term in terms}
        chunks = {row[0] for row in admin.execute("SELECT id FROM fourfold.chunks")}
        assert {c for _, c in posted} == chunks == set(listed)  # every chunk has a term
        blocks = admin.execute("SELECT count(*), coalesce(sum(chunks), 0) FROM "
                               "fourfold.posting_blocks").fetchone()
        assert blocks[1] == len(chunks)
        assert admin.execute("SELECT term, repo_id, chunks FROM fourfold.term_counts "
                             "ORDER BY 1, 2").fetchall() == \
            admin.execute(POSTINGS_COUNTED).fetchall()
        return blocks[0]


def _changed(path: str):
    return python_record(path, "def replaced_for_a_while(): return 'nothing like it'\n")


def test_blocks_written_part_way_through_a_run_and_deletions_rank_as_one_batch(
        store, postgres_url, monkeypatch):
    # 4 or 5 chunks a file: a block is written after the 3rd and 6th file, the last two
    # files' chunks are held when their deletion comes
    monkeypatch.setattr(postgres_postings, "BLOCK_CHUNKS", 10)
    repo = store.ensure_repo("/src/proj", "proj")
    paths = list(CORPUS)
    with store.indexing_run():
        for record in corpus_records():
            store.write_batch(repo, [record], [], [])
        # deleted from written blocks and from the one held, replaced, then back
        store.write_batch(repo, [], [paths[0], paths[-1]], [])
        store.write_batch(repo, [_changed(paths[1])], [], [])
        store.write_batch(repo, [r for r in corpus_records()
                                 if r.path in (paths[0], paths[1], paths[-1])], [], [])
    assert _consistent(postgres_url) >= 3
    _ranks_as_fts5(store)
    with store.indexing_run():  # a later run replaces files of earlier blocks
        store.write_batch(repo, [_changed(paths[2]), _changed(paths[5])], [], [])
        store.write_batch(repo, [r for r in corpus_records() if r.path in paths[2:6]], [], [])
    _consistent(postgres_url)
    _ranks_as_fts5(store)
    store.write_batch(repo, [], paths, [])  # all of it deleted: nothing is left
    assert _consistent(postgres_url) == 0
    with psycopg.connect(postgres_url) as admin:
        for table in postgres.POSTING_TABLES:
            assert admin.execute(f"SELECT count(*) FROM fourfold.{table}").fetchone() == (0,)


def test_the_small_blocks_of_many_one_file_runs_are_merged(store, postgres_url, monkeypatch):
    monkeypatch.setattr(postgres_postings, "SMALL_BLOCKS_KEPT", 3)
    repo = store.ensure_repo("/src/proj", "proj")
    for record in corpus_records():
        with store.indexing_run():
            store.write_batch(repo, [record], [], [])
    path = list(CORPUS)[3]
    for _ in range(6):  # a file saved again and again, each save indexed
        for record in (_changed(path), next(r for r in corpus_records() if r.path == path)):
            with store.indexing_run():
                store.write_batch(repo, [record], [], [])
    assert _consistent(postgres_url) <= postgres_postings.SMALL_BLOCKS_KEPT
    _ranks_as_fts5(store)


def test_term_rows_of_schema_9_become_postings_that_rank_the_same(postgres_url, monkeypatch):
    """A database written before postings (a row per chunk and term, schema 9) is migrated
    in blocks when opened, and is then kept up to date as one written since."""
    monkeypatch.setattr(postgres_postings, "BLOCK_CHUNKS", 7)
    store = PostgresStore(postgres_url)
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, corpus_records(), [], [])
    store.close()
    with psycopg.connect(postgres_url, autocommit=True) as admin, admin.cursor() as cur:
        # what schema 9 held: the same terms, a row per chunk
        cur.execute(f"CREATE TABLE fourfold.chunk_terms "
                    f"({postgres._TABLES_AT_SCHEMA_8['chunk_terms'][0]}) "
                    "PARTITION BY LIST (repo_id)")
        postgres.create_repository_table(cur, "chunk_terms", "chunk_terms_local",
                                         postgres.trgm_schema(cur), partition_of="chunk_terms",
                                         definitions=postgres._TABLES_AT_SCHEMA_8)
        rows = []
        for home, term, ids, weights, lengths in cur.execute(
                "SELECT repo_id, term, chunk_ids, weights, lengths FROM "
                "fourfold.chunk_postings").fetchall():
            rows += zip([home] * (len(ids) // 8), [term] * (len(ids) // 8),
                        np.frombuffer(ids, postgres_postings.IDS).tolist(),
                        np.frombuffer(weights, postgres_postings.WEIGHTS).tolist(),
                        np.frombuffer(lengths, postgres_postings.LENGTHS).tolist())
        cur.executemany("INSERT INTO fourfold.chunk_terms VALUES(%s, %s, %s, %s, %s)", rows)
        for table in postgres.POSTING_TABLES:
            cur.execute(f"DROP TABLE fourfold.{table}")
        cur.execute("ALTER TABLE fourfold.code_means DROP COLUMN version")  # step 11's
        cur.execute("UPDATE fourfold.meta SET value = '9' WHERE key = 'schema_version'")
    store = PostgresStore(postgres_url)
    try:
        assert _consistent(postgres_url) == 6  # 36 chunks, 7 a block
        _ranks_as_fts5(store)
        paths = list(CORPUS)
        store.write_batch(repo, [_changed(paths[0])], paths[1:3], [])
        store.write_batch(repo, [r for r in corpus_records() if r.path in paths[:3]], [], [])
        _consistent(postgres_url)
        _ranks_as_fts5(store)
        with psycopg.connect(postgres_url) as admin:
            assert admin.execute("SELECT to_regclass('fourfold.chunk_terms')").fetchone() == \
                (None,)
    finally:
        store.close()
