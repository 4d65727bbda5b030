"""What a second checkout of a known repository costs against a cold index, whole
processes (`fourfold index`, vectors included), side by side in one run:

- cold: the newer tree into an empty index, with an empty embedding cache;
- another snapshot: the newer tree into an index already holding the older one (the
  localization benchmark's case: another release of the same project);
- a fresh checkout: a copy of the newer tree (another folder) into an index already
  holding it (a second clone, a worktree at the same commit).

    python bench/branch_speed.py [--old TREE] [--new TREE] [--repeat 3]

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


def index(tree: Path, index_dir: Path, name: str, cache: Path) -> tuple[float, dict]:
    """(wall seconds, the run's summary) of one `fourfold index` process."""
    env = {**os.environ, "FOURFOLD_CACHE_DIR": str(cache)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "fourfold.interfaces.entry", "index", str(tree),
                           "--index-dir", str(index_dir), "--repository", name, "--json"],
                          env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", type=Path, default=RELEASES / "Django-4.1a1")
    parser.add_argument("--new", type=Path, default=RELEASES / "Django-4.2a1")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"cold": [], "another snapshot": [], "fresh checkout": []}
    summaries: dict[str, dict] = {}
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            copy = tmp / "checkout"
            shutil.copytree(args.new, copy, symlinks=True)
            seconds, summaries["cold"] = index(args.new, tmp / "cold", "new", tmp / "cache1")
            times["cold"].append(seconds)
            index(args.old, tmp / "shared", "project@old", tmp / "cache2")
            seconds, summaries["another snapshot"] = index(args.new, tmp / "shared",
                                                           "project@new", tmp / "cache2")
            times["another snapshot"].append(seconds)
            seconds, summaries["fresh checkout"] = index(copy, tmp / "shared",
                                                         "project@checkout", tmp / "cache2")
            times["fresh checkout"].append(seconds)
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
