"""What every process fourfold starts (parser pool, graph resolver, grep workers) does
first, and how a new interpreter is started."""
from __future__ import annotations

import ctypes
import json
import multiprocessing
import os
import signal
import subprocess
import sys

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def start_interpreter(module: str, function: str) -> subprocess.Popen:
    """A new interpreter running `module.function()`, with pipes for its stdin and
    stdout and this process's module search path. -P: the folder it starts in (perhaps a
    repository being indexed, untrusted) is not searched first for modules, not even
    before that path is set."""
    process = subprocess.Popen(
        [sys.executable, "-P", "-c", "import json, sys; "
         "sys.path[:] = json.loads(sys.stdin.buffer.readline()); "
         f"from {module} import {function}; {function}()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True)
    try:
        process.stdin.write(json.dumps(sys.path).encode() + b"\n")
        process.stdin.flush()
    except OSError:  # it died at once
        process.kill()
        process.wait()
        raise
    return process


def quiet_worker(parent_pid: int | None = None, die_with_parent: bool = True) -> None:
    """A forked worker inherits the parent's signal handlers. Ctrl-C reaches the whole
    process group, so the worker ignores it and lets the parent stop it; SIGTERM (the
    parent's pool ending it, or a kill) ends it at once, without a traceback on stderr.
    `parent_pid`: the process that started this one, when multiprocessing did not.
    `die_with_parent`: ended when the thread that started it ends (Linux sends the signal
    then, not when the process does); a worker kept across threads says no, and ends when
    its parent's pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform == "linux" and die_with_parent:
        # nor does it outlive a parent killed before it could stop it
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        # a parent killed before the line above leaves the signal unsent: gone already
        started_by = multiprocessing.parent_process()
        if parent_pid is None and started_by is not None:
            parent_pid = started_by.pid
        if parent_pid is not None and os.getppid() != parent_pid:
            os._exit(1)
