"""The cyclic collector paused while a search makes its short-lived objects, and running
again once no pause is held."""
from __future__ import annotations

import gc

from fourfold import Fourfold
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


def test_the_collector_runs_again_once_the_last_of_overlapping_pauses_ends():
    with collector_paused():
        with collector_paused():  # another thread's search, ending first
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
