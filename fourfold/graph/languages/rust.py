"""Rust: `mod` declarations and `use` paths from the crate root, self and super."""
from __future__ import annotations

import posixpath

from ..imports import ALL, DECLARATION, Binding, Import, Modules
from .base import Language

_CRATE_ROOTS = ("lib.rs", "main.rs")


class Rust(Language):
    same_package = True
    members_outside_type = True

    def resolve_import(self, modules: Modules, path: str, imp: Import) -> list[Binding]:
        return [use_binding(modules, path, imp)]


def use_binding(modules: Modules, path: str, imp: Import) -> Binding:
    d = posixpath.dirname(path)
    base = posixpath.basename(path)
    # the folder of this module's submodules
    self_dir = d if base in ("mod.rs",) + _CRATE_ROOTS else posixpath.join(d, base[:-3])
    module, line = imp.module, imp.line
    if imp.kind == DECLARATION:  # `mod name;`: name.rs or name/mod.rs beside
        target = modules.existing([posixpath.join(self_dir, module + ".rs"),
                                   posixpath.join(self_dir, module, "mod.rs")])
        return Binding("mod " + module, None, module, line, [target] if target else [])
    segs = module.split("::")
    # crate root: the nearest directory above holding lib.rs or main.rs
    root = d
    while True:
        if any(posixpath.join(root, f) in modules.paths for f in _CRATE_ROOTS):
            break
        if not root:
            root = d
            break
        root = posixpath.dirname(root)
    if segs[0] == "crate":
        cur, segs = root, segs[1:]
        file = modules.existing([posixpath.join(root, f) for f in _CRATE_ROOTS])
    elif segs[0] in ("self", "super"):
        cur, file = self_dir, path
        while segs and segs[0] in ("self", "super"):
            if segs[0] == "super":
                cur = posixpath.dirname(cur)
                file = modules.existing([cur + ".rs", posixpath.join(cur, "mod.rs")]
                                        + [posixpath.join(cur, f) for f in _CRATE_ROOTS])
            segs = segs[1:]
    else:
        cur, file = root, None
    consumed = 0  # the leading segments that are module files
    for s in segs:
        t = modules.existing([posixpath.join(cur, s + ".rs"), posixpath.join(cur, s, "mod.rs")])
        if not t:
            break
        file, cur = t, posixpath.join(cur, s)
        consumed += 1
    rest = segs[consumed:]
    member = None
    if rest:
        member = rest[0] if rest[0] != "*" else ALL
    local = imp.alias or (segs[-1] if segs and segs[-1] != "*" else None)
    if file is None or (segs and consumed == 0
                        and module.split("::")[0] not in ("crate", "self", "super")):
        return Binding(module, None, local, line, [])  # another crate
    return Binding(module, member, local, line, [file])
