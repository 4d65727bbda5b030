"""Graph query latency: `impact NAME --depth 3` on a warm index of a semble-dev repository.

    python bench/graph_speed.py [--repo NAME] [--queries 60]

Default repository: the one with the most graph edges. Targets are the most central symbols
(the worst case: the widest blast radius) and a seeded random sample of the others; each query
runs once to warm up, then timed. The index is kept in bench/.cache/indexes/semble/NAME.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))
import datasets  # noqa: E402

from fourfold import Fourfold  # noqa: E402

INDEXES = BENCH / ".cache" / "indexes" / "semble"


def open_repo(repo: dict) -> Fourfold:
    ff = Fourfold(repo["index_root"], index_dir=INDEXES / repo["name"])
    ff.index()
    return ff


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo")
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args()
    repos = [r for r in datasets.semble_repos() if not args.repo or r["name"] == args.repo]
    if args.repo:
        ff, name = open_repo(repos[0]), repos[0]["name"]
    else:
        best = None
        for repo in repos:
            candidate = open_repo(repo)
            edges = len(candidate.store.all_edges())
            if best is None or edges > best[0]:
                best = (edges, candidate, repo["name"])
        _, ff, name = best
    edges = len(ff.store.all_edges())
    symbol_rank, _ = ff.store.centrality()
    ranked = sorted(symbol_rank, key=lambda sid: -symbol_rank[sid])
    half = args.queries // 2
    chosen = ranked[:half] + random.Random(7).sample(ranked[half:], min(half, len(ranked) - half))
    symbols = ff.store.symbols_by_id(chosen)
    for label, group in (("most central", symbols[:half]), ("random", symbols[half:]),
                         ("all", symbols)):
        times, sizes = [], []
        for s in group:
            qualified = s.qualname
            ff.impact(qualified, depth=3)  # warm
            started = time.perf_counter()
            result = ff.impact(qualified, depth=3)
            times.append((time.perf_counter() - started) * 1000)
            sizes.append(result["total"])
        times.sort()
        print(f"{name} ({edges} edges) impact depth 3, {label}: n={len(times)} "
              f"p50 {statistics.median(times):.1f} ms, p95 {times[int(len(times) * .95) - 1]:.1f}"
              f" ms, median blast radius {statistics.median(sizes):.0f} (max {max(sizes)})")


if __name__ == "__main__":
    main()
