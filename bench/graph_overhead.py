"""What the graph modality adds to indexing: cold index time per semble-dev repository with
the graph (reference patterns in the parser's query, resolution, edges, PageRank) and without
it (`index_repository(build_graph=False)`: structure patterns only, no graph build), back to
back.

    python bench/graph_overhead.py [--repos a,b] [--rounds 2] [--full]

Prints per-repository times and the median of the per-repository overheads, each taken
from the median and from the fastest of the rounds (the fastest is the least disturbed by
other load on a shared machine; small repositories swing by a fifth from one round to the
next). By default both sides stop when text and structure are committed (the stricter
comparison); `--full` times what `fourfold index` does, the semantic vectors included
(embedded from an empty vector cache, the bundled static model).
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

from fourfold import Fourfold  # noqa: E402
from fourfold.indexer import index_repository  # noqa: E402


def cold_index(root: str, graph: bool, full: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["FOURFOLD_CACHE_DIR"] = str(Path(tmp) / "cache")
        ff = Fourfold(root, index_dir=Path(tmp) / "index")
        if full:
            ff.semantic.embedder  # the model is loaded once per process, outside the timing
        started = time.perf_counter()
        index_repository(ff.store, ff.root, ff.indexing_lock(), skip_dirs=(str(ff.index_dir),),
                         build_graph=graph)
        if full:
            ff.embed()
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repos")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--full", action="store_true",
                        help="time the whole index, semantic vectors included")
    args = parser.parse_args()
    wanted = set(args.repos.split(",")) if args.repos else None
    by_median, by_fastest = [], []
    for repo in datasets.semble_repos():
        if wanted and repo["name"] not in wanted:
            continue
        with_graph, without = [], []
        for _ in range(args.rounds):
            without.append(cold_index(repo["index_root"], False, args.full))
            with_graph.append(cold_index(repo["index_root"], True, args.full))
        a, b = statistics.median(with_graph), statistics.median(without)
        fa, fb = min(with_graph), min(without)
        by_median.append(a / b - 1)
        by_fastest.append(fa / fb - 1)
        print(f"{repo['name']:<20} median: without graph {b:5.2f} s  with graph {a:5.2f} s  "
              f"+{100 * (a / b - 1):3.0f}%   fastest: {fb:5.2f} s  {fa:5.2f} s  "
              f"+{100 * (fa / fb - 1):3.0f}%", flush=True)
    print(f"median overhead of the graph over {len(by_median)} repositories: "
          f"+{100 * statistics.median(by_median):.0f}% (median rounds), "
          f"+{100 * statistics.median(by_fastest):.0f}% (fastest rounds)")


if __name__ == "__main__":
    main()
