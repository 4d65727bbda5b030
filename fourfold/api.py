"""Python API: the same operations as the CLI and the MCP server, as library calls.

    from fourfold import Fourfold
    ff = Fourfold.open("path/to/repo")      # index folder: path/to/repo/.fourfold
    ff.index()                               # incremental
    ff.search("where is parseConfig defined").hits
    ff.grep("ECONNREFUSED")
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .discovery.walk import DEFAULT_MAX_FILE_BYTES
from . import navigation
from .errors import FourfoldError, ModalityUnavailable, NotIndexedError, QueryError
from .indexer import IndexLock, IndexSummary, Progress, index_repository
from .ranking.priors import rank_definitions
from .retrievers.graph import GraphRetriever
from .retrievers.structural import StructuralRetriever, match_label
from .retrievers.text import GREP_TIME_BUDGET, ResultList, TextRetriever
from .routing.engine import SearchEngine, SearchOptions, SearchResponse
from .routing.profiles import MODALITIES, PRESETS, PROFILES, parse_weights
from .store.index_dir import DB_NAME, identity, prepare_index_dir, remove_database
from .store.snapshot import Snapshots
from .store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from .retrievers.semantic import SemanticRetriever

# What the interfaces need besides Fourfold itself: they import this module only.
__all__ = ["Fourfold", "GREP_TIME_BUDGET", "MODALITIES", "PRESETS", "PROFILES", "SearchOptions",
           "SearchResponse", "find_index_root", "parse_weights"]

INDEX_DIR_NAME = ".fourfold"
RELATIONS = ("callers", "callees", "importers", "subclasses")  # related()'s one step
ALL_ROWS = 1 << 40  # a page size meaning every row (graph queries page their answers)


def find_index_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` with an index of its own (to find the
    repository a file belongs to)."""
    for folder in (start, *start.parents):
        if (folder / INDEX_DIR_NAME / DB_NAME).is_file():
            return folder
    return None


class Fourfold:
    """One index folder, serving one or more repositories.

    The index lives in ROOT/.fourfold unless `index_dir` names another folder; an index
    found in a folder above ROOT is not used, so that what is served stays inside ROOT.
    `rebuild=True` discards the index database first (a damaged one included)."""

    def __init__(self, root: str | os.PathLike, index_dir: str | os.PathLike | None = None,
                 max_file_bytes: int | None = None, embedder: str = "default",
                 rebuild: bool = False):
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise FourfoldError(f"{root}: no such folder")
        self.index_dir = Path(index_dir).resolve() if index_dir else self.root / INDEX_DIR_NAME
        self.embedder_name = embedder
        self.notes: list[str] = []  # what opening the index had to do, for the user to read
        prepare_index_dir(self.index_dir, self.root)
        if rebuild:
            self._discard_database()
        self.store = self._open_store()
        self.max_file_bytes = max_file_bytes or self.store.setting(
            f"max_file_bytes:{self.root}", DEFAULT_MAX_FILE_BYTES)
        self.snapshots = Snapshots(self.store)

    def _discard_database(self) -> None:
        """Start from an empty index, never under another indexer's feet."""
        with IndexLock(self.index_dir):
            remove_database(self.index_dir)

    def _open_store(self) -> SQLiteStore:
        """The folder's database, trusted only if it was built in this very folder; any
        other (shipped with a repository, copied, moved) is discarded for a new one."""
        store = SQLiteStore(self.index_dir / DB_NAME)
        here = identity(self.index_dir)
        found = store.identity()
        if found == here:
            return store
        if found is None and store.is_empty():
            store.mark_identity(here)
            return store
        store.close()
        self._discard_database()
        self.notes.append(f"the index in {self.index_dir} was not built in this folder "
                          "(shipped with the repository, copied or moved); it was discarded "
                          "and is built anew")
        store = SQLiteStore(self.index_dir / DB_NAME)
        store.mark_identity(here)
        return store

    open = classmethod(lambda cls, root=".", **kw: cls(root, **kw))

    # -- indexing -------------------------------------------------------------------------
    def index(self, progress: Progress | None = None, workers: int | None = None,
              embed: bool = True, wait_s: float = 0.0, verify: bool = False) -> IndexSummary:
        """Update text, structure and graph (committed first), then embed new chunks. While
        another process indexes the same folder, wait up to `wait_s` for it, then raise
        IndexBusyError. `verify=True` re-reads every file, whatever its size and times say."""
        summary = index_repository(self.store, self.index_dir, self.root, self.max_file_bytes,
                                   workers=workers, progress=progress, wait_s=wait_s,
                                   verify=verify)
        self.store.set_setting(f"max_file_bytes:{self.root}", self.max_file_bytes)
        if embed:
            self.embed(progress, summary)
        return summary

    def embed(self, progress: Progress | None = None, summary: IndexSummary | None = None
              ) -> int:
        """Embed every chunk that has no vector yet (cached by content; never twice)."""
        from .semantic.indexing import embed_pending

        started = time.perf_counter()
        try:
            count = embed_pending(self.store, self.semantic.embedder, progress=progress)
        except ModalityUnavailable as exc:
            if summary is not None:
                summary.skipped[f"semantic unavailable: {exc}"] = 1
            return 0
        if summary is not None:
            summary.embedded = count
            summary.embed_seconds = time.perf_counter() - started
        return count

    def watch(self, on_index: Callable[[IndexSummary], None] | None = None,
              stop: threading.Event | None = None, embed: bool = True,
              debounce_ms: int = 400, busy_wait_s: float = 30.0) -> None:
        """Keep the index fresh: index now, then again after every debounced batch of file
        changes, until `stop` is set or Ctrl-C. `on_index` gets each run's summary. While
        another process indexes this folder, the run waits for it (up to busy_wait_s)."""
        def run() -> None:
            summary = self.index(embed=embed, wait_s=busy_wait_s)
            if on_index:
                on_index(summary)

        run()
        for _ in self.watch_changes(stop, debounce_ms):
            run()

    def is_indexed(self) -> bool:
        return any(indexed_at for _, indexed_at in self.store.generation())

    def ensure_indexed(self, progress: Progress | None = None) -> IndexSummary | None:
        """Index on first use; later calls reuse the index as it is."""
        if self.repo_id() is None:
            return self.index(progress)
        return None

    def repo_id(self) -> int | None:
        """The indexed repository of root (None: not indexed yet)."""
        for repo in self.store.repos(counts=False):
            if repo.indexed_at and Path(repo.root) == self.root:
                return repo.repo_id
        return None

    def _require_index(self) -> None:
        if not self.is_indexed():
            raise NotIndexedError(f"{self.root} is not indexed yet; run `fourfold index "
                                  f"{self.root}` first")

    # -- retrievers -----------------------------------------------------------------------
    @cached_property
    def text(self) -> TextRetriever:
        return TextRetriever(self.store, self.snapshots)

    @cached_property
    def structural(self) -> StructuralRetriever:
        return StructuralRetriever(self.store, self.snapshots)

    @cached_property
    def semantic(self) -> SemanticRetriever:
        from .retrievers.semantic import SemanticRetriever  # numpy: when a search needs it
        from .semantic.embedder import load_embedder

        return SemanticRetriever(self.store, lambda: load_embedder(self.embedder_name))

    @cached_property
    def graph(self) -> GraphRetriever:
        return GraphRetriever(self.store, self.structural)

    @cached_property
    def engine(self) -> SearchEngine:
        retrievers = {"text": self.text, "structural": self.structural, "graph": self.graph,
                      "semantic": self.semantic}
        return SearchEngine(retrievers, self.snapshots.current)

    # -- queries --------------------------------------------------------------------------
    def search(self, query: str, options: SearchOptions | None = None, **kw) -> SearchResponse:
        """Answer a question in plain words: classify it (intent, target), run the modalities
        it deserves, keep only what the filters allow (`path_glob`, `languages`, `kinds`,
        `repo_id`; an unknown language or kind raises QueryError), fuse and rank. Options
        come as a SearchOptions or as its fields (`ff.search(q, languages=("go",))`)."""
        self._require_index()
        options = options or SearchOptions(**kw)
        return self.engine.search(query, options)

    def grep(self, pattern: str, regex: bool = False, case_sensitive: bool = False,
             whole_word: bool = False, path_glob: str | None = None,
             limit: int | None = None, time_budget: float | None = None,
             repo_id: int | None = None) -> ResultList:
        """The matching lines (LineMatch), in path and line order, in one repository or all
        (`repo_id` None); `.partial` is true when scanning stopped after `time_budget`
        seconds (default: the text modality's time_budget) with files left unread."""
        self._require_index()
        return self.text.grep(pattern, regex=regex, case_sensitive=case_sensitive,
                              whole_word=whole_word, path_glob=path_glob, repo_id=repo_id,
                              limit=limit, time_budget=time_budget)

    def definitions(self, name: str, kind: str | None = None, limit: int = 20,
                    repo_id: int | None = None, path_glob: str | None = None) -> list[dict]:
        """Where a name is defined, best match first, each saying how it matched
        (exact, qualified, case, style, prefix, subword); `kind` as in filters."""
        self._require_index()
        if not name or not name.strip():
            raise QueryError("empty name: give the symbol to look up")
        name = name.strip()
        return [{"path": s.path, "start_line": s.start_line, "end_line": s.end_line,
                 "name": s.name, "qualname": s.qualname, "kind": s.kind,
                 "signature": s.signature, "doc": s.doc, "language": s.language,
                 "match": match_label(name, tier)}
                for s, tier in rank_definitions(self.structural.definitions(
                    name, kind, repo_id=repo_id, path_glob=path_glob, limit=limit * 4))[:limit]]

    def outline(self, path: str) -> list[dict]:
        """The symbols of one file, nested by parent."""
        self._require_index()
        stored = self.store.file_by_path(self.relative(path))
        if stored is None:
            raise FourfoldError(f"{path} is not in the index")
        nodes: dict[str, dict] = {}
        roots: list[dict] = []
        for s in self.store.symbols_of_file(stored.file_id):
            node = {"name": s.name, "qualname": s.qualname, "kind": s.kind,
                    "start_line": s.start_line, "end_line": s.end_line,
                    "signature": s.signature, "children": []}
            nodes.setdefault(s.qualname, node)
            parent = nodes.get(s.parent) if s.parent else None
            (parent["children"] if parent else roots).append(node)
        return roots

    def references(self, name: str, limit: int = 50, offset: int = 0,
                   repo_id: int | None = None) -> dict:
        """Callers and other references of a symbol, paged, with a total count."""
        self._require_index()
        return self.graph.references(name, limit=limit, offset=offset, repo_id=repo_id)

    def callees(self, name: str, limit: int = 50, offset: int = 0,
                repo_id: int | None = None) -> dict:
        """What a symbol calls, paged, with a total count."""
        self._require_index()
        return self.graph.callees(name, limit=limit, offset=offset, repo_id=repo_id)

    def importers(self, name: str, limit: int = 50, offset: int = 0,
                  repo_id: int | None = None) -> dict:
        """Files importing a file or module."""
        self._require_index()
        return self.graph.importers(name, limit=limit, offset=offset, repo_id=repo_id)

    def impact(self, name: str, depth: int = 3, limit: int = 50, offset: int = 0,
               repo_id: int | None = None) -> dict:
        """Transitive dependents (blast radius) with their distance, nearest first, paged;
        `summary` counts all of them: dependents, files affected, how many per distance."""
        self._require_index()
        if limit < 1 or offset < 0:
            raise QueryError("limit must be at least 1 and offset at least 0")
        found = self.graph.impact(name, depth=depth, limit=ALL_ROWS, repo_id=repo_id)
        rows = found["results"]
        by_distance: dict[str, int] = {}
        for r in rows:
            by_distance[str(r["distance"])] = by_distance.get(str(r["distance"]), 0) + 1
        summary = {"dependents": len(rows), "files": len({r["path"] for r in rows}),
                   "by_distance": by_distance}
        out = {"total": len(rows), "offset": offset, "results": rows[offset:offset + limit],
               "notes": list(found["notes"]), "summary": summary}
        if offset + limit < len(rows):
            out["next_offset"] = offset + limit
        return out

    def map(self, limit: int = 20, repo_id: int | None = None) -> dict:
        """The map of a repository: its most central files and symbols (PageRank over the
        import, call and inheritance graph, 1.0 = an average node), most central first."""
        self._require_index()
        symbol_rank, file_rank = self.store.centrality()
        files = {f.file_id: f for f in self.store.files(repo_id)}
        top_files = sorted(((rank, fid) for fid, rank in file_rank.items() if fid in files),
                           reverse=True)[:limit]
        ranked = sorted(symbol_rank, key=symbol_rank.get, reverse=True)
        symbols = []
        for start in range(0, len(ranked), 500):  # other repositories' symbols are skipped
            part = ranked[start:start + 500]
            info = {s.symbol_id: s for s in self.store.symbols_by_id(part)}
            symbols += [(symbol_rank[sid], info[sid]) for sid in part
                        if sid in info and info[sid].file_id in files]
            if len(symbols) >= limit:
                break
        symbols = symbols[:limit]
        return {"files": [{"path": files[fid].path, "language": files[fid].language,
                           "rank": round(rank, 6)} for rank, fid in top_files],
                "symbols": [{"symbol": s.qualname, "kind": s.kind, "path": s.path,
                             "start_line": s.start_line, "rank": round(rank, 6)}
                            for rank, s in symbols]}

    def similar(self, location: str, limit: int = 10) -> list:
        """Code similar to the chunk at ``FILE:LINE`` (or the first chunk of FILE)."""
        path, _, line_text = location.rpartition(":")
        if not path or not line_text.isdigit():
            path, line_text = location, "1"
        return self.similar_at(self.relative(path), int(line_text), self.repo_id(), limit)

    def similar_at(self, path: str, line: int, repo_id: int | None = None,
                   limit: int = 10) -> list:
        """Code in other files similar to the innermost chunk covering ``path:line`` (a path
        as stored: relative to its repository root)."""
        self._require_index()
        stored = self.store.file_by_path(path, repo_id)
        if stored is None:
            raise FourfoldError(f"{path} is not in the index")
        covering = [c for c in self.store.chunks_of_file(stored.file_id)
                    if c.start_line <= line <= c.end_line]
        if not covering:
            raise FourfoldError(f"{path}:{line} is outside every chunk of that file")
        innermost = min(covering, key=lambda c: c.end_line - c.start_line)
        return self.semantic.similar(innermost.chunk_id, limit)

    def relative(self, path: str) -> str:
        """A user-given path (absolute, or relative to the cwd or the root) as stored."""
        candidate = Path(path)
        for base in (Path.cwd(), self.root):
            full = (base / candidate).resolve() if not candidate.is_absolute() else candidate
            for repo in self.store.repos(counts=False):
                try:
                    return full.relative_to(repo.root).as_posix()
                except ValueError:
                    continue
        return candidate.as_posix()

    def status(self) -> dict:
        repos = []
        for r in self.store.repos():
            repos.append({"root": r.root, "name": r.name, "indexed_at": r.indexed_at,
                          "files": r.files, "bytes": r.bytes, "chunks": r.chunks,
                          "symbols": r.symbols, "languages": r.languages})
        size = sum(p.stat().st_size for p in self.index_dir.glob(DB_NAME + "*"))
        modalities = {"text": "ready", "structural": "ready", "graph": "ready"}
        try:
            done, total = self.semantic.progress()
            modalities["semantic"] = ("ready" if done == total else "building") + \
                f" ({done}/{total} chunks embedded, model {self.semantic.embedder.name})"
        except ModalityUnavailable as exc:
            modalities["semantic"] = f"unavailable: {exc}"
        return {"index_dir": str(self.index_dir), "index_bytes": size, "repositories": repos,
                "modalities": modalities}

    def close(self) -> None:
        self.store.close()

    # -- shared by the interfaces (MCP, CLI, a web page) -----------------------------------
    @staticmethod
    def estimate_tokens(value: object) -> int:
        """The token estimate budgeted answers count in (about four characters a token)."""
        from .context import approx_tokens

        return approx_tokens(value)

    def generation(self) -> tuple:
        """A value that changes whenever a repository of this index is re-indexed."""
        return self.store.generation()

    def repository(self, spec: str | None) -> int | None:
        """The id of a repository named by name, root path or id (QueryError if none);
        None or "" means every repository of the index."""
        from .repositories import find_repository

        return find_repository(self.store.repos(counts=False), spec) if spec else None

    def repository_root(self, repo_id: int | None = None) -> tuple[int, Path]:
        """(id, resolved root) of a repository; None: the repository of this root."""
        wanted = self.repo_id() if repo_id is None else repo_id
        for repo in self.store.repos(counts=False):
            if repo.repo_id == wanted:
                return repo.repo_id, Path(repo.root).resolve()
        raise NotIndexedError(f"{self.root} is not indexed yet")

    def repositories(self, repo_id: int | None = None) -> list[dict]:
        """Every repository (or one): size, languages, checked-out branch, when indexed."""
        from .repositories import git_branch

        return [{"name": r.name, "root": r.root, "branch": git_branch(Path(r.root)),
                 "indexed_at": r.indexed_at, "files": r.files, "bytes": r.bytes,
                 "symbols": r.symbols, "chunks": r.chunks, "languages": r.languages}
                for r in self.store.repos() if repo_id is None or r.repo_id == repo_id]

    def modality_status(self) -> dict[str, str]:
        """Per modality: "ready", "building…" (answers use what is built so far) or
        "unavailable: why"."""
        out = {}
        for m in MODALITIES:
            retriever = self.engine.retrievers.get(m)
            if retriever is None:
                out[m] = "unavailable: not built in this index"
                continue
            try:
                out[m] = "ready" if retriever.ready() else "building"
                progress = getattr(retriever, "progress", None)
                if progress is not None:
                    done, total = progress()
                    if total and done < total:
                        out[m] = (f"building: {done}/{total} chunks embedded; answers use "
                                  "what is embedded so far")
            except Exception as exc:  # a modality that cannot even say is unavailable
                out[m] = f"unavailable: {exc}"
        return out

    def search_with_fallback(self, query: str, options: SearchOptions | None = None, **kw
                             ) -> tuple[SearchResponse, list[str]]:
        """search(), but when none of the asked modalities could answer (the semantic index
        still building) the ready ones answer instead; notes say what was left out."""
        options = options or SearchOptions(**kw)
        for m in [*(options.modalities or ()), *(options.weights or {})]:
            if m not in MODALITIES:
                raise QueryError(f"unknown modality {m!r}; use {', '.join(MODALITIES)}")
        notes: list[str] = []
        response = self.search(query, options)
        why = "; ".join(f"{m}: {r}" for m, r in response.unavailable.items())
        if response.unavailable and not response.hits:
            ready = [m for m, state in self.modality_status().items()
                     if state == "ready" and m != "graph"]
            fallback = [m for m in ready if m not in response.unavailable]
            if fallback and set(fallback) != set(response.modalities) | set(response.unavailable):
                notes.append(f"modalities not ready ({why}); answered from "
                             f"{', '.join(fallback)} instead")
                unavailable = dict(response.unavailable)
                response = self.search(query, replace(options, modalities=tuple(fallback),
                                                      weights=None))
                response.unavailable = {**unavailable, **response.unavailable}
        elif response.unavailable:
            notes.append(f"answered without {why}")
        return response, notes

    def file_text(self, path: str, repo_id: int | None = None) -> dict | None:
        """A file as indexed, {"path", "language", "lines"} (lines without line ends), by
        its stored path; None when it is not in the index."""
        self._require_index()
        stored = self.store.file_by_path(path, repo_id)
        if stored is None:
            return None
        lines = self.store.content(stored.file_id).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return {"path": stored.path, "language": stored.language,
                "lines": [line.rstrip("\r") for line in lines]}

    def file_outline(self, path: str, repo_id: int | None = None, kind: str | None = None
                     ) -> list[dict] | None:
        """The symbols of a file (stored path) in line order, each with its nesting depth;
        only those of `kind` (as kinds are named in queries) if given. None: not indexed."""
        from .query.filters import kinds_named

        self._require_index()
        allowed = kinds_named([kind]) if kind else None
        stored = self.store.file_by_path(path, repo_id)
        if stored is None:
            return None
        rows, depth = [], {}
        for s in self.store.symbols_of_file(stored.file_id):
            d = depth.get(s.parent, -1) + 1 if s.parent else 0
            depth.setdefault(s.qualname, d)
            if allowed is None or s.kind in allowed:
                rows.append({"name": s.name, "qualname": s.qualname, "kind": s.kind,
                             "start_line": s.start_line, "end_line": s.end_line, "depth": d,
                             "signature": s.signature})
        return rows


    def related(self, name: str, relation: str = "callers", repo_id: int | None = None,
                limit: int = 50, offset: int = 0) -> dict:
        """One step in the code graph from a symbol (or, for importers, a file or module):
        its callers, callees, importers or subclasses, paged, with notes."""
        self._require_index()
        if relation not in RELATIONS:
            raise QueryError(f"unknown relation {relation!r}; use {', '.join(RELATIONS)}")
        if relation in ("callers", "subclasses"):
            found = self.references(name, limit=ALL_ROWS, repo_id=repo_id)
            if relation == "subclasses":
                found["results"] = [r for r in found["results"] if r["kind"] == "inherit"]
        elif relation == "callees":
            found = self.callees(name, limit=ALL_ROWS, repo_id=repo_id)
        else:
            found = self.importers(name, limit=ALL_ROWS, repo_id=repo_id)
        rows = found["results"]
        return {"total": len(rows), "offset": offset, "results": rows[offset:offset + limit],
                "notes": list(found.get("notes", []))}

    def task_context(self, task: str, language: str | None = None,
                     path_glob: str | None = None, repo_id: int | None = None,
                     include_neighbours: bool = True):
        """The code relevant to a task, ranked (search hits and their graph neighbours), as
        a context.TaskContext whose pack() fills a token budget."""
        from .context import task_context

        self._require_index()
        return task_context(self, task, (language,) if language else (), path_glob, repo_id,
                            include_neighbours)

    def watch_changes(self, stop: threading.Event | None = None, debounce_ms: int = 400,
                      step_ms: int = 50):
        """Each debounced batch of file changes under root (the index folder's own writes
        left out) until `stop` is set; unlike watch(), indexing them is left to the caller."""
        from .discovery.watch import watch_changes

        return watch_changes(self.root, self.index_dir, stop, debounce_ms, step_ms)

    # -- navigation: files, symbols by kind, grep context, similar code ------------------
    def list_files(self, glob: str | None = None, name: str | None = None,
                   languages=(), repo_id: int | None = None) -> list[dict]:
        """The indexed files in path order, each {"path", "language", "size"} (bytes; plus
        "repository" when the index serves several): only those under `glob`, whose file
        name contains `name` (case-insensitive), of `languages` (an unknown one raises
        QueryError), of one repository (`repo_id`) or all."""
        self._require_index()
        return navigation.list_files(self.store, glob, name, languages, repo_id)

    def line_count(self, path: str, repo_id: int | None = None) -> int | None:
        """How many lines a file (stored path) has as indexed; None: not in the index."""
        stored = self.store.file_by_path(path, repo_id)
        if stored is None:
            return None
        text = self.store.content(stored.file_id)
        return text.count("\n") + (1 if text and not text.endswith("\n") else 0)

    def symbols(self, kind: str, path_glob: str | None = None, repo_id: int | None = None
                ) -> list[dict]:
        """Every definition of a kind (as kinds are named in queries; an unknown one raises
        QueryError), with no name needed, in path and line order, optionally only under
        `path_glob` and in one repository."""
        self._require_index()
        return navigation.symbols(self.store, kind, path_glob, repo_id)

    def with_context(self, matches, context: int) -> list[dict]:
        """grep() matches as dicts {"path", "line", "text", "before", "after"}: the up to
        `context` (0-10) lines before and after each, as {"line", "text"} (like grep -C)."""
        return navigation.with_context(self.store, matches, context)

    def similar_code(self, path: str, line: int, repo_id: int | None = None, limit: int = 10,
                     code_lines: int = 5) -> dict:
        """similar_at() with each chunk's first `code_lines` lines ("code": list of
        {"line", "text"}) and an honest count: {"total": chunks found, "capped": whether
        more than `limit` exist (then total is a lower bound), "results"}."""
        hits = self.similar_at(path, line, repo_id, limit + 1)
        capped = len(hits) > limit
        hits = hits[:limit]
        texts: dict[str, list[str]] = {}
        results = []
        for h in hits:
            if h.path not in texts:
                stored = self.file_text(h.path, repo_id)
                texts[h.path] = stored["lines"] if stored else []
            lines = texts[h.path]
            stop = min(h.end_line, h.start_line + max(0, code_lines) - 1, len(lines))
            results.append({"path": h.path, "start_line": h.start_line, "end_line": h.end_line,
                            "symbol": h.symbol, "score": round(h.score, 4),
                            "code": [{"line": n, "text": lines[n - 1]}
                                     for n in range(max(1, h.start_line), stop + 1)]})
        return {"total": len(results), "capped": capped, "results": results}
