"""C and C++: `#include` of a header beside the file or anywhere below the root."""
from __future__ import annotations

import posixpath

from ..imports import ALL, Binding, Import, Modules
from .base import Language


class CFamily(Language):
    same_package = True

    def __init__(self, name: str, classes: bool):
        super().__init__(name, "c")
        # C++ classes: members by implicit this, methods defined outside the class body
        self.implicit_this = self.members_outside_type = classes

    def resolve_import(self, modules: Modules, path: str, imp: Import) -> list[Binding]:
        header = imp.module.strip("<>\"")
        target = None
        if not imp.module.startswith("<"):  # "header.h": beside the file first
            target = modules.existing([posixpath.join(posixpath.dirname(path), header)])
        if not target:
            target = modules.by_suffix(header, "*", path)
        return [Binding(imp.module, ALL, None, imp.line, [target] if target else [])]
