"""A held-out figure for where function answers place the definitions a question names
(fourfold/ranking/granularity.py: NAMED_AFTER, NAMED_FILES), on localization-train.

    python bench/cv_named.py

Every issue is asked once per grid setting at function granularity, through the engine.
Each repository (django, matplotlib, scikit-learn) is answered with the setting whose
function Acc@10 was best on the other two (ties: Acc@5, then Acc@1, then the earlier
place), and scored by the reference scorer; "off" is the stage left out. Indexes and
release trees come from bench/eval.py's cache (`bench/datasets.py prepare train`).
"""
from __future__ import annotations

import itertools
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))
import datasets  # noqa: E402
import eval as evaluation  # noqa: E402  (bench/eval.py: the same indexes and queries)

from fourfold import SearchOptions  # noqa: E402
from fourfold.ranking import granularity  # noqa: E402

sys.path.insert(0, str(datasets.DATA_DIR))
import score as reference  # noqa: E402  (the reference scorer's own function Acc@k)

OFF = (0, 0)
GRID = [OFF, *itertools.product((3, 4, 5, 6, 7), (1, 2, 3, 5))]  # (after, files)


def answers(setting: tuple[int, int]) -> dict[str, list[dict]]:
    """Every issue's function answers under one setting, indexed and asked as `eval.py
    train --granularity function` does."""
    granularity.NAMED_AFTER, granularity.NAMED_FILES = setting
    by_tree: dict[Path, list[dict]] = defaultdict(list)
    for inst in datasets.train_instances():
        by_tree[inst["tree"]].append(inst)
    results: list[dict] = []
    for tree, instances in sorted(by_tree.items()):
        ff = evaluation.open_index("releases", tree.name, tree, {})
        evaluation.run_queries(ff, [(i["instance_id"], i["query"]) for i in instances],
                               SearchOptions(granularity="function"), results, [], {})
        ff.close()
    return {r["id"]: r["results"] for r in results}


def main() -> None:
    shipped = (granularity.NAMED_AFTER, granularity.NAMED_FILES)
    lines = datasets.TRAIN_DATA.read_text().splitlines()
    repos = sorted({json.loads(line)["repo"] for line in lines if line.strip()})
    scored: dict[tuple, dict[str, dict]] = {}  # setting -> repository -> scores
    with tempfile.TemporaryDirectory() as tmp:
        subsets = {}
        for repo in repos:
            subsets[repo] = Path(tmp) / f"{repo.replace('/', '_')}.jsonl"
            subsets[repo].write_text("".join(
                line + "\n" for line in lines if line.strip() and json.loads(line)["repo"] == repo))
        for setting in GRID:
            results = answers(setting)
            scored[setting] = {repo: reference.score_localize(subsets[repo], results)
                               for repo in repos}
            print(setting, {repo: round(s["function_acc@10"], 3)
                            for repo, s in scored[setting].items()}, flush=True)

    def total(setting: tuple, among: list[str], k: int) -> float:
        return sum(scored[setting][r][f"function_acc@{k}"] * scored[setting][r]
                   ["function_instances"] for r in among)

    def best(among: list[str]) -> tuple[int, int]:
        return max(GRID[1:], key=lambda s: (total(s, among, 10), total(s, among, 5),
                                            total(s, among, 1), -GRID.index(s)))

    n = sum(scored[OFF][r]["function_instances"] for r in repos)
    held = defaultdict(float)
    for repo in repos:
        chosen = best([r for r in repos if r != repo])
        print(f"{repo}: chose after {chosen[0]}, files {chosen[1]}; held-out "
              f"{scored[chosen][repo]['function_acc@10']:.3f} (off "
              f"{scored[OFF][repo]['function_acc@10']:.3f})")
        for k in (1, 5, 10):
            held[k] += total(chosen, [repo], k)
    every = best(repos)
    for name, values in (("off", {k: total(OFF, repos, k) for k in (1, 5, 10)}),
                         ("held-out", held),
                         (f"in-sample, shipped {shipped}", {k: total(shipped, repos, k)
                                                            for k in (1, 5, 10)}),
                         (f"in-sample, best on all {every}", {k: total(every, repos, k)
                                                               for k in (1, 5, 10)})):
        print(f"{name}: function Acc@1 / @5 / @10 " + " / ".join(
            f"{values[k] / n:.3f}" for k in (1, 5, 10)))


if __name__ == "__main__":
    main()
