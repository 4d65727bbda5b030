"""Lua, Zig and shell scripts: an import names one file."""
from __future__ import annotations

import posixpath
import re

from ..imports import ALL, Binding, Import, Modules
from .base import Language

_VARIABLE_PREFIX = re.compile(r"^(\$\{?\w+\}?/)+")  # `source "$DIR/lib.sh"`


class Lua(Language):
    def resolve_import(self, modules: Modules, path: str, imp: Import) -> list[Binding]:
        rel = imp.module.replace(".", "/")  # require("a.b"): a/b.lua or a/b/init.lua
        target = (modules.by_suffix(rel + ".lua", self.family, path)
                  or modules.by_suffix(rel + "/init.lua", self.family, path))
        return [Binding(imp.module, None, imp.alias, imp.line, [target] if target else [])]


class Zig(Language):
    def resolve_import(self, modules: Modules, path: str, imp: Import) -> list[Binding]:
        target = None
        if imp.module.endswith(".zig"):  # else a package: @import("std")
            target = (modules.existing([posixpath.join(posixpath.dirname(path), imp.module)])
                      or modules.by_suffix(imp.module, self.family, path))
        return [Binding(imp.module, None, imp.alias, imp.line, [target] if target else [])]


class Shell(Language):
    def resolve_import(self, modules: Modules, path: str, imp: Import) -> list[Binding]:
        rel = _VARIABLE_PREFIX.sub("", imp.module)
        target = (modules.existing([posixpath.join(posixpath.dirname(path), rel)])
                  or modules.by_suffix(rel.lstrip("./"), self.family, path))
        return [Binding(imp.module, ALL, None, imp.line, [target] if target else [])]
