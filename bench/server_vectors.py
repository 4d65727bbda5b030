"""Vectors on a PostgreSQL store at scale: how a batch of vectors is put as the model's
vectors grow, and the time and memory of reading them back and taking the binary codes.

    python bench/server_vectors.py --store postgresql://user@host:port/db

The database must be empty (the script refuses one holding a fourfold index). It writes a
synthetic repository of FILES files of CHUNKS chunks each, then puts every chunk's vector
and as many again of no chunk here (another repository's), BATCH a call as an embedding
run does; reads the repository's vectors back in the blocks the codes are taken from
(`Store.vector_blocks`, 8,192 a block); then takes its binary codes anew (`refresh_codes`:
that read, the mean, the codes and their write). Run it from a checkout: the fourfold it
imports is the one of the working directory, so two checkouts compare side by side.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import time
import tracemalloc
from typing import Callable

sys.path.insert(0, os.getcwd())  # the checkout it is run from, not this script's

import fourfold  # noqa: E402
from fourfold.model import Chunk  # noqa: E402
from fourfold.semantic.indexing import refresh_codes  # noqa: E402
from fourfold.store.base import FileRecord, FileStamp  # noqa: E402
from fourfold.store.postgres import PostgresStore  # noqa: E402

DIM = 256  # bytes of one int8 vector of the bundled static model
MODEL = "static-fit"  # the name its vectors are stored under


def _record(number: int, chunks: int) -> FileRecord:
    path = f"src/module_{number:05d}.py"
    lines = [f"def function_{number}_{i}(): return {i}" for i in range(chunks)]
    return FileRecord(
        path, FileStamp(1, 1, 1, number), hashlib.blake2b(path.encode()).hexdigest(), "python",
        0, "\n".join(lines) + "\n", [],
        [Chunk(i + 1, i + 1, line, None, "text") for i, line in enumerate(lines)], "[]",
        [f"function {number} {i} return" for i in range(chunks)],
        [f"{path}#{i}" for i in range(chunks)])


def _vector(key: str) -> bytes:
    return hashlib.shake_128(key.encode()).digest(DIM)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--files", type=int, default=2500)
    parser.add_argument("--chunks", type=int, default=40, help="chunks a file")
    parser.add_argument("--batch", type=int, default=2000, help="vectors a put_vectors call")
    args = parser.parse_args()
    print(f"fourfold from {os.path.dirname(fourfold.__file__)}")
    store = PostgresStore(args.store)
    if not store.is_empty():
        raise SystemExit("the database holds an index already: give an empty one")
    repo = store.ensure_repo("/src/synthetic", "synthetic")
    started = time.perf_counter()
    for first in range(0, args.files, 100):
        store.write_batch(repo, [_record(n, args.chunks)
                                 for n in range(first, min(first + 100, args.files))], [], [])
    print(f"wrote {args.files:,} files, {args.files * args.chunks:,} chunks in "
          f"{time.perf_counter() - started:.1f} s")

    keys = [f"src/module_{n:05d}.py#{i}" for n in range(args.files) for i in range(args.chunks)]
    keys += [f"elsewhere#{i}" for i in range(len(keys))]  # another repository's vectors
    timings = []
    started = time.perf_counter()
    for first in range(0, len(keys), args.batch):
        rows = [(key, _vector(key), 0.01) for key in keys[first:first + args.batch]]
        began = time.perf_counter()
        store.put_vectors(MODEL, rows)
        timings.append(time.perf_counter() - began)
    tenth = max(1, len(timings) // 10)
    print(f"put {len(keys):,} vectors in {len(timings)} calls: "
          f"{time.perf_counter() - started:.1f} s; a call's median in the first tenth "
          f"{statistics.median(timings[:tenth]) * 1000:.1f} ms, in the last tenth "
          f"{statistics.median(timings[-tenth:]) * 1000:.1f} ms; "
          f"vector_count {store.vector_count(MODEL):,}")

    read, seconds, peak = _measured(lambda: sum(
        len(ids) for ids, _, _ in store.vector_blocks(MODEL, repo, size=8192)))
    print(f"read {read:,} vectors of the repository in blocks in {seconds:.1f} s, "
          f"peak memory traced {peak / 2**20:.1f} MiB")
    coded, seconds, peak = _measured(lambda: refresh_codes(store, MODEL, repo))
    print(f"took the repository's {coded:,} binary codes anew (read, mean, codes, write) in "
          f"{seconds:.1f} s, peak memory traced {peak / 2**20:.1f} MiB")
    store.close()


def _measured(work: Callable[[], int]) -> tuple[int, float, int]:
    """What `work` returns, its seconds and the peak bytes Python allocated meanwhile."""
    tracemalloc.start()
    started = time.perf_counter()
    result = work()
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, seconds, peak


if __name__ == "__main__":
    main()
