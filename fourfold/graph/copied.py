"""A repository whose files are another's: a second clone, a worktree at the same commit,
a copy. Its graph is the other's (resolution reads nothing but each file's path, content
and language, parsed by the same parser), so it is copied with this repository's file and
symbol ids instead of resolved again, which takes a big repository minutes.
"""
from __future__ import annotations

import numpy as np

from ..store.base import (EdgeColumns, Store, graph_behind_setting, graph_version_setting,
                          unfinished_setting)
from .build import SYMBOL_FILES, stored_inputs

# path -> (file id, content hash, language)
Files = dict[str, tuple[int, str, str | None]]


def copy_graph(store: Store, repo_id: int) -> bool:
    """Give the repository the graph of another repository of the store that holds the
    same files read by the same parser, with this repository's ids; False where none does
    (nothing is written then)."""
    parser = store.parser_of(repo_id)
    mine = _files(store, repo_id)
    if not mine or parser is None:
        return False
    content = _content(mine)
    # Only repositories on this one's server are asked (a shard that does not answer
    # would fail the run), each first for one file: an index of many repositories lists
    # the files of those that hold it alone.
    repos = store.repos(counts=False)
    shard = next((r.shard for r in repos if r.repo_id == repo_id), None)
    probe = min(mine)
    for other in repos:
        if other.repo_id == repo_id or other.shard != shard or other.removing:
            continue
        state = store.file_states(other.repo_id, [probe]).get(probe)
        if (state is not None and state.hash == content[probe][0]
                and store.parser_of(other.repo_id) == parser
                and _copied(store, repo_id, mine, other.repo_id, content)):
            return True
    return False


def _files(store: Store, repo_id: int) -> Files:
    states = store.file_states(repo_id)
    return {f.path: (f.file_id, states[f.path].hash, f.language)
            for f in store.files(repo_id) if f.path in states}


def _content(files: Files) -> dict[str, tuple[str, str | None]]:
    return {path: (hash_, language) for path, (_, hash_, language) in files.items()}


def _copied(store: Store, repo_id: int, mine: Files, other: int,
            content: dict[str, tuple[str, str | None]]) -> bool:
    """Copy `other`'s graph where it holds `content` and its stored graph was made from
    the very file rows it holds now (each changed file is a new row); False otherwise."""
    version = store.setting(graph_version_setting(other), 0)
    if store.setting(graph_behind_setting(other), 0) or store.setting(
            unfinished_setting(other), 0):
        return False
    theirs = _files(store, other)
    if _content(theirs) != content:
        return False
    inputs = store.graph_inputs(other)
    if {i.path: i.file_id for i in inputs} != {p: f[0] for p, f in theirs.items()}:
        return False  # a graph made before their files changed, or none
    edges = store.edge_columns(other)
    symbol_rank, file_rank = store.centrality(other)
    if store.setting(graph_version_setting(other), 0) != version:
        return False  # its graph was written meanwhile: what was read may not be one graph
    file_of = {theirs[p][0]: mine[p][0] for p in theirs}
    symbol_of = _symbols_moved(store, other, repo_id, theirs, mine)
    if symbol_of is None:
        return False
    new_file, new_symbol = _mapper(file_of), _mapper(symbol_of)
    moved = EdgeColumns(edges.kinds, edges.kind, new_file(edges.src_file),
                        new_symbol(edges.src_symbol), new_file(edges.dst_file),
                        new_symbol(edges.dst_symbol), edges.line, edges.names, edges.name,
                        edges.resolution)
    if any((column < -1).any() for column in (moved.src_file, moved.src_symbol,
                                             moved.dst_file, moved.dst_symbol)):
        return False  # an id of theirs that none of ours stands for (rows gone meanwhile)
    store.replace_graph(
        repo_id, moved,
        {symbol_of[s]: rank for s, rank in symbol_rank.items() if s in symbol_of},
        {file_of[f]: rank for f, rank in file_rank.items() if f in file_of},
        stored_inputs(store, repo_id, {i.path: i.facts for i in inputs}))
    return True


def _symbols_moved(store: Store, other: int, repo_id: int, theirs: Files, mine: Files
                   ) -> dict[int, int] | None:
    """Each symbol id of `other`'s files -> the id of the same definition (path, qualified
    name) in this repository's, the lowest where a name repeats, as a graph names them."""
    ours: dict[tuple[str, str], int] = {}
    for path, qualname, symbol_id in _symbol_keys(store, repo_id, mine):
        if symbol_id < ours.get((path, qualname), symbol_id + 1):
            ours[(path, qualname)] = symbol_id
    moved = {}
    for path, qualname, symbol_id in _symbol_keys(store, other, theirs):
        ours_id = ours.get((path, qualname))
        if ours_id is None:
            return None
        moved[symbol_id] = ours_id
    return moved


def _symbol_keys(store: Store, repo_id: int, files: Files):
    path_of = {file_id: path for path, (file_id, _, _) in files.items()}
    ids = sorted(path_of)
    for start in range(0, len(ids), SYMBOL_FILES):
        for symbol_id, file_id, qualname in store.symbol_keys(repo_id,
                                                               ids[start:start + SYMBOL_FILES]):
            yield path_of[file_id], qualname, symbol_id


def _mapper(moved: dict[int, int]):
    """A function taking an id column to the ids `moved` gives (-1 stays -1, an id it does
    not know becomes -2)."""
    old = np.fromiter(moved, np.int64, len(moved))
    order = np.argsort(old)
    old = np.append(old[order], np.iinfo(np.int64).max)  # searchsorted's past-the-end
    new = np.append(np.fromiter(moved.values(), np.int64, len(moved))[order], -2)

    def apply(column) -> np.ndarray:
        column = np.asarray(column, np.int64)
        at = np.searchsorted(old, column)
        return np.where(column == -1, -1, np.where(old[at] == column, new[at], -2))
    return apply
