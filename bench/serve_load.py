"""Many agents at once against one `fourfold serve --store URL`: latency and errors.

Starts the HTTP server on a store that already holds the semble-dev repositories (index
them with `python bench/eval.py semble --store URL`), creates a read token, then runs
CLIENTS concurrent MCP clients for SECONDS. Each client asks the semble-dev questions in a
shuffled order with `intelligent_search`, naming the question's repository, and every
fourth one with no repository (a search across all of them, narrowed first).

    python bench/serve_load.py postgresql://postgres@127.0.0.1:55432/semble \\
        [--clients 16] [--seconds 180]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))
import datasets  # noqa: E402

from fourfold import Fourfold  # noqa: E402
from fourfold.interfaces.http import free_port  # noqa: E402


def start_server(server_args: list[str], port: int) -> subprocess.Popen:
    """`fourfold serve SERVER_ARGS` (this checkout's, no token) on `port`, once it accepts
    connections (the web page bench starts it too)."""
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent)}
    env.pop("FOURFOLD_TOKEN", None)
    proc = subprocess.Popen([sys.executable, "-m", "fourfold.interfaces.mcp", *server_args,
                             "--http", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"server did not start: {proc.stderr.read().decode()}")
            time.sleep(0.2)


async def client_loop(url: str, secret: str, questions: list[tuple[str, str]], until: float,
                      seed: int, latencies: list[float], errors: list[str]) -> None:
    rng = random.Random(seed)
    order = questions[:]
    rng.shuffle(order)
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"},
                                  timeout=120) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            i = 0
            while time.monotonic() < until:
                repo, query = order[i % len(order)]
                args = {"query": query, "limit": 10}
                if i % 4:
                    args["repository"] = repo
                i += 1
                started = time.perf_counter()
                try:
                    result = await client.call_tool("intelligent_search", args)
                    if result.is_error:
                        errors.append(" ".join(getattr(c, "text", "") for c in result.content))
                except Exception as exc:  # a failed call is what this bench counts
                    errors.append(f"{type(exc).__name__}: {exc}")
                latencies.append((time.perf_counter() - started) * 1000)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=180)
    args = parser.parse_args()
    questions = [(repo["name"], q["query"]) for repo in datasets.semble_repos()
                 for q in repo["queries"]]
    ff = Fourfold(store_url=args.store)
    name = f"load-{os.getpid()}"
    secret = ff.create_token(name, "read")
    port = free_port("127.0.0.1")
    server = start_server(["--store", args.store], port)
    latencies: list[float] = []
    errors: list[str] = []
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        until = time.monotonic() + args.seconds

        async def run() -> None:
            async with anyio.create_task_group() as group:
                for seed in range(args.clients):
                    group.start_soon(client_loop, url, secret, questions, until, seed,
                                     latencies, errors)
        started = time.monotonic()
        anyio.run(run)
        elapsed = time.monotonic() - started
    finally:
        server.terminate()
        server.wait(timeout=30)
        ff.revoke_token(name)
        ff.close()
    latencies.sort()
    print(json.dumps({
        "clients": args.clients, "seconds": round(elapsed, 1), "calls": len(latencies),
        "calls_per_s": round(len(latencies) / elapsed, 2),
        "p50_ms": round(statistics.median(latencies), 1),
        "p95_ms": round(latencies[max(int(len(latencies) * 0.95) - 1, 0)], 1),
        "errors": len(errors), "first_errors": errors[:3]}, indent=1))


if __name__ == "__main__":
    main()
