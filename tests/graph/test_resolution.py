"""How sure each edge is: exact, inferred receiver types, guesses by name, and receivers of
built-in or foreign types that never link to the repository's methods."""
from __future__ import annotations

import numpy as np
import pytest

from fourfold import Fourfold
from fourfold.graph.facts import Edge, FileFacts
from fourfold.graph.resolve import resolve_graph
from fourfold.graph.centrality import IndexedEdges, rank_indexed
from fourfold.parsing import parse_file
from fourfold.store.base import Resolution

# A repository class whose methods share their names with those of dict, list and str.
REGISTRY = (
    "class Registry:\n"
    "    def setdefault(self, key, value):\n"
    "        return value\n"
    "\n"
    "    def append(self, item):\n"
    "        return item\n"
    "\n"
    "    def join(self, parts):\n"
    "        return parts\n"
)
BUILTINS = (
    "from collections import OrderedDict\n"
    "from .registry import Registry\n"
    "\n"
    "def uses_builtins(parts, x: dict, *args, **options):\n"
    "    d = {}\n"
    "    d.setdefault('a', 1)\n"
    "    made = dict()\n"
    "    made.setdefault('b', 2)\n"
    "    x.setdefault('c', 3)\n"
    "    options.setdefault('d', 4)\n"
    "    ordered = OrderedDict()\n"
    "    ordered.setdefault('e', 5)\n"
    "    items = []\n"
    "    items.append(1)\n"
    "    listed = list(parts)\n"
    "    listed.append(2)\n"
    "    sep = ', '\n"
    "    sep.join(parts)\n"
    "    ', '.join(parts)\n"
    "    return args\n"
    "\n"
    "def uses_registry(unknown):\n"
    "    r = Registry()\n"
    "    r.setdefault('k', 1)\n"
    "    unknown.setdefault('k', 2)\n"
)
TYPED = {
    "app/blueprints.py": (
        "class Blueprint:\n"
        "    def register(self, app, options):\n"
        "        return app\n"
    ),
    "app/plugins.py": (
        "class Plugin:\n"
        "    def register(self, app, options):\n"
        "        return app\n"
    ),
    "app/core.py": (
        "from __future__ import annotations\n"
        "\n"
        "import typing as t\n"
        "from .blueprints import Blueprint\n"
        "from .plugins import Plugin\n"
        "\n"
        "class App:\n"
        "    plugin: Plugin\n"
        "\n"
        "    def __init__(self, default: t.Optional[Blueprint] = None):\n"
        "        self.default = default\n"
        "        self.extra = Blueprint()\n"
        "\n"
        "    def register_blueprint(self, blueprint: Blueprint, **options):\n"
        "        blueprint.register(self, options)\n"
        "        self.extra.register(self, options)\n"
        "        self.default.register(self, options)\n"
        "        self.plugin.register(self, options)\n"
        "\n"
        "    def make(self) -> Blueprint:\n"
        "        return Blueprint()\n"
        "\n"
        "def run():\n"
        "    app = App()\n"
        "    app.register_blueprint(Blueprint())\n"
        "    made = app.make()\n"
        "    made.register(app, {})\n"
        "    alias = made\n"
        "    alias.register(app, {})\n"
        "    with Plugin() as plugin:\n"
        "        plugin.register(app, {})\n"
    ),
}


def resolve(files: dict[str, str]) -> list[Edge]:
    facts = {}
    for path, text in files.items():
        parsed = parse_file(text.encode(), "python")
        facts[path] = FileFacts("python", parsed.symbols, parsed.references)
    return resolve_graph(facts, parallel=False)


def calls(edges: list[Edge], src_symbol: str) -> dict[tuple[int, str], tuple]:
    """(line, name) -> (target qualname, resolution) of the calls made in `src_symbol`."""
    return {(e.line, e.name): (e.dst_symbol, e.resolution)
            for e in edges if e.kind == "call" and e.src_symbol == src_symbol}


def test_builtin_and_foreign_receivers_never_link_to_a_repository_method():
    edges = resolve({"pkg/registry.py": REGISTRY, "pkg/use.py": BUILTINS})
    made = calls(edges, "uses_builtins")
    for line, name in [(6, "d.setdefault"), (8, "made.setdefault"), (9, "x.setdefault"),
                       (10, "options.setdefault"), (12, "ordered.setdefault"),
                       (14, "items.append"), (16, "listed.append"), (18, "sep.join"),
                       (19, "?.join")]:
        assert made[(line, name)] == (None, Resolution.NONE), name
    registry = calls(edges, "uses_registry")
    assert registry[(24, "r.setdefault")] == ("Registry.setdefault", Resolution.INFERRED)
    # a receiver of unknown type: the one definition of the name, marked as a guess
    assert registry[(25, "unknown.setdefault")] == ("Registry.setdefault", Resolution.NAME_ONLY)


def test_receiver_types_from_annotations_constructors_and_attributes():
    edges = resolve(TYPED)
    register = calls(edges, "App.register_blueprint")
    assert register == {
        (15, "blueprint.register"): ("Blueprint.register", Resolution.INFERRED),  # parameter
        (16, "self.extra.register"): ("Blueprint.register", Resolution.INFERRED),  # self.x = C()
        (17, "self.default.register"): ("Blueprint.register", Resolution.INFERRED),  # Optional
        (18, "self.plugin.register"): ("Plugin.register", Resolution.INFERRED),  # class body
    }
    run = calls(edges, "run")
    assert run[(24, "App")] == ("App", Resolution.EXACT)
    assert run[(25, "app.register_blueprint")] == ("App.register_blueprint",
                                                   Resolution.INFERRED)
    assert run[(27, "made.register")] == ("Blueprint.register", Resolution.INFERRED)  # -> type
    assert run[(29, "alias.register")] == ("Blueprint.register", Resolution.INFERRED)
    assert run[(31, "plugin.register")] == ("Plugin.register", Resolution.INFERRED)  # with


def test_a_name_reassigned_to_another_type_is_not_inferred():
    edges = resolve({**TYPED, "app/mixed.py": (
        "from .blueprints import Blueprint\n"
        "from .plugins import Plugin\n"
        "\n"
        "def mixed(flag):\n"
        "    thing = Blueprint()\n"
        "    if flag:\n"
        "        thing = Plugin()\n"
        "    thing.register(None, {})\n"
    )})
    # two definitions of register and no single type: neither inferred nor guessed
    assert calls(edges, "mixed")[(8, "thing.register")] == (None, Resolution.NONE)


def test_centrality_leaves_out_guesses_by_name():
    edges = [Edge("call", "a.py", "f", "b.py", "g", 1, Resolution.EXACT, "g"),
             Edge("call", "a.py", "f", "b.py", "h", 2, Resolution.NAME_ONLY, "x.h"),
             Edge("call", "a.py", "f", "b.py", "i", 3, Resolution.INFERRED, "y.i")]
    indexed = IndexedEdges.of(edges)
    symbols, _ = rank_indexed(indexed)
    f, g, h, i = (indexed.symbols.index(("a.py", "f")), indexed.symbols.index(("b.py", "g")),
                  indexed.symbols.index(("b.py", "h")), indexed.symbols.index(("b.py", "i")))
    assert symbols[f].out_degree == 2 and symbols[g].in_degree == symbols[i].in_degree == 1
    assert h not in symbols


def test_edges_are_numbered_files_first_then_sources_then_targets():
    """The columns edges are stored and ranked by: files in the order given, then as edges
    name them; symbols as edges leave them, then as they reach them (the store maps each
    number back to its row, so any change of this order must be made on both sides)."""
    edges = [Edge("call", "b.py", "f", "c.py", "k", 1, Resolution.EXACT, "k"),
             Edge("import", "a.py", None, "b.py", None, 2, Resolution.EXACT, "b"),
             Edge("call", "c.py", "g", None, None, 3, Resolution.NONE, "len"),
             Edge("call", "a.py", "h", "b.py", "f", 4, Resolution.INFERRED, "x.f")]
    indexed = IndexedEdges.of(edges, ["z.py"])
    assert indexed.paths == ["z.py", "b.py", "c.py", "a.py"]
    assert indexed.symbols == [("b.py", "f"), ("c.py", "g"), ("a.py", "h"), ("c.py", "k")]
    assert indexed.src_file.tolist() == [1, 3, 2, 3]
    assert indexed.dst_file.tolist() == [2, 1, -1, 1]
    assert indexed.src_symbol.tolist() == [0, -1, 1, 2]
    assert indexed.dst_symbol.tolist() == [3, -1, -1, 0]
    assert indexed.line.tolist() == [1, 2, 3, 4]
    assert indexed.resolution.tolist() == [Resolution.EXACT, Resolution.EXACT,
                                           Resolution.NONE, Resolution.INFERRED]
    assert indexed.kinds == ["call", "import"] and indexed.kind.dtype == np.int8
    assert indexed.kind.tolist() == [0, 1, 0, 0]
    assert indexed.names == ["k", "b", "len", "x.f"] and indexed.name.tolist() == [0, 1, 2, 3]
    assert indexed.src_file.dtype == indexed.dst_symbol.dtype == indexed.line.dtype == np.int32


@pytest.fixture(scope="module")
def registry_index(tmp_path_factory):
    root = tmp_path_factory.mktemp("resolution") / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "registry.py").write_text(REGISTRY)
    (root / "pkg" / "use.py").write_text(BUILTINS)
    (root / "pkg" / "more.py").write_text(
        "from .registry import Registry\n"
        "\n"
        "def direct():\n"
        "    Registry().setdefault('k', 3)\n"
        "\n"
        "def guessed(thing):\n"
        "    thing.setdefault('k', 4)\n"
        "    direct()\n")
    ff = Fourfold(root, index_dir=root.parent / "index")
    ff.index(workers=1, embed=False)
    return ff


def test_references_rank_and_count_call_sites_by_name_only(registry_index):
    answer = registry_index.references("Registry.setdefault")
    rows = [(r["path"], r["line"], r["symbol"], r["resolved"], r["resolution"])
            for r in answer["results"]]
    # Registry().setdefault: a receiver that is no name is guessed by name too
    assert rows == [
        ("pkg/use.py", 24, "uses_registry", True, "inferred"),
        ("pkg/more.py", 4, "direct", False, "name_only"),
        ("pkg/more.py", 7, "guessed", False, "name_only"),
        ("pkg/use.py", 25, "uses_registry", False, "name_only"),
    ] + [row for row in rows[4:] if row[4] == "none"]
    assert all(row[4] == "none" for row in rows[4:])
    assert any(note.startswith("3 more call sites by name only") for note in answer["notes"])


def test_impact_walks_resolved_edges_and_counts_guesses(registry_index):
    answer = registry_index.impact("Registry.setdefault", depth=3)
    assert [(r["symbol"], r["distance"]) for r in answer["results"]] == [("uses_registry", 1)]
    assert any(note.startswith("3 more call sites by name only") for note in answer["notes"])


def test_go_receivers_parameters_fields_and_foreign_types():
    facts = {}
    for path, text in {
        "cmd/command.go": (
            "package cmd\n"
            "\n"
            "import \"github.com/spf13/pflag\"\n"
            "\n"
            "type Command struct {\n"
            "\tflags  *pflag.FlagSet\n"
            "\tparent *Command\n"
            "\tchildren []*Command\n"
            "}\n"
            "\n"
            "func (c *Command) SetOutput(w int) {}\n"
            "\n"
            "func (c *Command) Flags() *pflag.FlagSet { return c.flags }\n"
            "\n"
            "func NewCommand() *Command { return &Command{} }\n"
            "\n"
            "func (c *Command) Run(other *Command) {\n"
            "\tc.SetOutput(1)\n"
            "\tother.SetOutput(2)\n"
            "\tfs := pflag.NewFlagSet(\"x\", 0)\n"
            "\tfs.SetOutput(3)\n"
            "\tc.flags.SetOutput(4)\n"
            "\tc.parent.SetOutput(5)\n"
            "\tmade := NewCommand()\n"
            "\tmade.SetOutput(6)\n"
            "\tc.Flags().SetOutput(7)\n"
            "\tNewCommand().SetOutput(8)\n"
            "\tc.Parent(1, f(2)).Parent(3).SetOutput(9)\n"
            "\tfor _, child := range c.children {\n"
            "\t\tchild.SetOutput(10)\n"
            "\t}\n"
            "\tfor i := range c.children {\n"
            "\t\ti.SetOutput(11)\n"
            "\t}\n"
            "\tc.children[len(c.children)-1].SetOutput(12)\n"
            "}\n"
            "\n"
            "func (c *Command) Parent(n int, m int) *Command { return c.parent }\n"),
    }.items():
        parsed = parse_file(text.encode(), "go")
        facts[path] = FileFacts("go", parsed.symbols, parsed.references)
    made = calls(resolve_graph(facts, parallel=False), "Command.Run")
    inferred = ("Command.SetOutput", Resolution.INFERRED)
    assert made[(18, "c.SetOutput")] == inferred
    assert made[(19, "other.SetOutput")] == inferred
    assert made[(21, "fs.SetOutput")] == (None, Resolution.NONE)  # pflag's, not ours
    assert made[(22, "c.flags.SetOutput")] == (None, Resolution.NONE)
    assert made[(23, "c.parent.SetOutput")] == inferred
    assert made[(25, "made.SetOutput")] == inferred
    # a call on a call's result: typed by the declared result of each call in the chain
    assert made[(26, "c.Flags().SetOutput")] == (None, Resolution.NONE)  # a pflag.FlagSet
    assert made[(27, "NewCommand().SetOutput")] == inferred
    assert made[(28, "c.Parent().Parent().SetOutput")] == inferred
    # a range variable: an element of the slice it ranges over; an index is no element
    assert made[(30, "child.SetOutput")] == inferred
    assert made[(33, "i.SetOutput")][1] != Resolution.INFERRED
    assert made[(35, "c.children[].SetOutput")] == inferred  # an element, indexed in place


@pytest.mark.parametrize("language,path,source,caller,expected", [
    ("java", "src/App.java", (
        "class Dog { void bark() {} }\n"
        "class Cat { void bark() {} }\n"
        "class App {\n"
        "    private Dog pet;\n"
        "    Cat make() { return new Cat(); }\n"
        "    void main(Cat other) {\n"
        "        Dog d = new Dog();\n"
        "        d.bark();\n"
        "        other.bark();\n"
        "        this.pet.bark();\n"
        "        var made = new Cat();\n"
        "        made.bark();\n"
        "    }\n"
        "}\n"), "App.main",
     {(8, "d.bark"): "Dog.bark", (9, "other.bark"): "Cat.bark",
      (10, "this.pet.bark"): "Dog.bark", (12, "made.bark"): "Cat.bark"}),
    ("typescript", "src/app.ts", (
        "class Dog { bark() {} }\n"
        "class Cat { bark() {} }\n"
        "class App {\n"
        "  pet: Dog;\n"
        "  constructor() { this.spare = new Cat(); }\n"
        "  main(other: Cat) {\n"
        "    const d = new Dog();\n"
        "    d.bark();\n"
        "    other.bark();\n"
        "    this.pet.bark();\n"
        "    this.spare.bark();\n"
        "  }\n"
        "}\n"), "App.main",
     {(8, "d.bark"): "Dog.bark", (9, "other.bark"): "Cat.bark",
      (10, "this.pet.bark"): "Dog.bark", (11, "this.spare.bark"): "Cat.bark"}),
])
def test_receiver_types_in_typed_languages(language, path, source, caller, expected):
    parsed = parse_file(source.encode(), language)
    made = calls(resolve_graph({path: FileFacts(language, parsed.symbols, parsed.references)},
                               parallel=False), caller)
    assert {site: made[site] for site in expected} == {
        site: (qualname, Resolution.INFERRED) for site, qualname in expected.items()}


def test_go_package_variables_are_typed_from_any_file_of_the_package():
    """`var CommandLine = NewFlagSet(...)` in one file types `CommandLine.Bool(...)` in every
    file of the package (pflag: recall against go/types 0.736 -> 0.997)."""
    facts = {}
    for path, text in {
        "flag/flag.go": ("package flag\n\ntype FlagSet struct{}\n\n"
                         "func NewFlagSet(name string) *FlagSet { return &FlagSet{} }\n\n"
                         "func (f *FlagSet) Bool(name string) bool { return false }\n\n"
                         "var CommandLine = NewFlagSet(\"main\")\n\n"
                         "var Default = &FlagSet{}\n"),
        "flag/bool.go": ("package flag\n\nfunc Bool(name string) bool {\n"
                         "\treturn CommandLine.Bool(name)\n}\n\n"
                         "func Other(name string) bool {\n\treturn Default.Bool(name)\n}\n"),
    }.items():
        parsed = parse_file(text.encode(), "go")
        facts[path] = FileFacts("go", parsed.symbols, parsed.references)
    edges = resolve_graph(facts, parallel=False)
    assert calls(edges, "Bool") == {(4, "CommandLine.Bool"): ("FlagSet.Bool", Resolution.INFERRED)}
    assert calls(edges, "Other") == {(8, "Default.Bool"): ("FlagSet.Bool", Resolution.INFERRED)}
