"""A graph patched after an edit of calls alone is the graph a whole resolution makes; any
other change is resolved whole. The repository is fourfold's own source: real imports,
classes, methods and calls across a hundred files."""
from __future__ import annotations

import random
import re
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


def random_edit(root: Path, ff: Fourfold, rng: random.Random) -> tuple[str, str]:
    """One edit of a definition, an import, a base or a binding somewhere in the indexed
    tree, made in its file: (the path changed, what was done)."""
    store, repo_id = ff.store, ff.repo_id()
    stored = [f for f in store.files(repo_id) if f.language]
    while True:
        f = rng.choice(stored)
        symbols = [s for s in store.symbols_of_file(f.file_id)
                   if s.kind not in ("import", "variable", "constant")]
        path = root / f.path
        lines = path.read_text().splitlines(keepends=True)
        if not symbols or not lines:
            continue
        s = rng.choice(symbols)
        at = s.start_line - 1
        if at >= len(lines) or s.name not in lines[at]:
            continue
        other = rng.choice([t for g in rng.sample(stored, 3)
                            for t in store.symbols_of_file(g.file_id)] or [s])
        how = rng.choice(["rename", "namesake", "delete", "copy", "annotate", "import",
                          "base", "new file", "file removed"])
        if how == "rename":
            lines[at] = lines[at].replace(s.name, s.name + "_renamed", 1)
        elif how == "namesake":  # named as another definition of the repository
            lines[at] = lines[at].replace(s.name, other.name, 1)
        elif how == "delete":
            del lines[at:s.end_line]
        elif how == "new file":  # the definition again, in a file of its own
            added = path.with_name(f"added_{rng.randrange(1000)}{path.suffix}")
            added.write_text("".join(lines[at:s.end_line]))
            return str(added.relative_to(root)), f"{s.qualname} in a new file"
        elif how == "file removed":
            path.unlink()
            return f.path, "removed"
        elif how == "copy":  # the definition again, in another file
            g = rng.choice(stored)
            target = root / g.path
            target.write_text(target.read_text() + "\n" + "".join(lines[at:s.end_line]))
            return g.path, f"copy of {s.qualname} into it"
        elif how == "annotate":  # a result's type
            if "->" not in lines[at]:
                continue
            head, _, tail = lines[at].partition("->")
            lines[at] = head + "-> " + other.name + ":" + tail.split(":", 1)[-1]
        elif how == "import":  # a name taken under an alias: others may take it from here
            module = other.path.removesuffix(".py").replace("/", ".")
            lines.insert(0, f"from {module} import {other.name} as {s.name}\n")
        else:  # a base
            if s.kind != "class" or "class " not in lines[at]:
                continue
            lines[at] = lines[at].replace(s.name, f"{s.name}({other.name})", 1).replace(
                ")(", ", ", 1)
        path.write_text("".join(lines))
        return f.path, f"{how} {s.qualname} ({other.name})"


@pytest.mark.parametrize("seed", [1, 2])
def test_changed_definitions_patch_the_graph_as_a_whole_resolution_would(
        indexed, monkeypatch, seed):
    """Edits of definitions, imports, bases and bindings, one after another; each patched
    graph must be the graph a whole resolution makes, edge for edge."""
    root, ff = indexed
    rng = random.Random(seed)
    whole_runs = []
    patched = 0
    for _ in range(8):
        path, what = random_edit(root, ff, rng)
        ff.index(embed=False, changed=[str(root / path)], graph_later=True)
        stored = ff.store.all_edges(ff.repo_id())
        monkeypatch.setattr(patch_module, "rebuild_graph",
                            lambda *args, **kwargs: whole_runs.append(args))
        done = patch_graph(ff.store, ff.repo_id())
        monkeypatch.undo()
        assert not whole_runs
        if not done:
            assert ff.store.all_edges(ff.repo_id()) == stored, what  # nothing written
            rebuild_graph(ff.store, ff.repo_id())
            continue
        patched += 1
        edges = _graph(ff)[0]
        rebuild_graph(ff.store, ff.repo_id())
        assert edges == _graph(ff)[0], what
    assert patched >= 6  # most such edits are patched, not resolved whole


def test_a_patch_carries_ranks_over_and_drops_those_of_definitions_gone(indexed):
    root, ff = indexed
    _, ranks_before, _ = _graph(ff)
    path = "fourfold/graph/facts.py"
    assert ranks_before[(path, "parent_name")] > 0
    changed = [_edit(root, path, "def parent_name(", "def parent_name_now("),
               _prepend(root, "fourfold/errors.py", "def added():\n    pass\n")]
    ff.index(embed=False, changed=changed, graph_later=True)
    assert patch_graph(ff.store, ff.repo_id())
    edges, ranks, _ = _graph(ff)
    assert (path, "parent_name") not in ranks
    # a new definition has the rank of one no edge leads to until the next whole resolution
    lowest = min(ranks_before.values())
    assert ranks[(path, "parent_name_now")] == ranks[("fourfold/errors.py", "added")] == lowest
    kept = {k: v for k, v in ranks_before.items() if k != (path, "parent_name")}
    assert ranks == kept | {(path, "parent_name_now"): lowest,
                            ("fourfold/errors.py", "added"): lowest}
    # the callers of the renamed function now call nothing of the repository
    assert not any(e[4] == (path, "parent_name") for e in edges)
    assert any(e[0] == "call" and e[3] is None and e[7] == "parent_name" for e in edges)


CHAIN = {
    "engine.py": "class Engine:\n    def start(self):\n        pass\n\n\n"
                 "class Car:\n    def start(self):\n        pass\n",
    "factory.py": "from engine import Car, Engine\n\n\ndef make() -> Engine:\n"
                  "    return Engine()\n",
    "garage.py": "from factory import make\n\n\nclass Garage:\n    def __init__(self):\n"
                 "        self.vehicle = make()\n",
    "driver.py": "from garage import Garage\n\n\ndef drive():\n    garage = Garage()\n"
                 "    garage.vehicle.start()\n",
    # a patch resolving most files of a repository is left to a whole resolution
    **{f"other{n}.py": f"def other{n}():\n    return {n}\n" for n in range(6)},
}


def test_a_changed_type_reaches_the_files_that_use_it_through_other_functions(
        index_on_each_store):
    """driver.py names neither the factory nor the types: its call leads elsewhere because
    a garage's vehicle is what make() returns, whose declared type changed."""
    root, ff = index_on_each_store(CHAIN)
    changed = _edit(root, "factory.py", "def make() -> Engine:", "def make() -> Car:")
    ff.index(embed=False, changed=[changed], graph_later=True)
    assert patch_graph(ff.store, ff.repo_id())
    edges = _graph(ff)[0]
    assert ("call", "driver.py", ("driver.py", "drive"), "engine.py",
            ("engine.py", "Car.start")) in {e[:5] for e in edges}
    rebuild_graph(ff.store, ff.repo_id())
    assert edges == _graph(ff)[0]


@pytest.mark.parametrize("change", ["definition renamed", "file removed"])
def test_a_patch_that_would_keep_an_edge_to_a_definition_gone_is_not_made(
        index_on_each_store, monkeypatch, change):
    """Should the files a change reaches be missed, the graph is resolved whole rather than
    patched into edges that lead nowhere."""
    root, ff = index_on_each_store(CHAIN)
    stored = ff.store.all_edges(ff.repo_id())
    if change == "file removed":
        (root / "engine.py").unlink()
        changed = str(root / "engine.py")
    else:
        changed = _edit(root, "engine.py", "class Engine:", "class Motor:")
    ff.index(embed=False, changed=[changed], graph_later=True)
    monkeypatch.setattr(patch_module, "naming", lambda names: re.compile("(?!)"))
    assert not patch_graph(ff.store, ff.repo_id())
    assert ff.store.all_edges(ff.repo_id()) == stored


def test_a_file_moved_to_another_package_reaches_the_files_importing_it(
        index_on_each_store):
    """Java: the package a file declares, not its folder, says what an import of the
    package takes."""
    root, ff = index_on_each_store({
        "src/lib/PEngine.java": "package p;\n\npublic class Engine {\n"
                                "    public void start() {}\n}\n",
        "src/lib/QEngine.java": "package q;\n\npublic class Engine {\n"
                                "    public void start() {}\n}\n",
        "src/app/Driver.java": "package app;\n\nimport p.*;\n\npublic class Driver {\n"
                               "    void drive() {\n        Engine engine = new Engine();\n"
                               "        engine.start();\n    }\n}\n",
        **{f"src/other/O{n}.java": f"package other;\n\nclass O{n} {{\n    void o() {{}}\n}}\n"
           for n in range(6)},
    })
    driver = ("src/app/Driver.java", "Driver.drive")
    engine = "src/lib/PEngine.java"
    assert ("call", driver[0], driver, engine, (engine, "Engine.start")) in {
        e[:5] for e in _graph(ff)[0]}
    changed = _edit(root, "src/lib/PEngine.java", "package p;", "package q;")
    ff.index(embed=False, changed=[changed], graph_later=True)
    assert patch_graph(ff.store, ff.repo_id())
    edges = _graph(ff)[0]
    assert not any(e[1] == driver[0] and e[3] == "src/lib/PEngine.java" for e in edges)
    rebuild_graph(ff.store, ff.repo_id())
    assert edges == _graph(ff)[0]


def test_a_file_added_and_one_taken_away_patch_the_graph(indexed):
    root, ff = indexed
    _, ranks_before, file_ranks_before = _graph(ff)
    gone = "fourfold/discovery/flags.py"
    assert file_ranks_before[gone] > 0
    (root / "fourfold/extra.py").write_text(
        "from .errors import FourfoldError\n\ndef extra():\n    raise FourfoldError()\n")
    (root / gone).unlink()
    ff.index(embed=False, changed=[str(root / "fourfold/extra.py"), str(root / gone)],
             graph_later=True)
    assert patch_graph(ff.store, ff.repo_id())
    edges, ranks, file_ranks = _graph(ff)
    assert ("call", "fourfold/extra.py", ("fourfold/extra.py", "extra"), "fourfold/errors.py",
            ("fourfold/errors.py", "FourfoldError")) in {e[:5] for e in edges}
    assert not any(gone in (e[1], e[3]) for e in edges)
    # the file gone loses its ranks and its definitions', the new one has the lowest
    extra = "fourfold/extra.py"
    assert file_ranks == {p: r for p, r in file_ranks_before.items() if p != gone} | {
        extra: min(file_ranks_before.values())}
    assert ranks == {k: r for k, r in ranks_before.items() if k[0] != gone} | {
        (extra, "extra"): min(ranks_before.values())}
    assert {i.path for i in ff.store.graph_inputs(ff.repo_id())} == {
        f.path for f in ff.store.files(ff.repo_id())}
    rebuild_graph(ff.store, ff.repo_id())
    assert edges == _graph(ff)[0]


def test_a_file_added_to_a_go_module_root_reaches_the_files_importing_the_module(
        index_on_each_store):
    """Go imports a package by its folder, and the module's root folder by the module path
    go.mod names: a file added there is imported by every file importing the module."""
    root, ff = index_on_each_store({
        "go.mod": "module example.com/shop\n\ngo 1.21\n",
        "shop.go": "package shop\n\nfunc Run() int {\n\treturn 1\n}\n",
        "cmd/main.go": "package main\n\nimport \"example.com/shop\"\n\n"
                       "func main() {\n\tshop.Run()\n}\n",
        **{f"other{n}/o.go": f"package other{n}\n\nfunc O() {{}}\n" for n in range(6)},
    })
    (root / "more.go").write_text("package shop\n\nfunc More() int {\n\treturn 2\n}\n")
    ff.index(embed=False, changed=[str(root / "more.go")], graph_later=True)
    assert patch_graph(ff.store, ff.repo_id())
    edges = _graph(ff)[0]
    assert ("import", "cmd/main.go", None, "more.go", None) in {e[:5] for e in edges}
    rebuild_graph(ff.store, ff.repo_id())
    assert edges == _graph(ff)[0]


FILLERS = {f"filler/f{n}.py": f"def filler{n}():\n    return {n}\n" for n in range(8)}
REACH = {  # a tree, an edit (path -> text, None: taken away), whether it is patched
    "a method named as a receiver word, added elsewhere": (
        {"node.py": "class Node:\n    def parent(self):\n        return None\n",
         "walk.py": "def up(n):\n    return n.parent()\n",
         "tree.py": "class Tree:\n    def root(self):\n        return None\n"},
        {"tree.py": "class Tree:\n    def root(self):\n        return None\n\n"
                    "    def parent(self):\n        return None\n"}, True),
    "a class made a function, its nested class no longer a type's member": (
        {"m.py": "class Outer:\n    class Inner:\n        pass\n",
         "use.py": "def go():\n    return Inner()\n"},
        {"m.py": "def Outer():\n    class Inner:\n        pass\n"}, True),
    "a package's __init__.py added": (
        {"src/util/helpers.py": "def helper_fn():\n    return 1\n",
         "app/main.py": "import util.helpers\n"},
        {"src/__init__.py": ""}, False),
    "an Elixir module's file added, found by its path in snake case": (
        {"web/controller.ex": "defmodule Web.Controller do\n  alias Acme.HttpClient\n"
                              "  def go do\n    HttpClient.fetch(1)\n  end\nend\n"},
        {"acme/http_client.ex": "defmodule Other.Thing do\n  def run(x) do\n    x\n"
                                "  end\nend\n"}, True),
    "a definition named by no word character added": (
        {"app.js": "import { $ } from './dom';\nexport function go() {\n  return $('#x');\n}\n",
         "dom.js": "export function query(s) {\n  return s;\n}\n"},
        {"dom.js": "export function query(s) {\n  return s;\n}\n"
                   "export function $(s) {\n  return query(s);\n}\n"}, False),
    "an attribute named by no word character, typed by a class renamed": (
        {"lib.js": "export class Foo {\n  run() {\n    return 1;\n  }\n}\n",
         "app.js": "import { Foo } from './lib';\nexport class A {\n  constructor() {\n"
                   "    this.$ = new Foo();\n  }\n  go() {\n    return this.$.run();\n  }\n}\n"},
        {"lib.js": "export class Bar {\n  run() {\n    return 1;\n  }\n}\n"}, False),
    "a module added beside the folder of its name, reached by `from . import`": (
        {"pkg/__init__.py": "", "pkg/sub/__init__.py": "",
         "pkg/sub/m.py": "from . import helper\n\n\ndef go():\n    return helper()\n"},
        {"pkg/sub.py": "def other():\n    return 1\n"}, False),
    "a file whose name starts with a dot, sourced": (
        {"run.sh": "source ./.bashrc\necho hi\n"}, {".bashrc": "export X=1\n"}, True),
    "a module whose name starts with a dot, imported": (
        {"app.js": "import cfg from './.config';\nexport function go() { return cfg; }\n"},
        {".config.js": "export default 1;\n"}, True),
    "a folder's index.js taken away": (
        {"lib/index.js": "export function setup() { return 2; }\n",
         "lib/sub/a.js": "import cfg from '..';\nexport function go() { return cfg; }\n"},
        {"lib/index.js": None}, False),
}


@pytest.mark.parametrize("case", REACH)
def test_an_edit_reaching_files_by_no_name_of_its_own(make_tree, case):
    """A patch is made only where the names a change reaches are the names it changed."""
    tree, edit, patched = REACH[case]
    root = make_tree(tree | FILLERS)
    ff = Fourfold(root)
    ff.index(embed=False)
    for path, text in edit.items():
        if text is None:
            (root / path).unlink()
        else:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
    ff.index(embed=False, changed=[str(root / path) for path in edit], graph_later=True)
    assert patch_graph(ff.store, ff.repo_id()) == patched
    edges = _graph(ff)[0] if patched else None
    rebuild_graph(ff.store, ff.repo_id())
    assert not patched or edges == _graph(ff)[0]


def test_a_name_that_is_a_number_reaches_only_the_files_spelling_it(make_tree, monkeypatch):
    """A file named by a number (`3.h`) is looked for where a reference spells the number
    as a name, not where it is a reference's line number (every file with three lines)."""
    root = make_tree({"serial.c": '#include "3.h"\nint go(void) { return port(); }\n',
                      **{f"f{n}.c": f"int f{n}(void) {{\n  int x = 1;\n  return g(x);\n}}\n"
                         for n in range(8)}})
    ff = Fourfold(root)
    ff.index(embed=False)
    (root / "3.h").write_text("int port(void);\n")
    ff.index(embed=False, changed=[str(root / "3.h")], graph_later=True)
    resolved = []
    resolve = patch_module.resolve_into
    monkeypatch.setattr(patch_module, "resolve_into", lambda *args, only, **kwargs: (
        resolved.append(set(only)), resolve(*args, only=only, **kwargs)))
    assert patch_graph(ff.store, ff.repo_id())
    assert resolved == [{"3.h", "serial.c"}]
    edges = _graph(ff)[0]
    assert ("import", "serial.c", None, "3.h", None) in {e[:5] for e in edges}
    rebuild_graph(ff.store, ff.repo_id())
    assert edges == _graph(ff)[0]


def test_a_file_of_no_import_rules_reaches_only_the_files_spelling_its_whole_name(
        make_tree, monkeypatch):
    """A template or a table added (no language resolves an import to it by its stem or its
    folder) is looked for by its whole name: an include that spells it, not every file that
    spells `render` or `widgets`."""
    root = make_tree({"widgets.py": "def render():\n    return 1\n",
                      "views.py": "from widgets import render\n\n\ndef page():\n"
                                  "    return render()\n",
                      "main.c": '#include "table.inc"\nint go(void) { return 0; }\n',
                      **FILLERS})
    ff = Fourfold(root)
    ff.index(embed=False)
    added = ["templates/widgets/render.html", "table.inc"]
    (root / "templates/widgets").mkdir(parents=True)
    (root / added[0]).write_text("<p>{{ render }}</p>\n")
    (root / added[1]).write_text("1, 2, 3\n")
    ff.index(embed=False, changed=[str(root / path) for path in added], graph_later=True)
    resolved = []
    resolve = patch_module.resolve_into
    monkeypatch.setattr(patch_module, "resolve_into", lambda *args, only, **kwargs: (
        resolved.append(set(only)), resolve(*args, only=only, **kwargs)))
    assert patch_graph(ff.store, ff.repo_id())
    assert resolved == [{*added, "main.c"}]
    edges = _graph(ff)[0]
    assert ("import", "main.c", None, "table.inc", None) in {e[:5] for e in edges}
    rebuild_graph(ff.store, ff.repo_id())
    assert edges == _graph(ff)[0]


def test_a_wildcard_import_changed_resolves_the_graph_whole(indexed, monkeypatch):
    root, ff = indexed
    before = _graph(ff)
    stored = ff.store.all_edges(ff.repo_id())
    paths = [_prepend(root, "fourfold/errors.py", "from .model import *\n")]
    ff.index(embed=False, changed=paths, graph_later=True)
    decoded = []
    decode_input = patch_module.decode_input
    monkeypatch.setattr(patch_module, "decode_input",
                        lambda *a: decoded.append(a) or decode_input(*a))
    assert not patch_graph(ff.store, ff.repo_id())
    # told from the changed files alone, before the others are read
    assert len(decoded) <= 2 * len(paths)
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
