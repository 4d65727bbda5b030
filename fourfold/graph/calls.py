"""Name resolution for calls, type uses and base classes: what a name written in a file
means there, looked up in per-file symbol tables (FileTable) and resolved imports.

A plain name is looked up, in order: function-local imports, the enclosing scopes of the
file, members of the enclosing class (languages with implicit this), names imported into
the file, wildcard imports, the same package, then a definition that is unique in the
repository. A qualified name (`self.save`, `pkg.Func`, `Type::new`, `x.run`) is resolved
by its receiver: the class (and its bases) for self/this/super, an imported module, the type
the code gives the receiver (parser "bind" facts: annotations, constructor calls, literals),
a type, else the one definition of the member's name.

Every answer is a Found: the target and how sure it is (Resolution). A receiver whose type
is built in or foreign (`d = {}`, `x: dict`, a class of another package) resolves to
EXTERNAL: its members are none of the repository's, whatever their names.
"""
from __future__ import annotations

import os
import posixpath
import re
from collections import defaultdict
from collections.abc import Callable, KeysView

from ..store.base import Resolution
from .facts import (
    NAME_SEPARATOR,
    NON_CALLABLE,
    TYPE_KINDS,
    Definition,
    Edge,
    FileFacts,
    Hit,
    hit_edge,
    parent_name,
)
from .forked import Forked
from .imports import ALL, Binding, Modules
from .languages.base import Language

SELF_NAMES = frozenset({"self", "this", "cls", "$this", "@", "Self", "static", "me"})
SUPER_NAMES = frozenset({"super", "parent", "base"})
PACKAGES_KEPT = 64  # folders whose names same_package keeps indexed at once

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
EXTERNAL = "external"  # a name or type from outside the repository: resolves nowhere
# Python built-ins whose call makes a value of a type defined outside the repository
BUILTIN_VALUES = frozenset("""
dict list set frozenset tuple str bytes bytearray int float bool complex object range
memoryview open iter reversed enumerate zip map filter sorted
""".split())
UNKNOWN_TYPES = frozenset({"Any", "object", "Self"})  # say nothing of the members

Target = Hit | str | None  # a definition, EXTERNAL, or None: not known
Found = tuple[Target, Resolution]  # what a name means, and how sure that is
NOT_FOUND: Found = (None, Resolution.NONE)
OUTSIDE: Found = (EXTERNAL, Resolution.NONE)
TypeHit = tuple[str, Definition] | str | None  # a type of the repository, EXTERNAL, or unknown
TypeFact = tuple[str | None, str, str]  # (scope read in, ":", "=", "~" or "@", expression)
ELEMENTS = "@"  # a fact of the type of a name's elements, not of the name's own


_BINDING_MARK = re.compile(r"[:=~@]")


def split_binding(name: str) -> tuple[str, str, str] | None:
    """A "bind" fact's name `var:Type` (declared), `var=callee` (assigned the value of a
    call), `var~other.name` (assigned another name's value; `other.name[]`: one of its
    elements) or `var@Type` (its elements are of Type) as (var, how, expression); var
    "return" is a function's return type."""
    found = _BINDING_MARK.search(name)
    if found is None:
        return None
    i = found.start()
    return name[:i], name[i], name[i + 1:]


def target(hit: Target) -> Hit | None:
    """The definition an answer points at; None for EXTERNAL and nothing."""
    return hit if hit is not None and hit != EXTERNAL else None


def _add_one(index: dict, key, value) -> None:
    """index[key] is the one value given for key, or a list of all, in order: most names are
    defined once, and a list per name cost a big repository's resolution hundreds of MB."""
    held = index.get(key)
    if held is None:
        index[key] = value
    elif type(held) is list:
        held.append(value)
    else:
        index[key] = [held, value]


def _all_of(held) -> tuple | list:
    """What _add_one gave a key: every value, in order."""
    return () if held is None else held if type(held) is list else (held,)


class FileTable:
    """A file's definitions, indexed by qualname, by name and by parent."""

    __slots__ = ("path", "language", "fam", "_qualified", "_by_name", "members", "dir")

    def __init__(self, path: str, facts: FileFacts, language: Language):
        self.path = path
        self.language = language  # the rules its names resolve by
        self.fam = language.family
        self.dir = posixpath.dirname(path)
        # By qualified name only where the index by name cannot tell (see qualified): most
        # definitions are named by their qualified name, and a big repository has millions.
        self._qualified: dict[str, Definition] = {}
        self._by_name: dict[str, Definition | list[Definition]] = {}  # see named()
        self.members: dict[str, Definition | list[Definition]] = {}  # parent qualname -> members
        for s in facts.symbols:
            qual = s.qualname
            if qual != s.name and qual not in self._qualified and not any(
                    t.qualname == qual for t in self.named(qual)):
                self._qualified[qual] = s
            _add_one(self._by_name, s.name, s)
            if s.parent is not None:
                _add_one(self.members, s.parent, s)

    def qualified(self, qualname: str | None) -> Definition | None:
        """The first definition (in file order) whose qualified name is `qualname`."""
        found = self._qualified.get(qualname)
        if found is not None:
            return found
        return next((s for s in self.named(qualname) if s.qualname == qualname), None)

    def members_of(self, parent: str) -> tuple[Definition, ...] | list[Definition]:
        """The definitions whose parent is the qualified name `parent`, in file order."""
        return _all_of(self.members.get(parent))

    def named(self, name: str) -> tuple[Definition, ...] | list[Definition]:
        """The definitions called `name`, in file order."""
        return _all_of(self._by_name.get(name))

    def defines(self, name: str) -> bool:
        return name in self._by_name

    def names(self) -> KeysView[str]:
        """Every name the file defines."""
        return self._by_name.keys()

    def top_level(self, name: str) -> Definition | None:
        """The first definition called `name` outside any other."""
        return next((s for s in self.named(name) if s.parent is None), None)


def find_exported(tables: dict[str, FileTable], bindings: dict[str, list[Binding]], path: str,
                  name: str, depth: int = 0) -> tuple[str, str | None] | None:
    """(path, qualname) of a top-level `name` defined in or re-exported by `path`; the
    qualname is None where the name is a module."""
    t = tables.get(path)
    if t is None:
        return None
    s = t.top_level(name)
    if s is not None:
        return path, s.qualname
    cands = t.named(name)
    if cands:
        return path, cands[0].qualname
    if depth >= 4:
        return None
    for imp in bindings.get(path, ()):
        if imp.alias == name or (imp.alias is None and imp.member == name):
            if imp.paths and imp.member not in (None, ALL):
                return find_exported(tables, bindings, imp.paths[0], imp.member, depth + 1)
            if imp.paths and imp.member is None:
                return imp.paths[0], None
    for imp in bindings.get(path, ()):
        if imp.member == ALL and imp.paths and len(imp.paths) == 1:
            hit = find_exported(tables, bindings, imp.paths[0], name, depth + 1)
            if hit:
                return hit
    return None


_UNSET = object()


def _scoped(imps: list[Binding], src: str | None) -> list[Binding]:
    """Imports visible from symbol `src`, innermost first (function-local imports shadow)."""
    out = [i for i in imps
           if i.scope is None or i.scope == src or (src or "").startswith(i.scope + ".")]
    if len(out) > 1:
        out.sort(key=lambda i: -len(i.scope or ""))
    return out


class Resolver:
    """Resolves names against a repository's definitions and resolved imports. A hit is
    (path, Definition), or (path, None) for a module; None where nothing is found."""

    def __init__(self, files: dict[str, FileFacts], tables: dict[str, FileTable],
                 imports: dict[str, list[Binding]], mods: Modules):
        self.files = files
        self.imports = imports
        self.mods = mods
        self.tables = tables
        # repo-wide name index per family: family -> name -> the paths of the files that
        # define it (see _add_one); their tables say which definitions
        self._names: dict[str, dict[str, str | list[str]]] = {}
        # members by the parent's simple name (methods in Go/Rust/Swift live outside the type)
        self.members_by_parent: dict[tuple[str, str], list[tuple[str, Definition]]] = \
            defaultdict(list)
        for p, t in self.tables.items():
            names = self._names.setdefault(t.fam, {})
            for name in t.names():
                _add_one(names, name, p)
            for s in files[p].symbols:
                if s.parent:
                    self.members_by_parent[(t.fam, parent_name(s.parent))].append((p, s))
        self.local_names: dict[str, dict[str, list[Binding]]] = {}
        for p, imps in imports.items():
            ln: dict[str, list[Binding]] = defaultdict(list)
            for imp in imps:
                if imp.alias:
                    ln[imp.alias].append(imp)
                elif imp.member not in (None, ALL):
                    ln[imp.member].append(imp)
            self.local_names[p] = ln
        self.bases: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
        self.scoped_imports = {p for p, imps in imports.items() if any(i.scope for i in imps)}
        # resolve_site's answers and scopes, for the sites of one file (the file resolved now:
        # files are resolved one after another, and no other file asks again)
        self._sites_of: str | None = None
        self._calls: dict[tuple[str | None, str, bool], Found] = {}  # (scope, name, types)
        self._contexts: dict[str | None, str | None] = {}  # a site's symbol -> its scope
        self._unique_members: dict[tuple, Hit | None] = {}
        self._star_tables: dict[str, list[tuple[str, FileTable]]] = {}  # via_star's files
        self._members: dict[tuple, Hit | None] | None = None  # set once bases are known
        self._packages: dict[tuple[str, str], dict[str, str | list[str]]] = {}
        # what the code says of the types of names: variables by (path, scope), attributes
        # by (path, type qualname), return types by (path, function qualname)
        self.variables: dict[tuple[str, str | None], dict[str, list[TypeFact]]] = \
            defaultdict(lambda: defaultdict(list))
        self.attributes: dict[tuple[str, str], dict[str, list[TypeFact]]] = \
            defaultdict(lambda: defaultdict(list))
        self.returns: dict[tuple[str, str], str] = {}
        for p, f in files.items():
            self._add_bindings(p, f)
        self._types: dict[tuple, TypeHit] = {}
        self._typing: set[tuple] = set()  # types being worked out: a cycle means unknown

    def _add_bindings(self, path: str, facts: FileFacts) -> None:
        t = self.tables[path]
        for ref in facts.references:
            if ref.kind != "bind":
                continue
            parsed = split_binding(ref.name)
            if parsed is None:
                continue
            var, how, expr = parsed
            scope = ref.source
            owner = t.qualified(scope) if scope is not None else None
            if owner is not None and owner.kind in NON_CALLABLE:  # a field's own line
                scope = owner.parent
                owner = t.qualified(scope) if scope is not None else None
            fact = (scope, how, expr)
            if var == "return":
                if scope is not None:
                    self.returns[(path, scope)] = expr
                continue
            head, _, attr = var.partition(".")
            if attr:  # `self.x = ...` in a method: an attribute of the class
                cls = self.enclosing_type(t, scope) if head in SELF_NAMES else None
                if cls is not None and "." not in attr:
                    self.attributes[(path, cls.qualname)][attr].append(fact)
                continue
            if owner is not None and owner.kind in TYPE_KINDS:
                self.attributes[(path, owner.qualname)][var].append(fact)
            self.variables[(path, scope)][var].append(fact)

    # -- types and their members
    def definitions(self, fam: str, name: str) -> tuple | list:
        """(path, symbol) of each definition of `name` in the family's files."""
        names = self._names.get(fam)
        if names is None:
            return ()
        return [(p, s) for p in _all_of(names.get(name)) for s in self.tables[p].named(name)]

    def is_defined(self, name: str) -> bool:
        """Whether any file of any language defines `name`: most names looked up (`len`,
        `str`, a local variable before `.method()`) are defined nowhere and need no search."""
        for names in self._names.values():
            if name in names:
                return True
        return False

    def enclosing_type(self, t: FileTable, qual: str | None) -> Definition | None:
        seen = 0
        while qual and seen < 32:
            s = t.qualified(qual)
            if s is None:
                return None
            if s.kind in TYPE_KINDS:
                return s
            qual = s.parent
            seen += 1
        return None

    def member(self, path: str, type_qual: str, name: str, depth: int = 0
               ) -> tuple[str, Definition] | None:
        """A member `name` of the type (path, type_qual), searching its bases (remembered
        once the bases are complete)."""
        if self._members is None:
            return self._member(path, type_qual, name, depth)
        key = (path, type_qual, name)
        hit = self._members.get(key, _UNSET)
        if hit is _UNSET:
            hit = self._members[key] = self._member(path, type_qual, name, depth)
        return hit

    def _member(self, path: str, type_qual: str, name: str, depth: int
                ) -> tuple[str, Definition] | None:
        t = self.tables.get(path)
        if t is None:
            return None
        for s in t.members_of(type_qual):
            if s.name == name:
                return path, s
        # methods declared outside the type body (Go receivers, Rust impl, Swift extensions)
        pname = parent_name(type_qual)
        best = None
        for p, s in self.members_by_parent.get((t.fam, pname), ()):
            if s.name == name:
                if p == path:
                    return p, s
                if best is None or posixpath.dirname(p) == t.dir:
                    best = (p, s)
        if best is not None and (t.language.members_outside_type or best[0] == path):
            return best
        if depth < 6:
            for bp, bq in self.bases.get((path, type_qual), ()):
                hit = self._member(bp, bq, name, depth + 1)
                if hit:
                    return hit
        return None

    def find_type(self, path: str, name: str) -> tuple[str, Definition] | None:
        return target(self.lookup(path, None, name, types_only=True)[0])

    def bases_complete(self) -> None:
        """Inheritance is resolved: from now on a name means the same each time it is asked."""
        self._members = {}

    # -- plain names
    def in_file(self, t: FileTable, name: str, src: str | None, types_only: bool):
        cands = t.named(name)
        if not cands:
            return None
        ok = [s for s in cands
              if (s.kind in TYPE_KINDS if types_only else s.kind not in NON_CALLABLE)]
        if not ok:
            return None
        # innermost visible: a sibling in an enclosing scope, else top level
        scope = src
        while scope:
            for s in ok:
                if s.parent == scope and s.kind not in ("method",):
                    return s
            st = t.qualified(scope)
            scope = st.parent if st else None
        for s in ok:
            if s.parent is None:
                return s
        return None

    def via_imports(self, path: str, name: str, types_only: bool, src: str | None = None):
        """What `name` is bound to by the file's imports: a hit, EXTERNAL, or None."""
        imports = self.local_names.get(path, {}).get(name)
        if not imports:
            return None
        for imp in _scoped(imports, src):
            if not imp.paths:
                return EXTERNAL
            if imp.member is None:
                return imp.paths[0], None  # a module object
            if imp.symbol:
                s = self.tables[imp.paths[0]].qualified(imp.symbol)
                if s is not None:
                    return (imp.paths[0], s) if not types_only or s.kind in TYPE_KINDS else None
            for p in imp.paths:
                s = self.tables[p].top_level(imp.member) \
                    or next(iter(self.tables[p].named(imp.member)), None)
                if s is not None:
                    return (p, s) if not types_only or s.kind in TYPE_KINDS else None
            return EXTERNAL
        return None

    def via_star(self, path: str, name: str, types_only: bool):
        """`name` defined in a file whose names the file imports wholesale."""
        tables = self._star_tables.get(path)
        if tables is None:
            tables = self._star_tables[path] = [
                (p, self.tables[p]) for imp in self.imports.get(path, ())
                if imp.member == ALL or (imp.member is not None and imp.paths and imp.alias is None)
                for p in imp.paths if p in self.tables]
        for p, t in tables:
            if t.defines(name):
                s = self.in_file(t, name, None, types_only)
                if s is not None:
                    return p, s
        return None

    def _package_names(self, t: FileTable) -> dict[str, str | list[str]]:
        """name -> the files of t's folder and language family that define it at top level
        (see _add_one), built once per package: a Java package of hundreds of files is
        asked thousands of times. Files are resolved in path order, so a folder's are
        near each other: only the last few folders' are kept (every folder's held a second
        copy of a C repository's names)."""
        key = (t.dir, t.fam)
        index = self._packages.get(key)
        if index is None:
            index = {}
            for p in self.mods.by_dir.get(t.dir, ()):
                u = self.tables[p]
                if u.fam != t.fam:
                    continue
                for name in u.names():
                    if any(s.parent is None for s in u.named(name)):
                        _add_one(index, name, p)
            if len(self._packages) >= PACKAGES_KEPT:
                self._packages.clear()
            self._packages[key] = index
        return index

    def same_package(self, t: FileTable, name: str, types_only: bool):
        if not t.language.same_package:
            return None
        for p in _all_of(self._package_names(t).get(name)):
            if p == t.path:
                continue
            for s in self.tables[p].named(name):
                if s.parent is None and (s.kind in TYPE_KINDS if types_only
                                         else s.kind not in NON_CALLABLE):
                    return p, s
        return None

    def unique(self, fam: str, name: str, types_only: bool, methods: bool):
        """The one definition of `name` in the family's files that is visible from
        elsewhere, if there is exactly one."""
        if len(name) < 3:
            return None
        cands = self.definitions(fam, name)
        ok = []
        for p, s in cands:
            if s.parent is not None:
                owner = self.tables[p].qualified(s.parent)
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

    def lookup(self, path: str, src: str | None, name: str, types_only: bool = False
               ) -> Found:
        """Resolve a plain (unqualified) name seen in `path` inside symbol `src`."""
        if not self.is_defined(name) and name not in self.local_names.get(path, ()):
            return NOT_FOUND
        t = self.tables[path]
        if src is not None and path in self.scoped_imports:
            local = [i for i in _scoped(self.local_names[path].get(name, ()), src) if i.scope]
            if local:  # a function-local import shadows the file's own definitions, when it
                if not local[0].paths:  # names another package ...
                    return OUTSIDE
                hit = self.via_imports(path, name, types_only, src)
                if hit is not None and hit != EXTERNAL:  # ... or a definition we found
                    return hit, Resolution.EXACT
        s = self.in_file(t, name, src, types_only)
        if s is not None:
            return (path, s), Resolution.EXACT
        if not types_only and any(x.kind in NON_CALLABLE and x.parent is None
                                  for x in t.named(name)):
            return NOT_FOUND  # a module-level variable holds the callable: not statically known
        implicit_this = t.language.implicit_this
        if implicit_this and not types_only:
            cls = self.enclosing_type(t, src)
            if cls is not None:
                hit = self.member(path, cls.qualname, name)
                if hit:
                    return hit, Resolution.EXACT
        hit = self.via_imports(path, name, types_only, src)
        if hit == EXTERNAL:
            return OUTSIDE
        if hit is not None:
            return hit, Resolution.EXACT
        hit = self.via_star(path, name, types_only) or self.same_package(t, name, types_only)
        if hit is not None:
            return hit, Resolution.EXACT
        hit = self.unique(t.fam, name, types_only, methods=implicit_this)
        return (hit, Resolution.NAME_ONLY) if hit is not None else NOT_FOUND

    # -- qualified names
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
                return EXTERNAL
            rest = recv[k:]
            if imp.member is None:
                targets = imp.paths
                if not rest:
                    for p in targets:
                        s = self.tables[p].top_level(name)
                        if s is not None:
                            return p, s
                    for p in targets:  # Python re-exports from a package __init__
                        hit = find_exported(self.tables, self.imports, p, name, 1)
                        if hit and hit[1]:
                            return hit[0], self.tables[hit[0]].qualified(hit[1])
                    return None
                for p in targets:
                    ts = self.tables[p].top_level(rest[-1]) or self.tables[p].top_level(rest[0])
                    if ts is not None:
                        hit = self.member(p, ts.qualname, name)
                        if hit:
                            return hit
                return None
            # alias of a type: Type.member
            hit = self.via_imports(path, key, True, src)
            if hit and hit != EXTERNAL and hit[1] is not None:
                return self.member(hit[0], hit[1].qualname, name)
            return None
        return None

    def context(self, t: FileTable, src: str | None) -> str | None:
        """The scope that decides what a name means inside `src`: the nearest of src and its
        enclosing symbols that is a type, has members of its own or gives names a type.
        Resolution sees src only through its enclosing type, nested definitions, variables
        and function-local imports, so calls from the methods of one class share one answer
        (except in files with local imports, and in languages whose rules read src
        itself)."""
        if src is None or t.language.scope_per_symbol or t.path in self.scoped_imports:
            return src
        qual = src
        for _ in range(32):
            s = t.qualified(qual)
            if (s is None or s.kind in TYPE_KINDS or qual in t.members
                    or (t.path, qual) in self.variables):
                return qual
            if s.parent is None:
                return None
            qual = s.parent
        return src

    def resolve_site(self, path: str, src: str | None, name: str, types_only: bool = False
                     ) -> Found:
        """resolve_call, remembered per (file, deciding scope, name): once the bases are
        known, a name means the same from every method of a class."""
        if path != self._sites_of:  # not held for the whole repository: no other file asks
            self._sites_of, self._calls, self._contexts = path, {}, {}
        scope = self._contexts.get(src, _UNSET)
        if scope is _UNSET:
            scope = self._contexts[src] = self.context(self.tables[path], src)
        key = (scope, name, types_only)
        found = self._calls.get(key, _UNSET)  # most names are asked once: no KeyError to raise
        if found is _UNSET:
            found = self._calls[key] = self.resolve_call(path, scope, name, types_only)
        return found

    def resolve_call(self, path: str, src: str | None, name: str, types_only: bool = False
                     ) -> Found:
        """What `name`, as written in `path` inside symbol `src`, refers to, and how sure
        that is; `types_only`: a type (base classes, type uses)."""
        if name.isidentifier():  # a plain name, most calls: nothing to split
            return self.lookup(path, src, name, types_only)
        t = self.tables[path]
        parts = [p for p in NAME_SEPARATOR.split(name) if p]
        if not parts:
            return NOT_FOUND
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
                    return hit, Resolution.INFERRED
            return self.unknown_receiver(t, final, types_only)
        if head in SUPER_NAMES and len(recv) == 1:
            cls = self.enclosing_type(t, src)
            if cls is not None:
                for bp, bq in self.bases.get((path, cls.qualname), ()):
                    hit = self.member(bp, bq, final)
                    if hit:
                        return hit, Resolution.INFERRED
            return NOT_FOUND
        if not types_only and any(part.endswith(("()", "[]")) for part in recv):
            found = self._member_of_type(self.chain_type(path, src, recv), final)
            return found if found is not None else self.unknown_receiver(t, final, types_only)
        hit = self.module_member(path, recv, final, types_only, src)
        if hit == EXTERNAL:
            return OUTSIDE
        if hit is not None:
            return hit, Resolution.EXACT
        if not types_only:
            found = self._member_of_type(self.receiver_type(path, src, recv), final)
            if found is not None:
                return found
        # Type.member / Type::new / Namespace.Type
        if len(recv) <= 2 and head not in SELF_NAMES:
            ty, level = self.lookup(path, src, recv[-1], types_only=True)
            if ty == EXTERNAL:
                return OUTSIDE
            if ty is not None and ty[1] is not None:
                if final in t.language.constructor_calls:
                    return ty, level
                hit = self.member(ty[0], ty[1].qualname, final)
                return (hit, level) if hit else NOT_FOUND
            if types_only:
                return self.lookup(path, src, final, types_only=True)
        if len(recv) == 1 and t.language.method_receivers:
            # receivers whose type the code gives were resolved above: this name is taken
            # for the method's own receiver on no evidence
            cls = self.enclosing_type(t, src) or self._method_receiver(t, src)
            if cls is not None:
                hit = self.member(path, cls.qualname, final)
                if hit:
                    return hit, Resolution.NAME_ONLY
        if t.language.capitalized_receivers_are_types and head[:1].isupper():
            return NOT_FOUND
        return self.unknown_receiver(t, final, types_only)

    def _member_of_type(self, ty: TypeHit, final: str) -> Found | None:
        """`final` called on a receiver of type `ty`: nothing of the repository's for a
        foreign type, the member of one of its own (inferred) or not found; None when the
        type is unknown."""
        if ty == EXTERNAL:
            return OUTSIDE
        if ty is None:
            return None
        hit = self.member(ty[0], ty[1].qualname, final)
        return (hit, Resolution.INFERRED) if hit else NOT_FOUND

    # -- the types of receivers
    def receiver_type(self, path: str, src: str | None, recv: list[str]) -> TypeHit:
        """The type of `a.b.c` (as its parts) in `path` inside `src`: a type the code gives
        the first name (self, an annotation, a constructor, a literal), then each
        attribute's. None where the code does not say."""
        head = recv[0]
        if head in SELF_NAMES:
            cls = self.enclosing_type(self.tables[path], src)
            ty = (path, cls) if cls is not None else None
        else:
            ty = self.variable_type(path, src, head)
        for attr in recv[1:]:
            if ty is None or ty == EXTERNAL:  # an attribute of a foreign value is foreign
                return ty
            ty = self.attribute_type(ty, attr)
        return ty

    def chain_type(self, path: str, src: str | None, recv: list[str]) -> TypeHit:
        """The type of a chain of names, calls and indexes (`r`, `NewRoute()`, `Path()`;
        `r`, `routes[]`): the first call's declared result or the first indexed name's
        declared elements, then each method's, attribute's or element's in turn. None where
        a step's type is not known."""
        first = next(i for i, part in enumerate(recv) if part.endswith(("()", "[]")))
        names = recv[:first] + [recv[first][:-2]]
        ty = self.value_type(path, src, ".".join(names)) if recv[first].endswith("()") \
            else self.element_type(path, src, names)
        for part in recv[first + 1:]:
            if ty is None or ty == EXTERNAL:
                return ty
            name = part[:-2] if part.endswith(("()", "[]")) else part
            if part.endswith("[]"):
                ty = self._declared_elements(ty[0], self.attributes.get(
                    (ty[0], ty[1].qualname), {}).get(name))
            elif part.endswith("()"):
                hit = self.member(ty[0], ty[1].qualname, name)
                returned = self.returns.get((hit[0], hit[1].qualname)) if hit else None
                ty = self.declared_type(hit[0], hit[1].qualname, returned) if returned \
                    else None
            else:
                ty = self.attribute_type(ty, part)
        return ty

    def element_type(self, path: str, src: str | None, parts: list[str]) -> TypeHit:
        """The type of the elements of `a.b.c` (as its parts): what its declaration says of
        them (`routes []*Route`). None where it says nothing."""
        if len(parts) == 1:
            return self._declared_elements(path, self._facts_in_scope(path, src, parts[0]))
        owner = self.receiver_type(path, src, parts[:-1])
        if owner is None or owner == EXTERNAL:
            return owner
        return self._declared_elements(owner[0], self.attributes.get(
            (owner[0], owner[1].qualname), {}).get(parts[-1]))

    def _declared_elements(self, path: str, facts: list[TypeFact] | None) -> TypeHit:
        """The type one declaration of elements among `facts` names; None for none or
        several."""
        declared = [f for f in facts or () if f[1] == ELEMENTS]
        if len(declared) != 1:
            return None
        scope, _, expr = declared[0]
        return self.declared_type(path, scope, expr)

    def _facts_in_scope(self, path: str, src: str | None, var: str) -> list[TypeFact]:
        """The facts of a variable seen from `src`: bound there or in an enclosing scope."""
        t, scope = self.tables[path], src
        for _ in range(32):
            facts = self.variables.get((path, scope), {}).get(var)
            if facts:
                return facts
            if scope is None:
                return []
            s = t.qualified(scope)
            scope = s.parent if s is not None else None
        return []

    def variable_type(self, path: str, src: str | None, var: str) -> TypeHit:
        """The type of the variable `var` seen from `src`: bound there, in an enclosing
        function, at module level, or at the module level of the file it is imported from.
        A class body encloses its methods only where members are in scope unqualified
        (implicit this)."""
        t = self.tables[path]
        scope = src
        for _ in range(32):
            s = t.qualified(scope) if scope is not None else None
            if s is None or s.kind not in TYPE_KINDS or t.language.implicit_this:
                facts = self.variables.get((path, scope), {}).get(var)
                if facts:
                    return self.type_of_facts(path, ("var", scope, var), facts)
            if scope is None:
                break
            scope = s.parent if s is not None else None
        for imp in _scoped(self.local_names.get(path, {}).get(var, []), src)[:1]:
            if imp.paths and imp.member not in (None, ALL):
                facts = self.variables.get((imp.paths[0], None), {}).get(imp.member)
                if facts:
                    return self.type_of_facts(imp.paths[0], ("var", None, imp.member), facts)
        if t.language.same_package:  # a package-level variable of another file (Go)
            for p in _all_of(self._package_names(t).get(var)):
                facts = self.variables.get((p, None), {}).get(var)
                if p != path and facts:
                    return self.type_of_facts(p, ("var", None, var), facts)
        return None

    def attribute_type(self, ty: tuple[str, Definition], attr: str) -> TypeHit:
        """The type of attribute `attr` of instances of `ty`: assigned or annotated in the
        class or a base, or returned by a property or method of that name."""
        todo, seen = [(ty[0], ty[1].qualname)], set()
        while todo and len(seen) < 16:
            key = todo.pop(0)
            if key in seen:
                continue
            seen.add(key)
            facts = self.attributes.get(key, {}).get(attr)
            if facts:
                return self.type_of_facts(key[0], ("attr", key, attr), facts)
            todo.extend(self.bases.get(key, ()))
        hit = self.member(ty[0], ty[1].qualname, attr)
        if hit is not None:
            returned = self.returns.get((hit[0], hit[1].qualname))
            if returned:
                return self.declared_type(hit[0], hit[1].qualname, returned)
        return None

    def type_of_facts(self, path: str, key: tuple, facts: list[TypeFact]) -> TypeHit:
        """The one type a name's facts agree on (declared types before assigned values);
        None where they disagree or say nothing."""
        key = (path, *key)
        if key in self._types:
            return self._types[key]
        if key in self._typing:
            return None
        self._typing.add(key)
        try:
            declared = [f for f in facts if f[1] == ":"]
            assigned = [f for f in facts if f[1] not in (":", ELEMENTS)]
            found: TypeHit = None
            for i, (scope, how, expr) in enumerate(declared or assigned):
                if how == ":":
                    ty = self.declared_type(path, scope, expr)
                elif how == "=":
                    ty = self.value_type(path, scope, expr)
                elif expr.endswith("[]"):
                    ty = self.element_type(path, scope, expr[:-2].split("."))
                else:
                    ty = self.receiver_type(path, scope, expr.split("."))
                if ty is None or (i and not _same_type(ty, found)):
                    found = None
                    break
                found = ty
        finally:
            self._typing.discard(key)
        if self._members is not None:  # the bases are known: the answer holds
            self._types[key] = found
        return found

    def declared_type(self, path: str, scope: str | None, expr: str) -> TypeHit:
        """The type an annotation names: a definition of the repository, EXTERNAL where the
        repository defines no such name, None where unsure."""
        if parent_name(expr) in UNKNOWN_TYPES:
            return None
        hit, level = self.resolve_call(path, scope, expr, types_only=True)
        if hit == EXTERNAL:
            return EXTERNAL
        if hit is not None:
            return hit if level >= Resolution.INFERRED and hit[1] is not None else None
        return EXTERNAL if not self.is_defined(parent_name(expr)) else None

    def value_type(self, path: str, scope: str | None, expr: str) -> TypeHit:
        """The type of the value a call of `expr` returns: the class it constructs, or the
        declared return type of the function it calls."""
        if expr == "?":
            return None
        hit, level = self.resolve_call(path, scope, expr)
        if hit == EXTERNAL:
            return EXTERNAL
        if hit is None:
            return EXTERNAL if expr in BUILTIN_VALUES and not self.is_defined(expr) else None
        if level < Resolution.INFERRED or hit[1] is None:
            return None
        if hit[1].kind in TYPE_KINDS:
            return hit
        returned = self.returns.get((hit[0], hit[1].qualname))
        return self.declared_type(hit[0], hit[1].qualname, returned) if returned else None

    def _method_receiver(self, t: FileTable, src: str | None) -> Definition | None:
        """The type a method defined outside its type's body belongs to (its parent), made
        up where that type is declared in another file."""
        s = t.qualified(src) if src else None
        if s is not None and s.parent:
            return t.qualified(s.parent) or Definition(parent_name(s.parent), s.parent, "struct")
        return None

    def unknown_receiver(self, t: FileTable, final: str, types_only: bool) -> Found:
        """`x.final()` with x of unknown type: the one definition of that name, if unique,
        as a guess."""
        if final in COMMON_METHODS or len(final) < 3:
            return NOT_FOUND
        key = (t.fam, final, types_only)
        hit = self._unique_members.get(key, _UNSET)
        if hit is _UNSET:
            cands = [(p, s) for p, s in self.definitions(t.fam, final)
                     if (s.kind in TYPE_KINDS if types_only else s.kind not in NON_CALLABLE)]
            hit = cands[0] if len(cands) == 1 and (types_only or cands[0][1].parent is not None) \
                else None
            self._unique_members[key] = hit
        return (hit, Resolution.NAME_ONLY) if hit is not None else NOT_FOUND


def _same_type(a: TypeHit, b: TypeHit) -> bool:
    if a == EXTERNAL or b == EXTERNAL:
        return a == b
    return a[0] == b[0] and a[1].qualname == b[1].qualname



# Below this many references, a second process costs more than it saves; above the
# second bound, its copy of the tables (written to as it reads them: reference counts)
# costs gigabytes of memory to save a few seconds.
PARALLEL_REFERENCES = 8_000
SERIAL_ABOVE_REFERENCES = 1_000_000


def resolve_uses(r: Resolver, files: dict[str, FileFacts], parallel: bool,
                 emit: Callable[[Edge], object]) -> None:
    """Call and type-use edges, to `emit` in file order. Every file resolves alone once the
    tables and bases are built, so on a large repository a forked copy of the resolver
    takes half the files: the second core is otherwise idle (not on a huge one: see
    SERIAL_ABOVE_REFERENCES). Where no helper process can be had (one worker asked for, a
    daemonic process, no fork, fork failing) all is resolved here."""
    paths = list(files)
    total = sum(files[p].reference_count() for p in paths)
    if (not parallel or not PARALLEL_REFERENCES <= total <= SERIAL_ABOVE_REFERENCES
            or (os.cpu_count() or 1) < 2):
        _uses_of(r, files, paths, emit)
        return
    half, count = len(paths), 0
    for i, p in enumerate(paths):
        count += files[p].reference_count()
        if count >= total // 2:
            half = i + 1
            break
    helper = Forked.start(_use_rows, r, files, paths[half:])
    if helper is None:
        _uses_of(r, files, paths, emit)
        return
    try:
        _uses_of(r, files, paths[:half], emit)
    except BaseException:
        helper.close()
        raise
    rows = helper.result()
    if rows is None:  # the helper died: its half here
        _uses_of(r, files, paths[half:], emit)
        return
    for row in rows:
        emit(Edge(*row))


def _use_rows(r: Resolver, files: dict[str, FileFacts], paths: list[str]) -> list[tuple]:
    # plain tuples: pickling them is several times faster than pickling the dataclass
    rows: list[tuple] = []
    _uses_of(r, files, paths, lambda e: rows.append((
        e.kind, e.src_path, e.src_symbol, e.dst_path, e.dst_symbol, e.line, e.resolution,
        e.name)))
    return rows


def _uses_of(r: Resolver, files: dict[str, FileFacts], paths: list[str],
             emit: Callable[[Edge], object]) -> None:
    for path in paths:
        for ref in files[path].take_uses():
            if ref.kind == "call":
                hit, level = r.resolve_site(path, ref.source, ref.name)
                emit(hit_edge("call", path, ref.source, target(hit), ref, level))
            elif ref.kind == "ref":
                hit, level = r.resolve_site(path, ref.source, ref.name, types_only=True)
                hit = target(hit)
                if hit is not None and hit[1] is not None and not (
                        hit[0] == path and hit[1].qualname == ref.source):
                    emit(hit_edge("ref", path, ref.source, hit, ref, level))
