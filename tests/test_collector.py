"""The cyclic collector paused while a search or an index run makes its many short-lived
objects, and still run where pauses overlap without end."""
from __future__ import annotations

import gc
import weakref

from fourfold import Fourfold
from fourfold import collector
from fourfold.collector import collector_paused
from tests.conftest import write_tree


def test_a_search_pauses_the_collector_until_it_answers(tmp_path, monkeypatch):
    ff = Fourfold(write_tree(tmp_path, {
        "config.py": "def parse_config(path):\n    return open(path).read().split()\n"}))
    ff.index(embed=False)
    text = ff.engine.retrievers["text"]
    search, seen = text.search, []
    monkeypatch.setattr(text, "search", lambda query, limit: (
        seen.append(gc.isenabled()), search(query, limit))[1])
    assert gc.isenabled()
    assert ff.search("how is the config parsed").hits
    assert seen == [False] and gc.isenabled()
    ff.close()


class _Node:
    pass


def _cycle() -> weakref.ref:
    """A weak reference to an object only a reference cycle keeps."""
    node = _Node()
    node.itself = node
    return weakref.ref(node)


def test_overlapping_pauses_still_collect_the_young_past_a_backlog(monkeypatch):
    monkeypatch.setattr(collector, "BACKLOG", 1000)
    gc.collect()
    with collector_paused():  # another thread's pause, going on throughout
        small = _cycle()
        with collector_paused():
            pass
        assert small() is not None  # few objects made since the last collection
        young = [[] for _ in range(2000)]
        with collector_paused():
            pass
        assert small() is None and young
        assert not gc.isenabled()
    assert gc.isenabled()
