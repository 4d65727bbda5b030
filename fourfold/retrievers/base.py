"""The one interface every modality implements. Routing and fusion see only this."""
from __future__ import annotations

from typing import Callable, Protocol

from ..model import Hit
from ..query.filters import in_glob, no_glob
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
    """No glob (or a blank one, as the filter stage reads it), or a path inside it."""
    return no_glob(glob) or in_glob(path, glob)


GLOB_DEEPER = 8  # how many times deeper a search under a narrow glob is asked again


def inside_glob(search: Callable[[int], tuple[int, list[Hit]]], glob: str | None, want: int,
                enough: int, most: int) -> list[Hit]:
    """The hits of search(want) (how many it ranked, and those of them inside `glob`).
    Ranked chunks are filtered by the glob after the search, so under a narrow glob it is
    asked again GLOB_DEEPER times deeper until `enough` lie inside it, it ranked fewer than
    asked (there are no more), or `most` were asked."""
    while True:
        ranked, kept = search(want)
        if no_glob(glob) or len(kept) >= enough or ranked < want or want >= most:
            return kept
        want = min(want * GLOB_DEEPER, most)
