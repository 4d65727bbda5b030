"""What every process fourfold forks (parser pool, graph resolver) does first."""
from __future__ import annotations

import ctypes
import signal
import sys

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def quiet_worker() -> None:
    """A forked worker inherits the parent's signal handlers. Ctrl-C reaches the whole
    process group, so the worker ignores it and lets the parent stop it; SIGTERM (the
    parent's pool ending it, or a kill) ends it at once, without a traceback on stderr."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform == "linux":  # nor does it outlive a parent killed before it could stop it
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
