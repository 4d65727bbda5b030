"""Bring a stored graph up to date with the files by resolving again only the edges that
can have changed, where that gives the graph a whole resolution would. A big repository's
whole graph takes minutes to resolve again after a one-line edit; a patch reads what the
graph read of each file (fourfold.graph.inputs) instead of every symbol and reference the
store holds, resolves the changed files' edges, and those of the files that name a name
whose meaning changed (fourfold.graph.affected: a definition added, removed or renamed, an
import, base or binding changed), and keeps every other file's edges.

A file added or taken away changes the meaning of its definitions' names and of its own
(as a module or package: its importers spell it). A change whose reach is not a set of
names is resolved whole. Centrality is carried over, not ranked again: each definition of a
changed file keeps its rank under its new id, one gone loses its own, a new one gets the
lowest the repository's hold, and ranks are made anew by the next whole resolution.
"""
from __future__ import annotations

import struct
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ..model import Reference
from ..store.base import (EdgeColumns, GraphInput, GraphPatch, Resolution, Store, coded,
                          graph_resolved_by_setting, used_only)
from ..store.base import decode_references, decompress_references
from .affected import changed_names, closure, module_names, naming
from .build import rebuild_graph, renamed_ids, stored_facts
from .copied import copy_graph
from .facts import USE_KINDS, Definition, Edge, FileFacts
from .inputs import (SYMBOL_FILES, GraphFacts, decode_input, decode_symbols, encode_input,
                     same_input)
from .resolve import resolve_into

# every file's facts by path, the extra files' texts, the changed files' new inputs, the
# names whose meaning changed
ReadFacts = tuple[dict[str, FileFacts], dict[str, str], dict[str, bytes], set[str]]
# A patch resolving more than this share of the files is left to a whole resolution, which
# an index run makes in a child process beside its other work (a cost bound, set by hand).
MOST_RESOLVED = 0.5


def update_graph(store: Store, repo_id: int, parallel: bool = True) -> None:
    """Patch the repository's stored graph, else copy that of another repository holding
    the same files, else patch that of one holding most of them, else resolve it whole."""
    from .seeded import seed_graph  # it builds on this module
    if not (patch_graph(store, repo_id) or copy_graph(store, repo_id) is not None
            or seed_graph(store, repo_id)):
        rebuild_graph(store, repo_id, parallel)


def patch_graph(store: Store, repo_id: int) -> bool:
    """Patch the stored graph to the files the store holds; False where a patch would not
    give what a whole resolution gives, or would cost about as much (nothing is written
    then)."""
    inputs = {i.path: i for i in store.graph_inputs(repo_id)}
    if not inputs:
        return False
    done = patched(store, repo_id, inputs, lambda: store.edge_columns(repo_id))
    if done is None:
        return False
    if done.edges is not None:
        # first: a patch that stops halfway leaves no mark of a whole resolution
        store.set_setting(graph_resolved_by_setting(repo_id), 0)
        store.patch_graph(repo_id, done)
    return True


def patched(store: Store, repo_id: int, inputs: dict[str, GraphInput],
            edges_of: Callable[[], EdgeColumns], most: float = MOST_RESOLVED
            ) -> GraphPatch | None:
    """The patch that brings a graph to the repository's files: the graph that read
    `inputs` and whose edges `edges_of()` reads (only once a patch looks possible: a big
    repository has millions). Its ids are this repository's where a file is the same row,
    another's (a changed or removed file's row before, and its definitions') where not.
    None where a patch would not give what a whole resolution gives, or would cost about
    as much (more than the share `most` of the files to resolve again); a patch without
    edges where no file changed. fourfold.graph.seeded patches another snapshot's graph
    with it."""
    stored = store.files(repo_id)
    files = {f.path: f.file_id for f in stored}
    # changed: a file of the same path with a new id, or added; removed: the graph's alone
    changed = sorted(p for p, file_id in files.items()
                     if p not in inputs or file_id != inputs[p].file_id)
    removed = sorted(inputs.keys() - files.keys())
    if not changed and not removed:
        return GraphPatch(None, {}, {}, [])
    if len(changed) + len(removed) > most * len(files):
        return None
    written = set(changed)
    read = _facts_unless_changed(inputs, sorted(files), removed, stored_facts(
        store, repo_id, only=[f for f in stored if f.path in written]))
    if read is None:
        return None
    facts, extra, new_inputs, names = read
    resolved = set(written)
    if names:
        names = closure(names, facts.values())
        if names is None:
            return None
        resolved |= _naming_files(store, repo_id, names, resolved)
        if len(resolved) > most * len(files):
            return None
        more = stored_facts(store, repo_id, only=[f for f in stored
                                                  if f.path in resolved - written])
        for path, (language, symbols, encoded) in more.files.items():
            facts[path] = FileFacts(language, decode_symbols(symbols),
                                    decode_references(decompress_references(encoded)))
    edges: list[Edge] = []
    resolve_into(edges.append, facts, extra or None, parallel=False, only=resolved)
    old_symbols = {p: decode_input(inputs[p].facts, {})[0].symbols
                   for p in changed if p in inputs}
    now_symbols = {p: facts[p].symbols for p in changed}
    del facts, read

    # the new symbol ids of the changed files, in their order, and every id the new edges name
    named = sorted({files[p] for p in resolved}
                   | {files[e.dst_path] for e in edges if e.dst_path is not None})
    now_ids: dict[int, list[int]] = {files[p]: [] for p in changed}
    lowest: dict[tuple[int, str], int] = {}  # (file id, qualname) -> its lowest symbol id
    for start in range(0, len(named), SYMBOL_FILES):
        for symbol_id, file_id, qualname in sorted(store.symbol_keys(
                repo_id, named[start:start + SYMBOL_FILES])):
            lowest.setdefault((file_id, qualname), symbol_id)
            if file_id in now_ids:
                now_ids[file_id].append(symbol_id)
    moved_files = {inputs[p].file_id: files[p] for p in changed if p in inputs}
    gone_files = {inputs[p].file_id: p for p in removed}
    moved_symbols: dict[int, int] = {}  # a definition's id before -> now (ranks carry over)
    targets: dict[int, int] = {}  # an edge's target before -> now: the lowest of its qualname
    dropped: list[int] = []
    for p in removed:
        dropped += np.frombuffer(inputs[p].symbol_ids, ">i8").tolist()
    for p in changed:
        before = (np.frombuffer(inputs[p].symbol_ids, ">i8").tolist() if p in inputs
                  else [])
        now = now_symbols[p]
        if (len(before) != len(old_symbols.get(p, ()))
                or len(now_ids[files[p]]) != len(now)):
            return None  # the store read its symbols otherwise than the graph did
        now_of = dict(zip(_definition_keys(now), now_ids[files[p]]))
        for old_id, key in zip(before, _definition_keys(old_symbols.get(p, []))):
            if key in now_of:
                moved_symbols[old_id] = now_of[key]
            else:
                dropped.append(old_id)
            target = lowest.get((files[p], key[0]))
            if target is not None:
                targets[old_id] = target

    old = edges_of()
    gone = np.fromiter(moved_files.keys() | gone_files.keys() | {files[p] for p in resolved},
                       np.int64)
    keep = ~np.isin(old.src_file, gone)
    if np.isin(old.dst_file[keep], np.fromiter(gone_files, np.int64)).any():
        return None  # an edge kept leads into a file that is no more
    kept_targets = old.dst_symbol[keep]
    into_changed = np.isin(old.dst_file[keep], np.fromiter(moved_files, np.int64)) & (
        kept_targets >= 0)
    if not np.isin(kept_targets[into_changed], np.fromiter(targets, np.int64)).all():
        return None  # an edge kept leads to a definition that is no more
    dst_file = _ints(-1 if e.dst_path is None else files[e.dst_path] for e in edges)
    new = EdgeColumns(
        *_coded_after(old.kinds, old.kind[keep], [e.kind for e in edges]),
        np.concatenate([old.src_file[keep], _ints(files[e.src_path] for e in edges)]),
        np.concatenate([old.src_symbol[keep], _ints(
            -1 if e.src_symbol is None else lowest.get((files[e.src_path], e.src_symbol), -1)
            for e in edges)]),
        np.concatenate([renamed_ids(old.dst_file[keep], moved_files), dst_file]),
        np.concatenate([renamed_ids(kept_targets, targets), _ints(
            -1 if e.dst_symbol is None or e.dst_path is None
            else lowest.get((files[e.dst_path], e.dst_symbol), -1) for e in edges)]),
        np.concatenate([old.line[keep], _ints(e.line for e in edges)]),
        *_coded_after(old.names, old.name[keep], [e.name for e in edges]),
        np.concatenate([old.resolution[keep], np.where(
            dst_file >= 0, _ints(e.resolution for e in edges), Resolution.NONE).astype(np.int8)]))
    return GraphPatch(new, moved_files, moved_symbols, [
        GraphInput(p, files[p], np.array(now_ids[files[p]], ">i8").tobytes(), new_inputs[p])
        for p in changed], dropped, gone_files, [files[p] for p in changed if p not in inputs],
        sorted(set().union(*now_ids.values()) - set(moved_symbols.values())))


def _definition_keys(symbols: list[Definition]) -> list[tuple[str, str, int]]:
    """Each definition's qualified name and kind, and how many before it in the file have
    both: a definition before a change and after it are the same where these are."""
    seen: Counter = Counter()
    keys = []
    for s in symbols:
        seen[(s.qualname, s.kind)] += 1
        keys.append((s.qualname, s.kind, seen[(s.qualname, s.kind)]))
    return keys


def _naming_files(store: Store, repo_id: int, names: set[str], skip: set[str]) -> set[str]:
    """The files but `skip` whose references spell one of the names."""
    search = naming(names)
    return {path for path, refs in store.raw_references(repo_id)
            if path not in skip and search.search(decompress_references(refs))}


def _coded_after(distinct: list[str], kept: np.ndarray, more: list[str]
                 ) -> tuple[list[str], np.ndarray]:
    """The kept edges' positions among `distinct` followed by `more` coded among them, the
    values no edge names any longer left out."""
    distinct, added = coded(more, distinct)
    return used_only(distinct, np.concatenate([kept, np.frombuffer(added, np.int32)]))


def _facts_unless_changed(inputs: dict[str, GraphInput], paths: list[str], removed: list[str],
                          now: GraphFacts) -> ReadFacts | None:
    """Every file's facts, in a whole resolution's order: those in `now` (changed or added)
    as the store holds them, the others as the graph read them; with the extra files'
    texts, the inputs of the files in `now`, and the names whose meaning their changes and
    the `removed` files change (affected). None where a change cannot be told by name, or
    where a stored input does not decode (damaged, or of another format)."""
    facts: dict[str, FileFacts] = {}
    extra: dict[str, str] = {}
    new_inputs: dict[str, bytes] = {}
    references: dict[str, list[Reference]] = {}
    names: set[str] = set()
    same: dict[str, str] = {}
    added_or_removed: list[tuple[str, FileFacts, str | None]] = []
    try:
        # the changed files compared first: where one cannot be told by name, nothing else
        # is decoded
        for path, (language, symbols, encoded) in now.files.items():
            references[path] = decode_references(decompress_references(encoded))
            new_inputs[path] = encode_input(language, symbols, (
                r for r in references[path] if r.kind not in USE_KINDS), now.extra.get(path))
            if path in inputs and same_input(new_inputs[path], inputs[path].facts):
                continue
            after, text_after = decode_input(new_inputs[path], {})
            if path not in inputs:
                added_or_removed.append((path, after, text_after))
                continue
            before, text_before = decode_input(inputs[path].facts, {})
            found = changed_names(before, after, text_before == text_after)
            if found is None:
                return None
            names |= found
        added_or_removed += [(path, *decode_input(inputs[path].facts, {})) for path in removed]
        for path in paths:
            if path in now.files:
                language, symbols, _ = now.files[path]
                facts[path] = FileFacts(language, decode_symbols(symbols, same),
                                        references[path])
                text = now.extra.get(path)
            else:
                facts[path], text = decode_input(inputs[path].facts, same)
            if text is not None:
                extra[path] = text
        folders = {path[:end] for path in [*paths, *removed]
                   for end in _slashes(path)} if added_or_removed else set()
        for path, file_facts, text in added_or_removed:
            found = _added_or_removed(path, file_facts, text, extra, folders)
            if found is None:
                return None
            names |= found
    except (zlib.error, struct.error, ValueError, TypeError):
        return None
    return facts, extra, new_inputs, names


def _added_or_removed(path: str, facts: FileFacts, extra_text: str | None,
                      extra: dict[str, str], folders: set[str]) -> set[str] | None:
    """The names whose meaning a file added or taken away changes: its module's, its
    definitions', and those its bases and bindings give a meaning to. What it imports is
    seen elsewhere only through an import of it, which spells its module's name."""
    found = changed_names(FileFacts(facts.language), replace(facts, references=[
        r for r in facts.references if r.kind != "import"]), extra_text is None)
    module = module_names(path, facts.language, extra, folders)
    return None if found is None or module is None else found | module


def _slashes(path: str) -> list[int]:
    """Where each folder of the path ends."""
    return [at for at, char in enumerate(path) if char == "/"]


def _ints(values) -> np.ndarray:
    return np.fromiter(values, np.int64)
