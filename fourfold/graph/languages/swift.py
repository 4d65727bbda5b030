"""Swift: `import Module` names a module folder (Sources/Module)."""
from __future__ import annotations

from ..imports import ALL, Binding, Import, Modules
from .base import Language

_MODULE_FILE_LIMIT = 50  # files bound by one import


class Swift(Language):
    implicit_this = True
    same_package = True
    members_outside_type = True  # extensions

    def resolve_import(self, modules: Modules, path: str, imp: Import) -> list[Binding]:
        module = imp.module
        files = [p for p in modules.by_dir.get("Sources/" + module, ())
                 if p.endswith(".swift")] or [
            p for folder, ps in modules.by_dir.items() if folder.rsplit("/", 1)[-1] == module
            for p in ps if p.endswith(".swift")]
        return [Binding(module, ALL, None, imp.line, files[:_MODULE_FILE_LIMIT])]
