"""MCP server over HTTP: a client killed mid-session leaves the server answering and its
log free of tracebacks."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from fourfold import Fourfold  # noqa: E402
from tests.interfaces.test_mcp import call, run  # noqa: E402
from tests.servers import PROJECT_ROOT, mcp_http_server, server_env  # noqa: E402

# initializes, says so, then keeps many large answers in flight until it is killed
FLOODING_CLIENT = textwrap.dedent('''\
    import sys
    import anyio
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async def flood():
        async with Client(streamable_http_client(sys.argv[1])) as client:
            print("initialized", flush=True)
            while True:
                async with anyio.create_task_group() as group:
                    for _ in range(10):
                        group.start_soon(client.call_tool, "get_file",
                                         {"path": "big.txt", "limit": 1000, "max_tokens": 10000})

    anyio.run(flood)
''')


def test_killed_client_leaves_no_traceback(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "big.txt").write_text("".join(f"line {i} {'x' * 60}\n" for i in range(5000)))
    (root / "app.py").write_text("def handler():\n    return 'MARKER'\n")
    Fourfold(root).index(embed=False)
    env = server_env()
    stderr = tmp_path / "server.stderr"
    with stderr.open("w") as log, mcp_http_server([str(root)], env, log) as (url, server):
        # killed right after initialize, and with answers being sent or requests being read
        for delay in (0.0, 0.2, 0.5):
            client = subprocess.Popen([sys.executable, "-c", FLOODING_CLIENT, url], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      text=True)
            assert client.stdout.readline().strip() == "initialized"
            time.sleep(delay)
            client.send_signal(signal.SIGKILL)
            client.wait(timeout=10)

        async def still_answers():
            with anyio.fail_after(30):
                async with Client(streamable_http_client(url)) as session:
                    r = await call(session, "text_pattern_search", {"pattern": "MARKER"})
                    assert r["total"] == 1
        run(still_answers)
        time.sleep(0.5)  # what the dropped connections left to log
        assert server.poll() is None, stderr.read_text()
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
    log_text = stderr.read_text()
    assert server.returncode == 130, log_text[:3000]  # Ctrl-C, as the README says
    assert "Traceback" not in log_text, log_text[:3000]
    assert "ERROR" not in log_text, log_text[:3000]


def test_stdio_server_exits_cleanly_when_stdin_closes(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("def handler():\n    return 'MARKER'\n")
    Fourfold(root).index(embed=False)
    server = subprocess.Popen([sys.executable, "-m", "fourfold.interfaces.mcp", str(root),
                               "--no-watch"], env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}}
    server.stdin.write(json.dumps(initialize) + "\n")
    server.stdin.flush()
    assert '"result"' in server.stdout.readline()
    server.stdin.close()  # the client went away
    try:
        assert server.wait(timeout=15) == 0
    finally:
        server.kill()
    assert server.stderr.read() == ""
