"""Graph modality: dependency edges (imports, calls, inheritance, refs), centrality, walks.

`resolve.resolve_graph` turns a repository's parsed facts into edges (generic algorithm in
.resolve, name lookup in .calls, per-language rules in .languages); .build stores the
graph and its ranks; .centrality ranks and walks it; .copied, .seeded and .patch take a
graph from another repository or patch one instead of resolving every file again. The
package imports none of them: a run that copies a graph loads no numpy."""
