"""One generation of one repository's index (or of every repository of an embedded index)
as the query stages see it, loaded once and shared: each file's language and flags,
centrality, and (when a kind filter asks) each symbol's kind. Keys are paths, as hits
carry them; a query runs in one repository, where a path names one file."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from functools import cached_property
from operator import attrgetter

from ..discovery.flags import PROSE, PROSE_LANGUAGES, TEST
from ..tokens import MODULE_INDEX_STEMS, module_stem, normalise_name, stem_words
from .base import Store, StoredFile, StoredSymbol


class IndexSnapshot:
    def __init__(self, store: Store, generation: tuple, repo_id: int | None = None,
                 earlier: IndexSnapshot | None = None):
        self.store = store
        self.generation = generation
        self.repo_id = repo_id  # None: every repository
        # the words of the file names the snapshot before this one had split (most paths
        # outlive a change; the kernel's 78,000 take 0.2 s to split)
        self._earlier_words: dict[str, tuple[str, ...]] = (
            earlier.__dict__.get("file_name_words", {}) if earlier is not None else {})
        self._definitions: dict[str, list[StoredSymbol]] = {}
        self._ranks: dict = {}  # centrality(): path and (path, symbol) -> rank
        self._ranked: set[str] = set()  # the paths whose ranks are in it
        self._lock = threading.Lock()

    @cached_property
    def _all_files(self) -> list[StoredFile]:
        """The files by path (one repository's; every repository's by the store's order):
        a snapshot made from the one before it keeps this order."""
        files = self.store.files(self.repo_id)
        return files if self.repo_id is None else sorted(files, key=attrgetter("path"))

    @cached_property
    def _last_file_id(self) -> int:
        return max((f.file_id for f in self._all_files), default=0)

    def following(self, generation: tuple) -> IndexSnapshot | None:
        """The snapshot of a later generation of the same repository made from this one,
        where files were only written again (edited, not added or taken away, as a
        watcher's save); None otherwise. What depends on paths alone is shared, what holds
        the files is copied with the new ones, the rest is read again when asked for: a big
        repository's file rows, and what is made of them, cost the first search after
        every save more than the search itself."""
        if self.repo_id is None or "_all_files" not in self.__dict__:
            return None
        held, written = self.store.files_after(self.repo_id, self._last_file_id)
        files = self.files
        now = {f.path: f for f in written}
        if held != len(self._all_files) or len(now) != len(written) or any(
                path not in files for path in now):
            return None
        later = IndexSnapshot(self.store, generation, self.repo_id)
        mine, theirs = self.__dict__, later.__dict__
        theirs["_all_files"] = [now.get(f.path, f) for f in self._all_files]
        theirs["_last_file_id"] = max((f.file_id for f in written), default=self._last_file_id)
        theirs["files"] = {**files, **now}
        for name in ("file_name_words", "file_position", "files_by_name_word", "paths_by_name",
                     "modules"):
            if name in mine:
                theirs[name] = mine[name]
        if "module_stems" in mine:
            stems = dict(mine["module_stems"])
            for f in written:
                key = normalise_name(module_stem(f.path))
                stems[key] = [now.get(g.path, g) for g in stems[key]]
            theirs["module_stems"] = stems
        if "file_flags" in mine:
            theirs["file_flags"] = {**mine["file_flags"], **_flags(written)}
        later._definitions = {p: d for p, d in self._definitions.items() if p not in now}
        return later

    @cached_property
    def files(self) -> dict[str, StoredFile]:
        return {f.path: f for f in self._all_files}

    @cached_property
    def file_name_words(self) -> dict[str, tuple[str, ...]]:
        """path -> the words of its file name, as questions are matched against them."""
        known, self._earlier_words = self._earlier_words, {}
        by_stem: dict[str, tuple[str, ...]] = {}  # the kernel's 78,257 files: 48,144 stems

        def words(path: str) -> tuple[str, ...]:
            stem = module_stem(path)
            found = by_stem.get(stem)
            if found is None:
                found = by_stem[stem] = stem_words(stem)
            return found

        return {f.path: known[f.path] if f.path in known else words(f.path)
                for f in self._all_files}

    @cached_property
    def file_position(self) -> dict[str, int]:
        """path -> its place in the order the store lists files (file_name_words' order)."""
        return {path: n for n, path in enumerate(self.file_name_words)}

    @cached_property
    def files_by_name_word(self) -> dict[str, list[str]]:
        """A file-name word -> the paths whose names hold it: a question finds the files
        it names without reading every name."""
        found: dict[str, list[str]] = {}
        for path, words in self.file_name_words.items():
            for word in words:
                found.setdefault(word, []).append(path)
        return found

    @cached_property
    def module_stems(self) -> dict[str, list[StoredFile]]:
        """A file's module name, normalised (application.js -> application) -> its files."""
        stems: dict[str, list[StoredFile]] = {}
        for f in self._all_files:
            stems.setdefault(normalise_name(module_stem(f.path)), []).append(f)
        return stems

    @cached_property
    def paths_by_name(self) -> dict[str, list[str]]:
        """A file's name (message.py) -> the paths of the files so named."""
        names: dict[str, list[str]] = {}
        for f in self._all_files:
            names.setdefault(f.path.rsplit("/", 1)[-1], []).append(f.path)
        return names

    def resolve_path(self, written: str) -> str | None:
        """The indexed file a path written elsewhere names: the one sharing the longest
        tail of folders with it ("/home/u/proj/django/core/mail.py" -> "django/core/mail.py";
        a bare name only when one file has it)."""
        parts = written.replace("\\", "/").split("/")
        found = self.paths_by_name.get(parts[-1], ())
        best, best_len = None, 0
        for path in found:
            have = path.split("/")
            shared = 0
            while (shared < min(len(have), len(parts))
                   and have[-1 - shared] == parts[-1 - shared]):
                shared += 1
            if shared > best_len:
                best, best_len = path, shared
            elif shared == best_len:
                best = None  # two files fit equally: the text does not say which
        return best if best_len > 1 or len(found) == 1 else None

    @cached_property
    def modules(self) -> dict[str, str]:
        """A file's dotted module name (django.core.mail.message, and the package's own
        name for its __init__) -> its path, for names a text writes with dots."""
        out: dict[str, str] = {}
        for f in self._all_files:
            stem = f.path.rsplit(".", 1)[0] if "." in f.path.rsplit("/", 1)[-1] else f.path
            dotted = stem.replace("/", ".")
            out.setdefault(dotted, f.path)
            if dotted.rsplit(".", 1)[-1] in MODULE_INDEX_STEMS and "." in dotted:
                out.setdefault(dotted.rsplit(".", 1)[0], f.path)
        return out

    def definitions(self, path: str) -> list[StoredSymbol]:
        """The definitions in one file (what a span is credited to at function
        granularity), read once per generation."""
        found = self._definitions.get(path)
        if found is None:
            stored = self.files.get(path)
            found = self.store.symbols_of_file(stored.file_id) if stored else []
            self._definitions[path] = found
        return found

    def text(self, path: str) -> str:
        """A file's text as indexed ("" for a path the index does not hold)."""
        stored = self.files.get(path)
        return self.store.content(stored.file_id) if stored else ""

    def language(self, path: str) -> str | None:
        stored = self.files.get(path)
        return stored.language if stored else None

    def is_test(self, path: str) -> bool:
        stored = self.files.get(path)
        return bool(stored and stored.flags & TEST)

    @cached_property
    def file_flags(self) -> dict[str, int]:
        """path -> flags, files in no programming language marked PROSE."""
        return _flags(self.files.values())

    def centrality(self, paths: Iterable[str]) -> dict:
        """path and (path, symbol) -> PageRank relative to an average node, for these files
        at least: each file's ranks are read once, when first asked for (a question's hits
        name a few hundred files; the kernel's ranks are 780,000)."""
        missing = {p for p in paths if p not in self._ranked}
        if missing:
            symbols, files = self.store.ranks_of_files(self.repo_id, missing)
            with self._lock:
                self._ranks.update(files)
                self._ranks.update(symbols)
                self._ranked |= missing
        return self._ranks

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


def _flags(files: Iterable[StoredFile]) -> dict[str, int]:
    return {f.path: f.flags | (PROSE if not f.language or f.language in PROSE_LANGUAGES else 0)
            for f in files}


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
            earlier = self._current
            if earlier is None or earlier.generation != generation or earlier.repo_id != repo_id:
                later = (earlier.following(generation)
                         if earlier is not None and earlier.repo_id == repo_id else None)
                self._current = later or IndexSnapshot(self.store, generation, repo_id, earlier)
            return self._current
