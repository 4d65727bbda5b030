"""Parsing: source bytes -> symbols, chunks and raw references.

`structure` turns a tree-sitter tree into symbols and chunks (query files in queries/);
`references` finds calls, imports and inheritance for the graph; files without a grammar
are chunked as plain text. Both query files of a language run as one query: walking the
tree, not matching patterns, is what a query costs, so one walk serves both.
"""
from __future__ import annotations

import hashlib
import os
import re
import sys
import time
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import tree_sitter

from ..model import ParseResult
from .grammars import GRAMMARS, get_language, get_parser, has_grammar
from .references import extract_references
from .references import query_text as reference_query_text
from .structure import (chunk_plain_text, extract_structure, has_query, structure_query,
                        query_text as structure_query_text)


# Raise when what parse_file extracts changes in code; query file edits are seen on their own.
PARSER_VERSION = 1
# A file tree-sitter takes longer than this over (a pathological input: 677 bytes of TSX
# took it minutes, unstoppable even by a signal) is kept for text search only.
PARSE_TIME_LIMIT_S = 5.0
READ_SLICE = 1 << 20  # bytes handed to the parser at a time


class ParseTooSlow(Exception):
    """tree-sitter gave up on a file at PARSE_TIME_LIMIT_S."""


def _tree(language: str, source: bytes, reparse: bool) -> tree_sitter.Tree:
    """The file's tree, read through a callback: only then does tree-sitter ask, as it
    goes, whether to stop (and let Python see a pending signal meanwhile). The extraction
    cuts node texts from the bytes, but a query's text predicates (#eq?, #match?) read them
    through the tree's source, which for this tree is the callback (slow, and it crashed
    the binding on a 300 KB C file): for a query with them (`reparse`) the file is parsed
    again from the bytes, reusing that tree whole (half a parse)."""
    parser = get_parser(language)
    deadline = time.monotonic() + PARSE_TIME_LIMIT_S
    try:
        read = parser.parse(lambda offset, _point: source[offset:offset + READ_SLICE],
                            progress_callback=lambda *_: time.monotonic() > deadline)
    except ValueError:  # "Parsing failed": stopped at the deadline
        raise ParseTooSlow(f"tree-sitter took over {PARSE_TIME_LIMIT_S:g} s") from None
    return parser.parse(source, old_tree=read) if reparse else read


@cache
def parser_fingerprint() -> str:
    """Names what the parser extracts: an index read with another parser is re-read whole,
    since unchanged files would otherwise keep their old symbols and references."""
    digest = hashlib.blake2b(str(PARSER_VERSION).encode(), digest_size=8)
    for query in sorted((Path(__file__).parent / "queries").glob("*.scm")):
        digest.update(query.name.encode() + b"\0" + query.read_bytes())
    # a new tree-sitter or grammar release can parse the same file differently
    packages = sorted({"tree-sitter"} | {module.replace("_", "-")
                                         for module, _ in GRAMMARS.values()})
    versions = installed_versions(packages)
    for package in packages:
        digest.update(f"{package}={versions.get(package, 'none')}".encode())
    return digest.hexdigest()


def installed_versions(projects: Iterable[str]) -> dict[str, str]:
    """The version of each of these projects that is installed (the others are left out),
    from the name of its `.dist-info` folder (`tree_sitter_python-0.25.0.dist-info`), the
    first on sys.path as an import finds it; importlib.metadata answers for any found
    otherwise.
    Importing it and reading every METADATA file cost an index run some 25 ms, a tenth
    of a fresh checkout's."""
    wanted = {project.replace("-", "_").lower(): project for project in projects}
    versions: dict[str, str] = {}
    for folder in sys.path:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            if name.endswith(".dist-info"):
                project, _, version = name[:-len(".dist-info")].partition("-")
                found = wanted.get(project.lower())
                if found is not None and version:
                    versions.setdefault(found, version)
    missing = [project for project in wanted.values() if project not in versions]
    if missing:
        from importlib import metadata

        for project in missing:
            try:
                versions[project] = metadata.version(project)
            except metadata.PackageNotFoundError:
                pass
    return versions


# #eq?, #not-match?, #any-of? ... (not #set!), spaces or a line end after the parenthesis too
_TEXT_PREDICATE = re.compile(r"\(\s*#[\w-]+\?")


@cache
def _file_query(language: str, references: bool
                ) -> tuple[tree_sitter.Query | None, int, bool]:
    """The language's structure patterns, then (optionally) its reference patterns, as one
    query; the index of the first reference pattern; and whether it tests node texts.
    Compiled once: compiling is costly (a third of a second for Swift), so the structure
    patterns are not compiled apart too."""
    structure = structure_query_text(language) if has_query(language) else ""
    refs = reference_query_text(language) if references else None
    tests_texts = bool(_TEXT_PREDICATE.search(structure + "\n" + (refs or "")))
    if not refs:
        if not structure:
            return None, 0, False
        query = structure_query(language)
        return query, query.pattern_count, tests_texts
    query = tree_sitter.Query(get_language(language), structure + "\n" + refs)
    split = next((i for i in range(query.pattern_count)
                  if query.start_byte_for_pattern(i) > len(structure.encode())),
                 query.pattern_count)
    return query, split, tests_texts


def parse_file(source: bytes, language: str | None, references: bool = True) -> ParseResult:
    """Parse one file. Never raises on malformed source: tree-sitter recovers what it can;
    ParseTooSlow where it takes over PARSE_TIME_LIMIT_S. `references=False` skips what only
    the graph needs."""
    if not has_grammar(language):
        return ParseResult(chunks=chunk_plain_text(source.decode("utf-8", "replace")))
    query, split, tests_texts = _file_query(language, references)
    tree = _tree(language, source, reparse=tests_texts)
    matches = tree_sitter.QueryCursor(query).matches(tree.root_node) if query else []
    symbols, chunks = extract_structure(tree, source, language,
                                        [m for m in matches if m[0] < split])
    found = (extract_references(tree, source, language, symbols,
                                [m for m in matches if m[0] >= split]) if references else [])
    return ParseResult(symbols=symbols, chunks=chunks, references=found)
