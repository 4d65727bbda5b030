"""A whole grep through many files, shared among worker processes.

Searching is Python work for every file and every matching line, so one process gets one
core's worth of it (a common pattern through the Linux kernel: 26,000 files, 573 MB,
about a second). Worker processes each read a share of the candidate files from the store
over their own connection, search them, and send back only the matching lines; the caller
puts the shares back in path order. The workers are new interpreters (not forks: a process
serving questions runs threads, and a fork copies the locks they hold; nor
multiprocessing's, which would run the caller's main script again in each), started by
the first grep that needs them and kept until the index is closed; a store has one set,
whichever of its repositories greps. One grep uses them at a time; another meanwhile
searches by itself.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

from ..workers import quiet_worker, start_interpreter

POOL_MIN_FILES = 2048  # fewer candidate files are searched in the calling process
POOL_BATCH = 512  # files a worker reads and searches at a time
MAX_WORKERS = 8
IN_FLIGHT = 2  # batches sent ahead to each worker
RESTART_AFTER_S = 60.0  # workers that failed are not started again before this

# (position among the files asked about, [(line number, line)]) of each file of a batch
# with a match, and whether the time budget ran out before the batch's end
BatchLines = tuple[list[tuple[int, list[tuple[int, str]]]], bool]


class PoolUnavailable(Exception):
    """Another grep uses the workers, or one could not be started or died: the caller
    searches by itself."""


def pool_workers() -> int:
    """One worker a core this process may use, at least two (the caller mostly waits), at
    most MAX_WORKERS."""
    cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
             else os.cpu_count() or 1)
    return max(2, min(MAX_WORKERS, cores))


class GrepPool:
    """Worker processes that grep a store's files; `address` is the store's address()."""

    def __init__(self, address: tuple[str, str], workers: int | None = None):
        self.address = address
        self.workers = workers or pool_workers()
        self._processes: list[subprocess.Popen] = []
        self._lock = threading.Lock()
        self._closed = False
        self._failed_at = -RESTART_AFTER_S  # when workers last failed to start

    def batches(self, finder, file_ids: list[int], deadline: float) -> Iterator[BatchLines]:
        """Each POOL_BATCH files' matching lines, a batch at a time in the order of
        `file_ids`, searched by the workers meanwhile. `finder`: a text.Finder. Raises
        PoolUnavailable, before the first batch or after any (the workers are then
        stopped, to be started again by a later grep)."""
        if not self._lock.acquire(blocking=False):
            raise PoolUnavailable("the grep workers are busy")
        try:
            self._start()
            yield from self._batches(finder, file_ids, deadline)
        except (OSError, EOFError, pickle.UnpicklingError, ValueError, IndexError) as exc:
            # a worker died (perhaps unable to open the store) or sent its error, or close()
            # came from another thread: greps search by themselves for a while
            self._stop()
            self._failed_at = time.monotonic()
            raise PoolUnavailable(str(exc)) from None
        finally:
            self._lock.release()

    def _batches(self, finder, file_ids: list[int], deadline: float) -> Iterator[BatchLines]:
        parts = [file_ids[start:start + POOL_BATCH]
                 for start in range(0, len(file_ids), POOL_BATCH)]
        count = len(self._processes)
        sent = 0
        outstanding = [0] * count

        def send_next() -> None:
            nonlocal sent
            self._send(sent % count, (finder, parts[sent], deadline))
            outstanding[sent % count] += 1
            sent += 1

        while sent < min(len(parts), count * IN_FLIGHT):
            send_next()
        for index in range(len(parts)):
            outstanding[index % count] -= 1
            found, partial = self._receive(index % count)
            if sent < len(parts):
                send_next()
            try:
                yield ([(index * POOL_BATCH + position, lines) for position, lines in found],
                       partial)
            except GeneratorExit:
                # the caller stopped early (a partial batch): what the workers still send
                # is read and dropped (past the deadline they answer at once), else they
                # are stopped
                try:
                    for worker, left in enumerate(outstanding):
                        for _ in range(left):
                            self._receive(worker)
                except (OSError, EOFError, pickle.UnpicklingError, ValueError, IndexError):
                    self._stop()
                raise

    def _start(self) -> None:
        if self._closed:
            raise PoolUnavailable("the index is closed")
        if (len(self._processes) == self.workers
                and all(p.poll() is None for p in self._processes)):
            return
        if time.monotonic() - self._failed_at < RESTART_AFTER_S:
            raise PoolUnavailable("the grep workers failed a moment ago")
        self._stop()
        self._failed_at = time.monotonic()  # until they are up
        for _ in range(self.workers):
            process = start_interpreter("fourfold.retrievers.grep_pool", "_serve")
            self._processes.append(process)
            pickle.dump((os.getpid(), self.address), process.stdin)
            process.stdin.flush()
        self._failed_at = -RESTART_AFTER_S

    def _send(self, worker: int, request: tuple) -> None:
        stream = self._processes[worker].stdin
        pickle.dump(request, stream, protocol=pickle.HIGHEST_PROTOCOL)
        stream.flush()

    def _receive(self, worker: int) -> BatchLines:
        reply = pickle.load(self._processes[worker].stdout)
        if isinstance(reply, str):  # the worker's error, in words
            raise OSError(reply)
        return reply

    def close(self) -> None:
        """Stop the workers for good: a later grep searches by itself."""
        self._closed = True
        self._stop()

    def _stop(self) -> None:
        processes, self._processes = self._processes, []
        for process in processes:
            for stream in (process.stdin, process.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            if process.poll() is None:
                process.terminate()
            process.wait()


def _serve() -> None:
    """A worker: requests come pickled on stdin, replies go pickled to the stdout it was
    given (anything else printed goes to stderr), until stdin closes."""
    from ..store import open_store

    requests = sys.stdin.buffer
    parent_pid, address = pickle.load(requests)
    # kept across the caller's threads: it ends when the caller's pipe closes
    quiet_worker(parent_pid, die_with_parent=False)
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    store = open_store(address)
    compiled: dict = {}  # the last finder sent, compiled: one grep sends it with each batch
    while True:
        try:
            finder, file_ids, deadline = pickle.load(requests)
        except EOFError:
            return
        try:
            if finder not in compiled:
                compiled.clear()
                compiled[finder] = finder.compiled()
            reply: BatchLines | str = _search(store, *compiled[finder], file_ids, deadline)
        except Exception as exc:  # sent back: the caller searches by itself
            reply = f"grep worker: {type(exc).__name__}: {exc}"
        pickle.dump(reply, replies, protocol=pickle.HIGHEST_PROTOCOL)
        replies.flush()


def _search(store, find, utf8: bool, first: Callable[[bytes], int] | None,
            file_ids: list[int], deadline: float) -> BatchLines:
    from .text import matching_lines

    texts = store.utf8_contents(file_ids) if utf8 else store.contents(file_ids)
    found: list[tuple[int, list[tuple[int, str]]]] = []
    for position, file_id in enumerate(file_ids):
        if time.monotonic() > deadline:
            return found, True
        # a file deleted since the candidates were listed holds no line
        lines = matching_lines(texts.get(file_id, b"" if utf8 else ""), find, first)
        if lines:
            found.append((position, lines))
    return found, False

