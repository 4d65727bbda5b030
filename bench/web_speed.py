"""The web page's speed on one repository: time to first byte of a result page, and time
until a browser shows the result list.

Starts `fourfold serve` on an indexed folder (loopback, no watching), then for each query
asks, ROUNDS times: the server-rendered result page over HTTP (time to first byte and to
the whole page), and the same page in headless Chromium (from navigation start to the
first result on screen, by the browser's own clock). The first pass of every query is a
warm-up and is not counted. Reports medians and 95th percentiles.

    python bench/web_speed.py bench/.cache/trees/laravel-src [--rounds 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import httpx2

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from fourfold.interfaces.http import free_port  # noqa: E402
from serve_load import start_server  # noqa: E402

QUERIES = [
    "where is Router defined",
    "who calls dispatchToRoute",
    "how are queued jobs retried after failure",
    '"Unable to locate factory"',
    "validation rules for uploaded files",
    "Illuminate\\Support\\Collection",
    "what breaks if I change Container::make",
    "session middleware",
]


def http_times(client: httpx2.Client, url: str) -> tuple[float, float]:
    """(ms to the first byte of the body, ms to the whole page) of one GET."""
    started = time.perf_counter()
    with client.stream("GET", url) as response:
        chunks = response.iter_bytes()
        next(chunks)
        first = time.perf_counter()
        for _ in chunks:
            pass
        assert response.status_code == 200, response.status_code
    return (first - started) * 1000, (time.perf_counter() - started) * 1000


def browser_ms(page, url: str) -> float:
    """ms from navigation start until the first result is on the page (browser clock)."""
    page.goto(url, wait_until="commit")
    page.wait_for_selector(".hit, .empty")
    return page.evaluate("performance.now()")


def summary(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"median_ms": round(statistics.median(ordered), 1),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
            "n": len(ordered)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="an indexed folder")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    files = sum(1 for p in args.root.rglob("*") if p.is_file() and ".fourfold" not in p.parts)
    port = free_port("127.0.0.1")
    server = start_server([str(args.root), "--no-watch"], port)
    base = f"http://127.0.0.1:{port}"
    first_byte, whole, rendered = [], [], []
    try:
        with httpx2.Client(timeout=60) as client, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            page = browser.new_page()
            for round_ in range(args.rounds + 1):
                for query in QUERIES:
                    url = f"{base}/?{urlencode({'q': query})}"
                    times = http_times(client, url)
                    shown = browser_ms(page, url)
                    if round_:  # the first pass warms caches and is left out
                        first_byte.append(times[0])
                        whole.append(times[1])
                        rendered.append(shown)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(json.dumps({"root": str(args.root), "files": files, "queries": len(QUERIES),
                      "rounds": args.rounds, "first_byte": summary(first_byte),
                      "whole_page": summary(whole), "result_list_rendered": summary(rendered)},
                     indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
