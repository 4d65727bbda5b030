"""Run a function in a forked copy of this process and take its result back.

Graph resolution reads large in-memory tables: a forked child sees them without their being
copied or pickled, and only its result travels back. It travels through an unlinked
temporary file that is read once the child has ended: a big repository's graph (the
kernel's: hundreds of MB as objects) is then never held by both processes at once, beside
the tables the child no longer needs but still holds. Where no child can be had (no fork on
this platform, a daemonic process, fork failing, no temporary file) `Forked.start` returns
None and the caller does the work itself.

A child that opens the index itself needs none of this process's memory, and must not have
its locks: a fork copies a lock another thread holds (SQLite's, while a question is
answered) as held for ever. Such a child is a new interpreter (`Spawned`), given its
function and arguments pickled.
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import select
import subprocess
import sys
import tempfile
from typing import IO, Any, Callable

from ..workers import quiet_worker, start_interpreter


class Forked:
    """A forked child computing `fn(*args)`. Call `result()` or `close()` (which stops
    it): the child is joined either way, and a second call does nothing more."""

    def __init__(self, process, spill: IO[bytes]):
        self.process = process
        self.spill = spill  # where the child pickles its result

    @classmethod
    def start(cls, fn: Callable[..., Any], *args) -> "Forked | None":
        if (multiprocessing.current_process().daemon  # daemonic processes may not have children
                or "fork" not in multiprocessing.get_all_start_methods()):
            return None
        ctx = multiprocessing.get_context("fork")
        try:
            spill = tempfile.TemporaryFile(prefix="fourfold-result-")
        except OSError:
            return None
        # not daemonic, so that the child may fork helpers of its own
        process = ctx.Process(target=_write_result, args=(fn, args, spill))
        try:
            process.start()
        except (AssertionError, OSError):  # no children allowed here, or no memory to fork
            spill.close()
            return None
        return cls(process, spill)

    def finished(self, timeout: float) -> bool:
        """Whether the child ended (with its result or without) within `timeout` s."""
        self.process.join(timeout)
        return not self.process.is_alive()

    def result(self, default: Any = None) -> Any:
        """What `fn` returned, once the child has ended; `default` if it died without
        writing it all."""
        try:
            self.process.join()
            if self.process.exitcode != 0:
                return default
            self.spill.seek(0)
            return pickle.load(self.spill)
        except (EOFError, OSError, pickle.UnpicklingError):
            return default
        finally:
            self.close()

    def close(self, wait: bool = True) -> None:
        """Stop the child; `wait=False` does not wait for it to end (a big process takes a
        while to free its memory), and multiprocessing reaps it later."""
        self.spill.close()
        if self.process.is_alive():
            self.process.terminate()
        if wait:
            self.process.join()


def _write_result(fn: Callable[..., Any], args: tuple, spill: IO[bytes]) -> None:
    quiet_worker()
    pickle.dump(fn(*args), spill, protocol=pickle.HIGHEST_PROTOCOL)
    spill.flush()


class Spawned:
    """A new interpreter computing `fn(*args)`, with Forked's calls. The function must be
    importable by name; the child takes this process's module search path."""

    def __init__(self, process: subprocess.Popen):
        self.process = process

    @classmethod
    def start(cls, fn: Callable[..., Any], *args) -> "Spawned | None":
        try:
            process = start_interpreter("fourfold.graph.forked", "_serve")
        except OSError:
            return None
        try:
            pickle.dump(os.getpid(), process.stdin)
            pickle.dump((fn, args), process.stdin)
            process.stdin.close()
        except OSError:  # it died at once
            process.kill()
            process.wait()
            return None
        return cls(process)

    def finished(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        return bool(ready) or self.process.poll() is not None

    def result(self, default: Any = None) -> Any:
        try:
            data = self.process.stdout.read()
            return pickle.loads(data) if self.process.wait() == 0 and data else default
        except (OSError, pickle.UnpicklingError, EOFError):
            return default
        finally:
            self.close()

    def close(self, wait: bool = True) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        if wait:
            self.process.wait()
        self.process.stdout.close()


def _serve() -> None:
    """A Spawned child: its result goes to the stdout it was given; anything else the work
    prints goes to stderr."""
    quiet_worker(pickle.load(sys.stdin.buffer))
    result_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    fn, args = pickle.load(sys.stdin.buffer)
    pickle.dump(fn(*args), result_out)
    result_out.close()
