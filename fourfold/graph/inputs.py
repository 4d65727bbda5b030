"""What resolution reads of a file, encoded: its symbols (held compressed through an
indexing run, see GraphFacts) and, kept beside a stored graph (Store.graph_inputs),
its facts less its calls and type uses. Those facts alone decide where any name leads (its
symbols, imports, bases and the types its bindings give), so a file whose facts are the
same as the graph read them may change its calls and type uses without changing a single
edge of another file: the graph is then patched (fourfold.graph.patch).

Lines are left out: they place an edge of the file itself, never decide where a name leads,
and an edit above a binding moves them all.
"""
from __future__ import annotations

import json
import struct
import sys
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..model import Reference, Symbol
from .facts import Definition, FileFacts

EXTRA_FILES = ("go.mod",)  # read by import resolution (Go module path)
# files whose symbols are read at once for the stored ids of a graph's: a big repository
# has millions of symbols
SYMBOL_FILES = 500
_LENGTH = struct.Struct(">I")  # an input's first part: the length of its symbols' bytes


@dataclass(slots=True)
class GraphFacts:
    """What resolution reads: per file its language, symbols and references, and the text
    of the files named in EXTRA_FILES. A big repository's facts are held for the whole run,
    in the indexing process, beside everything else it holds: each file's symbols and
    references are kept as compressed bytes (encode_symbols, compress_references) and made
    objects again where they are resolved. As objects the kernel's 3.3 million symbols took
    about 450 MB (23 MB so), and once freed most of it stayed with the process: the few
    objects that outlived them in the same arenas of Python's allocator kept it."""

    files: dict[str, tuple[str, bytes, bytes]] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)

    def add(self, path: str, language: str | None, symbols: list[Symbol], references: bytes,
            text: str | None = None) -> None:
        """`references`: compress_references' bytes."""
        self.files[path] = (language or "", encode_symbols(symbols), references)
        if text is not None and is_extra_file(path):
            self.extra[path] = text


def is_extra_file(path: str) -> bool:
    return path.rsplit("/", 1)[-1] in EXTRA_FILES


def encode_symbols(symbols: list[Symbol]) -> bytes:
    """The fields resolution reads of a file's symbols (name, qualified name, kind,
    parent), compressed."""
    rows = [(s.name, None if s.qualname == s.name else s.qualname, s.kind, s.parent)
            for s in symbols]
    return zlib.compress(json.dumps(rows, separators=(",", ":")).encode("ascii"), 1)


def decode_symbols(blob: bytes, same: dict[str, str] | None = None) -> list[Definition]:
    """encode_symbols' symbols. One string object where a name recurs (a qualified name
    equal to the name, a parent named again by each member, kinds; across the files
    decoded with the same `same`): a big repository's symbols are held at once."""
    same = {} if same is None else same
    symbols = []
    for name, qualname, kind, parent in json.loads(zlib.decompress(blob)):
        name = same.setdefault(name, name)
        qualname = name if qualname is None else same.setdefault(qualname, qualname)
        symbols.append(Definition(name, qualname, sys.intern(kind),
                                  None if parent is None else same.setdefault(parent, parent)))
    return symbols


def encode_input(language: str, symbols: bytes, others: Iterable[Reference],
                 extra_text: str | None) -> bytes:
    """A file's facts less calls and type uses: its symbols as encode_symbols gave them,
    then its other references (without lines), language and the text of a file imports
    are resolved by (go.mod), compressed."""
    rest = [language, [(r.kind, r.name, r.source) for r in others], extra_text]
    return (_LENGTH.pack(len(symbols)) + symbols
            + zlib.compress(json.dumps(rest, separators=(",", ":")).encode("ascii"), 1))


def _parts(blob: bytes) -> tuple[bytes, bytes]:
    (length,) = _LENGTH.unpack_from(blob)
    end = _LENGTH.size + length
    return blob[_LENGTH.size:end], blob[end:]


def same_input(a: bytes, b: bytes) -> bool:
    """Whether two encoded inputs hold the same facts (compressed by any zlib)."""
    return all(zlib.decompress(x) == zlib.decompress(y) for x, y in zip(_parts(a), _parts(b)))


def decode_input(blob: bytes, same: dict[str, str]) -> tuple[FileFacts, str | None]:
    """encode_input's facts (references at line 0) and text; one string object per name
    across the files decoded with the same `same`, as a big repository's are held at once."""
    symbols, rest = _parts(blob)
    language, others, extra_text = json.loads(zlib.decompress(rest))
    put = same.setdefault
    return FileFacts(put(language, language), decode_symbols(symbols, same), [
        Reference(put(kind, kind), put(name, name), 0,
                  None if source is None else put(source, source))
        for kind, name, source in others]), extra_text
