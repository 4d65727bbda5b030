"""A graph patched after an edit of calls alone is the graph a whole resolution makes; any
other change is resolved whole. The repository is fourfold's own source: real imports,
classes, methods and calls across a hundred files."""
from __future__ import annotations

from pathlib import Path

import pytest

import fourfold
import fourfold.graph.patch as patch_module
from fourfold.api import Fourfold
from fourfold.graph.build import rebuild_graph
from fourfold.graph.patch import patch_graph

SOURCE = Path(fourfold.__file__).parent


def _own_source() -> dict[str, str]:
    return {str(Path("fourfold") / p.relative_to(SOURCE)): p.read_text()
            for p in sorted(SOURCE.rglob("*.py"))}


def _graph(ff: Fourfold) -> tuple[list[tuple], dict[tuple[str, str], float], dict[str, float]]:
    """The stored graph by names, not ids: sorted edges, symbol ranks, file ranks."""
    store, repo_id = ff.store, ff.repo_id()
    paths = {f.file_id: f.path for f in store.files(repo_id)}
    edges = store.all_edges(repo_id)
    symbol_rank, file_rank = store.centrality(repo_id)
    ids = {e.src_symbol for e in edges} | {e.dst_symbol for e in edges} | set(symbol_rank)
    symbols = {s.symbol_id: (s.path, s.qualname)
               for s in store.symbols_by_id([i for i in ids if i is not None], repo_id)}
    named = sorted(((e.kind, paths[e.src_file], symbols.get(e.src_symbol),
                    paths.get(e.dst_file), symbols.get(e.dst_symbol), e.line,
                    int(e.resolution), e.name) for e in edges), key=repr)
    assert all(e.src_symbol is None or e.src_symbol in symbols for e in edges)
    assert all(e.dst_symbol is None or e.dst_symbol in symbols for e in edges)
    return (named, {symbols[k]: v for k, v in symbol_rank.items()},
            {paths[k]: v for k, v in file_rank.items()})


def _edit(root: Path, path: str, old: str, new: str) -> str:
    text = (root / path).read_text()
    assert text.count(old) == 1
    (root / path).write_text(text.replace(old, new))
    return str(root / path)


def _prepend(root: Path, path: str, text: str) -> str:
    (root / path).write_text(text + (root / path).read_text())
    return str(root / path)


@pytest.fixture
def indexed(index_on_each_store):
    return index_on_each_store(_own_source())


def test_an_edit_of_calls_alone_patches_the_graph_as_a_whole_resolution_would(
        indexed, monkeypatch):
    root, ff = indexed
    _, ranks_before, file_ranks_before = _graph(ff)
    changed = [
        # a new call of a function of the same file, inside a function others call
        _edit(root, "fourfold/graph/build.py", "    return len(edges)\n",
              "    release_freed_memory()\n    return len(edges)\n"),
        # lines move: a new first line, and a call of another file's function
        _edit(root, "fourfold/indexer.py", "def catch_up_graph(store: Store, repo_id: int)"
              " -> bool:\n", "def catch_up_graph(store: Store, repo_id: int) -> bool:\n"
              "    parser_fingerprint()\n"),
    ]
    changed.append(_prepend(root, "fourfold/errors.py", "\n\n"))
    # a call whose name no other edge names goes: the graph forgets the name
    _edit(root, "fourfold/graph/build.py", "ctypes.CDLL(None).malloc_trim(0)", "pass")
    whole_runs = []
    monkeypatch.setattr(patch_module, "rebuild_graph",
                        lambda *args, **kwargs: whole_runs.append(args))
    ff.index(embed=False, changed=changed, graph_later=True)
    assert ff.catch_up() and not ff.behind()["graph"] and not whole_runs
    edges, symbol_ranks, file_ranks = _graph(ff)
    parsing = "fourfold/parsing/__init__.py"
    assert ("call", "fourfold/indexer.py", ("fourfold/indexer.py", "catch_up_graph"),
            parsing, (parsing, "parser_fingerprint")) in {e[:5] for e in edges}
    # ranks carry over to the edited files' new ids, and change nowhere else
    assert symbol_ranks == ranks_before and file_ranks == file_ranks_before
    names = ff.store.edge_columns(ff.repo_id()).names
    assert not any("malloc_trim" in name for name in names) and len(set(names)) == len(names)

    rebuild_graph(ff.store, ff.repo_id())
    whole, whole_symbol_ranks, whole_file_ranks = _graph(ff)
    assert edges == whole
    assert symbol_ranks.keys() == whole_symbol_ranks.keys()
    assert file_ranks.keys() == whole_file_ranks.keys()
    assert patch_graph(ff.store, ff.repo_id())  # nothing changed since: nothing to do
    assert _graph(ff)[0] == whole


@pytest.mark.parametrize("change", ["new function", "new import", "file added", "file removed"])
def test_other_changes_are_resolved_whole(indexed, change, monkeypatch):
    root, ff = indexed
    before = _graph(ff)
    stored = ff.store.all_edges(ff.repo_id())
    if change == "new function":
        paths = [_prepend(root, "fourfold/errors.py", "def added():\n    pass\n")]
    elif change == "new import":
        paths = [_prepend(root, "fourfold/errors.py", "import json\n")]
    elif change == "file added":
        (root / "fourfold/extra.py").write_text(
            "from .errors import FourfoldError\n\ndef extra():\n    raise FourfoldError()\n")
        paths = [str(root / "fourfold/extra.py")]
    else:
        (root / "fourfold/errors.py").unlink()
        paths = [str(root / "fourfold/errors.py")]
    ff.index(embed=False, changed=paths, graph_later=True)
    decoded = []
    decode_input = patch_module.decode_input
    monkeypatch.setattr(patch_module, "decode_input",
                        lambda *a: decoded.append(a) or decode_input(*a))
    assert not patch_graph(ff.store, ff.repo_id())
    assert not decoded  # told from the changed files alone, before the others are read
    monkeypatch.undo()
    assert ff.store.all_edges(ff.repo_id()) == stored  # nothing written
    assert ff.catch_up() and not ff.behind()["graph"]
    patched = _graph(ff)[0]
    rebuild_graph(ff.store, ff.repo_id())
    assert patched == _graph(ff)[0] != before[0]


def test_a_file_id_is_never_given_again(make_tree):
    """A patch tells a changed file by its new id: SQLite would give the highest id again
    once its row is deleted."""
    root = make_tree({"a.py": "def a():\n    return 1\n", "z.py": "def z():\n    return 2\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    highest = max(f.file_id for f in ff.store.files(ff.repo_id()))
    (root / "z.py").unlink()
    ff.index(embed=False)
    (root / "z.py").write_text("def z():\n    return 2\n")
    ff.index(embed=False)
    assert max(f.file_id for f in ff.store.files(ff.repo_id())) > highest


def test_a_damaged_input_resolves_the_graph_whole(make_tree):
    root = make_tree({"a.py": "def a():\n    return 1\n",
                      "b.py": "from a import a\n\ndef b():\n    return a()\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    conn = ff.store._conn()
    with conn:
        conn.execute("UPDATE graph_inputs SET facts = x'00000001ff' WHERE path = 'a.py'")
    (root / "b.py").write_text("from a import a\n\ndef b():\n    # moved\n    return a()\n")
    ff.index(embed=False, changed=[str(root / "b.py")], graph_later=True)
    assert not patch_graph(ff.store, ff.repo_id())
    assert ff.catch_up() and not ff.behind()["graph"]
    assert patch_graph(ff.store, ff.repo_id())  # the whole resolution wrote them anew
    assert [e[:6] for e in _graph(ff)[0] if e[0] == "call"] == [
        ("call", "b.py", ("b.py", "b"), "a.py", ("a.py", "a"), 5)]
