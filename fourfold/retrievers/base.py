"""The one interface every modality implements. Routing and fusion see only this."""
from __future__ import annotations

from typing import Protocol

from ..model import Hit
from ..query.filters import in_glob
from ..query.model import Query


class Retriever(Protocol):
    modality: str

    def search(self, query: Query, limit: int) -> list[Hit]:
        """Best-first hits of this modality alone."""
        ...

    def ready(self) -> bool:
        """False while the modality's index is still being built."""
        ...

    def incomplete(self) -> str | None:
        """Why answers may miss something though the modality is ready (the index is
        being completed meanwhile); None when nothing is missing."""
        ...


def path_ok(path: str, glob: str | None) -> bool:
    """No glob, or a path inside it."""
    return glob is None or in_glob(path, glob)
