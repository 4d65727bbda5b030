"""What the two SQL stores share: the columns a stored file, symbol and chunk are read from,
a graph's integer columns packed as int64, and the wrapper that turns a database driver's
errors into clear ones."""
from __future__ import annotations

import functools
import inspect
from array import array
from typing import Callable, Iterable, Sequence

from ..errors import IndexDamagedError, QueryError
from .base import EdgeColumns, graph_version_setting, setting_value

# Symbols and chunks belong to a document (s.document_id, c.document_id), shared by the
# files of every branch that holds it: they are read joined to the file (f) that asks.
FILE_COLS = "f.id, f.repo_id, f.path, f.language, f.flags"


def symbol_columns(qualname: str = "s.qualname") -> str:
    """A StoredSymbol's columns; a store may keep the qualified name in its own way."""
    return (f"s.id, f.id, f.path, s.name, {qualname}, s.kind, s.start_line, s.end_line, "
            "s.signature, s.doc, s.parent, f.flags, f.language")


SYMBOL_COLS = symbol_columns()
CHUNK_COLS = "c.id, f.id, f.path, c.start_line, c.end_line, c.symbol, c.kind, f.flags"


def packed(values: Sequence[int]) -> bytes:
    """An integer column as int64 bytes (-1 where an id is none)."""
    import numpy as np  # only a graph write needs it; importing it costs a CLI start

    return np.asarray(values, dtype=np.int64).tobytes()


def packed_bytes(values: Sequence[int]) -> bytes:
    """A column of small integers (an edge's resolution) as one byte each."""
    import numpy as np

    return np.asarray(values, dtype=np.int8).tobytes()


def packed_codes(values: Sequence[int]) -> bytes:
    """A column of positions among distinct kinds or names as int32 bytes."""
    import numpy as np

    return np.asarray(values, dtype=np.int32).tobytes()


# A row of packed edges as both stores hand it here, in EdgeColumns' order: the row's
# distinct kinds and each edge's position among them (int32 bytes); src_file, src_symbol,
# dst_file, dst_symbol and line as packed int64 bytes (-1 for none); the row's distinct
# names and each edge's position among them; the resolution as one byte each.
EdgeRow = tuple[list[str], bytes, bytes, bytes, bytes, bytes, bytes, list[str], bytes, bytes]


def _lengths_whole(row: EdgeRow) -> bool:
    """Whether a row's columns hold one value for each of its edges."""
    edges, remainder = divmod(len(row[2]), 8)
    return not remainder and len(row[9]) == edges and all(
        len(row[i]) == edges * 8 for i in (3, 4, 5, 6)) and all(
        len(row[i]) == edges * 4 for i in (1, 8))


def _edge_row_whole(row: EdgeRow) -> bool:
    """Whether a row's columns hold one value for each of its edges, and its codes are
    positions in its lists of distinct kinds and names: a damaged row would otherwise
    fail later or, with a negative code, name another edge's name."""
    import numpy as np

    if not _lengths_whole(row):
        return False
    for distinct, codes in ((row[0], row[1]), (row[7], row[8])):
        coded_at = np.frombuffer(codes, np.int32)
        if len(coded_at) and not (0 <= coded_at.min() and coded_at.max() < len(distinct)):
            return False
    return True


def twin_file_ids(rows: Callable[[str, tuple], list], mark: str, from_repo: int,
                  repo_id: int, version: int) -> dict[int, int] | None:
    """For a copy of a twin's graph (Store.copy_graph), read in its transaction: each file
    id of `from_repo` -> `repo_id`'s file of the same path; None where `from_repo`'s graph
    is no longer at `version`. `rows(sql, params)`: the store's rows of a statement whose
    placeholders are `mark`."""
    now = rows(f"SELECT value FROM meta WHERE key={mark}",
               (f"setting:{graph_version_setting(from_repo)}",))
    if setting_value(now[0][0] if now else None, 0) != version:
        return None
    return dict(rows(f"SELECT theirs.id, mine.id FROM files theirs JOIN files mine ON "
                     f"mine.repo_id={mark} AND mine.path=theirs.path WHERE theirs.repo_id={mark}",
                     (repo_id, from_repo)))


def copied_edge_files(row: EdgeRow, file_of: dict[int, int]) -> tuple[bytes, bytes] | None:
    """A twin's row of edges (graph.copied) checked as _edge_row_whole checks one, and its
    src_file and dst_file columns with each file id renamed by `file_of`; None where the
    row is damaged or an edge's file is not in `file_of`. With Python's array, not numpy:
    a fresh checkout loads none (5.8 million edges of random ids: 5.3 s, against 4.0 s for
    the same checks and renaming with numpy)."""
    if not _lengths_whole(row):
        return None
    for distinct, codes in ((row[0], row[1]), (row[7], row[8])):
        coded_at = array("i")
        coded_at.frombytes(codes)
        if coded_at and not (0 <= min(coded_at) and max(coded_at) < len(distinct)):
            return None
    renamed = []
    for column, names in ((row[2], file_of), (row[4], {**file_of, -1: -1})):
        ids = array("q")
        ids.frombytes(column)
        try:
            renamed.append(array("q", map(names.__getitem__, ids)).tobytes())
        except KeyError:
            return None
    return renamed[0], renamed[1]


def edge_columns_of(rows: list[EdgeRow]) -> EdgeColumns:
    """EdgeColumns of a repository's rows of packed edges, in order."""
    import numpy as np

    def joined(i: int, dtype: type) -> np.ndarray:
        parts = [np.frombuffer(row[i], dtype) for row in rows]
        # one row (SQLite keeps a repository's edges in one): read in place, not copied
        return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts \
            else np.zeros(0, dtype)

    for row in rows:
        if not _edge_row_whole(row):
            raise IndexDamagedError("a stored graph's rows of edges are damaged (columns of "
                                "different lengths, or codes outside their lists); index "
                                "the repository again with --rebuild")

    def recoded(distinct_at: int, codes_at: int) -> tuple[list[str], np.ndarray]:
        """One list of distinct values for every row: each row's positions moved to it."""
        if len(rows) == 1:
            return rows[0][distinct_at], joined(codes_at, np.int32)
        position: dict[str, int] = {}
        parts = []
        for row in rows:
            moved = np.fromiter((position.setdefault(v, len(position)) for v in row[distinct_at]),
                                np.int32, len(row[distinct_at]))
            parts.append(moved[np.frombuffer(row[codes_at], np.int32)])
        return list(position), np.concatenate(parts) if parts else np.zeros(0, np.int32)

    kinds, kind = recoded(0, 1)
    names, name = recoded(7, 8)
    return EdgeColumns(kinds, kind, joined(2, np.int64), joined(3, np.int64),
                       joined(4, np.int64), joined(5, np.int64), joined(6, np.int64), names,
                       name, joined(9, np.int8))


def two_columns(rows: Iterable[tuple[int, int]]) -> tuple[array, array]:
    """Two integer columns of rows as they come, as int64 arrays: millions of rows need
    not be held as tuples first."""
    first, second = array("q"), array("q")
    for a, b in rows:
        first.append(a)
        second.append(b)
    return first, second


def unpacked(blob: bytes) -> array:
    values = array("q")
    values.frombytes(blob)
    return values


def clear_errors(driver_error: type[Exception]):
    """A class decorator: opening the store and each of its public methods turn the
    driver's errors into the store's own, `store._failure(error, method_name)`, after one
    more try where `store._retry_without_shard(error)` asks for it; text that is
    no UTF-8 (a name in another encoding, read from a command line) is refused clearly."""
    def translated(method):
        @functools.wraps(method)
        def call(self, *args, **kwargs):
            for attempt in (1, 2):
                try:
                    return method(self, *args, **kwargs)
                except driver_error as exc:
                    # a store may ask for one more try (a server store whose shard did not
                    # answer leaves it out the second time)
                    retry = getattr(self, "_retry_without_shard", None)
                    if attempt == 2 or retry is None or not retry(exc):
                        raise self._failure(exc, method.__name__) from exc
                except UnicodeEncodeError:
                    raise QueryError("a name or text that is not valid UTF-8 (a file name in "
                                     "another encoding?) matches nothing: the index keeps "
                                     "names and text as UTF-8") from None
        return call

    def decorate(cls):
        for name, method in list(vars(cls).items()):
            if inspect.isfunction(method) and (name == "__init__" or not name.startswith("_")):
                setattr(cls, name, translated(method))
        return cls
    return decorate
