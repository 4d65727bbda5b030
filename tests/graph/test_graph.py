"""Graph modality: import/call/inheritance resolution per language, centrality, impact, and
the graph built while indexing (in a forked child, or here when it dies)."""
from __future__ import annotations

import multiprocessing
import os

import numpy as np
import pytest

from fourfold import Fourfold
from fourfold import indexer as indexer_module
from fourfold.discovery.languages import detect_language
from fourfold.graph.centrality import impact, pagerank
from fourfold.graph.facts import Edge, FileFacts
from fourfold.graph.imports import parse_import
from fourfold.graph.resolve import resolve_graph
from fourfold.graph import build as build_module
from fourfold.graph import calls as calls_module
from fourfold.graph import patch as patch_module
from fourfold.graph.inputs import decode_symbols
from fourfold.graph.imports import DECLARATION, DEFAULT, MODULE, NAMED, NAMESPACE, WILDCARD
from fourfold.graph.centrality import IndexedEdges
from fourfold.model import Symbol
from fourfold.parsing import parse_file
from fourfold.parsing.grammars import get_parser
from fourfold.parsing.references import extract_references
from fourfold.store.base import (FileRecord, FileStamp, Resolution, compress_references,
                                 decode_references, decompress_references, encode_references)
from fourfold.store.sqlite import SQLiteStore


def build(tmp_path, files: dict[str, str]):
    facts, extra = {}, {}
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        lang = detect_language(p.name)
        if lang is None:
            extra[rel] = text
            continue
        res = parse_file(p.read_bytes(), lang)
        facts[rel] = FileFacts(lang, res.symbols, res.references)
    return resolve_graph(facts, extra_files=extra)


def find(edges, kind, src_path=None, src_symbol=..., dst_path=None, dst_symbol=..., name=None):
    out = []
    for e in edges:
        if e.kind != kind:
            continue
        if src_path is not None and e.src_path != src_path:
            continue
        if src_symbol is not ... and e.src_symbol != src_symbol:
            continue
        if dst_path is not None and e.dst_path != dst_path:
            continue
        if dst_symbol is not ... and e.dst_symbol != dst_symbol:
            continue
        if name is not None and e.name != name:
            continue
        out.append(e)
    return out


def edge(edges, *args, **kw):
    hits = find(edges, *args, **kw)
    assert hits, f"no {args} {kw} edge in:\n" + "\n".join(map(str, edges))
    return hits[0]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """The fixtures of every language below, indexed once (paths under py/, ts/, go/, ...)."""
    root = tmp_path_factory.mktemp("graph") / "repo"
    for rel, text in _all_fixtures().items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    ff = Fourfold(root, index_dir=root.parent / "index")
    ff.index(workers=1, embed=False)
    return ff


def dependents(ff: Fourfold, name: str, depth: int = 3) -> dict[tuple[str, str], int]:
    """(path, qualname) -> distance of every transitive dependent of the definition `name`."""
    rows = ff.impact(name, depth=depth, limit=10_000)["results"]
    return {(r["path"], r["symbol"]): r["distance"] for r in rows}


# ---------------------------------------------------------------------------------------------
# Python

PY = {
    "pkg/__init__.py": "from .models import User\n",
    "pkg/base.py": (
        "class Base:\n"
        "    def base_only(self):\n"
        "        return 1\n"
    ),
    "pkg/models.py": (
        "from .base import Base\n"
        "\n"
        "class User(Base):\n"
        "    def save(self):\n"
        "        self.validate()\n"
        "        self.base_only()\n"
        "        return write(self)\n"
        "\n"
        "    def validate(self):\n"
        "        return True\n"
        "\n"
        "def write(obj):\n"
        "    return obj\n"
    ),
    "pkg/service.py": (
        "from pkg.models import User, write\n"
        "import pkg.util as u\n"
        "\n"
        "def create():\n"
        "    user = User()\n"
        "    user.save()\n"
        "    u.log('x')\n"
        "    undefined_function()\n"
        "\n"
        "def ping(n):\n"
        "    return pong(n - 1)\n"
        "\n"
        "def pong(n):\n"
        "    return ping(n)\n"
    ),
    "pkg/util.py": (
        "from . import service\n"
        "\n"
        "def log(msg):\n"
        "    return service.ping(1)\n"
    ),
    "src/mylib/__init__.py": "",
    "src/mylib/core.py": "def thing():\n    return 2\n",
    "tests/test_core.py": "from mylib.core import thing\n\ndef test_thing():\n    assert thing() == 2\n",
}


def test_python_imports(tmp_path):
    edges = build(tmp_path, PY)
    edge(edges, "import", "pkg/service.py", dst_path="pkg/models.py")
    edge(edges, "import", "pkg/service.py", dst_path="pkg/util.py")
    edge(edges, "import", "pkg/models.py", dst_path="pkg/base.py", dst_symbol="Base")
    edge(edges, "import", "pkg/__init__.py", dst_path="pkg/models.py")
    # circular import util <-> service resolves in both directions
    edge(edges, "import", "pkg/util.py", dst_path="pkg/service.py")
    # src/ layout
    edge(edges, "import", "tests/test_core.py", dst_path="src/mylib/core.py", dst_symbol="thing")
    # a module outside the repository stays unresolved
    assert not find(edges, "import", "pkg/service.py", dst_path="pkg/__init__.py", dst_symbol="User")


def test_python_calls_and_inheritance(tmp_path):
    edges = build(tmp_path, PY)
    edge(edges, "inherit", "pkg/models.py", "User", "pkg/base.py", "Base")
    edge(edges, "call", "pkg/models.py", "User.save", "pkg/models.py", "User.validate")
    edge(edges, "call", "pkg/models.py", "User.save", "pkg/base.py", "Base.base_only")  # via base
    edge(edges, "call", "pkg/models.py", "User.save", "pkg/models.py", "write")
    edge(edges, "call", "pkg/service.py", "create", "pkg/models.py", "User")  # constructor
    edge(edges, "call", "pkg/service.py", "create", "pkg/models.py", "User.save")
    edge(edges, "call", "pkg/service.py", "create", "pkg/util.py", "log")  # alias module
    edge(edges, "call", "pkg/util.py", "log", "pkg/service.py", "ping")
    edge(edges, "call", "tests/test_core.py", "test_thing", "src/mylib/core.py", "thing")
    un = edge(edges, "call", "pkg/service.py", "create", name="undefined_function")
    assert un.resolution == Resolution.NONE and un.dst_path is None and un.dst_symbol is None


def test_python_impact_multi_hop_and_cycles(indexed):
    # the definition itself is not its own dependent
    assert dependents(indexed, "Base.base_only") == {("py/pkg/models.py", "User.save"): 1,
                                                     ("py/pkg/service.py", "create"): 2}
    # mutual recursion ping <-> pong terminates and reaches log through ping
    assert dependents(indexed, "ping", depth=10) == {("py/pkg/service.py", "pong"): 1,
                                                     ("py/pkg/util.py", "log"): 1,
                                                     ("py/pkg/service.py", "create"): 2}
    # depth bound
    assert dependents(indexed, "Base.base_only", depth=1) == {
        ("py/pkg/models.py", "User.save"): 1}
    # circular file imports: each file imports the other
    assert [r["path"] for r in indexed.importers("py/pkg/service.py")["results"]] == [
        "py/pkg/util.py"]
    assert [r["path"] for r in indexed.importers("py/pkg/util.py")["results"]] == [
        "py/pkg/service.py"]
    # callers of User.save: the call site in create, with its line
    sites = indexed.references("User.save")["results"]
    assert [(r["path"], r["line"]) for r in sites if r["resolved"]] == [("py/pkg/service.py", 6)]


# ---------------------------------------------------------------------------------------------
# TypeScript

TS = {
    "src/util.ts": (
        "export function helper(): number { return 1 }\n"
        "export class Base {\n"
        "  greet(): string { return 'hi' }\n"
        "}\n"
    ),
    "src/types.ts": "export interface Runnable {\n  run(): void\n}\n",
    "src/index.ts": "export * from './util'\n",
    "src/app/main.ts": (
        "import { helper, Base } from '../util'\n"
        "import { Runnable } from '../types'\n"
        "import * as lib from '..'\n"
        "export class App extends Base implements Runnable {\n"
        "  run(): void {\n"
        "    helper()\n"
        "    this.greet()\n"
        "    lib.helper()\n"
        "    missing()\n"
        "  }\n"
        "}\n"
    ),
}


def test_typescript(tmp_path):
    edges = build(tmp_path, TS)
    edge(edges, "import", "src/app/main.ts", dst_path="src/util.ts", dst_symbol="helper")
    edge(edges, "import", "src/app/main.ts", dst_path="src/types.ts")
    edge(edges, "import", "src/app/main.ts", dst_path="src/index.ts")  # directory index file
    edge(edges, "import", "src/index.ts", dst_path="src/util.ts")
    edge(edges, "inherit", "src/app/main.ts", "App", "src/util.ts", "Base")
    edge(edges, "inherit", "src/app/main.ts", "App", "src/types.ts", "Runnable")
    edge(edges, "call", "src/app/main.ts", "App.run", "src/util.ts", "helper", name="helper")
    edge(edges, "call", "src/app/main.ts", "App.run", "src/util.ts", "Base.greet")  # this + base
    edge(edges, "call", "src/app/main.ts", "App.run", "src/util.ts", "helper", name="lib.helper")
    un = edge(edges, "call", "src/app/main.ts", "App.run", name="missing")
    assert un.resolution == Resolution.NONE


def test_impact_through_calls_and_bases(indexed):
    assert dependents(indexed, "Base.greet") == {("ts/src/app/main.ts", "App.run"): 1}
    dist = dependents(indexed, "Reverse")
    assert dist[("go/main.go", "Server.Run")] == 1 and dist[("go/main.go", "main")] == 2
    m = "java/src/main/java/com/acme/"
    dist = dependents(indexed, "Animal.speak")
    assert dist[(m + "model/Dog.java", "Dog.bark")] == 1 and dist[(m + "App.java", "App.main")] == 2
    # `Circle::new(1.0).describe()` is resolved by the name alone: counted, not walked
    assert dependents(indexed, "square", depth=4) == {
        ("rust/src/shapes.rs", "Circle::area"): 1, ("rust/src/shapes.rs", "Circle::describe"): 2}
    assert indexed.impact("Circle::describe")["notes"][0].startswith(
        "1 more call site by name only")


# ---------------------------------------------------------------------------------------------
# Go

GO = {
    "go.mod": "module example.com/proj\n\ngo 1.22\n",
    "util/strings.go": "package util\n\nfunc Reverse(s string) string {\n\treturn s\n}\n",
    "base.go": "package main\n\ntype Base struct{}\n\nfunc (b *Base) Hello() {}\n",
    "main.go": (
        "package main\n"
        "\n"
        "import (\n"
        "\t\"fmt\"\n"
        "\t\"example.com/proj/util\"\n"
        ")\n"
        "\n"
        "type Server struct {\n"
        "\tBase\n"
        "}\n"
        "\n"
        "func (s *Server) Run() {\n"
        "\tutil.Reverse(\"x\")\n"
        "\ts.helper()\n"
        "\tfmt.Println(1)\n"
        "}\n"
        "\n"
        "func (s *Server) helper() {}\n"
        "\n"
        "func main() {\n"
        "\tsrv := &Server{}\n"
        "\tsrv.Run()\n"
        "}\n"
    ),
}


def test_go(tmp_path):
    edges = build(tmp_path, GO)
    edge(edges, "import", "main.go", dst_path="util/strings.go", name="example.com/proj/util")
    fmt = edge(edges, "import", "main.go", name="fmt")
    assert fmt.resolution == Resolution.NONE
    edge(edges, "inherit", "main.go", "Server", "base.go", "Base")  # struct embedding
    edge(edges, "call", "main.go", "Server.Run", "util/strings.go", "Reverse")
    edge(edges, "call", "main.go", "Server.Run", "main.go", "Server.helper")
    edge(edges, "call", "main.go", "main", "main.go", "Server.Run")
    println = edge(edges, "call", "main.go", "Server.Run", name="fmt.Println")
    assert println.resolution == Resolution.NONE


# ---------------------------------------------------------------------------------------------
# Java

JAVA = {
    "src/main/java/com/acme/model/Animal.java": (
        "package com.acme.model;\n\npublic abstract class Animal {\n"
        "    public void speak() {}\n}\n"
    ),
    "src/main/java/com/acme/model/Pet.java": "package com.acme.model;\n\npublic interface Pet {}\n",
    "src/main/java/com/acme/model/Dog.java": (
        "package com.acme.model;\n\n"
        "public class Dog extends Animal implements Pet {\n"
        "    public void bark() {\n"
        "        speak();\n"
        "    }\n"
        "}\n"
    ),
    "src/main/java/com/acme/App.java": (
        "package com.acme;\n\n"
        "import com.acme.model.Dog;\n"
        "import java.util.List;\n\n"
        "public class App {\n"
        "    void main() {\n"
        "        Dog d = new Dog();\n"
        "        d.bark();\n"
        "        Util.nothing();\n"
        "    }\n"
        "}\n"
    ),
}


def test_java(tmp_path):
    edges = build(tmp_path, JAVA)
    m = "src/main/java/com/acme/model/"
    app = "src/main/java/com/acme/App.java"
    edge(edges, "import", app, dst_path=m + "Dog.java", dst_symbol="Dog")
    assert edge(edges, "import", app, name="java.util.List").resolution == Resolution.NONE
    edge(edges, "inherit", m + "Dog.java", "Dog", m + "Animal.java", "Animal")  # same package
    edge(edges, "inherit", m + "Dog.java", "Dog", m + "Pet.java", "Pet")
    edge(edges, "call", m + "Dog.java", "Dog.bark", m + "Animal.java", "Animal.speak")  # implicit this
    edge(edges, "call", app, "App.main", m + "Dog.java", "Dog")
    edge(edges, "call", app, "App.main", m + "Dog.java", "Dog.bark")
    assert edge(edges, "call", app, "App.main", name="Util.nothing").resolution == Resolution.NONE


# ---------------------------------------------------------------------------------------------
# Rust

RUST = {
    "Cargo.toml": "[package]\nname = \"geo\"\n",
    "src/lib.rs": "mod shapes;\npub mod util;\n\nuse crate::shapes::Circle;\n\npub fn unit() -> f64 {\n    Circle::new(1.0).describe()\n}\n",
    "src/util.rs": "pub fn square(x: f64) -> f64 {\n    x * x\n}\n",
    "src/shapes.rs": (
        "use crate::util::square;\n"
        "\n"
        "pub trait Shape {\n"
        "    fn area(&self) -> f64;\n"
        "}\n"
        "\n"
        "pub struct Circle {\n"
        "    r: f64,\n"
        "}\n"
        "\n"
        "impl Shape for Circle {\n"
        "    fn area(&self) -> f64 {\n"
        "        square(self.r)\n"
        "    }\n"
        "}\n"
        "\n"
        "impl Circle {\n"
        "    pub fn new(r: f64) -> Circle {\n"
        "        Circle { r }\n"
        "    }\n"
        "    pub fn describe(&self) -> f64 {\n"
        "        self.area() + nowhere()\n"
        "    }\n"
        "}\n"
    ),
}


def test_rust(tmp_path):
    edges = build(tmp_path, RUST)
    edge(edges, "import", "src/lib.rs", dst_path="src/shapes.rs", name="mod shapes")
    edge(edges, "import", "src/lib.rs", dst_path="src/util.rs", name="mod util")
    edge(edges, "import", "src/lib.rs", dst_path="src/shapes.rs", dst_symbol="Circle")
    edge(edges, "import", "src/shapes.rs", dst_path="src/util.rs", dst_symbol="square")
    edge(edges, "inherit", "src/shapes.rs", "Circle", "src/shapes.rs", "Shape")
    area = find(edges, "call", "src/shapes.rs", dst_path="src/util.rs", dst_symbol="square")
    assert [(e.src_symbol, e.name, e.resolution) for e in area] == [
        ("Circle::area", "square", Resolution.EXACT)]
    describe = find(edges, "call", "src/shapes.rs", name="self.area")
    assert [(e.src_symbol, e.dst_path, e.dst_symbol, e.resolution) for e in describe] == [
        ("Circle::describe", "src/shapes.rs", "Circle::area", Resolution.INFERRED)]
    edge(edges, "call", "src/lib.rs", "unit", "src/shapes.rs", name="Circle::new")
    assert edge(edges, "call", "src/shapes.rs", name="nowhere").resolution == Resolution.NONE


def _imports(language: str, source: bytes) -> dict[str, tuple]:
    refs = extract_references(get_parser(language).parse(source), source, language, [])
    out = {}
    for r in refs:
        if r.kind == "import":
            imp = parse_import(r)
            out[r.name] = (imp.module, imp.kind, imp.name, imp.alias, imp.line)
    return out


def test_import_records():
    assert _imports("python", b"import os.path\nimport numpy as np\nfrom ..a import c as d, e\n"
                              b"from x import *\n") == {
        "os.path": ("os.path", MODULE, None, None, 1),
        "numpy as np": ("numpy", MODULE, None, "np", 2),
        "..a:c as d": ("..a", NAMED, "c", "d", 3),
        "..a:e": ("..a", NAMED, "e", None, 3),
        "x:*": ("x", WILDCARD, None, None, 4)}
    assert _imports("typescript", b"import D, { a as b } from './m'\nimport * as ns from '../n'\n"
                                  b"export * from './all'\n") == {
        "./m:default as D": ("./m", DEFAULT, "default", "D", 1),
        "./m:a as b": ("./m", NAMED, "a", "b", 1),
        "../n:* as ns": ("../n", NAMESPACE, None, "ns", 2),
        "./all:*": ("./all", WILDCARD, None, None, 3)}
    assert _imports("rust", b"mod shapes;\nuse crate::a::{B, C as D};\n") == {
        "mod shapes": ("shapes", DECLARATION, None, None, 1),
        "crate::a::B": ("crate::a::B", MODULE, None, None, 2),
        "crate::a::C as D": ("crate::a::C", MODULE, None, "D", 2)}


# ---------------------------------------------------------------------------------------------
# Centrality


def _dense_pagerank(n, src, dst, d=0.85):
    m = np.zeros((n, n))
    out = np.bincount(src, minlength=n)
    for s, t in zip(src, dst):
        m[t, s] += 1.0 / out[s]
    m[:, out == 0] = 1.0 / n
    g = d * m + (1 - d) / n
    vals, vecs = np.linalg.eig(g)
    v = np.real(vecs[:, np.argmax(np.real(vals))])
    return v / v.sum()


def test_pagerank_matches_dense_solution_with_dangling_nodes():
    src = [0, 0, 1, 2, 3, 3]
    dst = [1, 2, 2, 0, 2, 4]  # node 4 is dangling
    pr = pagerank(5, src, dst, tol=1e-12)
    assert pr.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(pr, _dense_pagerank(5, src, dst), atol=1e-8)
    assert pr.argmax() == 2


def test_pagerank_refuses_an_edge_outside_its_nodes():
    for src, dst in [([0], [-1]), ([-1], [0]), ([0], [3]), ([3], [0])]:
        with pytest.raises(ValueError, match="not one of the 3 nodes"):
            pagerank(3, src, dst)
    assert pagerank(3, [], []).tolist() == pytest.approx([1 / 3] * 3)


def test_pagerank_tolerance_does_not_scale_with_size():
    rng = np.random.default_rng(0)
    n = 20000
    src = rng.integers(0, n, 100000)
    dst = rng.integers(0, n, 100000)
    pr = pagerank(n, src, dst, tol=1e-6)
    again = pagerank(n, src, dst, tol=1e-12)
    assert np.abs(pr - again).sum() < 1e-5


def test_centrality_of_files_and_symbols(indexed):
    central = indexed.map(limit=10_000)
    files = {f["path"]: f["rank"] for f in central["files"]}
    assert files["py/pkg/models.py"] > files["py/tests/test_core.py"]
    assert sum(files.values()) / len(files) == pytest.approx(1.0, rel=1e-4)  # 1.0: average
    symbols = {(s["path"], s["symbol"]) for s in central["symbols"]}
    assert ("py/pkg/models.py", "User.save") in symbols
    # User.save: called once, calls three definitions
    assert [(r["path"], r["symbol"], r["resolved"])
            for r in indexed.references("User.save")["results"]] == [
        ("py/pkg/service.py", "create", True)]
    assert [(r["path"], r["symbol"], r["resolved"])
            for r in indexed.callees("User.save")["results"]] == [
        ("py/pkg/models.py", "User.validate", True), ("py/pkg/base.py", "Base.base_only", True),
        ("py/pkg/models.py", "write", True)]


def test_a_snapshot_reads_the_ranks_of_the_files_asked_for_once(indexed, monkeypatch):
    from fourfold.store.snapshot import IndexSnapshot
    store = indexed.store
    snapshot = IndexSnapshot(store, store.generation(), store.repos()[0].repo_id)
    asked = []
    ranks_of_files = store.ranks_of_files
    monkeypatch.setattr(store, "ranks_of_files",
                        lambda repo, paths: asked.append(set(paths)) or ranks_of_files(repo, paths))
    central = indexed.map(limit=10_000)
    models = "py/pkg/models.py"
    ranks = snapshot.centrality([models])
    assert round(ranks[models], 6) == next(
        f["rank"] for f in central["files"] if f["path"] == models)  # map() rounds them
    assert round(ranks[(models, "User.save")], 6) == next(
        s["rank"] for s in central["symbols"] if (s["path"], s["symbol"]) == (models, "User.save"))
    assert all(key == models or key[0] == models for key in ranks)  # no other file's
    snapshot.centrality([models, "py/pkg/service.py"])
    assert asked == [{models}, {"py/pkg/service.py"}]  # each file read once


def test_impact_limit_bounds_output():
    adj = {0: set(range(1, 5001))}
    for i in range(1, 5001):
        adj[i] = {0, i + 1}
    dist = impact(lambda node: adj.get(node, ()), [0], depth=3, limit=100)
    assert len(dist) == 100 and all(d == 1 for d in dist.values())


# ---------------------------------------------------------------------------------------------
# Other languages: one import / inheritance / call each

MULTI = {
    "c/include/lib/util.h": "int helper(int x);\n",
    "c/src/main.c": "#include \"../include/lib/util.h\"\nint main() { return helper(1); }\n",
    "rb/lib/app/base.rb": "module App\n  class Base\n    def hello; end\n  end\nend\n",
    "rb/lib/kid.rb": "require 'app/base'\nclass Kid < App::Base\n  def run\n    hello\n  end\nend\n",
    "php/src/Models/User.php": "<?php\nnamespace App\\Models;\nclass User { public function save() {} }\n",
    "php/src/Svc.php": ("<?php\nnamespace App;\nuse App\\Models\\User;\n"
                        "class Svc extends User {\n  function go() { $this->save(); }\n}\n"),
    "kt/src/com/acme/Base.kt": "package com.acme\nopen class Base { fun greet() {} }\nfun topLevel() {}\n",
    "kt/src/com/acme/App.kt": ("package com.acme.app\nimport com.acme.Base\nimport com.acme.topLevel\n"
                               "class App : Base() {\n  fun run() { greet(); topLevel() }\n}\n"),
    "cs/Acme/Base.cs": "namespace Acme.Core { public class Base { public void Greet() {} } }\n",
    "cs/Acme/Prog.cs": "using Acme.Core;\nnamespace Acme.App { class Prog : Base {\n void Run() { Greet(); } } }\n",
    "ex/lib/acme/util.ex": "defmodule Acme.Util do\n  def helper(x), do: x\nend\n",
    "ex/lib/acme/main.ex": "defmodule Acme.Main do\n  alias Acme.Util\n  def run do\n    Util.helper(1)\n  end\nend\n",
    "lua/a/b.lua": "local M = {}\nfunction M.helper() end\nreturn M\n",
    "lua/main.lua": "local b = require(\"a.b\")\nlocal function run() b.helper() end\n",
}


@pytest.mark.parametrize("src,dst,call,inherits", [
    ("c/src/main.c", "c/include/lib/util.h", "helper", False),
    ("rb/lib/kid.rb", "rb/lib/app/base.rb", "hello", True),
    ("php/src/Svc.php", "php/src/Models/User.php", "$this->save", True),
    ("kt/src/com/acme/App.kt", "kt/src/com/acme/Base.kt", "greet", True),
    ("cs/Acme/Prog.cs", "cs/Acme/Base.cs", "Greet", True),
    ("ex/lib/acme/main.ex", "ex/lib/acme/util.ex", "Util.helper", False),
    ("lua/main.lua", "lua/a/b.lua", "b.helper", False),
])
def test_other_languages(tmp_path, src, dst, call, inherits):
    edges = build(tmp_path, MULTI)
    edge(edges, "import", src, dst_path=dst)
    assert edge(edges, "call", src, dst_path=dst, name=call).resolution >= Resolution.INFERRED
    assert bool(find(edges, "inherit", src, dst_path=dst)) is inherits


def test_remembered_resolution_still_sees_nested_definitions_and_local_imports(tmp_path):
    # Calls from the methods of one class share one resolution, but a method with a nested
    # definition of the same name, or a function-local import, must get its own answer.
    edges = build(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/other.py": "def helper():\n    return 2\n",
        "pkg/shapes.py": (
            "def helper():\n    return 1\n\n"
            "class Shape:\n"
            "    def area(self):\n        return helper()\n\n"
            "    def size(self):\n        return helper()\n\n"
            "    def nested(self):\n"
            "        def helper():\n            return 3\n"
            "        return helper()\n\n"
            "def local_import():\n"
            "    from pkg.other import helper\n"
            "    return helper()\n\n"
            "def plain():\n    return helper()\n"),
    })
    def target(src):
        e = edge(edges, "call", src_path="pkg/shapes.py", src_symbol=src, name="helper")
        return e.dst_path, e.dst_symbol
    assert target("Shape.area") == ("pkg/shapes.py", "helper")
    assert target("Shape.size") == ("pkg/shapes.py", "helper")
    assert target("Shape.nested") == ("pkg/shapes.py", "Shape.nested.helper")
    assert target("local_import") == ("pkg/other.py", "helper")
    assert target("plain") == ("pkg/shapes.py", "helper")


def test_a_local_import_that_resolves_nowhere_does_not_hide_the_files_own_definition(tmp_path):
    edges = build(tmp_path, {
        "src/lib.rs": "mod a;\n",
        "src/a.rs": "pub fn helper() {}\n\n"
                    "mod tests {\n    fn t() {\n        use super::helper;\n        helper();\n"
                    "    }\n}\n",
    })
    e = edge(edges, "call", src_path="src/a.rs", name="helper")
    assert (e.dst_path, e.dst_symbol) == ("src/a.rs", "helper")


def _all_fixtures() -> dict[str, str]:
    return {f"{lang}/{rel}": text for lang, files in
            (("py", PY), ("ts", TS), ("go", GO), ("java", JAVA), ("rust", RUST))
            for rel, text in files.items()}


def test_calls_resolved_in_two_processes_equal_one(tmp_path, monkeypatch):
    serial = build(tmp_path / "serial", _all_fixtures())
    marker = tmp_path / "helper-ran"
    rows = calls_module._use_rows

    def helper(*args):  # runs in the forked helper: leaves a mark the test can see
        marker.write_text("yes")
        return rows(*args)

    monkeypatch.setattr(calls_module, "PARALLEL_REFERENCES", 0)
    monkeypatch.setattr(calls_module, "_use_rows", helper)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    parallel = build(tmp_path / "parallel", _all_fixtures())
    assert marker.read_text() == "yes"
    assert len(find(serial, "call")) == 30
    assert parallel == serial


@pytest.mark.parametrize("helper", [False, True])
def test_uses_decoded_file_by_file_give_the_same_edges(tmp_path, monkeypatch, helper):
    """resolve_and_rank keeps each file's calls and type uses encoded until their edges are
    made, in one process or split with a helper: the same edges, numbered the same, as
    with every reference decoded first."""
    facts = build_module.GraphFacts()
    for rel, text in _all_fixtures().items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        language = detect_language(path.name)
        if language is None:
            facts.extra[rel] = text
            continue
        parsed = parse_file(path.read_bytes(), language)
        facts.add(rel, language, parsed.symbols,
                  compress_references(encode_references(parsed.references)))
    decoded = {path: FileFacts(language, decode_symbols(symbols),
                               decode_references(decompress_references(refs)))
               for path, (language, symbols, refs) in sorted(facts.files.items())}
    expected = IndexedEdges.of(resolve_graph(decoded, extra_files=facts.extra, parallel=False),
                               decoded)
    if helper:
        monkeypatch.setattr(calls_module, "PARALLEL_REFERENCES", 0)
        monkeypatch.setattr(os, "cpu_count", lambda: 2)
    got = build_module.resolve_and_rank(facts, parallel=helper).edges
    assert len(expected.kind) > 50 and "call" in expected.kinds
    for column in ("paths", "symbols", "kinds", "names"):
        assert list(getattr(got, column)) == list(getattr(expected, column)), column
    for column in ("src_file", "src_symbol", "dst_file", "dst_symbol", "line", "resolution",
                   "kind", "name"):
        assert getattr(got, column).tolist() == getattr(expected, column).tolist(), column


def test_a_daemonic_process_resolves_alone(tmp_path, monkeypatch):
    # a daemonic process (a worker of a pool) may not have children: no helper, same edges
    serial = build(tmp_path / "serial", _all_fixtures())
    monkeypatch.setattr(calls_module, "PARALLEL_REFERENCES", 0)
    ctx = multiprocessing.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)
    worker = ctx.Process(target=lambda: sender.send(build(tmp_path / "daemon", _all_fixtures())),
                         daemon=True)
    worker.start()
    assert receiver.poll(60)
    assert receiver.recv() == serial
    worker.join(10)
    assert worker.exitcode == 0


def test_calls_are_resolved_here_when_the_helper_process_dies(tmp_path, monkeypatch):
    serial = build(tmp_path / "serial", _all_fixtures())
    monkeypatch.setattr(calls_module, "PARALLEL_REFERENCES", 0)
    monkeypatch.setattr(calls_module, "_use_rows", lambda *args: os._exit(3))
    assert build(tmp_path / "parallel", _all_fixtures()) == serial


def test_package_indexes_forgotten_and_rebuilt_give_the_same_edges(tmp_path, monkeypatch):
    """same_package keeps the name indexes of the last few folders only; with one kept, a
    folder's is built again when its files come back after another folder's, and no edge
    changes."""
    model = "java/src/main/java/com/acme/model/"
    files = {**_all_fixtures(), model + "Cat.java": (  # after App.java, in Dog's folder
        "package com.acme.model;\n\npublic class Cat extends Animal {\n"
        "    void play() { Dog friend = new Dog(); }\n}\n")}
    kept = build(tmp_path / "kept", files)
    asked = []
    package_names = calls_module.Resolver._package_names

    def recording(self, t):
        asked.append(t.dir)
        return package_names(self, t)

    monkeypatch.setattr(calls_module, "PACKAGES_KEPT", 1)
    monkeypatch.setattr(calls_module.Resolver, "_package_names", recording)
    assert build(tmp_path / "forgotten", files) == kept
    runs = [d for i, d in enumerate(asked) if i == 0 or asked[i - 1] != d]
    assert runs.count(model.rstrip("/")) == 2  # forgotten for App.java's folder, built again
    assert find(kept, "inherit", model + "Cat.java", dst_path=model + "Animal.java")
    assert find(kept, "call", model + "Cat.java", dst_path=model + "Dog.java")


def _stored_graph(ff: Fourfold) -> tuple[list, list, list]:
    """An index's edges and ranks, by path and qualname rather than by the store's ids."""
    store = ff.store
    files = {f.file_id: f.path for f in store.files()}
    symbols = {row[0]: (row[1], row[3]) for repo in store.repos()
               for row in store.graph_symbols(repo.repo_id)}
    edges = [(e.kind, files[e.src_file], symbols.get(e.src_symbol), files.get(e.dst_file),
              symbols.get(e.dst_symbol), e.line, e.name, e.resolution) for e in store.all_edges()]
    symbol_rank, file_rank = store.centrality()
    return (sorted(edges, key=repr),
            sorted(((symbols[k], round(v, 9)) for k, v in symbol_rank.items()), key=repr),
            sorted((files[k], round(v, 9)) for k, v in file_rank.items()))


def test_a_graph_written_with_symbols_read_file_by_file_is_the_same(make_tree, monkeypatch):
    """The stored ids of the graph's symbols are read a few files at a time: one file at a
    time gives the same stored graph."""
    ff = Fourfold(make_tree(_all_fixtures()))
    ff.index(workers=1, embed=False)
    whole = _stored_graph(ff)
    monkeypatch.setattr(build_module, "SYMBOL_FILES", 1)
    repo = ff.store.repos()[0].repo_id
    build_module.rebuild_graph(ff.store, repo, parallel=False)
    assert _stored_graph(ff) == whole
    assert len([e for e in whole[0] if e[0] == "call" and e[4] is not None]) > 10


def _in_child_only(monkeypatch, child_does):
    """Make the graph's resolution call `child_does` first, in a forked child only."""
    parent, real = os.getpid(), build_module.resolve_and_rank

    def resolve(*args, **kwargs):
        if os.getpid() != parent:
            child_does()
        return real(*args, **kwargs)
    monkeypatch.setattr(build_module, "resolve_and_rank", resolve)


def test_graph_resolved_while_files_are_written_equals_a_rebuild(make_tree, monkeypatch,
                                                                  tmp_path):
    marker = tmp_path / "resolved-in-child"
    _in_child_only(monkeypatch, lambda: marker.write_text("yes"))
    monkeypatch.setattr(indexer_module, "PARALLEL_BYTES", 0)  # parsed on the pool, however small
    rebuild = build_module.rebuild_graph

    def no_fallback(*args, **kwargs):
        raise AssertionError("the child's graph was not used")
    monkeypatch.setattr(build_module, "rebuild_graph", no_fallback)
    facts_held = []  # files of the facts in this process, as the child starts and after
    real_start = build_module.start_resolving

    def start(facts):
        before = len(facts.files)
        child = real_start(facts)
        facts_held.append((before, len(facts.files)))
        return child
    monkeypatch.setattr(build_module, "start_resolving", start)
    ff = Fourfold(make_tree(_all_fixtures()))
    ff.index(workers=2, embed=False)
    assert marker.read_text() == "yes"
    assert facts_held[0][0] > 0 and facts_held == [(facts_held[0][0], 0)]  # the child's only
    resolved_meanwhile = _stored_graph(ff)
    assert [len(part) for part in resolved_meanwhile] == [60, 38, 21]  # edges, symbol, file ranks
    rebuild(ff.store, ff.store.repos()[0].repo_id, parallel=False)
    assert _stored_graph(ff) == resolved_meanwhile


def test_graph_is_resolved_here_when_the_resolving_child_dies(make_tree, monkeypatch, tmp_path):
    root = make_tree(_all_fixtures())
    serial = Fourfold(root, index_dir=tmp_path / "serial")
    serial.index(workers=1, embed=False)
    _in_child_only(monkeypatch, lambda: os._exit(3))
    monkeypatch.setattr(indexer_module, "PARALLEL_BYTES", 0)
    ff = Fourfold(root)
    ff.index(workers=2, embed=False)
    assert _stored_graph(ff) == _stored_graph(serial)


def test_graph_of_a_reindex_resolved_meanwhile_equals_a_fresh_index(make_tree, monkeypatch,
                                                                    tmp_path):
    # unchanged files' facts come from the store, changed ones from the parser; resolved
    # whole (a patch carries the ranks over, tests/graph/test_patch.py)
    monkeypatch.setattr(indexer_module, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(patch_module, "patch_graph", lambda *args: False)
    files = _all_fixtures()
    root = make_tree(files)
    ff = Fourfold(root)
    ff.index(workers=2, embed=False)
    (root / "py/pkg/base.py").write_text("class Base:\n    def renamed(self):\n        return 1\n")
    (root / "py/pkg/extra.py").write_text(
        "from .models import User\n\ndef make():\n    return User().save()\n")
    (root / "go/util/strings.go").unlink()
    summary = ff.index(workers=2, embed=False)
    assert summary.changed == 1 and summary.added == 1 and summary.deleted == 1
    fresh = Fourfold(root, index_dir=tmp_path / "fresh")
    fresh.index(workers=2, embed=False)
    assert _stored_graph(ff) == _stored_graph(fresh)
    assert any(e[1] == "py/pkg/extra.py" and e[4] == ("py/pkg/models.py", "User.save")
               for e in _stored_graph(ff)[0])


@pytest.mark.parametrize("workers", [1, 2])
def test_a_file_that_becomes_binary_leaves_the_graph(make_tree, monkeypatch, tmp_path, workers):
    monkeypatch.setattr(indexer_module, "PARALLEL_BYTES", 0)
    root = make_tree(_all_fixtures())
    ff = Fourfold(root)
    ff.index(workers=workers, embed=False)
    assert any(e[3] == "py/pkg/base.py" for e in _stored_graph(ff)[0])
    (root / "py/pkg/base.py").write_bytes(b"\0binary now\n")  # its only change
    summary = ff.index(workers=workers, embed=False)
    assert summary.skipped.get("binary") == 1
    edges, symbol_rank, file_rank = _stored_graph(ff)  # ids of removed rows would not map
    assert not any("py/pkg/base.py" in (e[1], e[3]) for e in edges)
    # patched: its ranks go, the others' carry over until a whole resolution
    assert not any(k[0] == "py/pkg/base.py" for k, _ in symbol_rank)
    assert "py/pkg/base.py" not in dict(file_rank)
    (root / "py/pkg/base.py").unlink()
    fresh = Fourfold(root, index_dir=tmp_path / "fresh")
    fresh.index(workers=workers, embed=False)
    assert edges == _stored_graph(fresh)[0]


def test_edges_from_a_file_the_store_lacks_are_not_written(tmp_path):
    store = SQLiteStore(tmp_path / "index.db")
    repo = store.ensure_repo("/r", "r")
    store.write_batch(repo, [FileRecord(
        "a.py", FileStamp(1, 1, 1, 1), "h", "python", 0, "def f(): g()\n",
        [Symbol("f", "f", "function", 1, 1)], [], compress_references("[]"), [], [])], [], [])
    edges = [Edge("call", "a.py", "f", None, None, 1, Resolution.NONE, "g"),
             Edge("call", "gone.py", "h", "a.py", "f", 3, Resolution.EXACT, "f")]
    graph = build_module.ResolvedGraph(IndexedEdges.of(edges), {}, {}, {})
    assert build_module.store_graph(store, repo, graph) == 1
    [kept] = store.all_edges(repo)
    assert (kept.kind, kept.line, kept.name, kept.dst_file) == ("call", 1, "g", None)



def test_graph_facts_hold_one_string_per_recurring_name():
    """A big repository's symbols and references are held at once: a name that recurs in a
    file (a qualified name equal to the name, a parent, a callee, an enclosing symbol) is
    one object, and nothing else about them changes."""
    from fourfold.store.base import decode_references, encode_references
    from fourfold.model import Reference

    def fresh(text: str) -> str:  # an equal string that is another object, as parsers give
        return "".join(list(text))

    parsed = [Symbol("Cache", fresh("Cache"), "class", 1, 9),
              Symbol("get", fresh("Cache.get"), fresh("method"), 2, 3, parent=fresh("Cache")),
              Symbol("put", fresh("Cache.put"), fresh("method"), 4, 5, parent=fresh("Cache")),
              Symbol('na\u00efve "\ud800"', 'm.na\u00efve "\ud800"', "function", 6, 7)]
    facts = build_module.GraphFacts()
    facts.add("a.py", "python", parsed, compress_references("[]"))
    symbols = decode_symbols(facts.files["a.py"][1])
    assert [(s.name, s.qualname, s.kind, s.parent) for s in symbols] == [
        (s.name, s.qualname, s.kind, s.parent) for s in parsed]
    assert symbols[0].qualname is symbols[0].name is symbols[1].parent is symbols[2].parent
    assert symbols[1].kind is symbols[2].kind
    refs = decode_references(encode_references(
        [Reference("call", "helper", 2, "caller_0"), Reference("call", "helper", 3, "caller_0"),
         Reference("import", "os", 1, None)]))
    assert refs == [Reference("call", "helper", 2, "caller_0"),
                    Reference("call", "helper", 3, "caller_0"), Reference("import", "os", 1)]
    assert refs[0].name is refs[1].name and refs[0].source is refs[1].source
    assert refs[0].kind is refs[1].kind


def test_a_file_table_finds_the_first_definition_of_a_qualified_name():
    """FileTable keeps a definition by qualified name only where its name differs; the
    answer is still the first definition in file order, whichever kind came first."""
    from fourfold.graph.facts import Definition
    from fourfold.graph.languages import language

    first_plain = Definition("run", "run", "function")
    first_qualified = Definition("Task.run", "run", "function")  # qualname "run", name other
    later_plain = Definition("run", "run", "variable")
    member = Definition("size", "Box.size", "field", "Box")
    other_member = Definition("size", "Box.size", "method", "Box")
    box = Definition("Box", "Box", "struct")

    def table(*symbols):
        return calls_module.FileTable("a.c", FileFacts("c", list(symbols)), language("c"))

    assert table(first_plain, first_qualified).qualified("run") is first_plain
    assert table(first_qualified, first_plain, later_plain).qualified("run") is first_qualified
    t = table(box, member, other_member)
    assert t.qualified("Box.size") is member and t.qualified("Box") is box
    assert t.qualified("size") is None and t.qualified("Nothing") is None
    assert t.qualified(None) is None
    assert list(t.members_of("Box")) == [member, other_member]
    assert list(t.members_of("size")) == []
    assert list(table(box, member).members_of("Box")) == [member]


def test_a_forked_result_is_read_once_the_child_has_ended():
    """The child's result goes through a file, read after the child's end, so the two
    processes never hold it at once; a child that dies gives the default."""
    import signal
    import time

    from fourfold.graph.forked import Forked

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    big = Forked.start(bytes, 20_000_000)  # more than a pipe holds
    assert big.result() == bytes(20_000_000) and big.process.exitcode == 0
    assert Forked.start(die).result("died") == "died"
    stopped = Forked.start(time.sleep, 60)
    assert not stopped.finished(0.1)
    stopped.close()
    assert stopped.process.exitcode == -signal.SIGTERM


def test_a_first_index_stopped_while_its_graph_was_resolved_says_so_then_is_finished(
        make_tree, monkeypatch):
    """Text and structure are written, the graph never was: graph answers say the graph is
    catching up (not a silent nothing), and the next question's ensure_indexed finishes
    it; a watcher's later run, whose graph exists, is left to its catch-up."""
    root = make_tree({"a.py": "from b import helper\n\n\ndef main():\n    return helper()\n",
                      "b.py": "def helper():\n    return 1\n"})
    ff = Fourfold(root)

    def stopped(*args, **kwargs):
        raise RuntimeError("stopped while resolving")

    monkeypatch.setattr(build_module, "rebuild_graph", stopped)
    with pytest.raises(RuntimeError):
        ff.index(embed=False)
    monkeypatch.undo()
    found = ff.references("helper")
    assert found["results"] == []
    assert any("catching up" in note for note in found["notes"]), found["notes"]
    assert ff.ensure_indexed() is not None
    found = ff.references("helper")
    assert [r["path"] for r in found["results"]] == ["a.py"]
    assert not any("catching up" in note for note in found["notes"])
    (root / "a.py").write_text("from b import helper\n\n\ndef main():\n    return helper() + 1\n")
    ff.index(embed=False, changed=[str(root / "a.py")], graph_later=True)
    assert ff.graph.behind()
    assert ff.ensure_indexed() is None  # the graph exists: the catch-up's to bring it on
    assert any("catching up" in note for note in ff.callees("main")["notes"])


def test_a_swift_module_is_its_swift_files(tmp_path):
    """`import Net` binds the Swift files of Sources/Net, not whatever else lies there."""
    edges = build(tmp_path, {
        "Sources/Net/Client.swift": "public func fetch() -> Int {\n    return 1\n}\n",
        "Sources/Net/README.md": "# Net\n",
        "Sources/App/main.swift": "import Net\n\nlet x = fetch()\n"})
    assert {e.dst_path for e in edges if e.kind == "import"} == {"Sources/Net/Client.swift"}
