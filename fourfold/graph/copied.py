"""A repository whose files are another's: a second clone, a worktree at the same commit,
a copy. Its graph is the other's (resolution reads nothing but each file's path, content
and language, parsed by the same parser), so it is copied with this repository's file and
symbol ids instead of resolved again, which takes a big repository minutes.
"""
from __future__ import annotations

from array import array

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
    paths = sorted(theirs)
    new_file = _mapper(np.array([theirs[p][0] for p in paths], np.int64),
                       np.array([mine[p][0] for p in paths], np.int64))
    symbols = _symbols_moved(store, other, repo_id, paths, theirs, mine)
    if symbols is None:
        return False
    new_symbol = _mapper(*symbols)
    moved = EdgeColumns(edges.kinds, edges.kind, new_file(edges.src_file),
                        new_symbol(edges.src_symbol), new_file(edges.dst_file),
                        new_symbol(edges.dst_symbol), edges.line, edges.names, edges.name,
                        edges.resolution)
    if any((column < -1).any() for column in (moved.src_file, moved.src_symbol,
                                             moved.dst_file, moved.dst_symbol)):
        return False  # an id of theirs that none of ours stands for (rows gone meanwhile)
    store.replace_graph(repo_id, moved, _ranks_moved(symbol_rank, new_symbol),
                        _ranks_moved(file_rank, new_file),
                        stored_inputs(store, repo_id, {i.path: i.facts for i in inputs}))
    return True


def _symbols_moved(store: Store, other: int, repo_id: int, paths: list[str], theirs: Files,
                   mine: Files) -> tuple[np.ndarray, np.ndarray] | None:
    """(the symbol ids of `other`'s files, the ids of the same definitions (path, qualified
    name) in this repository's, the lowest where a name repeats, as a graph names them);
    None where one of theirs is not among ours. Read a part of the files at a time: a big
    repository has millions."""
    old, new = array("q"), array("q")
    for start in range(0, len(paths), SYMBOL_FILES):
        part = paths[start:start + SYMBOL_FILES]
        my_path = {mine[p][0]: p for p in part}
        their_path = {theirs[p][0]: p for p in part}
        ours: dict[tuple[str, str], int] = {}
        for symbol_id, file_id, qualname in store.symbol_keys(repo_id, sorted(my_path)):
            key = (my_path[file_id], qualname)
            if symbol_id < ours.get(key, symbol_id + 1):
                ours[key] = symbol_id
        for symbol_id, file_id, qualname in store.symbol_keys(other, sorted(their_path)):
            ours_id = ours.get((their_path[file_id], qualname))
            if ours_id is None:
                return None
            old.append(symbol_id)
            new.append(ours_id)
    return np.frombuffer(old, np.int64), np.frombuffer(new, np.int64)


def _ranks_moved(ranks: dict[int, float], moved) -> dict[int, float]:
    ids = moved(np.fromiter(ranks, np.int64, len(ranks)))
    return {int(i): rank for i, rank in zip(ids.tolist(), ranks.values()) if i >= 0}


def _mapper(old: np.ndarray, new: np.ndarray):
    """A function taking an id column to the ids `new` holds where `old` holds theirs (-1
    stays -1, an id `old` lacks becomes -2)."""
    order = np.argsort(old)
    old = np.append(old[order], np.iinfo(np.int64).max)  # searchsorted's past-the-end
    new = np.append(new[order], -2)

    def apply(column) -> np.ndarray:
        column = np.asarray(column, np.int64)
        at = np.searchsorted(old, column)
        return np.where(column == -1, -1, np.where(old[at] == column, new[at], -2))
    return apply
