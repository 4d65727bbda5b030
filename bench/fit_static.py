"""Fit the static model's token vectors to the transformer's chunk embeddings (offline).

The distilled static model (bench/distill_static.py) gives each WordPiece token the vector
MiniLM gives it alone. A chunk of code is then the mean of its tokens, which is not what
MiniLM says about the chunk as a whole. This script learns token vectors whose mean matches
MiniLM's embedding of whole chunks — the idea of model2vec's "tokenlearn" step, solved here
as a ridge regression instead of training with torch:

    minimise  || X E - T ||^2 + lam * || E - E0 ||^2

X: chunks x vocabulary, each row a chunk's bag of tokens (what the static embedder sums);
T: MiniLM's unit vectors of those chunks, each scaled to the norm the distilled vectors give
that chunk (only directions are fitted); E0: the distilled vectors (SIF-weighted, in MiniLM's
384-d space), so tokens the corpus rarely uses stay where distillation put them. Conjugate
gradients on the normal equations, all 384 columns at once. Then PCA to --dim and int8.

The corpus is code that is in neither benchmark: the repositories in bench/train_repos.txt
(public GitHub, brought with the tool library's `fetch`, written out under
bench/.cache/train/) and --site-packages of this interpreter minus benchmark projects.

    python bench/fit_static.py corpus     # chunk texts -> bench/.cache/fit/texts.jsonl
    python bench/fit_static.py teacher    # MiniLM vectors -> bench/.cache/fit/teacher.npy (resumable)
    python bench/fit_static.py fit [--lam 100,1000] [--iterations 15] [--out PATH]

The defaults (lam 1000, 15 iterations, window 512, 256 dimensions) made the shipped model.
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from distill_static import build, quantize_rows, raw_token_vectors  # noqa: E402

from fourfold.semantic.embedder import (STATIC_PATH, StaticEmbedder,  # noqa: E402
                                        load_embedder, with_identifier_words)

CACHE = ROOT / "bench" / ".cache"
FIT = CACHE / "fit"
TRAIN_TREES = CACHE / "train"
REPO_LIST = ROOT / "bench" / "train_repos.txt"
# Installed packages that join the corpus; none is a project of semble-dev,
# localization-dev or SWE-bench Lite (click, pydantic, pytest ... are installed here too and
# are left out on purpose).
SITE_PACKAGES = ("anyio", "jedi", "parso", "jsonschema", "h11", "huggingface_hub", "mcp",
                 "packaging", "pluggy", "multipart", "filelock", "fsspec", "attr")


def training_roots(mirror: Path) -> list[Path]:
    roots = []
    for line in REPO_LIST.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, commit = line.split()
        out = TRAIN_TREES / name.replace("/", "+")
        if not out.is_dir():
            git_dir = mirror / name.replace("/", "+") / "repo"
            out.mkdir(parents=True)
            archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", commit],
                                     check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
        roots.append(out)
    purelib = Path(sysconfig.get_paths()["purelib"])
    roots += [purelib / p for p in SITE_PACKAGES if (purelib / p).is_dir()]
    return roots


def make_corpus(mirror: Path, per_root: int, seed: int) -> None:
    from fourfold import Fourfold
    from fourfold.semantic.indexing import embedding_texts

    rng = random.Random(seed)
    FIT.mkdir(parents=True, exist_ok=True)
    kept: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, root in enumerate(training_roots(mirror)):
            ff = Fourfold(str(root), index_dir=Path(tmp) / str(i))
            ff.index(embed=False)
            ids, after = [], 0
            while batch := ff.store.chunks_missing_vectors("corpus", 5000, after=after):
                ids += [cid for cid, _ in batch]
                after = batch[-1][0]
            rng.shuffle(ids)
            texts = embedding_texts(ff.store, ids[:per_root])
            kept += [json.dumps({"root": root.name, "text": texts[cid]}) for cid in ids[:per_root]]
            print(f"{root.name:<28} {len(ids):6d} chunks, kept {min(per_root, len(ids))}",
                  flush=True)
    random.Random(seed).shuffle(kept)  # any prefix is a sample of every root: the teacher may stop early
    (FIT / "texts.jsonl").write_text("\n".join(kept) + "\n")
    print(f"{len(kept)} chunk texts in {FIT / 'texts.jsonl'}")


def load_texts() -> list[str]:
    with open(FIT / "texts.jsonl") as f:
        return [json.loads(line)["text"] for line in f]


def teacher(batch: int) -> None:
    """MiniLM's vector of each chunk (its identifiers followed by their words, as the static
    model reads them), saved every batch so an interrupted run resumes."""
    texts = load_texts()
    path = FIT / "teacher.npy"
    done = np.load(path) if path.is_file() else np.zeros((0, 384), dtype=np.float32)
    emb = load_embedder("minilm")
    started, first = time.time(), len(done)
    for start in range(len(done), len(texts), batch):
        part = [with_identifier_words(t) for t in texts[start:start + batch]]
        done = np.concatenate([done, emb.embed(part)])
        np.save(path, done)
        rate = (len(done) - first) / max(time.time() - started, 1e-9)
        print(f"{len(done)}/{len(texts)} ({rate:.0f}/s)", flush=True)


def solve(x, t: np.ndarray, e0: np.ndarray, lam: float, iterations: int) -> np.ndarray:
    """argmin_E ||X E - T||^2 + lam ||E - E0||^2 by conjugate gradients on the normal
    equations, one independent system per column, all columns together."""
    xt = x.T.tocsr()

    def normal(e: np.ndarray) -> np.ndarray:
        return xt @ (x @ e) + lam * e

    e = e0.copy()
    r = xt @ t + lam * e0 - normal(e)
    p = r.copy()
    rr = (r * r).sum(axis=0)
    start_rr = rr.sum()
    for i in range(iterations):
        ap = normal(p)
        alpha = rr / np.maximum((p * ap).sum(axis=0), 1e-30)
        e += p * alpha
        r -= ap * alpha
        new_rr = (r * r).sum(axis=0)
        p = r + p * (new_rr / np.maximum(rr, 1e-30))
        rr = new_rr
    print(f"  lam {lam:g}: relative residual {np.sqrt(rr.sum() / start_rr):.4f} after "
          f"{iterations} iterations", flush=True)
    return e


def median_cosine(x, e: np.ndarray, target: np.ndarray) -> float:
    v = x @ e
    cos = (v * target).sum(axis=1) / np.maximum(np.linalg.norm(v, axis=1), 1e-12)
    return float(np.median(cos))


def fit(lams: list[float], dim: int, sif: float, iterations: int, holdout: float,
        window: int, out: Path) -> None:
    texts = load_texts()
    target = np.load(FIT / "teacher.npy").astype(np.float64)
    texts = texts[:len(target)]
    # what the static embedder reads of each chunk (at most `window` tokens)
    import scipy.sparse as sp

    embedder = StaticEmbedder(max_tokens=window)
    flat, starts = embedder.token_ids(texts)
    x = sp.csr_matrix((np.ones(flat.size), flat, starts),
                      shape=(len(texts), embedder.vocabulary_size))
    x.sum_duplicates()
    counts = np.asarray(x.sum(axis=0)).ravel()
    raw = raw_token_vectors("mean")
    # the distilled vectors in MiniLM's space (no PCA yet), SIF-weighted by corpus frequency
    e0 = build(raw, counts, raw.shape[1], sif).astype(np.float64)
    # directions relative to the corpus mean, as the index compares them (binary codes are
    # centred by the corpus mean; the distilled vectors are centred too)
    target -= target.mean(axis=0)
    target /= np.maximum(np.linalg.norm(target, axis=1, keepdims=True), 1e-12)
    t = target * np.linalg.norm(x @ e0, axis=1, keepdims=True)
    n_train = int(len(texts) * (1 - holdout))
    print(f"{len(texts)} chunks; held out {len(texts) - n_train}; cosine to MiniLM on them, "
          f"distilled: {median_cosine(x[n_train:], e0, target[n_train:]):.3f}")
    for lam in lams:
        e = solve(x[:n_train], t[:n_train], e0, lam, iterations)
        print(f"  lam {lam:g}: held-out cosine {median_cosine(x[n_train:], e, target[n_train:]):.3f}"
              f", training {median_cosine(x[:n_train], e, target[:n_train]):.3f}", flush=True)
    e = solve(x, t, e0, lams[-1], iterations)  # the model: every chunk, the last lam given
    # PCA to dim: the rotation keeps inner products, truncation drops the weakest directions
    _, _, vt = np.linalg.svd(e - e.mean(axis=0), full_matrices=False)
    q, scale = quantize_rows((e @ vt[:dim].T).astype(np.float32))
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(out, emb=q, scale=scale)  # stored as is: 14 % smaller compressed, 40 ms to load
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB, {q.shape[0]}x{q.shape[1]} int8)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("stage", choices=["corpus", "teacher", "fit"])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--per-root", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lam", default="1000",
                    help="ridge weights to compare on held-out chunks, comma-separated; the "
                         "model is fitted on every chunk with the last one")
    ap.add_argument("--holdout", type=float, default=0.1)
    ap.add_argument("--window", type=int, default=512,
                    help="tokens of each chunk the fit sees (MiniLM itself reads 126)")
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--sif", type=float, default=1e-3)
    ap.add_argument("--iterations", type=int, default=15)
    ap.add_argument("--out", type=Path, default=STATIC_PATH)
    a = ap.parse_args()
    if a.stage == "corpus":
        make_corpus(a.mirror, a.per_root, a.seed)
    elif a.stage == "teacher":
        teacher(a.batch)
    else:
        fit([float(v) for v in a.lam.split(",")], a.dim, a.sif, a.iterations, a.holdout, a.window, a.out)


if __name__ == "__main__":
    main()
