"""A repository whose files are another's (a second clone, a worktree at the same commit)
gets that repository's graph copied with its own ids, equal to the graph a resolution
would make; a repository whose files differ in any way, or whose twin's graph is not
current, is resolved. fourfold's own source is the repository: real imports, classes,
methods and calls across a hundred files."""
from __future__ import annotations

import shutil
import threading
import time

import lz4.block
import psycopg

import fourfold.graph.build as build_module
import fourfold.graph.patch as patch_module
import fourfold.semantic.indexing as indexing
from fourfold import Fourfold
from fourfold.graph.build import rebuild_graph
from fourfold.graph.copied import copy_graph
from fourfold.indexer import catch_up_graph
from fourfold.semantic.model_files import stored_name
from fourfold.store.base import codes_allowance_setting, graph_resolved_by_setting

from .test_patch import _edit, _graph


def _resolutions(monkeypatch) -> list:
    """Record every resolution of a whole graph (in a forked child or in this process),
    which then runs."""
    resolved = []
    for module, name in ((build_module, "start_resolving"), (patch_module, "rebuild_graph")):
        def recorded(*args, _resolve=getattr(module, name), **kwargs):
            resolved.append(args)
            return _resolve(*args, **kwargs)
        monkeypatch.setattr(module, name, recorded)
    return resolved


def test_a_copy_of_an_indexed_tree_gets_the_same_graph_without_resolving(
        one_index, tmp_path, monkeypatch):
    tree, open_ = one_index
    first = open_(tree, "fourfold@main")
    first.index(embed=False)
    copy = tmp_path / "checkout"
    shutil.copytree(tree, copy)
    resolved = _resolutions(monkeypatch)
    second = open_(copy, "fourfold@checkout")
    summary = second.index(embed=False)
    assert summary.shared == summary.added > 100 and not resolved
    edges, symbol_ranks, file_ranks = _graph(second)
    assert len(edges) > 1000
    assert (edges, symbol_ranks, file_ranks) == _graph(first)
    # its own ids: its file rows, not the first repository's
    mine = {f.file_id for f in second.store.files(second.repo_id())}
    assert {e.src_file for e in second.store.all_edges(second.repo_id())} <= mine
    assert not second.behind()["graph"]


def test_a_copy_with_one_call_changed_is_resolved_not_copied(one_index, tmp_path):
    tree, open_ = one_index
    first = open_(tree, "fourfold@main")
    first.index(embed=False)
    copy = tmp_path / "checkout"
    shutil.copytree(tree, copy)
    _edit(copy, "fourfold/graph/build.py", "    return len(edges)\n",
          "    release_freed_memory()\n    return len(edges)\n")
    second = open_(copy, "fourfold@checkout")
    second.index(embed=False)
    build = "fourfold/graph/build.py"
    call = ("call", build, (build, "store_graph"), build, (build, "release_freed_memory"))
    assert call in {e[:5] for e in _graph(second)[0]}
    assert call not in {e[:5] for e in _graph(first)[0]}
    # asked directly, no repository holds its files: nothing is copied
    before = _graph(second)
    assert not copy_graph(second.store, second.repo_id())
    assert _graph(second) == before


def test_a_twin_whose_graph_is_behind_is_not_copied_from(one_index, tmp_path, monkeypatch):
    tree, open_ = one_index
    first = open_(tree, "fourfold@main")
    first.index(embed=False, graph_later=True)
    assert first.behind()["graph"] and not first.store.all_edges(first.repo_id())
    copy = tmp_path / "checkout"
    shutil.copytree(tree, copy)
    second = open_(copy, "fourfold@checkout")
    resolved = _resolutions(monkeypatch)
    second.index(embed=False)
    assert len(resolved) == 1 and len(_graph(second)[0]) > 1000
    # the first catches up (in this process, as catch_up's child does) by a copy of the
    # second's graph, now current
    assert catch_up_graph(first.store, first.repo_id()) and len(resolved) == 1
    assert not first.behind()["graph"] and _graph(first) == _graph(second)


def test_a_twin_whose_documents_are_rows_of_its_own_is_resolved(one_index, tmp_path,
                                                                  monkeypatch):
    """Repositories of two families share no documents on a server (each parsed its own,
    maybe otherwise: a parse that ran out of time): the second is resolved, not copied;
    in an embedded index every repository shares documents, and a graph left for later
    is copied on catching up."""
    tree, open_ = one_index
    first = open_(tree, "first")
    first.index(embed=False)
    copy = tmp_path / "checkout"
    shutil.copytree(tree, copy)
    second = open_(copy, "second")
    second.index(embed=False, graph_later=True)
    resolved = _resolutions(monkeypatch)
    # in this process, as catch_up's child does it
    assert catch_up_graph(second.store, second.repo_id()) and not second.behind()["graph"]
    assert bool(resolved) == (second.store.address()[0] == "postgresql")
    assert _graph(second) == _graph(first)


def test_a_patched_graph_or_one_made_by_other_code_is_not_copied(one_index, tmp_path,
                                                                 monkeypatch):
    """A patch carries ranks over instead of ranking again: its graph is not what a
    resolution of the same files makes, and a copy of it would spread that."""
    tree, open_ = one_index
    first = open_(tree, "fourfold@main")
    first.index(embed=False)
    edited = _edit(tree, "fourfold/graph/build.py", "    return len(edges)\n",
                   "    release_freed_memory()\n    return len(edges)\n")
    first.index(embed=False, changed=[edited], graph_later=True)
    resolved = _resolutions(monkeypatch)
    assert catch_up_graph(first.store, first.repo_id()) and not resolved  # patched
    copy = tmp_path / "checkout"
    shutil.copytree(tree, copy)
    second = open_(copy, "fourfold@checkout")
    second.index(embed=False)
    assert len(resolved) == 1
    whole = _graph(second)
    rebuild_graph(first.store, first.repo_id())
    assert _graph(first) == whole
    # both graphs are resolved whole now, ones to copy; unless other code made them
    for ff in (first, second):
        ff.store.set_setting(graph_resolved_by_setting(ff.repo_id()), 1)
    third = open_(shutil.copytree(tree, tmp_path / "third"), "fourfold@third")
    third.index(embed=False)
    assert len(resolved) == 2 and _graph(third) == whole


def _codes(ff) -> tuple:
    """The repository's binary codes as its semantic searches read them: their mean, and
    every chunk by its distance from one code (ties by chunk id)."""
    model = stored_name(ff.embedder_name)
    return (ff.store.code_mean(ff.repo_id(), model),
            ff.store.nearest_codes(ff.repo_id(), model, bytes(range(32)), 100_000))


def test_a_copy_of_an_indexed_tree_gets_its_twins_codes(one_index, tmp_path, monkeypatch):
    tree, open_ = one_index
    first = open_(tree, "fourfold@main")
    first.index()
    copy = tmp_path / "checkout"
    shutil.copytree(tree, copy)
    second = open_(copy, "fourfold@checkout")
    taken = []
    monkeypatch.setattr(indexing, "refresh_codes", lambda *args: taken.append(args))
    summary = second.index()
    assert summary.twin == first.repo_id() and summary.embedded == 0 and not taken
    mean, nearest = _codes(second)
    assert mean is not None and len(nearest) > 1000
    assert (mean, nearest) == _codes(first)
    model = stored_name(second.embedder_name)
    assert (second.store.setting(codes_allowance_setting(second.repo_id(), model), 0)
            == first.store.setting(codes_allowance_setting(first.repo_id(), model), 0) > 0)
    question = "how is a twin's graph copied"
    answers = [[h.path for h in ff.search(question, modalities=("semantic",)).hits]
               for ff in (first, second)]
    assert answers[0] and answers[0] == answers[1]


def test_a_twin_whose_codes_are_not_of_every_chunk_is_not_copied_from(one_index, tmp_path):
    """A twin with no codes yet (indexed without vectors), or with codes of some of its
    chunks only: the copy's codes are taken from its vectors."""
    tree, open_ = one_index
    first = open_(tree, "fourfold@main")
    first.index(embed=False)
    second = open_(shutil.copytree(tree, tmp_path / "second"), "fourfold@second")
    summary = second.index()
    assert summary.twin == first.repo_id()
    mean, nearest = _codes(second)
    assert mean is not None and len(nearest) > 1000
    first.index()  # its codes now: the same as the second's
    assert _codes(first) == (mean, nearest)
    model = stored_name(first.embedder_name)
    first.store.put_codes(first.repo_id(), model, mean, [(nearest[0], bytes(32))])
    third = open_(shutil.copytree(tree, tmp_path / "third"), "fourfold@third")
    assert third.index().twin == first.repo_id()
    assert _codes(third) == (mean, nearest)


def test_a_twin_whose_stored_edges_are_damaged_is_not_copied_from(one_index, tmp_path):
    """A twin's edges row cut short: the copy resolves its own graph, as a repository
    with no twin does, instead of failing or taking the damage with it."""
    tree, open_ = one_index
    first = open_(tree, "fourfold@main")
    first.index(embed=False)
    whole = _graph(first)
    store = first.store
    if store.address()[0] == "postgresql":
        store._conn().execute("UPDATE edges SET src_symbol = substring(src_symbol from 1 "
                              "for 5) WHERE repo_id = %s", (first.repo_id(),))
    else:
        with store._conn() as conn:
            (column,), = conn.execute("SELECT src_symbol FROM edges WHERE repo_id=?",
                                      (first.repo_id(),)).fetchall()
            conn.execute("UPDATE edges SET src_symbol=? WHERE repo_id=?", (lz4.block.compress(
                lz4.block.decompress(column)[:5]), first.repo_id()))
    second = open_(shutil.copytree(tree, tmp_path / "checkout"), "fourfold@checkout")
    assert second.index(embed=False).twin is None
    assert _graph(second) == whole


def test_a_twins_codes_taken_meanwhile_are_copied_as_one_state(make_tree, postgres_url,
                                                                tmp_path, monkeypatch):
    """On a server the twin's own run may take its codes anew while a checkout copies
    them (its embedding runs outside the index lock): the copy is of the codes before or
    after, never half of each. Here they are taken anew, from another connection, just
    after the copy has counted them."""
    tree = make_tree({f"m{i}.py": f"def f{i}(x):\n    return x + {i}\n" for i in range(12)})
    first = Fourfold(tree, repository="proj@a", store_url=postgres_url)
    first.index()
    second = Fourfold(shutil.copytree(tree, tmp_path / "b"), repository="proj@b",
                      store_url=postgres_url)
    assert second.index(embed=False).twin == first.repo_id()
    model = stored_name(first.embedder_name)
    mean, nearest = _codes(first)
    other = Fourfold(tree, repository="proj@a", store_url=postgres_url)  # its own connection
    taking = threading.Thread(target=other.store.put_codes, args=(
        first.repo_id(), model, bytes(len(mean)), [(c, bytes(32)) for c in nearest[:6]]))
    execute = psycopg.Cursor.execute

    def counted(cursor, query, *args, **kwargs):
        done = execute(cursor, query, *args, **kwargs)
        if "count(k.chunk_id)" in str(query) and taking.ident is None:
            taking.start()
            time.sleep(1.0)  # long enough to write, were it not kept waiting
        return done

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)
    assert second.store.copy_codes(first.repo_id(), second.repo_id(), model)
    monkeypatch.undo()
    taking.join()
    assert _codes(second) == (mean, nearest)
    assert _codes(first)[0] == bytes(len(mean))  # taken anew after the copy
    for ff in (first, second, other):
        ff.close()
