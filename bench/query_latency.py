"""Warm query latency on semble-dev repositories, several rounds of each repository's queries.

    python bench/query_latency.py [--repos gson,nvm] [--rounds 5] [--preset default]

Uses the indexes bench/eval.py keeps (index them with it first); every query runs once to
warm up, then `--rounds` times, and the p50 / p95 of all timings are printed per repository.
A single pass of 20 queries swings by a few milliseconds on a shared machine; rounds steady it.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))
import datasets  # noqa: E402
import eval as harness  # noqa: E402

from fourfold import Fourfold, SearchOptions  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repos", default="gson,nvm")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--preset", default="default")
    args = parser.parse_args()
    wanted = args.repos.split(",")
    options = SearchOptions(preset=args.preset)
    for repo in datasets.semble_repos():
        if repo["name"] not in wanted:
            continue
        index_dir = harness.INDEXES / "semble" / repo["name"]
        if not index_dir.is_dir():
            print(f"{repo['name']}: no index yet; run `python bench/eval.py semble` first")
            continue
        ff = Fourfold(repo["index_root"], index_dir=index_dir)
        queries = [q["query"] for q in repo["queries"]]
        for query in queries:
            ff.search(query, options)
        timings = []
        for _ in range(args.rounds):
            for query in queries:
                started = time.perf_counter()
                ff.search(query, options)
                timings.append((time.perf_counter() - started) * 1000)
        timings.sort()
        print(f"{repo['name']:<20} {args.preset}: p50 {statistics.median(timings):.1f} ms, "
              f"p95 {timings[int(len(timings) * 0.95)]:.1f} ms ({len(timings)} timings)")


if __name__ == "__main__":
    main()
