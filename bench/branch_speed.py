"""What a second checkout of a known repository costs against a cold index, whole
processes (`fourfold index`, vectors included), side by side in one run:

- cold: the newer tree into an empty index, with an empty embedding cache;
- another snapshot: the newer tree into an index already holding the older one (the
  localization benchmark's case: another release of the same project);
- a fresh checkout: a copy of the newer tree (another folder) into an index already
  holding it (a second clone, a worktree at the same commit).

    python bench/branch_speed.py [--old TREE] [--new TREE] [--repeat 3] [--store URL]
    python bench/branch_speed.py --localization [--repeat 3]

With --localization, each pair of localization-dev instances of one repository next to each
other (its trees at consecutive base commits, as `python bench/datasets.py prepare` writes
them) is measured in turn, the older as the snapshot indexed before, and the sums printed:
the localization benchmark's own case, issue after issue of one repository.

With --store (a PostgreSQL server the script may create databases on), each case indexes
into a database of its own instead of an embedded index.

Defaults: Django 4.1a1 and 4.2a1, as `python bench/datasets.py prepare train` writes them.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
RELEASES = BENCH / ".cache" / "trees" / "releases"
LOCALIZE = BENCH / ".cache" / "trees" / "localize"


def index(tree: Path, where: list[str], name: str, cache: Path) -> tuple[float, dict]:
    """(wall seconds, the run's summary) of one `fourfold index` process into `where`
    (--index-dir DIR or --store URL)."""
    env = {**os.environ, "FOURFOLD_CACHE_DIR": str(cache)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "fourfold.interfaces.entry", "index", str(tree),
                           *where, "--repository", name, "--json"],
                          env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", type=Path, default=RELEASES / "Django-4.1a1")
    parser.add_argument("--new", type=Path, default=RELEASES / "Django-4.2a1")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--store", help="a PostgreSQL server URL: index into databases there")
    parser.add_argument("--localization", action="store_true",
                        help="every pair of localization-dev instances next to each other")
    args = parser.parse_args()
    made: list[str] = []

    def place(tmp: Path, case: str) -> list[str]:
        """Where one case indexes: a folder, or a new database on the server."""
        if not args.store:
            return ["--index-dir", str(tmp / case)]
        import psycopg

        database = f"fourfold_branch_{case}_{len(made)}"
        with psycopg.connect(args.store, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {database}")
        made.append(database)
        return ["--store", args.store.rsplit("/", 1)[0] + "/" + database]

    def measure(old: Path, new: Path) -> tuple[dict[str, list[float]], dict[str, dict]]:
        """Each case's seconds, and its last run's summary."""
        times: dict[str, list[float]] = {"cold": [], "another snapshot": [],
                                         "fresh checkout": []}
        summaries: dict[str, dict] = {}
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                tmp = Path(tmp)
                copy = tmp / "checkout"
                shutil.copytree(new, copy, symlinks=True)
                seconds, summaries["cold"] = index(new, place(tmp, "cold"), "new",
                                                   tmp / "cache1")
                times["cold"].append(seconds)
                shared = place(tmp, "shared")
                index(old, shared, "project@old", tmp / "cache2")
                seconds, summaries["another snapshot"] = index(new, shared, "project@new",
                                                               tmp / "cache2")
                times["another snapshot"].append(seconds)
                seconds, summaries["fresh checkout"] = index(copy, shared, "project@checkout",
                                                             tmp / "cache2")
                times["fresh checkout"].append(seconds)
        return times, summaries

    try:
        if args.localization:
            _each_pair(measure, args.repeat)
        else:
            _one_pair(args.old, args.new, *measure(args.old, args.new), args.repeat)
    finally:
        if made:
            import psycopg

            with psycopg.connect(args.store, autocommit=True) as admin:
                for database in made:
                    admin.execute(f"DROP DATABASE {database}")


def _one_pair(old: Path, new: Path, times: dict[str, list[float]], summaries: dict[str, dict],
              repeat: int) -> None:
    cold = statistics.median(times["cold"])
    print(f"{old.name} -> {new.name}, median of {repeat}:")
    for case, values in times.items():
        s = summaries[case]
        median = statistics.median(values)
        print(f"{case:<17} {median:6.2f} s  ({cold / median:4.2f}x faster than cold)  "
              f"files {s['files']}, new to it {s['added'] + s['changed']}, shared {s['shared']}, "
              f"parses reused {s['reused']}, embedded {s['embedded']}  "
              f"[{', '.join(f'{v:.2f}' for v in values)}]")


def _each_pair(measure, repeat: int) -> None:
    """Every localization-dev repository's instances in order of their numbers, each pair
    next to each other measured: one line each, then the sums of the medians."""
    by_repository: dict[str, list[Path]] = {}
    for tree in sorted(LOCALIZE.iterdir()):
        if tree.is_dir():
            by_repository.setdefault(tree.name.rpartition("-")[0], []).append(tree)
    cases = ("cold", "another snapshot", "fresh checkout")
    sums = dict.fromkeys(cases, 0.0)
    print(f"{'pair':<44} {'files':>5} {'new':>5}  " + "  ".join(f"{c:>16}" for c in cases)
          + f"  median of {repeat}")
    for trees in by_repository.values():
        trees.sort(key=lambda t: int(t.name.rpartition("-")[2]))
        for old, new in zip(trees, trees[1:]):
            times, summaries = measure(old, new)
            medians = {case: statistics.median(times[case]) for case in cases}
            for case in cases:
                sums[case] += medians[case]
            snapshot = summaries["another snapshot"]
            print(f"{old.name + ' -> ' + new.name.rpartition('-')[2]:<44} "
                  f"{snapshot['files']:5} {snapshot['added'] - snapshot['shared']:5}  "
                  + "  ".join(f"{medians[c]:6.2f} s ({medians['cold'] / medians[c]:4.2f}x)"
                              for c in cases), flush=True)
    print(f"{'all (sum of medians)':<56}  " + "  ".join(
        f"{sums[c]:6.2f} s ({sums['cold'] / sums[c]:4.2f}x)" for c in cases))


if __name__ == "__main__":
    main()
