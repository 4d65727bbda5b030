"""MCP server: fourfold's tools for coding agents, over stdio or streamable HTTP.

    fourfold mcp [PATH]                      # stdio, for Claude Code / Cursor / VS Code / Codex
    fourfold serve [PATH] --port 8765        # streamable HTTP on http://127.0.0.1:8765/mcp
    python -m fourfold.interfaces.mcp_server [PATH] [--http --port N]

The tool surface is the agent-facing contract (names, parameters, result shapes). Every
tool pages its answer: `limit` and `max_tokens` bound one page, `total` says how many
results exist, and `cursor` (opaque; null on the last page) fetches the next page when
passed back with the same arguments.

Safety: path arguments are resolved inside the indexed root (no `..`, no absolute paths
elsewhere, no percent-encoded separators or dots, no symlinks out), file contents are
served from the index, and the server writes only into its index folder. Errors reach the
agent as MCP tool errors carrying a short message, never a traceback.

Freshness: a `watchfiles` watcher (debounced) runs an incremental index in a background
thread after every batch of changes (a branch switch is one big batch); a tool call that
arrives while such a batch is pending waits briefly for it, so answers reflect the files.

The `mcp` SDK is imported lazily so that `fourfold --help` and the other CLI verbs stay fast.
This module deliberately does not use `from __future__ import annotations`: the tool
signatures are introspected by the SDK at registration time.
"""
import argparse
import base64
import dataclasses
import functools
import hashlib
import hmac
import json
import logging
import os
import re
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable

from ..api import Fourfold
from ..errors import FourfoldError, IndexBusyError, QueryError
from ..retrievers.text import ResultList
from ..routing.engine import SearchOptions
from ..routing.profiles import MODALITIES, PRESETS

log = logging.getLogger("fourfold.mcp")

SERVER_NAME = "fourfold"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
TOKEN_ENV = "FOURFOLD_TOKEN"

DEFAULT_MAX_TOKENS = 4000
MIN_MAX_TOKENS = 100
MAX_MAX_TOKENS = 50_000
MAX_PAGE = 500
SEARCH_DEPTH = 100        # ranked results computed once per query, then paged
GREP_CAP = 50_000         # matching lines kept per pattern
MAX_SIMILAR = 200         # nearest chunks kept for find_similar_code
GRAPH_CAP = 100_000
LINE_CHARS = 400          # a matched or shown line is cut to this many characters
FRESHNESS_WAIT_S = 3.0    # a tool call waits this long for a pending re-index
BUSY_WAIT_S = 5.0         # an index run waits this long for another indexer of the folder
FIRST_INDEX_WAIT_S = 25.0

INSTRUCTIONS = """\
fourfold searches the code of the indexed repository locally (no network).
Start with `intelligent_search` for any question: it classifies the question (definition,
references, exact string, concept, impact) and blends text, structural, graph and semantic
retrieval. Use the specialised tools when you know what you need: `find_symbol` (jump to a
definition), `text_pattern_search` (grep), `structural_search` (definitions by kind, outline
of a file), `dependency_search` (callers, callees, importers, subclasses),
`analyze_dependencies` (blast radius before a change), `get_file` (read lines),
`find_similar_code` (relatives of the code at path:line), `repository_context` (a map of the
repository), `get_task_context` (a token-budgeted pack of
the code relevant to a task). Every answer is paged: pass `cursor` back to get the next page.
Paths are relative to the repository root."""


# -- paging -------------------------------------------------------------------------------
def approx_tokens(value: Any) -> int:
    """A cheap, conservative token estimate (about four characters a token)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return len(text) // 4 + 1


def _b64(data: dict) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(cursor: str) -> dict:
    padded = cursor + "=" * (-len(cursor) % 4)
    return json.loads(base64.urlsafe_b64decode(padded.encode()).decode())


def query_key(tool: str, args: dict) -> str:
    blob = json.dumps([tool, args], sort_keys=True, default=str)
    return hashlib.blake2b(blob.encode(), digest_size=8).hexdigest()


def decode_cursor(cursor: str | None, key: str) -> int:
    """The offset a cursor points at; refuses a cursor minted for other arguments."""
    if cursor is None or cursor == "":
        return 0
    try:
        data = _unb64(cursor)
        offset, owner = int(data["o"]), str(data["k"])
    except Exception:
        raise QueryError("invalid cursor: pass back the cursor string exactly as returned, "
                         "or omit it to start from the first page") from None
    if owner != key:
        raise QueryError("this cursor belongs to a different query: repeat the same arguments "
                         "with the cursor, or omit the cursor to start again")
    if offset < 0:
        raise QueryError("invalid cursor offset")
    return offset


def encode_cursor(offset: int, key: str) -> str:
    return _b64({"o": offset, "k": key})


def clamp_budget(limit: int, max_tokens: int | None, default_limit: int) -> tuple[int, int]:
    if limit is None:
        limit = default_limit
    if limit < 1:
        raise QueryError("limit must be at least 1")
    tokens = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
    if tokens < MIN_MAX_TOKENS:
        raise QueryError(f"max_tokens must be at least {MIN_MAX_TOKENS}")
    return min(limit, MAX_PAGE), min(tokens, MAX_MAX_TOKENS)


def page(rows: list, offset: int, limit: int, max_tokens: int, key: str,
         render: Callable[[Any], Any] | None = None) -> dict:
    """One page of rows: at most `limit` rows and about `max_tokens` tokens (at least one row)."""
    out: list = []
    used = 0
    for row in rows[offset:offset + limit]:
        item = render(row) if render else row
        cost = approx_tokens(item)
        if out and used + cost > max_tokens:
            break
        out.append(item)
        used += cost
    nxt = offset + len(out)
    return {"total": len(rows), "offset": offset, "returned": len(out), "results": out,
            "cursor": encode_cursor(nxt, key) if nxt < len(rows) else None,
            "approx_tokens": used}


def _cut(text: str, n: int = LINE_CHARS) -> str:
    return text if len(text) <= n else text[:n] + "…"


# -- path safety ---------------------------------------------------------------------------
class PathRefused(FourfoldError):
    """A path argument that would leave the indexed root."""


_ENCODED = re.compile(r"%(?:2e|2f|5c|00|25)", re.IGNORECASE)
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def check_glob(glob: str | None) -> str | None:
    """A path glob is matched against indexed paths; still refuse ones that point outside."""
    if glob is None or glob == "":
        return None
    if "\x00" in glob or _ENCODED.search(glob):
        raise PathRefused(f"path_glob {glob!r} contains encoded or NUL characters; "
                          "give a plain glob relative to the repository root")
    parts = re.split(r"[\\/]+", glob)
    if ".." in parts or glob.startswith(("/", "\\", "~")) or _DRIVE.match(glob):
        raise PathRefused(f"path_glob {glob!r} points outside the repository: give a glob "
                          "relative to the repository root, such as 'src/**/*.py'")
    return glob


# -- the service: tools as plain Python, independent of the SDK ----------------------------
class FourfoldService:
    """Owns the index, the watcher and the result cache; each tool is one method."""

    def __init__(self, root: str | os.PathLike = ".", index_dir: str | os.PathLike | None = None,
                 watch: bool = True, debounce_ms: int = 400, step_ms: int = 50,
                 embed: bool = True):
        self.ff = Fourfold(root, index_dir=index_dir)
        self.root = self.ff.root
        self.watch_enabled = watch
        self.debounce_ms = debounce_ms
        self.step_ms = step_ms
        self._index_lock = threading.Lock()
        self._state = threading.Condition()
        self._dirty = False          # the watcher saw changes not yet indexed
        self._reindexing = False     # an index run for such changes is in progress
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._cache: OrderedDict[tuple, list] = OrderedDict()
        self._cache_lock = threading.Lock()
        self.last_index: dict | None = None
        self.last_error: str | None = None
        self.watching = False
        self.embedding = False
        self.embed_enabled = embed
        self._embed_wanted = threading.Event()
        self._embedder_thread: threading.Thread | None = None
        self.started_at = time.time()

    # -- lifecycle ------------------------------------------------------------------------
    def start(self, block: bool = False) -> "FourfoldService":
        """Start the watcher and bring the index up to date (in the background unless block;
        block also waits for the embeddings).

        With an existing index, queries are answered at once from it while the catch-up
        index runs; without one, queries wait for the first index (up to a bound)."""
        if self.ff.repo_id() is not None:
            self._ready.set()
        if self.watch_enabled:
            self._spawn(self._watch_loop, "fourfold-watch")
        if block:
            self._index_now("start", embed_now=True)
        else:
            self._spawn(lambda: self._index_now("start"), "fourfold-index")
        return self

    def _spawn(self, target, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        self.ff.close()

    def _index_now(self, reason: str, embed_now: bool = False) -> dict:
        """Text, structure and graph now (fast, incremental); embeddings after, in the
        background, so a long embedding run never delays the next change."""
        with self._index_lock:
            try:
                summary = self.ff.index(embed=False, wait_s=BUSY_WAIT_S).to_dict()
            except IndexBusyError as exc:
                self.last_error = str(exc)
                raise
            except Exception as exc:  # keep the server up; report through repository_context
                self.last_error = f"{reason} index failed: {exc}"
                log.exception("index failed")
                raise
            finally:
                self._ready.set()
            summary["reason"] = reason
            summary["finished_at"] = time.time()
            self.last_index = summary
            self.last_error = None
            self._clear_cache()
        if self.embed_enabled and embed_now:
            self.ff.embed()
            self._clear_cache()
        elif self.embed_enabled:
            self._embed_wanted.set()
            with self._state:
                if self._embedder_thread is None or not self._embedder_thread.is_alive():
                    self._embedder_thread = threading.Thread(
                        target=self._embed_loop, name="fourfold-embed", daemon=True)
                    self._embedder_thread.start()
                    self._threads.append(self._embedder_thread)
        return summary

    def _embed_loop(self) -> None:
        while not self._stop.is_set():
            if not self._embed_wanted.wait(0.5):
                continue
            self._embed_wanted.clear()
            self.embedding = True
            try:
                count = self.ff.embed()
                if count:
                    self._clear_cache()
            except Exception as exc:
                self.last_error = f"embedding failed: {exc}"
                log.warning("embedding failed: %s", exc)
            finally:
                self.embedding = False

    def _watch_loop(self) -> None:
        from ..discovery.watch import watch_changes

        self.watching = True
        try:
            for _ in watch_changes(self.root, self.ff.index_dir, self._stop,
                                   self.debounce_ms, self.step_ms):
                with self._state:
                    self._dirty = True
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
        try:
            self._index_now("watch")
        except Exception:  # reported through last_error; still busy after BUSY_WAIT_S, the
            pass  # other indexer of this folder reads the change, else the next change does
        finally:
            with self._state:
                self._reindexing = False
                self._state.notify_all()

    def _await_fresh(self) -> None:
        if not self._ready.is_set() and not self._ready.wait(FIRST_INDEX_WAIT_S):
            raise FourfoldError(f"the first index of {self.root} is still being built; "
                                "retry in a few seconds")
        with self._state:
            self._state.wait_for(lambda: not self._dirty and not self._reindexing,
                                 timeout=FRESHNESS_WAIT_S)

    # -- helpers --------------------------------------------------------------------------
    def _repo_rows(self) -> list[tuple]:
        """(id, root, name, indexed_at) per repository, without the per-repo counts."""
        return [(r.repo_id, r.root, r.name, r.indexed_at)
                for r in self.ff.store.repos(counts=False)]

    def _generation(self) -> tuple:
        return self.ff.store.generation()

    def _clear_cache(self) -> None:
        with self._cache_lock:
            self._cache.clear()

    def _rows(self, key: str, compute: Callable[[], list]) -> list:
        """Full result lists cached per query and index generation, so paging is cheap."""
        cache_key = (key, self._generation())
        with self._cache_lock:
            if cache_key in self._cache:
                self._cache.move_to_end(cache_key)
                return self._cache[cache_key]
        rows = compute()
        with self._cache_lock:
            self._cache[cache_key] = rows
            while len(self._cache) > 32:
                self._cache.popitem(last=False)
        return rows

    def _begin(self, tool: str, args: dict, cursor: str | None, limit: int,
               max_tokens: int | None, default_limit: int) -> tuple[str, int, int, int]:
        self._await_fresh()
        key = query_key(tool, args)
        offset = decode_cursor(cursor, key)
        limit, tokens = clamp_budget(limit, max_tokens, default_limit)
        return key, offset, limit, tokens

    def repo_for(self, repository: str | None) -> int | None:
        """A repository by name, root path or id; None: every repository in the index."""
        if repository is None or repository == "":
            return None
        repos = self._repo_rows()
        for repo_id, root, name, _ in repos:
            if repository in (name, root, str(repo_id)):
                return repo_id
        try:
            wanted = Path(repository).expanduser().resolve()
            for repo_id, root, _, _ in repos:
                if Path(root) == wanted:
                    return repo_id
        except (OSError, ValueError):
            pass
        names = ", ".join(r[2] for r in repos) or "none"
        raise QueryError(f"unknown repository {repository!r}; indexed: {names}")

    def _repo_root(self, repo_id: int | None) -> tuple[int, Path]:
        rows = self._repo_rows()
        if repo_id is None:
            repo_id = self.ff.repo_id()
        for rid, root, _, _ in rows:
            if rid == repo_id:
                return rid, Path(root).resolve()
        raise FourfoldError(f"{self.root} is not indexed yet")

    def safe_path(self, raw: str, repo_id: int | None = None) -> tuple[int, str]:
        """A user path as (repo, stored relative path), refusing anything outside the root."""
        if not isinstance(raw, str) or not raw.strip():
            raise PathRefused("empty path: give a path relative to the repository root")
        path = raw.strip()
        if "\x00" in path:
            raise PathRefused("path contains a NUL character")
        if _ENCODED.search(path):
            raise PathRefused(f"{raw!r}: percent-encoded dots, slashes or backslashes are not "
                              "accepted; give a plain path relative to the repository root")
        parts = re.split(r"[\\/]+", path)
        if ".." in parts:
            raise PathRefused(f"{raw!r}: '..' is not allowed; paths are relative to the "
                              "repository root and stay inside it")
        repo_id, root = self._repo_root(repo_id)
        if path.startswith("~"):
            raise PathRefused(f"{raw!r} is outside the indexed repository {root}")
        if path.startswith(("/", "\\")) or _DRIVE.match(path):
            candidate = Path(path)
            try:
                rel = candidate.relative_to(root)
            except ValueError:
                raise PathRefused(f"{raw!r} is outside the indexed repository {root}") from None
        else:
            rel = Path(path.replace("\\", "/"))
        full = root / rel
        try:
            real = full.resolve()
        except (OSError, RuntimeError):
            raise PathRefused(f"{raw!r} cannot be resolved (symlink loop?)") from None
        try:
            real.relative_to(root)
        except ValueError:
            raise PathRefused(f"{raw!r} resolves outside the indexed repository (a symlink "
                              "pointing out of the root); refused") from None
        if real == self.ff.index_dir or self.ff.index_dir in real.parents:
            raise PathRefused(f"{raw!r} is inside the index folder, not the source")
        rel_text = "/".join(p for p in rel.as_posix().split("/") if p not in ("", "."))
        if not rel_text:
            raise PathRefused("give a file path, not the repository root")
        return repo_id, rel_text

    def _content(self, path: str, repo_id: int | None, cache: dict) -> list[str] | None:
        key = (repo_id, path)
        if key not in cache:
            stored = self.ff.store.file_by_path(path, repo_id)
            cache[key] = (self.ff.store.content(stored.file_id).split("\n")
                          if stored is not None else None)
        return cache[key]

    def _snippet(self, path: str, start: int, end: int, n: int, repo_id: int | None,
                 cache: dict) -> list[dict]:
        if n <= 0:
            return []
        lines = self._content(path, repo_id, cache)
        if not lines:
            return []
        start = max(1, start)
        stop = min(end, start + n - 1, len(lines))
        return [{"line": i, "text": _cut(lines[i - 1].rstrip("\r"))} for i in range(start, stop + 1)]

    @staticmethod
    def _check_modalities(modalities: list[str] | None, weights: dict | None) -> None:
        for m in list(modalities or []) + list((weights or {}).keys()):
            if m not in MODALITIES:
                raise QueryError(f"unknown modality {m!r}; use {', '.join(MODALITIES)}")

    def _ready_modalities(self) -> dict[str, str]:
        out = {}
        retrievers = self.ff.engine.retrievers
        for m in MODALITIES:
            r = retrievers.get(m)
            if r is None:
                out[m] = "unavailable: not built in this index"
            else:
                try:
                    out[m] = "ready" if r.ready() else "building"
                    progress = getattr(r, "progress", None)
                    if progress is not None:
                        done, total = progress()
                        if total and done < total:
                            out[m] = f"building: {done}/{total} chunks embedded; answers use " \
                                     "what is embedded so far"
                except Exception as exc:
                    out[m] = f"unavailable: {exc}"
        return out

    def _run_search(self, query: str, options: SearchOptions) -> tuple[Any, list[str]]:
        """Search; when the asked modalities are not ready, answer from the ready ones."""
        notes: list[str] = []
        response = self.ff.search(query, options)
        if response.unavailable and not response.hits:
            ready = [m for m, state in self._ready_modalities().items()
                     if state == "ready" and m != "graph"]
            asked = set(response.modalities) | set(response.unavailable)
            fallback = [m for m in ready if m not in response.unavailable]
            if fallback and set(fallback) != asked:
                why = "; ".join(f"{m}: {r}" for m, r in response.unavailable.items())
                notes.append(f"modalities not ready ({why}); answered from "
                             f"{', '.join(fallback)} instead")
                options = dataclasses.replace(options, modalities=tuple(fallback),
                                              weights=None)
                unavailable = dict(response.unavailable)
                response = self.ff.search(query, options)
                response.unavailable = {**unavailable, **response.unavailable}
        elif response.unavailable:
            why = "; ".join(f"{m}: {r}" for m, r in response.unavailable.items())
            notes.append(f"answered without {why}")
        return response, notes

    def _search_tool(self, tool: str, query: str, preset: str, modalities, weights, intent,
                     language, path_glob, repository, limit, cursor, max_tokens,
                     snippet_lines: int) -> dict:
        if preset not in PRESETS:
            raise QueryError(f"unknown preset {preset!r}; use {', '.join(PRESETS)}")
        self._check_modalities(modalities, weights)
        path_glob = check_glob(path_glob)
        args = {"query": query, "preset": preset, "modalities": modalities, "weights": weights,
                "intent": intent, "language": language, "path_glob": path_glob,
                "repository": repository, "snippet_lines": snippet_lines}
        key, offset, limit, tokens = self._begin(tool, args, cursor, limit, max_tokens, 10)
        repo_id = self.repo_for(repository)
        meta: dict = {}

        def compute() -> list:
            options = SearchOptions(preset=preset,
                                    modalities=tuple(modalities) if modalities else None,
                                    weights=dict(weights) if weights else None, intent=intent,
                                    language=language, path_glob=path_glob, repo_id=repo_id,
                                    limit=SEARCH_DEPTH)
            response, notes = self._run_search(query, options)
            d = response.to_dict()
            meta.update({k: d[k] for k in ("intent", "confidence", "rule", "target",
                                           "fusion_strategy", "modalities", "weights",
                                           "unavailable", "timings_ms")})
            meta["notes"] = notes
            return [[meta.copy()]] + [h.to_dict() for h in response.hits]

        rows = self._rows(key, compute)
        header, hits = rows[0][0], rows[1:]
        cache: dict = {}

        def render(hit: dict) -> dict:
            # votes and shares stay; ranks and prior factors (the CLI's --explain) cost an
            # agent's page room
            out = {k: v for k, v in hit.items() if k not in ("lines", "ranks", "factors")}
            if snippet_lines > 0:
                shown = hit.get("lines") or self._snippet(hit["path"], hit["start_line"],
                                                          hit["end_line"], snippet_lines,
                                                          repo_id, cache)
                out["lines"] = [{"line": ln["line"], "text": _cut(ln["text"])}
                                for ln in shown[:snippet_lines]]
            return out

        result = page(hits, offset, limit, tokens, key, render)
        return {"query": query, **header, **result}

    # -- tools ----------------------------------------------------------------------------
    def intelligent_search(self, query: str, preset: str = "default",
                           modalities: list[str] | None = None,
                           weights: dict[str, float] | None = None, intent: str | None = None,
                           language: str | None = None, path_glob: str | None = None,
                           repository: str | None = None, limit: int = 10,
                           cursor: str | None = None, max_tokens: int | None = None,
                           snippet_lines: int = 4) -> dict:
        return self._search_tool("intelligent_search", query, preset, modalities, weights,
                                 intent, language, path_glob, repository, limit, cursor,
                                 max_tokens, snippet_lines)

    def semantic_search(self, query: str, language: str | None = None,
                        path_glob: str | None = None, repository: str | None = None,
                        limit: int = 10, cursor: str | None = None,
                        max_tokens: int | None = None, snippet_lines: int = 4) -> dict:
        return self._search_tool("semantic_search", query, "default", ["semantic"], None,
                                 None, language, path_glob, repository, limit, cursor,
                                 max_tokens, snippet_lines)

    def text_pattern_search(self, pattern: str, regex: bool = False,
                            case_sensitive: bool = False, whole_word: bool = False,
                            path_glob: str | None = None, repository: str | None = None,
                            limit: int = 50, cursor: str | None = None,
                            max_tokens: int | None = None) -> dict:
        path_glob = check_glob(path_glob)
        args = {"pattern": pattern, "regex": regex, "case_sensitive": case_sensitive,
                "whole_word": whole_word, "path_glob": path_glob, "repository": repository}
        key, offset, limit, tokens = self._begin("text_pattern_search", args, cursor, limit,
                                                 max_tokens, 50)
        repo_id = self.repo_for(repository)

        def compute() -> list:
            matches = self.ff.text.grep(pattern, regex=regex, case_sensitive=case_sensitive,
                                        whole_word=whole_word, path_glob=path_glob,
                                        repo_id=repo_id, limit=GREP_CAP + 1)
            # cached with its partial mark, so that every page of it says so
            return ResultList(({"path": m.path, "line": m.line, "text": _cut(m.text)}
                               for m in matches), partial=matches.partial)

        rows = self._rows(key, compute)
        partial = rows.partial
        notes = []
        if len(rows) > GREP_CAP:
            rows = rows[:GREP_CAP]
            notes.append(f"more than {GREP_CAP} matching lines; only the first {GREP_CAP} "
                         "(in path order) are paged: narrow the pattern or path_glob")
        if partial:
            notes.append(f"partial: the scan stopped after {self.ff.text.time_budget:g} s "
                         "with files left unread; narrow the pattern or path_glob")
        result = page(rows, offset, limit, tokens, key)
        return {"pattern": pattern, **result, "total_is_lower_bound": bool(notes),
                "partial": partial, "notes": notes}

    def structural_search(self, name: str | None = None, kind: str | None = None,
                          path: str | None = None, path_glob: str | None = None,
                          repository: str | None = None, limit: int = 20,
                          cursor: str | None = None, max_tokens: int | None = None) -> dict:
        if bool(name and name.strip()) == bool(path and path.strip()):
            raise QueryError("give exactly one of `name` (definitions by name, optionally "
                             "with `kind`) or `path` (the outline of one file)")
        path_glob = check_glob(path_glob)
        repo_id = self.repo_for(repository)
        if path:
            repo_id, rel = self.safe_path(path, repo_id)
            args = {"path": rel, "kind": kind, "repository": repo_id}
        else:
            args = {"name": name, "kind": kind, "path_glob": path_glob, "repository": repository}
        key, offset, limit, tokens = self._begin("structural_search", args, cursor, limit,
                                                 max_tokens, 20)

        def compute() -> list:
            if path:
                stored = self.ff.store.file_by_path(rel, repo_id)
                if stored is None:
                    raise QueryError(f"{rel} is not in the index (ignored, binary, too large "
                                     "or missing)")
                rows, depth = [], {}
                for s in self.ff.store.symbols_of_file(stored.file_id):
                    d = depth.get(s.parent, -1) + 1 if s.parent else 0
                    depth.setdefault(s.qualname, d)
                    if kind and s.kind != kind:
                        continue
                    rows.append({"name": s.name, "qualname": s.qualname, "kind": s.kind,
                                 "start_line": s.start_line, "end_line": s.end_line,
                                 "depth": d, "signature": _cut(s.signature, 300)})
                return rows
            return [_definition_row(s, tier)
                    for s, tier in self.ff.structural.definitions(
                        name.strip(), kind, repo_id=repo_id, path_glob=path_glob, limit=1000)]

        result = page(self._rows(key, compute), offset, limit, tokens, key)
        mode = {"mode": "outline", "path": rel} if path else {"mode": "definitions", "name": name}
        return {**mode, "kind": kind, **result}

    def find_symbol(self, name: str, kind: str | None = None, path_glob: str | None = None,
                    repository: str | None = None, include_code: bool = True,
                    code_lines: int = 30, limit: int = 5, cursor: str | None = None,
                    max_tokens: int | None = None) -> dict:
        if not name or not name.strip():
            raise QueryError("empty name: give the symbol to look up")
        path_glob = check_glob(path_glob)
        args = {"name": name, "kind": kind, "path_glob": path_glob, "repository": repository}
        key, offset, limit, tokens = self._begin("find_symbol", args, cursor, limit,
                                                 max_tokens, 5)
        repo_id = self.repo_for(repository)

        def compute() -> list:
            found = self.ff.structural.definitions(name.strip(), kind, repo_id=repo_id,
                                                   path_glob=path_glob, limit=1000)
            return [{**_definition_row(s, tier), "_repo": s.file_id} for s, tier in found]

        cache: dict = {}

        def render(row: dict) -> dict:
            out = {k: v for k, v in row.items() if k != "_repo"}
            if include_code and code_lines > 0:
                lines = self._snippet(row["path"], row["start_line"], row["end_line"],
                                      code_lines, repo_id, cache)
                out["code"] = "\n".join(f"{ln['line']:>5}  {ln['text']}" for ln in lines)
                out["code_truncated"] = row["end_line"] - row["start_line"] + 1 > len(lines)
            return out

        result = page(self._rows(key, compute), offset, limit, tokens, key, render)
        notes = [] if result["total"] else [f"no definition matches {name!r}; try "
                                            "intelligent_search or text_pattern_search"]
        return {"name": name, **result, "notes": notes}

    def dependency_search(self, name: str, relation: str = "callers",
                          repository: str | None = None, limit: int = 20,
                          cursor: str | None = None, max_tokens: int | None = None) -> dict:
        relations = ("callers", "callees", "importers", "subclasses")
        if relation not in relations:
            raise QueryError(f"unknown relation {relation!r}; use {', '.join(relations)}")
        if relation == "importers":
            check_glob(name)
        args = {"name": name, "relation": relation, "repository": repository}
        key, offset, limit, tokens = self._begin("dependency_search", args, cursor, limit,
                                                 max_tokens, 20)
        repo_id = self.repo_for(repository)

        def compute() -> list:
            g = self.ff.graph
            if relation == "callers":
                res = g.references(name, limit=GRAPH_CAP, repo_id=repo_id)
            elif relation == "callees":
                res = g.callees(name, limit=GRAPH_CAP, repo_id=repo_id)
            elif relation == "importers":
                res = g.importers(name, limit=GRAPH_CAP, repo_id=repo_id)
            else:
                res = g.references(name, limit=GRAPH_CAP, repo_id=repo_id)
                res["results"] = [r for r in res["results"] if r["kind"] == "inherit"]
            return [[list(res.get("notes", []))]] + res["results"]

        rows = self._rows(key, compute)
        notes, rows = list(rows[0][0]), rows[1:]
        result = page(rows, offset, limit, tokens, key)
        return {"name": name, "relation": relation, **result, "notes": notes}

    def analyze_dependencies(self, name: str, depth: int = 3, repository: str | None = None,
                             limit: int = 30, cursor: str | None = None,
                             max_tokens: int | None = None) -> dict:
        if depth < 1 or depth > 10:
            raise QueryError("depth must be between 1 and 10")
        args = {"name": name, "depth": depth, "repository": repository}
        key, offset, limit, tokens = self._begin("analyze_dependencies", args, cursor, limit,
                                                 max_tokens, 30)
        repo_id = self.repo_for(repository)

        def compute() -> list:
            res = self.ff.graph.impact(name, depth=depth, limit=GRAPH_CAP, repo_id=repo_id)
            return [[list(res.get("notes", []))]] + res["results"]

        rows = self._rows(key, compute)
        notes, rows = list(rows[0][0]), rows[1:]
        by_distance: dict[str, int] = {}
        for r in rows:
            by_distance[str(r["distance"])] = by_distance.get(str(r["distance"]), 0) + 1
        summary = {"dependents": len(rows), "files": len({r["path"] for r in rows}),
                   "by_distance": by_distance}
        result = page(rows, offset, limit, tokens, key)
        return {"name": name, "depth": depth, "summary": summary, **result, "notes": notes}

    def find_similar_code(self, path: str, line: int = 1, repository: str | None = None,
                          limit: int = 10, cursor: str | None = None,
                          max_tokens: int | None = None) -> dict:
        repo_id = self.repo_for(repository)
        repo_id, rel = self.safe_path(path, repo_id)
        if line < 1:
            raise QueryError("line must be at least 1 (lines are 1-based)")
        args = {"path": rel, "repo": repo_id, "line": line}
        key, offset, limit, tokens = self._begin("find_similar_code", args, cursor, limit,
                                                 max_tokens, 10)

        def compute() -> list:
            hits = self.ff.similar_at(rel, line, repo_id, limit=MAX_SIMILAR)
            return [{"path": h.path, "start_line": h.start_line, "end_line": h.end_line,
                     "symbol": h.symbol, "score": round(h.score, 4)} for h in hits]

        return {"path": rel, "line": line, **page(self._rows(key, compute), offset, limit,
                                                   tokens, key)}

    def get_file(self, path: str, start_line: int = 1, end_line: int | None = None,
                 repository: str | None = None, limit: int = 400, cursor: str | None = None,
                 max_tokens: int | None = None) -> dict:
        repo_id = self.repo_for(repository)
        repo_id, rel = self.safe_path(path, repo_id)
        if start_line < 1:
            raise QueryError("start_line must be at least 1 (lines are 1-based)")
        if end_line is not None and end_line < start_line:
            raise QueryError("end_line must not be before start_line")
        args = {"path": rel, "repo": repo_id, "start_line": start_line, "end_line": end_line}
        key, offset, limit, tokens = self._begin("get_file", args, cursor, limit, max_tokens, 400)
        stored = self.ff.store.file_by_path(rel, repo_id)
        if stored is None:
            raise QueryError(f"{rel} is not in the index (missing, ignored, binary or too "
                             "large); use text_pattern_search or intelligent_search to find files")
        lines = self.ff.store.content(stored.file_id).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        total_lines = len(lines)
        last = total_lines if end_line is None else min(end_line, total_lines)
        first = start_line + offset
        shown: list[str] = []
        used = 0
        n = first
        while n <= last and len(shown) < limit:
            text = f"{n:>6}  {_cut(lines[n - 1].rstrip(chr(13)), 2000)}"
            cost = approx_tokens(text)
            if shown and used + cost > tokens:
                break
            shown.append(text)
            used += cost
            n += 1
        nxt = n - start_line
        more = n <= last
        return {"path": rel, "language": stored.language, "total_lines": total_lines,
                "total": max(0, last - start_line + 1), "start_line": first,
                "end_line": n - 1, "returned": len(shown), "text": "\n".join(shown),
                "cursor": encode_cursor(nxt, key) if more else None, "approx_tokens": used}

    def repository_context(self, repository: str | None = None, limit: int = 15,
                           cursor: str | None = None, max_tokens: int | None = None) -> dict:
        args = {"repository": repository}
        key, offset, limit, tokens = self._begin("repository_context", args, cursor, limit,
                                                 max_tokens, 15)
        repo_id = self.repo_for(repository)
        status = self.ff.status()
        now = time.time()
        modalities = self._ready_modalities()
        repos = []
        for r in self.ff.store.repos():
            if repo_id is not None and r.repo_id != repo_id:
                continue
            repos.append({"name": r.name, "root": r.root, "branch": _git_branch(Path(r.root)),
                          "indexed_at": r.indexed_at,
                          "age_seconds": round(now - r.indexed_at, 1) if r.indexed_at else None,
                          "files": r.files, "bytes": r.bytes, "symbols": r.symbols,
                          "chunks": r.chunks, "languages": r.languages,
                          "modalities": modalities})

        def compute() -> list:
            repo_map = self.ff.central(limit=500, repo_id=repo_id)
            return [repo_map["files"], repo_map["symbols"]]

        central_files, central_symbols = self._rows(key, compute)
        half = max(MIN_MAX_TOKENS, tokens // 2)
        files_page = page(central_files, offset, limit, half, key)
        syms_page = page(central_symbols, offset, limit, half, key)
        nxt = offset + max(files_page["returned"], syms_page["returned"])
        more = nxt < max(len(central_files), len(central_symbols))
        freshness = {"watching": self.watching, "pending_changes": self._dirty or self._reindexing,
                     "embedding": self.embedding,
                     "last_index": self.last_index, "last_error": self.last_error}
        return {"index_dir": status["index_dir"], "index_bytes": status["index_bytes"],
                "repositories": repos, "freshness": freshness,
                "total": max(len(central_files), len(central_symbols)),
                "central_files": files_page["results"],
                "central_files_total": len(central_files),
                "central_symbols": syms_page["results"],
                "central_symbols_total": len(central_symbols),
                "cursor": encode_cursor(nxt, key) if more else None}

    def get_task_context(self, task: str, max_tokens: int = 8000, path_glob: str | None = None,
                         language: str | None = None, repository: str | None = None,
                         include_neighbours: bool = True, max_span_lines: int = 80,
                         limit: int = 40, cursor: str | None = None) -> dict:
        if not task or not task.strip():
            raise QueryError("empty task: describe what you are about to do")
        path_glob = check_glob(path_glob)
        args = {"task": task, "path_glob": path_glob, "language": language,
                "repository": repository, "include_neighbours": include_neighbours}
        key, offset, limit, tokens = self._begin("get_task_context", args, cursor, limit,
                                                 max_tokens, 40)
        repo_id = self.repo_for(repository)
        max_span_lines = max(5, min(max_span_lines, 400))

        def compute() -> list:
            options = SearchOptions(preset="default", language=language, path_glob=path_glob,
                                    repo_id=repo_id, limit=15)
            response, notes = self._run_search(task, options)
            spans: list[dict] = []
            for rank, hit in enumerate(response.hits, 1):
                spans.append({"path": hit.path, "start_line": hit.start_line,
                              "end_line": hit.end_line, "symbol": hit.symbol, "kind": hit.kind,
                              "reason": f"search result {rank}", "score": round(hit.score, 6)})
                if include_neighbours and hit.symbol and rank <= 6:
                    spans.extend(self._neighbours(hit.path, hit.symbol, repo_id))
            header = {"intent": response.intent, "modalities": response.modalities,
                      "unavailable": response.unavailable, "notes": notes}
            return [[header]] + _dedupe_spans(spans)

        rows = self._rows(key, compute)
        header, spans = rows[0][0], rows[1:]
        cache: dict = {}
        out: list[dict] = []
        used = 0
        index = offset
        while index < len(spans) and len(out) < limit:
            span = spans[index]
            lines = self._content(span["path"], repo_id, cache) or []
            start = max(1, span["start_line"])
            end = min(span["end_line"], len(lines), start + max_span_lines - 1)
            body = [f"{n:>6}  {_cut(lines[n - 1].rstrip(chr(13)))}" for n in range(start, end + 1)]
            entry = dict(span)
            cost = approx_tokens(entry) + approx_tokens("\n".join(body))
            if used + cost > tokens:
                room = tokens - used - approx_tokens(entry)
                if room < 60 and out:
                    break
                kept, spent = [], 0
                for line in body:
                    c = approx_tokens(line) + 1
                    if spent + c > max(room, 60):
                        break
                    kept.append(line)
                    spent += c
                body = kept or body[:1]
                end = start + len(body) - 1
                cost = approx_tokens(entry) + approx_tokens("\n".join(body))
            entry.update({"start_line": start, "end_line": end, "text": "\n".join(body),
                          "truncated": end < span["end_line"]})
            out.append(entry)
            used += cost
            index += 1
            if used >= tokens:
                break
        return {"task": task, "max_tokens": tokens, "used_tokens": used, "total": len(spans),
                "offset": offset, "returned": len(out), "spans": out,
                "cursor": encode_cursor(index, key) if index < len(spans) else None,
                "search": header}

    def _neighbours(self, path: str, symbol: str, repo_id: int | None) -> list[dict]:
        """The most central definitions a symbol calls, and its most central callers."""
        g = self.ff.graph
        loaded = g.graph()
        try:
            targets = [t for t in g.definitions_of(symbol, repo_id) if t.path == path]
        except FourfoldError:
            return []
        own = {t.symbol_id for t in targets}
        rank = loaded.symbol_rank
        callees = {e.dst_symbol for t in targets for e in loaded.outgoing.get(t.symbol_id, [])
                   if e.kind == "call" and e.resolved and e.dst_symbol is not None
                   and e.dst_symbol not in own}
        callers = {e.src_symbol for t in targets for e in loaded.incoming.get(t.symbol_id, [])
                   if e.src_symbol is not None and e.src_symbol not in own}
        top_callees = sorted(callees, key=lambda sid: (-rank.get(sid, 0.0), sid))[:3]
        top_callers = sorted(callers, key=lambda sid: (-rank.get(sid, 0.0), sid))[:2]
        info = {s.symbol_id: s for s in self.ff.store.symbols_by_id(top_callees + top_callers)}
        out = []
        for sid, reason in ([(sid, f"called by {symbol}") for sid in top_callees]
                            + [(sid, f"calls {symbol}") for sid in top_callers]):
            s = info.get(sid)
            if s is not None:
                out.append({"path": s.path, "start_line": s.start_line, "end_line": s.end_line,
                            "symbol": s.qualname, "kind": s.kind, "reason": reason})
        return out

    def reindex(self) -> dict:
        """Incremental re-index now; returns what changed."""
        if not self._ready.is_set():
            self._ready.wait(FIRST_INDEX_WAIT_S)
        summary = self._index_now("reindex")
        with self._state:
            self._dirty = False
        return {**summary, "total": summary["added"] + summary["changed"] + summary["deleted"],
                "embedding": "in the background" if self.embed_enabled else "off",
                "cursor": None}


def _definition_row(s, tier: int) -> dict:
    return {"path": s.path, "start_line": s.start_line, "end_line": s.end_line,
            "name": s.name, "qualname": s.qualname, "kind": s.kind,
            "signature": _cut(s.signature, 300), "doc": _cut(s.doc or "", 300),
            "language": s.language,
            "match": ("exact", "qualified", "case", "prefix", "subword")[min(tier, 4)]}


def _dedupe_spans(spans: list[dict]) -> list[dict]:
    """Drop spans contained in an earlier one of the same file."""
    kept: list[dict] = []
    for span in spans:
        if any(k["path"] == span["path"] and k["start_line"] <= span["start_line"]
               and span["end_line"] <= k["end_line"] for k in kept):
            continue
        kept.append(span)
    return kept


def _git_branch(root: Path) -> str | None:
    """The checked-out branch (or detached commit), read from .git without running git."""
    try:
        git = root / ".git"
        if git.is_file():
            line = git.read_text().strip()
            if line.startswith("gitdir:"):
                git = (root / line.split(":", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
    except OSError:
        return None
    if head.startswith("ref:"):
        return head.split("refs/heads/", 1)[-1]
    return head[:12] or None


# -- the MCP server ------------------------------------------------------------------------
def build_server(service: FourfoldService):
    """An MCPServer (mcp SDK 2.x) exposing the service's tools."""
    from typing import Annotated, Literal

    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import ToolAnnotations
    from pydantic import Field

    from .. import __version__

    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__)
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                idempotent_hint=True, open_world_hint=False)

    def register(fn, description: str, annotations=read_only):
        @functools.wraps(fn)
        def tool(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except ToolError:
                raise
            except FourfoldError as exc:
                raise ToolError(str(exc)) from None
            except Exception as exc:  # never a traceback to the agent
                log.exception("tool %s failed", fn.__name__)
                raise ToolError(f"internal error in {fn.__name__}: {type(exc).__name__}: "
                                f"{exc}") from None
        server.add_tool(tool, name=fn.__name__, description=description,
                        annotations=annotations, structured_output=True)

    Limit = Annotated[int, Field(ge=1, le=MAX_PAGE, description="Most results in one page.")]
    MaxTokens = Annotated[int | None, Field(
        default=None, ge=MIN_MAX_TOKENS, le=MAX_MAX_TOKENS,
        description=f"Token budget of one page (about 4 characters a token; default "
                    f"{DEFAULT_MAX_TOKENS}).")]
    Cursor = Annotated[str | None, Field(
        default=None, description="The `cursor` of the previous page, to get the next page; "
                                  "repeat the other arguments unchanged.")]
    Repository = Annotated[str | None, Field(
        default=None, description="Repository name or root path when several are indexed; "
                                  "default: all.")]
    PathGlob = Annotated[str | None, Field(
        default=None, description="Only paths matching this glob, relative to the repository "
                                  "root, e.g. 'src/**/*.ts'.")]
    Language = Annotated[str | None, Field(
        default=None, description="Only this language, e.g. 'python', 'typescript'.")]
    Modality = Literal["semantic", "text", "structural", "graph"]
    Snippet = Annotated[int, Field(ge=0, le=40, description="Lines of code shown per result "
                                                             "(0: locations only).")]

    def intelligent_search(
        query: Annotated[str, Field(description="A question, a symbol name, a quoted string "
                                                "or a pattern, in any form.")],
        preset: Annotated[Literal["quick", "default", "thorough"], Field(
            description="quick: semantic only; default: semantic+text+structural; "
                        "thorough: all four modalities.")] = "default",
        modalities: Annotated[list[Modality] | None, Field(
            description="Override the modalities to run.")] = None,
        weights: Annotated[dict[str, float] | None, Field(
            description="Override fusion weights, e.g. {\"text\": 0.7, \"structural\": 0.3}.")]
        = None,
        intent: Annotated[Literal["find_definition", "find_references", "understand_code",
                                  "find_similar", "impact_analysis", "exact_match"] | None,
                          Field(description="Force the intent instead of classifying the "
                                            "query.")] = None,
        language: Language = None, path_glob: PathGlob = None, repository: Repository = None,
        limit: Limit = 10, cursor: Cursor = None, max_tokens: MaxTokens = None,
        snippet_lines: Snippet = 4,
    ) -> dict[str, Any]:
        return service.intelligent_search(query, preset, modalities, weights, intent, language,
                                          path_glob, repository, limit, cursor, max_tokens,
                                          snippet_lines)

    register(intelligent_search,
             "START HERE for any question about the code. Auto-routing search: classifies the "
             "query (find a definition, find references, exact string, understand a concept, "
             "find similar code, impact of a change), runs the right mix of text, structural, "
             "graph and semantic retrieval and fuses the ranked lists. Returns ranked spans "
             "(path, start_line, end_line, symbol, score, a few lines of code) plus the intent "
             "and modalities used. Use the specialised tools only when you already know "
             "exactly which kind of lookup you need. Paged: pass `cursor` for more.")

    def semantic_search(
        query: Annotated[str, Field(description="A natural-language description of the code "
                                                "you are looking for.")],
        language: Language = None, path_glob: PathGlob = None, repository: Repository = None,
        limit: Limit = 10, cursor: Cursor = None, max_tokens: MaxTokens = None,
        snippet_lines: Snippet = 4,
    ) -> dict[str, Any]:
        return service.semantic_search(query, language, path_glob, repository, limit, cursor,
                                       max_tokens, snippet_lines)

    register(semantic_search,
             "Search by meaning: finds code that does what the query describes even when it "
             "shares no words with it ('retry with exponential backoff', 'where do we validate "
             "tokens'). Use it for concept questions when intelligent_search's keyword results "
             "miss. If the semantic index is not ready yet the answer comes from the ready "
             "modalities and `notes`/`unavailable` say so.")

    def text_pattern_search(
        pattern: Annotated[str, Field(description="Literal text, or a regular expression "
                                                  "(RE2 syntax) when regex is true.")],
        regex: Annotated[bool, Field(description="Treat pattern as a regular expression.")]
        = False,
        case_sensitive: Annotated[bool, Field(description="Match case exactly.")] = False,
        whole_word: Annotated[bool, Field(description="Match whole words only.")] = False,
        path_glob: PathGlob = None, repository: Repository = None,
        limit: Annotated[int, Field(ge=1, le=MAX_PAGE, description="Most lines in one page.")]
        = 50,
        cursor: Cursor = None, max_tokens: MaxTokens = None,
    ) -> dict[str, Any]:
        return service.text_pattern_search(pattern, regex, case_sensitive, whole_word,
                                           path_glob, repository, limit, cursor, max_tokens)

    register(text_pattern_search,
             "Exact search, like `grep -rn`: every line matching a literal string or a regular "
             "expression, in path and line order, with `total` counting all matches. Use it for "
             "error messages, config keys, string literals, TODOs, or to enumerate every use of "
             "an identifier textually. Walk all matches with `cursor`. A scan that outlasts its "
             "time budget answers with the lines found so far and `partial: true`.")

    def structural_search(
        name: Annotated[str | None, Field(description="Find definitions with this name "
                                                      "(exact, qualified like 'Class.method', "
                                                      "or a prefix).")] = None,
        kind: Annotated[str | None, Field(description="Only this kind: function, method, "
                                                      "class, interface, struct, enum, type, "
                                                      "constant, module ...")] = None,
        path: Annotated[str | None, Field(description="Instead of name: the outline (every "
                                                      "symbol, nested) of this file.")] = None,
        path_glob: PathGlob = None, repository: Repository = None,
        limit: Annotated[int, Field(ge=1, le=MAX_PAGE, description="Most results in one "
                                                                   "page.")] = 20,
        cursor: Cursor = None, max_tokens: MaxTokens = None,
    ) -> dict[str, Any]:
        return service.structural_search(name, kind, path, path_glob, repository, limit,
                                         cursor, max_tokens)

    register(structural_search,
             "Query the parsed code structure. With `name` (and optionally `kind`): the "
             "definitions of that name with kind, signature, docstring and location. With "
             "`path`: the outline of one file (classes, functions, methods with line ranges "
             "and nesting depth). Use it to see what a file contains before reading it, or to "
             "list every class/function of a name.")

    def find_symbol(
        name: Annotated[str, Field(description="Symbol name: 'parse_config', "
                                               "'Parser.parse', 'UserService'.")],
        kind: Annotated[str | None, Field(description="Only this kind (function, class, "
                                                      "method ...).")] = None,
        path_glob: PathGlob = None, repository: Repository = None,
        include_code: Annotated[bool, Field(description="Include the definition's code.")]
        = True,
        code_lines: Annotated[int, Field(ge=0, le=400, description="Most lines of code per "
                                                                   "definition.")] = 30,
        limit: Annotated[int, Field(ge=1, le=MAX_PAGE, description="Most definitions in one "
                                                                   "page.")] = 5,
        cursor: Cursor = None, max_tokens: MaxTokens = None,
    ) -> dict[str, Any]:
        return service.find_symbol(name, kind, path_glob, repository, include_code, code_lines,
                                   limit, cursor, max_tokens)

    register(find_symbol,
             "Jump to definition: the best-matching definitions of a symbol name (exact first, "
             "then qualified, case-insensitive, prefix), each with its signature, docstring "
             "and code. Use it when you know (roughly) the name of a function, class or type "
             "and want to read it.")

    def dependency_search(
        name: Annotated[str, Field(description="A symbol name (for callers, callees, "
                                               "subclasses) or a file path / module name "
                                               "(for importers).")],
        relation: Annotated[Literal["callers", "callees", "importers", "subclasses"], Field(
            description="callers: call sites and other references of the symbol; callees: "
                        "what it calls; importers: files importing a file or module; "
                        "subclasses: classes inheriting from it.")] = "callers",
        repository: Repository = None,
        limit: Annotated[int, Field(ge=1, le=MAX_PAGE, description="Most results in one "
                                                                   "page.")] = 20,
        cursor: Cursor = None, max_tokens: MaxTokens = None,
    ) -> dict[str, Any]:
        return service.dependency_search(name, relation, repository, limit, cursor, max_tokens)

    register(dependency_search,
             "Navigate the code graph one step: who calls a function (callers), what a "
             "function calls (callees), which files import a module (importers), which classes "
             "extend a class (subclasses). Results name the enclosing symbol and line; "
             "unresolved call sites (same name, definition unknown) are listed last with "
             "resolved=false.")

    def analyze_dependencies(
        name: Annotated[str, Field(description="The symbol you plan to change.")],
        depth: Annotated[int, Field(ge=1, le=10, description="How many hops of dependents "
                                                             "to follow.")] = 3,
        repository: Repository = None,
        limit: Annotated[int, Field(ge=1, le=MAX_PAGE, description="Most dependents in one "
                                                                   "page.")] = 30,
        cursor: Cursor = None, max_tokens: MaxTokens = None,
    ) -> dict[str, Any]:
        return service.analyze_dependencies(name, depth, repository, limit, cursor, max_tokens)

    register(analyze_dependencies,
             "Blast radius before a change: every symbol that depends on the given one, "
             "directly or transitively up to `depth` hops (calls, inheritance, references), "
             "nearest first and then by centrality, with a summary of counts per distance and "
             "files affected. Use it before renaming, changing a signature or deleting code.")

    def get_file(
        path: Annotated[str, Field(description="File path relative to the repository root.")],
        start_line: Annotated[int, Field(ge=1, description="First line (1-based).")] = 1,
        end_line: Annotated[int | None, Field(ge=1, description="Last line (inclusive); "
                                                                "default: end of file.")]
        = None,
        repository: Repository = None,
        limit: Annotated[int, Field(ge=1, le=5000, description="Most lines in one page.")]
        = 400,
        cursor: Cursor = None, max_tokens: MaxTokens = None,
    ) -> dict[str, Any]:
        return service.get_file(path, start_line, end_line, repository, limit, cursor,
                                max_tokens)

    register(get_file,
             "Read a file or a line range, with line numbers, as indexed. Use it after a search "
             "to read the code around a result. Paths stay inside the repository: '..', "
             "absolute paths elsewhere and symlinks out of the root are refused. Long files "
             "are paged: `cursor` continues where the page stopped.")

    def find_similar_code(
        path: Annotated[str, Field(description="File path relative to the repository root.")],
        line: Annotated[int, Field(ge=1, description="A line inside the code to match "
                                                     "(1-based).")] = 1,
        repository: Repository = None,
        limit: Annotated[int, Field(ge=1, le=MAX_PAGE, description="Most results in one "
                                                                   "page.")] = 10,
        cursor: Cursor = None, max_tokens: MaxTokens = None,
    ) -> dict[str, Any]:
        return service.find_similar_code(path, line, repository, limit, cursor, max_tokens)

    register(find_similar_code,
             "Code elsewhere in the repository that resembles the function, class or block at "
             "path:line, by meaning (the semantic index): near-duplicates to change together, "
             "other implementations of the same idea, examples of how a pattern is used. Use "
             "it when you have a piece of code in hand and want its relatives; for a "
             "description in words use semantic_search.")

    def repository_context(
        repository: Repository = None,
        limit: Annotated[int, Field(ge=1, le=MAX_PAGE, description="Most central files and "
                                                                   "symbols listed.")] = 15,
        cursor: Cursor = None, max_tokens: MaxTokens = None,
    ) -> dict[str, Any]:
        return service.repository_context(repository, limit, cursor, max_tokens)

    register(repository_context,
             "A map of the indexed repository: root, branch, languages, size, when it was "
             "indexed, whether the index is being kept fresh, which search modalities are "
             "ready, and the most central files and symbols (PageRank over the code graph). "
             "Call it first in an unfamiliar repository to orient yourself.")

    def get_task_context(
        task: Annotated[str, Field(description="What you are about to do, in a sentence or "
                                               "two, e.g. 'add a retry to the HTTP client'.")],
        max_tokens: Annotated[int, Field(ge=MIN_MAX_TOKENS, le=MAX_MAX_TOKENS,
                                         description="Token budget of the pack.")] = 8000,
        path_glob: PathGlob = None, language: Language = None, repository: Repository = None,
        include_neighbours: Annotated[bool, Field(description="Add the central definitions "
                                                              "the results call and their "
                                                              "callers.")] = True,
        max_span_lines: Annotated[int, Field(ge=5, le=400, description="Longest span "
                                                                       "included.")] = 80,
        limit: Annotated[int, Field(ge=1, le=MAX_PAGE, description="Most spans in one "
                                                                   "pack.")] = 40,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        return service.get_task_context(task, max_tokens, path_glob, language, repository,
                                        include_neighbours, max_span_lines, limit, cursor)

    register(get_task_context,
             "Everything relevant to a task in one call, within a token budget you set: the "
             "most relevant code spans from fused search plus their graph neighbours (the "
             "definitions they call, their callers), deduplicated, with line numbers, best "
             "first. Use it at the start of a coding task instead of many searches; pass "
             "`cursor` to get the spans that did not fit.")

    def reindex() -> dict[str, Any]:
        return service.reindex()

    register(reindex,
             "Bring the index up to date with the files on disk now (incremental: only changed "
             "files are read) and return what changed. The server already watches the files "
             "and re-indexes on change; call this only if results look stale.",
             annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                         idempotent_hint=True, open_world_hint=False))
    return server


# -- transports ------------------------------------------------------------------------------
class BearerTokenMiddleware:
    """ASGI wrapper: every HTTP request must carry `Authorization: Bearer <token>`."""

    def __init__(self, app, token: str):
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = json.dumps({"error": "unauthorized: this fourfold server needs "
                                            "'Authorization: Bearer <token>'"}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b'Bearer realm="fourfold"'),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def resolve_token(host: str, token: str | None) -> str | None:
    """The bearer token to enforce; refuses a non-loopback bind without one."""
    token = token or os.environ.get(TOKEN_ENV) or None
    if host not in LOOPBACK_HOSTS and not token:
        raise FourfoldError(f"refusing to listen on {host} without a bearer token: set "
                            f"{TOKEN_ENV} or pass --token (or bind to 127.0.0.1)")
    return token


def http_app(service: FourfoldService, host: str, token: str | None):
    server = build_server(service)
    app = server.streamable_http_app(host=host)
    return BearerTokenMiddleware(app, token) if token else app


def run_stdio(service: FourfoldService) -> None:
    import anyio
    server = build_server(service)  # import the SDK before indexing competes for the GIL
    service.start()
    anyio.run(server.run_stdio_async)


def run_http(service: FourfoldService, host: str, port: int, token: str | None) -> None:
    import uvicorn
    app = http_app(service, host, token)
    service.start()
    shown = f"[{host}]" if ":" in host else host
    print(f"fourfold MCP server on http://{shown}:{port}/mcp"
          + (" (bearer token required)" if token else ""), file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


# -- command line --------------------------------------------------------------------------
def _common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", default=".", help="repository folder (default: .)")
    parser.add_argument("--index-dir", default=None,
                        help="index folder (default: PATH/.fourfold or the nearest above)")
    parser.add_argument("--no-watch", action="store_true",
                        help="do not watch the files to keep the index fresh")


def add_subcommands(subparsers) -> None:
    """Register `mcp` (stdio) and `serve` (streamable HTTP) on the CLI's subparsers."""
    p = subparsers.add_parser("mcp", help="run the MCP server over stdio (for agents)",
                              description="Run the fourfold MCP server over stdio.")
    _common_args(p)
    p.set_defaults(func=cmd_mcp)
    p = subparsers.add_parser("serve", help="run the MCP server over streamable HTTP",
                              description="Run the fourfold MCP server over streamable HTTP "
                                          "at http://HOST:PORT/mcp.")
    _common_args(p)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1; any other needs a token)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765)")
    p.add_argument("--token", default=None,
                   help=f"bearer token clients must send (default: ${TOKEN_ENV})")
    p.set_defaults(func=cmd_serve)


def _setup_logging() -> None:
    level = os.environ.get("FOURFOLD_LOG", "WARNING").upper()
    logging.basicConfig(level=getattr(logging, level, logging.WARNING), stream=sys.stderr,
                        format="fourfold-mcp %(levelname)s %(message)s")


def _service(args) -> FourfoldService:
    return FourfoldService(args.path, index_dir=args.index_dir, watch=not args.no_watch)


def cmd_mcp(args) -> int:
    _setup_logging()
    try:
        service = _service(args)
    except FourfoldError as exc:
        print(f"fourfold: {exc}", file=sys.stderr)
        return 2
    try:
        run_stdio(service)
    except KeyboardInterrupt:
        pass
    finally:
        service.close()
    return 0


def cmd_serve(args) -> int:
    _setup_logging()
    try:
        token = resolve_token(args.host, args.token)
        service = _service(args)
    except FourfoldError as exc:
        print(f"fourfold: {exc}", file=sys.stderr)
        return 2
    try:
        run_http(service, args.host, args.port, token)
    except KeyboardInterrupt:
        pass
    finally:
        service.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m fourfold.interfaces.mcp_server [PATH] [--http --host H --port N --token T]`."""
    parser = argparse.ArgumentParser(prog="python -m fourfold.interfaces.mcp_server",
                                     description="fourfold MCP server (stdio by default)")
    _common_args(parser)
    parser.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--token", default=None)
    args = parser.parse_args(argv)
    return cmd_serve(args) if args.http else cmd_mcp(args)


if __name__ == "__main__":
    sys.exit(main())
