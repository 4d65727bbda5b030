"""What a second checkout of a known repository costs against a cold index, whole
processes (`fourfold index`, vectors included), side by side in one run:

- cold: the newer tree into an empty index, with an empty embedding cache;
- another snapshot: the newer tree into an index already holding the older one (the
  localization benchmark's case: another release of the same project);
- a fresh checkout: a copy of the newer tree (another folder) into an index already
  holding it (a second clone, a worktree at the same commit).

    python bench/branch_speed.py [--old TREE] [--new TREE] [--repeat 3] [--store URL]

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

    times: dict[str, list[float]] = {"cold": [], "another snapshot": [], "fresh checkout": []}
    summaries: dict[str, dict] = {}
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            copy = tmp / "checkout"
            shutil.copytree(args.new, copy, symlinks=True)
            seconds, summaries["cold"] = index(args.new, place(tmp, "cold"), "new",
                                               tmp / "cache1")
            times["cold"].append(seconds)
            shared = place(tmp, "shared")
            index(args.old, shared, "project@old", tmp / "cache2")
            seconds, summaries["another snapshot"] = index(args.new, shared, "project@new",
                                                           tmp / "cache2")
            times["another snapshot"].append(seconds)
            seconds, summaries["fresh checkout"] = index(copy, shared, "project@checkout",
                                                         tmp / "cache2")
            times["fresh checkout"].append(seconds)
    if made:
        import psycopg

        with psycopg.connect(args.store, autocommit=True) as admin:
            for database in made:
                admin.execute(f"DROP DATABASE {database}")
    cold = statistics.median(times["cold"])
    print(f"{args.old.name} -> {args.new.name}, median of {args.repeat}:")
    for case, values in times.items():
        s = summaries[case]
        median = statistics.median(values)
        print(f"{case:<17} {median:6.2f} s  ({cold / median:4.2f}x faster than cold)  "
              f"files {s['files']}, new to it {s['added'] + s['changed']}, shared {s['shared']}, "
              f"parses reused {s['reused']}, embedded {s['embedded']}  "
              f"[{', '.join(f'{v:.2f}' for v in values)}]")


if __name__ == "__main__":
    main()
