"""Parse speed and `ast` agreement of the structural parser on the Python standard library.

    python bench/parse_speed.py [STDLIB_DIR] [--workers 2]

Prints files/s for tree-sitter parse + symbol/chunk extraction over every .py file of the
interpreter's standard library folder (site-packages excluded) using a process pool, the
parse-only rate for comparison, the CPU that reference extraction (the graph's input) adds,
and the share of the function/class definitions that `ast`
finds which the parser also finds with the same name and start line.
"""
from __future__ import annotations

import argparse
import ast
import multiprocessing as mp
import os
import sys
import sysconfig
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fourfold.parsing import parse_file  # noqa: E402
from fourfold.parsing.grammars import get_parser  # noqa: E402
from fourfold.parsing.references import extract_references  # noqa: E402
from fourfold.parsing.structure import extract_structure  # noqa: E402


def stdlib_files(root: str) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in ("site-packages", "__pycache__"))
        out.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))
    return out


_PARSER = None


def _init() -> None:
    global _PARSER
    _PARSER = get_parser("python")
    extract_structure(_PARSER.parse(b"def f(): pass\n"), b"def f(): pass\n", "python")  # warm caches


def _work(path: str):
    with open(path, "rb") as fh:
        src = fh.read()
    t0 = time.process_time()
    tree = _PARSER.parse(src)
    symbols, chunks = extract_structure(tree, src, "python")
    cpu = time.process_time() - t0
    t0 = time.process_time()
    extract_references(tree, src, "python", symbols)
    cpu_refs = time.process_time() - t0
    t0 = time.process_time()
    parse_file(src, "python")  # what the indexer runs: one query walk for both
    cpu_indexer = time.process_time() - t0
    return path, [(s.name, s.start_line) for s in symbols if s.kind in ("function", "method", "class")], \
        len(chunks), cpu, cpu_refs, cpu_indexer


def _parse_only(path: str) -> float:
    with open(path, "rb") as fh:
        src = fh.read()
    t0 = time.process_time()
    _PARSER.parse(src)
    return time.process_time() - t0


def ast_defs(path: str) -> list[tuple[str, int]] | None:
    try:
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read())
    except (SyntaxError, ValueError):
        return None
    return [(n.name, n.lineno) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def agreement(results: dict[str, list[tuple[str, int]]]) -> tuple[int, int, list]:
    total = found = 0
    misses = []
    for path, ours in results.items():
        expected = ast_defs(path)
        if expected is None:
            continue
        have = set(ours)
        for item in expected:
            total += 1
            if item in have:
                found += 1
            elif len(misses) < 20:
                misses.append((path, item))
    return found, total, misses


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", nargs="?", default=sysconfig.get_paths()["stdlib"])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    files = stdlib_files(args.root)
    size = sum(os.path.getsize(f) for f in files)
    print(f"corpus: {args.root}: {len(files)} .py files, {size / 1e6:.1f} MB, {args.workers} workers")

    ctx = mp.get_context("fork")
    with ctx.Pool(args.workers, initializer=_init) as pool:
        pool.map(_parse_only, files[:50])  # warm the workers
        t0 = time.perf_counter()
        cpu_parse = sum(pool.imap_unordered(_parse_only, files, chunksize=8))
        t_parse = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = list(pool.imap_unordered(_work, files, chunksize=8))
        t_full = time.perf_counter() - t0
    nsym = sum(len(o[1]) for o in out)
    nchunks = sum(o[2] for o in out)
    cpu_full = sum(o[3] for o in out)
    cpu_refs = sum(o[4] for o in out)
    cpu_indexer = sum(o[5] for o in out)
    n, w = len(files), args.workers
    print(f"load average now: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus (wall-clock rates suffer "
          f"when other work shares the cores; the CPU-time rates do not)")
    print(f"parse only:      wall {n / t_parse:8.1f} files/s | CPU {n / cpu_parse:7.1f} files/s per core, "
          f"x{w} = {w * n / cpu_parse:7.1f} files/s")
    print(f"(wall below includes reference extraction: {n / t_full:.1f} files/s)")
    print(f"parse + extract: CPU {n / cpu_full:7.1f} files/s per core, "
          f"x{w} = {w * n / cpu_full:7.1f} files/s  ({size / 1e6 / cpu_full:.1f} MB/s per core; "
          f"{nsym} defs, {nchunks} chunks)")
    print(f"reference extraction (graph input): +{100 * cpu_refs / cpu_full:.0f}% CPU on top of "
          "parse + extract (own query walk)")
    print(f"parse_file, as the indexer runs it (one query walk for symbols and references): "
          f"CPU {n / cpu_indexer:7.1f} files/s per core, "
          f"+{100 * (cpu_indexer / cpu_full - 1):.0f}% on top of parse + extract")
    found, total, misses = agreement({p: d for p, d, *_ in out})
    print(f"ast agreement:        {found}/{total} = {100.0 * found / max(total, 1):.3f}% "
          f"(FunctionDef/AsyncFunctionDef/ClassDef with same name and start line)")
    for path, item in misses[:10]:
        print(f"  missed {item} in {path}")


if __name__ == "__main__":
    main()
