"""Per-language resolution rules, one table keyed by language name.

Each entry is a `Language` (see .base): how an import statement binds names to files, and
which of the call rules of fourfold.graph.calls apply. A language absent from the table
gets the default rules: its imports resolve nowhere, its names by the generic search.
"""
from __future__ import annotations

from .base import Language
from .c_family import CFamily
from .go import Go
from .haskell_elixir import Elixir, Haskell
from .javascript import JavaScript
from .jvm import CSharp, Jvm
from .php import Php
from .python import Python
from .ruby import Ruby
from .rust import Rust
from .scripts import Lua, Shell, Zig
from .swift import Swift

LANGUAGES: dict[str, Language] = {lang.name: lang for lang in (
    Python("python"),
    JavaScript("javascript"), JavaScript("typescript"), JavaScript("tsx"),
    Go("go"),
    Rust("rust"),
    Jvm("java", members_outside_type=False), Jvm("kotlin", members_outside_type=True),
    Jvm("scala", members_outside_type=True),
    CSharp("csharp"),
    CFamily("c", classes=False), CFamily("cpp", classes=True),
    Ruby("ruby"),
    Php("php"),
    Lua("lua"), Zig("zig"), Shell("bash"),
    Haskell("haskell"), Elixir("elixir"),
    Swift("swift"),
)}


def language(name: str) -> Language:
    """The rules of language `name` (the default rules where it has none of its own)."""
    rules = LANGUAGES.get(name)
    if rules is None:
        rules = _DEFAULT.get(name)
        if rules is None:
            rules = _DEFAULT[name] = Language(name)
    return rules


_DEFAULT: dict[str, Language] = {}


__all__ = ["LANGUAGES", "Language", "language"]
