"""PHP: `require`/`include` of a file; `use` of a namespaced name."""
from __future__ import annotations

import posixpath

from ..imports import ALL, Binding, Import, Modules
from .jvm import DeclaredPackages


class Php(DeclaredPackages):
    extensions = (".php",)

    def resolve_import(self, modules: Modules, path: str, imp: Import) -> list[Binding]:
        module = imp.module
        if module.endswith(".php") or "/" in module:  # a file: its definitions, unqualified
            rel = module.lstrip("/")
            target = (modules.existing([posixpath.join(posixpath.dirname(path), rel)])
                      or modules.by_suffix(rel, self.family, path))
            return [Binding(module, ALL, None, imp.line, [target] if target else [])]
        return [self.package_binding(modules, path, module.lstrip("\\"), imp.alias, imp.line)]
