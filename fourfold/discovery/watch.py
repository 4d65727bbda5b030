"""Which files changed: a debounced `watchfiles` watcher over the folders the walk visits.

Both the CLI's `fourfold watch` and the MCP server re-index after each batch this yields.
A batch is every change seen within the debounce window, so a branch switch or a formatter
run over the whole tree is one batch and one incremental index, not thousands.

Each folder the walk visits is watched on its own, never recursively: a recursive watch
follows a shipped symlink to a folder outside the repository (a link to `/usr` took 15,713
inotify watches), and watches ignored folders the index never reads.
"""
from __future__ import annotations

import os
import threading
from contextlib import closing
from pathlib import Path
from typing import Iterator

from ..errors import FourfoldError
from .walk import ALWAYS_SKIPPED_DIRS, IGNORE_FILES, walk


# A batch ends once no change has come for a step (or the debounce time is up): an editor's
# save is a few events within milliseconds, and a save waits for at most about two steps.
STEP_MS = 20
WAIT_MS = 500  # how often the watcher looks at `stop` while nothing changes
# what of .git may change the index: its exclude file, and the folders on the way to it
WANTED_IN_GIT = ([".git"], [".git", "info"], [".git", "info", "exclude"])


def watched_folders(root: str, index_dir: str | None) -> set[str]:
    """The real paths of the folders whose changes may change the index: those the walk
    visits (not ignored ones, nor what a symlink points at), and .git and .git/info, to
    see the exclude file come and change."""
    folders = set(walk(root, skip_dirs=(index_dir,) if index_dir else ()).folders)
    git = os.path.join(root, ".git")
    for folder in (git, os.path.join(git, "info")):
        if os.path.isdir(folder) and os.path.realpath(folder) == folder:
            folders.add(folder)
    return folders


def _moves_folders(changes: set, folders: set[str]) -> bool:
    """Whether these changes may change which folders are watched: a folder appeared or
    went, or an ignore file changed."""
    for _, path in changes:
        name = os.path.basename(path)
        if name in IGNORE_FILES or path.endswith(os.sep + os.path.join(".git", "info", "exclude")):
            return True
        if (path in folders) != (os.path.isdir(path) and not os.path.islink(path)):
            return True
    return False


def watch_changes(root: str | os.PathLike, index_dir: str | os.PathLike | None,
                  stop: threading.Event | None = None, debounce_ms: int = 400,
                  step_ms: int = STEP_MS) -> Iterator[set]:
    """Yield each debounced batch of watchfiles (Change, absolute path) pairs; ends when `stop` is set or
    on Ctrl-C. Changes inside `index_dir` (the index writing itself, when it is a folder
    that may lie inside `root`) are not reported. When the folders to watch change, the
    watcher starts again on the new set before it yields the batch that showed it, with
    the root itself named: the whole walk that asks for finds what changed meanwhile."""
    try:
        from watchfiles import Change, watch
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
        return not (ALWAYS_SKIPPED_DIRS & set(parts)) or parts in WANTED_IN_GIT

    folders = watched_folders(root_path, index_path)
    held: set | None = None  # what is yielded once the watcher has started again
    while not (stop is not None and stop.is_set()):
        batches = watch(*sorted(folders), watch_filter=wanted, stop_event=stop,
                        debounce=debounce_ms, step=step_ms, raise_interrupt=False,
                        rust_timeout=WAIT_MS, yield_on_timeout=True, recursive=False)
        with closing(batches):
            try:
                for changes in batches:  # the first comes once every folder is watched
                    if not changes and held is None:
                        if root_path not in folders and os.path.isdir(root_path):
                            folders, held = watched_folders(root_path, index_path), set()
                            break  # the root is back after it went
                        continue
                    # a watched folder added or deleted lost its watch, even where one of
                    # its name is back
                    gone = any(change != Change.modified and path in folders
                               for change, path in changes)
                    if gone or (changes and _moves_folders(changes, folders)):
                        now = watched_folders(root_path, index_path)
                        if now != folders or gone:  # the batch waits for the new watches
                            folders, held = now, (held or set()) | changes
                            break
                    if held is not None:
                        changes, held = held | {(Change.modified, root_path)} | changes, None
                    yield changes
                else:
                    return
            except OSError:  # a folder went, or became a file, before it was watched
                now = watched_folders(root_path, index_path)
                if now == folders:
                    raise  # not that: the watch limit, say
                folders, held = now, held or set()
