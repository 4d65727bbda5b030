"""How long one repository's best chunks by BM25 take in an embedded index shared by
several repositories (each question of a shared index, and each repository a search over
some of them weighs): `SQLiteStore.bm25_chunks(terms, limit, repo_id)` for every
repository of the index, a few questions, limits 5 and 50, in-process. Prints the median,
p95 and worst in ms, and a digest of every answer (ids, paths and scores) to compare two
versions of the code by.

    python bench/shared_text_speed.py [--index DIR]

Default: the index `python bench/eval.py semble --shared` builds (21 repositories).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

QUESTIONS = ["how are routes registered", "parse the configuration file", "error handling retry",
             "render template", "serialize json", "connection pool timeout", "the"]


def main() -> None:
    from fourfold.store.index_dir import DB_NAME
    from fourfold.store.sqlite import SQLiteStore
    from fourfold.tokens import query_terms

    parser = argparse.ArgumentParser()
    parser.add_argument("--index", type=Path,
                        default=BENCH / ".cache" / "indexes" / "semble-shared")
    args = parser.parse_args()
    store = SQLiteStore(args.index / DB_NAME)
    repos = store.repos(counts=False)
    digest = hashlib.sha256()
    for limit in (5, 50):
        times = []
        for repo in repos:
            for question in QUESTIONS:
                terms = query_terms(question)
                started = time.perf_counter()
                best = store.bm25_chunks(terms, limit, repo.repo_id)
                times.append((time.perf_counter() - started) * 1000)
                digest.update(json.dumps([(c.chunk_id, c.path, round(score, 4))
                                          for c, score in best]).encode())
        times.sort()
        print(f"limit {limit}: median {statistics.median(times):.2f} ms, p95 "
              f"{times[int(len(times) * 0.95)]:.2f} ms, worst {times[-1]:.1f} ms "
              f"({len(repos)} repositories x {len(QUESTIONS)} questions)")
    print("answers digest", digest.hexdigest()[:16])
    store.close()


if __name__ == "__main__":
    main()
