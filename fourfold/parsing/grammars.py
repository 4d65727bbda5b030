"""Tree-sitter grammars, loaded from the pinned `tree-sitter-<lang>` wheels (never downloaded)."""
from __future__ import annotations

import importlib
from functools import cache

import tree_sitter

# language name -> (module, function returning the grammar pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "kotlin": ("tree_sitter_kotlin", "language"),
    "swift": ("tree_sitter_swift", "language"),
    "scala": ("tree_sitter_scala", "language"),
    "bash": ("tree_sitter_bash", "language"),
    "lua": ("tree_sitter_lua", "language"),
    "haskell": ("tree_sitter_haskell", "language"),
    "elixir": ("tree_sitter_elixir", "language"),
    "zig": ("tree_sitter_zig", "language"),
}


def has_grammar(language: str | None) -> bool:
    return language in GRAMMARS


@cache
def get_language(language: str) -> tree_sitter.Language:
    module, func = GRAMMARS[language]
    return tree_sitter.Language(getattr(importlib.import_module(module), func)())


def get_parser(language: str) -> tree_sitter.Parser:
    return tree_sitter.Parser(get_language(language))
