"""Another snapshot of a repository the index holds (a later commit, a branch's worktree)
gets that repository's graph patched to the files that differ, equal to the graph a whole
resolution makes, edge for edge and rank for rank; it is resolved whole where the other
graph is not one a whole resolution by this code made, or where too many files differ.
fourfold's own source is the repository."""
from __future__ import annotations

import shutil

import pytest

import fourfold.graph.seeded as seeded_module
from fourfold.graph.build import rebuild_graph
from fourfold.graph.provenance import resolver_version
from fourfold.graph.seeded import seed_graph
from fourfold.indexer import catch_up_graph
from fourfold.store.base import graph_resolved_by_setting

from .test_patch import _edit, _graph

BUILD = "fourfold/graph/build.py"
GONE = "fourfold/discovery/flags.py"


def _snapshot(tree, copy):
    """A later snapshot of the tree: a call added, a function added, a file added, a file
    taken away."""
    shutil.copytree(tree, copy)
    _edit(copy, BUILD, "    return len(edges)\n", "    release_freed_memory()\n"
          "    return len(edges)\n")
    _edit(copy, "fourfold/errors.py", "class FourfoldError(Exception):\n",
          "def raised(message):\n    raise FourfoldError(message)\n\n\n"
          "class FourfoldError(Exception):\n")
    (copy / "fourfold/extra.py").write_text(
        "from .errors import raised\n\n\ndef extra():\n    raised('extra')\n")
    (copy / GONE).unlink()
    return copy


def _resolved_by(ff) -> int:
    return ff.store.setting(graph_resolved_by_setting(ff.repo_id()), 0)


@pytest.mark.parametrize("later", [False, True], ids=["indexed", "caught up"])
def test_another_snapshot_gets_the_likest_graph_patched(one_index, tmp_path, monkeypatch,
                                                          later):
    monkeypatch.setattr(seeded_module, "MOST_RESOLVED", 0.5)  # a small tree: most files
    tree, open_ = one_index
    first = open_(tree, "fourfold@main")
    first.index(embed=False)
    second = open_(_snapshot(tree, tmp_path / "later"), "fourfold@later")
    summary = second.index(embed=False, graph_later=later)
    assert summary.shared == summary.added - 3 > 90  # but the three files written
    if later:
        assert catch_up_graph(second.store, second.repo_id())
    assert _resolved_by(second) == -resolver_version()  # patched from the first's, ranked
    edges, symbol_ranks, file_ranks = _graph(second)
    found = {e[:5] for e in edges}
    assert ("call", BUILD, (BUILD, "store_graph"), BUILD,
            (BUILD, "release_freed_memory")) in found
    assert ("call", "fourfold/extra.py", ("fourfold/extra.py", "extra"), "fourfold/errors.py",
            ("fourfold/errors.py", "raised")) in found
    assert not any(GONE in (e[1], e[3]) for e in edges)
    assert GONE in {e[3] for e in _graph(first)[0]}  # the first's own graph is untouched
    # its own ids: its file rows, not the first repository's
    mine = {f.file_id for f in second.store.files(second.repo_id())}
    stored = second.store.all_edges(second.repo_id())
    assert {e.src_file for e in stored} | {e.dst_file for e in stored if e.dst_file} <= mine
    assert {i.path for i in second.store.graph_inputs(second.repo_id())} == {
        f.path for f in second.store.files(second.repo_id())}
    rebuild_graph(second.store, second.repo_id())
    whole_edges, whole_symbols, whole_files = _graph(second)
    assert edges == whole_edges
    assert symbol_ranks == pytest.approx(whole_symbols, rel=1e-9)
    assert file_ranks == pytest.approx(whole_files, rel=1e-9)


def test_a_snapshot_is_resolved_whole_unless_the_likest_graph_was_resolved_so_by_this_code(
        one_index, tmp_path, monkeypatch):
    monkeypatch.setattr(seeded_module, "MOST_RESOLVED", 0.5)
    tree, open_ = one_index
    first = open_(tree, "fourfold@main")
    first.index(embed=False)
    first.store.set_setting(graph_resolved_by_setting(first.repo_id()), 1)  # older code's
    second = open_(_snapshot(tree, tmp_path / "later"), "fourfold@later")
    second.index(embed=False)
    assert _resolved_by(second) == resolver_version()
    # now the second's is one to patch from, but not where more files differ than a patch
    # may resolve: the first's files again, three of them not the second's
    monkeypatch.setattr(seeded_module, "MOST_RESOLVED", 0.01)
    third = open_(shutil.copytree(tree, tmp_path / "third"), "fourfold@third")
    third.index(embed=False)
    assert _resolved_by(third) == resolver_version()
    whole = _graph(third)
    assert not seed_graph(third.store, third.repo_id())
    monkeypatch.setattr(seeded_module, "MOST_RESOLVED", 0.5)
    assert seed_graph(third.store, third.repo_id())
    assert _resolved_by(third) == -resolver_version() and _graph(third)[0] == whole[0]


def test_a_seeded_graph_is_copied_to_a_twin_and_seeds_the_next_snapshot(
        one_index, tmp_path, monkeypatch):
    """A seeded graph's edges are a whole resolution's and its ranks made from them: a
    second checkout copies it, and a later snapshot starts from it."""
    monkeypatch.setattr(seeded_module, "MOST_RESOLVED", 0.5)
    tree, open_ = one_index
    open_(tree, "fourfold@main").index(embed=False)
    later = _snapshot(tree, tmp_path / "later")
    second = open_(later, "fourfold@later")
    second.index(embed=False)
    assert _resolved_by(second) == -resolver_version()
    copy = open_(shutil.copytree(later, tmp_path / "checkout"), "fourfold@checkout")
    seeded = []
    seed = seeded_module.seed_graph
    monkeypatch.setattr(seeded_module, "seed_graph", lambda *args: seeded.append(args) or seed(
        *args))
    copy.index(embed=False)
    assert not seeded  # copied
    assert _resolved_by(copy) == -resolver_version() and _graph(copy) == _graph(second)
    # the next snapshot differs from the seeded one in one file, from the first in five
    _edit(later, "fourfold/errors.py", "def raised(message):\n",
          "def raised(message, *more):\n")
    third = open_(shutil.copytree(later, tmp_path / "third"), "fourfold@third")
    monkeypatch.setattr(seeded_module, "MOST_RESOLVED", 0.05)
    third.index(embed=False)
    assert _resolved_by(third) == -resolver_version()
    edges = _graph(third)[0]
    rebuild_graph(third.store, third.repo_id())
    assert edges == _graph(third)[0]
