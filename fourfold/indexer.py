"""Indexing: discovery -> parsing (both cores) -> store, incrementally.

A re-index reads only files whose size or mtime changed (and writes only those whose
content hash changed). Each batch is one transaction, so a crash or Ctrl-C leaves every
file either at its old or its new version and the index usable; readers keep working (WAL).
"""
from __future__ import annotations

import fcntl
import gc
import hashlib
import multiprocessing
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable

from .discovery.classify import content_flags, path_flags
from .discovery.languages import detect_language
from .discovery.walk import DEFAULT_MAX_FILE_BYTES, FoundFile, walk
from .errors import FourfoldError, IndexBusyError
from .parsing import parse_file, parser_fingerprint
from .store.base import FileRecord, Store, encode_references
from .text_tokens import chunk_body, token_text

BATCH_FILES = 48
PARALLEL_BYTES = 256 * 1024  # below this much changed source, parsing in-process is faster
BINARY_SNIFF_BYTES = 8192

Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass
class IndexSummary:
    root: str
    files: int = 0
    added: int = 0
    changed: int = 0
    deleted: int = 0
    unchanged: int = 0
    read: int = 0
    bytes: int = 0
    seconds: float = 0.0
    embedded: int = 0
    embed_seconds: float = 0.0
    skipped: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def chunk_hash(path: str, symbol: str | None, body: str) -> str:
    """Cache key of a chunk's embedding: same path, symbol and text embed the same."""
    return hashlib.blake2b(f"{path}\0{symbol or ''}\0{body}".encode("utf-8", "replace"),
                           digest_size=16).hexdigest()


def read_file(found: FoundFile, references: bool = True) -> FileRecord | tuple[str, str]:
    """Read, classify and parse one file; (path, reason) when it is skipped."""
    try:
        with open(found.abspath, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return found.path, "deleted during indexing"
    except OSError:
        return found.path, "unreadable file"
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return found.path, "binary"
    text = data.decode("utf-8", errors="replace")
    name = found.path.rsplit("/", 1)[-1]
    language = detect_language(name, data[:256])
    flags = path_flags(found.path) | content_flags(data)
    try:
        parsed = parse_file(text.encode("utf-8"), language, references)
    except RecursionError:
        return found.path, "too deeply nested to parse"
    lines = text.split("\n")
    bodies = [chunk_body(lines, c.start_line, c.end_line) for c in parsed.chunks]
    return FileRecord(
        path=found.path, size=len(data), mtime_ns=found.mtime_ns,
        hash=hashlib.blake2b(data, digest_size=16).hexdigest(), language=language,
        flags=flags, text=text, symbols=parsed.symbols, chunks=parsed.chunks,
        references=encode_references(parsed.references),
        chunk_tokens=[token_text(b) for b in bodies],
        chunk_hashes=[chunk_hash(found.path, c.symbol, b) for c, b in zip(parsed.chunks, bodies)])


class IndexLock:
    """One writer per index: a second indexer waits up to `wait_s` for the first to finish,
    then gets a clear refusal, never a corrupt index."""

    POLL_S = 0.25

    def __init__(self, index_dir: Path, wait_s: float = 0.0):
        self.path = index_dir / "index.lock"
        self.wait_s = wait_s
        self.handle = None

    def __enter__(self) -> "IndexLock":
        self.handle = open(self.path, "a+")
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(self.POLL_S)
                    continue
                self.handle.seek(0)
                holder = self.handle.read().strip() or "another process"
                self.handle.close()
                raise IndexBusyError(f"another fourfold indexer ({holder}) is updating "
                                     f"{self.path.parent}; try again when it finishes") from None
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(f"pid {os.getpid()}")
        self.handle.flush()
        return self

    def __exit__(self, *exc) -> None:
        self.handle.seek(0)
        self.handle.truncate()
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


_pause_lock = threading.Lock()
_pauses = 0  # indexing runs that want the collector paused (threads of one process)
_collector_was_enabled = True


@contextmanager
def _collector_paused():
    """Indexing allocates millions of small objects that form no cycles (records, symbols,
    references, edges); each full collection of the cyclic garbage collector would rescan
    all of them, up to a third of graph resolution's time. The collector is per process, so
    the pause covers every thread (an MCP server's too) until the last indexing run ends."""
    global _pauses, _collector_was_enabled
    with _pause_lock:
        if _pauses == 0:
            _collector_was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses -= 1
            if _pauses == 0 and _collector_was_enabled:
                gc.enable()


def _parse_all(found: list[FoundFile], workers: int, references: bool):
    read = partial(read_file, references=references)
    if workers <= 1 or len(found) < 2 or sum(f.size for f in found) < PARALLEL_BYTES:
        yield from map(read, found)
        return
    ctx = multiprocessing.get_context("fork")
    workers = min(workers, len(found))
    with ctx.Pool(workers) as pool:
        # Small chunks keep both workers busy to the end when a few files are huge.
        chunksize = max(1, min(8, len(found) // (workers * 16)))
        yield from pool.imap(read, found, chunksize=chunksize)


def index_repository(store: Store, index_dir: Path, root: str | os.PathLike,
                     max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
                     workers: int | None = None, progress: Progress | None = None,
                     build_graph: bool = True, wait_s: float = 0.0) -> IndexSummary:
    """Bring the index of one repository up to date with its files on disk.

    `build_graph=False` leaves references and the graph out (to measure what they cost);
    `wait_s`: how long to wait for another indexer of the same index to finish."""
    root_path = Path(root).resolve()
    if not root_path.is_dir():
        raise FourfoldError(f"{root} is not a folder")
    started = time.perf_counter()
    summary = IndexSummary(root=str(root_path))
    workers = workers or os.cpu_count() or 1
    with IndexLock(index_dir, wait_s), _collector_paused():
        repo_id = store.ensure_repo(str(root_path), root_path.name)
        report = walk(root_path, max_file_bytes=max_file_bytes, skip_dirs=(str(index_dir),))
        summary.skipped = dict(report.skipped)
        known = store.file_states(repo_id)
        on_disk = {f.path for f in report.files}
        deleted = [p for p in known if p not in on_disk]
        # what the files were read with; without references is another reading
        parser = parser_fingerprint() if build_graph else "without references " + parser_fingerprint()
        reparse = bool(known) and store.parser_of(repo_id) != parser
        to_read = [f for f in report.files
                   if reparse or f.path not in known or known[f.path].size != f.size
                   or known[f.path].mtime_ns != f.mtime_ns]
        summary.files = len(report.files)
        summary.bytes = sum(f.size for f in report.files)
        summary.unchanged = len(report.files) - len(to_read)
        summary.deleted = len(deleted)
        summary.read = len(to_read)

        records: list[FileRecord] = []
        touched: list[tuple[str, int, int]] = []
        skipped_paths: list[str] = []
        done = 0

        def flush() -> None:
            nonlocal records, touched, skipped_paths, deleted
            if records or touched or deleted or skipped_paths:
                store.write_batch(repo_id, records, deleted + skipped_paths, touched)
            records, touched, skipped_paths, deleted = [], [], [], []

        for result in _parse_all(to_read, workers, build_graph):
            done += 1
            if isinstance(result, tuple):
                path, reason = result
                summary.skipped[reason] = summary.skipped.get(reason, 0) + 1
                if path in known:
                    skipped_paths.append(path)  # was indexed, no longer indexable
            else:
                old = known.get(result.path)
                if old is not None and old.hash == result.hash and not reparse:
                    touched.append((result.path, result.size, result.mtime_ns))
                    summary.unchanged += 1
                else:
                    records.append(result)
                    if old is None:
                        summary.added += 1
                    else:
                        summary.changed += 1
            if len(records) >= BATCH_FILES:
                flush()
            if progress:
                progress("parse", done, len(to_read))
        flush()
        if summary.added or summary.changed or summary.deleted or reparse:
            if build_graph:
                from .graph.build import rebuild_graph  # numpy/scipy: loaded only when needed
                rebuild_graph(store, repo_id, parallel=workers > 1)
            else:  # files were written without references: no edge may point into them
                store.replace_graph(repo_id, [], {}, {})
        store.mark_indexed(repo_id, time.time(), parser)
    summary.seconds = time.perf_counter() - started
    return summary
