"""The index behind a server (the MCP tools and the web page), kept fresh while it runs.

A `watchfiles` watcher (debounced) indexes the changed files in a background thread after
every batch of changes (a branch switch is one big batch); a tool call that arrives while
such a batch is pending waits briefly for it, so answers reflect the files. Embeddings are
computed in another background thread after each index, and then the graph catches up
(Fourfold.catch_up, given up when the next change comes), so neither delays the next
change while the other modalities answer. Full result lists are cached per
query and index generation, so that paging through them is cheap.
"""
import logging
import os
import threading
import time
from collections import OrderedDict
from dataclasses import replace
from typing import TYPE_CHECKING, Callable

from ..api import STEP_MS, Fourfold
from ..errors import FourfoldError, IndexBusyError, ModalityUnavailable, QueryError
from .caller import current_grant

if TYPE_CHECKING:
    from ..api import IndexSummary

log = logging.getLogger("fourfold.mcp")

FRESHNESS_WAIT_S = 3.0    # a tool call waits this long for a pending re-index
BUSY_WAIT_S = 5.0         # an index run waits this long for another indexer of the folder
FIRST_INDEX_WAIT_S = 25.0
FIRST_INDEX_POLL_S = 0.25  # how often a call waiting for the first index looks for answers
START_INDEX_DELAY_S = 2.0  # with an index to answer from, the start's index waits this long at most
CACHED_QUERIES = 32
# rows kept over all cached queries (a grep keeps up to 50,000, a graph list 100,000): the
# newest list is kept whatever its size
CACHED_ROWS = 200_000
# The deep pass in the background reads about 25 chunks a second on one core: a repository
# of more chunks (two hours' worth) is left to `fourfold index --deep`.
DEEP_MAX_CHUNKS = 200_000


def _merged(earlier: "IndexSummary | None", later: "IndexSummary") -> "IndexSummary":
    """One summary whose embedding covers both runs: the changed paths of both, or the
    whole tree where either run walked it."""
    if earlier is None:
        return later
    whole = earlier.changed_paths is None or later.changed_paths is None
    return replace(later, added=earlier.added + later.added,
                   changed=earlier.changed + later.changed,
                   deleted=earlier.deleted + later.deleted,
                   deleted_chunks=earlier.deleted_chunks + later.deleted_chunks,
                   # the later run took the earlier one's mark over: one embedding
                   # takes both runs' codes, and owes what the earlier one took over
                   took_over=(earlier.took_over if later.took_over == earlier.run
                              else later.took_over),
                   changed_paths=None if whole else
                   sorted(set(earlier.changed_paths) | set(later.changed_paths)))


class Service:
    """Owns the Fourfold index, the watcher and embedder threads and the result cache."""

    def __init__(self, root: str | os.PathLike | None = ".",
                 index_dir: str | os.PathLike | None = None, watch: bool = True,
                 debounce_ms: int = 400, step_ms: int = STEP_MS, embed: bool = True,
                 store_url: str | None = None):
        """`store_url`: answer from every repository of a server store; such a server
        never indexes or watches (indexers write with `fourfold index --store`), so any
        number of them can serve one database."""
        self.ff = Fourfold(None if store_url else root, index_dir=index_dir,
                           store_url=store_url)
        self.ff.deep_threads = 1  # the deep pass runs beside the questions
        self.root = self.ff.root
        self.serves_many = store_url is not None
        self.watch_enabled = watch and not self.serves_many
        self.embed_enabled = embed and not self.serves_many
        self.debounce_ms = debounce_ms
        self.step_ms = step_ms
        self.last_index: dict | None = None
        self.last_error: str | None = None
        self.watching = False
        self.embedding = False
        self.deepening = False
        self._index_lock = threading.Lock()
        self._state = threading.Condition()
        self._dirty = False          # the watcher saw changes not yet indexed
        self._reindexing = False     # an index run for such changes is in progress
        self._ready = threading.Event()
        self._answered = threading.Event()  # a tool call has been answered
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._background_wanted = threading.Event()
        self._background: threading.Thread | None = None
        self._to_embed: "IndexSummary | None" = None  # what the runs since wrote, merged
        self._changed_paths: set[str] = set()  # what the watcher saw, not yet indexed
        self._change_seen = threading.Event()  # a catch-up of the graph gives way to it
        self._deep_stop = threading.Event()  # the deep pass gives way to changes, index runs
        self._cache: OrderedDict[tuple, list] = OrderedDict()
        self._cache_lock = threading.Lock()

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, block: bool = False) -> "Service":
        """Start the watcher and bring the index up to date (in the background unless block;
        block also waits for the embeddings).

        With an existing index, queries are answered at once from it, and the start's index
        run begins once the first call has been answered (or after START_INDEX_DELAY_S): the
        client's first answer does not share the CPU with it, nor with the embedder it
        starts (numpy, the model). Without an index, queries wait for the first index (up to
        a bound)."""
        if self.serves_many:
            self._ready.set()  # what the indexers have written is the answer
            return self
        if self.ff.repo_id() is not None:
            self._ready.set()
        if self.watch_enabled:
            self._spawn(self._watch_loop, "fourfold-watch")
        if block:
            self.index_now("start", embed_now=True)
        elif self._ready.is_set():
            self._spawn(self._index_at_start, "fourfold-index")
        else:
            self._spawn(self._start_index, "fourfold-index")
        return self

    def _index_at_start(self) -> None:
        self._answered.wait(START_INDEX_DELAY_S)
        self._start_index()

    def _start_index(self) -> None:
        """The start's index run, tried again while another indexer holds the folder (a
        run in another process): the files changed before the start are indexed then."""
        while not self._stop.is_set():
            try:
                self.index_now("start")
                return
            except IndexBusyError:
                self._stop.wait(BUSY_WAIT_S)
            except Exception:  # logged by index_now; status and repository_context say it
                return

    def answered(self) -> None:
        """Note that a tool call has been answered (the start's index run may begin)."""
        self._answered.set()

    def close(self) -> None:
        """Stop the threads and close the index."""
        self._stop.set()
        self._change_seen.set()  # gives up a catch-up under way
        self._deep_stop.set()  # and the deep pass
        self._answered.set()  # wakes the start's index run still waiting, which then stops
        for thread in self._threads:
            thread.join(timeout=5)
        self.ff.close()

    def _spawn(self, target: Callable[[], object], name: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)
        return thread

    def index_now(self, reason: str, embed_now: bool = False,
                  changed: set[str] | None = None) -> dict:
        """Index text, structure and graph now (incremental) and return the summary;
        embeddings follow in the background unless `embed_now`. `changed`: the paths the
        watcher saw; the graph then catches up in the background too."""
        self._deep_stop.set()  # the pass gives way; the next background round takes it up
        with self._index_lock:
            self._change_seen.clear()
            try:
                run = self.ff.index(embed=False, wait_s=BUSY_WAIT_S, changed=changed,
                                    graph_later=changed is not None)
                summary = run.to_dict()
            except IndexBusyError as exc:
                self.last_error = str(exc)
                raise
            except Exception as exc:  # keep the server up; repository_context reports it
                self.last_error = f"{reason} index failed: {exc}"
                log.exception("index failed")
                raise
            finally:
                self._ready.set()
            summary["reason"] = reason
            summary["finished_at"] = time.time()
            self.last_index = summary
            self.last_error = None
            self.clear_cache()
        if self.embed_enabled and embed_now:
            self.ff.embed(summary=run)
            self.clear_cache()
        elif self.embed_enabled or run.graph_behind:
            with self._state:
                self._to_embed = _merged(self._to_embed, run)
                self._background_wanted.set()
                if self._background is None or not self._background.is_alive():
                    self._background = self._spawn(self._background_loop, "fourfold-background")
        return summary

    def _background_loop(self) -> None:
        """After index runs: embed what they wrote, then let the graph catch up."""
        while not self._stop.is_set():
            if not self._background_wanted.wait(0.5):
                continue
            self._background_wanted.clear()
            self.embedding = True
            with self._state:
                summary, self._to_embed = self._to_embed, None
            try:
                if self.embed_enabled and summary is not None and self.ff.embed(summary=summary):
                    self.clear_cache()
            except Exception as exc:  # reported through repository_context
                self.last_error = f"embedding failed: {exc}"
                log.warning("embedding failed: %s", exc)
            finally:
                self.embedding = False
            try:
                if not self._change_seen.is_set() and \
                        self.ff.catch_up(BUSY_WAIT_S, self._change_seen):
                    self.clear_cache()
            except IndexBusyError:  # another indexer of the folder: the next change retries
                pass
            except Exception as exc:
                self.last_error = f"the graph could not catch up: {exc}"
                log.warning("the graph could not catch up: %s", exc)
            self._deepen()

    def _deepen(self) -> None:
        """The deep pass, last and on one core (queries keep the other), given up when a
        change comes; the next run after that change goes on from where it stopped."""
        if not self.embed_enabled or self._change_seen.is_set():
            return
        self._deep_stop.clear()  # set again by the next change or index run, and by close()
        if self._stop.is_set():  # close() sets _stop before _deep_stop
            return
        self.deepening = True
        try:
            repo_id = self.ff.repo_id()
            facts = self.ff.repositories(repo_id) if repo_id is not None else []
            if not facts or facts[0]["chunks"] > DEEP_MAX_CHUNKS:
                return  # not indexed (taken out meanwhile), or too big for the background
            if self.ff.deepen(interrupted=self._deep_stop, wait_s=BUSY_WAIT_S) or \
                    not self._deep_stop.is_set():
                self.clear_cache()
        except (ModalityUnavailable, IndexBusyError):
            pass  # no deep model here (the indexing model answers), or another indexer:
            # the pass goes on after the next index run
        except Exception as exc:
            self.last_error = f"the deep pass failed: {exc}"
            log.warning("the deep pass failed: %s", exc)
        finally:
            self.deepening = False

    def _watch_loop(self) -> None:
        self.watching = True
        try:
            for changes in self.ff.watch_changes(self._stop, self.debounce_ms, self.step_ms):
                with self._state:
                    self._dirty = True
                    self._changed_paths.update(path for _, path in changes)
                self._change_seen.set()
                self._reindex_pending()
        except Exception as exc:  # watchfiles missing, or the watcher itself failed
            self.last_error = f"file watcher stopped: {exc}"
            log.warning("file watcher stopped: %s", exc)
        finally:
            self.watching = False
            with self._state:
                self._dirty = False
                self._state.notify_all()

    def _reindex_pending(self) -> None:
        with self._state:
            if not self._dirty:
                return
            self._dirty = False
            self._reindexing = True
            changed, self._changed_paths = self._changed_paths, set()
        try:
            self.index_now("watch", changed=changed)
        except Exception:  # reported through last_error; still busy after BUSY_WAIT_S, the
            with self._state:  # other indexer of this folder reads the change, else the
                self._changed_paths |= changed  # next change's run takes these paths too
        finally:
            with self._state:
                self._reindexing = False
                self._state.notify_all()

    def await_fresh(self) -> None:
        """Wait (briefly) for the first index, until what it has written answers (a big
        repository's first index marks its files answerable as it writes them), and for
        changes the watcher has seen."""
        deadline = time.monotonic() + FIRST_INDEX_WAIT_S
        while not self._ready.wait(FIRST_INDEX_POLL_S) and self.ff.repo_id() is None:
            if time.monotonic() > deadline:
                raise FourfoldError(f"the first index of {self.root} is still being built; "
                                    "retry in a few seconds")
        with self._state:
            self._state.wait_for(lambda: not self._dirty and not self._reindexing,
                                 timeout=FRESHNESS_WAIT_S)

    def reindex_now(self) -> dict:
        """Incremental re-index on request (after the first index); returns its summary."""
        if not self._ready.is_set():
            self._ready.wait(FIRST_INDEX_WAIT_S)
        summary = self.index_now("reindex")
        with self._state:
            self._dirty = False
        return summary

    def freshness(self) -> dict:
        """Whether the index is kept fresh, what is pending and how the last run went."""
        seen = self.sees_served()  # a run's paths and errors are the served repository's
        return {"watching": self.watching, "pending_changes": self._dirty or self._reindexing,
                "embedding": self.embedding, "deepening": self.deepening,
                "last_index": self.last_index if seen else None,
                "last_error": self.last_error if seen else None}

    # -- who may see what -----------------------------------------------------------------
    def answering_repository(self, repository: str | None) -> int | None:
        """The id of the repository a request answers from (QueryError for an unknown one or
        one the caller's token is not granted). None: the served repository (or the one
        repository the caller's token sees); on a server holding several, the caller must
        name one (only searches ask several)."""
        grant = current_grant.get()
        try:
            repo_id = self.ff.repository(repository)
        except QueryError:
            if grant is None:
                raise
            repo_id = None
        if repository and grant is not None and (
                repo_id is None or not grant.sees(self.ff.repository_name_of(repo_id))):
            # the same answer for a repository that does not exist and one not granted: a
            # token learns no other repository's name (nor which id is whose)
            raise QueryError(f"repository {repository!r} is unknown or not granted to this "
                             f"token; it may see: "
                             f"{', '.join(self.visible_repositories()) or 'nothing'}")
        if repo_id is None and self.serves_many:
            names = self.visible_repositories()
            if len(names) != 1:
                raise QueryError(f"this server holds {len(names)} repositories you may see; "
                                 f"name one in `repository`: {', '.join(names) or 'none'}")
            repo_id = self.ff.repository(names[0])
        elif repo_id is None:
            repo_id = self.ff.repo_id()
            grant = current_grant.get()
            if grant is not None and repo_id is not None and \
                    not grant.sees(self.ff.repository_name_of(repo_id)):
                names = self.visible_repositories()  # a token granted only another one:
                if len(names) == 1:                   # that one is the caller's default
                    repo_id = self.ff.repository(names[0])
        if grant is not None and repo_id is not None and \
                not grant.sees(self.ff.repository_name_of(repo_id)):
            raise QueryError("name the repository to ask in `repository`; this token may "
                             f"see: {', '.join(self.visible_repositories()) or 'nothing'}")
        return repo_id

    def index_bytes(self) -> int | None:
        """The index's size on disk, for a caller who may see every repository in it (the
        size of the others would say how much they hold)."""
        grant = current_grant.get()
        if self.sees_everything() or set(self.ff.repository_names()) <= grant.repositories:
            return self.ff.index_bytes()
        return None

    def sees_served(self) -> bool:
        """Whether the caller may see the repository this process serves (and so what its
        watcher and index runs say)."""
        grant = current_grant.get()
        if grant is None:
            return True
        repo_id = self.ff.repo_id()  # None until its first index: then by the name it takes
        name = (self.ff.repository_name_of(repo_id) if repo_id is not None
                else self.ff.repository_name)
        return name is not None and grant.sees(name)

    def visible_repositories(self) -> list[str]:
        """The indexed repositories the caller may see."""
        return [n for n in self.ff.repository_names() if self.sees(n)]

    @staticmethod
    def sees_everything() -> bool:
        """Whether the caller may see every repository (and so where the index is)."""
        grant = current_grant.get()
        return grant is None or grant.repositories is None

    @staticmethod
    def sees(name: str) -> bool:
        """Whether the caller may see the repository of this name (indexed or not: status
        also names one not yet indexed or being taken out)."""
        grant = current_grant.get()
        return grant is None or grant.sees(name)

    # -- result cache -----------------------------------------------------------------------
    def clear_cache(self) -> None:
        """Forget every cached result list."""
        with self._cache_lock:
            self._cache.clear()

    def rows(self, key: str, compute: Callable[[], list]) -> list:
        """The full result list of a query, computed once per index generation and per
        set of repositories the caller may see: an unnamed repository means the one (or
        the ones) the caller's token sees."""
        grant = current_grant.get()
        cache_key = (key, self.ff.generation(), grant and grant.repositories)
        with self._cache_lock:
            if cache_key in self._cache:
                self._cache.move_to_end(cache_key)
                return self._cache[cache_key]
        rows = compute()
        with self._cache_lock:
            self._cache[cache_key] = rows
            held = sum(len(r) for r in self._cache.values())
            while len(self._cache) > 1 and (len(self._cache) > CACHED_QUERIES
                                            or held > CACHED_ROWS):
                held -= len(self._cache.popitem(last=False)[1])
        return rows
