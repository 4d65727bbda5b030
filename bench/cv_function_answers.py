"""Held-out figures for where function answers place definitions that no search span may
have reached (fourfold/ranking/granularity.py), on localization-train:

    python bench/cv_function_answers.py named [--deep]   (NAMED_AFTER, NAMED_FILES: the
        definitions the question names)
    python bench/cv_function_answers.py using [--deep]   (USING_FILES, USING_AT_LEAST,
        USING_AFTER, USING_MOST: the functions using the names a pasted text mentions)

Every issue is searched once at function granularity, through the engine, as `eval.py
train --granularity function [--deep]` does; the engine's last stage (to_granularity) is
then run again on the same fused hits under each grid setting of the stage's values (the
other stage's as shipped). Each repository (django, matplotlib, scikit-learn) is answered
with the setting whose function Acc@10 was best on the other two (ties: Acc@5, then Acc@1,
then the earlier setting; the stage left out, "off", is one of the settings), and scored
by the reference scorer.
Indexes and release trees come from bench/eval.py's cache (`bench/datasets.py prepare
train`).
"""
from __future__ import annotations

import argparse
import functools
import itertools
import json
import sys
import tempfile
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))
import datasets  # noqa: E402
import eval as evaluation  # noqa: E402  (bench/eval.py: the same indexes and queries)

from fourfold import SearchOptions  # noqa: E402
from fourfold.ranking import granularity  # noqa: E402
from fourfold.routing import engine  # noqa: E402

sys.path.insert(0, str(datasets.DATA_DIR))
import score as reference  # noqa: E402  (the reference scorer's own function Acc@k)

STAGES = {
    "named": (("NAMED_AFTER", "NAMED_FILES"),
              [(0, 0), *itertools.product((3, 4, 5, 6, 7), (1, 2, 3, 5))]),
    "using": (("USING_FILES", "USING_AT_LEAST", "USING_AFTER", "USING_MOST"),
              [(0, 1, 4, 0), *itertools.product((1, 2, 3), (1, 2, 3), (2, 4, 6, 8),
                                                 (2, 4, 6))]),
}
LIMIT = 10


def answers(names: tuple[str, ...], grid: list[tuple]) -> dict[tuple, dict[str, list[dict]]]:
    """Every issue's first function answers under each setting: setting -> id -> results."""
    calls: list[tuple] = []
    real = engine.to_granularity

    def recorded(hits, *args, **kwargs):
        calls.append(([replace(h) for h in hits], args, kwargs))
        return real(hits, *args, **kwargs)

    engine.to_granularity = recorded
    out: dict[tuple, dict[str, list[dict]]] = defaultdict(dict)
    by_tree: dict[Path, list[dict]] = defaultdict(list)
    for inst in datasets.train_instances():
        by_tree[inst["tree"]].append(inst)
    try:
        for tree, instances in sorted(by_tree.items()):
            ff = evaluation.open_index("releases", tree.name, tree, {})
            for inst in instances:
                calls.clear()
                ff.search(inst["query"], SearchOptions(granularity="function"))
                hits, args, kwargs = calls[-1]
                if kwargs.get("uses_of") is not None:  # each setting reads the same files
                    kwargs["uses_of"] = functools.lru_cache(maxsize=None)(kwargs["uses_of"])
                for setting in grid:
                    for name, value in zip(names, setting):
                        setattr(granularity, name, value)
                    ranked = real([replace(h) for h in hits], *args, **kwargs)[:LIMIT]
                    out[setting][inst["instance_id"]] = [
                        {"path": h.path, "start_line": h.start_line, "end_line": h.end_line,
                         "symbol": h.symbol} for h in ranked]
            ff.close()
            print(f"{tree.name}: {len(instances)} issues", flush=True)
    finally:
        engine.to_granularity = real
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("stage", choices=sorted(STAGES))
    parser.add_argument("--deep", action="store_true", help="the deep pass's model answers")
    args = parser.parse_args()
    evaluation.DEEP = args.deep
    names, grid = STAGES[args.stage]
    shipped = tuple(getattr(granularity, name) for name in names)
    if shipped not in grid:
        grid = [*grid, shipped]
    off = grid[0]
    lines = datasets.TRAIN_DATA.read_text().splitlines()
    repos = sorted({json.loads(line)["repo"] for line in lines if line.strip()})
    found = answers(names, grid)
    for name, value in zip(names, shipped):
        setattr(granularity, name, value)
    scored: dict[tuple, dict[str, dict]] = {}  # setting -> repository -> scores
    with tempfile.TemporaryDirectory() as tmp:
        subsets = {}
        for repo in repos:
            subsets[repo] = Path(tmp) / f"{repo.replace('/', '_')}.jsonl"
            subsets[repo].write_text("".join(
                line + "\n" for line in lines if line.strip() and json.loads(line)["repo"] == repo))
        for setting in grid:
            scored[setting] = {repo: reference.score_localize(subsets[repo], found[setting])
                               for repo in repos}

    def total(setting: tuple, among: list[str], k: int) -> float:
        return sum(scored[setting][r][f"function_acc@{k}"] * scored[setting][r]
                   ["function_instances"] for r in among)

    def best(among: list[str]) -> tuple:
        return max(grid, key=lambda s: (total(s, among, 10), total(s, among, 5),
                                            total(s, among, 1), -grid.index(s)))

    n = sum(scored[off][r]["function_instances"] for r in repos)
    held = defaultdict(float)
    print(f"settings: {', '.join(names)}")
    for repo in repos:
        chosen = best([r for r in repos if r != repo])
        print(f"{repo}: chose {chosen}; held-out "
              f"{scored[chosen][repo]['function_acc@10']:.3f} (off "
              f"{scored[off][repo]['function_acc@10']:.3f})")
        for k in (1, 5, 10):
            held[k] += total(chosen, [repo], k)
    every = best(repos)
    for name, values in (("off", {k: total(off, repos, k) for k in (1, 5, 10)}),
                         ("held-out", held),
                         (f"in-sample, shipped {shipped}", {k: total(shipped, repos, k)
                                                            for k in (1, 5, 10)}),
                         (f"in-sample, best on all {every}", {k: total(every, repos, k)
                                                               for k in (1, 5, 10)})):
        print(f"{name}: function Acc@1 / @5 / @10 " + " / ".join(
            f"{values[k] / n:.3f}" for k in (1, 5, 10)))


if __name__ == "__main__":
    main()
