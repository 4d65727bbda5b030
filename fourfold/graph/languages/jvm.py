"""Languages whose files declare a package or namespace: Java, Kotlin, Scala and C#; PHP
resolves its `use` statements the same way."""
from __future__ import annotations

import posixpath
import re

from ..facts import TYPE_KINDS
from ..imports import ALL, Binding, Import, Modules
from .base import Language

_SEGMENT = re.compile(r"[.\\]")
_WHOLE_PACKAGE_LIMIT = 200  # files bound by one wildcard import


class DeclaredPackages(Language):
    """Imports name a declared package and a type in it (`a.b.C`, `a.b.C.member`), or a
    whole package (`a.b.*`); files are found by declared package first, by path second."""

    extensions: tuple[str, ...] = ()
    namespace_imports = False  # an import names a whole namespace (C# `using`)

    def resolve_import(self, modules: Modules, path: str, imp: Import) -> list[Binding]:
        return [self.package_binding(modules, path, imp.module, imp.alias, imp.line)]

    def package_binding(self, modules: Modules, path: str, module: str, alias: str | None,
                        line: int) -> Binding:
        segs = [s for s in _SEGMENT.split(module) if s]
        # what named no file is asked again by hundreds of files (java.util.List)
        unresolved = modules.cached("unresolved packages", set)
        if (module, self.name) in unresolved:
            return Binding(module, None, alias or (segs[-1] if segs else None), line, [])
        wildcard = bool(segs) and segs[-1] == "*"
        if wildcard:
            segs = segs[:-1]
        if wildcard or self.namespace_imports:
            files = list(modules.packages().get(".".join(segs), ()))
            if not files and segs:  # no declared package: a folder of that name
                folder = "/".join(segs)
                files = [p for p in modules.by_dir.get(folder, ()) if p.endswith(self.extensions)]
                cand = [d for d in modules.by_dir if d.endswith("/" + folder) or d == folder]
                if cand:
                    files = [p for p in modules.by_dir[cand[0]] if p.endswith(self.extensions)]
            if files or not self.namespace_imports or wildcard:
                return Binding(module, ALL, None, line, files[:_WHOLE_PACKAGE_LIMIT])
        # a.b.C[.member]: the file declaring C in package a.b, or a file at .../a/b/C.ext
        for k in range(len(segs), 0, -1):
            cls, member = segs[k - 1], (segs[k] if k < len(segs) else None)
            name = cls if member is None else member
            p = package_file(modules, ".".join(segs[:k - 1]), cls, top_level=member is None)
            if p is not None:
                return Binding(module, name, alias or name, line, [p])
            rel = "/".join(segs[:k])
            for e in self.extensions:
                target = modules.by_suffix(rel + e, self.family, path)
                if target:
                    return Binding(module, name, alias or name, line, [target])
        unresolved.add((module, self.name))
        return Binding(module, None, alias or (segs[-1] if segs else None), line, [])


class Jvm(DeclaredPackages):
    implicit_this = True
    same_package = True
    extensions = (".java", ".kt", ".kts", ".scala", ".sc")

    def __init__(self, name: str, members_outside_type: bool):
        super().__init__(name, "jvm")
        self.members_outside_type = members_outside_type  # Kotlin and Scala extensions


class CSharp(DeclaredPackages):
    implicit_this = True
    same_package = True
    members_outside_type = True  # partial classes, extension methods
    extensions = (".cs",)
    namespace_imports = True


def package_file(modules: Modules, package: str, name: str, top_level: bool) -> str | None:
    """The first file of a declared package that declares type `name` (or, with
    `top_level`, any top-level `name`) or is named after it."""
    types_only, any_top = modules.cached(("package files", package),
                                         lambda: _package_index(modules, package))
    return (any_top if top_level else types_only).get(name)


def _package_index(modules: Modules, package: str) -> tuple[dict[str, str], dict[str, str]]:
    # once per package: a Java package is imported from hundreds of files
    types_only: dict[str, str] = {}
    any_top: dict[str, str] = {}
    for p in modules.packages().get(package, ()):
        stem = posixpath.basename(p).rsplit(".", 1)[0]
        for s in modules.files[p].symbols:
            if s.kind in TYPE_KINDS:
                types_only.setdefault(s.name, p)
                any_top.setdefault(s.name, p)
            elif s.parent is None:
                any_top.setdefault(s.name, p)
        types_only.setdefault(stem, p)
        any_top.setdefault(stem, p)
    return types_only, any_top
