"""Which files changed: a debounced `watchfiles` watcher over a folder, its index left out.

Both the CLI's `fourfold watch` and the MCP server re-index after each batch this yields.
A batch is every change seen within the debounce window, so a branch switch or a formatter
run over the whole tree is one batch and one incremental index, not thousands.
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Iterator

from ..errors import FourfoldError


# A batch ends once no change has come for a step (or the debounce time is up): an editor's
# save is a few events within milliseconds, and a save waits for at most about two steps.
STEP_MS = 20


def watch_changes(root: str | os.PathLike, index_dir: str | os.PathLike | None,
                  stop: threading.Event | None = None, debounce_ms: int = 400,
                  step_ms: int = STEP_MS) -> Iterator[set]:
    """Yield each debounced batch of watchfiles (Change, absolute path) pairs; ends when `stop` is set or
    on Ctrl-C. Changes inside `index_dir` (the index writing itself, when it is a folder
    that may lie inside `root`) are not reported."""
    try:
        from watchfiles import DefaultFilter, watch
    except ImportError:
        raise FourfoldError("watching needs the watchfiles package: pip install watchfiles"
                            ) from None
    index_path = str(Path(index_dir).resolve()) if index_dir is not None else None

    class OutsideIndex(DefaultFilter):  # DefaultFilter also drops .git, caches, editor swaps
        def __call__(self, change, path: str) -> bool:
            if index_path and (path == index_path or path.startswith(index_path + os.sep)):
                return False
            return super().__call__(change, path)

    for changes in watch(root, watch_filter=OutsideIndex(), stop_event=stop,
                         debounce=debounce_ms, step=step_ms, raise_interrupt=False,
                         rust_timeout=500, yield_on_timeout=False):
        if changes:
            yield changes
