"""Compare embedders: throughput, query latency, docstring->function quality; Hamming+rescore speed.

    python bench/semantic_models.py [--funcs 1500] [--models minilm,static] \
        [--extra-static NAME=PATH ...] [--hamming-n 1000000] [--json out.json]

Quality proxy (no network, no external data): functions of this interpreter's standard
library that have a docstring; the query is the docstring's first sentence, the document is
the function (path, qualified name, signature, body) with its docstring removed, built by
``chunk_text_for_embedding``. Reported: MRR@10 and Recall@10 with float vectors and with
binary codes + int8 rescoring (top 100). Throughput is chunks/s embedding those documents;
query latency is one query embedded alone (p50 over 50).
The Hamming benchmark searches random 384-bit codes with top-100 int8 rescoring.
"""
from __future__ import annotations

import argparse
import ast
import json
import random
import sys
import sysconfig
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fourfold.semantic import binary  # noqa: E402
from fourfold.semantic.embedder import StaticEmbedder, load_embedder  # noqa: E402
from fourfold.semantic.embedding_text import chunk_text_for_embedding  # noqa: E402


def docstring_pairs(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    found: list[tuple[str, str]] = []
    for p in sorted(stdlib.rglob("*.py")):
        rel = p.relative_to(stdlib).as_posix()
        if any(s in rel for s in ("test", "site-packages", "idlelib", "lib2to3", "encodings")):
            continue
        try:
            src = p.read_text(encoding="utf-8")
            tree = ast.parse(src)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = src.splitlines()
        stack = [(tree, "")]
        while stack:
            node, prefix = stack.pop()
            for ch in ast.iter_child_nodes(node):
                if isinstance(ch, ast.ClassDef):
                    stack.append((ch, prefix + ch.name + "."))
                if not isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                doc = ast.get_docstring(ch)
                if not doc or not ch.body or ch.end_lineno is None:
                    continue
                first = doc.strip().split("\n\n")[0].replace("\n", " ").split(". ")[0]
                if len(first.split()) < 4:
                    continue
                ds = ch.body[0]
                body_lines = lines[ch.lineno - 1:ds.lineno - 1] + lines[ds.end_lineno:ch.end_lineno]
                if len(body_lines) < 3:
                    continue
                sig = lines[ch.lineno - 1].strip()
                text = chunk_text_for_embedding(rel, prefix + ch.name, sig, None,
                                                "\n".join(body_lines))
                found.append((first, text))
    rng = random.Random(seed)
    rng.shuffle(found)
    found = found[:n]
    return [q for q, _ in found], [d for _, d in found]


def quality(qv: np.ndarray, dv: np.ndarray, k: int = 10) -> dict:
    sims = qv @ dv.T
    mean = binary.fit_mean(dv)
    codes = binary.to_codes(dv, mean)
    i8, _ = binary.to_int8(dv)
    rr_f, rr_b, hit_f, hit_b = [], [], 0, 0
    for i in range(len(qv)):
        top = np.argsort(-sims[i], kind="stable")[:k]
        r = np.flatnonzero(top == i)
        rr_f.append(1.0 / (r[0] + 1) if r.size else 0.0)
        hit_f += bool(r.size)
        idx, _ = binary.search(qv[i], codes, i8, mean, k=k, rescore_n=100)
        r = np.flatnonzero(idx == i)
        rr_b.append(1.0 / (r[0] + 1) if r.size else 0.0)
        hit_b += bool(r.size)
    n = len(qv)
    return {"mrr10_float": round(float(np.mean(rr_f)), 4),
            "mrr10_binary_rescore": round(float(np.mean(rr_b)), 4),
            "recall10_float": round(hit_f / n, 4), "recall10_binary_rescore": round(hit_b / n, 4)}


def bench_model(emb, queries: list[str], docs: list[str]) -> dict:
    emb.embed(docs[:8])  # warm up
    t = time.perf_counter()
    dv = emb.embed(docs)
    el = time.perf_counter() - t
    lat = []
    for q in queries[:50]:
        t0 = time.perf_counter()
        emb.embed([q])
        lat.append((time.perf_counter() - t0) * 1000)
    qv = emb.embed(queries)
    res = {"model": emb.name, "dim": emb.dim, "chunks_per_s": round(len(docs) / el, 1),
           "query_ms_p50": round(float(np.percentile(lat, 50)), 2),
           "query_ms_p95": round(float(np.percentile(lat, 95)), 2)}
    res.update(quality(qv, dv))
    return res


def bench_hamming(n: int, dim: int = 384, queries: int = 30, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 256, size=(n, dim // 8), dtype=np.uint8)
    i8 = rng.integers(-127, 128, size=(n, dim), dtype=np.int8)
    mean = np.zeros(dim, dtype=np.float32)
    ham, full = [], []
    for _ in range(queries):
        q = rng.standard_normal(dim).astype(np.float32)
        qc = binary.to_codes(q[None], mean)[0]
        t = time.perf_counter()
        binary.hamming_topk(qc, codes, 100)
        ham.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        binary.search(q, codes, i8, mean, k=10, rescore_n=100)
        full.append((time.perf_counter() - t) * 1000)
    return {"codes": n, "bits": dim, "hamming_top100_ms_p50": round(float(np.median(ham)), 1),
            "hamming_rescore_ms_p50": round(float(np.median(full)), 1),
            "hamming_rescore_ms_p95": round(float(np.percentile(full, 95)), 1),
            "bytes_per_chunk": dim // 8 + dim}


TEXT_EXT = {".py", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt",
            ".kts", ".c", ".h", ".cc", ".cpp", ".hpp", ".hh", ".cs", ".rb", ".php", ".swift",
            ".scala", ".sh", ".bash", ".lua", ".hs", ".ex", ".exs", ".zig", ".vim", ".md",
            ".rst", ".txt", ".toml", ".yaml", ".yml", ".json", ".erb", ".ml", ".sql"}


def window_chunks(root: Path, lines_per: int = 40) -> list[tuple[str, int, int, str]]:
    out = []
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.suffix.lower() not in TEXT_EXT or p.stat().st_size > 1_000_000:
            continue
        try:
            lines = p.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        rel = p.relative_to(root).as_posix()
        for s in range(0, max(1, len(lines)), lines_per):
            body = "\n".join(lines[s:s + lines_per])
            if body.strip():
                out.append((rel, s + 1, min(len(lines), s + lines_per),
                            chunk_text_for_embedding(rel, None, None, None, body)))
    return out


def semble_run(emb, trees: Path, data: Path, out_path: Path, repos: list[str] | None,
               binary_codes: bool) -> dict:
    """Semantic-only run on semble-dev: 40-line windows, best chunk per file, top 20 files."""
    meta = json.loads((data / "repos.json").read_text())
    lines_out, n_chunks, t_embed, lat = [], 0, 0.0, []
    for r in meta:
        name = r["name"]
        if repos and name not in repos:
            continue
        root = trees / name
        if not root.is_dir():
            continue
        chunks = window_chunks(root)
        t = time.perf_counter()
        dv = emb.embed([c[3] for c in chunks])
        t_embed += time.perf_counter() - t
        n_chunks += len(chunks)
        mean = binary.fit_mean(dv)
        codes = binary.to_codes(dv, mean)
        i8, _ = binary.to_int8(dv)
        anns = json.loads((data / "annotations" / f"{name}.json").read_text())
        for qi, a in enumerate(anns):
            t = time.perf_counter()
            qv = emb.embed([a["query"]])[0]
            if binary_codes:
                idx, sc = binary.search(qv, codes, i8, mean, k=200, rescore_n=400)
            else:
                sims = dv @ qv
                idx = np.argsort(-sims, kind="stable")[:200]
            lat.append((time.perf_counter() - t) * 1000)
            seen, res = set(), []
            for i in idx:
                path, s0, e0, _ = chunks[i]
                if path in seen:
                    continue
                seen.add(path)
                res.append({"path": path, "start_line": s0, "end_line": e0})
                if len(res) == 20:
                    break
            lines_out.append(json.dumps({"id": f"{name}#{qi}", "results": res}))
        print(f"  {name}: {len(chunks)} chunks", file=sys.stderr, flush=True)
    out_path.write_text("\n".join(lines_out) + "\n")
    import subprocess
    cmd = [sys.executable, str(data.parent / "score.py"), "semble", str(data), str(out_path), "--json"]
    if repos:
        for rn in repos:
            cmd += ["--repo", rn]
    score = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    return {"model": emb.name, "binary": binary_codes, "chunks": n_chunks,
            "chunks_per_s": round(n_chunks / max(t_embed, 1e-9), 1),
            "query_ms_p50": round(float(np.median(lat)), 2), "score": score}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--funcs", type=int, default=1500)
    ap.add_argument("--models", default="minilm,static")
    ap.add_argument("--extra-static", action="append", default=[], metavar="NAME=PATH")
    ap.add_argument("--hamming-n", type=int, default=1_000_000)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--semble", action="store_true",
                    help="semantic-only NDCG@10 on semble-dev (needs materialized trees)")
    ap.add_argument("--trees", type=Path, default=ROOT / "bench/.cache/trees/semble")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared/bench/semble-dev")
    ap.add_argument("--repos", default="", help="comma-separated subset of semble-dev repos")
    ap.add_argument("--float", action="store_true", help="semble: float search, not binary")
    a = ap.parse_args()
    out: dict = {"models": []}
    if a.semble:
        for m in a.models.split(","):
            res = semble_run(load_embedder(m), a.trees, a.data,
                             ROOT / f"bench/.cache/semantic_{m}_results.jsonl",
                             [r for r in a.repos.split(",") if r] or None, not a.float)
            print(json.dumps(res), flush=True)
            out["models"].append(res)
        if a.json:
            a.json.write_text(json.dumps(out, indent=2))
        return
    if a.funcs > 0:
        queries, docs = docstring_pairs(a.funcs)
        print(f"docstring->function pairs: {len(docs)}", file=sys.stderr)
        embs = [load_embedder(m) for m in a.models.split(",") if m]
        for spec in a.extra_static:
            name, path = spec.split("=", 1)
            embs.append(StaticEmbedder(path, name=name))
        for e in embs:
            r = bench_model(e, queries, docs)
            print(json.dumps(r), flush=True)
            out["models"].append(r)
    if a.hamming_n > 0:
        r = bench_hamming(a.hamming_n)
        print(json.dumps(r), flush=True)
        out["hamming"] = r
    if a.json:
        a.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
