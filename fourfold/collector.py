"""The cyclic garbage collector paused while millions of small objects are made that form
no cycles (records, symbols, references, edges, the names of a graph read): each full
collection would rescan all of them (up to a third of graph resolution's time). A search
pauses it too: the few thousand objects a question makes live until its answer, so
collections in between promoted them to the oldest generation, whose full collections
then came every dozen questions (50-200 ms each, most of an issue text's 95th
percentile). The collector is per process, so a pause covers every thread (an MCP
server's too) until the last pause ends: the few cycles a search leaves (about 8 objects)
wait for a moment with no search or index run going."""
from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_pauses = 0  # pauses wanted now (threads of one process)
_was_enabled = True


@contextmanager
def collector_paused() -> Iterator[None]:
    global _pauses, _was_enabled
    with _lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                gc.enable()
