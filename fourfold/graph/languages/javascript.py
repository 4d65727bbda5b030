"""JavaScript and TypeScript: relative specifiers, index files, path aliases."""
from __future__ import annotations

import posixpath
import re

from ..imports import ALL, DEFAULT, NAMED, NAMESPACE, WILDCARD, Binding, Import, Modules
from .base import Language

EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".vue",
              ".svelte")
_JS_SUFFIX = re.compile(r"\.(m|c)?jsx?$")  # `./a.js` written for the TypeScript file a.ts
_ALIAS_ROOT = re.compile(r"^(@/|~/|#/|src/)")  # bundler aliases of the source root


class JavaScript(Language):
    def __init__(self, name: str):
        super().__init__(name, "js")

    def resolve_import(self, modules: Modules, path: str, imp: Import) -> list[Binding]:
        target = module_file(modules, imp.module, path, self.family)
        paths = [target] if target else []
        if imp.kind == NAMESPACE:  # a module object
            return [Binding(imp.module, None, imp.alias, imp.line, paths)]
        if imp.kind == WILDCARD:
            return [Binding(imp.module, ALL, imp.alias, imp.line, paths)]
        if imp.kind == NAMED:
            return [Binding(imp.module, imp.name, imp.alias or imp.name, imp.line, paths)]
        member = "default" if imp.kind == DEFAULT else None
        return [Binding(imp.module, member, imp.alias, imp.line, paths)]


def module_file(modules: Modules, spec: str, importer: str, family: str) -> str | None:
    """The file an import specifier names; None for a package (or anything not found)."""
    if spec.startswith("."):
        base = posixpath.normpath(posixpath.join(posixpath.dirname(importer), spec))
        stem = _JS_SUFFIX.sub("", base)
        return modules.existing([base] + [stem + e for e in EXTENSIONS]
                                + [base + "/index" + e for e in EXTENSIONS])
    bare = _ALIAS_ROOT.sub("", spec)
    if bare == spec and "/" not in spec:
        return None  # a package
    for e in ("",) + EXTENSIONS:
        target = modules.by_suffix(bare + e, family, importer)
        if target:
            return target
    for e in EXTENSIONS:
        target = modules.by_suffix(bare + "/index" + e, family, importer)
        if target:
            return target
    return None
