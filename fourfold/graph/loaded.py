"""A repository's graph as a process holds it to answer graph questions.

The stored edges are kept as columns: numpy arrays of ids, lines, kinds and resolutions,
and each distinct name once. Made into objects, the Linux kernel's 5.8 million edges and
their maps took 7 s to read and 2 GB to hold (docs/benchmarks.md). An edge becomes a
StoredEdge only when an answer lists it. The views that find a symbol's callers and
callees, a file's importers and imports, or calls by their last name are sorted positions,
each made on its first use.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import cached_property

import numpy as np

from ..store.base import EdgeColumns, Resolution, StoredEdge, coded

Node = tuple[str, int]  # ("s", symbol_id) or ("f", file_id) for module-level code
DEPENDENCY_KINDS = ("call", "inherit", "ref")


_QUALIFIER = re.compile(r"\.|::|->|:|#")


def last_name(name: str) -> str:
    """The called name without its receiver or qualifier: `x.y->run` -> `run`."""
    return _QUALIFIER.split(name)[-1]


class _Grouped:
    """Positions of the edges a mask selects, grouped by one integer key; within a key in
    edge order."""

    def __init__(self, keys: np.ndarray, mask: np.ndarray):
        positions = np.flatnonzero(mask)
        order = np.argsort(keys[positions], kind="stable")
        self.positions = positions[order]
        self.keys = keys[self.positions]

    def __call__(self, key: int) -> np.ndarray:
        return self.positions[np.searchsorted(self.keys, key, "left"):
                              np.searchsorted(self.keys, key, "right")]


class LoadedGraph:
    """One repository's edges (or every one's) with its centrality and the paths of its
    files, as they were when the graph was read: files saved since keep the ids the edges
    know until the graph catches up."""

    def __init__(self, generation: tuple, edges: EdgeColumns,
                 ranks: Callable[[], tuple[dict[int, float], dict[int, float]]],
                 paths: dict[int, str]):
        self.generation = generation
        self.kinds, self.kind = edges.kinds, np.asarray(edges.kind, np.int32)
        self.names, self.name_id = edges.names, np.asarray(edges.name, np.int32)
        self.src_file = np.asarray(edges.src_file, np.int64)
        self.src_symbol = np.asarray(edges.src_symbol, np.int64)
        self.dst_file = np.asarray(edges.dst_file, np.int64)
        self.dst_symbol = np.asarray(edges.dst_symbol, np.int64)
        self.line = np.asarray(edges.line, np.int64)
        self.resolution = np.asarray(edges.resolution, np.int8)
        self._read_ranks = ranks
        self.paths = paths

    def __len__(self) -> int:
        return len(self.kind)

    @cached_property
    def _ranks(self) -> tuple[dict[int, float], dict[int, float]]:
        """Centrality, read when an answer first orders by it (the kernel's 1.5 million
        symbol ranks: 0.3 s that a caller question does without)."""
        return self._read_ranks()

    @property
    def symbol_rank(self) -> dict[int, float]:
        return self._ranks[0]

    @property
    def file_rank(self) -> dict[int, float]:
        return self._ranks[1]

    def _is(self, kind: str) -> np.ndarray:
        return self.kind == (self.kinds.index(kind) if kind in self.kinds else -1)

    # -- edges as answers list them ---------------------------------------------------
    def edges(self, positions: np.ndarray) -> list[StoredEdge]:
        return EdgeColumns(
            self.kinds, self.kind[positions], self.src_file[positions],
            self.src_symbol[positions], self.dst_file[positions], self.dst_symbol[positions],
            self.line[positions], self.names, self.name_id[positions],
            self.resolution[positions]).edges()

    def incoming(self, symbol_id: int) -> list[StoredEdge]:
        """Edges into a symbol, resolved at least by name (imports aside)."""
        into = self._into(symbol_id)
        return self.edges(into[self.resolution[into] > Resolution.NONE])

    def outgoing(self, symbol_id: int) -> list[StoredEdge]:
        """Edges out of a symbol, resolved or not (imports aside)."""
        return self.edges(self._outgoing(symbol_id))

    def importers(self, file_id: int) -> list[StoredEdge]:
        """Resolved imports of a file."""
        return self.edges(self._importers(file_id))

    def imports(self, file_id: int) -> list[StoredEdge]:
        """A file's resolved imports."""
        return self.edges(self._imports(file_id))

    def unresolved_calls(self, name: str) -> list[StoredEdge]:
        """Calls no definition was found for whose last name is `name`'s."""
        called, lasts, key = self._last_names
        if last_name(name) not in key:
            return []
        names = called[lasts == key[last_name(name)]].tolist()
        return self.edges(np.sort(np.concatenate([self._unresolved_calls(n) for n in names])))

    def dependents(self, node: Node) -> set[Node]:
        """What depends on a symbol by a call, inheritance or reference resolved beyond its
        name: the symbols (or files, for module-level code) those edges come from, the
        symbol itself left out (a recursive call)."""
        if node[0] != "s":
            return set()
        into = self._into(node[1])
        found = into[self._dependency[into]]
        return {("s", s) if s >= 0 else ("f", f) for s, f in zip(
            self.src_symbol[found].tolist(), self.src_file[found].tolist())} - {node}

    # -- views, each made on first use ------------------------------------------------
    @cached_property
    def _not_import(self) -> np.ndarray:
        return ~self._is("import")

    @cached_property
    def _into(self) -> Callable[[int], np.ndarray]:
        """Edges into a symbol, imports aside, resolved or not."""
        return _Grouped(self.dst_symbol, self._not_import & (self.dst_symbol >= 0))

    @cached_property
    def _outgoing(self) -> Callable[[int], np.ndarray]:
        return _Grouped(self.src_symbol, self._not_import & (self.src_symbol >= 0))

    @cached_property
    def _resolved_imports(self) -> np.ndarray:
        return self._is("import") & (self.dst_file >= 0) & (self.resolution > Resolution.NONE)

    @cached_property
    def _importers(self) -> Callable[[int], np.ndarray]:
        return _Grouped(self.dst_file, self._resolved_imports)

    @cached_property
    def _imports(self) -> Callable[[int], np.ndarray]:
        return _Grouped(self.src_file, self._resolved_imports)

    @cached_property
    def _dependency(self) -> np.ndarray:
        """Calls, inheritance and references resolved beyond the name."""
        kinds = np.zeros(len(self), bool)
        for kind in DEPENDENCY_KINDS:
            kinds |= self._is(kind)
        return kinds & (self.resolution >= Resolution.INFERRED)

    @cached_property
    def _unresolved_calls(self) -> Callable[[int], np.ndarray]:
        return _Grouped(self.name_id, self._is("call") & (self.resolution == Resolution.NONE))

    @cached_property
    def _last_names(self) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
        """The names unresolved calls use (on the kernel 51,112 of 557,510), each one's last
        name as a key, and the keys (arrays and a dict of strings and numbers: a list for
        each would be tens of thousands of objects for the collector to walk)."""
        called = np.unique(self._unresolved_calls.keys)
        lasts, of_name = coded(last_name(self.names[n]) for n in called.tolist())
        return (called, np.frombuffer(of_name, np.int32),
                {last: i for i, last in enumerate(lasts)})
