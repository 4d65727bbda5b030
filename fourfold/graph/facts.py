"""What graph resolution reads and writes: per-file facts in, edges out."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..model import Reference, Symbol
from ..store.base import Resolution

TYPE_KINDS = frozenset({
    "class", "interface", "trait", "struct", "enum", "protocol", "module", "type", "object",
    "record", "union", "typealias", "type_alias", "namespace", "impl", "extension", "mixin",
    "actor", "typeclass", "instance", "package",
})
NON_CALLABLE = frozenset({"constant", "variable", "field", "property", "attribute", "import",
                          "parameter", "enum_member", "label", "namespace", "package"})

# what separates the parts of a qualified name, in any language
NAME_SEPARATOR = re.compile(r"::|->|[.:\\]")


@dataclass(slots=True)
class FileFacts:
    """One file as the parser saw it: the input of resolution."""

    language: str
    symbols: list[Symbol] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)


@dataclass(slots=True)
class Edge:
    """One resolved (or unresolvable) reference: the output of resolution. `resolution`
    says how sure the target is; NONE edges have no target."""

    kind: str  # "import", "call", "inherit", "ref"
    src_path: str
    src_symbol: str | None  # qualname; None = module level / the file itself
    dst_path: str | None
    dst_symbol: str | None
    line: int
    resolution: Resolution
    name: str  # the reference as written


Hit = tuple[str, Symbol | None]  # (path, definition); None: the file itself (a module)


def hit_edge(kind: str, path: str, src: str | None, hit: Hit | None, ref: Reference,
             resolution: Resolution = Resolution.EXACT) -> Edge:
    """The edge of reference `ref` made in `path` from symbol `src`, to `hit` if any, as
    sure as `resolution` says (an edge without a target is NONE)."""
    if hit is None:
        return Edge(kind, path, src, None, None, ref.line, Resolution.NONE, ref.name)
    dpath, dsym = hit
    return Edge(kind, path, src, dpath, dsym.qualname if dsym is not None else None, ref.line,
                resolution, ref.name)


def parent_name(qual: str | None) -> str | None:
    """The last part of a qualified name: what a member's parent is called."""
    if not qual:
        return None
    return NAME_SEPARATOR.split(qual)[-1]
