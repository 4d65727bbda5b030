"""The one interface every modality implements. Routing and fusion see only this."""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Protocol

from ..model import Hit


@dataclass
class Query:
    text: str
    target: str | None = None  # what the intent classifier extracted (identifier, string ...)
    intent: str | None = None
    repo_id: int | None = None
    language: str | None = None
    path_glob: str | None = None
    options: dict = field(default_factory=dict)


class Retriever(Protocol):
    modality: str

    def search(self, query: Query, limit: int) -> list[Hit]:
        """Best-first hits of this modality alone."""
        ...

    def ready(self) -> bool:
        """False while the modality's index is still being built."""
        ...


def in_glob(path: str, glob: str) -> bool:
    """A path matches a glob as a whole or below some folder ('*.py', 'src/*')."""
    return fnmatch.fnmatch(path, glob) or fnmatch.fnmatch(path, f"*/{glob}")


def path_ok(path: str, glob: str | None) -> bool:
    """No glob, or a path inside it."""
    return glob is None or in_glob(path, glob)
