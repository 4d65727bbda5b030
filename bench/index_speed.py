"""Cold index time per semble-dev repository: until text, structure and graph answer, and
separately until semantic vectors are complete; then warm query latency per preset.

    python bench/index_speed.py [--repos a,b] [--embedder static]

Each repository is indexed from scratch into a temporary folder with an empty vector cache.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))
import datasets  # noqa: E402

from fourfold import Fourfold, SearchOptions  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repos")
    parser.add_argument("--embedder", default="default")
    args = parser.parse_args()
    wanted = set(args.repos.split(",")) if args.repos else None
    first, embed, queries = [], [], {"default": [], "thorough": [], "direct": []}
    largest = None
    for repo in datasets.semble_repos():
        if wanted and repo["name"] not in wanted:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            os.environ["FOURFOLD_CACHE_DIR"] = str(Path(tmp) / "cache")
            ff = Fourfold(repo["index_root"], index_dir=Path(tmp) / "index",
                          embedder=args.embedder)
            started = time.perf_counter()
            summary = ff.index(embed=False)
            t_first = time.perf_counter() - started
            started = time.perf_counter()
            ff.embed()
            t_embed = time.perf_counter() - started
            first.append(t_first)
            embed.append(t_embed)
            chunks = ff.status()["repositories"][0]["chunks"]
            print(f"{repo['name']:<20} files {summary.files:>5} chunks {chunks:>6}  "
                  f"text+structure+graph {t_first:6.2f} s  semantic {t_embed:6.2f} s",
                  flush=True)
            if largest is None or summary.files > largest[1]:
                largest = (repo["name"], summary.files)
            for preset in ("default", "thorough"):
                for q in repo["queries"]:
                    ff.search(q["query"], SearchOptions(preset=preset))  # warm
                    t0 = time.perf_counter()
                    ff.search(q["query"], SearchOptions(preset=preset))
                    queries[preset].append((time.perf_counter() - t0) * 1000)
            for q in repo["queries"][:5]:
                name = q["query"].split()[0]
                ff.search(f"def {name}")
                t0 = time.perf_counter()
                if ff.search(f"def {name}").fusion_strategy == "direct":
                    queries["direct"].append((time.perf_counter() - t0) * 1000)
            ff.close()
    print(f"median text+structure+graph {statistics.median(first):.2f} s; "
          f"median semantic {statistics.median(embed):.2f} s over {len(first)} repos; "
          f"largest {largest}")
    for name, values in queries.items():
        if values:
            values.sort()
            print(f"query {name}: p50 {statistics.median(values):.1f} ms, "
                  f"p95 {values[int(len(values) * 0.95) - 1]:.1f} ms (n={len(values)})")


if __name__ == "__main__":
    main()
