"""Parsing: source bytes -> symbols, chunks and raw references.

`structure` turns a tree-sitter tree into symbols and chunks (query files in queries/);
`references` finds calls, imports and inheritance for the graph; files without a grammar
are chunked as plain text.
"""
from __future__ import annotations

from ..model import ParseResult
from .grammars import get_parser, has_grammar
from .references import extract_references
from .structure import chunk_plain_text, extract_structure


def parse_file(source: bytes, language: str | None) -> ParseResult:
    """Parse one file. Never raises on malformed source: tree-sitter recovers what it can."""
    if not has_grammar(language):
        return ParseResult(chunks=chunk_plain_text(source.decode("utf-8", "replace")))
    tree = get_parser(language).parse(source)
    symbols, chunks = extract_structure(tree, source, language)
    references = extract_references(tree, source, language, symbols)
    return ParseResult(symbols=symbols, chunks=chunks, references=references)
