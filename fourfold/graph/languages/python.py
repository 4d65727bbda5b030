"""Python: dotted module names, relative imports, packages and src/ layouts."""
from __future__ import annotations

import posixpath
from collections import defaultdict

from ..imports import ALL, NAMESPACE, WILDCARD, Binding, Import, Modules, common_prefix
from .base import Language


class Python(Language):
    def resolve_import(self, modules: Modules, path: str, imp: Import) -> list[Binding]:
        module, alias, line = imp.module, imp.alias, imp.line
        if imp.kind in (WILDCARD, NAMESPACE):  # `from m import *`
            target = module_file(modules, module, path)
            return [Binding(module, ALL, None, line, [target] if target else [])]
        if imp.name is not None:  # `from m import name`
            member = imp.name
            sub = module + member if module.endswith(".") else module + "." + member
            target = module_file(modules, sub, path)
            if target:  # `from pkg import submodule`
                return [Binding(sub, None, alias or member, line, [target])]
            target = module_file(modules, module, path)
            return [Binding(module, member, alias or member, line, [target] if target else [])]
        target = module_file(modules, module, path)
        out = [Binding(module, None, alias, line, [target] if target else [])]
        if alias is None and "." in module:  # `import a.b.c` binds a, a.b, a.b.c
            parts = module.split(".")
            for i in range(1, len(parts)):
                sub = ".".join(parts[:i])
                t = module_file(modules, sub, path)
                if t:
                    out.append(Binding(sub, None, None, line, [t]))
        return out


def module_file(modules: Modules, name: str, importer: str) -> str | None:
    """The file of module `name` ("a.b", "..c") imported from file `importer`."""
    if name.startswith("."):
        level = len(name) - len(name.lstrip("."))
        rest = name[level:]
        base = posixpath.dirname(importer)
        for _ in range(level - 1):
            base = posixpath.dirname(base)
        sub = rest.replace(".", "/")
        target = posixpath.join(base, sub) if sub else base
        return modules.existing([target + ".py", target + "/__init__.py", target + ".pyi",
                                 target + "/__init__.pyi"])
    cands = modules.cached("python", lambda: _module_index(modules)).get(name)
    if not cands:
        return None
    if len(cands) == 1:
        return cands[0][1]
    # the shortest import root, then the file nearest the importer
    return min(cands, key=lambda c: (c[0], -common_prefix(c[1], importer), c[1]))[1]


def _module_index(modules: Modules) -> dict[str, list[tuple[int, str]]]:
    """Dotted name -> (depth of its import root, path) for every Python file, under every
    import root it may be imported from (folders that are no package: `src/`, `lib/`)."""
    idx: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for p, f in modules.files.items():
        if f.language != "python":
            continue
        stem = p.rsplit(".", 1)[0]
        parts = stem.split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
            if not parts:
                continue
        for i in range(len(parts)):
            if i > 0 and "/".join(parts[:i]) + "/__init__.py" in modules.paths:
                continue  # the prefix is a package: not an import root
            idx[".".join(parts[i:])].append((i, p))
    return idx
