"""What schema 9 kept of chunks' terms and symbols' tokens, a row each (chunk_terms,
symbol_tokens), made again from a later schema's word lists: the upgrade's starting point."""
from __future__ import annotations

import numpy as np
import psycopg

from fourfold.store import postgres
from fourfold.store.postgres_postings import IDS, LENGTHS, WEIGHTS


def rows_of_lists(conn: psycopg.Connection) -> dict[str, list[tuple]]:
    """chunk_terms and symbol_tokens rows (their columns at schema 9) of every list."""
    chunk_terms = []
    for home, term, ids, weights, lengths in conn.execute(
            "SELECT repo_id, term, chunk_ids, weights, lengths FROM fourfold.chunk_postings"):
        chunk_terms += zip([home] * (len(ids) // 8), [term] * (len(ids) // 8),
                           np.frombuffer(ids, IDS).tolist(),
                           np.frombuffer(weights, WEIGHTS).tolist(),
                           np.frombuffer(lengths, LENGTHS).tolist())
    symbol_tokens = [(home, token, symbol_id) for home, token, ids in conn.execute(
        "SELECT repo_id, token, symbol_ids FROM fourfold.symbol_postings")
        for symbol_id in np.frombuffer(ids, IDS).tolist()]
    return {"chunk_terms": chunk_terms, "symbol_tokens": symbol_tokens}


def make_tables(cur: psycopg.Cursor, trgm: str, partitioned: bool) -> None:
    """Drop the word lists and make schema 9's tables: partitioned by repository with a
    local partition (a coordinator), or plain (a shard)."""
    for table in postgres.POSTING_TABLES:
        cur.execute(f"DROP TABLE fourfold.{table}")
    for table in ("chunk_terms", "symbol_tokens"):
        if partitioned:
            cur.execute(f"CREATE TABLE fourfold.{table} "
                        f"({postgres._TABLES_AT_SCHEMA_8[table][0]}) PARTITION BY LIST (repo_id)")
            postgres.create_repository_table(cur, table, table + postgres.LOCAL, trgm,
                                             partition_of=table,
                                             definitions=postgres._TABLES_AT_SCHEMA_8)
        else:
            postgres.create_repository_table(cur, table, table, trgm,
                                             definitions=postgres._TABLES_AT_SCHEMA_8)


def insert_rows(cur: psycopg.Cursor, rows: dict[str, list[tuple]]) -> None:
    for table, table_rows in rows.items():
        marks = ", ".join(["%s"] * len(table_rows[0])) if table_rows else ""
        cur.executemany(f"INSERT INTO fourfold.{table} VALUES({marks})", table_rows)


def edges_uncoded(cur: psycopg.Cursor, table: str) -> None:
    """Undo schema 16's change of one real edges table: every edge's kind and name spelled
    out again in the rows (the columns of codes are the caller's to drop)."""
    for repo_id, part, kinds, kind_codes, names, name_codes in cur.execute(
            "SELECT repo_id, part, kinds, kind_codes, names, name_codes "
            f"FROM fourfold.{table}").fetchall():
        cur.execute(f"UPDATE fourfold.{table} SET kinds = %s, names = %s "
                    "WHERE repo_id = %s AND part = %s",
                    ([kinds[i] for i in np.frombuffer(kind_codes, np.int32).tolist()],
                     [names[i] for i in np.frombuffer(name_codes, np.int32).tolist()],
                     repo_id, part))


def later_steps_undone(cur: psycopg.Cursor, coordinator: bool) -> None:
    """Undo schemas 11 to 16 (codes' versions, edges in parts: one part per repository
    here, dead entries, the log of code changes, graph inputs, coded edge names) and mark
    the database as at schema 9."""
    edges_uncoded(cur, "edges_local" if coordinator else "edges")
    cur.execute("ALTER TABLE fourfold.edges DROP COLUMN kind_codes, DROP COLUMN name_codes")
    cur.execute("DROP TABLE fourfold.dead_entries")
    cur.execute("DROP TABLE fourfold.graph_inputs")
    if coordinator:
        cur.execute("DROP TABLE fourfold.code_changes")
    edges = "edges_local" if coordinator else "edges"
    cur.execute(f"ALTER TABLE fourfold.{edges} DROP CONSTRAINT {edges}_pkey, "
                "ADD PRIMARY KEY (repo_id)")
    cur.execute("ALTER TABLE fourfold.edges DROP COLUMN part")
    if coordinator:
        cur.execute("ALTER TABLE fourfold.code_means DROP COLUMN version")
        cur.execute("UPDATE fourfold.meta SET value = '9' WHERE key = 'schema_version'")
    else:
        cur.execute("UPDATE fourfold.shard_meta SET value = '9' WHERE key = 'schema_version'")
