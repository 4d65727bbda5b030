"""The graph a process holds, as columns: each view lists the edges the maps of edge
objects it replaced listed, in edge order."""
from __future__ import annotations

from fourfold.graph.loaded import LoadedGraph
from fourfold.store.base import EdgeColumns, Resolution, StoredEdge

NONE, NAME_ONLY, INFERRED, EXACT = (Resolution.NONE, Resolution.NAME_ONLY, Resolution.INFERRED,
                                    Resolution.EXACT)
# kind, src file, src symbol, dst file, dst symbol, line, name, resolution
EDGES = [StoredEdge("call", 1, 10, 2, 20, 3, "helper", EXACT),
         StoredEdge("call", 1, 11, 2, 20, 7, "mod.helper", NAME_ONLY),
         StoredEdge("ref", 3, None, 2, 20, 1, "helper", INFERRED),  # module-level code
         StoredEdge("inherit", 4, 40, 2, 20, 2, "Helper", NAME_ONLY),
         StoredEdge("import", 1, None, 2, 20, 1, "pkg.helper", EXACT),
         StoredEdge("call", 1, 10, None, None, 4, "obj->run", NONE),
         StoredEdge("call", 3, 30, None, None, 9, "run", NONE),
         StoredEdge("ref", 3, 30, None, None, 10, "x.run", NONE),  # not a call
         StoredEdge("call", 1, 10, 5, 50, 5, "other.run", EXACT),
         StoredEdge("import", 1, None, 2, None, 1, "pkg", EXACT),
         StoredEdge("import", 3, None, 2, None, 1, "pkg", EXACT),
         StoredEdge("import", 4, None, None, None, 1, "os", NONE),
         StoredEdge("call", 2, 20, 2, 20, 8, "helper", EXACT),  # recursion
         StoredEdge("call", 4, 41, 2, 20, 6, "helper", NONE),  # a target, not resolved
         StoredEdge("call", 4, 41, None, None, 7, "obj->run", NONE),
         StoredEdge("import", 4, None, 2, None, 2, "pkg", NONE),
         StoredEdge("import", 1, 10, 5, None, 6, "other", EXACT)]  # inside a function


def _graph() -> LoadedGraph:
    return LoadedGraph((1, 1), EdgeColumns.of(EDGES), lambda: ({20: 2.0}, {2: 1.5}),
                       {1: "a.py"})


def test_each_view_lists_the_edges_it_should_in_edge_order():
    g = _graph()
    # resolved at least by name, imports aside
    assert g.incoming(20) == [EDGES[i] for i in (0, 1, 2, 3, 12)]
    assert g.incoming(99) == []
    assert g.outgoing(10) == [EDGES[i] for i in (0, 5, 8)]  # unresolved ones too
    assert g.outgoing(30) == [EDGES[6], EDGES[7]]
    assert g.importers(2) == [EDGES[i] for i in (4, 9, 10)]  # resolved only
    assert g.importers(5) == [EDGES[16]]
    assert g.imports(1) == [EDGES[i] for i in (4, 9, 16)] and g.imports(4) == []
    # calls no definition was found for, by their last name: not references
    assert g.unresolved_calls("run") == [EDGES[i] for i in (5, 6, 14)]
    assert g.unresolved_calls("a.b::run") == [EDGES[i] for i in (5, 6, 14)]
    assert g.unresolved_calls("helper") == [EDGES[13]]
    assert g.unresolved_calls("absent") == []
    assert g.symbol_rank == {20: 2.0} and g.file_rank == {2: 1.5} and len(g) == len(EDGES)


def test_dependents_follow_calls_inheritance_and_references_resolved_beyond_the_name():
    g = _graph()
    assert g.dependents(("s", 20)) == {("s", 10), ("f", 3)}  # its own recursion left out
    assert g.dependents(("s", 50)) == {("s", 10)}
    assert g.dependents(("f", 20)) == set() and g.dependents(("s", 10)) == set()


def test_an_empty_graph_answers_nothing():
    g = LoadedGraph((0, None), EdgeColumns(), lambda: ({}, {}), {})
    assert g.incoming(1) == g.outgoing(1) == g.importers(1) == g.unresolved_calls("x") == []
    assert g.dependents(("s", 1)) == set()
