"""Centrality (PageRank, degree) over edges, and the impact walk over adjacency maps.

Pure functions over in-memory arrays / adjacency dicts; the store persists the results.
"""
from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

import numpy as np

from ..store.base import EdgeColumns, Resolution
from .facts import Edge


def pagerank(n_nodes: int, src_idx, dst_idx, damping: float = 0.85, tol: float = 1e-6,
             max_iter: int = 200, weights=None) -> np.ndarray:
    """PageRank by power iteration over the edges.

    Convergence: the L1 norm of the change between two iterates drops below `tol` (an absolute
    tolerance: it is not multiplied by the number of nodes). Dangling nodes (no out-edges)
    spread their rank uniformly. Parallel edges add up (a weight per edge if `weights`).
    Returns an array summing to 1.

    Each step sums the edges into their destinations with numpy alone (parallel edges
    merged and sorted by destination once, `add.reduceat` per step): scipy's sparse product
    is faster on millions of edges, but importing it costs an index run 0.13-0.17 s, more
    than ranking a graph of a few hundred thousand edges takes (docs/benchmarks.md,
    "PageRank without scipy").
    """
    if n_nodes <= 0:
        return np.zeros(0)
    src = np.asarray(src_idx, dtype=np.int64)
    dst = np.asarray(dst_idx, dtype=np.int64)
    if len(src) and not (0 <= min(src.min(), dst.min()) and max(src.max(), dst.max())
                         < n_nodes):
        raise ValueError(f"an edge's node is not one of the {n_nodes} nodes")
    w = np.ones(len(src)) if weights is None else np.asarray(weights, dtype=np.float64)
    out_w = np.bincount(src, weights=w, minlength=n_nodes) if len(src) else np.zeros(n_nodes)
    dangling = out_w == 0
    scale = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out_w))
    # parallel edges made one (a call made twice from one function), sorted by destination
    pair, at = np.unique(dst * n_nodes + src, return_inverse=True)
    share = np.bincount(at.ravel(), weights=w * scale[src], minlength=len(pair))
    dst, src = np.divmod(pair, n_nodes)
    # each destination's run of edges: where it starts, and which node it is
    reached, starts = np.unique(dst, return_index=True)
    x = np.full(n_nodes, 1.0 / n_nodes)
    teleport = (1.0 - damping) / n_nodes
    for _ in range(max_iter):
        new = np.full(n_nodes, damping * x[dangling].sum() / n_nodes + teleport)
        if len(reached):
            new[reached] += damping * np.add.reduceat(share * x[src], starts)
        new /= new.sum()
        if np.abs(new - x).sum() < tol:
            return new
        x = new
    return x


def degrees(n_nodes: int, src_idx, dst_idx) -> tuple[np.ndarray, np.ndarray]:
    """(in_degree, out_degree) counting parallel edges."""
    src = np.asarray(src_idx, dtype=np.int64)
    dst = np.asarray(dst_idx, dtype=np.int64)
    return (np.bincount(dst, minlength=n_nodes) if len(dst) else np.zeros(n_nodes, dtype=np.int64),
            np.bincount(src, minlength=n_nodes) if len(src) else np.zeros(n_nodes, dtype=np.int64))


@dataclass(slots=True)
class Centrality:
    pagerank: float
    in_degree: int
    out_degree: int


@dataclass(slots=True)
class IndexedEdges:
    """Edges as columns: files are indexes into `paths`, symbols indexes into `symbols`
    ((path, qualname) pairs), -1 for none, as int32; `kind` an index into `kinds` and
    `resolution` a Resolution per edge, as int8; `name` an index into `names`, as int32.
    Compact to send between processes, and ranked by array operations rather than edge by
    edge."""

    paths: list[str]
    symbols: list[tuple[str, str]]
    kinds: list[str]
    kind: np.ndarray
    src_file: np.ndarray
    src_symbol: np.ndarray
    dst_file: np.ndarray
    dst_symbol: np.ndarray
    line: np.ndarray
    names: list[str]
    name: np.ndarray
    resolution: np.ndarray

    @classmethod
    def of(cls, edges: Iterable[Edge], paths: Iterable[str] = ()) -> "IndexedEdges":
        """`paths`: files to index first (in that order), whether or not edges name them."""
        builder = EdgeBuilder(paths)
        for e in edges:
            builder.add(e)
        return builder.finish()


class EdgeBuilder:
    """IndexedEdges made one edge at a time, numbered as IndexedEdges.of numbers a list:
    files in the order `paths` and then the edges name them, source symbols in edge order,
    then target symbols. An edge costs about 40 bytes here against about 150 as an Edge
    object, and a big repository's graph has millions (the kernel's 5.8 million). Adding
    after finish() is an error."""

    def __init__(self, paths: Iterable[str] = ()):
        self._path_ids = {path: i for i, path in enumerate(paths)}
        self._symbol_ids: dict[tuple[str | None, str], int] = {}
        self._kinds: dict[str, int] = {}
        self._kind = array("b")
        # each distinct name once: a name recurs in thousands of files, and the columns
        # travel pickled to the indexing process
        self._names: dict[str, int] | None = {}
        self._name = array("i")
        self._src_file, self._dst_file = array("i"), array("i")
        self._src_symbol = array("i")
        self._dst_qualname: list[str | None] = []  # numbered once every source symbol is
        self._line = array("i")
        self._resolution = array("b")

    def add(self, e: Edge) -> None:
        ids, symbols = self._path_ids, self._symbol_ids
        self._src_file.append(ids.setdefault(e.src_path, len(ids)))
        self._dst_file.append(-1 if e.dst_path is None else ids.setdefault(e.dst_path, len(ids)))
        self._src_symbol.append(-1 if e.src_symbol is None else
                                symbols.setdefault((e.src_path, e.src_symbol), len(symbols)))
        self._dst_qualname.append(e.dst_symbol)
        kinds = self._kinds
        self._kind.append(kinds.setdefault(e.kind, len(kinds)))
        names = self._names
        self._name.append(names.setdefault(e.name, len(names)))
        self._line.append(e.line)
        self._resolution.append(e.resolution)

    def finish(self) -> IndexedEdges:
        paths = list(self._path_ids)
        symbols = self._symbol_ids
        add = symbols.setdefault
        dst_symbol = np.fromiter(
            (-1 if q is None else add((paths[f] if f >= 0 else None, q), len(symbols))
             for f, q in zip(self._dst_file, self._dst_qualname)),
            np.int32, len(self._dst_qualname))
        names = list(self._names)
        self._dst_qualname, self._names = [], None

        def column(values: array) -> np.ndarray:
            return np.frombuffer(values, dtype=np.int32)  # the builder's buffer, not a copy

        return IndexedEdges(paths, list(symbols), list(self._kinds),
                            np.frombuffer(self._kind, dtype=np.int8), column(self._src_file),
                            column(self._src_symbol), column(self._dst_file), dst_symbol,
                            column(self._line), names, column(self._name),
                            np.frombuffer(self._resolution, dtype=np.int8))


def rank_indexed(g: IndexedEdges, damping: float = 0.85, tol: float = 1e-6,
                 ) -> tuple[dict[int, Centrality], dict[int, Centrality]]:
    """Symbol-level and file-level centrality from resolved edges: those resolved EXACT or
    INFERRED (a guess by name alone would make a popular method name central).

    Symbol graph: resolved call/inherit/ref edges to a symbol, each from the symbol that
    makes it; code at a file's module level is one node, keyed len(g.symbols) + its file
    index (every other key is a symbol index), and a symbol's use of itself is no edge.
    File graph: every file an edge leaves and every file a resolved edge reaches,
    with an edge for each resolved edge between two different files (parallel edges adding
    weight)."""
    imports = g.kinds.index("import") if "import" in g.kinds else -1
    return _rank_edges(g.kind == imports, g.resolution, g.src_file, g.src_symbol, g.dst_file,
                       g.dst_symbol, len(g.symbols), damping, tol)


def rank_stored(edges: EdgeColumns) -> tuple[dict[int, float], dict[int, float]]:
    """(symbol id -> rank, file id -> rank) of a stored graph's edges, as a whole resolution
    ranks them (rank_indexed, scaled as the store keeps ranks: PageRank × node count, 1.0
    = an average node)."""
    imports = edges.kinds.index("import") if "import" in edges.kinds else -1
    src_symbol = np.asarray(edges.src_symbol, np.int64)
    dst_symbol = np.asarray(edges.dst_symbol, np.int64)
    # module-level code's node keys come after every symbol id
    n_symbols = int(max(src_symbol.max(initial=-1), dst_symbol.max(initial=-1))) + 1
    symbols, files = _rank_edges(np.asarray(edges.kind) == imports,
                                 np.asarray(edges.resolution), np.asarray(edges.src_file,
                                                                          np.int64),
                                 src_symbol, np.asarray(edges.dst_file, np.int64), dst_symbol,
                                 n_symbols)
    return scaled(symbols, n_symbols), scaled(files)


def scaled(ranks: dict[int, Centrality], below: int | None = None) -> dict[int, float]:
    """Ranks as the store keeps them, PageRank × node count (1.0 = an average node), of the
    keys below `below` where given (the others: module-level code, no symbol)."""
    n = max(len(ranks), 1)
    return {k: c.pagerank * n for k, c in ranks.items() if below is None or k < below}


def _rank_edges(imports: np.ndarray, resolution: np.ndarray, src_file: np.ndarray,
                src_symbol: np.ndarray, dst_file: np.ndarray, dst_symbol: np.ndarray,
                n_symbols: int, damping: float = 0.85, tol: float = 1e-6,
                ) -> tuple[dict[int, Centrality], dict[int, Centrality]]:
    linked = (resolution >= Resolution.INFERRED) & (dst_file >= 0)
    to_symbol = linked & (dst_symbol >= 0) & ~imports
    src = np.where(src_symbol >= 0, src_symbol, n_symbols + src_file)[to_symbol]
    dst = dst_symbol[to_symbol]
    loop = src == dst  # a recursive call: its symbol is a node, the call no edge
    symbols = _ranked(np.concatenate([src, dst]), src[~loop], dst[~loop], damping, tol)
    between = linked & (src_file != dst_file)
    files = _ranked(np.concatenate([src_file, dst_file[linked]]), src_file[between],
                    dst_file[between], damping, tol)
    return symbols, files


def _ranked(nodes: np.ndarray, src: np.ndarray, dst: np.ndarray, damping: float, tol: float
            ) -> dict[int, Centrality]:
    keys = np.unique(nodes)
    a, b = np.searchsorted(keys, src), np.searchsorted(keys, dst)
    n = len(keys)
    pr = pagerank(n, a, b, damping, tol)
    din, dout = degrees(n, a, b)
    return {int(k): Centrality(float(pr[i]), int(din[i]), int(dout[i]))
            for i, k in enumerate(keys.tolist())}


# ---------------------------------------------------------------------------------------------
# Walks


def impact(neighbours: Callable[[Hashable], Iterable[Hashable]], start_nodes: Iterable[Hashable],
           depth: int = 3, limit: int | None = None) -> dict[Hashable, int]:
    """Breadth-first walk: node -> distance (1..depth) from the nearest start node.

    Pass a node's dependents as its neighbours to get the blast radius. Cycle-safe (each
    node is visited once); `limit` bounds the number of nodes returned (nearest first).
    Start nodes are never in the result (a node's own impact does not include itself).
    """
    starts = set(start_nodes)
    dist: dict[Hashable, int] = {}
    frontier = deque((n, 0) for n in starts)
    seen = set(starts)
    while frontier:
        node, d = frontier.popleft()
        if d >= depth:
            continue
        for nb in neighbours(node):
            if nb in seen:
                continue
            seen.add(nb)
            dist[nb] = d + 1
            if limit is not None and len(dist) >= limit:
                return dist
            frontier.append((nb, d + 1))
    return dist
