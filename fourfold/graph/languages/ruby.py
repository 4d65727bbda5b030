"""Ruby: `require` by load path, `require_relative` by the file's folder."""
from __future__ import annotations

import posixpath

from ..imports import ALL, Binding, Import, Modules
from .base import Language


class Ruby(Language):
    implicit_this = True
    constructor_calls = frozenset({"new", "init"})
    capitalized_receivers_are_types = True

    def resolve_import(self, modules: Modules, path: str, imp: Import) -> list[Binding]:
        module = imp.module
        base = module if module.endswith(".rb") else module + ".rb"
        if module.startswith("."):
            target = modules.existing([posixpath.join(posixpath.dirname(path), base)])
        else:
            target = modules.by_suffix(base, self.family, path)
        return [Binding(module, ALL, None, imp.line, [target] if target else [])]
