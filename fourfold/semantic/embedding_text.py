"""The text an embedder reads for one chunk.

Layout (one item per line, empty items left out)::

    <path>
    <symbol qualified name>  (<its words: "parseConfig" -> "parse config">)
    <signature>
    <doc comment, whitespace-collapsed, at most ``doc_chars``>
    <head of the body, blank lines dropped>

The whole is cut to ``max_chars`` (the default, 1,200 characters, covers the 128-token window
of the bundled MiniLM even for code, which averages ~3-4 characters per WordPiece token; the
tokenizer truncates exactly). The signature and doc are not repeated if the body already
starts with them.
"""
from __future__ import annotations

import re

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEP = re.compile(r"[_\W]+")
_WS = re.compile(r"\s+")


def split_identifier(name: str) -> str:
    """'HTTPServer.parse_configFile' -> 'http server parse config file'."""
    spaced = _SEP.sub(" ", name)
    if not (name.isascii() and name.islower()):  # a capital: camel case to split
        spaced = _CAMEL.sub(" ", spaced).lower()
    return " ".join(spaced.split())


def chunk_text_for_embedding(path: str, symbol_qualname: str | None = None,
                             signature: str | None = None, doc: str | None = None,
                             body: str | None = None, *, max_chars: int = 1200,
                             doc_chars: int = 400) -> str:
    lines: list[str] = []
    if path:
        lines.append(path)
    if symbol_qualname:
        words = split_identifier(symbol_qualname)
        simple = symbol_qualname.lower().replace(".", " ").replace("::", " ")
        lines.append(f"{symbol_qualname} ({words})" if words and words != simple
                     else symbol_qualname)
    body = body or ""
    body_head = body.lstrip()[:max(200, len(signature or "") + 50)]
    # whitespace runs as one space by str.split (the same whitespace as the regex \s,
    # a third faster): the signature, doc and the head of the body they are compared with
    if signature:
        sig = " ".join(signature.split())
        if sig and " ".join(body_head.split())[:len(sig)] != sig:
            lines.append(sig)
    if doc:
        d = " ".join(doc.split())[:doc_chars]
        if d and d[:60] not in _WS.sub(" ", body[:doc_chars + 400]):
            lines.append(d)
    if body:
        lines.append("\n".join(filter(None, map(str.rstrip, body.splitlines()))))
    text = "\n".join(lines)
    if len(text) > max_chars:
        cut = text.rfind("\n", 0, max_chars)
        text = text[:cut if cut > max_chars // 2 else max_chars]
    return text
