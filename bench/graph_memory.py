"""Memory and time of one repository's graph resolution, in this process, from an index's
stored facts: the anonymous resident size before, at its peak (sampled every 0.1 s) and
after, and a digest of the edges, so that two versions of the resolver can be compared
side by side on the same facts (same digest: the same edges, numbered the same way).

    python bench/graph_memory.py [--index DIR] [--repository ID]

Defaults: the kernel's index as `bench/big_corpus.py index` writes it, its first repository.
"""
from __future__ import annotations

import argparse
import gc
import hashlib
import threading
import time
from pathlib import Path

import numpy as np

from fourfold.graph.build import release_freed_memory, resolve_and_rank, stored_facts
from fourfold.store.sqlite import SQLiteStore

BENCH = Path(__file__).resolve().parent
KERNEL_INDEX = BENCH / ".cache" / "indexes" / "corpus" / "linux"


def anonymous_mib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon"):
                return int(line.split()[1]) // 1024
    return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path, default=KERNEL_INDEX)
    parser.add_argument("--repository", type=int, default=1)
    args = parser.parse_args()
    gc.disable()  # as the indexer runs resolution
    store = SQLiteStore(args.index / "index.sqlite", readonly=True)
    facts = stored_facts(store, args.repository)
    files = len(facts.files)  # resolve_and_rank empties them
    release_freed_memory()
    before = anonymous_mib()
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            peak[0] = max(peak[0], anonymous_mib())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    graph = resolve_and_rank(facts, parallel=False)
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    edges = graph.edges
    digest = hashlib.sha256()
    for column in ([edges.kinds[k] for k in edges.kind.tolist()],
                   [edges.names[n] for n in edges.name.tolist()], edges.paths, edges.symbols):
        digest.update(repr(column).encode())
    for values in (edges.src_file, edges.dst_file, edges.src_symbol, edges.dst_symbol,
                   edges.line, edges.resolution):
        digest.update(values.astype(np.int64).tobytes())  # values, whatever their width
    print(f"{files} files, {len(edges.name)} edges, resolved and ranked in "
          f"{seconds:.1f} s; anonymous memory {before} MiB with the facts, peak "
          f"{max(peak[0], anonymous_mib())} MiB, after {anonymous_mib()} MiB; "
          f"edges {digest.hexdigest()[:16]}")


if __name__ == "__main__":
    main()
