"""Rebuild a repository's graph in the store: resolve references, rank, write edges."""
from __future__ import annotations

from ..model import Symbol
from ..store.base import Store, StoredEdge
from .centrality import compute_centrality
from .resolve import FileFacts, resolve_graph

EXTRA_FILES = ("go.mod",)  # read by import resolution (Go module path)


def rebuild_graph(store: Store, repo_id: int, parallel: bool = True) -> int:
    """Resolve every reference of the repository and store edges and centrality.

    `parallel`: a large repository's calls may be resolved on two processes. Returns the
    number of edges. Symbol ids come from the store, so this runs after the
    files are written; centrality is PageRank × node count (1.0 = an average node).
    """
    files = {f.path: f for f in store.files(repo_id)}
    facts: dict[str, FileFacts] = {p: FileFacts(f.language or "") for p, f in files.items()}
    symbol_ids: dict[tuple[str, str], int] = {}
    for s in store.symbols(repo_id):
        facts[s.path].symbols.append(Symbol(s.name, s.qualname, s.kind, s.start_line,
                                            s.end_line, s.signature or "", "", s.parent))
        symbol_ids.setdefault((s.path, s.qualname), s.symbol_id)
    for path, refs in store.references(repo_id):
        facts[path].references = refs
    extra = {p: store.content(files[p].file_id) for p in files
             if p.rsplit("/", 1)[-1] in EXTRA_FILES}
    edges = resolve_graph(facts, extra_files=extra or None, parallel=parallel)

    file_ids = {p: f.file_id for p, f in files.items()}
    stored = []
    for e in edges:
        src_file = file_ids.get(e.src_path)
        if src_file is None:
            continue
        dst_file = file_ids.get(e.dst_path)
        stored.append(StoredEdge(e.kind, src_file, symbol_ids.get((e.src_path, e.src_symbol)),
                                 dst_file, symbol_ids.get((e.dst_path, e.dst_symbol)), e.line,
                                 e.name, e.resolved and dst_file is not None))
    symbol_scores, file_scores = compute_centrality(edges)
    n_symbols = max(len(symbol_scores), 1)
    n_files = max(len(file_scores), 1)
    symbol_rank = {}
    for key, c in symbol_scores.items():
        sid = symbol_ids.get(key)
        if sid is not None:
            symbol_rank[sid] = c.pagerank * n_symbols
    file_rank = {files[p].file_id: c.pagerank * n_files for p, c in file_scores.items()
                 if p in files}
    store.replace_graph(repo_id, stored, symbol_rank, file_rank)
    return len(stored)
