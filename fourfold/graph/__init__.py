"""Graph modality: dependency edges (imports, calls, inheritance, refs), centrality, walks."""
from __future__ import annotations

from .centrality import (
    Centrality,
    adjacency,
    callees,
    callers,
    compute_centrality,
    degrees,
    impact,
    pagerank,
    rank_impact,
)
from .resolve import Edge, FileFacts, resolve_graph, resolve_imports

__all__ = [
    "Centrality", "Edge", "FileFacts", "adjacency", "callees", "callers", "compute_centrality",
    "degrees", "impact", "pagerank", "rank_impact", "resolve_graph", "resolve_imports",
]
