"""Servers a test starts: a free loopback port, and the MCP server over HTTP run as its own
process, answering once its port accepts and stopped at the end."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from fourfold.interfaces.http import free_port as free_port_on

PROJECT_ROOT = Path(__file__).resolve().parents[1]  # the checkout: fourfold/ and tests/


def free_port() -> int:
    """A loopback port nothing listens on (now)."""
    return free_port_on("127.0.0.1")


def server_env(**extra: str) -> dict[str, str]:
    """The environment of a server under test: this checkout's fourfold, no token unless
    the test gives one."""
    env = {k: v for k, v in os.environ.items() if k != "FOURFOLD_TOKEN"}
    return {**env, "PYTHONPATH": str(PROJECT_ROOT), **extra}


@contextmanager
def mcp_http_server(args: list[str], env: dict[str, str] | None = None,
                    stderr: IO | int = subprocess.PIPE
                    ) -> Iterator[tuple[str, subprocess.Popen]]:
    """`python -m fourfold.interfaces.mcp ARGS --http` on a free port, without watching:
    (its /mcp URL, the process) once it accepts connections; stopped at the end unless the
    test stopped it."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "fourfold.interfaces.mcp", *args, "--http",
                             "--port", str(port), "--no-watch"], env=env or server_env(),
                            stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                assert proc.poll() is None, (proc.stderr.read().decode() if proc.stderr
                                             else Path(stderr.name).read_text())
                assert time.monotonic() < deadline, "server did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
