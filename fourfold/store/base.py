"""The storage interface. SQLite (embedded default) implements it; a PostgreSQL store is
the second implementation for team scale. Retrievers talk only to this interface."""
from __future__ import annotations

import json
import struct
from array import array
import threading
import zlib
from abc import ABC, abstractmethod
from collections import OrderedDict
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import IntEnum
from itertools import compress
from typing import Any, Callable, Collection, Iterable, Iterator, NamedTuple, Sequence

from ..errors import FourfoldError, QueryError
from ..model import Chunk, Reference, Symbol


class FileStamp(NamedTuple):
    """What the file system says of a file, cheaply: any change means its content may have
    changed. The ctime and inode catch an edit that kept the size and put the old mtime
    back, and a file replaced by another (a branch switch writes new files)."""

    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int


@dataclass(slots=True)
class FileState:
    file_id: int
    stamp: FileStamp
    hash: str


@dataclass(slots=True)
class FileRecord:
    """Everything the indexer learned about one file, written in one go."""

    path: str
    stamp: FileStamp
    hash: str
    language: str | None
    flags: int
    text: str
    symbols: list[Symbol] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    # compress_references(encode_references(...)): made once, in the parser process
    references: bytes = field(default_factory=lambda: NO_REFERENCES)
    chunk_tokens: list[str] = field(default_factory=list)  # BM25 token text per chunk
    chunk_hashes: list[str] = field(default_factory=list)  # embedding cache key per chunk
    parsed_elsewhere: bool = False  # not parsed: the store holds a parse of the same content
    parser: str = ""  # what read it (parser_fingerprint): a document is kept per parser
    document_held: bool = False  # the store holds this path's document: only the file is new
    unparsed: bool = False  # kept for text search only: the parser gave up at its time limit
    # (chunk hash, int8 vector, scale) per chunk, where the parser process embedded them
    vectors: list[tuple[str, bytes, float]] = field(default_factory=list)

    @property
    def size(self) -> int:
        return self.stamp.size


def encode_references(references: list[Reference]) -> str:
    """A file's raw references as the JSON text stores keep: a list of [kind, name, line,
    source]. The parser processes encode them, so the indexing process, the busiest one
    while files are parsed, only passes the text on."""
    return json.dumps([(r.kind, r.name, r.line, r.source) for r in references])


def decode_references(text: str) -> list[Reference]:
    # One string object per distinct kind, name and enclosing symbol: a file's references
    # repeat them, and a big repository's graph holds millions of references at once.
    same: dict[str, str] = {}
    return [Reference(same.setdefault(kind, kind), same.setdefault(name, name), line,
                      None if source is None else same.setdefault(source, source))
            for kind, name, line, source in json.loads(text)]


def compress_references(text: str) -> bytes:
    """encode_references' text, compressed (a fifth of the bytes) where it is kept long:
    in the embedded index, and in graph facts held through a run."""
    return zlib.compress(text.encode("utf-8", "surrogatepass"), 1)


NO_REFERENCES = compress_references("[]")


def decompress_references(blob: bytes) -> str:
    return zlib.decompress(blob).decode("utf-8", "surrogatepass")


@dataclass(slots=True)
class RepoInfo:
    repo_id: int
    root: str
    name: str
    indexed_at: float | None
    files: int
    bytes: int
    chunks: int
    symbols: int
    languages: dict[str, int]
    shard: str | None = None        # the server its rows live on (None: the index itself)
    unreachable: str | None = None  # why its shard does not answer now, if it does not
    removing: bool = False          # a removal of it began and has not finished


@dataclass(slots=True)
class StoredFile:
    file_id: int
    repo_id: int
    path: str
    language: str | None
    flags: int


@dataclass(slots=True)
class StoredSymbol:
    symbol_id: int
    file_id: int
    path: str
    name: str
    qualname: str
    kind: str
    start_line: int
    end_line: int
    signature: str
    doc: str
    parent: str | None
    flags: int
    language: str | None


@dataclass(slots=True)
class StoredChunk:
    chunk_id: int
    file_id: int
    path: str
    start_line: int
    end_line: int
    symbol: str | None
    kind: str
    flags: int


# What text a file must hold: a literal (str), ("and", [...]) or ("or", [...]) of these.
RequiredText = str | tuple[str, list["RequiredText"]]

# Where a file stands in a listing by path: (path, file id). Several repositories may hold
# one path, and file ids tell their files apart.
PathKey = tuple[str, int]

BM25_COLUMN_WEIGHTS = (3.0, 5.0, 1.0)  # path, symbol name, body


class Resolution(IntEnum):
    """How sure an edge is of its target, weakest first (stored as a small integer)."""

    NONE = 0       # no target in the repository: an outside import, an unknown name
    NAME_ONLY = 1  # a definition guessed by its name alone
    INFERRED = 2   # the receiver's type was inferred (self, a constructor, an annotation)
    EXACT = 3      # an import, a qualified name or a definition in scope


@dataclass(slots=True)
class StoredEdge:
    kind: str
    src_file: int
    src_symbol: int | None
    dst_file: int | None
    dst_symbol: int | None
    line: int
    name: str
    resolution: int  # a Resolution


@dataclass(slots=True)
class EdgeColumns:
    """Edges as one sequence per field of StoredEdge, -1 where an id is None. A graph is
    written whole, and making a StoredEdge of each edge cost more than writing them all.
    Kinds and names are coded: each distinct one once (`kinds`, `names`) and an edge's
    position among them (`kind`, `name`); the kernel's 5.8 million edges name about 560,000
    distinct things, and reading and coding every name took a new process 2 s."""

    kinds: list[str] = field(default_factory=list)
    kind: Sequence[int] = ()
    src_file: Sequence[int] = ()
    src_symbol: Sequence[int] = ()
    dst_file: Sequence[int] = ()
    dst_symbol: Sequence[int] = ()
    line: Sequence[int] = ()
    names: list[str] = field(default_factory=list)
    name: Sequence[int] = ()
    resolution: Sequence[int] = ()

    @classmethod
    def of(cls, edges: list[StoredEdge]) -> "EdgeColumns":
        def ids(values):
            return [-1 if v is None else v for v in values]
        kinds, kind = coded(e.kind for e in edges)
        names, name = coded(e.name for e in edges)
        return cls(kinds, kind, [e.src_file for e in edges], ids(e.src_symbol for e in edges),
                   ids(e.dst_file for e in edges), ids(e.dst_symbol for e in edges),
                   [e.line for e in edges], names, name, [e.resolution for e in edges])

    def __len__(self) -> int:
        return len(self.kind)

    def edges(self) -> list[StoredEdge]:
        def ids(values: Sequence[int]) -> list[int | None]:
            return [None if v < 0 else v for v in _listed(values)]
        kinds, names = self.kinds, self.names
        return [StoredEdge(*edge) for edge in zip(
            [kinds[k] for k in _listed(self.kind)], _listed(self.src_file),
            ids(self.src_symbol), ids(self.dst_file), ids(self.dst_symbol),
            _listed(self.line), [names[n] for n in _listed(self.name)],
            _listed(self.resolution))]


def coded(values: Iterable[str], distinct: Sequence[str] = ()) -> tuple[list[str], array]:
    """Each distinct value once (after `distinct`, kept in its order) and every value's
    position among them."""
    position = dict(zip(distinct, range(len(distinct))))
    codes = array("i", [position.setdefault(v, len(position)) for v in values])
    return list(position), codes


def used_only(distinct: list[str], codes: Any) -> tuple[list[str], Any]:
    """The distinct values some code (a numpy array of positions) points to, and the codes
    moved to their positions among those."""
    import numpy as np  # a graph written or read needs it; a CLI start must not pay for it

    used = np.bincount(codes, minlength=len(distinct)) > 0
    if used.all():
        return distinct, codes
    return list(compress(distinct, used)), (np.cumsum(used) - 1)[codes].astype(np.int32)


def _listed(values: Sequence[int]) -> list[int]:
    """Python ints of a list or a numpy array."""
    return values.tolist() if hasattr(values, "tolist") else list(values)


@dataclass(slots=True)
class GraphInput:
    """What a repository's graph last read of one file: the file row (a changed file's
    row is a new one), its symbols' ids in their order (packed_ids) and its facts less its
    calls and type uses (fourfold.graph.inputs). Where only calls and type uses changed,
    the graph is patched rather than resolved whole (fourfold.graph.patch)."""

    path: str
    file_id: int
    symbol_ids: bytes
    facts: bytes


@dataclass(slots=True)
class GraphPatch:
    """A stored graph's change where some files changed (fourfold.graph.patch): the edges
    whole, the changed files' ids before and now and their definitions' (their ranks carry
    over), the ids of definitions that are no more (their ranks go), the changed and added
    files' GraphInputs, the files taken away (id -> path: their ranks and inputs go), and the
    ids of new files and definitions (given the lowest rank the repository's hold, that of a
    node no edge leads to, until they are ranked). No edges: no file changed."""

    edges: EdgeColumns | None
    moved_files: dict[int, int]
    moved_symbols: dict[int, int]
    inputs: list[GraphInput]
    dropped_symbols: list[int] = field(default_factory=list)
    removed_files: dict[int, str] = field(default_factory=dict)
    new_files: list[int] = field(default_factory=list)
    new_symbols: list[int] = field(default_factory=list)


@dataclass(slots=True)
class TokenRecord:
    """An access token as stored: its SHA-256, never the secret."""

    name: str
    token_hash: str
    scope: str  # "read" or "write"
    repositories: list[str] | None  # None: every repository
    created_at: float
    revoked_at: float | None



def graph_behind_setting(repo_id: int) -> str:
    """The setting (1 or 0) that says an index run left the repository's graph for later."""
    return f"graph_behind:{repo_id}"


def graph_version_setting(repo_id: int) -> str:
    """The setting a store raises with every write of a repository's graph (replace_graph,
    patch_graph): a process holding the graph reads it again then, not after every save
    (reading the kernel's took 20-30 s)."""
    return f"graph_version:{repo_id}"


def graph_resolved_by_setting(repo_id: int) -> str:
    """The setting that names the resolution code (graph.provenance.resolver_version) whose
    whole resolution made the repository's stored graph, or a copy of one; its negation
    where the edges are such a resolution's and the ranks were made from the stored edges
    (another snapshot's graph patched from another's: graph.seeded), or a copy of one; 0
    where a patch changed it since (its ranks carried over, not ranked again) or it was made
    otherwise."""
    return f"graph_resolved_by:{repo_id}"


def setting_value(stored: str | None, default: int) -> int:
    """A setting as stored (None: never set), or `default` where it is not a whole number
    (not written by set_setting: a float a caller once gave)."""
    try:
        return int(stored) if stored is not None else default
    except ValueError:
        return default


def unfinished_setting(repo_id: int) -> str:
    """The setting that holds how many files the repository's first complete index will
    hold, while that index is written (0 once complete): it answers meanwhile."""
    return f"unfinished:{repo_id}"


def unfinished_note(store: "Store", repo_id: int | None) -> str | None:
    """What answers miss while the repository's first index is written; None once done."""
    total = store.setting(unfinished_setting(repo_id), 0) if repo_id is not None else 0
    return (f"the first index is still being written ({total:,} files in all): answers use "
            "the files written so far") if total else None


def codes_allowance_setting(repo_id: int, model: str) -> str:
    """The setting that holds how many more chunks may get binary codes against the mean
    the repository's codes were taken with (add_codes) before all are taken anew together;
    below 0, they are owed now."""
    return f"codes_allowance:{repo_id}:{model}"


def max_file_bytes_setting(root: str) -> str:
    """The setting that remembers a checkout's --max-file-bytes, by its folder."""
    return f"max_file_bytes:{root}"


def codes_owed_setting(repo_id: int) -> str:
    """The setting that names (IndexSummary.run) the index run whose written chunks may
    have no binary codes yet, until that run's codes are taken; 0 or unset: none owed. A
    run stopped before then leaves it. A run that finds another run's name there (stopped,
    or taking its codes after the index lock) puts its own; it owes every code unless that
    run's codes were taken since (codes_taken_setting). A run clears only its own name."""
    return f"codes_owed:{repo_id}"


def codes_taken_setting(repo_id: int) -> str:
    """The setting that names the last run whose codes were taken after another run had
    taken over its codes-owed mark: that run owes only its own codes."""
    return f"codes_taken:{repo_id}"


def deep_codes_setting(repo_id: int, model: str) -> str:
    """The setting that is 1 while the deep pass's model (`model`) has a code for every
    chunk of the repository: an index run that writes chunks sets it to 0 until the next
    pass has coded them, and the indexing model answers meanwhile."""
    return f"deep_codes:{repo_id}:{model}"


def repository_settings(repo_id: int, root: str | None) -> tuple[list[str], list[str]]:
    """Every setting of one repository: the names of its settings, and the prefixes of the
    names of those it keeps per model; what taking the repository out takes with it (its
    root's too, unless None: another repository of the index has that root)."""
    names = [graph_behind_setting(repo_id), graph_version_setting(repo_id),
             graph_resolved_by_setting(repo_id), unfinished_setting(repo_id),
             codes_owed_setting(repo_id), codes_taken_setting(repo_id)] + (
                 [max_file_bytes_setting(root)] if root else [])
    return names, [codes_allowance_setting(repo_id, ""), deep_codes_setting(repo_id, "")]


# the meta keys that mark repositories whose removal began and has not finished, with the
# id after it: one is not indexed again under its id (a process that held its graph or
# codes would take the new ones for the old) until `remove` finishes
REMOVING = "removing:"


def removing_key(repo_id: int) -> str:
    return f"{REMOVING}{repo_id}"


def being_removed(name: str) -> QueryError:
    return QueryError(f"repository {name!r} is being taken out of the index (a `fourfold "
                      f"remove` was interrupted): run `fourfold remove {name}` again first, "
                      "with this index's --index-dir or --store")


def codes_behind(store: Store, repo_id: int, model: str) -> bool:
    return store.setting(codes_allowance_setting(repo_id, model), 0) < 0

CODE_CHANGES_KEPT = 1_000  # versions of a repository's codes whose changes a store logs


def packed_ids(ids: Sequence[int]) -> bytes:
    """Chunk ids as a store's log of code changes keeps them: big-endian int64."""
    return struct.pack(f">{len(ids)}q", *ids)


# A held repository's codes are copied into one array again once the rows taken out of it
# and the rows added since number more than this share of it: until then a change marks
# and appends (a copy of the kernel's 47 MB of codes took its first search after a save
# 120-230 ms, fresh pages being slow to come by on a virtual machine).
HELD_CODES_REWRITE_SHARE = 1 / 16


@dataclass(slots=True)
class HeldRows:
    """A repository's codes as a process holds them: `ids` in chunk id order and their
    codes as columns (semantic.binary.code_columns), those where `dead` is set taken out
    since, and `more_ids` and `more_codes` (a row each) added since, in chunk id order."""

    ids: Any
    columns: Any
    dead: Any = None
    more_ids: Any = None
    more_codes: Any = None

    @classmethod
    def of(cls, ids: Any, codes: Any) -> "HeldRows":
        """Rows held from chunk ids and their codes, a row each."""
        from ..semantic.binary import code_columns

        return cls(ids, code_columns(codes))

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.ids, self.columns, self.dead, self.more_ids,
                                      self.more_codes) if a is not None)

    def nearest(self, code: bytes, limit: int) -> list[int]:
        """The chunk ids of the `limit` codes nearest `code` by Hamming distance, then by
        chunk id."""
        import numpy as np  # a semantic search needs it; a CLI start must not pay for it

        from ..semantic.binary import column_distances, hamming_distances, within_nearest

        query = np.frombuffer(code, np.uint8)
        distances = column_distances(query, self.columns)
        gone = np.iinfo(distances.dtype).max  # beyond any distance of real codes
        if self.dead is not None:
            distances[self.dead] = gone
        best = within_nearest(distances, limit)  # every row as near as the limit-th: ties
        best = best[distances[best] != gone]     # go by id
        ids, distances = self.ids[best], distances[best]
        if self.more_ids is not None:
            ids = np.concatenate([ids, self.more_ids])
            distances = np.concatenate([distances, hamming_distances(query, self.more_codes)])
        return ids[np.lexsort((ids, distances))[:limit]].tolist()


class HeldCodes:
    """Repositories' binary codes held in memory, each under the version its store raises
    with every change of them; past `budget` bytes (None: no bound) the codes used longest
    ago are let go."""

    def __init__(self, budget: int | None = None) -> None:
        self.budget = budget
        self._held: OrderedDict[tuple[int, str], tuple[int, HeldRows]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[int, str], version: int) -> HeldRows | None:
        """The rows held under this version, else None."""
        with self._lock:
            held = self._held.get(key)
            if held is None or held[0] != version:
                return None
            self._held.move_to_end(key)
            return held[1]

    def forget(self, repo_id: int) -> None:
        """Let go of a repository's codes (of every model)."""
        with self._lock:
            for key in [key for key in self._held if key[0] == repo_id]:
                del self._held[key]

    def held(self, key: tuple[int, str]) -> tuple[int, HeldRows] | None:
        """(version, rows) held, whatever their version."""
        with self._lock:
            return self._held.get(key)

    def put(self, key: tuple[int, str], version: int, rows: HeldRows) -> None:
        """Hold a repository's rows as of a version."""
        with self._lock:
            self._held[key] = (version, rows)
            while self.budget is not None and sum(
                    r.nbytes for _, r in self._held.values()) > self.budget:
                self._held.popitem(last=False)

    def current(self, key: tuple[int, str], version: int, width: int,
                changes_since: Callable[[int], list[tuple[int, bytes, bytes]]],
                read_codes: Callable[[list[int]], list[tuple[int, bytes]]],
                read_all: Callable[[], tuple[Any, Any] | None],
                read_snapshot: Callable[[], tuple[int, Any, Any] | None] | None = None
                ) -> HeldRows | None:
        """The rows as of `version`: held, else the held ones brought up to it by the
        store's log (update), else a snapshot the store keeps brought up to it the same
        way (`read_snapshot()`: its version, chunk ids and codes in chunk id order, or
        None), else read whole (`read_all()`: chunk ids and codes in chunk id order, or
        None when there are none of `width` bytes) and held."""
        found = self.get(key, version) or self.update(key, version, width, changes_since,
                                                      read_codes)
        snapshot = None if found is not None or read_snapshot is None else read_snapshot()
        if snapshot is not None and snapshot[0] <= version:
            self.put(key, snapshot[0], HeldRows.of(*snapshot[1:]))
            found = self.get(key, version) or self.update(key, version, width, changes_since,
                                                          read_codes)
        if found is None:
            whole = read_all()
            if whole is not None:
                found = HeldRows.of(*whole)
                self.put(key, version, found)
        return found

    def update(self, key: tuple[int, str], version: int, width: int,
               changes_since: Callable[[int], list[tuple[int, bytes, bytes]]],
               read_codes: Callable[[list[int]], list[tuple[int, bytes]]]
               ) -> HeldRows | None:
        """The rows held of an older version brought to `version` by the changes its store
        logged since (`changes_since(held version)`: each later version's chunk ids taken
        away and added, packed as big-endian int64), the added ones read anew
        (`read_codes(ids)`: (id, code) pairs); None when none are held, or the log does
        not reach back to them (all the codes were made anew)."""
        import numpy as np  # a semantic search needs it; a CLI start must not pay for it

        from ..semantic.binary import column_codes

        held = self.held(key)
        if held is None or held[0] > version:
            return None
        since, rows = held
        changes = changes_since(since)
        if [row[0] for row in changes] != list(range(since + 1, version + 1)):
            return None
        removed: set[int] = set()
        added: set[int] = set()
        for _, gone, new in changes:
            gone = np.frombuffer(gone, ">i8").tolist()
            removed.update(gone)
            added.difference_update(gone)
            added.update(np.frombuffer(new, ">i8").tolist())
        fetched = sorted(read_codes(sorted(added))) if added else []
        if any(len(code) != width for _, code in fetched):
            return None
        changed = np.fromiter(removed | added, np.int64, len(removed | added))
        dead = np.isin(rows.ids, changed)
        if rows.dead is not None:
            dead |= rows.dead
        more_ids = np.array([i for i, _ in fetched], np.int64)
        more_codes = np.frombuffer(b"".join(bytes(code) for _, code in fetched),
                                   np.uint8).reshape(len(fetched), width)
        if rows.more_ids is not None:  # the rows added before, less those changed again
            kept = ~np.isin(rows.more_ids, changed)
            more_ids = np.concatenate([rows.more_ids[kept], more_ids])
            more_codes = np.concatenate([rows.more_codes[kept], more_codes])
            order = np.argsort(more_ids, kind="stable")
            more_ids, more_codes = more_ids[order], more_codes[order]
        if int(dead.sum()) + len(more_ids) > len(rows.ids) * HELD_CODES_REWRITE_SHARE:
            alive = ~dead
            ids = np.concatenate([rows.ids[alive], more_ids])
            codes = np.concatenate([column_codes(rows.columns)[alive], more_codes])
            order = np.argsort(ids, kind="stable")
            later = HeldRows.of(ids[order], codes[order])
        else:
            later = HeldRows(rows.ids, rows.columns, dead if dead.any() else None,
                             more_ids if len(more_ids) else None,
                             more_codes if len(more_ids) else None)
        self.put(key, version, later)
        return later


class Store(ABC):
    """One index: repositories, files, contents, symbols, chunks, graph and vectors."""

    # -- repositories and files -------------------------------------------------------
    @abstractmethod
    def ensure_repo(self, root: str, name: str) -> int: ...

    @abstractmethod
    def repos(self, counts: bool = True, only: Collection[int] | None = None
              ) -> list[RepoInfo]:
        """Indexed repositories (those of the ids in `only`, unless None); counts=False
        skips the (slower) file/chunk/symbol counts."""

    @abstractmethod
    def mark_indexed(self, repo_id: int, when: float, parser: str) -> None:
        """Record a finished index run and the parser version its files were read with."""

    def merge_text_indexes(self) -> None:
        """After a run that wrote many files: merge what it left in indexes that a later
        change updates in place, so that the first small change does not pay for it. A
        store without such indexes does nothing."""

    def release_memory(self) -> None:
        """Give back what this process's connection caches (before a big process forks: a
        child would hold its copy for as long as it runs). A store that caches nothing in
        this process does nothing."""

    def forget_repository(self, repo_id: int) -> None:
        """Let go of what this process holds of a repository taken out of the index. A
        store that holds nothing of one does nothing."""

    @abstractmethod
    def parser_of(self, repo_id: int) -> str | None:
        """The parser version of the repository's last finished index run."""

    @abstractmethod
    def identity(self) -> str | None:
        """The identity of the index folder this store was built in (None: not recorded)."""

    @abstractmethod
    def mark_identity(self, identity: str) -> None:
        """Record the identity of the index folder this store belongs to."""

    @abstractmethod
    def is_empty(self) -> bool:
        """True while no repository has been added."""

    @abstractmethod
    def setting(self, key: str, default: int) -> int:
        """An integer remembered with the index (e.g. the size cap a root was indexed with)."""

    @abstractmethod
    def set_setting(self, key: str, value: int) -> None:
        """Remember an integer with the index."""

    @abstractmethod
    def clear_setting(self, key: str, only_if: int) -> bool:
        """Set the integer to 0 where it still holds `only_if`, in one step (a process
        clearing its own mark leaves one another process put there meanwhile); whether it
        did."""

    @abstractmethod
    def generation(self) -> tuple:
        """Changes whenever any repository finishes an index run; cheap to call per query."""

    @abstractmethod
    def file_states(self, repo_id: int, paths: Iterable[str] | None = None
                    ) -> dict[str, FileState]:
        """Every indexed file of the repository, or those of `paths`: each such path as a
        file, and the files under it as a folder."""

    @abstractmethod
    def write_batch(self, repo_id: int, records: list[FileRecord], deleted: list[str],
                    touched: list[tuple[str, FileStamp]]) -> None:
        """Replace/insert records, delete paths, refresh (path, stamp) — atomically. A record
        whose document (path, hash, parser) the store holds adds only its file; a document no
        file holds any more is deleted."""

    @abstractmethod
    def parsed_contents(self, parser: str) -> set[tuple[str, str | None]]:
        """(content hash, language) of the files parsed with `parser`, in any repository: a
        branch or a copy of a repository re-parses only what differs. The language is part
        of what was parsed: the same bytes in a.py and a.txt are read differently."""

    @abstractmethod
    def held_documents(self, repo_id: int, parser: str) -> set[tuple[str, str]]:
        """(path, content hash) of the documents read with `parser` whose rows a file of
        this repository can share: a branch writes only the files whose document is not
        held."""

    @abstractmethod
    def parse_of(self, content_hash: str, language: str | None, parser: str
                 ) -> tuple[list[Symbol], list[tuple[int, int, str | None, str]], bytes] | None:
        """(symbols, chunk spans (start, end, symbol, kind), references as FileRecord holds
        them) of a file with this content and language, parsed with `parser`; None if there
        is none."""

    @abstractmethod
    def files(self, repo_id: int | None = None) -> list[StoredFile]: ...

    @abstractmethod
    def files_after(self, repo_id: int, file_id: int) -> tuple[int, list[StoredFile]]:
        """How many files the repository holds, and those with an id above `file_id`, read
        at one moment: a file's id is never given twice, so these are the files written
        since `file_id` was the highest."""

    @abstractmethod
    def file_by_path(self, path: str, repo_id: int | None = None) -> StoredFile | None: ...

    @abstractmethod
    def content(self, file_id: int) -> str: ...

    # -- text -------------------------------------------------------------------------
    @abstractmethod
    def trigram_candidates(self, required: RequiredText | None, repo_id: int | None = None,
                           after: PathKey | None = None, limit: int | None = None,
                           case_sensitive: bool = False) -> list[tuple[StoredFile, str]]:
        """(file, content hash) of the files that may hold what `required` asks for (a
        superset: matching may ignore case and order; exact verification follows), in
        (path, file id) order; None means every file. `after`: only files after this key
        (the last one of a page before); `limit`: at most this many files (a first page of
        a grep reads a few); `case_sensitive`: the literals may be matched as written,
        which a store that checks texts itself does more cheaply."""

    @abstractmethod
    def contents(self, file_ids: Iterable[int]) -> dict[int, str]:
        """file id -> text, for many files at once."""

    def utf8_contents(self, file_ids: Iterable[int]) -> dict[int, bytes]:
        """contents() as UTF-8 bytes (a store that keeps them so need not decode them)."""
        return {file_id: text.encode("utf-8", "surrogatepass")
                for file_id, text in self.contents(file_ids).items()}

    @abstractmethod
    def bm25_chunks(self, terms: Sequence[str], limit: int, repo_id: int | None = None
                    ) -> list[tuple[StoredChunk, float]]:
        """Chunks holding any of the query terms, ranked by BM25 over identifier-split,
        stemmed tokens (higher is better); a term in the path or the symbol name counts
        more than one in the body (BM25_COLUMN_WEIGHTS)."""

    @abstractmethod
    def chunks(self, chunk_ids: Iterable[int], repo_id: int | None = None
               ) -> list[StoredChunk]:
        """The chunks of these ids, one per file holding them (of one repository)."""

    @abstractmethod
    def chunks_of_file(self, file_id: int) -> list[StoredChunk]: ...

    # -- symbols ----------------------------------------------------------------------
    @abstractmethod
    def symbols_named(self, names: Iterable[str], repo_id: int | None = None
                      ) -> list[StoredSymbol]:
        """Symbols whose lower-cased name or qualname is in names."""

    @abstractmethod
    def symbols_by_token(self, tokens: Iterable[str], repo_id: int | None = None,
                         limit: int = 2000) -> list[StoredSymbol]:
        """Symbols whose name contains any of the given sub-word tokens or starts with them."""

    @abstractmethod
    def symbols_with_two_words(self, words: Iterable[str], repo_id: int | None = None,
                               limit: int = 2000) -> list[StoredSymbol]:
        """Symbols whose name holds at least two of the words as tokens: the few a sentence
        may spell out, found whatever number of names hold one of its words."""

    @abstractmethod
    def symbols_with_words(self, words: Iterable[str], whole: str, repo_id: int | None = None,
                           limit: int = 2000) -> list[StoredSymbol]:
        """Symbols whose name has every one of the words, or is the token `whole`: the
        candidates for a style variant of a name (json_reader for JsonReader)."""

    @abstractmethod
    def symbols_of_file(self, file_id: int) -> list[StoredSymbol]: ...

    @abstractmethod
    def graph_symbols(self, repo_id: int, paths: Collection[str] | None = None
                      ) -> list[tuple[int, str, str, str, str, str | None]]:
        """(symbol id, path, name, qualname, kind, parent) of every symbol of a repository
        (of the files at `paths`: a few hundred at most), by id: what the graph reads,
        without signatures and docs."""

    @abstractmethod
    def symbol_ids_by_file(self, repo_id: int) -> tuple[array, array]:
        """The file id and the symbol id of every symbol of a repository, by symbol id, as
        two int64 arrays (the kernel's 3.3 million pairs as tuples took 300 MB)."""

    @abstractmethod
    def symbol_keys(self, repo_id: int, file_ids: Sequence[int]) -> list[tuple[int, int, str]]:
        """(symbol id, file id, qualname) of the symbols of these files of a repository (at
        most a few hundred files: a big repository's millions are read part by part)."""

    @abstractmethod
    def symbols_by_id(self, ids: Iterable[int], repo_id: int | None = None
                      ) -> list[StoredSymbol]:
        """The symbols of these ids, one per file holding them (of one repository)."""

    # -- graph ------------------------------------------------------------------------
    @abstractmethod
    def raw_references(self, repo_id: int, paths: Collection[str] | None = None
                       ) -> list[tuple[str, bytes]]:
        """The raw references of each file of a repository (of the files at `paths`):
        (path, references as FileRecord holds them: compress_references(encode_references(
        ...)), as the graph's facts keep them)."""

    @abstractmethod
    def replace_graph(self, repo_id: int, edges: EdgeColumns, symbol_rank: dict[int, float],
                      file_rank: dict[int, float], inputs: Sequence[GraphInput] = ()) -> None:
        """A repository's graph whole: its edges, ranks and what it read of each file
        (none: the graph cannot be patched, only made again)."""

    @abstractmethod
    def patch_graph(self, repo_id: int, patch: GraphPatch) -> None: ...

    @abstractmethod
    def copy_graph(self, from_repo: int, repo_id: int, version: int) -> bool:
        """Give `repo_id` the graph of `from_repo`, which holds the same documents
        (graph.copied): its edges, ranks and what it read of each file, each file id
        renamed to `repo_id`'s file of the same path (symbol ids are the documents'), in
        one transaction. False, and nothing written, where `from_repo`'s graph is no
        longer at `version` (graph_version_setting), its stored edges are damaged, or an
        edge's file has no file of the same path in `repo_id`."""

    @abstractmethod
    def graph_inputs(self, repo_id: int) -> list[GraphInput]:
        """What the repository's stored graph read of each file."""

    @abstractmethod
    def edge_columns(self, repo_id: int | None = None) -> EdgeColumns:
        """A repository's edges (every one's, repository by repository, where None) as
        replace_graph took them: ids and lines as int64 numpy arrays, the resolution as
        int8. Edges are written and read whole (the graph retriever walks them in memory),
        so a store may keep them packed, unindexed."""

    def all_edges(self, repo_id: int | None = None) -> list[StoredEdge]:
        """edge_columns() as objects."""
        return self.edge_columns(repo_id).edges()

    @abstractmethod
    def centrality(self, repo_id: int | None = None
                   ) -> tuple[dict[int, float], dict[int, float]]:
        """(symbol_id -> rank, file_id -> rank) of one repository (or every one); PageRank ×
        node count, 1.0 = average."""

    def ranks_of_files(self, repo_id: int | None, paths: Collection[str]
                       ) -> tuple[dict[tuple[str, str], float], dict[str, float]]:
        """centrality() of these files and their symbols, keyed as hits name them:
        ((path, qualname) -> rank, path -> rank). Read here from every rank of the
        repository; a store may ask for these files only."""
        symbol_rank, file_rank = self.centrality(repo_id)
        ids = {f.file_id: f.path for f in self.files(repo_id) if f.path in paths}
        return ({(s.path, s.qualname): symbol_rank[s.symbol_id]
                 for s in self.symbols_by_id(symbol_rank) if s.file_id in ids},
                {ids[fid]: rank for fid, rank in file_rank.items() if fid in ids})

    # -- vectors ----------------------------------------------------------------------
    @abstractmethod
    def chunks_missing_vectors(self, model: str, limit: int, after: int = 0,
                               within: Sequence[int] | None = None,
                               repo_id: int | None = None) -> list[tuple[int, str]]:
        """(chunk id, chunk hash) of chunks with no vector yet for this model, by id > after;
        only those of `within` (chunk ids) if given, of repository `repo_id` if given."""

    @abstractmethod
    def put_vectors(self, model: str, rows: list[tuple[str, bytes, float]]) -> None:
        """Store (chunk hash, int8 vector, scale) rows."""

    def stage_vectors(self, model: str, rows: list[tuple[str, bytes, float]]) -> None:
        """Store (chunk hash, int8 vector, scale) rows once put_staged_vectors() is called
        or the indexing run ends, all at once, where the store writes many quicker so;
        readers see none of them until then. A store without such a way puts them now. The
        thread that stages them puts them."""
        self.put_vectors(model, rows)

    def put_staged_vectors(self) -> None:
        """Store what stage_vectors() holds back."""

    @abstractmethod
    def vector_blocks(self, model: str, repo_id: int | None = None, size: int = 65536
                      ) -> Iterator[tuple[list[int], list[bytes], list[float]]]:
        """(chunk ids, int8 vectors, scales) of every chunk embedded with this model, of one
        repository (in no set order) or all (in chunk id order), `size` chunks a block. Read
        the blocks to the end: a store may hold a read open until then."""

    @abstractmethod
    def vectors_of(self, model: str, chunk_ids: Iterable[int]) -> dict[int, tuple[bytes, float]]:
        """chunk id -> (int8 vector, scale) of the given chunks that have one."""

    @abstractmethod
    def put_codes(self, repo_id: int, model: str, mean: bytes,
                  codes: Iterable[tuple[int, bytes]]) -> None:
        """Replace a repository's binary codes for a model ((chunk id, the sign bits of its
        vector minus the repository's mean vector, packed), taken as they come) and that
        mean (float32). Making the codes must not use this store: a store may be writing
        them while it takes the next."""

    @abstractmethod
    def add_codes(self, repo_id: int, model: str, chunk_ids: Sequence[int],
                  codes: Sequence[bytes]) -> None:
        """Add or replace some chunks' codes, taken against the mean the store holds."""

    @abstractmethod
    def copy_codes(self, from_repo: int, repo_id: int, model: str) -> bool:
        """Give `repo_id` the codes of `from_repo`, which holds the same documents, their
        mean and what is left of their allowance (codes_allowance_setting), as one state of
        them. False, and nothing written, unless `from_repo` has a code for each of
        `repo_id`'s chunks and no other."""

    @abstractmethod
    def code_mean(self, repo_id: int, model: str) -> bytes | None:
        """The mean the repository's codes were taken against; None before any."""

    @abstractmethod
    def nearest_codes(self, repo_id: int, model: str, code: bytes, limit: int) -> list[int]:
        """The repository's chunk ids nearest a packed code by Hamming distance, ties by
        chunk id."""

    @abstractmethod
    def vector_count(self, model: str) -> int:
        """How many distinct vectors of this model the index holds (cheap; it grows while
        embedding runs, so it tells a reader when to reload)."""

    @abstractmethod
    def vector_progress(self, model: str) -> tuple[int, int]:
        """(chunks with a vector, all chunks)."""

    # -- the index as a whole --------------------------------------------------------------
    @abstractmethod
    def indexing_lock(self, repository: str, wait_s: float = 0.0) -> AbstractContextManager:
        """Held while indexing `repository`: one indexer at a time (per index folder, or per
        repository on a server); another waits up to `wait_s`, then gets IndexBusyError."""

    @abstractmethod
    def indexing_run(self, tidy: bool = True) -> AbstractContextManager:
        """Around one indexing run's writes: when readers see them (per batch, or all at
        once) and what a failure leaves (the batches committed, or the last run).
        tidy=False: work that keeps the index compact is left to tidy() (a watcher's
        edit, whose catch-up tidies)."""

    def tidy(self, repo_id: int) -> None:
        """Do what indexing runs with tidy=False left. A store whose runs leave nothing
        does nothing."""

    @abstractmethod
    def size_bytes(self) -> int:
        """What the index takes on disk."""

    # -- access tokens (kept across re-indexing: they are not derived data) ---------------
    @abstractmethod
    def put_token(self, token: TokenRecord) -> None: ...

    @abstractmethod
    def tokens(self) -> list[TokenRecord]:
        """Every token, revoked ones included, oldest first."""

    @abstractmethod
    def token_by_hash(self, token_hash: str) -> TokenRecord | None: ...

    # -- taking a repository out -------------------------------------------------------
    def sharing_documents(self, repo_id: int) -> list[str]:
        """The names of the other repositories whose documents this one holds (a server
        family's first repository holds its branches'): it can only go after them."""
        return []

    @abstractmethod
    def remove_repository(self, repo_id: int) -> None:
        """Take a repository out of the index with all only it holds: its files, the
        documents no other repository holds, its graph, binary codes, statistics and
        settings, and the vectors no chunk uses any more. It stops answering at once; an
        interrupted removal leaves it unindexed, to be removed (or indexed) again. The
        caller holds its indexing lock. Ids are never given again."""

    @abstractmethod
    def revoke_token(self, name: str, when: float) -> bool:
        """Revoke the active token of that name; False if there is none."""

    # -- shards (a server store spread over several PostgreSQL servers) ------------------
    def add_shard(self, name: str, url: str) -> None:
        """Add another database server to hold repositories."""
        raise FourfoldError("shards need a PostgreSQL store (--store postgresql://...)")

    def place_repository(self, repo_id: int, shard: str | None) -> int:
        """Move a repository's rows to a shard (None: the coordinator), with its branches
        (they share its documents); rows moved."""
        raise FourfoldError("shards need a PostgreSQL store (--store postgresql://...)")

    def shards(self) -> list[dict]:
        """Each shard: name, location, repositories placed there, whether it answers."""
        return []

    def verify_text_index(self) -> list[str]:
        """Under the indexing lock: the files of a word index kept apart from the database
        that are missing or damaged, the index being made again from the database where
        any is; [] where it is sound (or the store keeps none)."""
        return []

    def text_index_fault(self) -> str | None:
        """Why ranked text answers miss chunks the database holds (a word index kept apart
        from it is missing or not its own), for the next index run to mend; None if they
        do not."""
        return None

    def replica_lag(self) -> float | None:
        """On a read replica, how many seconds its data is behind its primary's (0.0 when
        it has replayed everything it was sent); None on a primary or an embedded index."""
        return None

    def unreachable_repositories(self) -> dict[int, str]:
        """Repositories whose rows are on a server that does not answer now, and why."""
        return {}

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def address(self) -> tuple[str, str]:
        """("sqlite", database path) or ("postgresql", URL): what store.open_store opens
        this store again with, in another process."""
