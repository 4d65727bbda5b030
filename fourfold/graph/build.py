"""A repository's graph in the store: gather the facts, resolve them into edges, rank, and
write edges, centrality and what was read of each file (fourfold.graph.inputs, from which
fourfold.graph.patch patches the graph after an edit of calls alone).

`rebuild_graph` does it all in this process from what the store holds. The indexer instead
resolves in a forked child (`start_resolving`) from the facts its parse kept, once every
parsed file is written (so they answer text and structure queries meanwhile), and writes
the graph (`store_graph`): the child's memory goes back to the system when it ends.
"""
from __future__ import annotations

import ctypes
import sys
from collections.abc import Container, Iterable
from dataclasses import dataclass

import numpy as np

from ..model import Symbol
from ..store.base import (NO_REFERENCES, EdgeColumns, GraphInput, Resolution, Store,
                          StoredFile, decode_references, decompress_references,
                          graph_resolved_by_setting, used_only)
from .centrality import EdgeBuilder, IndexedEdges, rank_indexed, scaled
from .facts import USE_KINDS, FileFacts
from .forked import Forked
from .inputs import SYMBOL_FILES, GraphFacts, decode_symbols, encode_input, is_extra_file
from .provenance import resolver_version
from .resolve import resolve_into

@dataclass(slots=True)
class ResolvedGraph:
    """Edges, and centrality by the same indexes (see rank_indexed): PageRank × node
    count, 1.0 = an average node. The store's ids are put in last, by store_graph."""

    edges: IndexedEdges
    symbol_rank: dict[int, float]
    file_rank: dict[int, float]
    inputs: dict[str, bytes]  # path -> what the graph read of the file (graph.inputs)


def stored_facts(store: Store, repo_id: int, facts: GraphFacts | None = None,
                 skip: Container[str] = (), only: Iterable[StoredFile] | None = None
                 ) -> GraphFacts:
    """Add to `facts` the stored files of the repository (only these, a few hundred at
    most, where given), those in `skip` left out."""
    facts = facts or GraphFacts()
    files = {f.path: f for f in (store.files(repo_id) if only is None else only)
             if f.path not in skip}
    paths = None if only is None else list(files)
    symbols: dict[str, list[Symbol]] = {p: [] for p in files}
    for _, path, name, qualname, kind, parent in store.graph_symbols(repo_id, paths):
        if path in symbols:
            symbols[path].append(Symbol(name, qualname, kind, 0, 0, parent=parent))
    references = dict(store.raw_references(repo_id, paths))
    for path, f in files.items():
        facts.add(path, f.language, symbols[path], references.get(path, NO_REFERENCES),
                  store.content(f.file_id) if is_extra_file(path) else None)
    return facts


def resolve_and_rank(facts: GraphFacts, parallel: bool = True) -> ResolvedGraph:
    """The graph of `facts`, which it empties as it reads them (their symbols are made
    objects, and a big repository's are held at once)."""
    # by path: where a name is ambiguous, the answer must not depend on where facts came from
    files: dict[str, FileFacts] = {}
    inputs: dict[str, bytes] = {}
    names: dict[str, str] = {}  # one string object per name across files, too
    for path in sorted(facts.files):
        language, symbols, encoded = facts.files.pop(path)
        references = decode_references(decompress_references(encoded))
        others = [r for r in references if r.kind not in USE_KINDS]
        inputs[path] = encode_input(language, symbols, others, facts.extra.get(path))
        files[path] = FileFacts(language, decode_symbols(symbols, names), others, encoded,
                                len(references) - len(others))
    del names
    builder = EdgeBuilder(files)
    resolve_into(builder.add, files, extra_files=facts.extra or None, parallel=parallel)
    edges = builder.finish()
    del files, builder  # the facts as resolution read them: ranking's arrays take their place
    release_freed_memory()
    symbol_scores, file_scores = rank_indexed(edges)
    return ResolvedGraph(edges, scaled(symbol_scores, len(edges.symbols)), scaled(file_scores),
                         inputs)


def start_resolving(facts: GraphFacts) -> Forked | None:
    """Resolve and rank in a forked child; None where no child can be had. Its `result()`
    is the ResolvedGraph, or None if the child died. Once the child has them, `facts` are
    emptied here: the child holds its copy for the minutes a big repository's resolution
    takes, and two copies were most of the indexing run's peak memory."""
    release_freed_memory()  # what the child would otherwise hold a copy of
    child = Forked.start(resolve_and_rank, facts)
    if child is not None:
        facts.files.clear()
        facts.extra.clear()
        release_freed_memory()
    return child


def release_freed_memory() -> None:
    """Hand memory freed in bulk back to the system: glibc's allocator keeps it for this
    process otherwise (about a third of a big repository's facts, measured)."""
    if sys.platform == "linux":
        try:
            ctypes.CDLL(None).malloc_trim(0)
        except (OSError, AttributeError):  # not glibc
            pass


def store_graph(store: Store, repo_id: int, graph: ResolvedGraph) -> int:
    """Write edges and centrality, with the store's ids for paths and qualnames; returns
    the number of edges. Runs after the files are written."""
    g = graph.edges
    file_ids = {f.path: f.file_id for f in store.files(repo_id)}
    # index -1 (none) takes the last entry: -1 again
    file_id = np.array([file_ids.get(p, -1) for p in g.paths] + [-1], np.int64)
    symbol_id = np.full(len(g.symbols) + 1, -1, np.int64)
    # (file id, qualname) -> the symbol's index; a key's id is its lowest stored one
    wanted: dict[tuple[int, str], int] = {}
    for i, (path, qualname) in enumerate(g.symbols):
        if path in file_ids:
            wanted[(file_ids[path], qualname)] = i
    files = sorted({file for file, _ in wanted})
    for start in range(0, len(files), SYMBOL_FILES):
        for stored_id, stored_file, qualname in store.symbol_keys(
                repo_id, files[start:start + SYMBOL_FILES]):
            i = wanted.get((stored_file, qualname))
            if i is not None and (symbol_id[i] < 0 or stored_id < symbol_id[i]):
                symbol_id[i] = stored_id
    del wanted, files, file_ids  # a big repository's: freed before the columns are packed
    src_file, dst_file = file_id[g.src_file], file_id[g.dst_file]
    keep = src_file >= 0  # an edge from a file the store does not hold is dropped
    edges = EdgeColumns(*used_only(g.kinds, g.kind[keep]), src_file[keep],
                        symbol_id[g.src_symbol][keep], dst_file[keep],
                        symbol_id[g.dst_symbol][keep], g.line[keep],
                        *used_only(g.names, g.name[keep]),
                        np.where(dst_file >= 0, g.resolution, Resolution.NONE)[keep])
    symbol_rank = {int(symbol_id[i]): rank for i, rank in graph.symbol_rank.items()
                   if symbol_id[i] >= 0}
    file_rank = {int(file_id[i]): rank for i, rank in graph.file_rank.items() if file_id[i] >= 0}
    del file_id, symbol_id
    store.replace_graph(repo_id, edges, symbol_rank, file_rank, stored_inputs(store, repo_id,
                                                                              graph.inputs))
    store.set_setting(graph_resolved_by_setting(repo_id), resolver_version())
    return len(edges)


def renamed_ids(ids: np.ndarray, names: dict[int, int]) -> np.ndarray:
    """`ids` with each found in `names` replaced by its value there."""
    if not names or not len(ids):
        return ids
    keys = np.fromiter(names, np.int64, len(names))
    values = np.fromiter(names.values(), np.int64, len(names))
    order = np.argsort(keys)
    keys, values = keys[order], values[order]
    at = np.minimum(np.searchsorted(keys, ids), len(keys) - 1)
    found = keys[at] == ids
    return np.where(found, values[at], ids)


def stored_inputs(store: Store, repo_id: int, inputs: dict[str, bytes]) -> list[GraphInput]:
    """The GraphInputs of a graph's `inputs` (path -> encode_input), with the ids the
    store's files and symbols have now."""
    ids = packed_symbol_ids(store, repo_id)
    return [GraphInput(f.path, f.file_id, ids.get(f.file_id, b""), inputs[f.path])
            for f in store.files(repo_id) if f.path in inputs]


def packed_symbol_ids(store: Store, repo_id: int) -> dict[int, bytes]:
    """File id -> its symbols' ids in their order, packed as GraphInput holds them."""
    file_ids, symbol_ids = map(np.frombuffer, store.symbol_ids_by_file(repo_id),
                               (np.int64, np.int64))
    order = np.argsort(file_ids, kind="stable")  # by file, each file's ids in their order
    by_file, ids = file_ids[order], symbol_ids[order].astype(">i8")  # as packed_ids packs
    files, starts = np.unique(by_file, return_index=True)
    ends = [*starts[1:].tolist(), len(ids)]
    return {f: ids[a:b].tobytes() for f, a, b in zip(files.tolist(), starts.tolist(), ends)}


def rebuild_graph(store: Store, repo_id: int, parallel: bool = True) -> int:
    """Resolve every reference of the repository from the store and store edges and
    centrality. `parallel`: a large repository's calls may be resolved on two processes."""
    return store_graph(store, repo_id, resolve_and_rank(stored_facts(store, repo_id), parallel))
