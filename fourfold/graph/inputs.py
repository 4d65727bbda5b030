"""What a stored graph read of each file, kept beside it (Store.graph_inputs): the file's
facts less its calls and type uses. Those facts alone decide where any name leads (its
symbols, imports, bases and the types its bindings give), so a file whose facts are the
same as the graph read them may change its calls and type uses without changing a single
edge of another file: the graph is then patched (fourfold.graph.patch).

Lines are left out: they place an edge of the file itself, never decide where a name leads,
and an edit above a binding moves them all.
"""
from __future__ import annotations

import json
import zlib
from collections.abc import Iterable

from ..model import Reference
from .facts import Definition, FileFacts


def encode_input(language: str, symbols: Iterable[Definition], others: Iterable[Reference],
                 extra_text: str | None) -> bytes:
    """A file's facts less calls and type uses (`others`: its other references), with the
    text of a file imports are resolved by (go.mod); compressed."""
    rows = [language,
            [(s.name, None if s.qualname == s.name else s.qualname, s.kind, s.parent)
             for s in symbols],
            [(r.kind, r.name, r.source) for r in others],
            extra_text]
    return zlib.compress(json.dumps(rows, separators=(",", ":")).encode("ascii"), 1)


def same_input(a: bytes, b: bytes) -> bool:
    """Whether two encoded inputs hold the same facts (compressed by any zlib)."""
    return zlib.decompress(a) == zlib.decompress(b)


def decode_input(blob: bytes, same: dict[str, str]) -> tuple[FileFacts, str | None]:
    """encode_input's facts (references at line 0) and text; one string object per name
    across the files decoded with the same `same`, as a big repository's are held at once."""
    language, symbols, others, extra_text = json.loads(zlib.decompress(blob))
    put = same.setdefault
    facts = FileFacts(put(language, language), [
        Definition(put(name, name), put(name, name) if qualname is None else put(qualname, qualname),
                   put(kind, kind), None if parent is None else put(parent, parent))
        for name, qualname, kind, parent in symbols], [
        Reference(put(kind, kind), put(name, name), 0, None if source is None else put(source, source))
        for kind, name, source in others])
    return facts, extra_text
