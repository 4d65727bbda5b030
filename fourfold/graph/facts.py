"""What graph resolution reads and writes: per-file facts in, edges out."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..model import Reference
from ..store.base import Resolution, decode_references, decompress_references

TYPE_KINDS = frozenset({
    "class", "interface", "trait", "struct", "enum", "protocol", "module", "type", "object",
    "record", "union", "typealias", "type_alias", "namespace", "impl", "extension", "mixin",
    "actor", "typeclass", "instance", "package",
})
NON_CALLABLE = frozenset({"constant", "variable", "field", "property", "attribute", "import",
                          "parameter", "enum_member", "label", "namespace", "package"})

# what separates the parts of a qualified name, in any language
NAME_SEPARATOR = re.compile(r"::|->|[.:\\]")


USE_KINDS = frozenset({"call", "ref"})  # references whose edges the last pass makes


@dataclass(slots=True)
class Definition:
    """What resolution reads of a definition: the parser's Symbol less its lines, signature
    and doc (a Symbol serves as well). A big repository's are held at once: the kernel has
    3.3 million."""

    name: str
    qualname: str
    kind: str
    parent: str | None = None


@dataclass(slots=True)
class FileFacts:
    """One file as the parser saw it: the input of resolution. A big repository's calls
    and type uses (most of its references: the kernel's 5.7 of 6.1 million, 650 MB as
    objects) may be left encoded in `encoded_uses` (compress_references' bytes of all the
    file's references) and `references` hold the others: they are decoded file by file
    when their edges are made."""

    language: str
    symbols: list[Definition] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    encoded_uses: bytes | None = None
    encoded_use_count: int = 0

    def take_uses(self) -> list[Reference]:
        """The file's calls and type uses (with the other references where they are held
        together: the last pass reads only these kinds), in order, for the one pass that
        makes their edges: encoded ones are let go here, so that a big repository's are not
        all held to the end of it."""
        if self.encoded_uses is None:
            return self.references
        uses = [r for r in decode_references(decompress_references(self.encoded_uses))
                if r.kind in USE_KINDS]
        self.encoded_uses, self.encoded_use_count = None, 0  # `references` hold the others
        return uses

    def reference_count(self) -> int:
        return len(self.references) + self.encoded_use_count


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


Hit = tuple[str, Definition | None]  # (path, definition); None: the file itself (a module)


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
