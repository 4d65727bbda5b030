"""Python API: the same operations as the CLI and the MCP server, as library calls.

    from fourfold import Fourfold
    ff = Fourfold.open("path/to/repo")      # index folder: path/to/repo/.fourfold
    ff.index()                               # incremental
    ff.search("where is parseConfig defined").hits
    ff.grep("ECONNREFUSED")
"""
from __future__ import annotations

import functools
import inspect
import os
import threading
import time
from dataclasses import replace
from functools import cached_property, partial
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

from .discovery.walk import DEFAULT_MAX_FILE_BYTES
from .discovery.watch import STEP_MS
from .errors import (FourfoldError, IndexBusyError, IndexWriteError, ModalityUnavailable,
                     NotIndexedError, QueryError)
from .store import open_server_store, redacted
from .query.model import GREP_TIME_BUDGET, check_limit, check_text
from .retrievers.grep_pool import GrepPool
from .ranking.granularity import GRANULARITIES
from .semantic.names import check_model_name
from .routing.options import RANKINGS, SearchOptions, SearchResponse
from .routing.profiles import MODALITIES, PRESETS, PROFILES, parse_weights
from .store.base import (codes_behind, codes_owed_setting, codes_taken_setting,
                         deep_codes_setting, graph_version_setting, max_file_bytes_setting,
                         unfinished_note)
from .store.index_dir import (DB_NAME, IndexLock, Readers, identity, indexer_at_work,
                              no_readers, prepare_index_dir, remove_database)
from .store.snapshot import Snapshots
from .store.sqlite import SQLiteStore

from .access import Grant

if TYPE_CHECKING:
    from .indexer import IndexSummary, Progress
    from .retrievers.graph import GraphRetriever
    from .retrievers.structural import StructuralRetriever
    from .retrievers.text import ResultList, TextRetriever
    from .routing.engine import SearchEngine
    from .store.base import RepoInfo, Store
    from .retrievers.semantic import SemanticRetriever
    from .semantic.embedder import Embedder

# What the interfaces need besides Fourfold itself: they import this module only.
__all__ = ["Fourfold", "GRANULARITIES", "GREP_TIME_BUDGET", "MODALITIES", "PRESETS", "PROFILES",
           "RANKINGS", "SearchOptions", "SearchResponse", "find_index_root", "parse_weights"]

INDEX_DIR_NAME = ".fourfold"
MOST_FILE_BYTES = 1 << 40  # max_file_bytes at most (a typo, not a file's size)
RELATIONS = ("callers", "callees", "importers", "imports", "subclasses")  # related()'s step
COORDINATOR = "coordinator"  # place_repository()'s name for the store's own server
ALL_ROWS = 1 << 40  # a page size meaning every row (graph queries page their answers)
CATCH_UP_POLL_S = 0.01  # how often catch_up() looks for a change that comes first
# The deep pass's model: about 50 chunks a second on two cores against the static model's
# thousands, so it runs after the index is complete; where it has coded a repository, the
# semantic modality answers with it (docs/benchmarks.md, "A deep semantic pass").
DEEP_EMBEDDER = "minilm"


def _repositories_named(repositories) -> list:
    """Repositories a caller named: one (a name, root or id) or several."""
    if repositories is None:
        return []
    if isinstance(repositories, (str, int)):
        return [repositories]
    try:
        return list(repositories)
    except TypeError:  # not a name: find_repository says so
        return [repositories]


def _repository_facts(r: "RepoInfo") -> dict:
    """What status() and repositories() say of a repository."""
    return {"id": r.repo_id, "root": r.root, "name": r.name, "indexed_at": r.indexed_at,
            "files": r.files, "bytes": r.bytes, "chunks": r.chunks, "symbols": r.symbols,
            "languages": r.languages, **({"shard": r.shard} if r.shard else {}),
            **({"unreachable": r.unreachable} if r.unreachable else {}),
            **({"removing": True} if r.removing else {})}


def _search_options(options: SearchOptions | None, fields: dict) -> SearchOptions:
    """A search's options, given as a SearchOptions or as its fields, not both (the
    fields beside one were dropped)."""
    if options is not None and fields:
        raise QueryError(f"give the search's options as a SearchOptions or as its fields, "
                         f"not both (here also {', '.join(sorted(fields))})")
    if options is None:
        try:
            return SearchOptions(**fields)
        except TypeError as exc:  # a misspelt field
            raise QueryError(f"{exc}; the options are SearchOptions' fields") from None
    if not isinstance(options, SearchOptions):
        raise QueryError(f"options must be a SearchOptions, not {type(options).__name__}")
    return options


def _file_bytes_bound(value: object) -> bool:
    """Whether `value` can bound the size of the files indexed."""
    return isinstance(value, int) and not isinstance(value, bool) \
        and 1 <= value <= MOST_FILE_BYTES


def holds_index(index_dir: str | os.PathLike) -> bool:
    """Whether a folder holds an embedded index."""
    return (Path(index_dir) / DB_NAME).is_file()


def find_index_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` with an index of its own (to find the
    repository a file belongs to)."""
    for folder in (start, *start.parents):
        if holds_index(folder / INDEX_DIR_NAME):
            return folder
    return None


def _in_its_repository(method):
    """Run a query asking for another repository of the index (`repo_id`) on the object
    serving that one: retrievers, snapshots and embeddings are kept per repository."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        repo_id = signature.bind(self, *args, **kwargs).arguments.get("repo_id")
        return method(self._view(repo_id), *args, **kwargs)
    return run


class Fourfold:
    """One index, serving one or more repositories.

    Embedded (the default): the index lives in ROOT/.fourfold unless `index_dir` names
    another folder; an index found in a folder above ROOT is not used, so that what is
    served stays inside ROOT. `rebuild=True` discards the index database first (a damaged
    one included).

    On a server (`store_url`, postgresql://…): many repositories share one database; this
    object indexes and answers for the repository named `repository` (by default ROOT's
    folder name). ROOT is needed only to index."""

    def __init__(self, root: str | os.PathLike | None = None,
                 index_dir: str | os.PathLike | None = None,
                 max_file_bytes: int | None = None, embedder: str = "default",
                 rebuild: bool = False, store_url: str | None = None,
                 repository: str | None = None,
                 deep_embedder: str | None = DEEP_EMBEDDER):
        self.root = Path(root).resolve() if root is not None else None
        if self.root is not None and not self.root.is_dir():
            raise FourfoldError(f"{root}: no such folder")
        if self.root is not None and self.root == Path(self.root.anchor):
            raise FourfoldError(f"{root} is the file system's root, not a project: name "
                                "the folder of the code to index")
        _utf8_path(self.root, "rename the folder")
        self.store_url = store_url
        self.repository_name = repository or (self.root.name if self.root else None)
        self._named = repository is not None
        self._served_id: int | None = None  # repo_id(), once found
        for model in (embedder, deep_embedder):
            if model is not None:
                check_model_name(model)
        if max_file_bytes is not None and not _file_bytes_bound(max_file_bytes):
            raise QueryError(f"max_file_bytes must be a whole number from 1 to "
                             f"{MOST_FILE_BYTES:,}, not {max_file_bytes!r}")
        self.embedder_name = embedder
        self.deep_embedder_name = deep_embedder
        self.deep_threads = 2  # the deep pass's threads (a server gives it one)
        self.notes: list[str] = []  # what opening the index had to do, for the user to read
        if store_url is not None:
            if index_dir is not None or rebuild:
                raise FourfoldError("--index-dir and --rebuild are for the embedded index; "
                                    "a --store server keeps its own")
            self.index_dir = None
            self.store = open_server_store(store_url)
        else:
            if self.root is None:
                raise FourfoldError("give the folder whose embedded index to use, or --store")
            self.index_dir = (Path(index_dir).resolve() if index_dir
                              else self.root / INDEX_DIR_NAME)
            _utf8_path(self.index_dir, "keep the index elsewhere with --index-dir")
            prepare_index_dir(self.index_dir, self.root)
            if rebuild:  # asked for: not under a process that has the index open
                with no_readers(self.index_dir):
                    self._discard_database()
            self.store = self._open_store()
            self._readers = Readers(self.index_dir)
        remembered = self.store.setting(max_file_bytes_setting(str(self.root)),
                                        DEFAULT_MAX_FILE_BYTES)
        # a value remembered before it was checked (a negative one skipped every file)
        self.max_file_bytes = max_file_bytes or (
            remembered if _file_bytes_bound(remembered) else DEFAULT_MAX_FILE_BYTES)
        self.snapshots = Snapshots(self.store, lambda: self._in(None))
        # the workers of big greps: one set for the store, whichever repository asks
        self._grep_pool = GrepPool(self.store.address())

    @property
    def location(self) -> str:
        """Where the index is, as a person reads it (a server's password left out)."""
        return str(self.index_dir) if self.store_url is None else redacted(self.store_url)

    def indexing_lock(self, wait_s: float = 0.0) -> AbstractContextManager:
        """Held while indexing: one indexer per index folder, or per repository on a server;
        another waits up to `wait_s`, then gets IndexBusyError."""
        return self.store.indexing_lock(self.repository_name, wait_s)

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
              embed: bool = True, wait_s: float = 0.0, verify: bool = False,
              changed: Iterable[str] | None = None, graph_later: bool = False
              ) -> IndexSummary:
        """Update text, structure and graph (committed first) and embed new chunks (with
        a cheap model while a big repository's graph is resolved, else after it). While
        another process indexes the same folder, wait up to `wait_s` for it, then raise
        IndexBusyError. `verify=True` re-reads every file, whatever its size and times say,
        and checks the word index's files (made again where one is damaged).
        `changed`: the absolute paths a watcher saw change, the only ones looked at where
        that is enough; `graph_later`: leave the graph (and the retaking of binary codes,
        and a server's tidying of its word lists) to catch_up(), so that the files answer
        as soon as they are written."""
        from .indexer import index_repository  # parsers: loaded when something is indexed

        if self.root is None:
            raise FourfoldError("give the folder to index")
        if self._named and self.store_url is None:
            self._refuse_another_name()
        self._served_id = None  # looked up again: it may have been removed meanwhile
        # A cheap model embeds while a big repository's graph is resolved (another may take
        # longer than the graph, and embeds after it), and in the parser processes where
        # the index holds none of its vectors yet. Later runs embed after parsing, only the
        # chunks whose text has no vector yet (a changed file keeps most of its chunks).
        from .semantic.names import embeds_while_parsing

        cheap = embed and embeds_while_parsing(self.embedder_name)
        summary = index_repository(
            self.store, self.root, self.indexing_lock(wait_s), name=self.repository_name,
            skip_dirs=(str(self.index_dir),) if self.index_dir else (),
            max_file_bytes=self.max_file_bytes, workers=workers, progress=progress,
            verify=verify, changed=changed, graph_later=graph_later,
            embedder=self._parsers_embedder if cheap and changed is None else None,
            after_files=partial(self.embed, progress) if cheap else None)
        self.store.set_setting(max_file_bytes_setting(str(self.root)), self.max_file_bytes)
        if embed and not cheap:
            self.embed(progress, summary)
        return summary

    def _refuse_another_name(self) -> None:
        """An embedded index holds a folder once, under one name: asked for by another, it
        is refused (indexing it under that name would change nothing)."""
        held = next((r for r in self.store.repos(counts=False) if Path(r.root) == self.root),
                    None)
        if held is not None and held.name != self.repository_name:
            raise FourfoldError(
                f"{self.root} is indexed in {self.location} as {held.name!r}: ask for it by "
                f"that name (--repository {held.name}), or take it out (`fourfold remove "
                f"{held.name} --index-dir {self.location}`) and index it again as "
                f"{self.repository_name!r}")

    def _parsers_embedder(self, source_bytes: int) -> "Embedder | None":
        """The cheap model for the parser processes where the index holds none of its
        vectors yet (a first index; loaded before they start, for `source_bytes` of
        source each); None where it holds some, or the model cannot be loaded (embed()
        says why)."""
        from .semantic.model_files import stored_name

        try:
            if self.store.vector_count(stored_name(self.embedder_name)):
                return None
            embedder = self.semantic.embedder
        except ModalityUnavailable:
            return None
        load_vectors = getattr(embedder, "load_vectors", None)  # a static model's
        if load_vectors is not None:
            load_vectors(source_bytes)
        return embedder

    def _indexing_embedder(self) -> "Embedder":
        """The model chunks are embedded with while indexing; a bundled one is loaded at
        its first embedding, so that a run whose chunks all have vectors stored (a fresh
        checkout into an index holding the first, a tree that did not change) never loads
        it. Its files are looked for all the same: a missing one raises as loading would."""
        from .semantic.indexing import Deferred
        from .semantic.model_files import check_files, stored_name
        from .semantic.names import is_remote

        if is_remote(self.embedder_name):
            return self.semantic.embedder
        check_files(self.embedder_name)
        return Deferred(stored_name(self.embedder_name), lambda: self.semantic.embedder)

    def embed(self, progress: Progress | None = None, summary: IndexSummary | None = None
              ) -> int:
        """Embed every chunk that has no vector yet (cached by content; never twice), then
        give the changed files' chunks binary codes (a watcher's run, against the held mean)
        or take this repository's codes anew if its chunks changed (`summary`: the index
        run just made; None: assume they did, and take every code; a mark of codes owed is
        cleared only by the run it names)."""
        from .semantic.indexing import add_codes, embed_pending, refresh_codes

        started = time.perf_counter()
        repo_id = self.repo_id()
        # owed by this run: every code where it took over the mark of a run whose codes
        # were not taken since (stopped, or still taking them; see codes_owed_setting)
        every = summary is None or bool(
            summary.took_over and repo_id is not None and summary.took_over
            != self.store.setting(codes_taken_setting(repo_id), 0))
        # a run over a watcher's paths: only the chunks of those files
        within = (self._chunk_ids(summary.changed_paths, repo_id)
                  if not every and summary.changed_paths is not None
                  and repo_id is not None else None)
        try:
            embedder = self._indexing_embedder()
            model = embedder.name
            count = embed_pending(self.store, embedder, progress=progress, within=within)
        except ModalityUnavailable as exc:
            if summary is not None:
                summary.skipped[f"semantic unavailable: {exc}"] = 1
            return 0
        owed = self.store.setting(codes_owed_setting(repo_id), 0) if repo_id is not None else 0
        changed = (every or owed != 0 or count or summary.added or summary.changed
                   or summary.deleted)
        if repo_id is not None and (changed or self.store.code_mean(repo_id, model) is None):
            # a few files' chunks coded against the held mean; or a twin's codes (see
            # IndexSummary.twin) copied; or every code taken anew
            if every or not (within is not None and add_codes(
                    self.store, model, repo_id, within, removed=summary.deleted_chunks)):
                if not (summary is not None and summary.twin is not None
                        and self.store.copy_codes(summary.twin, repo_id, model)):
                    refresh_codes(self.store, model, repo_id)
            if summary is not None and not self.store.clear_setting(
                    codes_owed_setting(repo_id), summary.run) and self.store.setting(
                    codes_owed_setting(repo_id), 0):
                # another run took this one's mark over: it learns these codes are taken
                self.store.set_setting(codes_taken_setting(repo_id), summary.run)
        if summary is not None:
            summary.embedded += count
            summary.embed_seconds = time.perf_counter() - started
        return count

    def deepen(self, progress: Progress | None = None,
               interrupted: threading.Event | None = None, wait_s: float = 0.0) -> int:
        """The deep pass: embed this repository's chunks that have no vector of the deep
        model yet (cached by content, as every vector is), then take the repository's codes
        of that model; from then on the semantic modality answers with it, until an index
        run writes chunks (the next pass codes them). The model reads about 50 chunks a
        second on two cores, hence a pass of its own after the index is complete. Given up
        between batches once `interrupted` is set (what it embedded is kept for the next
        pass). The codes are taken under the index lock (`wait_s` as index()'s), so that no
        index run or removal of the repository comes between. Returns how many chunks it
        embedded."""
        from .semantic.indexing import DEEP_BATCH, embed_pending, refresh_codes

        repo_id, name = self.repo_id(), self.semantic.deep_model()
        if name is None or repo_id is None:
            return 0
        deep = self._deep_pass_model
        count = 0
        while not (interrupted is not None and interrupted.is_set()):
            chunks = self.store.repos(only=[repo_id])
            if not chunks or chunks[0].removing:
                break
            count += embed_pending(self.store, deep, progress=progress, repo_id=repo_id,
                                   total=chunks[0].chunks, interrupted=interrupted,
                                   stage="deep", batch=DEEP_BATCH)
            if interrupted is not None and interrupted.is_set():
                break
            with self.indexing_lock(wait_s):
                left = self.store.repos(counts=False, only=[repo_id])
                if not left or left[0].removing or not left[0].indexed_at:
                    break  # taken out (or being) meanwhile
                if self.store.chunks_missing_vectors(name, 1, repo_id=repo_id):
                    continue  # an index run wrote chunks meanwhile: embed them first
                ready = deep_codes_setting(repo_id, name)
                if count or not self.store.setting(ready, 0):
                    refresh_codes(self.store, name, repo_id)
                    self.store.set_setting(ready, 1)
                break
        return count

    @cached_property
    def _deep_pass_model(self) -> "Embedder":
        """The deep pass's model, its own: questions asked meanwhile do not wait for its
        batches."""
        from .semantic.embedder import load_embedder

        return load_embedder(self.deep_embedder_name, threads=self.deep_threads, shared=False)

    def _deepened(self) -> bool:
        """Whether a deep pass has made this repository's codes before (an edit since may
        have left chunks without one)."""
        repo_id, name = self.repo_id(), self.semantic.deep_model()
        return (repo_id is not None and name is not None
                and self.store.code_mean(repo_id, name) is not None)

    def _deep_pass_note(self) -> str:
        """What status says of the deep pass: whether its model answers, and if not, why."""
        semantic = self.semantic
        answering = semantic.answering(self.repo_id()).name
        if answering != semantic.embedder.name:
            return f"; answered by the deep pass's model, {answering}"
        if semantic.deep_failure:
            return (f"; the deep pass's model, {semantic.deep_model()}, cannot be loaded here "
                    f"({semantic.deep_failure}): model {semantic.embedder.name} answers")
        if self._deepened():
            return (f"; the deep pass's model, {semantic.deep_model()}, answers again once a "
                    "pass has coded the chunks written since")
        return ""

    def _chunk_ids(self, paths: list[str], repo_id: int) -> list[int]:
        files = (self.store.file_by_path(path, repo_id) for path in paths)
        return [c.chunk_id for f in files if f is not None
                for c in self.store.chunks_of_file(f.file_id)]

    def first_index_note(self) -> str | None:
        """Where another process still writes this repository's first index: what answers
        miss meanwhile (they use the files written so far); None once it is complete."""
        return self.text.incomplete()

    def behind(self) -> dict[str, bool]:
        """What index runs with `graph_later` left for catch_up(): the graph, and the binary
        codes once more chunks were coded against an older mean of the repository's vectors
        than semantic.indexing.CODES_RETAKE_SHARE allows."""
        repo_id = self.repo_id()
        if repo_id is None:
            return {"graph": False, "codes": False}
        return {"graph": self.graph.behind(),
                "codes": codes_behind(self.store, repo_id, self._embedder_name())}

    def _embedder_name(self) -> str:
        try:
            return self.semantic.embedder.name
        except ModalityUnavailable:
            return ""

    def catch_up(self, wait_s: float = 0.0, interrupted: threading.Event | None = None
                 ) -> bool:
        """Do what index runs with `graph_later` left: resolve the graph, take the binary
        codes anew. In a child process where there can be one, given up (its writes rolled
        back) as soon as `interrupted` is set: returns False then, else True."""
        behind = self.behind()
        if not any(behind.values()):
            return True
        if interrupted is not None and interrupted.is_set():
            return False
        repo_id, model = self.repo_id(), self._embedder_name()
        if not self._caught_up(repo_id, model, behind["codes"], wait_s, interrupted):
            return False
        # Where this process holds a graph (an MCP server that answered a graph question),
        # the new one is read now, outside the index lock, rather than by the next question
        # (seconds on a big repository); not when a change is waiting.
        if not (interrupted is not None and interrupted.is_set()):
            self.graph.read_again()
        return True

    def _caught_up(self, repo_id: int, model: str, codes: bool, wait_s: float,
                   interrupted: threading.Event | None) -> bool:
        """catch_up()'s work under the index lock: False where it was given up."""
        from .graph.forked import Spawned

        with self.indexing_lock(wait_s):
            db_path = None if self.store_url else str(self.index_dir / DB_NAME)
            child = Spawned.start(_catch_up_elsewhere, self.store_url, db_path, repo_id, model,
                                  codes)
            if child is not None:
                try:
                    while not child.finished(CATCH_UP_POLL_S):
                        if interrupted is not None and interrupted.is_set():
                            child.close(wait=False)  # the change need not wait for its end
                            return False
                    done = child.result(False)
                except BaseException:
                    child.close()  # the child ignores Ctrl-C: its parent stops it
                    raise
                if done:
                    return True
            # no child could be had, or it died: here, where a failure is seen
            return _catch_up(self.store, repo_id, model, codes)

    def watch(self, on_index: Callable[[IndexSummary], None] | None = None,
              stop: threading.Event | None = None, embed: bool = True,
              debounce_ms: int = 400, busy_wait_s: float = 30.0, deep: bool = False) -> None:
        """Keep the index fresh: index now, then after every debounced batch of file changes
        index the changed files (text, structure, vectors; the graph and binary codes
        catch up while nothing changes, then the deep pass where `deep` or where one has
        made the repository's codes before), until `stop` is set (Ctrl-C raises
        KeyboardInterrupt, as anywhere, the watches closed first). `on_index` gets
        each run's summary. While another process indexes this folder, the run waits for
        it (up to busy_wait_s). Files are watched from the start (in a thread), so a
        change made while a run indexes is not missed: setting up the watches of a big
        tree takes seconds."""
        stop = stop or threading.Event()
        changed = threading.Event()
        failures: list[BaseException] = []
        seen: set[str] = set()  # paths changed since the last run took them
        seen_lock = threading.Lock()

        def note_changes() -> None:
            try:
                for changes in self.watch_changes(stop, debounce_ms):
                    with seen_lock:
                        seen.update(path for _, path in changes)
                    changed.set()
            except BaseException as exc:  # raised again by the loop below
                failures.append(exc)
            finally:
                stop.set()
                changed.set()

        watcher = threading.Thread(target=note_changes, name="fourfold-watch", daemon=True)
        watcher.start()
        paths: set[str] | None = None  # the first run walks the whole tree
        try:
            while True:
                summary = self.index(embed=embed, wait_s=busy_wait_s, changed=paths,
                                     graph_later=paths is not None)
                if on_index:
                    on_index(summary)
                # the graph and codes catch up while nothing changes; a change first
                while not changed.is_set() and not self.catch_up(busy_wait_s, changed):
                    pass
                if embed and not changed.is_set() and (deep or self._deepened()):
                    try:
                        self.deepen(interrupted=changed, wait_s=busy_wait_s)
                    except (ModalityUnavailable, IndexBusyError):
                        pass  # no deep model here, or another indexer: after the next run
                changed.wait()
                changed.clear()
                if failures:
                    raise failures[0]
                if stop.is_set():
                    return
                with seen_lock:
                    paths = set(seen)
                    seen.clear()
        finally:
            stop.set()
            watcher.join(timeout=2)

    def is_indexed(self) -> bool:
        """Whether the repository this object serves has been indexed (completely once)."""
        return self.repo_id() is not None

    def ensure_indexed(self, progress: Progress | None = None) -> IndexSummary | None:
        """Index on first use, or finish a first index that stopped (or mend a text word
        index found missing); later calls reuse the index as it is. While another process
        writes the first index, what it has written answers (the answers say so). Never into
        a server store: a mistyped --repository would write whatever folder the caller is
        in into the team's index (the question then says the repository is not indexed)."""
        if self.store_url is not None:
            return None
        repo_id = self.repo_id()
        if repo_id is None:
            return self.index(progress)
        # a first index stopped while its graph was resolved: no graph was ever written
        graph_never_made = (self.graph.behind()
                            and not self.store.setting(graph_version_setting(repo_id), 0))
        if (unfinished_note(self.store, repo_id) or self.store.text_index_fault()
                or graph_never_made):
            try:
                return self.index(progress)
            except (IndexBusyError, IndexWriteError):  # what is written answers meanwhile
                return None
        return None

    def repo_id(self) -> int | None:
        """The indexed repository this object serves: the one named (always so on a
        server), else the one of root (None: not indexed yet). Every query asks it, and once
        indexed a repository keeps its id: it is looked up until found, then remembered."""
        if self._served_id is not None:
            return self._served_id
        by_name = self.store_url is not None or self._named
        found = [repo for repo in self.store.repos(counts=False)
                 if repo.indexed_at and (repo.name == self.repository_name if by_name
                                         else Path(repo.root) == self.root)]
        # an embedded index written before its names were unique may hold one twice
        found.sort(key=lambda repo: Path(repo.root) != self.root)
        if found:
            self._served_id = found[0].repo_id
            return self._served_id
        return None

    def _in(self, repo_id: int | None) -> int | None:
        """The repository a query runs in: the one asked for, else the one this object
        serves. A query runs in one repository, where a path names one file;
        search_repositories() asks several."""
        return repo_id if repo_id is not None else self.repo_id()

    def _require_index(self, repo_id: int | None = None) -> None:
        """Raise NotIndexedError unless the repository asked for (default: the one this
        object serves) has been indexed."""
        indexed_at = dict(self.store.generation())  # repository id -> when (None: not yet)
        for gone in set(self.__dict__.get("_views", ())) - set(indexed_at):
            self._let_go(gone)  # taken out of the index (remove_repositories) meanwhile
        if repo_id is not None:
            if indexed_at.get(repo_id):
                return
            self._let_go(repo_id)  # removed, or never indexed
            if isinstance(repo_id, bool) or not isinstance(repo_id, int) \
                    or repo_id not in indexed_at:
                raise QueryError(f"no repository with id {repo_id!r} in {self.location} "
                                 "(`status` lists them)")
        served = self._served_id
        if repo_id is None and served is not None:
            if indexed_at.get(served):
                return
            self._let_go(served)  # taken out meanwhile
        if repo_id is None and self.is_indexed():
            return
        if self.store_url is None and not self._named:
            indexer = indexer_at_work(self.index_dir)
            if indexer is not None:
                raise NotIndexedError(f"{self.root} is being indexed (process {indexer}); "
                                      "ask again in a few seconds, once its first files are "
                                      "written")
            raise NotIndexedError(f"{self.root} is not indexed yet; run `fourfold index "
                                  f"{self.root}` first")
        known = ", ".join(self.repository_names()) or "none yet"
        raise NotIndexedError(
            f"repository {self.repository_name!r} is not indexed in {self.location} (indexed "
            f"there: {known}); index it with `fourfold index PATH --repository NAME` and the "
            "same --store or --index-dir")

    # -- retrievers (imported as a search needs them: an index run reads none) -----------
    @cached_property
    def text(self) -> TextRetriever:
        from .retrievers.text import TextRetriever

        return TextRetriever(self.store, self.snapshots, self._grep_pool)

    @cached_property
    def structural(self) -> StructuralRetriever:
        from .retrievers.structural import StructuralRetriever

        return StructuralRetriever(self.store, self.snapshots)

    @cached_property
    def semantic(self) -> SemanticRetriever:
        from .retrievers.semantic import SemanticRetriever  # numpy: when a search needs it
        from .semantic.embedder import load_embedder

        return SemanticRetriever(self.store, lambda: load_embedder(self.embedder_name),
                                 lambda: self._in(None), self._load_deep_embedder,
                                 self._deep_model_name)

    def _load_deep_embedder(self) -> "Embedder":
        from .semantic.embedder import load_embedder

        return load_embedder(self.deep_embedder_name)

    def _deep_model_name(self) -> str | None:
        """The name the deep pass's vectors are stored under; None without a deep pass or
        where its model cannot be found (the indexing model answers then)."""
        from .semantic.model_files import stored_name

        if self.deep_embedder_name is None:
            return None
        try:
            return stored_name(self.deep_embedder_name)
        except ModalityUnavailable:
            return None

    @cached_property
    def graph(self) -> GraphRetriever:
        from .retrievers.graph import GraphRetriever

        return GraphRetriever(self.store, self.structural, lambda: self._in(None))

    @cached_property
    def engine(self) -> SearchEngine:
        from .routing.engine import SearchEngine

        retrievers = {"text": self.text, "structural": self.structural, "graph": self.graph,
                      "semantic": self.semantic}
        return SearchEngine(retrievers, self.snapshots.current)

    # -- queries --------------------------------------------------------------------------
    def search(self, query: str, options: SearchOptions | None = None, **kw) -> SearchResponse:
        """Answer a question in plain words: classify it (intent, target), run the modalities
        it deserves, keep only what the filters allow (`path_glob`, `languages`, `kinds`,
        `repo_id`; an unknown language or kind raises QueryError), fuse and rank. Options
        come as a SearchOptions or as its fields (`ff.search(q, languages=("go",))`)."""
        options = _search_options(options, kw)
        view = self._view(options.repo_id)
        if view is not self:
            return view.search(query, options)
        self._require_index(options.repo_id)
        if options.repo_id is None:
            options = replace(options, repo_id=self._in(None))
        return self.engine.search(query, options)

    def search_repositories(self, query: str, repositories: list[str] | None = None,
                            options: SearchOptions | None = None, **kw) -> SearchResponse:
        """search() over several repositories of the index (`repositories`: one or several
        names, roots or ids; None: all). The question first narrows them to the few likely
        to hold the answer (choose_repositories); each of those answers on its own, and
        their hits, each naming its repository, are merged by score. The response says
        which repositories were searched, which skipped, and which could not be searched
        (their shard does not answer), with why."""
        from .repositories import choose_repositories

        options = _search_options(options, kw)
        indexed = [r for r in self.store.repos(counts=False) if r.indexed_at]
        named = _repositories_named(repositories)
        if named:
            asked = {self.repository(spec) for spec in named}
            indexed = [r for r in indexed if r.repo_id in asked]
        if not indexed:
            raise NotIndexedError(f"nothing is indexed in {self.location} yet")
        down = self.store.unreachable_repositories()
        unavailable = {r.name: down[r.repo_id] for r in indexed if r.repo_id in down}
        indexed = [r for r in indexed if r.repo_id not in down]
        if not indexed:
            raise FourfoldError("no repository asked for can be searched now: " + "; ".join(
                f"{name}: {why}" for name, why in unavailable.items()))
        choice = choose_repositories(self.store, indexed, query, self._repo_of_file())
        responses = []
        best = max(choice.evidence.values(), default=0.0)
        for repo in choice.searched:
            response = self._view(repo.repo_id).search(
                query, replace(options, repo_id=repo.repo_id))
            # each repository ranks its own hits; across them, a hit counts in proportion
            # to how strongly the question points at its repository
            share = choice.evidence.get(repo.repo_id, 0.0) / best if best > 0 else 1.0
            for hit in response.hits:
                hit.repository = repo.name
                hit.score *= share
            responses.append(response)
        merged = replace(responses[0], hits=sorted(
            (h for r in responses for h in r.hits), key=lambda h: -h.score)[:options.limit])
        merged.modalities = sorted({m for r in responses for m in r.modalities})
        merged.unavailable = {m: why for r in responses for m, why in r.unavailable.items()}
        merged.timings_ms = {"total": sum(r.timings_ms.get("total", 0.0) for r in responses)}
        merged.repositories_searched = [r.name for r in choice.searched]
        merged.repositories_skipped = [r.name for r in choice.skipped]
        merged.repositories_unavailable = unavailable
        return merged

    def in_repository(self, name: str) -> "Fourfold":
        """This index serving another of its repositories, named by name, root or id."""
        return self._view(self.repository(name))

    def _view(self, repo_id: int | None) -> "Fourfold":
        """The object serving repository `repo_id` of this index (None: this one): one
        object per repository, sharing this one's store (and, through the process cache,
        its embedding model)."""
        if repo_id is None or repo_id == self.repo_id():
            return self
        views = self.__dict__.setdefault("_views", {})
        view = views.get(repo_id)
        if view is None:
            view = object.__new__(Fourfold)
            # the views are one dict, shared: any of them lets go of a removed one
            view.__dict__.update({k: v for k, v in self.__dict__.items()
                                  if k in ("root", "store_url", "embedder_name",
                                           "deep_embedder_name", "deep_threads", "index_dir",
                                           "store", "max_file_bytes", "_grep_pool", "_views")})
            view.notes, view._named = [], True
            view.repository_name = self.repository_name_of(repo_id)
            view._served_id = repo_id
            view.snapshots = Snapshots(view.store, lambda: view._in(None))
            views[repo_id] = view
        return view

    def _let_go(self, repo_id: int) -> None:
        """Forget a repository that is not (or no longer) in the index: its view, and what
        the store holds of it in this process."""
        self.__dict__.get("_views", {}).pop(repo_id, None)
        self.store.forget_repository(repo_id)
        if repo_id == self._served_id:
            self._served_id = None

    def _repo_of_file(self) -> dict[int, int]:
        """file id -> repository id, for this generation of the index."""
        generation = self.store.generation()
        cached = self.__dict__.get("_file_repos")
        if cached is None or cached[0] != generation:
            cached = (generation, {f.file_id: f.repo_id for f in self.store.files()})
            self.__dict__["_file_repos"] = cached
        return cached[1]

    def grep(self, pattern: str, regex: bool = False, case_sensitive: bool = False,
             whole_word: bool = False, path_glob: str | None = None,
             limit: int | None = None, time_budget: float | None = None,
             repo_id: int | None = None) -> ResultList:
        """The matching lines (LineMatch), in path and line order, in repository `repo_id`
        (default: the one this object serves); `.partial` is true when scanning stopped
        after `time_budget` seconds (default: the text modality's time_budget) with files
        left unread."""
        self._require_index(repo_id)
        if limit is not None:
            check_limit(limit, most=None)
        return self.text.grep(pattern, regex=regex, case_sensitive=case_sensitive,
                              whole_word=whole_word, path_glob=path_glob, repo_id=self._in(repo_id),
                              limit=limit, time_budget=time_budget)

    @_in_its_repository
    def definitions(self, name: str, kind: str | None = None, limit: int = 20,
                    repo_id: int | None = None, path_glob: str | None = None) -> list[dict]:
        """Where a name is defined, best match first, each saying how it matched
        (exact, qualified, case, style, prefix, subword); `kind` as in filters."""
        from .ranking.priors import rank_definitions
        from .retrievers.structural import match_label

        self._require_index(repo_id)
        check_limit(limit)
        check_text(name, "the name")
        check_text(path_glob, "path_glob")
        if not name or not name.strip():
            raise QueryError("empty name: give the symbol to look up")
        name = name.strip()
        return [{"path": s.path, "start_line": s.start_line, "end_line": s.end_line,
                 "name": s.name, "qualname": s.qualname, "kind": s.kind,
                 "signature": s.signature, "doc": s.doc, "language": s.language,
                 "match": match_label(name, tier)}
                for s, tier in rank_definitions(self.structural.definitions(
                    name, kind, repo_id=self._in(repo_id), path_glob=path_glob, limit=limit * 4))[:limit]]

    def outline(self, path: str) -> list[dict]:
        """The symbols of one file, nested by parent."""
        repo_id, stored_path = self.located(path)
        self._require_index(repo_id)
        stored = self.store.file_by_path(stored_path, repo_id)
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

    @_in_its_repository
    def references(self, name: str, limit: int = 50, offset: int = 0,
                   repo_id: int | None = None) -> dict:
        """Callers and other references of a symbol, paged, with a total count."""
        self._require_index(repo_id)
        return self.graph.references(name, limit=limit, offset=offset, repo_id=self._in(repo_id))

    @_in_its_repository
    def callees(self, name: str, limit: int = 50, offset: int = 0,
                repo_id: int | None = None) -> dict:
        """What a symbol calls, paged, with a total count."""
        self._require_index(repo_id)
        return self.graph.callees(name, limit=limit, offset=offset, repo_id=self._in(repo_id))

    @_in_its_repository
    def importers(self, name: str, limit: int = 50, offset: int = 0,
                  repo_id: int | None = None) -> dict:
        """Files importing a file or module."""
        self._require_index(repo_id)
        return self.graph.importers(name, limit=limit, offset=offset, repo_id=self._in(repo_id))

    @_in_its_repository
    def impact(self, name: str, depth: int = 3, limit: int = 50, offset: int = 0,
               repo_id: int | None = None) -> dict:
        """Transitive dependents (blast radius) with their distance, nearest first, paged;
        `summary` counts all of them: dependents, files affected, how many per distance."""
        from .retrievers.graph import paged

        self._require_index(repo_id)
        found = self.graph.impact(name, depth=depth, limit=ALL_ROWS, repo_id=self._in(repo_id))
        rows = found["results"]
        by_distance: dict[str, int] = {}
        for r in rows:
            by_distance[str(r["distance"])] = by_distance.get(str(r["distance"]), 0) + 1
        summary = {"dependents": len(rows), "files": len({r["path"] for r in rows}),
                   "by_distance": by_distance}
        return {**paged(rows, limit, offset, list(found["notes"])), "summary": summary}

    def map(self, limit: int = 20, repo_id: int | None = None) -> dict:
        """The map of a repository: its most central files and symbols (PageRank over the
        import, call and inheritance graph, 1.0 = an average node), most central first."""
        self._require_index(repo_id)
        check_limit(limit)
        symbol_rank, file_rank = self.store.centrality(self._in(repo_id))
        files = {f.file_id: f for f in self.store.files(self._in(repo_id))}
        top_files = sorted(((rank, fid) for fid, rank in file_rank.items() if fid in files),
                           reverse=True)[:limit]
        ranked = sorted(symbol_rank, key=symbol_rank.get, reverse=True)
        symbols = []
        for start in range(0, len(ranked), 500):  # other repositories' symbols are skipped
            part = ranked[start:start + 500]
            info = {s.symbol_id: s for s in self.store.symbols_by_id(part, self._in(repo_id))}
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
        path, _, line_text = check_text(location, "the location").rpartition(":")
        if not path or not line_text.isdigit():
            path, line_text = location, "1"
        repo_id, stored_path = self.located(path)
        return self.similar_at(stored_path, int(line_text), repo_id, limit)

    @_in_its_repository
    def similar_at(self, path: str, line: int, repo_id: int | None = None,
                   limit: int = 10) -> list:
        """Code in other files similar to the innermost chunk covering ``path:line`` (a path
        as stored: relative to its repository root)."""
        check_limit(limit)
        return self._similar_chunks(path, line, repo_id, limit)

    def _similar_chunks(self, path: str, line: int, repo_id: int | None, limit: int) -> list:
        self._require_index(repo_id)
        check_limit(line, most=None, what="line")
        stored = self.store.file_by_path(path, self._in(repo_id))
        if stored is None:
            raise FourfoldError(f"{path} is not in the index")
        covering = [c for c in self.store.chunks_of_file(stored.file_id)
                    if c.start_line <= line <= c.end_line]
        if not covering:
            raise FourfoldError(f"{path}:{line} is outside every chunk of that file")
        innermost = min(covering, key=lambda c: c.end_line - c.start_line)
        return self.semantic.similar(innermost.chunk_id, limit)

    def located(self, path: str) -> tuple[int | None, str]:
        """(repository id, path as stored) of a user-given path: absolute, or relative to
        the cwd or else the root, in the indexed repository whose root holds it (the
        innermost one, where roots nest); else the served repository and the path as
        given."""
        if not isinstance(path, (str, os.PathLike)):
            raise QueryError(f"the path must be text or a path, not {type(path).__name__} "
                             f"{path!r:.60}")
        candidate = Path(path)
        repos = self.store.repos(counts=False)
        found = []
        for base in (Path.cwd(), self.root):
            if base is None and not candidate.is_absolute():
                continue
            full = candidate if candidate.is_absolute() else (base / candidate).resolve()
            holding = [repo for repo in repos if full.is_relative_to(repo.root)]
            if holding:
                repo = max(holding, key=lambda repo: len(Path(repo.root).parts))
                found.append((repo.repo_id, full.relative_to(repo.root).as_posix()))
        # from a subfolder, a path relative to the root reads as one below the subfolder
        for repo_id, stored_path in found:
            if self.store.file_by_path(stored_path, repo_id) is not None:
                return repo_id, stored_path
        return found[0] if found else (self._in(None), candidate.as_posix())

    def status(self) -> dict:
        """The index's repositories and its modalities' states (none while it holds no
        repository: an empty modality is not ready)."""
        repos = [_repository_facts(r) for r in self.store.repos()]
        lag = self.replica_lag()
        place = {"index_dir": self.location, "index_bytes": self.index_bytes(),
                 **({"replica_behind_s": lag} if lag is not None else {})}
        if not repos:
            return {**place, "repositories": [], "modalities": {}}
        modalities = {m: f"building: {why}" if why else "ready"
                      for m, why in (("text", self.text.incomplete()),
                                     ("structural", self.structural.incomplete()),
                                     ("graph", self.graph.incomplete()))}
        try:
            done, total = self.semantic.progress()
            ready = done == total and self.semantic.ready()  # vectors, then their codes
            modalities["semantic"] = ("ready" if ready else "building") + \
                f" ({done}/{total} chunks embedded, model {self.semantic.embedder.name}" \
                f"{self._deep_pass_note()})"
        except ModalityUnavailable as exc:
            modalities["semantic"] = f"unavailable: {exc}"
        return {**place, "repositories": repos, "modalities": modalities}

    def index_bytes(self) -> int:
        """What the index takes: its file on disk, or its tables on a server."""
        return self.store.size_bytes()

    def replica_lag(self) -> float | None:
        """On a read replica of a server store, how many seconds it is behind its primary
        (ms rounded); None elsewhere."""
        lag = self.store.replica_lag()
        return round(lag, 3) if lag is not None else None

    def close(self) -> None:
        self._grep_pool.close()
        self.store.close()
        if self.store_url is None:
            self._readers.close()

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

        if spec is None or spec == "":
            return None
        return find_repository(self.store.repos(counts=False), spec)

    def remove_repositories(self, repositories: list[str], wait_s: float = 0.0,
                            dry_run: bool = False) -> list[dict]:
        """Take repositories (one or several names, roots or ids) out of the index with
        everything only they hold, waiting up to `wait_s` for an indexer of each to finish;
        returns what each held (as status() tells it) and the active tokens its name stays
        granted to ("granted_to"). On a server, a repository's branches share its documents: named
        together, the branches go first. `dry_run`: check and tell, remove nothing."""
        named = _repositories_named(repositories)
        if not named or not all(spec.strip() if isinstance(spec, str) else spec is not None
                                for spec in named):
            raise QueryError("name the repositories to remove (a name, root or id each)")
        asked = list(dict.fromkeys(self.repository(spec) for spec in named))
        held = {r.repo_id: r for r in self.store.repos(only=asked)}
        names = {held[repo_id].name for repo_id in asked}
        for repo_id in asked:  # nothing goes unless everything asked can
            left = [name for name in self.store.sharing_documents(repo_id) if name not in names]
            if left:
                raise QueryError(f"{held[repo_id].name} holds the documents of "
                                 f"{', '.join(left)}, which share them: remove those first, "
                                 "or name them too")
        # a family's first repository, which holds its documents, has the lowest id
        for repo_id in [] if dry_run else sorted(asked, reverse=True):
            with self.store.indexing_lock(held[repo_id].name, wait_s):
                self.store.remove_repository(repo_id)
            self._let_go(repo_id)
        granted = [t for t in self.store.tokens() if t.revoked_at is None and t.repositories]
        return [{**_repository_facts(held[repo_id]),
                 "granted_to": [t.name for t in granted
                                if held[repo_id].name in t.repositories]}
                for repo_id in asked]

    # -- shards (a server store spread over several PostgreSQL servers) ------------------
    def add_shard(self, name: str, url: str) -> None:
        """Add the PostgreSQL database at `url` (empty) as shard `name` of this server
        store; repositories are then placed on it with place_repository()."""
        if name == COORDINATOR:
            raise FourfoldError(f"{COORDINATOR!r} names the store's own server; pick "
                                "another shard name")
        self.store.add_shard(name, url)

    def place_repository(self, repository: str, shard: str) -> int:
        """Move a repository's rows to a shard (COORDINATOR: back to the store's own
        server), in one transaction; returns how many rows moved."""
        repo_id = self.repository(repository)
        if repo_id is None:
            raise QueryError("name the repository to place")
        return self.store.place_repository(repo_id, None if shard == COORDINATOR else shard)

    def shards(self) -> list[dict]:
        """The store's shards: name, location, repositories placed there, and why it does
        not answer if it does not."""
        return self.store.shards()

    # -- access tokens (a shared server's) ------------------------------------------------
    def create_token(self, name: str, scope: str = "read",
                     repositories: list[str] | None = None) -> str:
        """A new access token granting `scope` ("read" or "write") on `repositories`
        (names; None: all, present and future); returns the secret, shown only now."""
        from .access import create_token

        unknown = sorted(set(repositories or ()) - set(self.repository_names()))
        if unknown:
            raise FourfoldError(f"unknown repositor{'ies' if len(unknown) > 1 else 'y'} "
                                f"{', '.join(unknown)}; indexed: "
                                f"{', '.join(self.repository_names()) or 'none'}")
        return create_token(self.store, name, scope, repositories)

    def tokens(self) -> list[dict]:
        """Every token (never a secret): name, scope, repositories, created, revoked."""
        return [{"name": t.name, "scope": t.scope, "repositories": t.repositories,
                 "created_at": t.created_at, "revoked_at": t.revoked_at}
                for t in self.store.tokens()]

    def revoke_token(self, name: str) -> None:
        """Refuse the token from its next request on."""
        from .access import revoke_token

        revoke_token(self.store, name)

    def tokens_in_use(self) -> bool:
        """Whether any access token is active (a server then lets no request in without one)."""
        return any(t.revoked_at is None for t in self.store.tokens())

    def grant(self, secret: str) -> Grant | None:
        """What a presented token allows; None for an unknown or revoked one."""
        from .access import grant_of

        return grant_of(self.store, secret)

    def repository_name_of(self, repo_id: int) -> str:
        """The name of a repository of the index, by id."""
        for repo in self.store.repos(counts=False):
            if repo.repo_id == repo_id:
                return repo.name
        raise QueryError(f"no repository with id {repo_id}")

    def repository_names(self) -> list[str]:
        """The names of the index's indexed repositories, sorted."""
        return sorted(r.name for r in self.store.repos(counts=False) if r.indexed_at)

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

        return [{**_repository_facts(r), "branch": git_branch(Path(r.root))}
                for r in self.store.repos(only=None if repo_id is None else [repo_id])]

    @_in_its_repository
    def modality_status(self, repo_id: int | None = None) -> dict[str, str]:
        """Per modality of the repository (`repo_id`; None: the served one): "ready",
        "building…" (answers use what is built so far) or "unavailable: why"."""
        out = {}
        for m in MODALITIES:
            retriever = self.engine.retrievers.get(m)
            if retriever is None:
                out[m] = "unavailable: not built in this index"
                continue
            try:
                out[m] = "ready" if retriever.ready() else "building"
                incomplete = retriever.incomplete()
                if incomplete:
                    out[m] = f"building: {incomplete}"
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
        options = _search_options(options, kw)
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
        self._require_index(repo_id)
        stored = self.store.file_by_path(check_text(path, "the path"), self._in(repo_id))
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

        self._require_index(repo_id)
        allowed = kinds_named([kind]) if kind else None
        stored = self.store.file_by_path(check_text(path, "the path"), self._in(repo_id))
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


    @_in_its_repository
    def related(self, name: str, relation: str = "callers", repo_id: int | None = None,
                limit: int = 50, offset: int = 0) -> dict:
        """One step in the code graph from a symbol (or, for importers, a file or module):
        its callers, callees, importers, subclasses, or (of a file, by its stored path) the
        files it imports, paged, with notes."""
        from .retrievers.graph import paged

        self._require_index(repo_id)
        if relation not in RELATIONS:
            raise QueryError(f"unknown relation {relation!r}; use {', '.join(RELATIONS)}")
        if relation in ("callers", "subclasses"):
            found = self.references(name, limit=ALL_ROWS, repo_id=self._in(repo_id))
            if relation == "subclasses":
                found["results"] = [r for r in found["results"] if r["kind"] == "inherit"]
        elif relation == "callees":
            found = self.callees(name, limit=ALL_ROWS, repo_id=self._in(repo_id))
        elif relation == "imports":
            found = self.graph.imports(name, limit=ALL_ROWS)
        else:
            found = self.importers(name, limit=ALL_ROWS, repo_id=self._in(repo_id))
        return paged(found["results"], limit, offset, list(found.get("notes", [])))

    @_in_its_repository
    def task_context(self, task: str, language: str | None = None,
                     path_glob: str | None = None, repo_id: int | None = None,
                     include_neighbours: bool = True):
        """The code relevant to a task, ranked (search hits and their graph neighbours), as
        a context.TaskContext whose pack() fills a token budget."""
        from .context import task_context

        self._require_index(repo_id)
        return task_context(self, task, (language,) if language else (), path_glob,
                            self._in(repo_id),
                            include_neighbours)

    def watch_changes(self, stop: threading.Event | None = None, debounce_ms: int = 400,
                      step_ms: int = STEP_MS):
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
        QueryError), in repository `repo_id` (default: the one this object serves)."""
        from . import navigation

        self._require_index(repo_id)
        return navigation.list_files(self.store, glob, name, languages, self._in(repo_id))

    def holds_file(self, path: str, repo_id: int | None = None) -> bool:
        """Whether a file (stored path) is in the index, its text left unread."""
        return self.store.file_by_path(check_text(path, "the path"),
                                       self._in(repo_id)) is not None

    def line_count(self, path: str, repo_id: int | None = None) -> int | None:
        """How many lines a file (stored path) has as indexed; None: not in the index."""
        stored = self.store.file_by_path(check_text(path, "the path"), self._in(repo_id))
        if stored is None:
            return None
        text = self.store.content(stored.file_id)
        return text.count("\n") + (1 if text and not text.endswith("\n") else 0)

    def symbols(self, kind: str, path_glob: str | None = None, repo_id: int | None = None
                ) -> list[dict]:
        """Every definition of a kind (as kinds are named in queries; an unknown one raises
        QueryError), with no name needed, in path and line order, optionally only under
        `path_glob` and in one repository."""
        from . import navigation

        self._require_index(repo_id)
        return navigation.symbols(self.store, kind, path_glob, self._in(repo_id))

    def with_context(self, matches, context: int) -> list[dict]:
        """grep() matches as dicts {"path", "line", "text", "before", "after"}: the up to
        `context` (0-10) lines before and after each, as {"line", "text"} (like grep -C)."""
        from . import navigation

        return navigation.with_context(self.store, matches, context)

    @_in_its_repository
    def similar_code(self, path: str, line: int, repo_id: int | None = None, limit: int = 10,
                     code_lines: int = 5) -> dict:
        """similar_at() with each chunk's first `code_lines` lines ("code": list of
        {"line", "text"}) and an honest count: {"total": chunks found, "capped": whether
        more than `limit` exist (then total is a lower bound), "results"}."""
        check_limit(limit)  # one more is asked for, to know whether there are more
        hits = self._similar_chunks(path, line, self._in(repo_id), limit + 1)
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


def _catch_up(store: "Store", repo_id: int, model: str, codes: bool) -> bool:
    """catch_up()'s work, in one process, so that a child given up leaves no helper running;
    the caller holds the index lock."""
    from .indexer import catch_up_graph
    from .semantic.indexing import refresh_codes

    store.tidy(repo_id)
    catch_up_graph(store, repo_id)
    if codes:
        refresh_codes(store, model, repo_id)
    return True


def _catch_up_elsewhere(store_url: str | None, db_path: str | None, repo_id: int, model: str,
                        codes: bool) -> bool:
    """_catch_up in a child process, on a connection of its own to the same index."""
    store = open_server_store(store_url) if store_url else SQLiteStore(db_path)
    try:
        return _catch_up(store, repo_id, model, codes)
    finally:
        store.close()


def _utf8_path(path: Path | None, way_out: str) -> None:
    """The index keeps paths as UTF-8 text (the repository's root, the folder it was built
    in; Tantivy opens its folder by a UTF-8 name): another name is refused at once."""
    if path is None:
        return
    try:
        os.fsencode(path).decode("utf-8")
    except UnicodeDecodeError:
        raise FourfoldError(f"{ascii(str(path))} is not a valid UTF-8 path, which fourfold "
                            f"needs; {way_out}") from None
