"""Another snapshot of a repository the index holds: a later commit checked out apart, a
branch's worktree. Most of its files are documents another repository holds, whose graph
read each of them as this one would, so that graph is taken as this repository's graph
before the files that differ, and patched to them (fourfold.graph.patch) instead of
resolving every file again. Its ranks are made anew from the patched edges, as a whole
resolution ranks them (graph_resolved_by_setting says so: a twin copies them, another
snapshot may start from them).

The other repository is the one on this repository's server sharing the most files with
it (each asked first about a sample of the paths: a server holds many), whose stored graph
a whole resolution by this code made, or a seed by this code (not one patched since, whose
edges older code may have resolved), and is up to date with its files. A file is the same
only where it is the very same document (its definitions are the same rows); any other
file counts as changed.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..errors import IndexDamagedError
from ..store.base import (EdgeColumns, GraphInput, Store, graph_resolved_by_setting,
                          graph_version_setting)
from .build import packed_symbol_ids, renamed_ids
from .centrality import rank_stored
from .copied import Files, current_inputs, file_contents
from .patch import patched
from .provenance import resolver_version, takeable

SAMPLE = 64  # paths each other repository is asked about before one is read whole
# A patch resolving more than this share of the files is left to a whole resolution, which
# an index run makes in a child process beside its other work (a cost bound, set by hand).
MOST_RESOLVED = 0.1


def seed_graph(store: Store, repo_id: int) -> bool:
    """Give the repository the graph of the repository most like it, patched to its
    files; False where none shares most of its files or the patch is not possible
    (nothing is written then)."""
    parser = store.parser_of(repo_id)
    mine = file_contents(store, repo_id)
    if not mine or parser is None:
        return False
    other = _likest(store, repo_id, mine, parser)
    return other is not None and _seeded(store, repo_id, mine, other)


def _likest(store: Store, repo_id: int, mine: Files, parser: str) -> int | None:
    """The repository whose sampled files are most often this one's, if most are."""
    paths = sorted(mine)
    sample = paths[::max(1, len(paths) // SAMPLE)]
    repos = store.repos(counts=False)
    shard = next((r.shard for r in repos if r.repo_id == repo_id), None)
    alike: list[tuple[int, int]] = []  # (files of the sample that are the same, repository)
    for other in repos:
        if (other.repo_id == repo_id or other.shard != shard or other.removing
                or store.parser_of(other.repo_id) != parser or not takeable(store, other.repo_id)):
            continue
        states = store.file_states(other.repo_id, sample)
        same = sum(1 for p in sample if p in states and states[p].hash == mine[p][1])
        if same >= (1 - MOST_RESOLVED) * len(sample):
            alike.append((same, other.repo_id))
    return max(alike)[1] if alike else None  # a tie: the later repository


def only_files(src_file: np.ndarray, dst_file: np.ndarray, ids: Iterable[int]) -> bool:
    """Whether every edge leaves, and leads (where it leads to a file) into, one of the
    files `ids`."""
    ours = np.fromiter(ids, np.int64)
    return bool(np.isin(src_file, ours).all() and np.isin(dst_file[dst_file >= 0], ours).all())


def _seeded(store: Store, repo_id: int, mine: Files, other: int) -> bool:
    """Write `other`'s graph patched to this repository's files; False where it cannot be
    (nothing is written then)."""
    version = store.setting(graph_version_setting(other), 0)
    theirs = file_contents(store, other)
    inputs = current_inputs(store, other, theirs)
    if inputs is None:
        return False
    # a file of theirs is one of ours where it is the same document: the same content and
    # language, and the same definition rows (a document's are shared by its files)
    my_ids = packed_symbol_ids(store, repo_id)
    file_of = {}
    for i in inputs:
        m = mine.get(i.path)
        if (m is not None and m[1:] == theirs[i.path][1:]
                and my_ids.get(m[0], b"") == i.symbol_ids):
            file_of[i.file_id] = m[0]
    base = {i.path: GraphInput(i.path, file_of.get(i.file_id, i.file_id), i.symbol_ids,
                               i.facts) for i in inputs}

    def edges_of() -> EdgeColumns:  # theirs, with our ids for the files that are ours
        edges = store.edge_columns(other)
        return EdgeColumns(edges.kinds, edges.kind, renamed_ids(edges.src_file, file_of),
                           edges.src_symbol, renamed_ids(edges.dst_file, file_of),
                           edges.dst_symbol, edges.line, edges.names, edges.name,
                           edges.resolution)

    try:
        patch = patched(store, repo_id, base, edges_of, MOST_RESOLVED)
        if patch is None:
            return False
        edges = patch.edges if patch.edges is not None else edges_of()
    except IndexDamagedError:  # its stored edges: this repository's graph is resolved
        return False
    if store.setting(graph_version_setting(other), 0) != version:
        return False  # written meanwhile: what was read may not be one graph
    if not only_files(np.asarray(edges.src_file), np.asarray(edges.dst_file),
                      (f[0] for f in mine.values())):
        return False  # an edge of a file none of ours stands for
    now = {i.path: i for i in patch.inputs}
    kept = [i for path, i in base.items() if path in mine and path not in now]
    symbol_rank, file_rank = rank_stored(edges)
    # first: a write that stops halfway leaves no mark
    store.set_setting(graph_resolved_by_setting(repo_id), 0)
    store.replace_graph(repo_id, edges, symbol_rank, file_rank, kept + list(now.values()))
    store.set_setting(graph_resolved_by_setting(repo_id), -resolver_version())  # ranked here
    return True
