"""A repository whose files are another's: a second clone, a worktree at the same commit,
a copy. Its graph is the other's (resolution reads nothing but each file's path, content
and language, parsed by the same parser), so it is copied with this repository's file ids
instead of resolved again, which takes a big repository minutes.

Only a twin whose files are the very documents this repository's are (their symbols and
references are the same rows: every repository of an embedded index, a family on a
server) is copied from: a document parsed apart might have been parsed otherwise (a parse
that ran out of time), and only a graph a whole resolution or a seed by this code made
(graph.seeded; not one patched since, whose ranks were carried over).
"""
from __future__ import annotations

from ..store.base import GraphInput, Store, graph_resolved_by_setting, graph_version_setting
from .inputs import SYMBOL_FILES
from .provenance import takeable

# path -> (file id, content hash, language)
Files = dict[str, tuple[int, str, str | None]]
ABOVE_EVERY_FILE_ID = 2 ** 63 - 1  # files_after lists no file after it, only counts them


def copy_graph(store: Store, repo_id: int) -> int | None:
    """Give the repository the graph of another repository of the store that holds the
    same documents, with this repository's file ids; returns that repository, or None
    where none does (nothing is written then)."""
    parser = store.parser_of(repo_id)
    mine = file_contents(store, repo_id)
    if not mine or parser is None:
        return None
    content = _content(mine)
    # Only repositories on this one's server are asked (a shard that does not answer
    # would fail the run), each first for its number of files and the file written last
    # here (an edit's, which no other repository holds): a server's many repositories
    # and a project's many branches are not each listed whole.
    repos = store.repos(counts=False)
    shard = next((r.shard for r in repos if r.repo_id == repo_id), None)
    probe = max(mine, key=lambda path: mine[path][0])
    for other in repos:
        if other.repo_id == repo_id or other.shard != shard or other.removing:
            continue
        held, _ = store.files_after(other.repo_id, ABOVE_EVERY_FILE_ID)
        if held != len(mine):
            continue
        state = store.file_states(other.repo_id, [probe]).get(probe)
        if (state is not None and state.hash == content[probe][0]
                and store.parser_of(other.repo_id) == parser
                and _copied(store, repo_id, mine, other.repo_id, content)):
            return other.repo_id
    return None


def current_inputs(store: Store, repo_id: int, files: Files) -> list[GraphInput] | None:
    """What the repository's graph read of each file, where it read the very file rows it
    holds now (`files`: file_contents; a changed file is a new row); None otherwise."""
    inputs = store.graph_inputs(repo_id)
    if {i.path: i.file_id for i in inputs} != {p: f[0] for p, f in files.items()}:
        return None  # a graph made before their files changed, or none
    return inputs


def file_contents(store: Store, repo_id: int) -> Files:
    """Each file's id, content hash and language, by path."""
    states = store.file_states(repo_id)
    return {f.path: (f.file_id, states[f.path].hash, f.language)
            for f in store.files(repo_id) if f.path in states}


def _content(files: Files) -> dict[str, tuple[str, str | None]]:
    return {path: (hash_, language) for path, (_, hash_, language) in files.items()}


def _copied(store: Store, repo_id: int, mine: Files, other: int,
            content: dict[str, tuple[str, str | None]]) -> bool:
    """Copy `other`'s graph where it holds `content` as the same documents and its stored
    graph was resolved whole (or seeded) by this code from the very file rows it holds now
    (each changed file is a new row); False otherwise."""
    version = store.setting(graph_version_setting(other), 0)
    made_by = store.setting(graph_resolved_by_setting(other), 0)
    if not takeable(store, other):
        return False
    theirs = file_contents(store, other)
    if _content(theirs) != content:
        return False
    if current_inputs(store, other, theirs) is None:
        return False
    if not _same_symbols(store, other, repo_id, theirs, mine):
        return False
    # false where its graph was written meanwhile (what was read may not be one graph), or
    # an edge's file is none of ours (rows gone meanwhile)
    if not store.copy_graph(other, repo_id, version):
        return False
    store.set_setting(graph_resolved_by_setting(repo_id), made_by)
    return True


def _same_symbols(store: Store, other: int, repo_id: int, theirs: Files, mine: Files) -> bool:
    """Whether each file's symbols are the same rows in both repositories (the same
    documents), read a part of the files at a time: a big repository has millions."""
    paths = sorted(theirs)
    for start in range(0, len(paths), SYMBOL_FILES):
        part = paths[start:start + SYMBOL_FILES]
        my_path = {mine[p][0]: p for p in part}
        their_path = {theirs[p][0]: p for p in part}
        ours = sorted((my_path[file_id], symbol_id) for symbol_id, file_id, _ in
                      store.symbol_keys(repo_id, sorted(my_path)))
        if ours != sorted((their_path[file_id], symbol_id) for symbol_id, file_id, _ in
                          store.symbol_keys(other, sorted(their_path))):
            return False
    return True

