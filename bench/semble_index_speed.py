"""Cold index time against semble 0.7.0, whole processes side by side on the same trees.

    python bench/semble_index_speed.py [--repeat 3] [--repo NAME ...]
        [--semble-python bench/.cache/semble-venv/bin/python]
    python bench/semble_index_speed.py --checkout [--repeat 3] [--repo NAME ...]

For each semble-dev repository a fresh copy of its tree is indexed, in turn, by
- `fourfold index COPY` (text, structure, graph and vectors), with an empty embedding cache;
- `fourfold index COPY --no-embed` (no vectors);
- `semble search QUERY COPY`: semble has no index command; its first search of a path builds
  the index (chunks, BM25, vectors), saves it and answers, all with an empty cache.
The order of the three rotates from one repetition to the next.

With --checkout, semble is not run: each repository's cold index (`fourfold index COPY`, as
above) beside a fresh checkout of it (another copy of the tree, in another folder, indexed
into an index already holding the first copy and its vectors: a second clone, a worktree;
issue 20's "indexed ≥ 5× faster than cold"), the two in turn.

semble's default model (minishlab/potion-code-16M-v2) is a download, and nothing here may
download. semble is given instead a model2vec model of the same kind and nearly the same
size, written from fourfold's own static model: BERT's tokenizer (30,522 tokens) and one
256-dimension vector a token (the potion models: 256 dimensions, a vocabulary of some tens of
thousands). A static model's cost is the tokenizer plus a mean of looked-up rows, so semble
does the work its own model asks of it; its answers are not what its model would give and
are not scored here.

Install semble in its own environment first (never the project's):

    python3 -m venv bench/.cache/semble-venv
    bench/.cache/semble-venv/bin/pip install semble==0.7.0
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import datasets  # noqa: E402  (stdlib only)

DATA = BENCH.parent / "fourfold" / "semantic" / "data"
SHAPED_MODEL = datasets.CACHE_DIR / "semble-shaped-model"
DEFAULT_SEMBLE_PYTHON = datasets.CACHE_DIR / "semble-venv" / "bin" / "python"

# Run by semble's interpreter: model2vec and tokenizers live there, not in the project.
WRITE_MODEL = """
import sys
import numpy as np
from model2vec import StaticModel
from tokenizers import Tokenizer
tables = np.load(sys.argv[1])
vectors = tables["emb"].astype(np.float32) * tables["scale"].astype(np.float32)[:, None]
StaticModel(vectors, Tokenizer.from_file(sys.argv[2]), normalize=True).save_pretrained(sys.argv[3])
"""


def shaped_model(semble_python: Path) -> Path:
    if not (SHAPED_MODEL / "model.safetensors").is_file():
        subprocess.run([str(semble_python), "-c", WRITE_MODEL, str(DATA / "minilm_static.npz"),
                        str(DATA / "minilm_tokenizer.json"), str(SHAPED_MODEL)], check=True)
    return SHAPED_MODEL


def timed(command: list[str], env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(command, env={**os.environ, **env}, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - started


def run_case(case: str, tree: Path, query: str, scratch: Path, semble_python: Path,
             model: Path) -> float:
    """Seconds of one whole process of `case` on `tree`, every cache it has empty (but for
    a fresh checkout's: the index and vectors of the tree's first copy)."""
    work = Path(tempfile.mkdtemp(dir=scratch))

    def index(folder: Path, *extra: str) -> float:  # one `fourfold index` into work/index
        return timed([sys.executable, "-m", "fourfold.interfaces.entry", "index", str(folder),
                      "--index-dir", str(work / "index"), *extra],
                     {"FOURFOLD_CACHE_DIR": str(work / "cache")})

    try:
        if case == "fresh checkout":
            index(tree)
            checkout = work / "checkout"
            shutil.copytree(tree, checkout, symlinks=True)
            return index(checkout)
        if case == "semble":
            semble = semble_python.parent / "semble"
            return timed([str(semble), "search", query, str(tree), "-k", "5"],
                         {"SEMBLE_CACHE_LOCATION": str(work), "SEMBLE_MODEL_NAME": str(model),
                          "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"})
        return index(tree, *(["--no-embed"] if case == "fourfold --no-embed" else []))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--repo", action="append", help="only this repository (repeatable)")
    parser.add_argument("--semble-python", type=Path, default=DEFAULT_SEMBLE_PYTHON)
    parser.add_argument("--checkout", action="store_true",
                        help="a cold index beside a fresh checkout's, no semble")
    args = parser.parse_args()
    if args.checkout:
        cases, model = ["fourfold", "fresh checkout"], None
    else:
        if not args.semble_python.is_file():
            raise SystemExit(f"no {args.semble_python}: install semble==0.7.0 there (see --help)")
        cases, model = ["fourfold", "fourfold --no-embed", "semble"], shaped_model(args.semble_python)
    # pip compiles an installed package's modules; an editable checkout under
    # PYTHONDONTWRITEBYTECODE (set on these machines) would compile them in every process.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(BENCH.parent / "fourfold")],
                   check=True)
    totals = {case: 0.0 for case in cases}
    ratios = ("  cold/checkout" if args.checkout
              else "  fourfold/semble  no-embed/semble")
    print(f"{'repository':20} {'files':>5}  " + "  ".join(f"{c:>19}" for c in cases) + ratios,
          flush=True)
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        for repo in datasets.semble_repos():
            if args.repo and repo["name"] not in args.repo:
                continue
            tree = scratch / "tree" / repo["name"]
            shutil.copytree(repo["index_root"], tree, symlinks=True)
            query = repo["queries"][0]["query"]
            seconds: dict[str, list[float]] = {case: [] for case in cases}
            for turn in range(args.repeat):
                for case in cases[turn % len(cases):] + cases[:turn % len(cases)]:
                    seconds[case].append(run_case(case, tree, query, scratch,
                                                  args.semble_python, model))
            medians = {case: statistics.median(s) for case, s in seconds.items()}
            for case in cases:
                totals[case] += medians[case]
            files = sum(1 for p in tree.rglob("*") if p.is_file())
            print(f"{repo['name']:20} {files:5}  "
                  + "  ".join(f"{medians[c]:8.2f} s ({min(seconds[c]):.2f}–{max(seconds[c]):.2f})"
                              for c in cases) + _ratios(medians, args.checkout), flush=True)
            shutil.rmtree(tree)
    print(f"{'all (sum of medians)':27}  " + "  ".join(f"{totals[c]:8.2f} s{'':10}" for c in cases)
          + _ratios(totals, args.checkout), flush=True)


def _ratios(seconds: dict[str, float], checkout: bool) -> str:
    if checkout:
        return f"  {seconds['fourfold'] / seconds['fresh checkout']:18.2f}x"
    return (f"  {seconds['fourfold'] / seconds['semble']:15.2f}"
            f"  {seconds['fourfold --no-embed'] / seconds['semble']:15.2f}")


if __name__ == "__main__":
    main()
