"""Resolve raw references (fourfold.parsing.references) into a repository dependency graph.

Pure, in-memory functions: input is ``{path: FileFacts}`` for a whole repository (paths
relative, '/'-separated), output a list of :class:`Edge`. What differs between languages
(how a module name maps to files, which call rules apply) is in fourfold.graph.languages;
name lookup for calls, type uses and bases is fourfold.graph.calls.

Edge kinds:

* ``import``  file -> file (src_symbol/dst_symbol are None, or dst_symbol is the imported
  member when it resolved to a definition); an import of something outside the repository
  is kept with ``dst_path=None``, resolution NONE, and the module name.
* ``call``    symbol -> symbol (``src_symbol`` None = module level). Resolution order: the
  enclosing class (and its bases) for ``self``/``this``/``super``/implicit-this calls,
  definitions in the same file, names imported into the file, modules imported under an alias
  (``pkg.Func``, ``np.array``), the same package/directory, the declared or constructed type
  of a receiver, then a name that is unique in the repository. What cannot be resolved, and
  a call on a receiver of a built-in or foreign type, is kept with ``dst_* = None``,
  resolution NONE, and the name as written.
* ``inherit`` class -> base class / interface / trait / mixin, resolved the same way.
* ``ref``     symbol -> type for non-call uses of type names; only resolved refs are kept.

Each edge says how sure its target is (fourfold.store.base.Resolution): EXACT for imports,
qualified module members and names found in scope or imported; INFERRED where the
receiver's type was inferred (``self``/``cls``/``super``, a local or attribute assigned from
a constructor, an annotation, a method's receiver); NAME_ONLY where the one definition of
the name in the repository was taken for it; NONE without a target.
"""
from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace

from ..model import REEXPORT
from ..store.base import Resolution
from .calls import FileTable, Resolver, find_exported, resolve_uses, target
from .facts import Edge, FileFacts, hit_edge, parent_name
from .imports import ALL, Binding, Modules, parse_import
from .languages import language


def resolve_graph(files: dict[str, FileFacts], extra_files: dict[str, str] | None = None,
                  parallel: bool = True) -> list[Edge]:
    """All edges of a repository: imports, inheritance, calls and (resolved) type refs.
    `extra_files`: path -> text of files imports are resolved by (go.mod).
    `parallel=False` resolves in this process only."""
    edges: list[Edge] = []
    resolve_into(edges.append, files, extra_files, parallel)
    return edges


def resolve_into(emit: Callable[[Edge], object], files: dict[str, FileFacts],
                 extra_files: dict[str, str] | None = None, parallel: bool = True,
                 only: Collection[str] | None = None) -> None:
    """resolve_graph's edges, in the same order, each handed to `emit` as it is made: a big
    repository's millions of edges need not be held as objects (see EdgeBuilder). `only`:
    the edges of these files alone (every file's imports and bases are still resolved:
    they decide where names lead); the others need no calls or type uses."""
    files = {p: replace(f, symbols=[s for s in f.symbols if s.kind != REEXPORT])
             if any(s.kind == REEXPORT for s in f.symbols) else f for p, f in files.items()}
    tables = {p: FileTable(p, f, language(f.language)) for p, f in files.items()}
    mods = Modules(files, {p: t.fam for p, t in tables.items()}, extra_files)
    imports = _resolve_imports(files, tables, mods, emit, only)
    mods.imports_resolved()
    r = Resolver(files, tables, imports, mods)
    # inheritance first: call resolution walks base classes
    for path, facts in files.items():
        for ref in facts.references:
            if ref.kind != "inherit":
                continue
            found, level = r.resolve_call(path, ref.source, ref.name, types_only=True)
            hit = target(found)
            src = ref.source
            if src is not None and tables[path].qualified(src) is None:
                # `impl Trait for S`, Swift extensions: the type may live elsewhere
                ty = r.find_type(path, parent_name(src))
                src_path = ty[0] if ty else path
            else:
                src_path = path
            if hit is not None and hit[1] is not None and src is not None:
                r.bases[(src_path, src)].append((hit[0], hit[1].qualname))
            if only is None or path in only:
                emit(hit_edge("inherit", path, src, hit, ref, level))
    r.bases_complete()
    resolve_uses(r, files if only is None else {p: files[p] for p in files if p in only},
                 parallel, emit)


def _resolve_imports(files: dict[str, FileFacts], tables: dict[str, FileTable], mods: Modules,
                     emit: Callable[[Edge], object], only: Collection[str] | None = None
                     ) -> dict[str, list[Binding]]:
    """File -> file import edges (to `emit`; of the files in `only` if given), and what
    each file's imports bind (for call resolution)."""
    bindings: dict[str, list[Binding]] = {}
    for path, facts in files.items():
        rules = tables[path].language
        bound: list[Binding] = []
        for ref in facts.references:
            if ref.kind != "import":
                continue
            imp = parse_import(ref)
            for b in rules.resolve_import(mods, path, imp):
                b.scope = imp.scope
                bound.append(b)
        bindings[path] = bound
    # members: the definition the imported name points at (following re-exports)
    for path, bound in bindings.items():
        for b in bound:
            if b.paths and b.member not in (None, ALL, "default"):
                hit = find_exported(tables, bindings, b.paths[0], b.member)
                if hit:
                    b.paths = [hit[0]] + [p for p in b.paths if p != hit[0]]
                    b.symbol = hit[1]
    seen = set()
    for path, bound in bindings.items():
        if only is not None and path not in only:
            continue
        for b in bound:
            if not b.paths:
                key = (path, None, b.line, b.module)
                if key not in seen:
                    seen.add(key)
                    emit(Edge("import", path, None, None, None, b.line, Resolution.NONE,
                              b.module))
                continue
            for p in b.paths:
                if p == path:
                    continue
                key = (path, p, b.line, b.module)
                if key in seen:
                    continue
                seen.add(key)
                emit(Edge("import", path, None, p, b.symbol if p == b.paths[0] else None,
                          b.line, Resolution.EXACT, b.module))
    return bindings
