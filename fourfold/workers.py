"""What every process fourfold forks (parser pool, graph resolver) does first."""
from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def quiet_worker(parent_pid: int | None = None) -> None:
    """A forked worker inherits the parent's signal handlers. Ctrl-C reaches the whole
    process group, so the worker ignores it and lets the parent stop it; SIGTERM (the
    parent's pool ending it, or a kill) ends it at once, without a traceback on stderr.
    `parent_pid`: the process that started this one, when multiprocessing did not."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform == "linux":  # nor does it outlive a parent killed before it could stop it
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        # a parent killed before the line above leaves the signal unsent: gone already
        started_by = multiprocessing.parent_process()
        if parent_pid is None and started_by is not None:
            parent_pid = started_by.pid
        if parent_pid is not None and os.getppid() != parent_pid:
            os._exit(1)
