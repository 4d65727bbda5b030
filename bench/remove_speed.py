"""What taking repositories out of an index costs, whole processes (`fourfold remove`):
two snapshots of a project indexed into one index (vectors included), then the later one
removed (on a server, a branch of the earlier one's family: only the documents it alone
holds go), then the earlier one (the index's last repository). Prints each step's wall
time and the index's size on disk after it.

    python bench/remove_speed.py [--old TREE] [--new TREE] [--store URL]

With --store (a PostgreSQL server the script may create a database on), the index is a
new database there, dropped at the end.

Defaults: Django 4.1a1 and 4.2a1, as `python bench/datasets.py prepare train` writes them.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
RELEASES = BENCH / ".cache" / "trees" / "releases"


def fourfold(*args: str, cache: Path) -> tuple[float, dict]:
    """(wall seconds, the JSON of its last line) of one fourfold process."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "fourfold.interfaces.entry", *args, "--json"],
                          env={**os.environ, "FOURFOLD_CACHE_DIR": str(cache)},
                          capture_output=True, text=True, check=True)
    return time.perf_counter() - started, json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", type=Path, default=RELEASES / "Django-4.1a1")
    parser.add_argument("--new", type=Path, default=RELEASES / "Django-4.2a1")
    parser.add_argument("--store", help="a PostgreSQL server URL: index into a database there")
    args = parser.parse_args()
    database = None
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.store:
            import psycopg

            database = f"fourfold_remove_{os.getpid()}"
            with psycopg.connect(args.store, autocommit=True) as admin:
                admin.execute(f"CREATE DATABASE {database}")
            where = ["--store", args.store.rsplit("/", 1)[0] + "/" + database]
        else:
            where = ["--index-dir", str(tmp / "index")]
        try:
            for tree, name in ((args.old, "project@old"), (args.new, "project@new")):
                seconds, summary = fourfold("index", str(tree), *where, "--repository", name,
                                            cache=tmp / "cache")
                print(f"index {name:<12} {seconds:7.2f} s  files {summary['files']}, "
                      f"shared {summary['shared']}")
            _, status = fourfold("status", str(args.old), *where, cache=tmp / "cache")
            print(f"index size {status['index_bytes'] / 2**20:8.1f} MiB")
            for name in ("project@new", "project@old"):
                seconds, removed = fourfold("remove", name, *where, cache=tmp / "cache")
                _, status = fourfold("status", str(args.old), *where, cache=tmp / "cache")
                print(f"remove {name:<11} {seconds:7.2f} s  ({removed['results'][0]['files']} "
                      f"files); index size after {status['index_bytes'] / 2**20:8.1f} MiB")
        finally:
            if database:
                with psycopg.connect(args.store, autocommit=True) as admin:
                    admin.execute(f"DROP DATABASE {database} WITH (FORCE)")


if __name__ == "__main__":
    main()
