"""Reference extraction: the imports, inheritance and calls the parser reads from each
language's syntax tree, how they are encoded, and which symbol each comes from."""
from __future__ import annotations

import pytest

from fourfold.parsing import parse_file
from fourfold.parsing.grammars import GRAMMARS, get_parser
from fourfold.parsing.references import extract_references


SAMPLES = {
    "python": ("import os\nfrom .u import h\nclass A(B):\n    def f(self):\n        self.g()\n", {"import", "inherit", "call"}),
    "javascript": ("import {a} from './x'\nclass A extends B { m() { a() } }\n", {"import", "inherit", "call"}),
    "typescript": ("import {a} from './x'\nclass A extends B implements I { m(): void { a() } }\n", {"import", "inherit", "call"}),
    "tsx": ("import X from './x'\nconst a = () => <X />\n", {"import", "call"}),
    "go": ("package m\nimport \"fmt\"\ntype S struct { B }\nfunc f() { fmt.Println() }\n", {"import", "inherit", "call"}),
    "rust": ("use a::b;\nimpl T for S { fn f(&self) { g(); } }\n", {"import", "inherit", "call"}),
    "java": ("import a.B;\nclass A extends B { void f() { g(); } }\n", {"import", "inherit", "call"}),
    "c": ("#include \"a.h\"\nint f() { return g(); }\n", {"import", "call"}),
    "cpp": ("#include <v>\nclass A : public B { void f() { g(); } };\n", {"import", "inherit", "call"}),
    "csharp": ("using A.B;\nclass C : D { void F() { G(); } }\n", {"import", "inherit", "call"}),
    "ruby": ("require 'x'\nclass A < B\n  def f\n    g(1)\n  end\nend\n", {"import", "inherit", "call"}),
    "php": ("<?php\nuse A\\B;\nclass C extends D { function f() { g(); } }\n", {"import", "inherit", "call"}),
    "kotlin": ("import a.B\nclass C : D() { fun f() { g() } }\n", {"import", "inherit", "call"}),
    "swift": ("import Foundation\nclass C: D { func f() { g() } }\n", {"import", "inherit", "call"}),
    "scala": ("import a.B\nclass C extends D { def f() = g() }\n", {"import", "inherit", "call"}),
    "bash": ("source ./lib.sh\nf() { g 1; }\n", {"import", "call"}),
    "lua": ("local m = require('a.b')\nlocal function f() m.g() end\n", {"import", "call"}),
    "haskell": ("module M where\nimport Data.List\nf x = g x\n", {"package", "import", "call"}),
    "elixir": ("defmodule A do\n  alias B.C\n  def f(x), do: g(x)\nend\n", {"package", "import", "call"}),
    "zig": ("const std = @import(\"std\");\nfn f() void { g(); }\n", {"import", "call"}),
}


def test_samples_cover_every_grammar():
    assert set(SAMPLES) == set(GRAMMARS)


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_reference_kinds_per_language(language):
    src, kinds = SAMPLES[language]
    data = src.encode()
    refs = extract_references(get_parser(language).parse(data), data, language, [])
    assert {r.kind for r in refs} == kinds, refs
    assert all(r.line >= 1 and r.name for r in refs)


def test_reference_encodings():
    data = (b"import os.path\nimport numpy as np\nfrom ..a.b import c as d, e\nfrom . import f\n"
            b"from x import *\nclass K(Base):\n    def m(self):\n        super().m()\n"
            b"        g().h()\n        np.array([1])\n")
    refs = extract_references(get_parser("python").parse(data), data, "python", [])
    assert sorted((r.line, r.kind, r.name) for r in refs) == [
        (1, "import", "os.path"), (2, "import", "numpy as np"), (3, "import", "..a.b:c as d"),
        (3, "import", "..a.b:e"), (4, "import", ".:f"), (5, "import", "x:*"),
        (6, "inherit", "Base"), (8, "call", "super"), (8, "call", "super.m"),
        (9, "call", "?.h"), (9, "call", "g"), (10, "call", "np.array")]
    data = b"import D, { a as b } from './m'\nimport * as ns from '../n'\n"
    refs = extract_references(get_parser("typescript").parse(data), data, "typescript", [])
    assert {r.name for r in refs} == {"./m:default as D", "./m:a as b", "../n:* as ns"}


def test_reference_source_is_innermost_symbol():
    res = parse_file(b"def outer():\n    def inner():\n        a()\n    b()\nc()\n", "python")
    src = {r.name: r.source for r in res.references if r.kind == "call"}
    assert src == {"a": "outer.inner", "b": "outer", "c": None}


@pytest.mark.parametrize("language, text, most", [
    ("c", b"".join(b"int f%d(void) { return g%d(h(%d)); }\n" % (n, n, n) for n in range(300)), 3),
    ("javascript", b"".join(b"const m%d = require('m%d');\nfunction f%d() { return g%d(h(1)); }\n"
                            % (n, n, n, n) for n in range(300)), 8),
])
def test_a_parse_reads_node_texts_from_the_bytes_not_through_its_deadline_callback(
        language, text, most):
    """The tree read through the callback (for the parse's time limit) reads each node's
    text through it, a slice of up to READ_SLICE bytes each (a 300 KB C file's references
    took 7x as long): the references cut node texts from the bytes, and where a query tests
    texts (JavaScript's #eq? require) the file is parsed again from the bytes, as the
    binding reads a predicate's text through the tree's source. The source is read in a
    few slices, the parse's own, whatever the number of references."""
    from fourfold import parsing

    slices = []

    class Source(bytes):
        def __getitem__(self, key):
            if isinstance(key, slice) and key.stop - key.start == parsing.READ_SLICE:
                slices.append(key.start)
            return bytes.__getitem__(self, key)

    res = parse_file(Source(text), language)
    assert len({r.name for r in res.references if r.kind == "call"}) >= 300
    assert len(slices) <= most  # reading each node's text would be hundreds
    assert parsing._file_query(language, True)[2] == (language == "javascript")


@pytest.mark.parametrize("query, tests_texts", [
    ('(call_expression function: (identifier) @f (#eq? @f "require"))', True),
    ('(identifier) @f ( #not-match? @f "^[A-Z]")', True),
    ('(identifier) @f (\n  #any-of? @f "a" "b")', True),
    ('(identifier) @f (#set! kind "x")', False),
    ("(identifier) @f", False),
])
def test_a_query_that_tests_node_texts_is_known_however_it_is_spaced(query, tests_texts):
    from fourfold import parsing

    assert bool(parsing._TEXT_PREDICATE.search(query)) == tests_texts
