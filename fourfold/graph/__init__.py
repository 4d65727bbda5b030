"""Graph modality: dependency edges (imports, calls, inheritance, refs), centrality, walks.

`resolve_graph` turns a repository's parsed facts into edges (generic algorithm in
.resolve, name lookup in .calls, per-language rules in .languages); .build stores the
graph and its ranks; .centrality ranks and walks it."""
from __future__ import annotations

from .centrality import Centrality, degrees, impact, pagerank
from .facts import Edge, FileFacts
from .imports import Import, parse_import
from .resolve import resolve_graph

__all__ = [
    "Centrality", "Edge", "FileFacts", "Import", "degrees", "impact", "pagerank", "parse_import",
    "resolve_graph",
]
