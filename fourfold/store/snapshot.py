"""One generation of one repository's index (or of every repository of an embedded index)
as the query stages see it, loaded once and shared: each file's language and flags,
centrality, and (when a kind filter asks) each symbol's kind. Keys are paths, as hits
carry them; a query runs in one repository, where a path names one file."""
from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cached_property

from ..discovery.flags import PROSE, PROSE_LANGUAGES, TEST
from ..tokens import module_stem, name_words, normalise_name
from .base import Store, StoredFile


class IndexSnapshot:
    def __init__(self, store: Store, generation: tuple, repo_id: int | None = None):
        self.store = store
        self.generation = generation
        self.repo_id = repo_id  # None: every repository

    @cached_property
    def _all_files(self) -> list[StoredFile]:
        return self.store.files(self.repo_id)

    @cached_property
    def files(self) -> dict[str, StoredFile]:
        return {f.path: f for f in self._all_files}

    @cached_property
    def file_name_words(self) -> dict[str, tuple[str, ...]]:
        """path -> the words of its file name, as questions are matched against them."""
        return {f.path: name_words(f.path) for f in self._all_files}

    @cached_property
    def module_stems(self) -> dict[str, list[StoredFile]]:
        """A file's module name, normalised (application.js -> application) -> its files."""
        stems: dict[str, list[StoredFile]] = {}
        for f in self._all_files:
            stems.setdefault(normalise_name(module_stem(f.path)), []).append(f)
        return stems

    def language(self, path: str) -> str | None:
        stored = self.files.get(path)
        return stored.language if stored else None

    def is_test(self, path: str) -> bool:
        stored = self.files.get(path)
        return bool(stored and stored.flags & TEST)

    @cached_property
    def file_flags(self) -> dict[str, int]:
        """path -> flags, files in no programming language marked PROSE."""
        return {f.path: f.flags | (PROSE if not f.language
                                           or f.language in PROSE_LANGUAGES else 0)
                for f in self.files.values()}

    @cached_property
    def centrality(self) -> dict:
        """path and (path, symbol) -> PageRank relative to an average node."""
        symbol_rank, file_rank = self.store.centrality(self.repo_id)
        paths = {f.file_id: f.path for f in self.files.values()}
        out: dict = {paths[fid]: rank
                                   for fid, rank in file_rank.items() if fid in paths}
        for s in self.store.symbols_by_id(symbol_rank):
            if s.file_id in paths:
                out[(s.path, s.qualname)] = symbol_rank[s.symbol_id]
        return out

    @cached_property
    def _symbol_kinds(self) -> dict[tuple[str, str], str]:
        kinds: dict[tuple[str, str], str] = {}
        for repo in self.store.repos(counts=False):
            if self.repo_id is not None and repo.repo_id != self.repo_id:
                continue
            for _sid, path, _name, qualname, kind, _parent in self.store.graph_symbols(
                    repo.repo_id):
                kinds.setdefault((path, qualname), kind)
        return kinds

    def symbol_kind(self, path: str, symbol: str) -> str | None:
        return self._symbol_kinds.get((path, symbol))


class Snapshots:
    """The snapshot of the current generation of the repository `scope()` names (None:
    every repository); a new one when the index changes."""

    def __init__(self, store: Store, scope: Callable[[], int | None] = lambda: None):
        self.store = store
        self.scope = scope
        self._current: IndexSnapshot | None = None
        self._lock = threading.Lock()

    def current(self) -> IndexSnapshot:
        generation = self.store.generation()
        repo_id = self.scope()
        with self._lock:
            if (self._current is None or self._current.generation != generation
                    or self._current.repo_id != repo_id):
                self._current = IndexSnapshot(self.store, generation, repo_id)
            return self._current
