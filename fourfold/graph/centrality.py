"""Centrality (PageRank, degree) and graph walks (callers, callees, impact) over edges.

Pure functions over in-memory arrays / adjacency dicts; the store persists the results.
"""
from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .resolve import Edge


def pagerank(n_nodes: int, src_idx, dst_idx, damping: float = 0.85, tol: float = 1e-6,
             max_iter: int = 200, weights=None) -> np.ndarray:
    """PageRank by power iteration on a sparse matrix.

    Convergence: the L1 norm of the change between two iterates drops below `tol` (an absolute
    tolerance: it is not multiplied by the number of nodes). Dangling nodes (no out-edges)
    spread their rank uniformly. Parallel edges add up (a weight per edge if `weights`).
    Returns an array summing to 1.
    """
    if n_nodes <= 0:
        return np.zeros(0)
    src = np.asarray(src_idx, dtype=np.int64)
    dst = np.asarray(dst_idx, dtype=np.int64)
    w = np.ones(len(src)) if weights is None else np.asarray(weights, dtype=np.float64)
    # A[i, j] = weight of edge j -> i, columns normalised by out-weight
    out_w = np.bincount(src, weights=w, minlength=n_nodes) if len(src) else np.zeros(n_nodes)
    dangling = out_w == 0
    scale = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out_w))
    m = sp.csr_matrix((w * scale[src], (dst, src)), shape=(n_nodes, n_nodes))
    x = np.full(n_nodes, 1.0 / n_nodes)
    teleport = (1.0 - damping) / n_nodes
    for _ in range(max_iter):
        new = damping * (m @ x + x[dangling].sum() / n_nodes) + teleport
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


SymbolKey = tuple[str, str | None]  # (path, qualname); qualname None = module level of the file


def compute_centrality(edges: Iterable[Edge], damping: float = 0.85, tol: float = 1e-6,
                       kinds: tuple[str, ...] = ("call", "inherit", "ref", "import"),
                       ) -> tuple[dict[SymbolKey, Centrality], dict[str, Centrality]]:
    """Symbol-level and file-level centrality from resolved edges.

    Symbol graph: resolved call/inherit/ref edges between (path, qualname) nodes (module-level
    code is the node (path, None)). File graph: every resolved edge between two different files
    (imports and cross-file calls), parallel edges adding weight.
    """
    sym_index: dict[SymbolKey, int] = {}
    file_index: dict[str, int] = {}
    s_src: list[int] = []
    s_dst: list[int] = []
    f_src: list[int] = []
    f_dst: list[int] = []

    def sid(key):
        i = sym_index.get(key)
        if i is None:
            i = sym_index[key] = len(sym_index)
        return i

    def fid(key):
        i = file_index.get(key)
        if i is None:
            i = file_index[key] = len(file_index)
        return i

    for e in edges:
        fid(e.src_path)
        if not e.resolved or e.dst_path is None or e.kind not in kinds:
            continue
        fid(e.dst_path)
        if e.src_path != e.dst_path:
            f_src.append(file_index[e.src_path])
            f_dst.append(file_index[e.dst_path])
        if e.kind != "import" and e.dst_symbol is not None:
            a, b = sid((e.src_path, e.src_symbol)), sid((e.dst_path, e.dst_symbol))
            if a != b:
                s_src.append(a)
                s_dst.append(b)

    def table(index, src, dst):
        n = len(index)
        pr = pagerank(n, src, dst, damping, tol)
        din, dout = degrees(n, src, dst)
        return {k: Centrality(float(pr[i]), int(din[i]), int(dout[i])) for k, i in index.items()}

    return table(sym_index, s_src, s_dst), table(file_index, f_src, f_dst)


# ---------------------------------------------------------------------------------------------
# Adjacency and walks


def adjacency(edges: Iterable[Edge], kinds: tuple[str, ...] = ("call", "inherit", "ref"),
              reverse: bool = False, level: str = "symbol") -> dict[Hashable, set]:
    """node -> neighbours. `reverse=True` maps a definition to its dependents (callers,
    subclasses, importers). Nodes are (path, qualname) at level "symbol", paths at "file"."""
    adj: dict[Hashable, set] = defaultdict(set)
    for e in edges:
        if not e.resolved or e.dst_path is None or e.kind not in kinds:
            continue
        if level == "file":
            a, b = e.src_path, e.dst_path
        else:
            a, b = (e.src_path, e.src_symbol), (e.dst_path, e.dst_symbol)
        if a == b:
            continue
        if reverse:
            adj[b].add(a)
        else:
            adj[a].add(b)
    return adj


def impact(adj: Mapping[Hashable, Iterable], start_nodes: Iterable[Hashable], depth: int = 3,
           limit: int | None = None) -> dict[Hashable, int]:
    """Breadth-first walk: node -> distance (1..depth) from the nearest start node.

    Pass a reverse adjacency to get the blast radius (transitive dependents). Cycle-safe (each
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
        for nb in adj.get(node, ()):
            if nb in seen:
                continue
            seen.add(nb)
            dist[nb] = d + 1
            if limit is not None and len(dist) >= limit:
                return dist
            frontier.append((nb, d + 1))
    return dist


def callers(edges: Iterable[Edge], path: str, qualname: str | None) -> list[Edge]:
    """Resolved call/ref/inherit edges pointing at a definition."""
    return [e for e in edges if e.resolved and e.dst_path == path and e.dst_symbol == qualname
            and e.kind in ("call", "ref", "inherit")]


def callees(edges: Iterable[Edge], path: str, qualname: str | None) -> list[Edge]:
    """Call edges leaving a symbol (resolved and unresolved)."""
    return [e for e in edges if e.kind == "call" and e.src_path == path and e.src_symbol == qualname]


def rank_impact(dist: Mapping[Hashable, int], score: Mapping[Hashable, float] | None = None
                ) -> list[tuple[Hashable, int]]:
    """Order an impact result by distance, then by centrality (highest first)."""
    score = score or {}
    return sorted(dist.items(), key=lambda kv: (kv[1], -score.get(kv[0], 0.0), str(kv[0])))
