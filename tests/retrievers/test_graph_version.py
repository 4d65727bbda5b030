"""A process holds a repository's graph until the graph is written again: saves meanwhile
leave it as it was (answers say the graph is catching up), a catch-up or an index run that
writes the graph has it read again."""
from __future__ import annotations

import gc
import weakref

import pytest

from fourfold.api import Fourfold


@pytest.fixture
def indexed(index_on_each_store):
    return index_on_each_store({
        "a.py": "def helper():\n    return 1\n",
        "b.py": "from a import helper\n\ndef main():\n    return helper()\n"})


def _callers(ff: Fourfold) -> set[str]:
    return {r["symbol"] for r in ff.references("helper")["results"]}


def _on_read(ff: Fourfold, monkeypatch, note) -> None:
    """note() is called each time the store's edges are read, just before."""
    edge_columns = ff.store.edge_columns
    monkeypatch.setattr(ff.store, "edge_columns", lambda *a: note() or edge_columns(*a))


def test_the_graph_is_read_again_only_when_it_is_written(indexed, monkeypatch):
    root, ff = indexed
    reads = []
    _on_read(ff, monkeypatch, lambda: reads.append(1))
    assert _callers(ff) == {"main"} and len(reads) == 1
    (root / "c.py").write_text("from a import helper\n\ndef later():\n    return helper()\n")
    ff.index(embed=False, changed=[str(root / "c.py")], graph_later=True)
    assert _callers(ff) == {"main"} and len(reads) == 1  # saved: the graph as it was
    # a process holding the graph reads the new one as the catch-up ends, not at the
    # next question
    assert ff.catch_up() and len(reads) == 2
    assert _callers(ff) == {"main", "later"} and len(reads) == 2
    # calls alone changed: the graph is patched, and read again
    (root / "b.py").write_text("from a import helper\n\ndef main():\n    # moved\n"
                               "    return helper()\n")
    ff.index(embed=False, changed=[str(root / "b.py")], graph_later=True)
    assert ff.catch_up() and len(reads) == 3
    assert [r["line"] for r in ff.references("helper")["results"] if r["symbol"] == "main"] \
        == [5] and len(reads) == 3
    (root / "c.py").write_text("from a import *\n\ndef renamed():\n    return helper()\n")
    ff.index(embed=False)  # a wildcard import changed: resolved whole in the run
    assert _callers(ff) == {"main", "renamed"} and len(reads) == 4


def test_a_graph_is_read_with_the_collector_paused_and_freed_when_let_go(indexed,
                                                                        monkeypatch):
    """Reading a graph makes millions of short-lived objects on a big repository and no
    cycles: the collector is paused meanwhile. A graph read again frees the one before."""
    root, ff = indexed
    collecting = []
    _on_read(ff, monkeypatch, lambda: collecting.append(gc.isenabled()))
    assert _callers(ff) == {"main"} and collecting == [False] and gc.isenabled()
    loaded = weakref.ref(ff.graph.graph())
    (root / "b.py").write_text("from a import helper\n\ndef main():\n    # moved\n"
                               "    return helper()\n")
    ff.index(embed=False)
    assert _callers(ff) == {"main"} and ff.graph.graph() is not None
    assert loaded() is None


def test_a_process_without_a_graph_does_not_read_one_after_a_catch_up(indexed, monkeypatch):
    root, ff = indexed
    reads = []
    _on_read(ff, monkeypatch, lambda: reads.append(1))
    (root / "c.py").write_text("from a import helper\n\ndef later():\n    return helper()\n")
    ff.index(embed=False, changed=[str(root / "c.py")], graph_later=True)
    assert ff.catch_up() and not reads
    assert _callers(ff) == {"main", "later"} and len(reads) == 1


def test_the_graph_before_is_let_go_before_the_new_one_is_read(indexed, monkeypatch):
    """Two graphs at once would double a big repository's memory."""
    root, ff = indexed
    assert _callers(ff) == {"main"}
    before = weakref.ref(ff.graph.graph())
    held_while_reading = []
    _on_read(ff, monkeypatch, lambda: held_while_reading.append(before() is not None))
    (root / "c.py").write_text("from a import helper\n\ndef later():\n    return helper()\n")
    # a wildcard import changed: resolved whole (a patch reads the stored edges to rewrite
    # them)
    (root / "b.py").write_text("from a import *\n\ndef main():\n    return helper()\n")
    ff.index(embed=False)
    assert _callers(ff) == {"main", "later"} and held_while_reading == [False]
