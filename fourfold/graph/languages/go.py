"""Go: import paths through go.mod module paths to package folders; methods by receiver."""
from __future__ import annotations

import posixpath
import re

from ..imports import ALL, Binding, Import, Modules
from .base import Language

_MODULE_LINE = re.compile(r"^\s*module\s+(\S+)", re.M)


class Go(Language):
    same_package = True
    members_outside_type = True
    method_receivers = True
    scope_per_symbol = True

    def resolve_import(self, modules: Modules, path: str, imp: Import) -> list[Binding]:
        files = package_files(modules, imp.module)
        if imp.alias == ".":  # the package's names, unqualified
            return [Binding(imp.module, ALL, None, imp.line, files)]
        local = imp.alias if imp.alias not in (None, "_") \
            else imp.module.rstrip("/").rsplit("/", 1)[-1]
        return [Binding(imp.module, None, local, imp.line, files)]


def package_files(modules: Modules, import_path: str) -> list[str]:
    """The non-test files of the package an import path names."""
    for mod, root in modules.cached("go.mod", lambda: module_roots(modules.extra)):
        if import_path == mod or import_path.startswith(mod + "/"):
            rel = import_path[len(mod):].strip("/")
            return _go_files(modules, posixpath.join(root, rel) if rel else root)
    # no go.mod: the longest folder that is a suffix of the import path
    parts = import_path.split("/")
    for i in range(len(parts)):
        files = _go_files(modules, "/".join(parts[i:]))
        if files:
            return files
    return []


def module_roots(extra: dict[str, str]) -> list[tuple[str, str]]:
    """(module path, folder) of every go.mod among the extra files' texts (path -> text),
    longest module path first."""
    mods = []
    for p, text in extra.items():
        if p == "go.mod" or p.endswith("/go.mod"):
            m = _MODULE_LINE.search(text)
            if m:
                mods.append((m.group(1).strip('"'), posixpath.dirname(p)))
    mods.sort(key=lambda x: -len(x[0]))
    return mods


def _go_files(modules: Modules, folder: str) -> list[str]:
    return [p for p in modules.by_dir.get(folder, ())
            if p.endswith(".go") and not p.endswith("_test.go")]
