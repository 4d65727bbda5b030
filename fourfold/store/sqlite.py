"""Embedded default store: one SQLite database (WAL) in the index folder.

Contents carry an FTS5 trigram index (literal and regex prefilter); the chunks'
identifier-split tokens are ranked by BM25 in a Tantivy index beside the database
(chunk_index.py); symbols, references, edges, centrality and int8 vectors are plain tables.
Every connection is per thread, so retrievers can run concurrently and readers keep working
while an indexer writes.
"""
from __future__ import annotations

import bisect
import itertools
import json
import os
import re
import sqlite3
import threading
import time
from array import array
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Collection, Iterable, Iterator, Sequence

import lz4.block

from ..errors import (FourfoldError, IndexDamagedError, IndexWriteError,
                      ModalityUnavailable)
from ..model import Symbol
from ..tokens import chunk_body, identifier_tokens, token_text, token_texts
from .base import (CODE_CHANGES_KEPT, EdgeColumns, FileRecord, FileStamp, FileState,
                   GraphInput, GraphPatch, HeldCodes, NO_REFERENCES,
                   graph_version_setting, packed_ids, PathKey,
                   RepoInfo, RequiredText, Store, StoredChunk, StoredFile, StoredSymbol,
                   TokenRecord, REMOVING, being_removed, removing_key,
                   repository_settings, codes_allowance_setting, deep_codes_setting,
                   max_file_bytes_setting, setting_value)
from .chunk_index import ChunkIndex, weighted_text
from .index_dir import CHUNK_INDEX_NAME, IndexLock, indexer_at_work
from .sql_common import (CHUNK_COLS, FILE_COLS, EdgeRow, clear_errors, edge_columns_of,
                         copied_edge_files, packed, packed_bytes, packed_codes,
                         symbol_columns, twin_file_ids, two_columns)

SCHEMA_VERSION = 15  # 2: trigram index without positions; 3: contentless chunk tokens;
# 4: a file's raw references as one JSON row, edges indexed by repository only;
# 5: a repository's edges packed in one row; 6: files keep their ctime and inode;
# 7: an edge's resolution (how sure it is) instead of a resolved flag; 8: binary codes kept;
# 9: what is read from a file's path and content kept once per document, shared by files;
# 10: symbol tokens in one b-tree, raw references compressed; 11: file texts compressed;
# 12: symbol tokens in FTS5, edges compressed, a qualified name kept only where it differs,
# vectors keyed without a rowid; 13: codes and symbol ranks keyed without a rowid;
# 14: chunk tokens in a Tantivy index beside the database; 15: edge kinds and names coded

# which chunks' codes each version of a repository's codes took away and added (packed
# big-endian int64 ids), so that a process holding an older version reads only those; made
# when an index of this schema is opened for writing if an older fourfold made the index
CODE_CHANGES = """CREATE TABLE IF NOT EXISTS code_changes(
    repo_id INTEGER NOT NULL, model TEXT NOT NULL, version INTEGER NOT NULL,
    removed BLOB NOT NULL, added BLOB NOT NULL, PRIMARY KEY(repo_id, model, version))
    WITHOUT ROWID"""

# a repository's codes as one row, taken whenever all its codes are taken anew (and again
# when the log of changes since would soon not reach back to it): a process that searches
# reads it and the changes logged since instead of a row per code (the kernel's 1.47
# million rows took 0.85 s); ids as int64 and codes in chunk id order, written a piece at
# a time into the row's blobs (a rowid table: SQLite's blob handles need one); made on
# opening for writing, as code_changes
CODE_SNAPSHOTS = """CREATE TABLE IF NOT EXISTS code_snapshots(
    repo_id INTEGER NOT NULL, model TEXT NOT NULL, version INTEGER NOT NULL,
    ids BLOB NOT NULL, codes BLOB NOT NULL, UNIQUE(repo_id, model))"""
SNAPSHOT_PIECE = 65_536  # codes written into a snapshot's blobs at once

# what a repository's graph last read of each file (GraphInput), so that an edit of calls
# alone patches the graph; made on opening for writing, as code_changes
GRAPH_INPUTS = """CREATE TABLE IF NOT EXISTS graph_inputs(
    repo_id INTEGER NOT NULL, path TEXT NOT NULL, file_id INTEGER NOT NULL,
    symbol_ids BLOB NOT NULL, facts BLOB NOT NULL, PRIMARY KEY(repo_id, path)) WITHOUT ROWID"""
# meta key: the highest file id ever given. A file's id is never given again (SQLite would
# reuse the highest rowid once its row is deleted): a patched graph tells a changed file by
# a new id.
LAST_FILE_ID = "last_file_id"
# meta key: the highest id of a repository taken out of the index, never given again (a
# process holding a repository's graph or codes in memory keeps them by its id)
LAST_REPO_ID = "last_repo_id"
# the rows kept by a repository's own id, not by a document
REPOSITORY_ROWS = ("edges", "symbol_rank", "file_rank", "codes", "code_means", "code_changes",
                   "code_snapshots", "graph_inputs")
REMOVED_A_BATCH = 2_000  # files a removal takes out in one transaction
COMPACTED_FREE_SHARE = 0.5  # a removal leaving more of the database free compacts it

# A document is what the index derives from one path with one content, read by one parser:
# its text, symbols, chunks and references. A file is a repository's path at a document, so
# branches, worktrees and snapshots of a repository share every unchanged file's rows, and
# indexing another of them writes only what differs. Symbol and chunk ids are a document's;
# a file id is a repository's.
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS repos(
    id INTEGER PRIMARY KEY, root TEXT UNIQUE NOT NULL, name TEXT NOT NULL, indexed_at REAL);
CREATE TABLE IF NOT EXISTS documents(
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, hash TEXT NOT NULL, parser TEXT NOT NULL,
    UNIQUE(path, hash, parser));
CREATE INDEX IF NOT EXISTS documents_content ON documents(hash, parser);
CREATE TABLE IF NOT EXISTS files(
    id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, path TEXT NOT NULL,
    document_id INTEGER NOT NULL, hash TEXT NOT NULL, size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, ctime_ns INTEGER NOT NULL, inode INTEGER NOT NULL,
    language TEXT, flags INTEGER NOT NULL, UNIQUE(repo_id, path));
CREATE INDEX IF NOT EXISTS files_document ON files(document_id);
-- A document's text, LZ4-compressed (pack_text): a third of the bytes, read back at
-- gigabytes a second. The trigram index keeps no copy (a row is deleted by handing back
-- its text) and no positions.
CREATE TABLE IF NOT EXISTS contents(document_id INTEGER PRIMARY KEY, text BLOB NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS content_trigrams USING fts5(
    text, content='', tokenize='trigram', detail='none');
-- qualname and qualname_lower are NULL where they equal name and name_lower (nearly always),
-- so only the others are in the qualified-name index.
CREATE TABLE IF NOT EXISTS symbols(
    id INTEGER PRIMARY KEY, document_id INTEGER NOT NULL, name TEXT NOT NULL,
    name_lower TEXT NOT NULL, qualname TEXT, qualname_lower TEXT,
    kind TEXT NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    signature TEXT, doc TEXT, parent TEXT);
CREATE INDEX IF NOT EXISTS symbols_document ON symbols(document_id);
CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name_lower);
CREATE INDEX IF NOT EXISTS symbols_qualname ON symbols(qualname_lower)
    WHERE qualname_lower IS NOT NULL;
-- A symbol's name tokens (symbol_token_text), its rowid the symbol's id: FTS5 keeps each
-- token's ids as compressed deltas, a sixth of a b-tree of (token, id) rows. Contentless:
-- a row is deleted by handing back the tokens, made again from the symbol's name.
CREATE VIRTUAL TABLE IF NOT EXISTS symbol_tokens USING fts5(
    tokens, content='', detail='none', columnsize=0, tokenize="ascii tokenchars '_'");
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY, document_id INTEGER NOT NULL, start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL, symbol TEXT, kind TEXT NOT NULL, embed_hash TEXT);
CREATE INDEX IF NOT EXISTS chunks_document ON chunks(document_id);
-- Raw references are only ever read all at once (graph rebuild): one JSON row per file of
-- [kind, name, line, source] lists writes and reads ten times faster than a row per reference.
-- Compressed (zlib): a fifth of the bytes.
CREATE TABLE IF NOT EXISTS file_refs(document_id INTEGER PRIMARY KEY, refs BLOB NOT NULL);
-- Edges are only written whole (a graph rebuild) and read whole (the graph retriever keeps
-- them in memory): one row per repository, each integer column packed as 64-bit values
-- (-1 for none), the distinct kinds and names as one JSON list and each edge's positions
-- among them as 32-bit values, writes 25,000 edges in milliseconds where a row per edge
-- took a fifth of a second. Every column is LZ4-compressed (ids and lines repeat): a fifth
-- of the bytes.
CREATE TABLE IF NOT EXISTS edges(
    repo_id INTEGER PRIMARY KEY, src_file BLOB NOT NULL, src_symbol BLOB NOT NULL,
    dst_file BLOB NOT NULL, dst_symbol BLOB NOT NULL, line BLOB NOT NULL,
    resolution BLOB NOT NULL, kinds_names BLOB NOT NULL, kind_codes BLOB NOT NULL,
    name_codes BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS symbol_rank(
    repo_id INTEGER NOT NULL, symbol_id INTEGER NOT NULL, rank REAL,
    PRIMARY KEY(repo_id, symbol_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS file_rank(file_id INTEGER PRIMARY KEY, repo_id INTEGER, rank REAL);
CREATE TABLE IF NOT EXISTS tokens(
    token_hash TEXT PRIMARY KEY, name TEXT NOT NULL, scope TEXT NOT NULL, repositories TEXT,
    created_at REAL NOT NULL, revoked_at REAL);
CREATE TABLE IF NOT EXISTS codes(
    repo_id INTEGER NOT NULL, model TEXT NOT NULL, chunk_id INTEGER NOT NULL, code BLOB NOT NULL,
    PRIMARY KEY(repo_id, model, chunk_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS code_means(
    repo_id INTEGER NOT NULL, model TEXT NOT NULL, mean BLOB NOT NULL, version INTEGER NOT NULL,
    PRIMARY KEY(repo_id, model));
""" + CODE_CHANGES + """;
""" + CODE_SNAPSHOTS + """;
""" + GRAPH_INPUTS + """;
CREATE TABLE IF NOT EXISTS vectors(
    model TEXT NOT NULL, embed_hash TEXT NOT NULL, vec BLOB NOT NULL, scale REAL NOT NULL,
    PRIMARY KEY(model, embed_hash)) WITHOUT ROWID;
"""

SYMBOL_COLS = symbol_columns(qualname="coalesce(s.qualname, s.name)")

KEPT_TABLES = ("tokens",)  # not derived from the files: a new schema keeps them


def pack_text(text: str) -> bytes:
    return lz4.block.compress(text.encode("utf-8", "surrogatepass"))


def unpack_text(packed: bytes) -> str:
    return lz4.block.decompress(packed).decode("utf-8", "surrogatepass")


def _fts_phrase(literal: str) -> str:
    return '"' + literal.replace('"', '""') + '"'


MAX_TRIGRAMS = 12  # more of a long literal's trigrams barely narrow the candidates further


def _trigrams_all(literal: str) -> str:
    """Every file containing the literal holds each of its trigrams. The trigram index keeps
    no positions (a tenth of the size), so this is an AND of trigrams, not a phrase."""
    grams = list(dict.fromkeys(literal[i:i + 3] for i in range(len(literal) - 2)))
    if len(grams) > MAX_TRIGRAMS:
        step = (len(grams) - 1) / (MAX_TRIGRAMS - 1)
        grams = [grams[round(i * step)] for i in range(MAX_TRIGRAMS)]
    return " AND ".join(_fts_phrase(g) for g in grams)


def _holdable(required: RequiredText) -> RequiredText | None:
    """What is required less the alternatives that hold a NUL, which no indexed text does
    (a file with one is binary; FTS5 reads a NUL as the end of its query); None where no
    file can hold it."""
    if isinstance(required, str):
        return None if "\x00" in required else required
    op, parts = required
    kept = [part for part in map(_holdable, parts) if part is not None]
    if op == "and" and len(kept) < len(parts):
        return None
    return (op, kept) if kept else None


def trigram_match(required: RequiredText) -> str:
    """The FTS5 trigram expression of what a file must hold."""
    if isinstance(required, str):
        return "(" + _trigrams_all(required) + ")"
    op, parts = required
    joiner = " AND " if op == "and" else " OR "
    return "(" + joiner.join(trigram_match(p) for p in parts) + ")"


def _symbol_token(token: str) -> str:
    """A name token as the symbol token index stores it: itself when it is made of
    lower-case ASCII letters, digits and inner underscores (nearly always), else '_' and its
    UTF-8 bytes in hex, so that the index's tokenizer keeps it whole. A token never starts
    with '_' (identifier_tokens strips them), so the two forms never meet."""
    if token.isascii() and token.replace("_", "").isalnum() and token == token.lower():
        return token
    return "_" + token.encode("utf-8", "surrogatepass").hex()


@lru_cache(maxsize=65_536)  # names repeat: init, probe, get, a struct's fields
def symbol_token_text(name: str) -> str:
    """What the symbol token index holds for a symbol of this name."""
    return " ".join(_symbol_token(t) for t in identifier_tokens(name))


_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def symbol_token_texts(names: list[str]) -> list[str]:
    """symbol_token_text of each name. A plain identifier's tokens are lower-case ASCII
    sub-words, which _symbol_token keeps as they are: its token_text, made together."""
    plain = [_PLAIN_NAME.fullmatch(name) is not None for name in names]
    made = iter(token_texts([name for name, is_plain in zip(names, plain) if is_plain]))
    return [next(made) if is_plain else symbol_token_text(name)
            for name, is_plain in zip(names, plain)]


def _symbol_tokens_match(tokens: Iterable[str], joiner: str) -> str:
    return "(" + f" {joiner} ".join(f'"{_symbol_token(t)}"' for t in tokens) + ")"


def _placeholders(n: int) -> str:
    return ",".join("?" * n)


def _parts(values: list, size: int = 500) -> list[list]:
    """`values` in parts a statement's variables can hold."""
    return [values[start:start + size] for start in range(0, len(values), size)]


def _pack_edges(edges: EdgeColumns) -> tuple:
    """The columns of an edges row (see the schema)."""
    return tuple(lz4.block.compress(column) for column in (
        packed(edges.src_file), packed(edges.src_symbol), packed(edges.dst_file),
        packed(edges.dst_symbol), packed(edges.line),
        packed_bytes(edges.resolution),
        json.dumps([edges.kinds, edges.names], separators=(",", ":"), check_circular=False
                   ).encode(), packed_codes(edges.kind), packed_codes(edges.name)))


_EDGE_COLUMNS = ("src_file, src_symbol, dst_file, dst_symbol, line, resolution, kinds_names, "
                 "kind_codes, name_codes")


def _edge_row(row: tuple) -> EdgeRow:
    """An edges row (see the schema) as sql_common reads it."""
    (src_file, src_symbol, dst_file, dst_symbol, line, resolution, kinds_names, kind_codes,
     name_codes) = map(lz4.block.decompress, row)
    kinds, names = json.loads(kinds_names)
    return (kinds, kind_codes, src_file, src_symbol, dst_file, dst_symbol, line, names,
            name_codes, resolution)


FILES_VERSION = "files_version"  # meta key: a new random value whenever files change
MAX_LATE_FILES = 4096  # past this many files out of document order, candidates are sorted
# The chunk index (Tantivy) counts a deleted chunk in its BM25 statistics until a merge
# rewrites its segment, which may never come for a large first segment: once the chunks
# deleted since it was made pass this share of those it holds, it is made again (a cost in
# proportion to the changes that led there). The meta key counts them.
CHUNK_INDEX_REMADE_AFTER = 0.2
CHUNK_INDEX_DELETED = "chunk_index_deleted"


@dataclass(slots=True)
class _DocumentOrder:
    """A repository's files (or every one's) by document id. A new index numbers its
    documents in path order, so most files are in both orders at once (their `documents`
    and `keys`, (path, file id), each ascending); the others (edited or added later,
    mostly) are `late`: (document id, key), by key."""

    version: str
    documents: list[int]
    keys: list[tuple[str, int]]
    late: list[tuple[int, tuple[str, int]]]


def _longest_ordered(keys: list[tuple[str, int]]) -> list[int]:
    """The positions of a longest run of `keys`, not necessarily adjacent, in ascending
    order (patience sorting)."""
    tails: list[tuple[str, int]] = []  # tails[k]: the least last key of a run of k + 1
    tail_at: list[int] = []
    before = [-1] * len(keys)
    for n, key in enumerate(keys):
        k = bisect.bisect_right(tails, key)
        if k == len(tails):
            tails.append(key)
            tail_at.append(n)
        else:
            tails[k] = key
            tail_at[k] = n
        before[n] = tail_at[k - 1] if k else -1
    run: list[int] = []
    n = tail_at[-1] if tail_at else -1
    while n >= 0:
        run.append(n)
        n = before[n]
    return run[::-1]


def _spans(ids: list[int], gap: int = 1024, most: int = 32) -> list[tuple[int, int]]:
    """Ascending ids as a few (low, high) ranges that hold them all: a trigram query over
    a range of document ids reads only that part of each trigram's list."""
    spans: list[list[int]] = []
    for n in ids:
        if spans and n - spans[-1][1] <= gap:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    if len(spans) > most:
        return [(ids[0], ids[-1])]
    return [(low, high) for low, high in spans]


CONNECT_WAIT_S = 30.0  # as long as a statement waits for a lock (busy_timeout)


def _codes_replaced(conn: sqlite3.Connection, repo_id: int, model: str, mean: bytes) -> None:
    """After a repository's codes of a model were all written anew: their mean, a new
    version of them, and their snapshot."""
    (version,), = conn.execute(
        "INSERT INTO code_means VALUES(?, ?, ?, 1) ON CONFLICT(repo_id, model) DO "
        "UPDATE SET mean=excluded.mean, version=version + 1 RETURNING version",
        (repo_id, model, mean)).fetchall()
    # every code may have changed: a holder of an older version reads them all
    conn.execute("DELETE FROM code_changes WHERE repo_id=? AND model=?", (repo_id, model))
    _put_snapshot(conn, repo_id, model, version)


def _put_snapshot(conn: sqlite3.Connection, repo_id: int, model: str, version: int) -> None:
    """Keep a repository's codes as one row (code_snapshots), in chunk id order, copied
    from its codes a piece at a time: the kernel's are 58 MB, written at the end of an
    indexing run whose memory peaks then. None is kept of codes of several widths, or
    too many for one of SQLite's values: searchers read the codes row by row then, and an
    empty row says so until the snapshot is due again (without a row, each save would
    count every code to see whether one is due)."""
    count, width, narrowest = conn.execute(
        "SELECT count(*), coalesce(max(length(code)), 0), coalesce(min(length(code)), 0) "
        "FROM codes WHERE repo_id=? AND model=?", (repo_id, model)).fetchone()
    if width != narrowest or max(8, width) * count > conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH):
        # ids empty and one byte of codes: a reader that checks only that the lengths
        # agree takes it for no snapshot, not for one of no codes
        conn.execute("INSERT OR REPLACE INTO code_snapshots VALUES(?, ?, ?, x'', x'00')",
                     (repo_id, model, version))
        return
    (row,), = conn.execute(
        "INSERT OR REPLACE INTO code_snapshots VALUES(?, ?, ?, zeroblob(?), zeroblob(?)) "
        "RETURNING rowid", (repo_id, model, version, 8 * count, width * count)).fetchall()
    ids, codes = array("q"), bytearray()
    with conn.blobopen("code_snapshots", "ids", row) as ids_blob, \
            conn.blobopen("code_snapshots", "codes", row) as codes_blob:
        for chunk_id, code in conn.execute("SELECT chunk_id, code FROM codes WHERE repo_id=? "
                                           "AND model=? ORDER BY chunk_id", (repo_id, model)):
            ids.append(chunk_id)
            codes += code
            if len(ids) == SNAPSHOT_PIECE:
                ids_blob.write(ids.tobytes())
                codes_blob.write(codes)
                del ids[:], codes[:]
        ids_blob.write(ids.tobytes())
        codes_blob.write(codes)


def _log_code_change(conn: sqlite3.Connection, repo_id: int, model: str, version: int,
                     removed: Sequence[int], added: Sequence[int]) -> None:
    """Log which chunks' codes a version took away and added, forgetting the versions
    older than CODE_CHANGES_KEPT."""
    conn.execute("INSERT INTO code_changes VALUES(?, ?, ?, ?, ?)",
                 (repo_id, model, version, packed_ids(removed), packed_ids(added)))
    conn.execute("DELETE FROM code_changes WHERE repo_id=? AND model=? AND version<=?",
                 (repo_id, model, version - CODE_CHANGES_KEPT))


@clear_errors(sqlite3.DatabaseError)
class SQLiteStore(Store):
    def __init__(self, db_path: str | Path, readonly: bool = False):
        self.db_path = str(db_path)
        self._local = threading.local()
        self._codes = HeldCodes()  # an embedded index's own repositories: no bound
        self._readonly = readonly
        self._chunk_index = ChunkIndex(Path(self.db_path).parent / CHUNK_INDEX_NAME)
        self._chunk_index_token: str | None = None  # the folder's, once checked by a writer
        self._chunk_index_unsynced = False  # this process wrote chunks not yet committed there
        self._in_run = 0
        # the models every chunk had a vector of as a run began, and the chunk hashes the
        # run wrote: once they all have one, that is remembered again for the files as the
        # run left them (a save under `watch` need not make the next status count every
        # chunk); `_awaiting`: per model, the files' version and the hashes still without
        self._complete_at_start: set[str] = set()
        self._run_hashes: set[str] = set()
        self._awaiting: dict[str, tuple[str, set[str]]] = {}
        self._document_orders: dict[int | None, _DocumentOrder] = {}  # by repository
        # by repository: (the files' version, the documents its files hold)
        self._documents_held: dict[int, tuple[str | None, list[int]]] = {}
        conn = self._conn()
        if not readonly:
            version = self._schema_version(conn)
            if version is not None and version > SCHEMA_VERSION:
                raise FourfoldError(
                    f"index at {self.db_path} was written by a newer fourfold (schema "
                    f"{version}, this one reads {SCHEMA_VERSION}); upgrade fourfold or use "
                    "another --index-dir, or replace it with `fourfold index --rebuild`")
            if version != SCHEMA_VERSION:
                self._create(conn)
            else:
                conn.execute(CODE_CHANGES)
                conn.execute(CODE_SNAPSHOTS)
                conn.execute(GRAPH_INPUTS)

    def _failure(self, exc: sqlite3.DatabaseError, method: str = "") -> FourfoldError:
        """SQLite's error as a clear one, whichever `method` met it: a damaged file says how
        to rebuild it, a full disk says that the last complete write is kept."""
        message = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and ("disk is full" in message
                                                           or "disk I/O error" in message):
            return IndexWriteError(
                f"cannot write the index at {self.db_path}: {message}; what was written "
                "before stays searchable (each batch of files is committed whole); free some "
                "space and index again")
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in message
                                                           or "busy" in message):
            return FourfoldError(f"the index at {self.db_path} is busy ({message}); try again")
        if isinstance(exc, sqlite3.OperationalError) and "readonly" in message:
            return FourfoldError(
                f"cannot use the index at {self.db_path} ({message}): its folder or files are "
                "not writable by this user (a reader writes too: SQLite's WAL files); the "
                "index is not damaged")
        if isinstance(exc, sqlite3.ProgrammingError):  # a call's parameters, not the file
            return FourfoldError(f"the index at {self.db_path} was asked wrongly by "
                                 f"{method or 'a call'} ({message}); the index is not damaged")
        folder = Path(self.db_path).parent
        root = folder.parent if folder.name == ".fourfold" else "PATH"
        return IndexDamagedError(
            f"the index at {self.db_path} is damaged ({message}); rebuild it with "
            f"`fourfold index --rebuild {root}`")

    def identity(self) -> str | None:
        """What `mark_identity` recorded: the folder this database was built in."""
        return self._meta("index_identity")

    def mark_identity(self, identity: str) -> None:
        self._put_meta("index_identity", identity)

    def is_empty(self) -> bool:
        return not self._query("SELECT 1 FROM repos LIMIT 1")

    def setting(self, key: str, default: int) -> int:
        return setting_value(self._meta(f"setting:{key}"), default)

    def set_setting(self, key: str, value: int) -> None:
        self._put_meta(f"setting:{key}", str(value))

    def clear_setting(self, key: str, only_if: int) -> bool:
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            return conn.execute("UPDATE meta SET value='0' WHERE key=? AND value=?",
                                (f"setting:{key}", str(only_if))).rowcount > 0

    def _meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key=?", (key,))
        return rows[0][0] if rows else None

    def _put_meta(self, key: str, value: str) -> None:
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT OR REPLACE INTO meta VALUES(?, ?)", (key, value))

    def _create(self, conn: sqlite3.Connection) -> None:
        """Create the schema. An index is derived data, so any other layout (older, or
        half-made by a crash) is dropped and the next `index` rebuilds it rather than
        migrating it. The version is read again under the write lock: two processes
        opening an old index at once must not drop what the first one has rebuilt."""
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            if self._schema_version(conn) == SCHEMA_VERSION:
                return
            for kind in ("CREATE VIRTUAL TABLE%", "CREATE TABLE%"):  # FTS first: it owns
                names = [r[0] for r in conn.execute(  # its shadow tables
                    "SELECT name FROM sqlite_master WHERE type='table' AND sql LIKE ?",
                    (kind,)).fetchall()]
                for name in names:
                    if name not in KEPT_TABLES:
                        conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            for statement in filter(str.strip, SCHEMA.split(";")):
                conn.execute(statement)
            conn.execute("INSERT OR REPLACE INTO meta VALUES('schema_version', ?)",
                         (str(SCHEMA_VERSION),))

    # -- connections ----------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def _connect(self) -> sqlite3.Connection:
        """A connection in WAL mode. Turning a new database to WAL takes a lock that SQLite
        may refuse at once, without waiting, while another process is creating the same
        index (two indexers starting together): such a refusal is tried again for a while."""
        deadline = time.monotonic() + CONNECT_WAIT_S
        while True:
            conn = None
            try:
                conn = sqlite3.connect(self.db_path, timeout=30, isolation_level=None,
                                       check_same_thread=False)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(f"PRAGMA busy_timeout={int(CONNECT_WAIT_S * 1000)}")
                conn.execute("PRAGMA mmap_size=1073741824")
                conn.execute("PRAGMA cache_size=-65536")
                # a database file is data: its schema may not call functions with side effects
                conn.execute("PRAGMA trusted_schema=OFF")
                return conn
            except sqlite3.DatabaseError as exc:
                if conn is not None:
                    conn.close()
                busy = isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)
                if not busy or time.monotonic() > deadline:
                    raise self._failure(exc) from exc
                time.sleep(0.05)

    @staticmethod
    def _schema_version(conn: sqlite3.Connection) -> int | None:
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return None
            raise
        return int(row[0]) if row else None

    def address(self) -> tuple[str, str]:
        return "sqlite", self.db_path

    def close(self) -> None:
        if not self._in_run:
            self._chunk_index.close()
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()  # and its staged vectors: only put ones are kept
            self._local.conn = None
            self._local.staged = False

    def _query(self, sql: str, params: Iterable = ()) -> list[tuple]:
        return self._conn().execute(sql, tuple(params)).fetchall()

    # -- repositories and files ---------------------------------------------------------
    def ensure_repo(self, root: str, name: str) -> int:
        conn = self._conn()
        row = conn.execute("SELECT id, name FROM repos WHERE root=?", (root,)).fetchone()
        if row:
            if self._meta(removing_key(row[0])) is not None:
                raise being_removed(row[1])
            return row[0]
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            # a name answers for one repository: questions, views and links go by it. A
            # name whose folder is gone moves to the new one (the folder was moved), as a
            # server's does.
            held = conn.execute("SELECT id, root FROM repos WHERE name=?", (name,)).fetchone()
            if held and self._meta(removing_key(held[0])) is not None:
                raise being_removed(name)
            if held and not os.path.isdir(held[1]):
                conn.execute("UPDATE repos SET root=? WHERE id=?", (root, held[0]))
                # what was remembered of the old folder would go to whatever is made there
                conn.execute("DELETE FROM meta WHERE key=?",
                             (f"setting:{max_file_bytes_setting(held[1])}",))
                return held[0]
            if held:
                raise FourfoldError(
                    f"the repository name {name!r} is taken in this index by {held[1]}; "
                    f"give {root} another name with --repository NAME, or keep it in an "
                    "index of its own (--index-dir)")
            last = conn.execute("SELECT max(coalesce((SELECT max(id) FROM repos), 0), "
                                "coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE "
                                "key=?), 0))", (LAST_REPO_ID,)).fetchone()[0]
            return conn.execute("INSERT INTO repos(id, root, name) VALUES(?, ?, ?)",
                                (last + 1, root, name)).lastrowid

    def repos(self, counts: bool = True, only: Collection[int] | None = None
              ) -> list[RepoInfo]:
        out = []
        for repo_id, root, name, indexed_at, marked in self._query(
                "SELECT id, root, name, indexed_at, EXISTS (SELECT 1 FROM meta WHERE key = "
                "? || id) FROM repos ORDER BY id", (REMOVING,)):
            if only is not None and repo_id not in only:
                continue
            marked = bool(marked)
            if not counts:
                out.append(RepoInfo(repo_id, root, name, indexed_at, 0, 0, 0, 0, {},
                                    removing=marked))
                continue
            files, size = self._query("SELECT count(*), coalesce(sum(size), 0) FROM files "
                                      "WHERE repo_id=?", (repo_id,))[0]
            chunks = self._query("SELECT count(*) FROM chunks c JOIN files f ON "
                                 "f.document_id=c.document_id WHERE f.repo_id=?",
                                 (repo_id,))[0][0]
            symbols = self._query("SELECT count(*) FROM symbols s JOIN files f ON "
                                  "f.document_id=s.document_id WHERE f.repo_id=?",
                                  (repo_id,))[0][0]
            languages = dict(self._query(
                "SELECT coalesce(language, 'other'), count(*) FROM files WHERE repo_id=? "
                "GROUP BY 1 ORDER BY 2 DESC", (repo_id,)))
            out.append(RepoInfo(repo_id, root, name, indexed_at, files, size, chunks, symbols,
                                languages, removing=marked))
        return out

    def mark_indexed(self, repo_id: int, when: float, parser: str) -> None:
        self._publish_chunk_index()  # what is marked answerable is searchable by its words
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("UPDATE repos SET indexed_at=? WHERE id=?", (when, repo_id))
            conn.execute("INSERT OR REPLACE INTO meta VALUES(?, ?)", (f"parser:{repo_id}", parser))

    def release_memory(self) -> None:
        self._conn().execute("PRAGMA shrink_memory")

    def forget_repository(self, repo_id: int) -> None:
        self._codes.forget(repo_id)
        self._documents_held.pop(repo_id, None)
        self._document_orders.pop(repo_id, None)

    def merge_text_indexes(self) -> None:
        # A bulk load leaves both FTS5 indexes in many segments: the commit of the next small
        # change would merge the symbol tokens' (docs/benchmarks.md, schema 12), and a query
        # of common trigrams reads each of its trigrams in every segment (a limited grep's
        # first page on the kernel: docs/benchmarks.md, stop 56).
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            for table in ("symbol_tokens", "content_trigrams"):
                conn.execute(f"INSERT INTO {table}({table}) VALUES('optimize')")

    def parser_of(self, repo_id: int) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key=?", (f"parser:{repo_id}",))
        return rows[0][0] if rows else None

    def generation(self) -> tuple:
        return tuple(self._query("SELECT id, indexed_at FROM repos ORDER BY id"))

    def file_states(self, repo_id: int, paths: Iterable[str] | None = None
                    ) -> dict[str, FileState]:
        sql = ("SELECT id, path, size, mtime_ns, ctime_ns, inode, hash FROM files "
               "WHERE repo_id=?")
        if paths is None:
            rows = self._query(sql, (repo_id,))
        else:  # '0' follows '/': a folder's files sort between "folder/" and "folder0"
            rows = [row for path in paths for row in self._query(
                sql + " AND (path=? OR (path>? AND path<?))",
                (repo_id, path, path + "/", path + "0"))]
        return {path: FileState(fid, FileStamp(size, mtime, ctime, inode), h)
                for fid, path, size, mtime, ctime, inode, h in rows}

    @staticmethod
    def _delete_document(conn: sqlite3.Connection, document_id: int) -> int:
        """Delete a document and all it holds; returns how many chunks it had."""
        row = conn.execute("SELECT text FROM contents WHERE document_id=?",
                           (document_id,)).fetchone()
        if row is not None:
            conn.execute("INSERT INTO content_trigrams(content_trigrams, rowid, text) "
                         "VALUES('delete', ?, ?)", (document_id, unpack_text(row[0])))
        conn.execute("DELETE FROM contents WHERE document_id=?", (document_id,))
        conn.executemany(
            "INSERT INTO symbol_tokens(symbol_tokens, rowid, tokens) VALUES('delete', ?, ?)",
            [(symbol_id, symbol_token_text(name)) for symbol_id, name in conn.execute(
                "SELECT id, name FROM symbols WHERE document_id=?", (document_id,)).fetchall()])
        conn.execute("DELETE FROM symbols WHERE document_id=?", (document_id,))
        chunks = conn.execute("DELETE FROM chunks WHERE document_id=?", (document_id,)).rowcount
        conn.execute("DELETE FROM file_refs WHERE document_id=?", (document_id,))
        conn.execute("DELETE FROM documents WHERE id=?", (document_id,))
        return chunks

    def write_batch(self, repo_id: int, records: list[FileRecord], deleted: list[str],
                    touched: list[tuple[str, FileStamp]]) -> None:
        self._sync_chunk_index()
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            left: list[int] = []  # documents of the files taken out: kept while a file holds one
            removed: dict[str, list[int]] = {}  # model -> chunks whose codes are gone
            for path in deleted + [r.path for r in records]:
                row = conn.execute("SELECT id, document_id FROM files WHERE repo_id=? AND "
                                   "path=?", (repo_id, path)).fetchone()
                if row:
                    file_id, document_id = row
                    # by the whole key (every model has a mean): not a scan of all codes
                    for model, chunk_id in conn.execute(
                            "DELETE FROM codes WHERE repo_id=? AND model IN (SELECT model FROM "
                            "code_means WHERE repo_id=?) AND chunk_id IN (SELECT id FROM chunks "
                            "WHERE document_id=?) RETURNING model, chunk_id",
                            (repo_id, repo_id, document_id)).fetchall():
                        removed.setdefault(model, []).append(chunk_id)
                    conn.execute("DELETE FROM files WHERE id=?", (file_id,))
                    left.append(document_id)
            if left:  # codes searched from memory are read again: some are gone
                for model, version in conn.execute(
                        "UPDATE code_means SET version=version + 1 WHERE repo_id=? "
                        "RETURNING model, version", (repo_id,)).fetchall():
                    _log_code_change(conn, repo_id, model, version, removed.get(model, []), [])
            for path, stamp in touched:
                conn.execute("UPDATE files SET size=?, mtime_ns=?, ctime_ns=?, inode=? "
                             "WHERE repo_id=? AND path=?", (*stamp, repo_id, path))
            if records:  # chunks with no deep code yet: the indexing model answers until a pass
                marks = "setting:" + deep_codes_setting(repo_id, "")
                conn.execute("DELETE FROM meta WHERE substr(key, 1, ?) = ?", (len(marks), marks))
            file_id = max(conn.execute("SELECT coalesce(max(id), 0) FROM files").fetchone()[0],
                          int((conn.execute("SELECT value FROM meta WHERE key=?",
                                            (LAST_FILE_ID,)).fetchone() or (0,))[0]))
            # Ids are given, not read back row by row, so each table takes one executemany
            # per batch (the index lock makes this the only writer).
            symbol_id = conn.execute("SELECT coalesce(max(id), 0) FROM symbols").fetchone()[0]
            chunk_id = conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0]
            symbols, chunks, refs = [], [], []
            # (chunk id, document id, path tokens, body tokens): made into weighted texts
            # below, the symbols' tokens made together
            chunk_parts: list[tuple[int, int, str, str]] = []
            for rec, path_tokens in zip(records, token_texts([r.path for r in records])):
                held = conn.execute("SELECT id FROM documents WHERE path=? AND hash=? AND "
                                    "parser=?", (rec.path, rec.hash, rec.parser)).fetchone()
                if held is not None:
                    document_id = held[0]
                else:
                    if rec.document_held:
                        raise FourfoldError(f"the index no longer holds {rec.path} as read "
                                            "before; index again")
                    document_id = conn.execute(
                        "INSERT INTO documents(path, hash, parser) VALUES(?,?,?)",
                        (rec.path, rec.hash, rec.parser)).lastrowid
                    conn.execute("INSERT INTO contents(document_id, text) VALUES(?, ?)",
                                 (document_id, pack_text(rec.text)))
                    conn.execute("INSERT INTO content_trigrams(rowid, text) VALUES(?, ?)",
                                 (document_id, rec.text))
                    for sym in rec.symbols:
                        symbol_id += 1
                        name_lower, qualname_lower = sym.name.lower(), sym.qualname.lower()
                        symbols.append((
                            symbol_id, document_id, sym.name, name_lower,
                            None if sym.qualname == sym.name else sym.qualname,
                            None if qualname_lower == name_lower else qualname_lower,
                            sym.kind, sym.start_line, sym.end_line, sym.signature, sym.doc,
                            sym.parent))
                    for chunk, body_tokens, chunk_hash in zip(rec.chunks, rec.chunk_tokens,
                                                              rec.chunk_hashes):
                        chunk_id += 1
                        chunks.append((chunk_id, document_id, chunk.start_line, chunk.end_line,
                                       chunk.symbol, chunk.kind, chunk_hash))
                        chunk_parts.append((chunk_id, document_id, path_tokens, body_tokens))
                    refs.append((document_id, rec.references))
                file_id += 1
                conn.execute(
                    "INSERT INTO files(id, repo_id, path, document_id, hash, size, mtime_ns, "
                    "ctime_ns, inode, language, flags) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                    (file_id, repo_id, rec.path, document_id, rec.hash, *rec.stamp,
                     rec.language, rec.flags))
            conn.executemany(
                "INSERT INTO symbols(id, document_id, name, name_lower, qualname, "
                "qualname_lower, kind, start_line, end_line, signature, doc, parent) "
                "VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", symbols)
            conn.executemany("INSERT INTO symbol_tokens(rowid, tokens) VALUES(?, ?)", zip(
                (row[0] for row in symbols), symbol_token_texts([row[2] for row in symbols])))
            conn.executemany("INSERT INTO chunks(id, document_id, start_line, end_line, symbol, "
                             "kind, embed_hash) VALUES(?,?,?,?,?,?,?)", chunks)
            chunk_texts = [(chunk_id, document_id, weighted_text(path_tokens, symbol, body))
                           for (chunk_id, document_id, path_tokens, body), symbol in zip(
                               chunk_parts, token_texts([row[4] or "" for row in chunks]))]
            if self._complete_at_start:
                self._run_hashes.update(row[6] for row in chunks if row[6] is not None)
            conn.executemany("INSERT INTO file_refs(document_id, refs) VALUES(?,?)", refs)
            dropped = [document_id for document_id in dict.fromkeys(left)
                       if conn.execute("SELECT 1 FROM files WHERE document_id=? LIMIT 1",
                                       (document_id,)).fetchone() is None]
            if dropped:
                conn.execute(
                    "INSERT INTO meta VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET "
                    "value=value + excluded.value", (CHUNK_INDEX_DELETED, sum(
                        self._delete_document(conn, document_id) for document_id in dropped)))
            conn.execute("INSERT OR REPLACE INTO meta VALUES(?, ?)",
                         (FILES_VERSION, os.urandom(8).hex()))
            conn.execute("INSERT OR REPLACE INTO meta VALUES(?, ?)", (LAST_FILE_ID, str(file_id)))
            if (dropped or chunk_texts) and not self._chunk_index_unsynced:
                conn.execute("INSERT OR REPLACE INTO meta VALUES('chunk_index', '')")
        if dropped or chunk_texts:
            self._chunk_index_unsynced = True
            self._chunk_index.delete_documents(dropped)
            self._chunk_index.add(chunk_texts)
            if not self._in_run:
                self._publish_chunk_index()

    # -- taking a repository out ---------------------------------------------------------------
    def remove_repository(self, repo_id: int) -> None:
        conn = self._conn()
        root = conn.execute("SELECT root FROM repos WHERE id=?", (repo_id,)).fetchone()
        if root is None:
            raise FourfoldError(f"no repository with id {repo_id}")
        names, prefixes = repository_settings(repo_id, root[0])
        with conn:  # first it stops answering, and its graph and codes go
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("UPDATE repos SET indexed_at=NULL WHERE id=?", (repo_id,))
            conn.execute("INSERT OR REPLACE INTO meta VALUES(?, '1')", (removing_key(repo_id),))
            for table in REPOSITORY_ROWS:
                conn.execute(f"DELETE FROM {table} WHERE repo_id=?", (repo_id,))
            conn.executemany("DELETE FROM meta WHERE key=?",
                             [(f"parser:{repo_id}",)] + [("setting:" + n,) for n in names])
            conn.executemany("DELETE FROM meta WHERE substr(key, 1, ?) = ?",
                             [(len("setting:" + p), "setting:" + p) for p in prefixes])
        # then its files, as an index run that finds them all deleted takes them out
        paths = [row[0] for row in self._query("SELECT path FROM files WHERE repo_id=? "
                                               "ORDER BY path", (repo_id,))]
        with self.indexing_run():
            for start in range(0, len(paths), REMOVED_A_BATCH):
                self.write_batch(repo_id, [], paths[start:start + REMOVED_A_BATCH], [])
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO meta VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET "
                         "value = max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
                         (LAST_REPO_ID, repo_id))
            conn.execute("DELETE FROM repos WHERE id=?", (repo_id,))
            conn.execute("DELETE FROM meta WHERE key=?", (removing_key(repo_id),))
            conn.execute("DELETE FROM vectors WHERE embed_hash NOT IN "
                         "(SELECT embed_hash FROM chunks WHERE embed_hash IS NOT NULL)")
        self.forget_repository(repo_id)
        self._compact()

    def _compact(self) -> None:
        """Where more than COMPACTED_FREE_SHARE of the database is free pages, give them
        back to the disk (VACUUM writes the rest anew: about 1 s per 100 MB, at most what
        was freed) unless another connection writes now (the pages are reused later). While
        another reads, the new copy waits in the WAL for a later checkpoint."""
        conn = self._conn()
        pages, free = (conn.execute(f"PRAGMA {count}").fetchone()[0]
                       for count in ("page_count", "freelist_count"))
        if free <= pages * COMPACTED_FREE_SHARE:
            return
        conn.execute("PRAGMA busy_timeout=0")
        try:
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.OperationalError:  # busy: another connection writes
            pass
        finally:
            conn.execute(f"PRAGMA busy_timeout={int(CONNECT_WAIT_S * 1000)}")

    # -- documents shared by branches and copies -----------------------------------------------
    def parsed_contents(self, parser: str) -> set[tuple[str, str | None]]:
        return set(self._query(
            "SELECT DISTINCT d.hash, f.language FROM documents d JOIN files f ON "
            "f.document_id=d.id WHERE d.parser=?", (parser,)))

    def held_documents(self, repo_id: int, parser: str) -> set[tuple[str, str]]:
        """Every repository's: an embedded index shares documents across all of them."""
        return set(self._query("SELECT path, hash FROM documents WHERE parser=?", (parser,)))

    def parse_of(self, content_hash: str, language: str | None, parser: str
                 ) -> tuple[list[Symbol], list[tuple[int, int, str | None, str]], bytes] | None:
        rows = self._query(
            "SELECT d.id FROM documents d WHERE d.hash=? AND d.parser=? AND EXISTS (SELECT 1 "
            "FROM files f WHERE f.document_id=d.id AND f.language IS ?) LIMIT 1",
            (content_hash, parser, language))
        if not rows:
            return None
        document_id = rows[0][0]
        symbols = [Symbol(*row) for row in self._query(
            "SELECT name, coalesce(qualname, name), kind, start_line, end_line, signature, "
            "doc, parent FROM symbols WHERE document_id = ? ORDER BY id", (document_id,))]
        spans = self._query("SELECT start_line, end_line, symbol, kind FROM chunks "
                            "WHERE document_id = ? ORDER BY id", (document_id,))
        refs = self._query("SELECT refs FROM file_refs WHERE document_id = ?", (document_id,))
        return symbols, spans, refs[0][0] if refs else NO_REFERENCES  # kept compressed

    def files(self, repo_id: int | None = None) -> list[StoredFile]:
        sql = f"SELECT {FILE_COLS} FROM files f"
        rows = self._query(sql + " WHERE f.repo_id=?", (repo_id,)) if repo_id else self._query(sql)
        return [StoredFile(*row) for row in rows]

    def files_after(self, repo_id: int, file_id: int) -> tuple[int, list[StoredFile]]:
        # one statement, one moment: a count from before a write and rows from after would
        # not fit together
        rows = self._query(f"SELECT held.n, {FILE_COLS} FROM (SELECT count(*) AS n FROM files "
                           "WHERE repo_id=?) held LEFT JOIN files f ON f.id > ? AND f.repo_id=?",
                           (repo_id, file_id, repo_id))
        return rows[0][0], [StoredFile(*row[1:]) for row in rows if row[1] is not None]

    def file_by_path(self, path: str, repo_id: int | None = None) -> StoredFile | None:
        sql = f"SELECT {FILE_COLS} FROM files f WHERE f.path=?"
        rows = (self._query(sql + " AND f.repo_id=?", (path, repo_id)) if repo_id
                else self._query(sql, (path,)))
        return StoredFile(*rows[0]) if rows else None

    def content(self, file_id: int) -> str:
        rows = self._query("SELECT c.text FROM files f JOIN contents c ON "
                           "c.document_id=f.document_id WHERE f.id=?", (file_id,))
        return unpack_text(rows[0][0]) if rows else ""

    # -- text -----------------------------------------------------------------------------
    def trigram_candidates(self, required: RequiredText | None, repo_id: int | None = None,
                           after: PathKey | None = None, limit: int | None = None,
                           case_sensitive: bool = False) -> list[tuple[StoredFile, str]]:
        if required is not None:
            required = _holdable(required)
            if required is None:  # it holds a NUL either way
                return []
        if required is None:
            sql = f"SELECT {FILE_COLS}, f.hash FROM files f WHERE true"
            params: tuple = ()
            if repo_id:
                sql += " AND f.repo_id=?"
                params = (repo_id,)
        else:
            if limit is not None:
                listed = self._listed_in_order(required, repo_id, after, limit)
                if listed is not None:
                    return listed
            sql = (f"SELECT {FILE_COLS}, f.hash FROM content_trigrams t "
                   "JOIN files f ON f.document_id=t.rowid WHERE content_trigrams MATCH ?")
            params = (trigram_match(required),)
            if repo_id:
                sql += " AND +f.repo_id=?"
                params += (repo_id,)
        if after is not None:
            sql += " AND (f.path, f.id) > (?, ?)"
            params += after
        sql += " ORDER BY f.path, f.id"
        if limit is not None:
            sql += " LIMIT ?"
            params += (limit,)
        return [(StoredFile(*row[:5]), row[5]) for row in self._query(sql, params)]

    def _listed_in_order(self, required: RequiredText, repo_id: int | None,
                         after: PathKey | None, limit: int
                         ) -> list[tuple[StoredFile, str]] | None:
        """The first `limit` files after `after` by (path, file id) that hold what is
        required, read from the trigram index in document order and stopping there (a
        common pattern's whole candidate list costs tens of milliseconds on a large
        repository); None where too many files are out of document order for that to
        pay."""
        with self._one_state():
            order = self._document_order(repo_id)
            if len(order.late) > MAX_LATE_FILES:
                return None
            return self._listed_from(order, trigram_match(required), after, limit)

    @contextmanager
    def _one_state(self):
        """Reads in this block see one state of the database (a read transaction: in WAL
        mode a writer goes on meanwhile), as several statements must agree."""
        conn = self._conn()
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    def _listed_from(self, order: _DocumentOrder, match: str, after: PathKey | None,
                     limit: int) -> list[tuple[StoredFile, str]]:
        found: list[PathKey] = []
        start = bisect.bisect_right(order.keys, after) if after is not None else 0
        lowest = order.documents[start] if start < len(order.documents) else None
        while lowest is not None:
            rowids = [row[0] for row in self._query(
                "SELECT rowid FROM content_trigrams WHERE content_trigrams MATCH ? AND "
                "rowid >= ? ORDER BY rowid LIMIT ?", (match, lowest, limit))]
            for rowid in rowids:
                at = bisect.bisect_left(order.documents, rowid, start)
                while at < len(order.documents) and order.documents[at] == rowid:
                    found.append(order.keys[at])
                    at += 1
            lowest = rowids[-1] + 1 if len(rowids) == limit and len(found) < limit else None
        del found[limit:]
        # Files out of document order that hold it, up to the last file found in order
        # (or all, when fewer were found): they are few, and numbered last, nearly always.
        bound = found[-1] if len(found) == limit else None
        late = [(document, key) for document, key in order.late
                if (after is None or key > after) and (bound is None or key <= bound)]
        if late:
            held = {row[0] for low, high in _spans(sorted(d for d, _ in late))
                    for row in self._query(
                        "SELECT rowid FROM content_trigrams WHERE content_trigrams MATCH ? AND "
                        "rowid BETWEEN ? AND ?", (match, low, high))}
            found = sorted(found + [key for document, key in late if document in held])[:limit]
        ids = [file_id for _, file_id in found]
        listed: dict[int, tuple[StoredFile, str]] = {}
        for start in range(0, len(ids), 500):  # pages grow past SQLite's bound on variables
            part = ids[start:start + 500]
            listed.update((row[0], (StoredFile(*row[:5]), row[5])) for row in self._query(
                f"SELECT {FILE_COLS}, f.hash FROM files f WHERE f.id IN "
                f"({_placeholders(len(part))})", part))
        return [listed[file_id] for file_id in ids]

    def _document_order(self, repo_id: int | None) -> _DocumentOrder:
        version = self._meta(FILES_VERSION) or ""
        order = self._document_orders.get(repo_id)
        if order is not None and order.version == version:
            return order
        sql = ("SELECT f.document_id, f.id, f.path FROM files f"
               + (" WHERE f.repo_id=?" if repo_id else "") + " ORDER BY f.document_id")
        rows = self._query(sql, (repo_id,) if repo_id else ())
        # files of one document (in several repositories) by key: sorted here, as SQLite
        # would sort every row again for them
        rows.sort(key=lambda row: (row[0], row[2], row[1]))
        keys = [(path, file_id) for _, file_id, path in rows]
        ordered = (range(len(rows)) if keys == sorted(keys)  # a new index: all of them
                   else _longest_ordered(keys))
        order = _DocumentOrder(version, [rows[n][0] for n in ordered],
                               [keys[n] for n in ordered], [])
        if len(ordered) < len(rows):
            kept = set(ordered)
            order.late = sorted(((rows[n][0], keys[n]) for n in range(len(rows))
                                 if n not in kept), key=lambda late: late[1])
        self._document_orders[repo_id] = order
        return order

    def contents(self, file_ids: Iterable[int]) -> dict[int, str]:
        return {file_id: text.decode("utf-8", "surrogatepass")
                for file_id, text in self.utf8_contents(file_ids).items()}

    def utf8_contents(self, file_ids: Iterable[int]) -> dict[int, bytes]:
        ids = list(file_ids)
        out: dict[int, bytes] = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            out.update((file_id, lz4.block.decompress(packed)) for file_id, packed in self._query(
                f"SELECT f.id, c.text FROM files f JOIN contents c ON c.document_id=f.document_id "
                f"WHERE f.id IN ({_placeholders(len(part))})", part))
        return out

    def bm25_chunks(self, terms: Sequence[str], limit: int, repo_id: int | None = None
                    ) -> list[tuple[StoredChunk, float]]:
        if not terms or limit <= 0:
            return []
        several = bool(repo_id) and self._query("SELECT count(*) FROM repos")[0][0] > 1
        if not several:
            return self._best_chunks(terms, limit, None, None)[:limit]
        # In an index of several repositories the best chunks may lie in the others: a few
        # more are asked for (enough where this one holds much of the index), then, if
        # they are not enough, the best of this one's documents (a filter whose cost grows
        # with them: 55 ms for the kernel's 78,000).
        best = self._best_chunks(terms, limit * 4, None, repo_id)
        if len(best) < limit:
            best = self._best_chunks(terms, limit, self._documents_of(repo_id), repo_id)
        return best[:limit]

    def _best_chunks(self, terms: Sequence[str], limit: int, documents: list[int] | None,
                     repo_id: int | None) -> list[tuple[StoredChunk, float]]:
        """The best chunks by BM25 (of these documents), those of repository `repo_id`."""
        ranked = self._chunk_index.search(terms, limit, documents)
        if ranked is None:
            if self._meta("chunk_index") is None:  # nothing was ever written
                return []
            raise ModalityUnavailable(
                f"the text modality's word index ({self._chunk_index.folder}) is being made "
                "again from the database, or is missing: ranked text answers come back once "
                "`fourfold index` has made it")
        found: dict[int, list[StoredChunk]] = {}
        for chunk in self.chunks([chunk_id for chunk_id, _ in ranked], repo_id):
            found.setdefault(chunk.chunk_id, []).append(chunk)  # one per file holding it
        return [(chunk, score) for chunk_id, score in ranked
                for chunk in found.get(chunk_id, ())]

    def _documents_of(self, repo_id: int) -> list[int]:
        """The documents a repository's files hold, kept until the files change."""
        version = self._meta(FILES_VERSION)
        held = self._documents_held.get(repo_id)
        if held is None or held[0] != version:
            held = self._documents_held[repo_id] = (version, [row[0] for row in self._query(
                "SELECT DISTINCT document_id FROM files WHERE repo_id=?", (repo_id,))])
        return held[1]

    def chunks(self, chunk_ids: Iterable[int], repo_id: int | None = None
               ) -> list[StoredChunk]:
        ids = list(chunk_ids)
        # `+`: the ids drive the search; through the repository's files it reads them all
        mine, params = (" AND +f.repo_id=?", [repo_id]) if repo_id else ("", [])
        out: list[StoredChunk] = []
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            out += [StoredChunk(*row) for row in self._query(
                f"SELECT {CHUNK_COLS} FROM chunks c JOIN files f ON "
                f"f.document_id=c.document_id WHERE c.id IN ({_placeholders(len(part))})"
                + mine, part + params)]
        return out

    def chunks_of_file(self, file_id: int) -> list[StoredChunk]:
        return [StoredChunk(*row) for row in self._query(
            f"SELECT {CHUNK_COLS} FROM files f JOIN chunks c ON c.document_id=f.document_id "
            "WHERE f.id=? ORDER BY c.start_line", (file_id,))]

    # -- symbols --------------------------------------------------------------------------
    def _symbols_where(self, where: str, params: list, repo_id: int | None, limit: int | None = None
                       ) -> list[StoredSymbol]:
        sql = (f"SELECT {SYMBOL_COLS} FROM symbols s JOIN files f ON "
               f"f.document_id=s.document_id WHERE {where}")
        if repo_id:  # `+`: the symbols asked for drive the search, not all the files
            sql += " AND +f.repo_id=?"
            params = params + [repo_id]
        if limit:
            sql += f" LIMIT {int(limit)}"
        return [StoredSymbol(*row) for row in self._query(sql, params)]

    def symbols_named(self, names: Iterable[str], repo_id: int | None = None
                      ) -> list[StoredSymbol]:
        names = sorted({n.lower() for n in names})
        if not names:
            return []
        marks = _placeholders(len(names))
        return self._symbols_where(f"(s.name_lower IN ({marks}) OR s.qualname_lower IN ({marks}))",
                                   names + names, repo_id)

    def symbols_by_token(self, tokens: Iterable[str], repo_id: int | None = None,
                         limit: int = 2000) -> list[StoredSymbol]:
        """The names holding a token, as the word index lists them (by id), then those
        beginning with one, token by token in name order, up to `limit` rows. Read as
        they come: asked as one OR of the two, SQLite listed every name of the word index
        first (11,208 for one question of five words on the Linux kernel: 17 ms, against
        4 ms for the same rows read as they come)."""
        tokens = sorted({t.lower() for t in tokens if t})
        if not tokens:
            return []
        in_repo, mine = (" AND +f.repo_id=?", [repo_id]) if repo_id else ("", [])
        found = [StoredSymbol(*row) for row in self._query(
            f"SELECT {SYMBOL_COLS} FROM symbol_tokens t JOIN symbols s ON s.id=t.rowid "
            f"JOIN files f ON f.document_id=s.document_id WHERE symbol_tokens MATCH ?"
            f"{in_repo} LIMIT {int(limit)}", [_symbol_tokens_match(tokens, "OR")] + mine)]
        seen = {s.symbol_id for s in found}
        for token in tokens:
            if len(found) >= limit:
                break
            prefixed = self._conn().execute(
                f"SELECT {SYMBOL_COLS} FROM symbols s JOIN files f ON "
                f"f.document_id=s.document_id WHERE s.name_lower >= ? AND s.name_lower < ?"
                f"{in_repo}", [token, token + "\uffff"] + mine)
            new = []  # a name's rows (one a file holding it) come together
            for row in prefixed:
                symbol = StoredSymbol(*row)
                if symbol.symbol_id not in seen:
                    new.append(symbol)
                    if len(found) + len(new) >= limit:
                        break
            prefixed.close()
            found += new
            seen.update(s.symbol_id for s in new)
        return found

    def symbols_with_two_words(self, words: Iterable[str], repo_id: int | None = None,
                               limit: int = 2000) -> list[StoredSymbol]:
        words = sorted({w.lower() for w in words if w})
        if len(words) < 2:
            return []
        pairs = " OR ".join(_symbol_tokens_match(pair, "AND")
                            for pair in itertools.combinations(words, 2))
        return self._symbols_where(
            "s.id IN (SELECT rowid FROM symbol_tokens WHERE symbol_tokens MATCH ?)",
            [pairs], repo_id, limit)

    def symbols_with_words(self, words: Iterable[str], whole: str, repo_id: int | None = None,
                           limit: int = 2000) -> list[StoredSymbol]:
        words = sorted({w.lower() for w in words if w})
        if not words:
            return []
        match = (_symbol_tokens_match(words, "AND") + " OR "
                 + _symbol_tokens_match([whole.lower()], "OR"))
        return self._symbols_where(
            "s.id IN (SELECT rowid FROM symbol_tokens WHERE symbol_tokens MATCH ?)",
            [match], repo_id, limit)

    def symbols_of_file(self, file_id: int) -> list[StoredSymbol]:
        return self._symbols_where("f.id=? ORDER BY s.start_line", [file_id], None)

    def graph_symbols(self, repo_id: int, paths: Collection[str] | None = None
                      ) -> list[tuple[int, str, str, str, str, str | None]]:
        sql = ("SELECT s.id, f.path, s.name, coalesce(s.qualname, s.name), s.kind, s.parent "
               "FROM symbols s JOIN files f ON f.document_id=s.document_id WHERE f.repo_id=?")
        if paths is None:
            return self._query(sql + " ORDER BY s.id", (repo_id,))
        return sorted(row for part in _parts(sorted(paths)) for row in self._query(
            sql + f" AND f.path IN ({_placeholders(len(part))})", (repo_id, *part)))

    def symbol_ids_by_file(self, repo_id: int) -> tuple[array, array]:
        return two_columns(self._conn().execute(
            "SELECT f.id, s.id FROM files f JOIN symbols s ON s.document_id=f.document_id "
            "WHERE f.repo_id=? ORDER BY s.id", (repo_id,)))

    def symbol_keys(self, repo_id: int, file_ids: Sequence[int]) -> list[tuple[int, int, str]]:
        # unary +: the files by their ids, not every file of the repository for each part
        return self._query("SELECT s.id, f.id, coalesce(s.qualname, s.name) FROM files f "
                           "JOIN symbols s ON s.document_id=f.document_id "
                           f"WHERE +f.repo_id=? AND f.id IN ({_placeholders(len(file_ids))})",
                           (repo_id, *file_ids))

    def symbols_by_id(self, ids: Iterable[int], repo_id: int | None = None
                      ) -> list[StoredSymbol]:
        ids = list(ids)
        out: list[StoredSymbol] = []
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            out += self._symbols_where(f"s.id IN ({_placeholders(len(part))})", part, repo_id)
        return out

    # -- graph ----------------------------------------------------------------------------
    def raw_references(self, repo_id: int, paths: Collection[str] | None = None
                       ) -> list[tuple[str, bytes]]:
        sql = ("SELECT f.path, r.refs FROM file_refs r JOIN files f "
               "ON f.document_id=r.document_id WHERE f.repo_id=?")
        rows = self._query(sql, (repo_id,)) if paths is None else [
            row for part in _parts(sorted(paths)) for row in self._query(
                sql + f" AND f.path IN ({_placeholders(len(part))})", (repo_id, *part))]
        return rows  # kept compressed

    def replace_graph(self, repo_id: int, edges: EdgeColumns, symbol_rank: dict[int, float],
                      file_rank: dict[int, float], inputs: Sequence[GraphInput] = ()) -> None:
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            for table in ("edges", "symbol_rank", "file_rank", "graph_inputs"):
                conn.execute(f"DELETE FROM {table} WHERE repo_id=?", (repo_id,))
            self._write_edges(conn, repo_id, edges)
            # rows made as they are written: a big repository ranks millions of symbols
            conn.executemany("INSERT INTO symbol_rank VALUES(?,?,?)",
                             ((repo_id, k, v) for k, v in symbol_rank.items()))
            conn.executemany("INSERT INTO file_rank VALUES(?,?,?)",
                             ((k, repo_id, v) for k, v in file_rank.items()))
            self._write_inputs(conn, repo_id, inputs)
            self._raise_graph_version(conn, repo_id)

    def patch_graph(self, repo_id: int, patch: GraphPatch) -> None:
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM edges WHERE repo_id=?", (repo_id,))
            self._write_edges(conn, repo_id, patch.edges)
            # read, deleted, then written under the new ids: a new id may be an old one
            # of another definition (SQLite gives the highest ids again)
            ranks = {}
            for old in patch.moved_symbols:
                row = conn.execute("SELECT rank FROM symbol_rank WHERE repo_id=? AND "
                                   "symbol_id=?", (repo_id, old)).fetchone()
                if row is not None:
                    ranks[patch.moved_symbols[old]] = row[0]
            conn.executemany("DELETE FROM symbol_rank WHERE repo_id=? AND symbol_id=?",
                             ((repo_id, old) for old in [*patch.moved_symbols,
                                                         *patch.dropped_symbols]))
            conn.executemany("INSERT INTO symbol_rank VALUES(?,?,?)",
                             ((repo_id, now, rank) for now, rank in ranks.items()))
            conn.executemany("UPDATE file_rank SET file_id=? WHERE file_id=?",
                             ((new, old) for old, new in patch.moved_files.items()))
            conn.executemany("DELETE FROM file_rank WHERE file_id=?",
                             ((file_id,) for file_id in patch.removed_files))
            for table, column, ids in (("symbol_rank", "symbol_id", patch.new_symbols),
                                       ("file_rank", "file_id", patch.new_files)):
                lowest = conn.execute(f"SELECT min(rank) FROM {table} WHERE repo_id=?",
                                      (repo_id,)).fetchone()[0]
                if lowest is not None:
                    conn.executemany(f"INSERT OR REPLACE INTO {table}(repo_id, {column}, rank) "
                                     "VALUES(?,?,?)", ((repo_id, i, lowest) for i in ids))
            conn.executemany("DELETE FROM graph_inputs WHERE repo_id=? AND path=?",
                             ((repo_id, path) for path in patch.removed_files.values()))
            self._write_inputs(conn, repo_id, patch.inputs)
            self._raise_graph_version(conn, repo_id)

    def copy_graph(self, from_repo: int, repo_id: int, version: int) -> bool:
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            file_of = twin_file_ids(lambda sql, params: conn.execute(sql, params).fetchall(),
                                    "?", from_repo, repo_id, version)
            if file_of is None:
                return False
            row = conn.execute(f"SELECT {_EDGE_COLUMNS} FROM edges WHERE repo_id=?",
                               (from_repo,)).fetchone()
            if row is not None:
                files = copied_edge_files(_edge_row(row), file_of)
                if files is None:
                    return False  # damaged, or an edge of a file none of ours stands for
                row = (lz4.block.compress(files[0]), row[1], lz4.block.compress(files[1]),
                       *row[3:])
            for table in ("edges", "symbol_rank", "file_rank", "graph_inputs"):
                conn.execute(f"DELETE FROM {table} WHERE repo_id=?", (repo_id,))
            if row is not None:
                conn.execute(f"INSERT INTO edges(repo_id, {_EDGE_COLUMNS}) "
                             "VALUES(?,?,?,?,?,?,?,?,?,?)", (repo_id, *row))
            conn.execute("INSERT INTO symbol_rank SELECT ?, symbol_id, rank FROM symbol_rank "
                         "WHERE repo_id=?", (repo_id, from_repo))
            conn.execute("INSERT INTO file_rank SELECT mine.id, ?, r.rank FROM file_rank r "
                         "JOIN files theirs ON theirs.id=r.file_id JOIN files mine ON "
                         "mine.repo_id=? AND mine.path=theirs.path WHERE r.repo_id=?",
                         (repo_id, repo_id, from_repo))
            conn.execute("INSERT INTO graph_inputs SELECT ?, g.path, mine.id, g.symbol_ids, "
                         "g.facts FROM graph_inputs g JOIN files mine ON mine.repo_id=? AND "
                         "mine.path=g.path WHERE g.repo_id=?", (repo_id, repo_id, from_repo))
            self._raise_graph_version(conn, repo_id)
        return True

    @staticmethod
    def _raise_graph_version(conn: sqlite3.Connection, repo_id: int) -> None:
        conn.execute("INSERT INTO meta VALUES(?, '1') ON CONFLICT(key) DO UPDATE SET "
                     "value = CAST(value AS INTEGER) + 1",
                     (f"setting:{graph_version_setting(repo_id)}",))

    @staticmethod
    def _write_edges(conn: sqlite3.Connection, repo_id: int, edges: EdgeColumns) -> None:
        if edges:
            conn.execute("INSERT INTO edges VALUES(?,?,?,?,?,?,?,?,?,?)",
                         (repo_id, *_pack_edges(edges)))

    @staticmethod
    def _write_inputs(conn: sqlite3.Connection, repo_id: int,
                      inputs: Sequence[GraphInput]) -> None:
        conn.executemany("INSERT OR REPLACE INTO graph_inputs VALUES(?,?,?,?,?)",
                         ((repo_id, i.path, i.file_id, i.symbol_ids, i.facts) for i in inputs))

    def graph_inputs(self, repo_id: int) -> list[GraphInput]:
        return [GraphInput(*row) for row in self._query(
            "SELECT path, file_id, symbol_ids, facts FROM graph_inputs WHERE repo_id=?",
            (repo_id,))]

    def edge_columns(self, repo_id: int | None = None) -> EdgeColumns:
        sql = f"SELECT {_EDGE_COLUMNS} FROM edges"
        rows = (self._query(sql + " WHERE repo_id=?", (repo_id,)) if repo_id
                else self._query(sql + " ORDER BY repo_id"))
        return edge_columns_of([_edge_row(row) for row in rows])

    def centrality(self, repo_id: int | None = None
                   ) -> tuple[dict[int, float], dict[int, float]]:
        mine = " WHERE repo_id = ?" if repo_id else ""
        params = (repo_id,) if repo_id else ()
        symbols = dict(self._query("SELECT symbol_id, rank FROM symbol_rank" + mine, params))
        files = dict(self._query("SELECT file_id, rank FROM file_rank" + mine, params))
        return symbols, files

    def ranks_of_files(self, repo_id: int | None, paths: Collection[str]
                       ) -> tuple[dict[tuple[str, str], float], dict[str, float]]:
        symbols: dict[tuple[str, str], float] = {}
        files: dict[str, float] = {}
        listed = sorted(paths)
        mine, params = (" AND f.repo_id=?", (repo_id,)) if repo_id else ("", ())
        for start in range(0, len(listed), 500):
            part = listed[start:start + 500]
            where = f"f.path IN ({_placeholders(len(part))})" + mine
            # CROSS JOIN keeps this order: SQLite would start from every rank of the
            # repository (0.31 s on the kernel, against a millisecond from the files)
            symbols.update(((path, qualname), rank) for path, qualname, rank in self._query(
                "SELECT f.path, coalesce(s.qualname, s.name), r.rank FROM files f CROSS JOIN "
                "symbols s ON s.document_id=f.document_id CROSS JOIN symbol_rank r ON "
                f"r.repo_id=f.repo_id AND r.symbol_id=s.id WHERE {where}", (*part, *params)))
            files.update(self._query("SELECT f.path, r.rank FROM files f JOIN file_rank r ON "
                                     f"r.file_id=f.id WHERE {where}", (*part, *params)))
        return symbols, files

    # -- vectors --------------------------------------------------------------------------
    def chunks_missing_vectors(self, model: str, limit: int, after: int = 0,
                               within: Sequence[int] | None = None,
                               repo_id: int | None = None) -> list[tuple[int, str]]:
        sql = ("SELECT c.id, c.embed_hash FROM chunks c LEFT JOIN vectors v ON v.model=? AND "
               "v.embed_hash=c.embed_hash WHERE v.embed_hash IS NULL AND c.id>?")
        if repo_id is not None:
            sql += (f" AND c.document_id IN (SELECT document_id FROM files WHERE "
                    f"repo_id={int(repo_id)})")
        if within is None:
            return self._query(sql + " ORDER BY c.id LIMIT ?", (model, after, limit))
        ids = sorted(within)
        return [row for start in range(0, len(ids), 500) for row in self._query(
            sql + f" AND c.id IN ({_placeholders(len(ids[start:start + 500]))}) ORDER BY c.id",
            (model, after, *ids[start:start + 500]))][:limit]

    def put_vectors(self, model: str, rows: list[tuple[str, bytes, float]]) -> None:
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT OR REPLACE INTO vectors(model, embed_hash, vec, scale) "
                             "VALUES(?,?,?,?)", [(model, h, v, s) for h, v, s in rows])
        self._remember_when_embedded(model, {h for h, _, _ in rows})

    def stage_vectors(self, model: str, rows: list[tuple[str, bytes, float]]) -> None:
        # Keyed by hash, a big index's vectors land at random pages of their table: a page
        # written for each. Staged in a temporary table, they go in in key order at the end.
        conn = self._conn()
        if not getattr(self._local, "staged", False):
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS staged_vectors(model TEXT NOT NULL, "
                         "embed_hash TEXT NOT NULL, vec BLOB NOT NULL, scale REAL NOT NULL)")
            self._local.staged = True
        with conn:
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO temp.staged_vectors VALUES(?,?,?,?)",
                             [(model, h, v, s) for h, v, s in rows])

    def put_staged_vectors(self) -> None:
        if not getattr(self._local, "staged", False):
            return
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT OR REPLACE INTO vectors(model, embed_hash, vec, scale) "
                         "SELECT model, embed_hash, vec, scale FROM temp.staged_vectors "
                         "ORDER BY model, embed_hash")
            conn.execute("DROP TABLE temp.staged_vectors")
        self._local.staged = False

    def vector_blocks(self, model: str, repo_id: int | None = None, size: int = 65536
                      ) -> Iterator[tuple[list[int], list[bytes], list[float]]]:
        sql = ("SELECT c.id, v.vec, v.scale FROM chunks c JOIN vectors v ON "
               "v.embed_hash=c.embed_hash AND v.model=?")
        if repo_id:  # from the repository's files, unsorted: sorted, every row went through
            # SQLite's sorter, vectors included
            cursor = self._conn().execute(sql + " JOIN files f ON f.document_id=c.document_id "
                                          "AND f.repo_id=?", (model, repo_id))
        else:
            cursor = self._conn().execute(sql + " ORDER BY c.id", (model,))
        try:
            while rows := cursor.fetchmany(size):
                yield [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
        finally:
            cursor.close()

    def vectors_of(self, model: str, chunk_ids: Iterable[int]) -> dict[int, tuple[bytes, float]]:
        ids = list(chunk_ids)
        out: dict[int, tuple[bytes, float]] = {}
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            out.update((cid, (vec, scale)) for cid, vec, scale in self._query(
                "SELECT c.id, v.vec, v.scale FROM chunks c JOIN vectors v ON "
                f"v.embed_hash=c.embed_hash AND v.model=? WHERE c.id IN "
                f"({_placeholders(len(part))})", [model, *part]))
        return out

    def put_codes(self, repo_id: int, model: str, mean: bytes,
                  codes: Iterable[tuple[int, bytes]]) -> None:
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM codes WHERE repo_id=? AND model=?", (repo_id, model))
            conn.executemany("INSERT INTO codes VALUES(?,?,?,?)",
                             ((repo_id, model, cid, code) for cid, code in codes))
            _codes_replaced(conn, repo_id, model, mean)

    def copy_codes(self, from_repo: int, repo_id: int, model: str) -> bool:
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            mean = conn.execute("SELECT mean FROM code_means WHERE repo_id=? AND model=?",
                                (from_repo, model)).fetchone()
            (theirs,), = conn.execute("SELECT count(*) FROM codes WHERE repo_id=? AND model=?",
                                      (from_repo, model))
            mine, coded = conn.execute(
                "SELECT count(*), count(k.chunk_id) FROM chunks c JOIN files f ON "
                "f.document_id=c.document_id LEFT JOIN codes k ON k.repo_id=? AND k.model=? "
                "AND k.chunk_id=c.id WHERE f.repo_id=?", (from_repo, model, repo_id)).fetchone()
            if mean is None or not theirs == mine == coded:
                return False
            conn.execute("DELETE FROM codes WHERE repo_id=? AND model=?", (repo_id, model))
            conn.execute("INSERT INTO codes SELECT ?, model, chunk_id, code FROM codes WHERE "
                         "repo_id=? AND model=?", (repo_id, from_repo, model))
            _codes_replaced(conn, repo_id, model, mean[0])
            conn.execute("INSERT OR REPLACE INTO meta VALUES(?, coalesce((SELECT value FROM "
                         "meta WHERE key=?), '0'))",
                         (f"setting:{codes_allowance_setting(repo_id, model)}",
                          f"setting:{codes_allowance_setting(from_repo, model)}"))
        return True

    def add_codes(self, repo_id: int, model: str, chunk_ids: Sequence[int],
                  codes: Sequence[bytes]) -> None:
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT OR REPLACE INTO codes VALUES(?,?,?,?)",
                             [(repo_id, model, cid, code) for cid, code in zip(chunk_ids, codes)])
            for (version,) in conn.execute(
                    "UPDATE code_means SET version=version + 1 WHERE repo_id=? AND model=? "
                    "RETURNING version", (repo_id, model)).fetchall():
                _log_code_change(conn, repo_id, model, version, chunk_ids, chunk_ids)
                taken = conn.execute("SELECT version FROM code_snapshots WHERE repo_id=? AND "
                                     "model=?", (repo_id, model)).fetchone()
                if taken is None or version - taken[0] >= CODE_CHANGES_KEPT // 2:
                    _put_snapshot(conn, repo_id, model, version)

    def code_mean(self, repo_id: int, model: str) -> bytes | None:
        rows = self._query("SELECT mean FROM code_means WHERE repo_id=? AND model=?",
                           (repo_id, model))
        return rows[0][0] if rows else None

    def nearest_codes(self, repo_id: int, model: str, code: bytes, limit: int) -> list[int]:
        """SQLite has no bit count: the repository's codes are searched in memory, loaded
        once per version of them."""
        version = self._query("SELECT version FROM code_means WHERE repo_id=? AND model=?",
                              (repo_id, model))
        if not version:
            return []
        key = (repo_id, model)
        held = self._codes.current(
            key, version[0][0], len(code), partial(self._code_changes, key, version[0][0]),
            partial(self._codes_of, key), partial(self._all_codes, key, len(code)),
            partial(self._code_snapshot, key, len(code), version[0][0]))
        return held.nearest(code, limit)

    def _code_snapshot(self, key: tuple[int, str], width: int, version: int) -> tuple | None:
        """(version, chunk ids, codes) as code_snapshots took them; None without one of
        codes of `width` bytes that the log of changes since reaches from `version` (or
        from an index opened read-only that no writer of this schema has opened)."""
        import numpy as np

        # its blobs read through blob handles, in the same read transaction as the row:
        # the kernel's 58 MB in 0.06 s, against 0.12-0.22 s as a row
        with self._one_state():
            try:
                rows = self._query("SELECT rowid, version, typeof(ids), typeof(codes), "
                                   "length(ids), length(codes) FROM code_snapshots WHERE "
                                   "repo_id=? AND model=?", key)
            except sqlite3.OperationalError:  # no such table
                return None
            if not rows or version - rows[0][1] >= CODE_CHANGES_KEPT:
                return None  # not worth reading: the codes are read row by row anyway
            rowid, taken, ids_type, codes_type, ids_bytes, codes_bytes = rows[0]
            if (ids_type, codes_type) != ("blob", "blob") or not ids_bytes \
                    or ids_bytes % 8 or codes_bytes != ids_bytes // 8 * width:
                return None  # damaged, or none kept: the codes are read row by row instead
            conn = self._conn()
            with conn.blobopen("code_snapshots", "ids", rowid, readonly=True) as blob:
                ids = blob.read()
            with conn.blobopen("code_snapshots", "codes", rowid, readonly=True) as blob:
                codes = blob.read()
        return (taken, np.frombuffer(ids, np.int64),
                np.frombuffer(codes, np.uint8).reshape(len(ids) // 8, width))

    def _all_codes(self, key: tuple[int, str], width: int) -> tuple:
        """Every code of a repository and model, in chunk id order."""
        import numpy as np  # a semantic search needs it; a CLI start must not pay for it

        rows = self._query("SELECT chunk_id, code FROM codes WHERE repo_id=? AND model=? "
                           "ORDER BY chunk_id", key)
        return (np.array([r[0] for r in rows], dtype=np.int64),
                np.frombuffer(b"".join(r[1] for r in rows), dtype=np.uint8).reshape(
                    len(rows), -1) if rows else np.zeros((0, width), np.uint8))

    def _codes_of(self, key: tuple[int, str], ids: list[int]) -> list[tuple[int, bytes]]:
        """(chunk id, code) of these chunks, a page of ids a statement."""
        return [row for start in range(0, len(ids), 10_000) for row in self._query(
            "SELECT chunk_id, code FROM codes WHERE repo_id=? AND model=? AND chunk_id IN "
            f"({','.join('?' * len(ids[start:start + 10_000]))})",
            (*key, *ids[start:start + 10_000]))]

    def _code_changes(self, key: tuple[int, str], version: int, since: int
                      ) -> list[tuple[int, bytes, bytes]]:
        """The logged changes of a repository's codes after `since` up to `version` (none
        from an index opened read-only that no writer of this schema has opened)."""
        try:
            return self._query("SELECT version, removed, added FROM code_changes WHERE "
                               "repo_id=? AND model=? AND version>? AND version<=? "
                               "ORDER BY version", (*key, since, version))
        except sqlite3.OperationalError:  # no such table
            return []

    def vector_count(self, model: str) -> int:
        return self._query("SELECT count(*) FROM vectors WHERE model=?", (model,))[0][0]

    def vector_progress(self, model: str) -> tuple[int, int]:
        """Counting the chunks without a vector looks each chunk's up (the kernel's 1.47
        million: 3.5 s, each `status`). Once none is missing, that is remembered for the
        files as they are (FILES_VERSION: every write batch changes it; vectors are never
        taken away) and answered from there."""
        key = f"vectors_complete:{model}"
        with self._one_state():  # the counts and the files' version agree
            total = self._query("SELECT count(*) FROM chunks")[0][0]
            found = dict(self._query("SELECT key, value FROM meta WHERE key IN (?, ?)",
                                     (FILES_VERSION, key)))
            version, complete = found.get(FILES_VERSION), found.get(key)
            if version is not None and complete == version:
                return total, total
            missing = self._query("SELECT count(*) FROM chunks c LEFT JOIN vectors v ON "
                                  "v.model=? AND v.embed_hash=c.embed_hash WHERE "
                                  "v.embed_hash IS NULL", (model,))[0][0]
        if not missing and version is not None and not self._readonly:
            self._put_meta_unless_busy(key, version)
        return total - missing, total

    def _put_meta_unless_busy(self, key: str, value: str) -> None:
        """_put_meta, unless a writer holds the database now: a reader does not wait for
        what it may write another time."""
        conn = self._conn()
        conn.execute("PRAGMA busy_timeout=0")
        try:
            self._put_meta(key, value)
        except sqlite3.OperationalError:  # locked
            pass
        finally:
            conn.execute(f"PRAGMA busy_timeout={int(CONNECT_WAIT_S * 1000)}")

    # -- the index as a whole ----------------------------------------------------------------
    def indexing_lock(self, repository: str, wait_s: float = 0.0) -> IndexLock:
        """The index folder's lock: one indexer per embedded index, whatever the repository."""
        return IndexLock(Path(self.db_path).parent, wait_s)

    @contextmanager
    def indexing_run(self, tidy: bool = True):
        """Each batch commits on its own: a run interrupted on one machine keeps what it
        wrote, and every file is at its old or its new version (readers keep reading). The
        chunk index is brought in line with the database first, and committed at the end
        (also when the run is stopped: what it holds then was committed to the database).
        Staged vectors are put, a stopped run's too. The chunk index made again after many
        deletions is left to tidy() where `tidy` is False (on a big repository that takes
        minutes, which a watcher's edit would wait for)."""
        if not self._in_run and self._chunk_index_token is not None \
                and self._meta("chunk_index") != self._chunk_index_token:
            # another process made it again since this one's last run (a catch-up's child)
            self._chunk_index_token = None
        self._sync_chunk_index()
        if not self._in_run:
            self._complete_at_start = self._models_complete()
        self._in_run += 1
        try:
            yield
            if self._in_run == 1 and tidy:
                self._remake_chunk_index_if_stale()
        finally:
            self._in_run -= 1
            try:
                self._publish_chunk_index()
            finally:
                try:
                    self.put_staged_vectors()
                finally:
                    if not self._in_run:
                        self._chunk_index.close()
                        self._remember_complete_again()

    def _models_complete(self) -> set[str]:
        """The models vector_progress remembered every chunk has a vector of, now."""
        found = dict(self._query("SELECT key, value FROM meta WHERE key = ? OR key LIKE "
                                 "'vectors\\_complete:%' ESCAPE '\\'", (FILES_VERSION,)))
        version = found.pop(FILES_VERSION, None)
        return {key.split(":", 1)[1] for key, value in found.items() if value == version}

    def _remember_complete_again(self) -> None:
        """At the end of a run: each model complete as it began is remembered complete
        again once every chunk hash the run wrote has its vector (chunks the run did not
        write kept theirs: vectors are never taken away), now or as they are put."""
        models, hashes = self._complete_at_start, sorted(self._run_hashes)
        self._complete_at_start, self._run_hashes = set(), set()
        version = self._meta(FILES_VERSION)
        if version is None:
            return
        for model in models:
            have = {h for part in (hashes[i:i + 500] for i in range(0, len(hashes), 500))
                    for (h,) in self._query(
                        "SELECT embed_hash FROM vectors WHERE model=? AND embed_hash IN "
                        f"({_placeholders(len(part))})", (model, *part))}
            self._awaiting[model] = (version, set(hashes) - have)
            self._remember_when_embedded(model, set())

    def _remember_when_embedded(self, model: str, put: set[str]) -> None:
        """The hashes a run left without a vector of `model`, less `put`: when none is left
        and the files are as the run left them, every chunk has a vector again."""
        if model not in self._awaiting:
            return
        version, missing = self._awaiting[model]
        missing -= put
        if not missing:
            del self._awaiting[model]
            if self._meta(FILES_VERSION) == version:
                self._put_meta(f"vectors_complete:{model}", version)

    def tidy(self, repo_id: int) -> None:
        self._remake_chunk_index_if_stale()

    def _remake_chunk_index_if_stale(self) -> None:
        deleted = int(self._meta(CHUNK_INDEX_DELETED) or 0)
        if not deleted:
            return
        self._publish_chunk_index()
        try:
            held = self._chunk_index.chunk_count()
        except FourfoldError:  # it does not open: made again all the same
            held = 0
        if deleted > CHUNK_INDEX_REMADE_AFTER * held:
            self._remake_chunk_index_aside()

    def verify_text_index(self) -> list[str]:
        damaged = self._chunk_index.damaged_files()
        if damaged:
            self._remake_chunk_index_aside()
        return damaged

    def _remake_chunk_index_aside(self) -> None:
        """Make the chunk index again from the database, beside the one readers use, and
        put it in its place once complete."""
        self._chunk_index_made(self._chunk_index.remade_aside(self._chunk_rows()))

    def _chunk_index_made(self, token: str) -> None:
        """Record a chunk index made anew from the database: its token, no deleted chunks."""
        conn = self._conn()
        with conn:
            conn.execute("INSERT OR REPLACE INTO meta VALUES('chunk_index', ?)", (token,))
            conn.execute("DELETE FROM meta WHERE key=?", (CHUNK_INDEX_DELETED,))
        self._chunk_index_token = token

    def _chunk_rows(self) -> Iterator[tuple[int, int, str]]:
        """(chunk id, document id, weighted text) of every chunk, as the chunk index takes
        them, made from the database."""
        conn = self._conn()
        for document_id, path, packed_text in conn.execute(
                "SELECT d.id, d.path, c.text FROM documents d JOIN contents c ON "
                "c.document_id=d.id"):
            lines, path_tokens = unpack_text(packed_text).split("\n"), token_text(path)
            chunks = conn.execute("SELECT id, start_line, end_line, symbol FROM chunks "
                                  "WHERE document_id=?", (document_id,)).fetchall()
            bodies = token_texts([chunk_body(lines, start, end) for _, start, end, _ in chunks])
            symbols = token_texts([symbol or "" for _, _, _, symbol in chunks])
            for (chunk_id, _, _, _), symbol, body in zip(chunks, symbols, bodies):
                yield chunk_id, document_id, weighted_text(path_tokens, symbol, body)

    def _sync_chunk_index(self) -> None:
        """Under the index folder's lock: the chunk index matches the database, or is made
        again from it. The database records the folder's token while the two agree, and ''
        while a write to both is under way."""
        if self._chunk_index_token is not None:
            return
        token = self._chunk_index.token()
        if token is None or self._meta("chunk_index") != token:
            self._put_meta("chunk_index", "")
            token = self._chunk_index.recreate()
            self._chunk_index.add(self._chunk_rows())
            self._chunk_index.commit()
            self._chunk_index_made(token)
        self._chunk_index_token = token

    def text_index_fault(self) -> str | None:
        token = self._meta("chunk_index")
        if token == "" and indexer_at_work(Path(self.db_path).parent) is None:
            return (f"the text modality's word index ({self._chunk_index.folder}) missed the "
                    "last writes of an index run that stopped: ranked text answers miss "
                    "their files until the next `fourfold index` makes it again")
        if not token or self._chunk_index.carries(token):
            return None  # '': a write to both under way; None: nothing written yet
        return (f"the text modality's word index ({self._chunk_index.folder}) is missing or "
                "not this database's: ranked text answers miss files until the next "
                "`fourfold index` makes it again")

    def _publish_chunk_index(self) -> None:
        """Commit what this process handed to the chunk index, and record that the two agree."""
        self._chunk_index.commit()
        if self._chunk_index_unsynced:
            self._put_meta("chunk_index", self._chunk_index_token)
            self._chunk_index_unsynced = False

    def size_bytes(self) -> int:
        folder, name = Path(self.db_path).parent, Path(self.db_path).name
        return (sum(p.stat().st_size for p in folder.glob(name + "*"))
                + self._chunk_index.size_bytes())

    # -- access tokens --------------------------------------------------------------------
    def put_token(self, token: TokenRecord) -> None:
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO tokens(token_hash, name, scope, repositories, created_at, "
                         "revoked_at) VALUES(?,?,?,?,?,?)",
                         (token.token_hash, token.name, token.scope,
                          None if token.repositories is None else json.dumps(token.repositories),
                          token.created_at, token.revoked_at))

    def tokens(self) -> list[TokenRecord]:
        return [self._token(row) for row in self._query(
            "SELECT name, token_hash, scope, repositories, created_at, revoked_at FROM tokens "
            "ORDER BY created_at, name")]

    def token_by_hash(self, token_hash: str) -> TokenRecord | None:
        rows = self._query("SELECT name, token_hash, scope, repositories, created_at, "
                           "revoked_at FROM tokens WHERE token_hash=?", (token_hash,))
        return self._token(rows[0]) if rows else None

    @staticmethod
    def _token(row: tuple) -> TokenRecord:
        name, token_hash, scope, repositories, created_at, revoked_at = row
        return TokenRecord(name, token_hash, scope,
                           None if repositories is None else json.loads(repositories),
                           created_at, revoked_at)

    def revoke_token(self, name: str, when: float) -> bool:
        conn = self._conn()
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            return conn.execute("UPDATE tokens SET revoked_at=? WHERE name=? AND revoked_at IS "
                                "NULL", (when, name)).rowcount > 0
