#!/usr/bin/env python3
"""Baseline: semble 0.7.0 in its BM25-only mode on the benchmark dev data, offline.

Run with the python of the separate semble venv (never the project venv)::

    python3 -m venv bench/.cache/semble-venv
    bench/.cache/semble-venv/bin/pip install semble==0.7.0
    bench/.cache/semble-venv/bin/python bench/semble_baseline.py [semble] [localize] \
        [--repeats 3] [--repo NAME ...] [--paths repo|index] [--loc-top-k 20] [--out DIR]

The trees must exist first (``python bench/datasets.py prepare``).

BM25-only mode = ``SembleIndex.search(query, alpha=0.0)``: semble fuses semantic and BM25
rank scores as ``alpha * semantic + (1 - alpha) * bm25`` and drops zero-scored candidates, so with
alpha=0 only BM25 candidates survive, followed by semble's usual code reranking (multi-chunk file
boost, identifier boost, path penalties). semble still wants an embedding model to build and
query its dense index; instead of downloading its default model from the Hugging Face hub we
give it a stand-in model2vec StaticModel built locally (a one-token word-level tokenizer, 8-dim
vectors: every text embeds to a zero vector), so nothing touches the network and the dense side
costs almost nothing. semble's on-disk cache and savings stats go to a temporary folder
(SEMBLE_CACHE_LOCATION) so every index is built cold.

Index time = wall time of ``SembleIndex.from_path(index_root)`` (walk, chunk, BM25, stand-in
embedding), median over --repeats builds after a warm-up load of the model. Query latency =
wall time of one ``search`` call (top_k=10 for semble-dev).

Localization is file-level: the issue text is searched with top_k=--loc-top-k chunks (default
20) and the chunks are reduced to distinct files in rank order. top_k matters to semble (it
over-fetches 5*top_k candidates before reranking): top_k 10 or 20 gives acc@1 0.50, 30 gives
0.45, 50+ gives 0.41; acc@5/acc@10 are 0.77/0.82 throughout.

On a shared machine wall times swing with load, so process CPU time of each build and query is
recorded too (cpu_* fields).

Outputs (default bench/.cache/semble-baseline/): semble-results.jsonl, localize-results.jsonl,
in the scorer's format, scored with shared/bench/score.py; timings.json.
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

_TMP_CACHE = tempfile.mkdtemp(prefix="semble-cache-")
os.environ["SEMBLE_CACHE_LOCATION"] = _TMP_CACHE  # no cache hits, stats file kept out of $HOME
os.environ.setdefault("SEMBLE_INDEX_WORKERS", "0")  # chunk in-process (2 shared cores)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"

sys.path.insert(0, str(Path(__file__).resolve().parent))
import datasets  # noqa: E402  (bench/datasets.py, stdlib only)

try:
    import numpy as np
    from model2vec import StaticModel
    from semble import SembleIndex
    from semble import __version__ as SEMBLE_VERSION
    from semble.index.dense import load_model
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
except ImportError as e:  # pragma: no cover
    raise SystemExit(f"{e}: run this with bench/.cache/semble-venv/bin/python (pip install semble==0.7.0)")

import semble.index.create as _create  # noqa: E402

_EMBED_S = [0.0]
_orig_embed = _create.embed_chunks


def _timed_embed(model, chunks):
    """Time semble's embedding step (stand-in model) so it can be reported separately."""
    t0 = time.perf_counter()
    try:
        return _orig_embed(model, chunks)
    finally:
        _EMBED_S[0] += time.perf_counter() - t0


_create.embed_chunks = _timed_embed

STANDIN_MODEL = datasets.CACHE_DIR / "semble-standin-model"
DEFAULT_OUT = datasets.CACHE_DIR / "semble-baseline"


def standin_model() -> str:
    """Build (once) the offline stand-in embedding model; returns its folder."""
    if not (STANDIN_MODEL / "model.safetensors").is_file():
        tok = Tokenizer(WordLevel({"[UNK]": 0, "[PAD]": 1}, unk_token="[UNK]"))
        tok.pre_tokenizer = WhitespaceSplit()
        StaticModel(np.ones((2, 8), dtype=np.float32), tok, normalize=True).save_pretrained(
            str(STANDIN_MODEL))
    return str(STANDIN_MODEL)


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def build(root: Path, model_path: str, repeats: int):
    """Index root `repeats` times; returns the last index and lists of wall times, stand-in
    embedding times and process CPU times (seconds)."""
    times, embeds, cpu, index = [], [], [], None
    for _ in range(max(1, repeats)):
        _EMBED_S[0] = 0.0
        c0, t0 = time.process_time(), time.perf_counter()
        index = SembleIndex.from_path(root, model_path=model_path)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        embeds.append(_EMBED_S[0])
    return index, times, embeds, cpu


def to_hit(chunk, prefix: str | None) -> dict:
    path = chunk.file_path.replace(os.sep, "/")
    if prefix:
        path = f"{prefix.rstrip('/')}/{path}"
    return {"path": path, "start_line": chunk.start_line, "end_line": chunk.end_line}


def score(kind: str, data: Path, results: Path, only: list[str] | None = None) -> dict:
    cmd = [sys.executable, str(datasets.DATA_DIR / "score.py"), kind, str(data), str(results)]
    for name in only or []:
        cmd += ["--repo", name]
    print("$ python3 " + " ".join(cmd[1:]), flush=True)
    subprocess.run(cmd, check=True)
    return json.loads(subprocess.run(cmd + ["--json"], check=True, capture_output=True,
                                     text=True).stdout)


def run_semble(args, model_path: str, out: Path) -> dict:
    repos = [r for r in datasets.semble_repos() if not args.repo or r["name"] in args.repo]
    results_path = out / "semble-results.jsonl"
    timing = {}
    with results_path.open("w") as fh:
        for r in repos:
            root = r["index_root"]
            if not root.is_dir():
                print(f"{r['name']}: tree missing ({root}); run datasets.py prepare", flush=True)
                continue
            index, itimes, etimes, icpu = build(root, model_path, args.repeats)
            lat, qcpu = [], []
            prefix = r["benchmark_root"] if args.paths == "repo" else None
            for q in r["queries"]:
                c0, t0 = time.process_time(), time.perf_counter()
                hits = index.search(q["query"], top_k=args.top_k, alpha=0.0)
                lat.append(time.perf_counter() - t0)
                qcpu.append(time.process_time() - c0)
                fh.write(json.dumps({"id": q["id"], "results": [to_hit(h.chunk, prefix)
                                                                 for h in hits]}) + "\n")
            st = index.stats
            timing[r["name"]] = {"files": st.indexed_files, "chunks": st.total_chunks,
                                 "index_ms": [t * 1e3 for t in itimes],
                                 "index_median_ms": statistics.median(itimes) * 1e3,
                                 "embed_median_ms": statistics.median(etimes) * 1e3,
                                 "cpu_index_median_ms": statistics.median(icpu) * 1e3,
                                 "cpu_query_p50_ms": pct(qcpu, 0.5) * 1e3,
                                 "query_ms": [t * 1e3 for t in lat],
                                 "query_p50_ms": pct(lat, 0.5) * 1e3}
            print(f"indexed {r['name']:20} files={st.indexed_files:4} chunks={st.total_chunks:5} "
                  f"index_median={timing[r['name']]['index_median_ms']:7.1f}ms "
                  f"(stand-in embed {timing[r['name']]['embed_median_ms']:5.1f}ms) "
                  f"query_p50={timing[r['name']]['query_p50_ms']:6.2f}ms | cpu: index "
                  f"{timing[r['name']]['cpu_index_median_ms']:7.1f}ms query_p50 "
                  f"{timing[r['name']]['cpu_query_p50_ms']:6.2f}ms", flush=True)
    sc = score("semble", datasets.SEMBLE_DATA, results_path, args.repo)
    print(f"\n{'repo':20} {'lang':11} {'files':>5} {'chunks':>6} {'index_med_ms':>12} "
          f"{'q_p50_ms':>8} {'ndcg@10':>7}")
    for name, t in timing.items():
        lang = next(r["language"] for r in repos if r["name"] == name)
        print(f"{name:20} {lang:11} {t['files']:5} {t['chunks']:6} {t['index_median_ms']:12.1f} "
              f"{t['query_p50_ms']:8.2f} {sc['by_repo'].get(name, 0.0):7.3f}")
    all_q = [x for t in timing.values() for x in t["query_ms"]]
    summary = {
        "ndcg10": sc["ndcg10"], "by_category": sc["by_category"],
        "index_median_ms_over_repos": statistics.median(t["index_median_ms"] for t in timing.values()),
        "index_median_ms_over_repos_excl_embed": statistics.median(
            t["index_median_ms"] - t["embed_median_ms"] for t in timing.values()),
        "index_total_s": sum(t["index_median_ms"] for t in timing.values()) / 1e3,
        "query_p50_ms": pct(all_q, 0.5), "query_p95_ms": pct(all_q, 0.95),
        "cpu_index_median_ms_over_repos": statistics.median(
            t["cpu_index_median_ms"] for t in timing.values()),
        "cpu_query_p50_ms_over_repos": statistics.median(t["cpu_query_p50_ms"] for t in timing.values()),
        "queries": len(all_q)}
    print(f"semble-dev BM25 mode: ndcg@10 {summary['ndcg10']:.3f} "
          + " ".join(f"{c} {v:.3f}" for c, v in summary["by_category"].items())
          + f" | index median {summary['index_median_ms_over_repos']:.0f} ms/repo "
          f"({summary['index_median_ms_over_repos_excl_embed']:.0f} ms without stand-in embedding) "
          f"(sum of medians {summary['index_total_s']:.2f} s) | query p50 "
          f"{summary['query_p50_ms']:.2f} ms p95 {summary['query_p95_ms']:.2f} ms over "
          f"{summary['queries']} queries | cpu: index median "
          f"{summary['cpu_index_median_ms_over_repos']:.0f} ms/repo, query p50 (median of repos) "
          f"{summary['cpu_query_p50_ms_over_repos']:.2f} ms", flush=True)
    return {"per_repo": timing, "summary": summary, "score": sc}


def run_localize(args, model_path: str, out: Path) -> dict:
    insts = [i for i in datasets.localization_instances()
             if not args.repo or i["instance_id"] in args.repo]
    results_path = out / "localize-results.jsonl"
    timing = {}
    with results_path.open("w") as fh:
        for inst in insts:
            root = inst["index_root"]
            if not root.is_dir():
                print(f"{inst['instance_id']}: tree missing ({root})", flush=True)
                continue
            index, itimes, _, _ = build(root, model_path, 1)
            t0 = time.perf_counter()
            hits = index.search(inst["query"], top_k=args.loc_top_k, alpha=0.0)
            qt = time.perf_counter() - t0
            files, rows = set(), []
            for h in hits:  # file level: first (best) chunk of each file, in rank order
                if h.chunk.file_path not in files:
                    files.add(h.chunk.file_path)
                    rows.append(to_hit(h.chunk, None))
            fh.write(json.dumps({"id": inst["instance_id"], "results": rows}) + "\n")
            gold = inst["gold_files"]
            rank = next((i + 1 for i, x in enumerate(rows) if x["path"] in gold), None)
            st = index.stats
            timing[inst["instance_id"]] = {"files": st.indexed_files, "chunks": st.total_chunks,
                                           "index_ms": itimes[0] * 1e3, "query_ms": qt * 1e3,
                                           "distinct_files": len(rows), "gold_rank": rank}
            print(f"{inst['instance_id']:36} files={st.indexed_files:5} chunks={st.total_chunks:6} "
                  f"index={itimes[0] * 1e3:7.0f}ms query={qt * 1e3:6.1f}ms "
                  f"files_returned={len(rows):3} gold_rank={rank}", flush=True)
    sc = score("localize", datasets.LOCALIZE_DATA, results_path)
    summary = {**sc,
               "index_median_ms": statistics.median(t["index_ms"] for t in timing.values()),
               "query_p50_ms": pct([t["query_ms"] for t in timing.values()], 0.5)}
    print(f"localization-dev BM25 mode (top_k={args.loc_top_k} chunks -> files): "
          f"acc@1 {sc['acc@1']:.3f} acc@5 {sc['acc@5']:.3f} acc@10 {sc['acc@10']:.3f} "
          f"mrr {sc['mrr']:.3f} | index median {summary['index_median_ms']:.0f} ms | query p50 "
          f"{summary['query_p50_ms']:.1f} ms", flush=True)
    return {"per_instance": timing, "summary": summary}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", nargs="*", help="semble and/or localize (default: both)")
    ap.add_argument("--repeats", type=int, default=3, help="index builds per semble-dev repo")
    ap.add_argument("--repo", action="append", help="only this repo / instance id (repeatable)")
    ap.add_argument("--top-k", type=int, default=10, help="results per semble-dev query")
    ap.add_argument("--loc-top-k", type=int, default=20,
                    help="chunks fetched per localization query before reducing to files")
    ap.add_argument("--paths", choices=["repo", "index"], default="repo",
                    help="semble-dev result paths relative to the repo root (benchmark_root "
                         "prefixed) or to the indexed folder; both score")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    what = args.what or ["semble", "localize"]
    if set(what) - {"semble", "localize"}:
        ap.error(f"unknown data set(s): {sorted(set(what) - {'semble', 'localize'})}")
    args.out.mkdir(parents=True, exist_ok=True)
    model_path = standin_model()
    load_model(model_path)  # warm-up: model load is cached per process, keep it out of timings
    print(f"semble {SEMBLE_VERSION}, BM25-only (alpha=0), stand-in model {model_path}, "
          f"cache {_TMP_CACHE}", flush=True)
    report = {"semble_version": SEMBLE_VERSION, "args": {k: str(v) for k, v in vars(args).items()}}
    if "semble" in what:
        report["semble"] = run_semble(args, model_path, args.out)
    if "localize" in what:
        report["localize"] = run_localize(args, model_path, args.out)
    (args.out / "timings.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}/", flush=True)
    shutil.rmtree(_TMP_CACHE, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
