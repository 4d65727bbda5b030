"""Symbols and chunks from a tree-sitter tree, driven by one query file per language.

Query files live in ``queries/<language>.scm``. Capture convention:

- ``@definition.<kind>`` on the whole definition node (kind from the vocabulary below);
- ``@name`` on its name node;
- ``@scope`` (optional) on an explicit owner written outside the definition's nesting, such
  as a Go method receiver type or the ``Foo`` of a C++ ``void Foo::bar() {}``;
- ``@body`` (optional) on the body, when the grammar has no ``body`` field, so the signature
  can stop before it;
- ``@doc`` (optional) on a documentation node (otherwise docs come from the comment block
  right above the definition, or from the docstring in Python).

Kinds: function, method, class, struct, enum, interface, trait, module, namespace, type,
constant, macro, impl, field, variable. A function whose nearest enclosing definition is
class-like (class, struct, enum, interface, trait, impl, and per language module) becomes a
``method``; a ``method`` match with no such owner and no ``@scope`` becomes a ``function``.

Qualified names join the names of the enclosing definitions with ``.``, except in languages
whose own path separator is ``::`` (Rust, C++), where ``::`` is used: ``Outer.Inner.method``,
``outer.inner`` (a local function; no ``<locals>``), Rust ``Type::method`` for a function in
``impl Type`` / ``impl Trait for Type`` (the impl block itself is a symbol of kind ``impl``
named after the type), Go ``Recv.Method``, C++ ``ns::Class::method``.

Adding a language: a grammar in grammars.py, a query file here, optionally an entry in
``_FACTS`` (separator, extra method containers). No per-language tree walker.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import tree_sitter

from ..model import FUNCTION_KINDS, Chunk, Symbol
from .grammars import get_language

QUERY_DIR = Path(__file__).with_name("queries")
INHERITS = "; inherits: "

MAX_CHUNK_CHARS = 8192  # text stored per chunk
MAX_SIGNATURE = 300
MAX_DOC = 2000
LARGE_CONTAINER_LINES = 120  # a bigger class becomes a header chunk plus its members
MAX_CHUNK_LINES = 200  # a longer chunk is split into pieces of the same symbol
SPLIT_PIECE_LINES = 120
WINDOW_LINES = 40  # code outside definitions
SMALL_KINDS = frozenset({"constant", "variable", "field", "type", "reexport"})  # chunked only when long
SMALL_KIND_MIN_LINES = 5
_KEEP_WHOLE_NAME = frozenset({"namespace", "module"})  # "App.Models", "Foo::Bar"
_CLASS_LIKE = frozenset({"class", "struct", "enum", "interface", "trait", "impl"})


@dataclass(frozen=True, slots=True)
class _Facts:
    sep: str = "."
    method_containers: frozenset = _CLASS_LIKE
    python_docstring: bool = False
    merge_clauses: bool = False  # consecutive same-name function clauses form one symbol


_FACTS: dict[str, _Facts] = {
    "python": _Facts(python_docstring=True),
    "rust": _Facts(sep="::"),
    "cpp": _Facts(sep="::"),
    "ruby": _Facts(method_containers=_CLASS_LIKE | {"module"}),
    "scala": _Facts(method_containers=_CLASS_LIKE | {"module"}),
    "kotlin": _Facts(method_containers=_CLASS_LIKE | {"module"}),
    "swift": _Facts(method_containers=_CLASS_LIKE | {"module"}),
    "haskell": _Facts(merge_clauses=True),
    "elixir": _Facts(merge_clauses=True),
}
_DEFAULT_FACTS = _Facts()

# Nodes that wrap a definition and belong to its chunk (decorators, export, templates).
_WRAPPERS = frozenset({
    "decorated_definition", "export_statement", "template_declaration", "ambient_declaration",
    "expression_statement", "type_declaration", "const_declaration", "var_declaration",
})
# Siblings right above a definition that belong to its chunk (attributes, annotations).
_ATTRIBUTE_SIBLINGS = frozenset({"attribute_item", "attribute", "decorator", "annotation", "attribute_list"})
# Body node types, used when the grammar has no `body` field and the query has no @body.
_BODY_TYPES = frozenset({
    "block", "class_body", "function_body", "declaration_list", "field_declaration_list",
    "compound_statement", "statement_block", "enum_body", "interface_body", "protocol_body",
    "enum_class_body", "template_body", "do_block", "body_statement", "enum_variant_list",
    "struct_body", "object_body", "enum_member_declaration_list", "trait_body",
})
_DOC_LINE = re.compile(r"^\s*(?:///?!?|/\*+!?|\*+/?|#+!?|--+\s*\|?|;+|%+)\s?")
_BLOCK_END = re.compile(r"\s*\*+/\s*$")
_XML_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_GENERIC = re.compile(r"[<\[(].*$", re.S)


# ----------------------------------------------------------------------------- queries


def read_query(name: str) -> str:
    """A query file's text. A first line `; inherits: LANGUAGE` puts that language's query
    of the same kind first (TSX: TypeScript's patterns, then the JSX ones)."""
    text = (QUERY_DIR / name).read_text(encoding="utf-8")
    first, _, rest = text.partition("\n")
    if first.startswith(INHERITS):
        base = first.removeprefix(INHERITS).strip()
        return read_query(f"{base}.{name.split('.', 1)[1]}") + "\n" + rest
    return text


def query_text(language: str) -> str:
    return read_query(f"{language}.scm")


@cache
def structure_query(language: str) -> tree_sitter.Query:
    """The compiled query of a language (compiled once per process)."""
    return tree_sitter.Query(get_language(language), query_text(language))


def has_query(language: str) -> bool:
    return (QUERY_DIR / f"{language}.scm").is_file()


# ----------------------------------------------------------------------------- helpers


class _Def:
    __slots__ = ("node", "kind", "name", "scope", "body", "doc_node", "start", "end",
                 "chunk_start", "parent", "children", "qual", "sym", "chunked", "pattern", "sb", "eb")

    def __init__(self, node, kind, name, scope, body, doc_node):
        self.node = node
        self.kind = kind
        self.name = name
        self.scope = scope
        self.body = body
        self.doc_node = doc_node
        self.sb = node.start_byte
        self.eb = node.end_byte
        self.start = node.start_point[0]
        self.end = node.end_point[0]
        if node.end_point[1] == 0 and self.end > self.start:
            self.end -= 1  # a node ending at column 0 ends on the previous line
        self.chunk_start = self.start
        self.parent: _Def | None = None
        self.children: list[_Def] = []
        self.qual = ""
        self.sym: Symbol | None = None
        self.chunked = False


def _text(source: bytes, start: int, end: int, cap: int = 4000) -> str:
    if end - start > cap:
        end = start + cap
    return source[start:end].decode("utf-8", "replace")


def _clean_name(raw: str) -> str:
    raw = raw.strip()
    if not raw:
        return raw
    if raw[0] not in "<([":
        raw = _GENERIC.sub("", raw)  # Vec<T> -> Vec, Foo[T] -> Foo
    return raw.strip().lstrip("*&").strip().strip("\"'`")


def _python_docstring(node, source: bytes) -> str:
    body = node.child_by_field_name("body")
    if body is None or body.named_child_count == 0:
        return ""
    first = body.named_child(0)
    if first.type != "expression_statement" or first.named_child_count != 1:
        return ""
    s = first.named_child(0)
    if s.type not in ("string", "concatenated_string"):
        return ""
    raw = _text(source, s.start_byte, s.end_byte, MAX_DOC * 2)
    raw = raw.lstrip("rRbBuU")
    for q in ('"""', "'''", '"', "'"):
        if raw.startswith(q):
            raw = raw[len(q):]
            if raw.endswith(q):
                raw = raw[: -len(q)]
            break
    return _dedent(raw)[:MAX_DOC]


def _dedent(text: str) -> str:
    lines = text.expandtabs().split("\n")
    indent = min((len(l) - len(l.lstrip()) for l in lines[1:] if l.strip()), default=0)
    out = [lines[0].strip()] + [l[indent:].rstrip() for l in lines[1:]]
    while out and not out[-1]:
        out.pop()
    while out and not out[0]:
        out.pop(0)
    return "\n".join(out)


def _is_doc_attribute(node, source: bytes) -> bool:
    return source.startswith(b"@doc", node.start_byte) or source.startswith(b"@typedoc", node.start_byte)


def _is_comment(node) -> bool:
    t = node.type
    return "comment" in t or t == "haddock"


def _leading_comments(anchor, source: bytes):
    """The comment block right above `anchor` (adjacent lines), and the first row it covers."""
    docs = []
    row = anchor.start_point[0]
    prev = anchor.prev_sibling
    while prev is not None and (_is_comment(prev) or prev.type in _ATTRIBUTE_SIBLINGS
                                or (prev.type == "unary_operator" and _is_doc_attribute(prev, source))):
        if prev.end_point[0] < row - 1:
            break
        if prev.type == "unary_operator":  # Elixir @doc "..."
            docs.append(prev)
        elif _is_comment(prev):
            if prev.end_point[0] == prev.start_point[0] and prev.prev_sibling is not None \
                    and prev.prev_sibling.end_point[0] == prev.start_point[0] \
                    and not _is_comment(prev.prev_sibling):
                break  # a trailing comment of the previous statement
            docs.append(prev)
        row = prev.start_point[0]
        prev = prev.prev_sibling
    if not docs:
        return "", row
    docs.reverse()
    lines = []
    for c in docs:
        raw = _text(source, c.start_byte, c.end_byte, MAX_DOC)
        if c.type == "unary_operator":
            raw = raw.split(None, 1)[1] if len(raw.split(None, 1)) > 1 else ""
            lines.append(_dedent(raw.strip().strip('"').strip("'").strip()))
            continue
        for line in raw.split("\n"):
            line = _BLOCK_END.sub("", line)
            line = _DOC_LINE.sub("", line, count=1).rstrip()
            lines.append(line)
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    indent = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
    return "\n".join(l[indent:] for l in lines)[:MAX_DOC], row


def _find_body(d: _Def):
    if d.body is not None:
        return d.body
    node = d.node
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    for child in reversed(node.named_children):
        if child.type in _BODY_TYPES:
            return child
    return None


def _signature(d: _Def, body, source: bytes, anchor) -> str:
    node = d.node
    start = node.start_byte
    if anchor is not node and anchor.start_point[0] == d.start:
        start = anchor.start_byte  # "export function f", "type T struct"
    if body is not None and body.start_byte > start:
        end = body.start_byte
    else:
        end = node.end_byte
        nl = source.find(b"\n", start, end)
        if nl != -1:
            end = nl
    sig = " ".join(_text(source, start, end, MAX_SIGNATURE * 3).split())
    if sig.endswith("{") or sig.endswith("="):
        sig = sig[:-1].rstrip()
    return sig[:MAX_SIGNATURE]


# ----------------------------------------------------------------------------- structure


def _collect(tree: tree_sitter.Tree, source: bytes, language: str,
             matches: list | None) -> list[_Def]:
    if matches is None:
        matches = tree_sitter.QueryCursor(structure_query(language)).matches(tree.root_node)
    seen: dict[tuple[int, int], _Def] = {}
    for pattern, caps in matches:
        node = kind = None
        for key, nodes in caps.items():
            if key.startswith("definition."):
                node = nodes[0]
                kind = key[11:]
                break
        if node is None:
            continue
        name_nodes = caps.get("name")
        if not name_nodes:
            continue
        span = (node.start_byte, node.end_byte)
        prior = seen.get(span)
        if prior is not None:  # several patterns for one node: the earlier, non-small one wins
            if (prior.kind not in SMALL_KINDS or kind in SMALL_KINDS) and \
                    (prior.pattern < pattern or (prior.kind in SMALL_KINDS) != (kind in SMALL_KINDS)):
                continue
        n0 = name_nodes[0]
        name = _clean_name(_text(source, n0.start_byte, n0.end_byte, 300))
        if not name:
            continue
        scope = caps.get("scope")
        body = caps.get("body")
        doc = caps.get("doc")
        d = _Def(node, kind, name,
                 _clean_name(_text(source, scope[0].start_byte, scope[0].end_byte, 300)) if scope else None,
                 body[0] if body else None, doc[0] if doc else None)
        d.pattern = pattern
        seen[span] = d
    defs = list(seen.values())
    defs.sort(key=lambda d: (d.sb, -d.eb))
    return defs


def extract_structure(tree: tree_sitter.Tree, source: bytes, language: str,
                      matches: list | None = None) -> tuple[list[Symbol], list[Chunk]]:
    """Symbols and chunks of one parsed file. Never raises on malformed source: whatever
    tree-sitter recovered is used, and an unexpected failure degrades to line windows.
    `matches`: this language's query matches when the caller already ran them."""
    text = source.decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "" and len(lines) > 1:
        lines.pop()
    if not has_query(language):
        return [], _windows(lines, 0, len(lines) - 1, None, "window")
    try:
        defs, symbols = _symbols(tree, source, language, matches)
        return symbols, _chunks(defs, lines)
    except Exception:  # pragma: no cover - safety net: a file must never stop the indexer
        return [], _windows(lines, 0, len(lines) - 1, None, "window")


def _symbols(tree: tree_sitter.Tree, source: bytes, language: str,
             matches: list | None) -> tuple[list[_Def], list[Symbol]]:
    facts = _FACTS.get(language, _DEFAULT_FACTS)
    sep = facts.sep
    kept: list[_Def] = []
    symbols: list[Symbol] = []
    stack: list[_Def] = []
    last_top: _Def | None = None
    for d in _collect(tree, source, language, matches):
        sb, eb = d.sb, d.eb
        while stack and not (stack[-1].sb <= sb and eb <= stack[-1].eb):
            stack.pop()
        parent = stack[-1] if stack else None
        if parent is not None and parent.kind == "type" and len(stack) > 1:
            parent = stack[-2]  # typedef struct s {..} t: the struct is not inside the typedef
        elif parent is not None and parent.kind == "type":
            parent = None
        prefix = parent.qual if parent is not None else ""
        if d.scope:
            scope = d.scope.replace("::", sep) if sep != "::" else d.scope
            prefix = prefix + sep + scope if prefix else scope
        name = d.name
        qualified = False
        if d.kind not in _KEEP_WHOLE_NAME:
            for s in (sep, "::") if sep != "::" else (sep,):
                if s in name and not name.endswith(s):  # written in place: Foo::bar, Foo.bar
                    head, _, name = name.rpartition(s)
                    head = head.replace("::", sep)
                    prefix = prefix + sep + head if prefix else head
                    d.name = name
                    qualified = True
                    break
        qual = prefix + sep + name if prefix else name
        kind = d.kind
        owner_kind = parent.kind if parent is not None else None
        if kind == "function" and owner_kind in facts.method_containers:
            kind = "method"
        elif kind == "function" and qualified:
            kind = "method"  # void Foo::bar() {}
        elif kind == "method" and owner_kind not in facts.method_containers and not d.scope \
                and not qualified:
            kind = "function"

        if facts.merge_clauses:  # f :: T / f 0 = .. / f n = ..  -> one symbol
            prev = parent.children[-1] if parent is not None and parent.children else \
                (last_top if parent is None else None)
            if prev is not None and prev.qual == qual and prev.kind == kind and kind in FUNCTION_KINDS:
                prev.eb = max(prev.eb, eb)
                prev.end = max(prev.end, d.end)
                prev.sym.end_line = prev.end + 1
                stack.append(prev)
                continue

        d.parent = parent
        d.qual = qual
        d.kind = kind
        if parent is not None:
            parent.children.append(d)
        else:
            last_top = d
        stack.append(d)
        kept.append(d)

        # chunk start: wrappers (decorators, export) and the doc comment block above
        anchor = d.node
        while anchor.parent is not None and anchor.parent.type in _WRAPPERS:
            anchor = anchor.parent
        doc = ""
        if facts.python_docstring:
            if kind in ("function", "method", "class"):
                doc = _python_docstring(d.node, source)
            d.chunk_start = anchor.start_point[0]
        elif d.doc_node is not None:
            doc = _dedent(_text(source, d.doc_node.start_byte, d.doc_node.end_byte, MAX_DOC))
            d.chunk_start = anchor.start_point[0]
        else:
            doc, d.chunk_start = _leading_comments(anchor, source)
            if doc.startswith("<"):  # C# XML doc comments
                doc = _XML_TAG.sub("", doc).strip()
        sym = Symbol(
            name=name,
            qualname=qual,
            kind=kind,
            start_line=d.start + 1,
            end_line=d.end + 1,
            signature=_signature(d, _find_body(d), source, anchor),
            doc=doc,
            parent=(prefix or None) if (d.scope or qualified or parent is None) else parent.qual,
        )
        d.sym = sym
        symbols.append(sym)
    return kept, symbols


# ----------------------------------------------------------------------------- chunks


def _chunk_text(lines: list[str], s: int, e: int) -> str:
    if e - s > 400:  # only as many lines as the cap can hold
        size = 0
        for i in range(s, e + 1):
            size += len(lines[i]) + 1
            if size >= MAX_CHUNK_CHARS:
                e = i
                break
    text = "\n".join(lines[s:e + 1])
    return text if len(text) <= MAX_CHUNK_CHARS else text[:MAX_CHUNK_CHARS]


def _trim(lines: list[str], s: int, e: int) -> tuple[int, int]:
    while s <= e and not lines[s].strip():
        s += 1
    while e >= s and not lines[e].strip():
        e -= 1
    return s, e


def _pieces(s: int, e: int, size: int) -> list[tuple[int, int]]:
    n = e - s + 1
    if n <= 0:
        return []
    count = -(-n // size)
    step = -(-n // count)
    return [(a, min(a + step - 1, e)) for a in range(s, e + 1, step)]


def _windows(lines: list[str], s: int, e: int, symbol: str | None, kind: str,
             size: int = WINDOW_LINES) -> list[Chunk]:
    out = []
    for a, b in _pieces(s, e, size):
        a, b = _trim(lines, a, b)
        if a > b:
            continue
        out.append(Chunk(a + 1, b + 1, _chunk_text(lines, a, b), symbol, kind))
    return out


def _span_chunks(lines, s, e, symbol, kind) -> list[Chunk]:
    if e - s + 1 > MAX_CHUNK_LINES:
        return [Chunk(a + 1, b + 1, _chunk_text(lines, a, b), symbol, kind)
                for a, b in _pieces(s, e, SPLIT_PIECE_LINES)]
    return [Chunk(s + 1, e + 1, _chunk_text(lines, s, e), symbol, kind)]


def _mark_chunked(defs: list[_Def]) -> None:
    for d in defs:
        p = d.parent
        if p is not None and (p.kind in FUNCTION_KINDS or not p.chunked):
            continue  # local definitions live in their function's chunk
        if d.kind in SMALL_KINDS and d.end - d.start + 1 < SMALL_KIND_MIN_LINES:
            continue
        d.chunked = True


def _add(out: dict[tuple[int, int], Chunk], chunks: list[Chunk]) -> None:
    """Keep the first chunk of each line span, as it comes: definitions sharing their lines
    (minified code) would otherwise each hold a copy of the same text until the end."""
    for c in chunks:
        out.setdefault((c.start_line, c.end_line), c)


def _emit(d: _Def, lines: list[str], out: dict[tuple[int, int], Chunk]) -> None:
    s, e = d.chunk_start, d.end
    members = [c for c in d.children if c.chunked]
    if members and e - s + 1 > LARGE_CONTAINER_LINES:
        first = members[0].chunk_start
        hdr_end = max(s, first - 1) if first > s else s
        hs, he = _trim(lines, s, hdr_end)
        if hs > he:
            hs = he = s
        _add(out, _span_chunks(lines, hs, he, d.qual, "header"))
        pos = hdr_end + 1
        for m in members:
            if m.chunk_start > pos:
                _add(out, _windows(lines, pos, m.chunk_start - 1, d.qual, "window"))
            _emit(m, lines, out)
            pos = max(pos, m.end + 1)
        if pos <= e:
            _add(out, _windows(lines, pos, e, d.qual, "window"))
        return
    _add(out, _span_chunks(lines, s, e, d.qual, "symbol"))
    for m in members:
        _emit(m, lines, out)


def _chunks(defs: list[_Def], lines: list[str]) -> list[Chunk]:
    """Definitions become chunks; code outside them becomes line windows."""
    _mark_chunked(defs)
    out: dict[tuple[int, int], Chunk] = {}
    pos = 0
    last = len(lines) - 1
    for d in defs:
        if d.parent is not None or not d.chunked:
            continue
        if d.chunk_start > pos:
            _add(out, _windows(lines, pos, d.chunk_start - 1, None, "window"))
        _emit(d, lines, out)
        pos = max(pos, d.end + 1)
    if pos <= last:
        _add(out, _windows(lines, pos, last, None, "window"))
    return list(out.values())


# ----------------------------------------------------------------------------- plain text

_HEADING = re.compile(r"^#{1,6}\s+\S")
_FENCE = re.compile(r"^\s*(```|~~~)")
PLAIN_MIN_LINES = 20
PLAIN_MAX_LINES = 60


def chunk_plain_text(text: str) -> list[Chunk]:
    """Chunks of a file without a grammar: paragraphs merged into ~20-60 line chunks,
    split at Markdown headings."""
    lines = text.split("\n")
    if lines and lines[-1] == "" and len(lines) > 1:
        lines.pop()
    # blocks: (start, end, starts_with_heading)
    blocks: list[tuple[int, int, bool]] = []
    start = None
    in_fence = False
    for i, line in enumerate(lines):
        if _FENCE.match(line):
            in_fence = not in_fence
        heading = not in_fence and _HEADING.match(line) is not None
        blank = not line.strip() and not in_fence
        if heading and start is not None:
            blocks.append((start, i - 1, _HEADING.match(lines[start]) is not None))
            start = None
        if blank:
            if start is not None:
                blocks.append((start, i - 1, _HEADING.match(lines[start]) is not None))
                start = None
            continue
        if start is None:
            start = i
    if start is not None:
        blocks.append((start, len(lines) - 1, _HEADING.match(lines[start]) is not None))

    out: list[Chunk] = []
    cur_s = cur_e = None
    cur_nonblank = 0

    def flush():
        nonlocal cur_s, cur_e, cur_nonblank
        if cur_s is not None:
            out.extend(_windows(lines, cur_s, cur_e, None, "text", PLAIN_MAX_LINES)
                       if cur_e - cur_s + 1 > PLAIN_MAX_LINES
                       else [Chunk(cur_s + 1, cur_e + 1, _chunk_text(lines, cur_s, cur_e), None, "text")])
        cur_s = cur_e = None
        cur_nonblank = 0

    for bs, be, heading in blocks:
        size = be - bs + 1
        if cur_s is not None:
            cur_len = cur_e - cur_s + 1
            if (heading and cur_nonblank >= 3) or (cur_len >= PLAIN_MIN_LINES and be - cur_s + 1 > PLAIN_MAX_LINES):
                flush()
        if cur_s is None:
            cur_s = bs
        cur_e = be
        cur_nonblank += size
        if size > PLAIN_MAX_LINES:
            # a long block on its own: emit it as windows
            flush()
    flush()
    return out
