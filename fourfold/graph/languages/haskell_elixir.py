"""Haskell and Elixir: a module name is declared by its file (`module A.B`, `defmodule`)
or, failing that, follows from its path."""
from __future__ import annotations

import re

from ..imports import ALL, Binding, Import, Modules
from .base import Language

_WORD_START = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _module_files(modules: Modules, language: Language, module: str, path: str,
                  extension: str, rel: str) -> list[str]:
    targets = list(modules.packages().get(module, ()))
    if not targets:
        t = modules.by_suffix(rel + extension, language.family, path)
        targets = [t] if t else []
    return targets


class Haskell(Language):
    def resolve_import(self, modules: Modules, path: str, imp: Import) -> list[Binding]:
        targets = _module_files(modules, self, imp.module, path, ".hs",
                                imp.module.replace(".", "/"))
        # `import A.B` brings its names unqualified; `import qualified A.B as X` under X
        member = ALL if imp.alias is None else None
        return [Binding(imp.module, member, imp.alias, imp.line, targets)]


class Elixir(Language):
    def resolve_import(self, modules: Modules, path: str, imp: Import) -> list[Binding]:
        # Acme.HttpClient: acme/http_client.ex
        rel = _WORD_START.sub(r"_\1", imp.module.replace(".", "/")).lower()
        targets = _module_files(modules, self, imp.module, path, ".ex", rel)
        # `alias A.B` names it B
        return [Binding(imp.module, None, imp.module.rsplit(".", 1)[-1], imp.line, targets)]
