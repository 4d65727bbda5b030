"""Repositories spread over several PostgreSQL servers: shards reached through postgres_fdw.

The coordinator (the database --store names) keeps every per-repository table partitioned
by repository (postgres.REPOSITORY_TABLES); its own repositories live in each table's
DEFAULT partition. A shard is another PostgreSQL database holding the same tables as plain
tables; on the coordinator each of them is a foreign partition whose bounds list the
repositories placed there (plus the shard's marker, a negative id no repository has, since
a list partition names at least one value). Queries go to the coordinator and PostgreSQL
does the rest: partition pruning picks the shards a query needs, and postgres_fdw pushes
the conditions (trigram ILIKE, Hamming distance, ids) down to them. The shards of one
query are read one after another: with asynchronous scans (async_capable) a BM25 query
over three shards hung on PostgreSQL 15.18 (docs/scaling.md).

Placing a repository moves its rows in one coordinator transaction: they are read out,
deleted, the partitions' bounds changed, and written back, so they land where the bounds
now send them; a failure leaves every row where it was.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from ..errors import FourfoldError
from .postgres import (POSTING_TABLES, REPOSITORY_TABLES, SCHEMA_VERSION, coded_edges,
                       create_repository_table, documents_of_files, edges_in_parts,
                       postings_of_rows, trgm_schema)

SHARD_NAME = re.compile(r"[a-z][a-z0-9_]{0,29}")
SERVER_PREFIX = "fourfold_shard_"
FOREIGN_SUFFIX = "__"   # a table's partition on shard s: fourfold."<table>__<s>"
CONNECT_TIMEOUT_S = 3   # how long the coordinator waits for a shard that does not answer
# libpq options a shard's URL may carry into the coordinator's server definition
SERVER_OPTIONS = ("host", "port", "dbname", "sslmode", "sslrootcert", "sslcert", "sslkey")
MAPPING_OPTIONS = ("user", "password")


def server_name(shard: str) -> str:
    return SERVER_PREFIX + shard


def partition_name(table: str, shard: str) -> str:
    return f"{table}{FOREIGN_SUFFIX}{shard}"


def shard_of_error(message: str) -> str | None:
    """The shard a postgres_fdw error names (its foreign server), if any."""
    found = re.search(rf'server "{SERVER_PREFIX}([a-z0-9_]+)"', message)
    return found.group(1) if found else None


def _location(params: dict) -> str:
    return (f"{params.get('host') or 'localhost'}:{params.get('port') or '5432'}/"
            f"{params.get('dbname') or params.get('user') or 'postgres'}")


def prepare_shard(url: str) -> tuple[dict, str]:
    """Create the per-repository tables on a shard database (empty, or already prepared
    and holding no rows); (its connection parameters, its location)."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error:
        raise FourfoldError("the shard URL is not a PostgreSQL URL such as "
                            "postgresql://user@host:5432/db") from None
    location = _location(params)
    try:
        with psycopg.connect(**{**params, "connect_timeout": str(CONNECT_TIMEOUT_S)},
                             autocommit=True) as conn, conn.transaction(), conn.cursor() as cur:
            cur.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            cur.execute("CREATE SCHEMA IF NOT EXISTS fourfold")
            existing = {row[0] for row in cur.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'fourfold'")}
            if "repos" in existing:
                raise FourfoldError(f"{location} holds a fourfold index of its own; a shard "
                                    "must be a database of its own (create an empty one)")
            trgm = trgm_schema(cur)
            for table in REPOSITORY_TABLES:
                if table in existing:
                    if cur.execute(sql.SQL("SELECT EXISTS (SELECT FROM fourfold.{})").format(
                            sql.Identifier(table))).fetchone()[0]:
                        raise FourfoldError(f"{location} already holds rows of "
                                            f"fourfold.{table}; a new shard must be empty")
                    continue
                create_repository_table(cur, table, table, trgm)
            cur.execute("CREATE TABLE IF NOT EXISTS fourfold.shard_meta("
                        "key text PRIMARY KEY, value text NOT NULL)")
            cur.execute("INSERT INTO fourfold.shard_meta VALUES('schema_version', %s) "
                        "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                        (str(SCHEMA_VERSION),))
    except psycopg.OperationalError as exc:
        raise FourfoldError(f"cannot reach the shard at {location} "
                            f"({str(exc).splitlines()[0] if str(exc) else exc})") from None
    return params, location


def attach_shard(cur: psycopg.Cursor, name: str, params: dict, location: str) -> None:
    """On the coordinator: the foreign server, the user mapping and one empty foreign
    partition per table (bounds: the shard's marker only)."""
    cur.execute("CREATE EXTENSION IF NOT EXISTS postgres_fdw")
    options = {k: str(v) for k, v in params.items() if k in SERVER_OPTIONS and v}
    options.update(async_capable="false", fetch_size="2000", batch_size="1000",
                   connect_timeout=str(CONNECT_TIMEOUT_S), application_name="fourfold")
    cur.execute(sql.SQL("CREATE SERVER {} FOREIGN DATA WRAPPER postgres_fdw OPTIONS ({})").format(
        sql.Identifier(server_name(name)),
        sql.SQL(", ").join(sql.SQL("{} {}").format(sql.Identifier(k), sql.Literal(v))
                           for k, v in options.items())))
    mapping = {k: str(params[k]) for k in MAPPING_OPTIONS if params.get(k)}
    cur.execute(sql.SQL("CREATE USER MAPPING FOR CURRENT_USER SERVER {}{}").format(
        sql.Identifier(server_name(name)),
        sql.SQL(" OPTIONS ({})").format(sql.SQL(", ").join(
            sql.SQL("{} {}").format(sql.Identifier(k), sql.Literal(v))
            for k, v in mapping.items())) if mapping else sql.SQL("")))
    marker = cur.execute("SELECT coalesce(min(marker), 0) - 1 FROM fourfold.shards"
                         ).fetchone()[0]
    for table in REPOSITORY_TABLES:
        cur.execute(sql.SQL(
            "CREATE FOREIGN TABLE fourfold.{} PARTITION OF fourfold.{} FOR VALUES IN ({}) "
            "SERVER {} OPTIONS (schema_name 'fourfold', table_name {})").format(
                sql.Identifier(partition_name(table, name)), sql.Identifier(table),
                sql.Literal(marker), sql.Identifier(server_name(name)), sql.Literal(table)))
    cur.execute("INSERT INTO fourfold.shards VALUES(%s, %s, %s, %s)",
                (name, location, marker, time.time()))


def rebound(cur: psycopg.Cursor, shard: str) -> None:
    """Set a shard's partitions' bounds to its marker and the repositories placed there."""
    marker = cur.execute("SELECT marker FROM fourfold.shards WHERE name = %s",
                         (shard,)).fetchone()[0]
    values = [marker] + [row[0] for row in cur.execute(
        "SELECT id FROM fourfold.repos WHERE shard = %s ORDER BY id", (shard,))]
    bounds = sql.SQL(", ").join(sql.Literal(v) for v in values)
    for table in REPOSITORY_TABLES:
        parent, child = sql.Identifier(table), sql.Identifier(partition_name(table, shard))
        cur.execute(sql.SQL("ALTER TABLE fourfold.{} DETACH PARTITION fourfold.{}").format(
            parent, child))
        cur.execute(sql.SQL("ALTER TABLE fourfold.{} ATTACH PARTITION fourfold.{} "
                            "FOR VALUES IN ({})").format(parent, child, bounds))


def move_repositories(cur: psycopg.Cursor, repo_ids: list[int], source: str | None,
                      target: str | None) -> int:
    """Move repositories' rows from `source` to `target` (None: the coordinator) inside
    the caller's transaction; returns how many rows moved."""
    moved = 0
    for table in REPOSITORY_TABLES:
        cur.execute(sql.SQL("CREATE TEMP TABLE {} ON COMMIT DROP AS SELECT * FROM fourfold.{} "
                            "WHERE repo_id = ANY(%s)").format(
            sql.Identifier(f"moving_{table}"), sql.Identifier(table)), (repo_ids,))
        cur.execute(sql.SQL("DELETE FROM fourfold.{} WHERE repo_id = ANY(%s)").format(
            sql.Identifier(table)), (repo_ids,))
    cur.execute("UPDATE fourfold.repos SET shard = %s WHERE id = ANY(%s)", (target, repo_ids))
    for shard in (source, target):  # the source first: bounds may not overlap
        if shard is not None:
            rebound(cur, shard)
    for table in REPOSITORY_TABLES:
        moved += cur.execute(sql.SQL("INSERT INTO fourfold.{} SELECT * FROM {}").format(
            sql.Identifier(table), sql.Identifier(f"moving_{table}"))).rowcount
    return moved


def _shard_params(cur: psycopg.Cursor, shard: str) -> dict:
    """How the coordinator reaches a shard (its server's options and this user's mapping),
    as connection parameters."""
    server = server_name(shard)
    options = cur.execute("SELECT srvoptions FROM pg_foreign_server WHERE srvname = %s",
                          (server,)).fetchone()[0] or []
    mapping = cur.execute("SELECT umoptions FROM pg_user_mappings WHERE srvname = %s AND "
                          "usename = current_user", (server,)).fetchone()
    pairs = [o.split("=", 1) for o in options + ((mapping[0] or []) if mapping else [])]
    return {k: v for k, v in pairs if k in SERVER_OPTIONS + MAPPING_OPTIONS}


def _change_shards(cur: psycopg.Cursor, version: int,
                   change: Callable[[psycopg.Cursor], None], tables: tuple[str, ...]) -> None:
    """Schema step `version` on every shard: its own tables changed by `change` over a
    connection of its own (once: a shard records its schema), then its new `tables`
    attached to the coordinator's as foreign partitions with the shard's bounds."""
    for name, marker in cur.execute("SELECT name, marker FROM fourfold.shards ORDER BY name"
                                    ).fetchall():
        params = _shard_params(cur, name)
        try:
            with psycopg.connect(**params, connect_timeout=str(CONNECT_TIMEOUT_S),
                                 autocommit=True) as conn, conn.transaction(), \
                    conn.cursor() as shard:
                done = int(shard.execute("SELECT value FROM fourfold.shard_meta WHERE "
                                         "key = 'schema_version'").fetchone()[0])
                if done < version:
                    change(shard)
                    shard.execute("UPDATE fourfold.shard_meta SET value = %s WHERE "
                                  "key = 'schema_version'", (str(version),))
        except psycopg.OperationalError as exc:
            raise FourfoldError(
                f"shard {name!r} ({_location(params)}) does not answer "
                f"({str(exc).splitlines()[0] if str(exc) else exc}); this fourfold changes "
                "every shard's tables when it first opens the index: start the shard and "
                "try again") from None
        placed = [row[0] for row in cur.execute(
            "SELECT id FROM fourfold.repos WHERE shard = %s ORDER BY id", (name,))]
        for table in tables:
            cur.execute(sql.SQL(
                "CREATE FOREIGN TABLE fourfold.{} PARTITION OF fourfold.{} FOR VALUES IN ({}) "
                "SERVER {} OPTIONS (schema_name 'fourfold', table_name {})").format(
                    sql.Identifier(partition_name(table, name)), sql.Identifier(table),
                    sql.SQL(", ").join(sql.Literal(v) for v in [marker] + placed),
                    sql.Identifier(server_name(name)), sql.Literal(table)))


def documents_on_shards(cur: psycopg.Cursor, parsers: dict[int, str]) -> None:
    """Schema step 9 on every shard (postgres.documents_of_files)."""
    def change(shard: psycopg.Cursor) -> None:
        create_repository_table(shard, "documents", "documents", trgm_schema(shard))
        documents_of_files(shard, "", parsers)

    _change_shards(cur, 9, change, ("documents",))


def postings_on_shards(cur: psycopg.Cursor) -> None:
    """Schema step 10 on every shard (postgres.postings_of_rows)."""
    def change(shard: psycopg.Cursor) -> None:
        trgm = trgm_schema(shard)
        for table in POSTING_TABLES:
            create_repository_table(shard, table, table, trgm)
        postings_of_rows(shard, "")

    _change_shards(cur, 10, change, POSTING_TABLES)


def edges_in_parts_on_shards(cur: psycopg.Cursor) -> None:
    """Schema step 12 on every shard (postgres.edges_in_parts)."""
    _change_shards(cur, 12, lambda shard: edges_in_parts(shard, "edges"), ())


def coded_edges_on_shards(cur: psycopg.Cursor) -> None:
    """Schema step 16 on every shard (postgres.coded_edges)."""
    _change_shards(cur, 16, lambda shard: coded_edges(shard, "edges"), ())


def graph_inputs_on_shards(cur: psycopg.Cursor) -> None:
    """Schema step 15 on every shard: its graph_inputs table."""
    _change_shards(cur, 15, lambda shard: create_repository_table(
        shard, "graph_inputs", "graph_inputs", trgm_schema(shard)), ("graph_inputs",))


def dead_entries_on_shards(cur: psycopg.Cursor) -> None:
    """Schema step 13 on every shard: its dead_entries table."""
    _change_shards(cur, 13, lambda shard: create_repository_table(
        shard, "dead_entries", "dead_entries", trgm_schema(shard)), ("dead_entries",))
