"""The typed query that travels from classification down to every retriever."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .filters import Filters

# Whole words or identifier parts ("test_parse", "TestParser"): "latest" and "specific" ask
# for no tests.
_TEST_WORDS = re.compile(r"(?<![A-Za-z])(?:[Tt]est(?:s|ing|ed)?|TESTS?|[Ss]pecs?|[Uu]nit_?tests?|"
                         r"[Pp]ytest)(?![a-z])")


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

    @property
    def wants_tests(self) -> bool:
        """A question that mentions tests keeps them at full rank."""
        return _TEST_WORDS.search(self.text) is not None
