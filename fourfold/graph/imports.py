"""Imports: the typed record of an import statement, what it binds once resolved, and the
indexes of a repository's files that module names are resolved against."""
from __future__ import annotations

import posixpath
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Literal

from ..model import Reference
from .facts import FileFacts

# Import kinds
MODULE = "module"  # the module itself: `import os.path`, `require('./x')`, `use a::B`, `#include`
NAMED = "named"  # one name of a module: `from a import b`, `import {b as c} from './a'`
DEFAULT = "default"  # a module's default export: `import X from './a'`
NAMESPACE = "namespace"  # every name, under one alias: `import * as ns from './a'`
WILDCARD = "wildcard"  # every name, unqualified: `from a import *`, `export * from './a'`
DECLARATION = "declaration"  # a submodule declared by its parent: Rust `mod foo;`

ImportKind = Literal["module", "named", "default", "namespace", "wildcard", "declaration"]

ALL = "*"  # Binding.member: every name of the module


@dataclass(frozen=True, slots=True)
class Import:
    """One import as the parser found it."""

    module: str  # as written: "os.path", "..pkg", "./util", "crate::a::B", "java.util.*",
    # "<stdio.h>", "App\\Models\\User"; for a DECLARATION the declared module's name
    kind: ImportKind
    name: str | None  # the name a NAMED import takes ("default" for a DEFAULT one)
    alias: str | None  # the local name it is bound to, where the statement gives one
    line: int
    scope: str | None  # the symbol the statement sits in; None: module level


def parse_import(ref: Reference) -> Import:
    """The Import an import reference encodes (see fourfold.parsing.references):
    ``module[:member][ as alias]``, ``mod name`` for a Rust module declaration."""
    text, alias = ref.name, None
    if " as " in text:
        text, alias = text.rsplit(" as ", 1)
    if text.startswith("mod "):
        return Import(text[4:], DECLARATION, None, alias, ref.line, ref.source)
    # ':' separates module and member (Python from-imports, JS ES imports); Rust paths use '::'
    if ":" in text and "::" not in text:
        module, _, member = text.rpartition(":")
        if module and member:
            if member == "*":
                kind = NAMESPACE if alias else WILDCARD
                return Import(module, kind, None, alias, ref.line, ref.source)
            kind = DEFAULT if member == "default" else NAMED
            return Import(module, kind, member, alias, ref.line, ref.source)
    return Import(text, MODULE, None, alias, ref.line, ref.source)


@dataclass(slots=True)
class Binding:
    """What one import binds in the importing file, resolved against the repository."""

    module: str  # the import edge's name
    member: str | None  # the name taken from the module; None: the module itself; ALL
    alias: str | None  # the local name; None: the member's own name, or none at all
    line: int
    paths: list[str]  # target files ([] = outside the repository)
    symbol: str | None = None  # the member's qualname in paths[0] when it resolved
    scope: str | None = None  # the symbol the import statement sits in (None: module level)


def common_prefix(a: str, b: str) -> int:
    """How many leading folders two paths share."""
    n = 0
    for x, y in zip(a.split("/"), b.split("/")):
        if x != y:
            break
        n += 1
    return n


class Modules:
    """Indexes of the repository's files used to resolve module names to paths. Built
    lazily: most repositories use few of them. Language modules keep their own indexes
    in `cached`."""

    def __init__(self, files: dict[str, FileFacts], families: dict[str, str],
                 extra_files: dict[str, str] | None):
        self.files = files
        self.families = families  # path -> language family
        self.paths = set(files)
        self.by_dir: dict[str, list[str]] = defaultdict(list)
        for p in sorted(files):
            self.by_dir[posixpath.dirname(p)].append(p)
        self.extra = extra_files or {}
        self._suffix: dict[str, dict[str, list[str]]] = {}
        self._packages: dict[str, list[str]] | None = None
        self._cache: dict[Any, Any] = {}

    def imports_resolved(self) -> None:
        """Drop the indexes only import resolution reads (a big repository's path suffixes
        take tens of MB); `by_dir` stays."""
        self._suffix.clear()
        self._packages = None
        self._cache.clear()

    def cached(self, key, build: Callable[[], Any]) -> Any:
        """The value kept under `key`, built by `build()` the first time it is asked."""
        value = self._cache.get(key)
        if value is None:
            value = self._cache[key] = build()
        return value

    def suffix_index(self, fam: str) -> dict[str, list[str]]:
        """'/'-joined path suffix -> the files of family `fam` ("*": any) ending so."""
        idx = self._suffix.get(fam)
        if idx is None:
            idx = defaultdict(list)
            for p in self.files:
                if self.families[p] != fam and fam != "*":
                    continue
                parts = p.split("/")
                for i in range(len(parts)):
                    idx["/".join(parts[i:])].append(p)
            self._suffix[fam] = idx
        return idx

    def by_suffix(self, suffix: str, fam: str, near: str = "") -> str | None:
        """The file of family `fam` whose path ends with `suffix`; of several, the one
        sharing most folders with `near`, then the shallowest."""
        cands = self.suffix_index(fam).get(suffix.strip("/"))
        if not cands:
            return None
        if len(cands) == 1:
            return cands[0]
        return min(cands, key=lambda c: (-common_prefix(c, near), c.count("/"), c))

    def existing(self, candidates) -> str | None:
        """The first candidate path that is a file of the repository."""
        for c in candidates:
            c = posixpath.normpath(c)
            if c in self.paths:
                return c
        return None

    def packages(self) -> dict[str, list[str]]:
        """Declared package / namespace / module name -> the files declaring it (Java,
        Kotlin, Scala, C#, PHP, Elixir, Haskell), '\\' written as '.'."""
        if self._packages is None:
            pk: dict[str, list[str]] = defaultdict(list)
            for p, f in self.files.items():
                for r in f.references:
                    if r.kind == "package":
                        pk[r.name.replace("\\", ".")].append(p)
            self._packages = pk
        return self._packages
