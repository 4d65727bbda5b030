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
from fourfold.tokens import identifier_tokens
from tests.store import schema9
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
    """Check that the lists hold each chunk and symbol once per word, exactly as each
    document's words list them, and that the blocks' and the terms' counts agree; the
    number of blocks."""
    with psycopg.connect(url, autocommit=True) as admin:
        listed = postgres_postings.entry_words(admin.execute(
            f"SELECT {postgres_postings.DOCUMENT_WORDS} FROM fourfold.document_terms"))
        # dead entries (postgres_postings.bury) are still listed, with the words they had
        dead = [dict(admin.execute("SELECT id, words FROM fourfold.dead_entries WHERE "
                                   "symbol = %s", (symbol,)).fetchall())
                for symbol in (False, True)]
        still_listed = set()
        for (table, word, ids), entries, buried in zip(
                (("chunk_postings", "term", "chunk_ids"),
                 ("symbol_postings", "token", "symbol_ids")), listed, dead):
            posted = Counter()
            for term, packed in admin.execute(f"SELECT {word}, {ids} FROM fourfold.{table}"):
                posted.update((term, i) for i in np.frombuffer(packed, postgres_postings.IDS)
                              .tolist())
            assert set(posted.values()) <= {1}
            alive = {(w, e) for e, words in entries.items() for w in words}
            assert alive <= set(posted)
            assert set(posted) - alive <= {(w, e) for e, words in buried.items() for w in words}
            still_listed |= {e for _, e in set(posted) - alive}
        chunks = {row[0] for row in admin.execute("SELECT id FROM fourfold.chunks")}
        assert not chunks & (dead[0].keys() | dead[1].keys())
        assert set(listed[0]) == chunks  # every chunk has a term
        assert set(listed[1]) <= {row[0] for row in admin.execute(
            "SELECT id FROM fourfold.symbols")}
        blocks = admin.execute("SELECT count(*), coalesce(sum(entries), 0) FROM "
                               "fourfold.posting_blocks").fetchone()
        assert blocks[1] == len(chunks) + len(listed[1]) + len(still_listed)
        assert admin.execute("SELECT term, repo_id, chunks FROM fourfold.term_counts "
                             "ORDER BY 1, 2").fetchall() == \
            admin.execute(POSTINGS_COUNTED).fetchall()
        return blocks[0]


def _finds_symbols_as_named(store: PostgresStore) -> None:
    """Each symbol is found by each word of its name, and only symbols that are."""
    symbols = {s.symbol_id: s for f in store.files() for s in store.symbols_of_file(f.file_id)}
    for symbol in symbols.values():
        for token in identifier_tokens(symbol.name):
            found = store.symbols_by_token([token], limit=10_000)
            assert symbol.symbol_id in {s.symbol_id for s in found}
            assert all(s.name.lower().startswith(token) or token in identifier_tokens(s.name)
                       for s in found)


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
    _finds_symbols_as_named(store)
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


def _lists(url: str) -> list[tuple]:
    with psycopg.connect(url) as admin:
        return admin.execute("SELECT term, block, chunk_ids, weights, lengths FROM "
                             "fourfold.chunk_postings ORDER BY term, block").fetchall()


def test_an_edit_marks_its_old_entries_dead_until_enough_are(store, postgres_url,
                                                             monkeypatch):
    """Replacing a file leaves the lists of its block as they are (its old chunks and
    symbols marked dead, found by no search); once more entries are dead than
    DEAD_ENTRIES_KEPT they are taken out of the lists."""
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, corpus_records(), [], [])
    written = _lists(postgres_url)
    paths = list(CORPUS)
    for path in paths[:2]:  # each edited, then saved as it was
        changed = _changed(path)
        changed.hash = f"changed-{path}"  # another document (the test records hash by path)
        store.write_batch(repo, [changed], [], [])
        store.write_batch(repo, [r for r in corpus_records() if r.path == path], [], [])
    # the first block's lists are untouched; the new versions came as blocks of their own
    assert [row for row in _lists(postgres_url) if row[1] == written[0][1]] == written
    with psycopg.connect(postgres_url) as admin:
        dead = admin.execute("SELECT count(*) FROM fourfold.dead_entries").fetchone()[0]
    assert dead > 0
    assert _consistent(postgres_url) >= 3
    _ranks_as_fts5(store)
    _finds_symbols_as_named(store)
    # a symbol search whose first ids are dead (the edited files' old symbols came first)
    # still gives as many as it is asked for
    alive = [s for f in store.files() for s in store.symbols_of_file(f.file_id)]
    with psycopg.connect(postgres_url) as admin:
        buried = [words for (words,) in admin.execute(
            "SELECT words FROM fourfold.dead_entries WHERE symbol ORDER BY id")]
    token = next(t for words in buried for t in words
                 if any(t in identifier_tokens(s.name) for s in alive))
    holding = {s.symbol_id for s in alive if token in identifier_tokens(s.name)}
    found = store.symbols_by_token([token], limit=len(holding))
    assert {s.symbol_id for s in found} == holding
    monkeypatch.setattr(postgres_postings, "DEAD_ENTRIES_KEPT", dead - 1)
    changed = _changed(paths[3])
    changed.hash = f"changed-{paths[3]}"
    store.write_batch(repo, [changed], [], [])
    with psycopg.connect(postgres_url) as admin:
        assert admin.execute("SELECT count(*) FROM fourfold.dead_entries").fetchone() == (0,)
    listed = {i for _, _, ids, _, _ in _lists(postgres_url)
              for i in np.frombuffer(ids, postgres_postings.IDS).tolist()}
    assert listed == {c.chunk_id for f in store.files() for c in store.chunks_of_file(f.file_id)}
    _consistent(postgres_url)
    store.write_batch(repo, [r for r in corpus_records() if r.path == paths[3]], [], [])
    _consistent(postgres_url)
    _ranks_as_fts5(store)
    _finds_symbols_as_named(store)


def test_a_watchers_edits_leave_the_lists_to_be_tidied_by_its_catch_up(
        make_tree, postgres_url, monkeypatch):
    """An edit indexed with the graph left for later (a watcher's) takes no dead entries
    out of the lists and merges no blocks, however many there are: its catch-up takes
    them all out and merges the small blocks (in a process of its own, with the default
    bounds)."""
    from fourfold import Fourfold

    monkeypatch.setattr(postgres_postings, "DEAD_ENTRIES_KEPT", 0)
    monkeypatch.setattr(postgres_postings, "SMALL_BLOCKS_KEPT", 1)
    root = make_tree({"a.py": "def alpha():\n    return 1\n",
                      "b.py": "def beta():\n    return alpha()\n"})
    ff = Fourfold(root, store_url=postgres_url)
    ff.index(embed=False)
    for text in ("def alpha():\n    return 2\n", "def alpha():\n    return 3\n"):
        (root / "a.py").write_text(text)
        ff.index(embed=False, changed=[str(root / "a.py")], graph_later=True)
    with psycopg.connect(postgres_url) as admin:
        assert admin.execute("SELECT count(*) FROM fourfold.dead_entries").fetchone()[0] > 0
        assert admin.execute("SELECT count(*) FROM fourfold.posting_blocks").fetchone()[0] == 3
    assert [m.text for m in ff.grep("return")] == ["    return 3", "    return alpha()"]
    assert ff.catch_up()
    with psycopg.connect(postgres_url) as admin:
        assert admin.execute("SELECT count(*) FROM fourfold.dead_entries").fetchone() == (0,)
        assert admin.execute("SELECT count(*) FROM fourfold.posting_blocks").fetchone() == (1,)
    _consistent(postgres_url)
    ff.close()


def test_the_small_blocks_of_many_one_file_runs_are_merged(store, postgres_url, monkeypatch):
    monkeypatch.setattr(postgres_postings, "SMALL_BLOCKS_KEPT", 3)
    repo = store.ensure_repo("/src/proj", "proj")
    for record in corpus_records():
        with store.indexing_run():
            store.write_batch(repo, [record], [], [])
    path = list(CORPUS)[3]
    changed = _changed(path)
    changed.hash = f"changed-{path}"  # another document (the test records hash by path)
    for _ in range(6):  # a file saved again and again, each save indexed
        for record in (changed, next(r for r in corpus_records() if r.path == path)):
            with store.indexing_run():
                store.write_batch(repo, [record], [], [])
    assert _consistent(postgres_url) <= postgres_postings.SMALL_BLOCKS_KEPT
    _ranks_as_fts5(store)
    _finds_symbols_as_named(store)


def test_rows_of_schema_9_become_lists_that_answer_the_same(postgres_url, monkeypatch):
    """A database written before word lists (a row per chunk and term, and per symbol and
    token: schema 9) is migrated in blocks when opened, and is then kept up to date as
    one written since."""
    monkeypatch.setattr(postgres_postings, "BLOCK_CHUNKS", 7)
    store = PostgresStore(postgres_url)
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, corpus_records(), [], [])
    store.close()
    with psycopg.connect(postgres_url, autocommit=True) as admin, admin.cursor() as cur:
        rows = schema9.rows_of_lists(admin)
        schema9.make_tables(cur, postgres.trgm_schema(cur), partitioned=True)
        schema9.insert_rows(cur, rows)
        schema9.later_steps_undone(cur, coordinator=True)
    store = PostgresStore(postgres_url)
    try:
        with psycopg.connect(postgres_url) as admin:
            symbols = admin.execute("SELECT count(*) FROM fourfold.symbols").fetchone()[0]
        # blocks of 7 of the 36 chunks, and of the symbols
        assert _consistent(postgres_url) == 6 + -(-symbols // 7)
        _ranks_as_fts5(store)
        _finds_symbols_as_named(store)
        paths = list(CORPUS)
        store.write_batch(repo, [_changed(paths[0])], paths[1:3], [])
        store.write_batch(repo, [r for r in corpus_records() if r.path in paths[:3]], [], [])
        _consistent(postgres_url)
        _ranks_as_fts5(store)
        _finds_symbols_as_named(store)
        with psycopg.connect(postgres_url) as admin:
            assert admin.execute("SELECT to_regclass('fourfold.chunk_terms'), "
                                 "to_regclass('fourfold.symbol_tokens')").fetchone() == \
                (None, None)
    finally:
        store.close()


def test_a_batch_is_weighed_as_each_chunk_is_counted_alone():
    """weigh_chunks (a batch at once, by numpy) gives each chunk the terms and weights that
    counting the chunk's own terms gives: path, symbol and body weighed by column, a term
    met in several columns summed, tokens too long to keep counted in the length only,
    and chunks without a word."""
    giant = "q" * (postgres.MAX_TERM_CHARS + 1)
    paths = ["src parse config parser py", "src parse config parser py", "", "lib x"]
    symbols = ["parse config parseconfig", "", "", "running runs"]
    bodies = [f"config configs configuring parse {giant} parse", "the parser parses", "",
              "run running ran at"]
    # cached terms of an earlier batch are reused: weigh twice, the second from the cache
    for _ in range(2):
        weighed = postgres.weigh_chunks(paths, symbols, bodies)
        for place, columns in enumerate(zip(paths, symbols, bodies)):
            expected: Counter = Counter()
            for text, weight in zip(columns, (3.0, 5.0, 1.0)):
                for term in postgres.index_terms(text):
                    if len(term) <= postgres.MAX_TERM_CHARS:
                        expected[term] += weight
            start, end = weighed.bounds[place], weighed.bounds[place + 1]
            got = {weighed.terms[t]: w for t, w in zip(weighed.entry_term[start:end],
                                                       weighed.entry_weight[start:end])}
            assert got == expected
            assert (weighed.entry_chunk[start:end] == place).all()
            assert weighed.lengths[place] == sum(len(text.split()) for text in columns)
    assert weighed.lengths[2] == 0 and weighed.bounds[2] == weighed.bounds[3]
