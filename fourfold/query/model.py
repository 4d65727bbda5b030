"""The typed query that travels from classification down to every retriever."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from ..errors import QueryError
from ..tokens import STOPWORDS, query_words
from .filters import Filters
from .mentions import IDENTIFIER, Mentions, mentions_of

# A question of more distinct words than this (stopwords aside) is a pasted text: an issue,
# a traceback, a log. It names tests, docs and files in passing; they are not what it asks
# for. Chosen on the development sets (docs/benchmarks.md).
QUESTION_MAX_WORDS = 12
# A pasted text's first line is its title where it reads as one: a few words on a line of
# its own (an issue's title), not a traceback's header. Set by hand, not fitted.
HEADLINE_MIN_WORDS = 3
HEADLINE_MAX_CHARS = 200

# Whole words or identifier parts ("test_parse", "TestParser"): "latest" and "specific" ask
# for no tests.
_TEST_WORDS = re.compile(r"(?<![A-Za-z])(?:[Tt]est(?:s|ing|ed)?|TESTS?|[Ss]pecs?|[Uu]nit_?tests?|"
                         r"[Pp]ytest)(?![a-z])")
# Questions about documentation or configuration keep prose files at full rank.
_PROSE_WORDS = re.compile(r"(?i)\b(docs?|documentation|readme|changelog|guide|tutorial|"
                          r"config(uration)?|settings?|ya?ml|json|toml|markdown|html|css|"
                          r"stylesheets?)\b")


# The most answers one request may ask for: every modality is asked for three times as
# many, and a search engine's top-k allocates for k up front.
MAX_RESULTS = 10_000
# A grep pattern or exact string longer than any line worth finding: parsing, compiling and
# prefiltering grow with it.
MAX_PATTERN_CHARS = 4096
GREP_TIME_BUDGET = 10.0  # seconds a grep scans files before it answers with what it found


def check_text(value: object, what: str) -> str | None:
    """`value` as given, if it is text or None (nothing given: the caller's check for an
    empty value says so); else a QueryError naming what was given instead (a number or
    bytes reached `.strip()` as an AttributeError)."""
    if value is not None and not isinstance(value, str):
        raise QueryError(f"{what} must be text, not {type(value).__name__} {value!r:.60}")
    return value


def check_limit(limit: object, most: int | None = MAX_RESULTS, what: str = "limit") -> int:
    """`limit` as given, if it is a whole number from 1 to `most` (None: no upper bound);
    else a QueryError that says so."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1 or (
            most is not None and limit > most):
        bound = f"from 1 to {most:,}" if most is not None else "of at least 1"
        raise QueryError(f"{what} must be a whole number {bound}, not {limit!r}")
    return limit


def check_offset(offset: object) -> int:
    """`offset` as given, if it is a whole number of at least 0; else a QueryError."""
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise QueryError(f"offset must be a whole number of at least 0, not {offset!r}")
    return offset


@dataclass
class Query:
    """One question, classified once.

    `intent` is the question's kind (routing/intent.py), `target` what the classifier
    extracted from it (an identifier, a quoted string, a file), `kind` the definition kind
    the question itself names ("class Foo"), `literal` the string to find verbatim (a quoted
    string or an error token), `transitive` whether it asks for everything that depends on
    the target (impact) rather than what refers to it directly, `filters` what the answer
    may contain. Retrievers read these fields, never the intent's name."""

    text: str
    intent: str | None = None
    target: str | None = None
    kind: str | None = None
    literal: str | None = None
    transitive: bool = False
    filters: Filters = field(default_factory=Filters)

    @cached_property
    def pasted(self) -> bool:
        """An issue, traceback or log rather than a question (QUESTION_MAX_WORDS)."""
        return len(query_words(self.text)) > QUESTION_MAX_WORDS

    @cached_property
    def headline(self) -> str | None:
        """A pasted text's title: its first line, where that line is a short sentence with
        more text below it (an issue's title, which says in a few words what the rest
        describes); None for a question, or a text whose first line is not one."""
        if not self.pasted:
            return None
        first, *rest = self.text.strip().splitlines()  # any line break: \r, U+2028 ...
        first = first.strip()
        if (not any(line.strip() for line in rest) or len(first) > HEADLINE_MAX_CHARS
                or first.startswith("Traceback (most recent call last)")
                or len(query_words(first)) < HEADLINE_MIN_WORDS):
            return None
        return first

    @cached_property
    def mentions(self) -> Mentions:
        """The files, frames and code names a pasted text names (none for a question)."""
        return mentions_of(self.text) if self.pasted else Mentions()

    @cached_property
    def mentioned_names(self) -> frozenset[str]:
        """Each part of the code names a pasted text mentions (`Field.deconstruct`: both)."""
        return frozenset(part for name in self.mentions.names for part in name.split("."))

    @cached_property
    def identifiers(self) -> frozenset[str]:
        """Every identifier-shaped word of the text as written, stopwords aside: a
        definition of one of these names is one the question names."""
        return frozenset(w for w in IDENTIFIER.findall(self.text) if w.lower() not in STOPWORDS)

    @property
    def wants_tests(self) -> bool:
        """A question that mentions tests keeps them at full rank."""
        return not self.pasted and _TEST_WORDS.search(self.text) is not None

    @property
    def wants_prose(self) -> bool:
        """A question that names docs or configuration keeps prose files at full rank."""
        return not self.pasted and _PROSE_WORDS.search(self.text) is not None
