"""Raw references (calls, imports, inheritance, type uses) found with tree-sitter queries.

One query file per language: ``queries/<language>.refs.scm``. Capture convention:

* ``@reference.call``    the callee as written (``foo``, ``self.save``, ``pkg.Func``, ``Type::new``)
* ``@reference.import``  the imported module / path (quotes are stripped)
* ``@reference.inherit`` a base class, implemented interface, trait, mixin or embedded type
* ``@reference.ref``     a non-call use of a type name (annotations, parameter/field types)
* ``@reference.bind``    a name the code gives a type (a variable, parameter or ``self.x``),
                        with ``@bind.type`` (its annotation), ``@bind.call`` (the callee whose
                        value is assigned to it), ``@bind.literal`` (a literal assigned) or
                        ``@bind.value`` (a name whose value is assigned)

Variants of the main capture (``@reference.<kind>.<variant>``):

* ``import.stmt``       the whole import statement; keywords are stripped and ``{a, b}`` groups
                        expanded (Rust ``use``, Java/Kotlin/Scala/C#/PHP/Swift/Haskell imports)
* ``import.relative``   a path relative to the file (Ruby ``require_relative``): ``./`` is added
* ``import.mod``        a Rust ``mod foo;`` declaration: encoded ``mod foo``
* ``import.default``    JS default import: encoded ``<module>:default as <local>``
* ``import.namespace``  JS namespace import: encoded ``<module>:* as <local>``
* ``import.star``       JS ``export * from '<module>'``: encoded ``<module>:*``
* ``bind.<type>``       the name holds a value of built-in ``<type>`` (``**kwargs``: dict)
* ``bind.return``       on a function's name, with ``@bind.type``: its return type

Helper captures in the same match:

* ``@receiver`` / ``@receiver.arrow`` / ``@receiver.colons``: prefix joined with ``.``, ``->``, ``::``
* ``@module``  prefix joined with ``:`` (``from a.b import c`` -> ``a.b:c``)
* ``@alias``   suffix `` as <alias>``
* ``@source``  the defining type for references outside its span (Rust ``impl Trait for S``)

Captures whose name starts with ``_`` only serve predicates.

Name encodings (what the graph resolver reads):

* import: ``module[:member][ as alias]``. ``module`` is the path as written: ``os.path``,
  ``..pkg.mod`` (Python relative), ``./util`` (JS), ``fmt``, ``crate::a::b``, ``java.util.List``,
  ``java.util.*``, ``<stdio.h>`` (system include, angle brackets kept), ``local/util.h``
  (quoted include), ``App\\Models\\User``, ``mod foo`` (Rust module declaration).
  ``member`` is present for Python ``from`` imports (``a.b:c``, ``.:sibling``, ``.utils:*``)
  and JS/TS ES imports (``./util:a``, ``./util:b as c``, ``./d:default as D``,
  ``./ns:* as ns``). ``alias`` for ``import x as y`` forms in every language that has them.
* call: the callee as written, whitespace, generic arguments and ``?.`` removed. When the
  receiver is not a plain name path (``foo().bar``, ``a[0].b``) it is encoded ``?.bar``;
  in the CALL_CHAINS languages a receiver of names and calls keeps them, arguments dropped
  (``r.NewRoute().Path().Handler``). Python ``super().m`` is encoded ``super.m``.
* inherit / ref: the type name as written (generic arguments removed): ``Base``, ``ns::C``.
* bind: ``name:Type`` (declared: the class an annotation names, when it names one; a
  literal's built-in type), ``name=callee`` (assigned what calling ``callee`` returns,
  the callee encoded as a call is), ``name~other.name`` (assigned the value of another
  name), ``name~other.name[]`` (an element of it: a range variable), ``name@Type`` (its
  elements are of Type: a slice), ``return:Type`` (the enclosing function returns it).
"""
from __future__ import annotations

import re
from functools import cache

import tree_sitter

from ..model import REEXPORT, Reference, Symbol
from .grammars import get_language
from .structure import read_query

_KINDS = ("call", "import", "inherit", "ref", "bind")

_WS = re.compile(r"\s+")
_GENERIC = re.compile(r"<[^<>]*>")
_PATH = re.compile(
    r"^(?:[$@:\\]|::)?[A-Za-z_][\w$]*(?:(?:\.|::|->|:|\\)[$@]?[A-Za-z_][\w$]*)*[!?]?$"
)
_TRAILING = re.compile(r"([A-Za-z_][\w$]*)[!?]?$")
_NAME_CHAR = re.compile(r"[\w$]")
_STRIP_KW = re.compile(
    r"^(?:import|using|use|static|global|from|export|alias|require|qualified|function|const"
    r"|class|struct|enum|protocol|typealias|func|var|let|module|type)\s+"
)


def query_text(language: str) -> str | None:
    try:
        return read_query(f"{language}.refs.scm")
    except OSError:
        return None


@cache
def _query(language: str) -> tree_sitter.Query | None:
    """The language's reference query, compiled once. One query (one tree traversal): the
    traversal, not the number of patterns, dominates the cost."""
    text = query_text(language)
    return tree_sitter.Query(get_language(language), text) if text else None


@cache
def _capture_kind(cname: str) -> tuple[str, str]:
    parts = cname.split(".")
    return parts[1], (parts[2] if len(parts) > 2 else "")


def _text(source: bytes, node: tree_sitter.Node) -> str:
    """A node's text, cut from the file's bytes: a tree parsed through a read callback (for
    the parse's time limit) would read it through that callback."""
    return source[node.start_byte:node.end_byte].decode("utf-8", "replace")


_SIMPLE = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")


def _norm(text: str) -> str:
    """Normalise a callee / type expression; '' when nothing name-like is left."""
    if _SIMPLE.fullmatch(text):  # fast path: `foo`, `self.save`, `pkg.Func`
        return text
    t = _WS.sub("", text)
    if "?." in t or "!!." in t:
        t = t.replace("!!.", ".").replace("?.", ".")
    if "super()" in t:
        t = t.replace("super()", "super")
    if "<" in t:
        for _ in range(8):
            n = _GENERIC.sub("", t)
            if n == t:
                break
            t = n
        t = t.replace("::::", "::")
        if t.endswith("::"):
            t = t[:-2]
    if _PATH.match(t):
        return t
    m = _last_name(t)
    return "?." + m.group(1) if m else ""


def _last_name(text: str) -> re.Match | None:
    """`_TRAILING.search(text)`, looking first at the end only: searched from the start, a
    long chain of calls costs a scan per character."""
    start = max(0, len(text) - 64)
    m = _TRAILING.search(text, start)
    if start and (m is None or _NAME_CHAR.match(text, m.start() - 1)):
        m = _TRAILING.search(text)  # the name may begin before the window
    return m


_OPAQUE = "?"  # stands for a receiver that is no name path; _norm encodes the call `?.name`
_IDENTIFIER = re.compile(r"[A-Za-z_][\w$]*")


def _opaque(receiver: str) -> bool:
    """A receiver `_norm` would reduce to `?` anyway (`foo().bar`, `a[0].b`), told cheaply:
    a chain of calls repeats each receiver inside the next, so normalising the whole text of
    each would cost the square of the chain's length."""
    return ("(" in receiver or "[" in receiver) and "super()" not in receiver \
        and "<" not in receiver


# Languages whose calls on a call's result keep the chain (`r.NewRoute().Name`, arguments
# dropped) for the graph to type step by step; elsewhere such a receiver stays `?`. Checked
# against the language's type checker (bench/graph_oracle_go.py) before it is turned on.
CALL_CHAINS = frozenset({"go"})
MAX_CHAIN_CHARS = 200  # a longer receiver is no chain worth typing (and costs a scan)
_CHAIN = re.compile(r"[A-Za-z_$][\w$]*(?:\(\)|\[\])?(?:\.[A-Za-z_$][\w$]*(?:\(\)|\[\])?)*")
_INNERMOST = re.compile(r"\([^()\[\]]*\)|\[[^()\[\]]*\]")


def _call_chain(receiver: str) -> str | None:
    """`r.NewRoute().Path(p)` as `r.NewRoute().Path()`, `r.routes[i]` as `r.routes[]`: a
    receiver that is names, calls and indexing only, ending in a call or an index, its
    arguments and indexes dropped; None for anything else."""
    if len(receiver) > MAX_CHAIN_CHARS or not receiver.endswith((")", "]")):
        return None
    t = _WS.sub("", receiver)
    for _ in range(8):  # innermost argument lists and indexes first, until none is left
        shorter = _INNERMOST.sub(lambda m: "\x01" if m.group(0)[0] == "(" else "\x02", t)
        if shorter == t:
            break
        t = shorter
    t = t.replace("\x01", "()").replace("\x02", "[]")
    return t if t.endswith(("()", "[]")) and _CHAIN.fullmatch(t) else None


def _unquote(text: str) -> str:
    t = text.strip()
    if len(t) >= 2 and t[0] in "\"'`" and t[-1] == t[0]:
        t = t[1:-1]
    return t


def _top_level(text: str, separator: str, opening: str = "[", closing: str = "]") -> list[str]:
    """`text` split at `separator` outside brackets, each part stripped."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
        elif ch == separator and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def _expand_braces(s: str) -> list[str]:
    i = s.find("{")
    if i < 0:
        return [s]
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                break
    else:
        return [s.replace("{", "").replace("}", "")]
    prefix, inner, suffix = s[:i], s[i + 1:j], s[j + 1:]
    out: list[str] = []
    for p in _top_level(inner, ",", "{", "}"):
        if p:
            out.extend(_expand_braces(prefix + p + suffix))
    return out


# import statement clean-up
_HIDING = re.compile(r"\bhiding\b")
_PARENS = re.compile(r"\([^()]*(?:\([^()]*\)[^()]*)*\)")
_QUALIFIED = re.compile(r"\s+qualified\b")
_USING_ALIAS = re.compile(r"^([\w.]+)\s*=\s*(.+)$")
_SELF_SEGMENT = re.compile(r"(::|\.)self\b")
_AS = re.compile(r"\s*\bas\b\s*")
_SEPARATOR_SPACE = re.compile(r"\s*(::|\.|\\)\s*")
_PLAIN_IMPORT = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*(?:(?:\.|::)\*)?")


def _plain_import(path: str) -> bool:
    """`java.util.List`, `a.b.*`, `std::sync::Arc`: most imports, which the clean-up of
    _import_stmt would leave as they are."""
    return (_PLAIN_IMPORT.fullmatch(path) is not None and ".self" not in path
            and "::self" not in path and not path.endswith("._") and _AS.search(path) is None)


def _import_stmt(text: str) -> list[str]:
    """Clean an import statement's text into one or more module paths."""
    t = text.strip().rstrip(";").strip()
    # Haskell: import lists and hiding lists; Python-style parenthesised lists elsewhere are rare.
    if "(" in t:
        t = _HIDING.sub(" ", t)
        t = _PARENS.sub(" ", t)
    prev = None
    while prev != t:
        prev = t
        t = _STRIP_KW.sub("", t.strip())
    if _plain_import(t):
        return [t]
    t = _QUALIFIED.sub("", t)
    t = _WS.sub(" ", t).strip()
    # C#: using X = A.B;
    m = _USING_ALIAS.match(t)
    if m:
        t = f"{m.group(2).strip()} as {m.group(1)}"
    out = []
    for item in _expand_braces(t):
        if _plain_import(item):
            out.append(item)
            continue
        item = _WS.sub(" ", item.replace("=>", " as ")).strip()
        item = _SELF_SEGMENT.sub("", item)
        if item.endswith("._"):
            item = item[:-2] + ".*"
        if " as _" == item[-5:]:
            continue
        item = _AS.sub(" as ", item)
        item = _SEPARATOR_SPACE.sub(r"\1", item)
        if item:
            out.append(item)
    return out


_LITERAL_TYPES = {
    "dictionary": "dict", "dictionary_comprehension": "dict", "list": "list",
    "list_comprehension": "list", "set": "set", "set_comprehension": "set", "tuple": "tuple",
    "string": "str", "concatenated_string": "str", "integer": "int", "float": "float",
}
# annotations that wrap the class they name (Optional[X], type[X], Annotated[X, ...])
_TYPE_WRAPPERS = frozenset({"Optional", "Union", "Type", "type", "Annotated", "ClassVar",
                            "Final", "Required", "NotRequired", "ReadOnly"})
_NO_CLASS = frozenset({"Any", "object", "None", "", "var", "any", "unknown"})
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def _annotated_class(text: str, depth: int = 0) -> str:
    """The class a Python annotation names, dotted as written; "?" for none or several."""
    t = _unquote(text)
    if "<" in t:  # Java, TypeScript: List<Foo> names a List
        t = _norm(t)
    options = [o for o in _top_level(t, "|") if o not in ("None", "")]
    if len(options) != 1 or depth > 4:
        return "?"
    base, bracket, args = options[0].partition("[")
    base = base.strip()
    if base.rsplit(".", 1)[-1] in _TYPE_WRAPPERS and bracket:
        inner = [a for a in _top_level(args.removesuffix("]"), ",") if a not in ("None", "")]
        if base.endswith("Annotated"):
            inner = inner[:1]
        return _annotated_class(inner[0], depth + 1) if len(inner) == 1 else "?"
    if base.rsplit(".", 1)[-1] in _NO_CLASS or not _DOTTED.fullmatch(base):
        return "?"
    return base


def _binding(variant: str, var: str, caps: dict, source: bytes) -> str:
    """The encoded name of a bind fact (see the module docstring); '' for none."""
    if variant == "return":
        var = "return"
    elif variant:
        return f"{var}:{variant}"
    if not _SIMPLE.fullmatch(var):  # `a[0].b = ...` gives no name a type
        return ""
    declared = caps.get("bind.type")
    if declared:  # an annotation naming no one class says nothing
        named = _annotated_class(_text(source, declared[0]))
        return f"{var}:{named}" if named != "?" else ""
    elements = caps.get("bind.elements")
    if elements:
        named = _annotated_class(_text(source, elements[0]))
        return f"{var}@{named}" if named != "?" else ""
    ranged = caps.get("bind.range")
    if ranged:
        text = _text(source, ranged[0])
        return f"{var}~{text}[]" if _SIMPLE.fullmatch(text) else ""
    literal = caps.get("bind.literal")
    if literal:
        builtin = _LITERAL_TYPES.get(literal[0].type)
        return f"{var}:{builtin}" if builtin else ""
    value = caps.get("bind.value")
    if value:
        text = _text(source, value[0])
        return f"{var}~{text}" if _SIMPLE.fullmatch(text) else ""
    callee = caps.get("bind.call")
    if callee:
        text = _text(source, callee[0])
        name = _norm(text) if not _opaque(text) else ""
        return f"{var}={name if name and not name.startswith('?') else '?'}"
    return ""


_TYPE_KINDS = frozenset({"class", "interface", "trait", "struct", "enum", "protocol", "module",
                         "object", "record", "union", "impl", "extension", "mixin", "actor",
                         "namespace", "type"})


def _paint(symbols, n_lines: int) -> list[str | None]:
    owner: list[str | None] = [None] * (n_lines + 2)
    for s in sorted(symbols, key=lambda s: (s.start_line - s.end_line, -s.start_line)):
        lo = max(s.start_line, 0)
        hi = min(s.end_line, n_lines + 1)
        if hi >= lo:
            owner[lo:hi + 1] = [s.qualname] * (hi - lo + 1)
    return owner


def _source_index(symbols: list[Symbol], n_lines: int) -> tuple[list[str | None], dict[str, str]]:
    """line -> qualname of the innermost symbol containing it."""
    owner = _paint(symbols, n_lines)
    by_name: dict[str, str] = {}
    for s in symbols:
        by_name.setdefault(s.name, s.qualname)
        by_name.setdefault(s.qualname, s.qualname)
    return owner, by_name


def _elixir_skip(node: tree_sitter.Node, source: bytes) -> bool:
    """`def name(args)`: the head of a definition is not a call."""
    call = node.parent
    args = call.parent if call is not None else None
    outer = args.parent if args is not None else None
    if outer is None or outer.type != "call" or args.type != "arguments":
        return False
    target = outer.child_by_field_name("target")
    return target is not None and source[target.start_byte:target.end_byte] in _ELIXIR_DEFS


_ELIXIR_DEFS = {
    b"def", b"defp", b"defmacro", b"defmacrop", b"defguard", b"defguardp", b"defdelegate",
    b"defn", b"defnp",
}
_SKIP = {"elixir": _elixir_skip}


def extract_references(
    tree: tree_sitter.Tree, source: bytes, language: str, symbols: list[Symbol],
    matches: list | None = None,
) -> list[Reference]:
    """Raw references of one parsed file (`matches`: the reference query's matches when the
    caller already ran them)."""
    if matches is None:
        query = _query(language)
        if query is None:
            return []
        matches = tree_sitter.QueryCursor(query).matches(tree.root_node)
    n_lines = source.count(b"\n") + 1
    symbols = [s for s in symbols if s.kind != REEXPORT]  # a `pub use` line encloses nothing
    owner, by_name = _source_index(symbols, n_lines)
    skip = _SKIP.get(language)
    chains = language in CALL_CHAINS
    seen: set[tuple[str, str, int]] = set()
    qualified: set[tuple[str, int]] = set()
    out: list[Reference] = []
    type_owner: list[str | None] | None = None
    n_owner = len(owner)
    for _, caps in matches:
        # Plain calls and type uses, `recv.call` included, are most matches: kept short.
        kind = receiver = None
        if len(caps) == 1:
            nodes = caps.get("reference.call")
            if nodes is not None:
                kind = "call"
            else:
                nodes = caps.get("reference.ref")
                kind = "ref" if nodes is not None else None
        elif len(caps) == 2:
            nodes = caps.get("reference.call")
            receiver = caps.get("receiver")
            kind = "call" if nodes is not None and receiver is not None else None
        if kind is not None:
            node = nodes[0]
            if skip is not None and skip(node, source):
                continue
            line = node.start_point[0] + 1
            text = _text(source, node)
            if receiver is None:
                name = _norm(text)
                if chains and name.startswith("?."):  # `r.NewRoute().Name` as one capture
                    head, _, final = text.rpartition(".")
                    chain = _call_chain(head) if _IDENTIFIER.fullmatch(final) else None
                    if chain is not None:
                        name = chain + "." + final
            else:
                prefix = _text(source, receiver[0])
                chain = _call_chain(prefix) if chains and _IDENTIFIER.fullmatch(text) else None
                if not _opaque(prefix):
                    name = _norm(prefix + "." + text)
                elif chain is not None:
                    name = chain + "." + text
                elif _IDENTIFIER.fullmatch(text):
                    name = "?." + text  # what _norm makes of it, without its slow path
                else:
                    name = _norm(_OPAQUE + "." + text)
            if name:
                key = (kind, name, line)
                if key not in seen:
                    seen.add(key)
                    out.append(Reference(kind, name, line,
                                         owner[line] if line < n_owner else None))
            continue
        for cname, nodes in caps.items():
            if cname.startswith("reference."):
                node = nodes[0]
                break
        else:
            continue
        kind, variant = _capture_kind(cname)
        if skip is not None and skip(node, source):
            continue
        line = node.start_point[0] + 1
        text = _text(source, node)
        names: list[str]
        if kind == "bind":
            name = _binding(variant, text, caps, source)
            names = [name] if name else []
        elif kind == "import":
            if variant == "stmt":
                names = _import_stmt(text)
            else:
                name = _unquote(text)
                if variant == "relative" and not name.startswith((".", "/")):
                    name = "./" + name
                elif variant == "mod":
                    name = "mod " + name
                elif variant == "default":
                    name = "default as " + name
                elif variant == "star":
                    name = "*"
                elif variant == "namespace":
                    name = "* as " + name
                if len(caps) > 1:
                    mod = caps.get("module")
                    if mod:
                        name = _unquote(_text(source, mod[0])) + ":" + name
                    alias = caps.get("alias")
                    if alias:
                        a = _text(source, alias[0])
                        if a not in ("_", ".") and a != name:
                            name = f"{name} as {a}"
                names = [name] if name else []
        else:
            if len(caps) > 1:
                recv = caps.get("receiver")
                sep = "."
                if recv is None:
                    recv = caps.get("receiver.arrow")
                    sep = "->"
                if recv is None:
                    recv = caps.get("receiver.colons")
                    sep = "::"
                if recv is not None:
                    receiver = _text(source, recv[0])
                    if _opaque(receiver):
                        chain = _call_chain(receiver) if chains and sep == "." else None
                        receiver = chain or _OPAQUE
                    text = receiver + sep + text
            name = _norm(text)
            names = [name] if name else []
        src_caps = caps.get("source") if len(caps) > 1 else None
        if src_caps:
            st = _norm(_text(source, src_caps[0]))
            src = by_name.get(st, st or None)
        elif kind == "inherit":
            # the class being declared, even when a member shares its line
            if type_owner is None:
                type_owner = _paint([s for s in symbols if s.kind in _TYPE_KINDS], n_lines)
            src = type_owner[line] if line < len(type_owner) else None
            if src is None:
                src = owner[line] if line < len(owner) else None
        else:
            src = owner[line] if line < len(owner) else None
        for name in names:
            key = (kind, name, line)
            if key in seen:
                continue
            seen.add(key)
            out.append(Reference(kind, name, line, src))
            if kind == "import" and (" as " in name or ":" in name):
                qualified.add((name.split(" as ")[0].split(":")[0], line))
    if qualified:
        # `import {a} from './x'` also matches the bare-module pattern: keep the richer form.
        out = [r for r in out if r.kind != "import" or (r.name, r.line) not in qualified]
    return out
