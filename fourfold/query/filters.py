"""The filters of a question, checked once when it is asked and applied in one stage to the
hits of every modality (text, structural, graph, semantic alike).

A retriever may push the cheap part (repository, path glob) down into its own index; the
stage after it is what guarantees that no hit outside the filters is returned.
"""
from __future__ import annotations

import difflib
import fnmatch
import functools
import re
from dataclasses import dataclass
from typing import Callable, Iterable, Protocol

from ..discovery.languages import EXTENSIONS, FILENAMES
from ..errors import QueryError
from ..model import REEXPORT, Hit

LANGUAGES = frozenset(EXTENSIONS.values()) | frozenset(FILENAMES.values())
# What people call a language -> the languages the index names it by.
LANGUAGE_NAMES = {
    **{name: frozenset({name}) for name in LANGUAGES},
    "typescript": frozenset({"typescript", "tsx"}),
    "js": frozenset({"javascript"}), "ts": frozenset({"typescript", "tsx"}),
    "py": frozenset({"python"}), "c++": frozenset({"cpp"}), "c#": frozenset({"csharp"}),
    "golang": frozenset({"go"}), "rb": frozenset({"ruby"}), "sh": frozenset({"bash"}),
    "shell": frozenset({"bash"}), "kt": frozenset({"kotlin"}), "rs": frozenset({"rust"}),
}

# The kinds the parser gives definitions, and what each word means across languages (a Go
# struct answers "class", a Rust trait "interface"); "method" means methods only.
KINDS = frozenset({"class", "constant", "enum", "field", "function", "impl", "interface",
                   "macro", "method", "module", "namespace", REEXPORT, "struct", "trait",
                   "type", "variable"})
KIND_FAMILIES = {
    "function": frozenset({"function", "method", "macro"}),
    "class": frozenset({"class", "struct", "interface", "trait", "enum", "type"}),
    "struct": frozenset({"struct", "class", "type"}),
    "interface": frozenset({"interface", "trait", "class"}),
    "trait": frozenset({"trait", "interface"}),
    "type": frozenset({"type", "class", "struct", "interface", "enum", "trait"}),
    "enum": frozenset({"enum", "class", "type"}),
    "module": frozenset({"module", "namespace"}),
    "namespace": frozenset({"namespace", "module"}),
    "impl": frozenset({"impl", "class", "struct"}),
    "constant": frozenset({"constant", "variable"}),
    "macro": frozenset({"macro", "function"}),
    "record": frozenset({"struct", "class"}), "object": frozenset({"class", "module"}),
    "protocol": frozenset({"interface", "trait"}), "package": frozenset({"module", "namespace"}),
}


def _unknown(what: str, value: str, known: Iterable[str]) -> QueryError:
    known = sorted(known)
    close = difflib.get_close_matches(value, known, n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return QueryError(f"unknown {what} {value!r}{hint}; known: {', '.join(known)}")


def _names(names: Iterable[str] | str, what: str) -> list[str]:
    """The names a caller gave: one (a string), several, or None (none); anything else is
    an error."""
    given = [names] if isinstance(names, str) else names if names is not None else []
    try:
        given = list(given)
    except TypeError:
        given = [given]
    for name in given:
        if not isinstance(name, str):
            raise QueryError(f"a {what} is named by a string, not {name!r}")
    return given


def languages_named(names: Iterable[str] | str) -> frozenset[str]:
    """The index's languages for what a user called them (one name, or several); an
    unknown name is an error."""
    out: set[str] = set()
    for name in _names(names, "language"):
        key = name.strip().lower()
        if key not in LANGUAGE_NAMES:
            raise _unknown("language", name, LANGUAGE_NAMES)
        out |= LANGUAGE_NAMES[key]
    return frozenset(out)


def kinds_named(names: Iterable[str] | str) -> frozenset[str]:
    """The definition kinds a user's kind words mean (one, or several); an unknown kind is
    an error."""
    out: set[str] = set()
    for name in _names(names, "kind"):
        key = name.strip().lower()
        if key in KIND_FAMILIES:
            out |= KIND_FAMILIES[key]
        elif key in KINDS:
            out.add(key)
        else:
            raise _unknown("kind", name, KINDS | KIND_FAMILIES.keys())
    return frozenset(out)


MAX_GLOB_CHARS = 1024  # as long as an indexed path may be


def no_glob(glob: str | None) -> bool:
    """Whether a path glob filters nothing: none, or a blank one."""
    return glob is None or not glob.strip()


def in_glob(path: str, glob: str) -> bool:
    """A path matches a glob as a whole or below some folder ('*.py', 'src/*')."""
    return _glob_matcher(glob)(path) is not None


@functools.lru_cache(maxsize=64)
def _glob_matcher(glob: str) -> Callable[[str], re.Match | None]:
    """A glob's match, compiled once. Refused past MAX_GLOB_CHARS: translating a glob takes
    time quadratic in its brackets, and fnmatch's own cache would keep thousands of
    compiled patterns (a hostile caller's megabyte globs held a server's core for minutes
    and its memory for good)."""
    if len(glob) > MAX_GLOB_CHARS:
        raise QueryError(f"a path glob of {len(glob):,} characters; at most {MAX_GLOB_CHARS:,}")
    return re.compile(f"(?:{fnmatch.translate(glob)})|(?:{fnmatch.translate('*/' + glob)})"
                      ).match


@dataclass(frozen=True)
class Filters:
    """What a question may return. Empty sets mean no restriction."""

    repo_id: int | None = None
    path_glob: str | None = None
    languages: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset()
    exclude_tests: bool = False  # tests are otherwise kept, ranked below source

    @classmethod
    def of(cls, repo_id: int | None = None, path_glob: str | None = None,
           languages: Iterable[str] = (), kinds: Iterable[str] = (),
           exclude_tests: bool = False) -> "Filters":
        """Filters from user-given values, checked: an unknown language or kind is an
        error, never a filter that silently matches nothing (or everything)."""
        if path_glob is not None and not isinstance(path_glob, str):
            raise QueryError(f"a path glob is a string, e.g. 'src/*.py', not {path_glob!r}")
        if no_glob(path_glob):
            path_glob = None
        if path_glob is not None:
            _glob_matcher(path_glob)  # a bad glob is refused before anything is searched
        return cls(repo_id, path_glob, languages_named(languages), kinds_named(kinds),
                   exclude_tests)

    def allows_path(self, path: str) -> bool:
        """The part a retriever can check from a path alone."""
        return self.path_glob is None or in_glob(path, self.path_glob)

    @property
    def needs_index_facts(self) -> bool:
        """Whether checking a hit needs its file's language or its symbol's kind."""
        return bool(self.languages or self.kinds or self.exclude_tests)


class IndexFacts(Protocol):
    """What the filter stage looks up about a hit (an index snapshot provides it)."""

    def language(self, path: str) -> str | None: ...

    def is_test(self, path: str) -> bool: ...

    def symbol_kind(self, path: str, symbol: str) -> str | None: ...


def hit_kind(hit: Hit, facts: IndexFacts) -> str | None:
    """The definition kind of a hit: its own (structural, graph), else that of the symbol
    its chunk belongs to (text, semantic); None for code outside any definition."""
    if hit.kind in KINDS:
        return hit.kind
    return facts.symbol_kind(hit.path, hit.symbol) if hit.symbol else None


def apply_filters(hits: list[Hit], filters: Filters, facts: IndexFacts) -> list[Hit]:
    """The hits the filters allow, in their order."""
    out = []
    for hit in hits:
        if not filters.allows_path(hit.path):
            continue
        if filters.languages and facts.language(hit.path) not in filters.languages:
            continue
        if filters.kinds and hit_kind(hit, facts) not in filters.kinds:
            continue
        if filters.exclude_tests and facts.is_test(hit.path):
            continue
        out.append(hit)
    return out
