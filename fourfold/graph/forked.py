"""Run a function in a forked copy of this process and take its result back by pipe.

Graph resolution reads large in-memory tables: a forked child sees them without their being
copied or pickled, and only its result travels back. Where no child can be had (no fork on
this platform, a daemonic process, fork failing) `Forked.start` returns None and the caller
does the work itself.

A result is pickled straight into the pipe and read from it as it comes: a big repository's
graph would otherwise be held whole as bytes on both sides, beside the objects it is made
of (the kernel's: hundreds of MB each, at the indexing run's peak).

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
from typing import Any, Callable

from ..workers import quiet_worker

POLL_S = 0.2


class Forked:
    """A forked child computing `fn(*args)`. Call `result()` or `close()` (which stops
    it): the child is joined either way, and a second call does nothing more."""

    def __init__(self, process, receiver):
        self.process = process
        self.receiver = receiver

    @classmethod
    def start(cls, fn: Callable[..., Any], *args) -> "Forked | None":
        if (multiprocessing.current_process().daemon  # daemonic processes may not have children
                or "fork" not in multiprocessing.get_all_start_methods()):
            return None
        ctx = multiprocessing.get_context("fork")
        receiver, sender = ctx.Pipe(duplex=False)
        # not daemonic, so that the child may fork helpers of its own
        process = ctx.Process(target=_send_result, args=(fn, args, sender, receiver))
        try:
            process.start()
        except (AssertionError, OSError):  # no children allowed here, or no memory to fork
            receiver.close()
            sender.close()
            return None
        sender.close()
        return cls(process, receiver)

    def finished(self, timeout: float) -> bool:
        """Whether the result came, or the child ended without it, within `timeout` s."""
        return self.receiver.poll(timeout) or not self.process.is_alive()

    def result(self, default: Any = None) -> Any:
        """What `fn` returned; `default` if the child died without sending it. Liveness is
        polled rather than waiting for end-of-file: a process forked meanwhile by another
        thread may hold the pipe's write end open."""
        try:
            while not self.receiver.poll(POLL_S):
                if not self.process.is_alive() and not self.receiver.poll(0):
                    return default
            try:
                with os.fdopen(os.dup(self.receiver.fileno()), "rb") as stream:
                    return pickle.load(stream)
            except (EOFError, OSError, pickle.UnpicklingError):
                return default
        finally:
            self.close()

    def close(self, wait: bool = True) -> None:
        """Stop the child; `wait=False` does not wait for it to end (a big process takes a
        while to free its memory), and multiprocessing reaps it later."""
        self.receiver.close()
        if self.process.is_alive():
            self.process.terminate()
        if wait:
            self.process.join()


def _send_result(fn: Callable[..., Any], args: tuple, sender, receiver) -> None:
    # The child's copy of the read end is closed first: were the parent gone, a result
    # larger than the pipe's buffer would otherwise wait forever for a reader, and keep
    # the index lock this process inherited.
    receiver.close()
    quiet_worker()
    result = fn(*args)
    try:
        with os.fdopen(os.dup(sender.fileno()), "wb") as stream:
            pickle.dump(result, stream, protocol=pickle.HIGHEST_PROTOCOL)
    except OSError:  # BrokenPipeError: nobody waits for the result any more
        pass
    finally:
        sender.close()


class Spawned:
    """A new interpreter computing `fn(*args)`, with Forked's calls. The function must be
    importable by name; the child takes this process's module search path."""

    def __init__(self, process: subprocess.Popen):
        self.process = process

    @classmethod
    def start(cls, fn: Callable[..., Any], *args) -> "Spawned | None":
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", "from fourfold.graph.forked import _serve; _serve()"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True)
        except OSError:
            return None
        try:
            pickle.dump((os.getpid(), sys.path), process.stdin)
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
            result = pickle.load(self.process.stdout)
            return result if self.process.wait() == 0 else default
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
    parent_pid, sys.path[:] = pickle.load(sys.stdin.buffer)
    quiet_worker(parent_pid)
    result_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    fn, args = pickle.load(sys.stdin.buffer)
    pickle.dump(fn(*args), result_out, protocol=pickle.HIGHEST_PROTOCOL)
    result_out.close()
