"""Repositories spread over PostgreSQL shards: query latency with 0 (one server), 1, 2 and 3
shards, and the index rate of two indexers writing to two shards at once.

Starts a coordinator and three shard clusters on this machine (tests/postgres.py: initdb as
the postgres user, each on its own port), indexes the semble-dev repositories it finds
materialized (bench/datasets.py prepare) once into the coordinator, then for each layout
places them round-robin on the first N shards (`fourfold shard place`) and asks every
repository's questions ROUNDS times after a warm-up pass, plus each question once more over
all repositories at once. Reports p50/p95 per layout and its ratio to one server.

Index rate: the same tree indexed as two repositories at once, each placed on its own shard
before it is indexed, against one indexer alone on the coordinator; files/s, wall time.

    python bench/shard_speed.py [--rounds 5] [--index-tree bench/.cache/trees/laravel-src]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import os
import subprocess
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))
import datasets  # noqa: E402

import psycopg  # noqa: E402

from fourfold import Fourfold  # noqa: E402
from fourfold.interfaces.cli import main as cli  # noqa: E402
from tests.postgres import Cluster  # noqa: E402


def timings(url: str, repos: list[dict], rounds: int) -> dict:
    ff = Fourfold(store_url=url)
    one, every = [], []
    for round_ in range(rounds + 1):
        for repo in repos:
            view = ff.in_repository(repo["name"])
            for q in repo["queries"]:
                started = time.perf_counter()
                view.search(q["query"], limit=10)
                if round_:
                    one.append((time.perf_counter() - started) * 1000)
    for repo in repos:
        for q in repo["queries"]:
            started = time.perf_counter()
            ff.search_repositories(q["query"], None, limit=10)
            every.append((time.perf_counter() - started) * 1000)
    ff.close()
    return {"one_repository": summary(one), "all_repositories": summary(every)}


def summary(values: list[float]) -> dict:
    ordered = sorted(values)
    return {"p50_ms": round(statistics.median(ordered), 1),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 1), "n": len(ordered)}


def index_rate(coordinator: str, tree: Path, shards: list[str]) -> dict:
    """Two indexers of the same tree as two repositories, on two shards at once; and one
    alone on the coordinator (parses reused from a warm-up run in both)."""
    files = sum(1 for p in tree.rglob("*") if p.is_file() and ".fourfold" not in p.parts)
    empty = Path(tempfile.mkdtemp())
    names = [f"rate/{shard}" for shard in shards]
    for name, shard in zip(names, shards):
        assert cli(["index", str(empty), "--store", coordinator, "--repository", name,
                    "--no-embed"]) == 0
        assert cli(["shard", "place", name, shard, "--store", coordinator]) == 0
    # parses are reused by content across repositories: index the tree once first, so that
    # both measurements below reuse them alike and time the writing
    assert cli(["index", str(tree), "--store", coordinator, "--repository", "rate/warm-up",
                "--no-embed"]) == 0
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent)}
    command = [sys.executable, "-c", "import sys; from fourfold.interfaces.cli import main; "
               "sys.exit(main(sys.argv[1:]))", "index", str(tree), "--store", coordinator,
               "--no-embed", "--repository"]
    started = time.perf_counter()
    workers = [subprocess.Popen(command + [name], env=env, stdout=subprocess.DEVNULL)
               for name in names]  # two indexers, as two machines would run them
    assert all(w.wait() == 0 for w in workers)
    both = time.perf_counter() - started
    started = time.perf_counter()
    assert cli(["index", str(tree), "--store", coordinator, "--repository", "rate/alone",
                "--no-embed"]) == 0
    alone = time.perf_counter() - started
    return {"files_per_repository": files,
            "two_indexers_two_shards": {"wall_s": round(both, 1),
                                        "files_per_s": round(2 * files / both, 1)},
            "one_indexer_coordinator": {"wall_s": round(alone, 1),
                                        "files_per_s": round(files / alone, 1)}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--index-tree", type=Path, default=None)
    parser.add_argument("--no-latency", action="store_true",
                        help="only the index rate (with --index-tree)")
    args = parser.parse_args()
    repos = [r for r in datasets.semble_repos() if r["materialized"]]
    if not repos:
        raise SystemExit("no semble-dev tree is materialized: run bench/datasets.py prepare")
    clusters = [Cluster() for _ in range(4)]
    try:
        for cluster in clusters:
            cluster.start()
        with psycopg.connect(clusters[0].url, autocommit=True) as admin:
            admin.execute("CREATE DATABASE coordinator")
        coordinator = clusters[0].url.rsplit("/", 1)[0] + "/coordinator"
        for repo in repos:
            assert cli(["index", str(repo["index_root"]), "--store", coordinator,
                        "--repository", repo["name"]]) == 0
        shards = [f"s{i}" for i in range(1, 4)]
        for shard, cluster in zip(shards, clusters[1:]):
            assert cli(["shard", "add", shard, cluster.url, "--store", coordinator]) == 0
        results = {"repositories": [r["name"] for r in repos],
                   "questions": sum(len(r["queries"]) for r in repos), "layouts": {}}
        for count in () if args.no_latency else (0, 1, 2, 3):
            for i, repo in enumerate(repos):
                target = shards[i % count] if count else "coordinator"
                assert cli(["shard", "place", repo["name"], target, "--store",
                            coordinator]) == 0
            results["layouts"][f"{count} shards"] = timings(coordinator, repos, args.rounds)
        base = results["layouts"].get("0 shards")
        for layout in results["layouts"].values() if base else ():
            for kind, figures in layout.items():
                figures["p50_ratio"] = round(figures["p50_ms"] / base[kind]["p50_ms"], 2)
        if args.index_tree:
            results["index_rate"] = index_rate(coordinator, args.index_tree, shards[:2])
        print(json.dumps(results, indent=2))
    finally:
        for cluster in clusters:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
