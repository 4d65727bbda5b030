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
from .walk import ALWAYS_SKIPPED_DIRS


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
        from watchfiles import watch
    except ImportError:
        raise FourfoldError("watching needs the watchfiles package: pip install watchfiles"
                            ) from None
    index_path = str(Path(index_dir).resolve()) if index_dir is not None else None
    root_path = str(Path(root).resolve())

    def wanted(change, path: str) -> bool:
        """Every change the walk's rules may care about (they decide, in walk_paths): not
        the index writing itself, nor inside .git and the like, but for .git/info/exclude.
        By the path below the root: a root that lies in a `.venv` or `node_modules` (an
        editable install's checkout) is watched like any other."""
        if index_path and (path == index_path or path.startswith(index_path + os.sep)):
            return False
        if not path.startswith(root_path + os.sep):
            return True
        parts = path[len(root_path) + 1:].split(os.sep)
        return not (ALWAYS_SKIPPED_DIRS & set(parts)) or parts == [".git", "info", "exclude"]

    for changes in watch(root, watch_filter=wanted, stop_event=stop,
                         debounce=debounce_ms, step=step_ms, raise_interrupt=False,
                         rust_timeout=500, yield_on_timeout=False):
        if changes:
            yield changes
