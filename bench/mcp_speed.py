"""MCP server over stdio: time from start to first answer, and tool-call latency p50.

    python bench/mcp_speed.py [--files 10000] [--runs 5] [--first TOOL] [--keep DIR]

Writes a synthetic Python repository of --files files (packages of modules, each with a
class and helpers calling each other), indexes it once (not timed), then --runs times
launches `fourfold mcp ROOT --no-watch` as a subprocess through the official MCP client and
times process launch -> `initialize` answered -> first result of --first (default
text_pattern_search; medians reported). The last run then times 21 calls of each tool
(median reported). The tree lives in a temporary folder unless --keep names one.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fourfold import Fourfold  # noqa: E402

MODULE = '''"""Module {i}."""
from pkg{p:02d}.sub{s} import mod{prev:05d}


class Widget{i}:
    """A widget that runs helper {i}."""

    def run(self, value):
        return helper_{i}(value) + mod{prev:05d}.helper_{prev}(value)


def helper_{i}(value):
    return value * {i} % 97
'''


def write_repo(root: Path, files: int) -> None:
    for i in range(files):
        p, s = i // 1000, (i // 100) % 10
        folder = root / f"pkg{p:02d}" / f"sub{s}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").touch()
        prev = max(i - 1, p * 1000 + s * 100)
        (folder / f"mod{i:05d}.py").write_text(MODULE.format(i=i, p=p, s=s, prev=prev))


FIRST_CALLS = {"text_pattern_search": {"pattern": "helper_4242", "limit": 5},
               "find_symbol": {"name": "helper_4242", "limit": 1}}
CALLS = [("find_symbol", {"name": "Widget77", "limit": 3}),
         ("text_pattern_search", {"pattern": "helper_99", "limit": 20}),
         ("intelligent_search", {"query": "Widget123.run", "limit": 5}),
         ("dependency_search", {"name": "helper_70", "relation": "callers"}),
         ("get_file", {"path": "pkg00/sub0/mod00007.py"})]


def server_command(root: Path) -> StdioServerParameters:
    """`fourfold mcp ROOT --no-watch`, the console script of this interpreter's environment."""
    script = Path(sys.executable).parent / "fourfold"
    return StdioServerParameters(command=str(script), args=["mcp", str(root), "--no-watch"],
                                 env=dict(os.environ))  # PYTHONPATH too: compare two trees


async def start_once(root: Path, first_tool: str, latency_calls: list
                     ) -> tuple[float, float, dict]:
    """(seconds to `initialize` answered, seconds to the first tool result, tool p50 ms)."""
    started = time.perf_counter()
    async with Client(server_command(root)) as client:  # entering it runs `initialize`
        to_initialized = time.perf_counter() - started
        first = await client.call_tool(first_tool, FIRST_CALLS[first_tool])
        to_first = time.perf_counter() - started
        assert not first.is_error, first.content
        latency = {}
        for name, arguments in latency_calls:
            samples = []
            for _ in range(21):
                t0 = time.perf_counter()
                answer = await client.call_tool(name, arguments)
                samples.append(time.perf_counter() - t0)
                assert not answer.is_error, answer.content
            latency[name] = round(statistics.median(samples) * 1000, 1)
    return to_initialized, to_first, latency


async def measure(root: Path, runs: int, first_tool: str) -> None:
    initialized, first = [], []
    for run in range(runs):
        to_initialized, to_first, latency = await start_once(
            root, first_tool, CALLS if run == runs - 1 else [])
        initialized.append(to_initialized)
        first.append(to_first)
        print(f"run {run + 1}: initialize {to_initialized:.2f} s, first answer {to_first:.2f} s")
    print(f"median of {runs}: start -> initialize {statistics.median(initialized):.2f} s, "
          f"start -> first {first_tool} result {statistics.median(first):.2f} s")
    print(f"tool p50 ms {latency}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--first", choices=sorted(FIRST_CALLS), default="text_pattern_search",
                        help="the tool whose first result ends the start-up figure")
    parser.add_argument("--keep")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.keep) if args.keep else Path(tmp) / "repo"
        if not (root / ".fourfold").exists():
            write_repo(root, args.files)
        started = time.perf_counter()
        summary = Fourfold(root).index()
        print(f"{summary.files} files indexed in {time.perf_counter() - started:.1f} s "
              "(not part of the figures below)")
        anyio.run(measure, root, args.runs, args.first)


if __name__ == "__main__":
    main()
