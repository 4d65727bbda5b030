"""Resolve raw references (fourfold.parsing.references) into a repository dependency graph.

Pure, in-memory functions: input is ``{path: FileFacts}`` for a whole repository (paths
relative, '/'-separated), output a list of :class:`Edge`.

Edge kinds:

* ``import``  file -> file (src_symbol/dst_symbol are None, or dst_symbol is the imported
  member when it resolved to a definition); an import of something outside the repository
  is kept with ``dst_path=None, resolved=False`` and the module name.
* ``call``    symbol -> symbol (``src_symbol`` None = module level). Resolution order: the
  enclosing class (and its bases) for ``self``/``this``/``super``/implicit-this calls,
  definitions in the same file, names imported into the file, modules imported under an alias
  (``pkg.Func``, ``np.array``), the same package/directory, then a name that is unique in the
  repository. What cannot be resolved is kept with ``dst_* = None, resolved=False`` and the
  name as written.
* ``inherit`` class -> base class / interface / trait / mixin, resolved the same way.
* ``ref``     symbol -> type for non-call uses of type names; only resolved refs are kept.
"""
from __future__ import annotations

import os
import posixpath
import re
from collections import defaultdict
from dataclasses import dataclass, field

from ..model import REEXPORT, Reference, Symbol
from .forked import Forked

TYPE_KINDS = frozenset({
    "class", "interface", "trait", "struct", "enum", "protocol", "module", "type", "object",
    "record", "union", "typealias", "type_alias", "namespace", "impl", "extension", "mixin",
    "actor", "typeclass", "instance", "package",
})
NON_CALLABLE = frozenset({"constant", "variable", "field", "property", "attribute", "import",
                          "parameter", "enum_member", "label", "namespace", "package"})
SELF_NAMES = frozenset({"self", "this", "cls", "$this", "@", "Self", "static", "me"})
SUPER_NAMES = frozenset({"super", "parent", "base"})
IMPLICIT_THIS = frozenset({"java", "csharp", "kotlin", "scala", "swift", "cpp", "ruby"})
# Method names so common on built-in types that a repo-unique definition is no evidence.
COMMON_METHODS = frozenset("""
get set put pop push append extend insert remove discard clear copy update keys values items
add sort sorted reverse index count find join split strip lstrip rstrip replace format lower upper
startswith endswith encode decode read write close open flush seek tell readline readlines
send recv next iter len map filter reduce apply call run start stop wait cancel result
toString equals hashCode length size isEmpty contains containsKey forEach then catch finally
emit on off once bind has delete entries slice splice concat indexOf includes match test exec
new init String Error Println Printf Sprintf Errorf unwrap expect clone into iter collect
as_str to_string to_owned is_some is_none ok err map_err
""".split())

_SPLIT = re.compile(r"::|->|[.:\\]")
_LANG_FAMILY = {
    "javascript": "js", "typescript": "js", "tsx": "js",
    "c": "c", "cpp": "c",
    "java": "jvm", "kotlin": "jvm", "scala": "jvm",
}


def family(language: str) -> str:
    return _LANG_FAMILY.get(language, language)


@dataclass(slots=True)
class FileFacts:
    language: str
    symbols: list[Symbol] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)


@dataclass(slots=True)
class Edge:
    kind: str  # "import", "call", "inherit", "ref"
    src_path: str
    src_symbol: str | None  # qualname; None = module level / the file itself
    dst_path: str | None
    dst_symbol: str | None
    line: int
    resolved: bool
    name: str  # the reference as written


# ---------------------------------------------------------------------------------------------
# Per-file symbol tables


class _FileTable:
    __slots__ = ("path", "lang", "fam", "by_qual", "by_name", "top", "members", "dir")

    def __init__(self, path: str, facts: FileFacts):
        self.path = path
        self.lang = facts.language
        self.fam = family(facts.language)
        self.dir = posixpath.dirname(path)
        self.by_qual: dict[str, Symbol] = {}
        self.by_name: dict[str, list[Symbol]] = defaultdict(list)
        self.top: dict[str, Symbol] = {}
        self.members: dict[str, list[Symbol]] = defaultdict(list)  # parent qualname -> members
        for s in facts.symbols:
            self.by_qual.setdefault(s.qualname, s)
            self.by_name[s.name].append(s)
            if s.parent is None:
                self.top.setdefault(s.name, s)
            else:
                self.members[s.parent].append(s)


def _parent_name(qual: str | None) -> str | None:
    if not qual:
        return None
    return _SPLIT.split(qual)[-1]


# ---------------------------------------------------------------------------------------------
# Import resolution


class _Modules:
    """Indexes of the repository's files used to resolve module names to paths."""

    def __init__(self, files: dict[str, FileFacts], extra_files: dict[str, str] | None):
        self.files = files
        self.paths = set(files)
        self.by_dir: dict[str, list[str]] = defaultdict(list)
        for p in sorted(files):
            self.by_dir[posixpath.dirname(p)].append(p)
        self.extra = extra_files or {}
        self._suffix: dict[str, dict[str, list[str]]] = {}
        self._py: dict[str, list[tuple[int, str]]] | None = None
        self._packages: dict[str, list[str]] | None = None
        self._go_mods: list[tuple[str, str]] | None = None
        self._package_files: dict[str, tuple[dict[str, str], dict[str, str]]] = {}
        self.unresolved: set[tuple] = set()  # imports that name no file of the repository

    def package_file(self, package: str, name: str, top_level: bool) -> str | None:
        """The first file of a declared package that declares type `name` (or, with
        `top_level`, any top-level `name`) or is named after it. Indexed once per package:
        a Java package is imported from hundreds of files."""
        index = self._package_files.get(package)
        if index is None:
            types_only: dict[str, str] = {}
            any_top: dict[str, str] = {}
            for p in self.packages().get(package, ()):
                stem = posixpath.basename(p).rsplit(".", 1)[0]
                for s in self.files[p].symbols:
                    if s.kind in TYPE_KINDS:
                        types_only.setdefault(s.name, p)
                        any_top.setdefault(s.name, p)
                    elif s.parent is None:
                        any_top.setdefault(s.name, p)
                types_only.setdefault(stem, p)
                any_top.setdefault(stem, p)
            index = self._package_files[package] = (types_only, any_top)
        return index[top_level].get(name)

    # -- generic path-suffix index (per family), keys are '/'-joined path suffixes
    def suffix_index(self, fam: str) -> dict[str, list[str]]:
        idx = self._suffix.get(fam)
        if idx is None:
            idx = defaultdict(list)
            for p, f in self.files.items():
                if family(f.language) != fam and fam != "*":
                    continue
                parts = p.split("/")
                for i in range(len(parts)):
                    idx["/".join(parts[i:])].append(p)
            self._suffix[fam] = idx
        return idx

    def by_suffix(self, suffix: str, fam: str, near: str = "") -> str | None:
        cands = self.suffix_index(fam).get(suffix.strip("/"))
        if not cands:
            return None
        if len(cands) == 1:
            return cands[0]
        return min(cands, key=lambda c: (-_common(c, near), c.count("/"), c))

    def existing(self, candidates) -> str | None:
        for c in candidates:
            c = posixpath.normpath(c)
            if c in self.paths:
                return c
        return None

    # -- python
    def python_index(self) -> dict[str, list[tuple[int, str]]]:
        if self._py is None:
            idx: dict[str, list[tuple[int, str]]] = defaultdict(list)
            for p, f in self.files.items():
                if f.language != "python":
                    continue
                stem = p.rsplit(".", 1)[0]
                parts = stem.split("/")
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                    if not parts:
                        continue
                for i in range(len(parts)):
                    if i > 0 and "/".join(parts[:i]) + "/__init__.py" in self.paths:
                        continue  # the prefix is a package: not an import root
                    idx[".".join(parts[i:])].append((i, p))
            self._py = idx
        return self._py

    def python_module(self, name: str, importer: str) -> str | None:
        if name.startswith("."):
            level = len(name) - len(name.lstrip("."))
            rest = name[level:]
            base = posixpath.dirname(importer)
            for _ in range(level - 1):
                base = posixpath.dirname(base)
            sub = rest.replace(".", "/")
            target = posixpath.join(base, sub) if sub else base
            return self.existing([target + ".py", target + "/__init__.py", target + ".pyi",
                                  target + "/__init__.pyi"])
        cands = self.python_index().get(name)
        if not cands:
            return None
        if len(cands) == 1:
            return cands[0][1]
        return min(cands, key=lambda c: (c[0], -_common(c[1], importer), c[1]))[1]

    # -- declared packages / namespaces / modules (Java, Kotlin, Scala, C#, PHP, Elixir, Haskell)
    def packages(self) -> dict[str, list[str]]:
        if self._packages is None:
            pk: dict[str, list[str]] = defaultdict(list)
            for p, f in self.files.items():
                for r in f.references:
                    if r.kind == "package":
                        pk[r.name.replace("\\", ".")].append(p)
            self._packages = pk
        return self._packages

    # -- go
    def go_modules(self) -> list[tuple[str, str]]:
        if self._go_mods is None:
            mods = []
            for p, text in self.extra.items():
                if p == "go.mod" or p.endswith("/go.mod"):
                    m = re.search(r"^\s*module\s+(\S+)", text, re.M)
                    if m:
                        mods.append((m.group(1).strip('"'), posixpath.dirname(p)))
            mods.sort(key=lambda x: -len(x[0]))
            self._go_mods = mods
        return self._go_mods

    def go_package(self, path: str) -> list[str]:
        for mod, root in self.go_modules():
            if path == mod or path.startswith(mod + "/"):
                rel = path[len(mod):].strip("/")
                d = posixpath.join(root, rel) if rel else root
                return self._go_files(d)
        # no go.mod: the longest directory that is a suffix of the import path
        parts = path.split("/")
        for i in range(len(parts)):
            d = "/".join(parts[i:])
            files = self._go_files(d)
            if files:
                return files
        return []

    def _go_files(self, d: str) -> list[str]:
        return [p for p in self.by_dir.get(d, ()) if p.endswith(".go") and not p.endswith("_test.go")]


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("/"), b.split("/")):
        if x != y:
            break
        n += 1
    return n


_JS_EXT = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".vue", ".svelte")
_JVM_EXT = (".java", ".kt", ".kts", ".scala", ".sc")


@dataclass(slots=True)
class _Import:
    """One resolved import statement of a file."""

    module: str
    member: str | None
    alias: str | None
    line: int
    paths: list[str]  # target files ([] = outside the repository)
    symbol: str | None = None  # the member's qualname in paths[0] when it resolved
    scope: str | None = None  # the symbol the import statement sits in (None: module level)


def _split_import(name: str) -> tuple[str, str | None, str | None]:
    alias = None
    if " as " in name:
        name, alias = name.rsplit(" as ", 1)
    member = None
    if ":" in name and "::" not in name and not name.startswith("mod "):
        # ':' separates module and member (Python from-imports, JS ES imports); Rust uses '::'
        head, _, tail = name.rpartition(":")
        if head and tail:
            name, member = head, tail
    return name, member, alias


def _resolve_one(mods: _Modules, path: str, lang: str, ref: Reference) -> list[_Import]:
    module, member, alias = _split_import(ref.name)
    fam = family(lang)
    d = posixpath.dirname(path)
    line = ref.line
    if lang == "python":
        if member is not None:
            if member == "*":
                target = mods.python_module(module, path)
                return [_Import(module, "*", None, line, [target] if target else [])]
            sub = module + member if module.endswith(".") else module + "." + member
            target = mods.python_module(sub, path)
            if target:  # `from pkg import submodule`
                return [_Import(sub, None, alias or member, line, [target])]
            target = mods.python_module(module, path)
            return [_Import(module, member, alias or member, line, [target] if target else [])]
        target = mods.python_module(module, path)
        out = [_Import(module, None, alias, line, [target] if target else [])]
        if alias is None and "." in module:  # `import a.b.c` binds a, a.b, a.b.c
            parts = module.split(".")
            for i in range(1, len(parts)):
                sub = ".".join(parts[:i])
                t = mods.python_module(sub, path)
                if t:
                    out.append(_Import(sub, None, None, line, [t]))
        return out
    if fam == "js":
        target = None
        spec = module
        if spec.startswith("."):
            base = posixpath.normpath(posixpath.join(d, spec))
            stem = re.sub(r"\.(m|c)?jsx?$", "", base)
            cands = [base] + [stem + e for e in _JS_EXT] + [base + "/index" + e for e in _JS_EXT]
            target = mods.existing(cands)
        else:
            spec2 = re.sub(r"^(@/|~/|#/|src/)", "", spec)
            if spec2 != spec or "/" in spec:
                for e in ("",) + _JS_EXT:
                    target = mods.by_suffix(spec2 + e, fam, path)
                    if target:
                        break
                if not target:
                    for e in _JS_EXT:
                        target = mods.by_suffix(spec2 + "/index" + e, fam, path)
                        if target:
                            break
        local = alias
        if member == "*" and alias:  # import * as ns: a module object
            member = None
        if member not in (None, "*", "default") and local is None:
            local = member
        return [_Import(module, member, local, line, [target] if target else [])]
    if lang == "go":
        files = mods.go_package(module)
        local = alias if alias not in (None, "_") else module.rstrip("/").rsplit("/", 1)[-1]
        if alias == ".":
            return [_Import(module, "*", None, line, files)]
        return [_Import(module, None, local, line, files)]
    if lang == "rust":
        return [_rust_import(mods, path, module, alias, line)]
    if fam == "jvm" or lang == "csharp":
        return [_jvm_import(mods, path, fam, module, alias, line, lang)]
    if fam == "c":
        inc = module.strip("<>\"")
        target = None
        if not module.startswith("<"):
            target = mods.existing([posixpath.join(d, inc)])
        if not target:
            target = mods.by_suffix(inc, "*", path)
        return [_Import(module, "*", None, line, [target] if target else [])]
    if lang == "ruby":
        target = None
        base = module if module.endswith(".rb") else module + ".rb"
        if module.startswith("."):
            target = mods.existing([posixpath.join(d, base)])
        else:
            target = mods.by_suffix(base, "ruby", path)
        return [_Import(module, "*", None, line, [target] if target else [])]
    if lang == "php":
        if module.endswith(".php") or "/" in module:
            rel = module.lstrip("/")
            target = mods.existing([posixpath.join(d, rel)]) or mods.by_suffix(rel, "php", path)
            return [_Import(module, "*", None, line, [target] if target else [])]
        return [_jvm_import(mods, path, "php", module.lstrip("\\"), alias, line, lang)]
    if lang == "lua":
        rel = module.replace(".", "/")
        target = mods.by_suffix(rel + ".lua", "lua", path) or mods.by_suffix(rel + "/init.lua", "lua", path)
        return [_Import(module, None, alias, line, [target] if target else [])]
    if lang == "zig":
        target = None
        if module.endswith(".zig"):
            target = mods.existing([posixpath.join(d, module)]) or mods.by_suffix(module, "zig", path)
        return [_Import(module, None, alias, line, [target] if target else [])]
    if lang == "bash":
        rel = re.sub(r"^(\$\{?\w+\}?/)+", "", module)
        target = mods.existing([posixpath.join(d, rel)]) or mods.by_suffix(rel.lstrip("./"), "bash", path)
        return [_Import(module, "*", None, line, [target] if target else [])]
    if lang in ("haskell", "elixir"):
        targets = list(mods.packages().get(module, ()))
        if not targets:
            ext = ".hs" if lang == "haskell" else ".ex"
            rel = module.replace(".", "/")
            if lang == "elixir":
                rel = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", rel).lower()
            t = mods.by_suffix(rel + ext, lang, path)
            targets = [t] if t else []
        if lang == "haskell":
            return [_Import(module, "*" if alias is None else None, alias, line, targets)]
        local = module.rsplit(".", 1)[-1]
        return [_Import(module, None, local, line, targets)]
    if lang == "swift":
        files = [p for p in mods.by_dir.get("Sources/" + module, ())] or [
            p for dd, ps in mods.by_dir.items() if dd.rsplit("/", 1)[-1] == module for p in ps
            if p.endswith(".swift")]
        return [_Import(module, "*", None, line, files[:50])]
    return [_Import(module, member, alias, line, [])]


def _jvm_import(mods: _Modules, path: str, fam: str, module: str, alias, line: int, lang: str) -> _Import:
    segs = [s for s in re.split(r"[.\\]", module) if s]
    if (module, fam, lang) in mods.unresolved:  # java.util.List, asked by hundreds of files
        return _Import(module, None, alias or (segs[-1] if segs else None), line, [])
    wildcard = bool(segs) and segs[-1] == "*"
    if wildcard:
        segs = segs[:-1]
    pk = mods.packages()
    exts = (".php",) if fam == "php" else (".cs",) if lang == "csharp" else _JVM_EXT
    idx_fam = "php" if fam == "php" else "csharp" if lang == "csharp" else "jvm"
    if wildcard or lang == "csharp":
        # a whole package / namespace
        files = list(pk.get(".".join(segs), ()))
        if not files:
            for k in range(len(segs), 0, -1):
                files = [p for p in mods.by_dir.get("/".join(segs[-k:]), ()) if p.endswith(exts)]
                cand = [d for d in mods.by_dir if d.endswith("/" + "/".join(segs)) or d == "/".join(segs)]
                if cand:
                    files = [p for p in mods.by_dir[cand[0]] if p.endswith(exts)]
                break
        if files or lang != "csharp" or wildcard:
            return _Import(module, "*", None, line, files[:200])
    # a.b.C[.member]: the file declaring C in package a.b, or a file at .../a/b/C.ext
    for k in range(len(segs), 0, -1):
        cls, member = segs[k - 1], (segs[k] if k < len(segs) else None)
        pkg = ".".join(segs[:k - 1])
        p = mods.package_file(pkg, cls, top_level=member is None)
        if p is not None:
            return _Import(module, cls if member is None else member, alias or (member or cls),
                           line, [p], None)
        rel = "/".join(segs[:k])
        for e in exts:
            target = mods.by_suffix(rel + e, idx_fam, path)
            if target:
                return _Import(module, cls if member is None else member, alias or (member or cls),
                               line, [target])
    mods.unresolved.add((module, fam, lang))
    return _Import(module, None, alias or (segs[-1] if segs else None), line, [])


def _rust_import(mods: _Modules, path: str, module: str, alias, line: int) -> _Import:
    d = posixpath.dirname(path)
    base = posixpath.basename(path)
    self_dir = d if base in ("mod.rs", "lib.rs", "main.rs") else posixpath.join(d, base[:-3])
    if module.startswith("mod "):
        name = module[4:]
        target = mods.existing([posixpath.join(self_dir, name + ".rs"),
                                posixpath.join(self_dir, name, "mod.rs")])
        return _Import(module, None, name, line, [target] if target else [])
    segs = module.split("::")
    # crate root: the nearest directory above holding lib.rs or main.rs
    root = d
    while True:
        if posixpath.join(root, "lib.rs") in mods.paths or posixpath.join(root, "main.rs") in mods.paths:
            break
        if not root:
            root = d
            break
        root = posixpath.dirname(root)
    if segs[0] == "crate":
        cur, segs = root, segs[1:]
        file = mods.existing([posixpath.join(root, "lib.rs"), posixpath.join(root, "main.rs")])
    elif segs[0] in ("self", "super"):
        cur, file = self_dir, path
        while segs and segs[0] in ("self", "super"):
            if segs[0] == "super":
                cur = posixpath.dirname(cur)
                file = mods.existing([cur + ".rs", posixpath.join(cur, "mod.rs"),
                                      posixpath.join(cur, "lib.rs"), posixpath.join(cur, "main.rs")])
            segs = segs[1:]
    else:
        cur, file = root, None
    consumed = 0
    for s in segs:
        t = mods.existing([posixpath.join(cur, s + ".rs"), posixpath.join(cur, s, "mod.rs")])
        if not t:
            break
        file, cur = t, posixpath.join(cur, s)
        consumed += 1
    rest = segs[consumed:]
    member = None
    if rest:
        member = rest[0] if rest[0] != "*" else "*"
    local = alias or (segs[-1] if segs and segs[-1] != "*" else None)
    if file is None or (segs and consumed == 0 and module.split("::")[0] not in ("crate", "self", "super")):
        return _Import(module, None, local, line, [])
    return _Import(module, member, local, line, [file])


def resolve_imports(files: dict[str, FileFacts], extra_files: dict[str, str] | None = None,
                    _mods: _Modules | None = None) -> tuple[list[Edge], dict[str, list[_Import]]]:
    """File -> file import edges, and each file's resolved imports (for call resolution)."""
    mods = _mods or _Modules(files, extra_files)
    edges: list[Edge] = []
    table: dict[str, list[_Import]] = {}
    for path, facts in files.items():
        imps: list[_Import] = []
        for ref in facts.references:
            if ref.kind != "import":
                continue
            for imp in _resolve_one(mods, path, facts.language, ref):
                imp.scope = ref.source
                imps.append(imp)
        table[path] = imps
    # members: the definition the imported name points at (following re-exports)
    tables = {p: _FileTable(p, f) for p, f in files.items()}
    for path, imps in table.items():
        for imp in imps:
            if imp.paths and imp.member not in (None, "*", "default"):
                hit = _find_exported(tables, table, imp.paths[0], imp.member, 0)
                if hit:
                    imp.paths = [hit[0]] + [p for p in imp.paths if p != hit[0]]
                    imp.symbol = hit[1]
    seen = set()
    for path, imps in table.items():
        for imp in imps:
            if not imp.paths:
                key = (path, None, imp.line, imp.module)
                if key not in seen:
                    seen.add(key)
                    edges.append(Edge("import", path, None, None, None, imp.line, False, imp.module))
                continue
            for p in imp.paths:
                if p == path:
                    continue
                key = (path, p, imp.line, imp.module)
                if key in seen:
                    continue
                seen.add(key)
                edges.append(Edge("import", path, None, p, imp.symbol if p == imp.paths[0] else None,
                                  imp.line, True, imp.module))
    return edges, table


def _find_exported(tables, imports, path: str, name: str, depth: int):
    """(path, qualname) of a top-level `name` defined in or re-exported by `path`."""
    t = tables.get(path)
    if t is None:
        return None
    s = t.top.get(name)
    if s is not None:
        return path, s.qualname
    cands = t.by_name.get(name)
    if cands:
        return path, cands[0].qualname
    if depth >= 4:
        return None
    for imp in imports.get(path, ()):
        if imp.alias == name or (imp.alias is None and imp.member == name):
            if imp.paths and imp.member not in (None, "*"):
                return _find_exported(tables, imports, imp.paths[0], imp.member, depth + 1)
            if imp.paths and imp.member is None:
                return imp.paths[0], None
    for imp in imports.get(path, ()):
        if imp.member == "*" and imp.paths and len(imp.paths) == 1:
            hit = _find_exported(tables, imports, imp.paths[0], name, depth + 1)
            if hit:
                return hit
    return None


# ---------------------------------------------------------------------------------------------
# Call / inheritance resolution


_UNSET = object()


def _scoped(imps, src: str | None) -> list[_Import]:
    """Imports visible from symbol `src`, innermost first (function-local imports shadow)."""
    out = [i for i in imps if i.scope is None or i.scope == src or (src or "").startswith(i.scope + ".")]
    if len(out) > 1:
        out.sort(key=lambda i: -len(i.scope or ""))
    return out


class _Resolver:
    def __init__(self, files: dict[str, FileFacts], imports: dict[str, list[_Import]], mods: _Modules):
        self.files = files
        self.imports = imports
        self.mods = mods
        self.tables = {p: _FileTable(p, f) for p, f in files.items()}
        # repo-wide name index per family: name -> [(path, symbol)]
        self.names: dict[tuple[str, str], list[tuple[str, Symbol]]] = defaultdict(list)
        # members by the parent's simple name (methods in Go/Rust/Swift live outside the type)
        self.members_by_parent: dict[tuple[str, str], list[tuple[str, Symbol]]] = defaultdict(list)
        for p, t in self.tables.items():
            for s in files[p].symbols:
                self.names[(t.fam, s.name)].append((p, s))
                if s.parent:
                    self.members_by_parent[(t.fam, _parent_name(s.parent))].append((p, s))
        # every defined name, whatever its language: most names looked up (`len`, `str`,
        # a local variable before `.method()`) are defined nowhere and need no search
        self.defined = {name for _, name in self.names}
        self.local_names: dict[str, dict[str, list[_Import]]] = {}
        for p, imps in imports.items():
            ln: dict[str, list[_Import]] = defaultdict(list)
            for imp in imps:
                if imp.alias:
                    ln[imp.alias].append(imp)
                elif imp.member not in (None, "*"):
                    ln[imp.member].append(imp)
            self.local_names[p] = ln
        self.bases: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
        self.scoped_imports = {p for p, imps in imports.items() if any(i.scope for i in imps)}
        self._calls: dict[tuple, tuple | None] = {}
        self._unique_members: dict[tuple, tuple | None] = {}
        self._star_tables: dict[str, list[tuple[str, _FileTable]]] = {}  # via_star's files
        self._members: dict[tuple, tuple | None] | None = None  # set once bases are known
        self._contexts: dict[tuple[str, str | None], str | None] = {}
        self._packages: dict[tuple[str, str], dict[str, list[tuple[str, Symbol]]]] = {}

    # -- helpers
    def enclosing_type(self, t: _FileTable, qual: str | None) -> Symbol | None:
        seen = 0
        while qual and seen < 32:
            s = t.by_qual.get(qual)
            if s is None:
                return None
            if s.kind in TYPE_KINDS:
                return s
            qual = s.parent
            seen += 1
        return None

    def member(self, path: str, type_qual: str, name: str, depth: int = 0) -> tuple[str, Symbol] | None:
        """A member `name` of the type (path, type_qual), searching its bases (remembered
        once the bases are complete)."""
        if self._members is None:
            return self._member(path, type_qual, name, depth)
        key = (path, type_qual, name)
        hit = self._members.get(key, _UNSET)
        if hit is _UNSET:
            hit = self._members[key] = self._member(path, type_qual, name, depth)
        return hit

    def _member(self, path: str, type_qual: str, name: str, depth: int) -> tuple[str, Symbol] | None:
        t = self.tables.get(path)
        if t is None:
            return None
        for s in t.members.get(type_qual, ()):
            if s.name == name:
                return path, s
        # methods declared outside the type body (Go receivers, Rust impl, Swift extensions)
        pname = _parent_name(type_qual)
        best = None
        for p, s in self.members_by_parent.get((t.fam, pname), ()):
            if s.name == name:
                if p == path:
                    return p, s
                if best is None or posixpath.dirname(p) == t.dir:
                    best = (p, s)
        if best is not None and (t.lang in ("go", "rust", "swift", "csharp", "kotlin", "scala", "cpp")
                                 or best[0] == path):
            return best
        if depth < 6:
            for bp, bq in self.bases.get((path, type_qual), ()):
                hit = self._member(bp, bq, name, depth + 1)
                if hit:
                    return hit
        return None

    def find_type(self, path: str, name: str) -> tuple[str, Symbol] | None:
        return self.lookup(path, None, name, types_only=True)

    def in_file(self, t: _FileTable, name: str, src: str | None, types_only: bool):
        cands = t.by_name.get(name)
        if not cands:
            return None
        ok = [s for s in cands if (s.kind in TYPE_KINDS if types_only else s.kind not in NON_CALLABLE)]
        if not ok:
            return None
        # innermost visible: a sibling in an enclosing scope, else top level
        scope = src
        while scope:
            for s in ok:
                if s.parent == scope and s.kind not in ("method",):
                    return s
            st = t.by_qual.get(scope)
            scope = st.parent if st else None
        for s in ok:
            if s.parent is None:
                return s
        return None

    def via_imports(self, path: str, name: str, types_only: bool, src: str | None = None):
        imports = self.local_names.get(path, {}).get(name)
        if not imports:
            return None
        for imp in _scoped(imports, src):
            if not imp.paths:
                return "external"
            if imp.member is None:
                return imp.paths[0], None  # a module object
            if imp.symbol:
                s = self.tables[imp.paths[0]].by_qual.get(imp.symbol)
                if s is not None:
                    return (imp.paths[0], s) if not types_only or s.kind in TYPE_KINDS else None
            for p in imp.paths:
                s = self.tables[p].top.get(imp.member) or next(iter(self.tables[p].by_name.get(imp.member, ())), None)
                if s is not None:
                    return (p, s) if not types_only or s.kind in TYPE_KINDS else None
            return "external"
        return None

    def via_star(self, path: str, name: str, types_only: bool):
        tables = self._star_tables.get(path)
        if tables is None:
            tables = self._star_tables[path] = [
                (p, self.tables[p]) for imp in self.imports.get(path, ())
                if imp.member == "*" or (imp.member is not None and imp.paths and imp.alias is None)
                for p in imp.paths if p in self.tables]
        for p, t in tables:
            if name in t.by_name:
                s = self.in_file(t, name, None, types_only)
                if s is not None:
                    return p, s
        return None

    def _package_names(self, t: _FileTable) -> dict[str, list[tuple[str, Symbol]]]:
        """name -> top-level definitions in the files of t's folder and language family,
        built once per package: a Java package of hundreds of files is asked thousands of
        times."""
        key = (t.dir, t.fam)
        index = self._packages.get(key)
        if index is None:
            index = defaultdict(list)
            for p in self.mods.by_dir.get(t.dir, ()):
                u = self.tables[p]
                if u.fam != t.fam:
                    continue
                for name, symbols in u.by_name.items():
                    index[name].extend((p, s) for s in symbols if s.parent is None)
            self._packages[key] = index
        return index

    def same_package(self, t: _FileTable, name: str, types_only: bool):
        if t.lang not in ("go", "java", "kotlin", "scala", "csharp", "swift", "rust", "c", "cpp"):
            return None
        for p, s in self._package_names(t).get(name, ()):
            if p != t.path and (s.kind in TYPE_KINDS if types_only
                                else s.kind not in NON_CALLABLE):
                return p, s
        return None

    def unique(self, fam: str, name: str, types_only: bool, methods: bool):
        if len(name) < 3:
            return None
        cands = self.names.get((fam, name), ())
        ok = []
        for p, s in cands:
            if s.parent is not None:
                owner = self.tables[p].by_qual.get(s.parent)
                if owner is not None and owner.kind not in TYPE_KINDS:
                    continue  # a nested (local) definition is invisible elsewhere
            if types_only:
                if s.kind not in TYPE_KINDS:
                    continue
            elif s.kind in NON_CALLABLE:
                continue
            elif not methods and s.parent is not None and s.kind in ("method", "constructor"):
                continue
            ok.append((p, s))
        if len(ok) == 1:
            return ok[0]
        return None

    def lookup(self, path: str, src: str | None, name: str, types_only: bool = False):
        """Resolve a plain (unqualified) name seen in `path` inside symbol `src`."""
        if name not in self.defined and name not in self.local_names.get(path, ()):
            return None
        t = self.tables[path]
        if src is not None and path in self.scoped_imports:
            local = [i for i in _scoped(self.local_names[path].get(name, ()), src) if i.scope]
            if local:  # a function-local import shadows the file's own definitions, when it
                if not local[0].paths:  # names another package ...
                    return None
                hit = self.via_imports(path, name, types_only, src)
                if hit is not None and hit != "external":  # ... or a definition we found
                    return hit
        s = self.in_file(t, name, src, types_only)
        if s is not None:
            return path, s
        if not types_only and any(x.kind in NON_CALLABLE and x.parent is None for x in t.by_name.get(name, ())):
            return None  # a module-level variable holds the callable: not statically known
        if t.lang in IMPLICIT_THIS and not types_only:
            cls = self.enclosing_type(t, src)
            if cls is not None:
                hit = self.member(path, cls.qualname, name)
                if hit:
                    return hit
        hit = self.via_imports(path, name, types_only, src)
        if hit == "external":
            return None
        if hit is not None:
            return hit
        hit = self.via_star(path, name, types_only) or self.same_package(t, name, types_only)
        if hit is not None:
            return hit
        return self.unique(t.fam, name, types_only, methods=t.lang in IMPLICIT_THIS)

    def module_member(self, path: str, recv: list[str], name: str, types_only: bool,
                      src: str | None = None):
        """`alias.sub.Name.member` where a prefix of the receiver is an imported module."""
        ln = self.local_names.get(path, {})
        for k in range(len(recv), 0, -1):
            key = ".".join(recv[:k])
            imps = _scoped(ln.get(key, ()), src)
            if not imps:
                continue
            imp = imps[0]
            if not imp.paths:
                return "external"
            rest = recv[k:]
            if imp.member is None:
                targets = imp.paths
                if not rest:
                    for p in targets:
                        s = self.tables[p].top.get(name)
                        if s is not None:
                            return p, s
                    for p in targets:  # Python re-exports from a package __init__
                        hit = _find_exported(self.tables, self.imports, p, name, 1)
                        if hit and hit[1]:
                            return hit[0], self.tables[hit[0]].by_qual[hit[1]]
                    return None
                for p in targets:
                    ts = self.tables[p].top.get(rest[-1]) or self.tables[p].top.get(rest[0])
                    if ts is not None:
                        hit = self.member(p, ts.qualname, name)
                        if hit:
                            return hit
                return None
            # alias of a type: Type.member
            hit = self.via_imports(path, key, True, src)
            if hit and hit != "external" and hit[1] is not None:
                return self.member(hit[0], hit[1].qualname, name)
            return None
        return None

    def bases_complete(self) -> None:
        """Inheritance is resolved: from now on a name means the same each time it is asked."""
        self._members = {}

    def context(self, t: _FileTable, src: str | None) -> str | None:
        """The scope that decides what a name means inside `src`: the nearest of src and its
        enclosing symbols that is a type or has members of its own. Resolution sees src only
        through its enclosing type, nested definitions and function-local imports, so calls
        from the methods of one class share one answer (except in files with local imports,
        and in Go, whose receiver is read from src itself)."""
        if src is None or t.lang == "go" or t.path in self.scoped_imports:
            return src
        qual = src
        for _ in range(32):
            s = t.by_qual.get(qual)
            if s is None or s.kind in TYPE_KINDS or qual in t.members:
                return qual
            if s.parent is None:
                return None
            qual = s.parent
        return src

    def resolve_site(self, path: str, src: str | None, name: str, types_only: bool = False):
        """resolve_call, remembered per (file, deciding scope, name): once the bases are
        known, a name means the same from every method of a class."""
        scope = self._contexts.get((path, src), _UNSET)
        if scope is _UNSET:
            scope = self._contexts[(path, src)] = self.context(self.tables[path], src)
        key = (path, scope, name, types_only)
        hit = self._calls.get(key, _UNSET)  # most names are asked once: no KeyError to raise
        if hit is _UNSET:
            hit = self._calls[key] = self.resolve_call(path, scope, name, types_only)
        return hit

    def resolve_call(self, path: str, src: str | None, name: str, types_only: bool = False):
        if name.isidentifier():  # a plain name, most calls: nothing to split
            return self.lookup(path, src, name, types_only)
        t = self.tables[path]
        parts = [p for p in _SPLIT.split(name) if p]
        if not parts:
            return None
        final = parts[-1].rstrip("!?")
        recv = parts[:-1]
        if not recv:
            return self.lookup(path, src, final, types_only)
        head = recv[0]
        if head == "?":
            return self.unknown_receiver(t, final, types_only)
        if head in SELF_NAMES and len(recv) == 1:
            cls = self.enclosing_type(t, src)
            if cls is not None:
                hit = self.member(path, cls.qualname, final)
                if hit:
                    return hit
            return self.unknown_receiver(t, final, types_only)
        if head in SUPER_NAMES and len(recv) == 1:
            cls = self.enclosing_type(t, src)
            if cls is not None:
                for bp, bq in self.bases.get((path, cls.qualname), ()):
                    hit = self.member(bp, bq, final)
                    if hit:
                        return hit
            return None
        hit = self.module_member(path, recv, final, types_only, src)
        if hit == "external":
            return None
        if hit is not None:
            return hit
        # Type.member / Type::new / Namespace.Type
        if len(recv) <= 2 and head not in SELF_NAMES:
            ty = self.lookup(path, src, recv[-1], types_only=True)
            if ty is not None and ty[1] is not None:
                if final in ("new", "init") and t.lang in ("ruby",):
                    return ty
                hit = self.member(ty[0], ty[1].qualname, final)
                if hit:
                    return hit
                if types_only:
                    return None
                return None
            if types_only:
                return self.lookup(path, src, final, types_only=True)
        if t.lang == "go" and len(recv) == 1:
            cls = self.enclosing_type(t, src) or self._go_receiver(t, src)
            if cls is not None:
                hit = self.member(path, cls.qualname, final)
                if hit:
                    return hit
        if t.lang == "ruby" and head[:1].isupper():
            return None
        return self.unknown_receiver(t, final, types_only)

    def _go_receiver(self, t: _FileTable, src: str | None):
        s = t.by_qual.get(src) if src else None
        if s is not None and s.parent:
            return t.by_qual.get(s.parent) or Symbol(_parent_name(s.parent), s.parent, "struct", 0, 0)
        return None

    def unknown_receiver(self, t: _FileTable, final: str, types_only: bool):
        """`x.final()` with x of unknown type: the one definition of that name, if unique."""
        if final in COMMON_METHODS or len(final) < 3:
            return None
        key = (t.fam, final, types_only)
        hit = self._unique_members.get(key, _UNSET)
        if hit is not _UNSET:
            return hit
        cands = [(p, s) for p, s in self.names.get((t.fam, final), ())
                 if (s.kind in TYPE_KINDS if types_only else s.kind not in NON_CALLABLE)]
        hit = cands[0] if len(cands) == 1 and (types_only or cands[0][1].parent is not None) \
            else None
        self._unique_members[key] = hit
        return hit


def resolve_graph(files: dict[str, FileFacts], extra_files: dict[str, str] | None = None,
                  parallel: bool = True) -> list[Edge]:
    """All edges of a repository: imports, inheritance, calls and (resolved) type refs.
    `parallel=False` resolves in this process only."""
    files = {p: FileFacts(f.language, [s for s in f.symbols if s.kind != REEXPORT], f.references)
             if any(s.kind == REEXPORT for s in f.symbols) else f for p, f in files.items()}
    mods = _Modules(files, extra_files)
    edges, imports = resolve_imports(files, extra_files, mods)
    r = _Resolver(files, imports, mods)
    # inheritance first: call resolution walks base classes
    for path, facts in files.items():
        for ref in facts.references:
            if ref.kind != "inherit":
                continue
            hit = r.resolve_call(path, ref.source, ref.name, types_only=True)
            src_t = r.tables[path]
            src = ref.source
            if src is not None and src not in src_t.by_qual:
                # `impl Trait for S`, Swift extensions: the type may live elsewhere
                ty = r.find_type(path, _parent_name(src))
                src_path = ty[0] if ty else path
            else:
                src_path = path
            if hit is not None and hit[1] is not None and src is not None:
                r.bases[(src_path, src)].append((hit[0], hit[1].qualname))
            edges.append(_edge("inherit", path, src, hit, ref))
    r.bases_complete()
    return edges + _resolve_uses(r, files, parallel)


# Below this many references, a second process costs more than it saves.
PARALLEL_REFERENCES = 8_000


def _resolve_uses(r: "_Resolver", files: dict[str, FileFacts], parallel: bool) -> list[Edge]:
    """Call and type-use edges. Every file resolves alone once the tables and bases are
    built, so on a large repository a forked copy of the resolver takes half the files: the
    second core is otherwise idle. Where no helper process can be had (one worker asked
    for, a daemonic process, no fork, fork failing) all is resolved here."""
    paths = list(files)
    total = sum(len(files[p].references) for p in paths)
    if not parallel or total < PARALLEL_REFERENCES or (os.cpu_count() or 1) < 2:
        return _uses_of(r, files, paths)
    half, count = len(paths), 0
    for i, p in enumerate(paths):
        count += len(files[p].references)
        if count >= total // 2:
            half = i + 1
            break
    helper = Forked.start(_use_rows, r, files, paths[half:])
    if helper is None:
        return _uses_of(r, files, paths)
    try:
        edges = _uses_of(r, files, paths[:half])
    except BaseException:
        helper.close()
        raise
    rows = helper.result()
    return edges + ([Edge(*row) for row in rows] if rows is not None
                    else _uses_of(r, files, paths[half:]))  # the helper died: its half here


def _use_rows(r: "_Resolver", files: dict[str, FileFacts], paths: list[str]) -> list[tuple]:
    # plain tuples: pickling them is several times faster than pickling the dataclass
    return [(e.kind, e.src_path, e.src_symbol, e.dst_path, e.dst_symbol, e.line, e.resolved,
             e.name) for e in _uses_of(r, files, paths)]


def _uses_of(r: "_Resolver", files: dict[str, FileFacts], paths: list[str]) -> list[Edge]:
    edges: list[Edge] = []
    for path in paths:
        for ref in files[path].references:
            if ref.kind == "call":
                edges.append(_edge("call", path, ref.source, r.resolve_site(path, ref.source, ref.name), ref))
            elif ref.kind == "ref":
                hit = r.resolve_site(path, ref.source, ref.name, types_only=True)
                if hit is not None and hit[1] is not None and not (
                        hit[0] == path and hit[1].qualname == ref.source):
                    edges.append(_edge("ref", path, ref.source, hit, ref))
    return edges


def _edge(kind: str, path: str, src: str | None, hit, ref: Reference) -> Edge:
    if hit is None:
        return Edge(kind, path, src, None, None, ref.line, False, ref.name)
    dpath, dsym = hit
    return Edge(kind, path, src, dpath, dsym.qualname if dsym is not None else None, ref.line, True, ref.name)
