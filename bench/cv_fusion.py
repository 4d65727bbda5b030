"""A held-out figure for the fusion weights: leave-repositories-out cross-validation of the
understand_code weights and the RRF k on semble-dev.

    python bench/cv_fusion.py [--deep]   (--deep: the deep pass's model answers semantic
                                          questions, as in `eval.py semble --deep`)

The tuned profile (fourfold/routing/profiles.py) was chosen on all of semble-dev, so its
NDCG@10 there is in-sample. Here each fold of repositories (name order, every third) is
answered with the grid setting that scored best on the other two folds; the held-out figure
is the mean, over repositories, of each repository's NDCG@10 under the setting chosen
without it. Only understand_code questions (356 of 421) depend on the grid; the others are
answered once. Indexes come from bench/eval.py's cache.
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))
import datasets  # noqa: E402

from fourfold import Fourfold, SearchOptions  # noqa: E402
from fourfold.api import DEEP_EMBEDDER  # noqa: E402
from fourfold.routing import profiles  # noqa: E402
from fourfold.routing.intent import UNDERSTAND_CODE, classify  # noqa: E402

sys.path.insert(0, str(datasets.DATA_DIR))
import score as reference  # noqa: E402  (the reference scorer's own NDCG@10)

INDEXES = BENCH / ".cache" / "indexes"
FOLDS = 3
GRID = [{"semantic": s, "text": t, "structural": st, "graph": 0.1, "k": k}
        for s, t, st, k in itertools.product((0.2, 0.3, 0.4, 0.5), (0.2, 0.3, 0.4, 0.5),
                                             (0.1, 0.2, 0.3), (5, 20))]


def _targets(q: dict) -> list[tuple]:
    return [(t, None, None) if isinstance(t, str) else
            (t["path"], t.get("start_line"), t.get("end_line"))
            for t in q["relevant"] + q["secondary"]]


def main() -> None:
    deep = "--deep" in sys.argv[1:]
    repos = sorted(datasets.semble_repos(), key=lambda r: r["name"])
    fold_of = {r["name"]: i % FOLDS for i, r in enumerate(repos)}
    tuned = profiles.TUNED[UNDERSTAND_CODE]
    settings = GRID + [{**tuned, "k": profiles.PROFILE_K["tuned"]}]
    # scores[setting index][repo] = that repository's mean NDCG@10 under the setting
    scores: list[dict[str, float]] = [dict() for _ in settings]
    for repo in repos:
        ff = Fourfold(Path(repo["index_root"]), index_dir=INDEXES / "semble" / repo["name"],
                      deep_embedder=DEEP_EMBEDDER if deep else None)
        ff.index()
        if deep:
            ff.deepen()
        fixed, varying = {}, []
        for q in repo["queries"]:
            if classify(q["query"]).intent == UNDERSTAND_CODE:
                varying.append(q)
            else:
                hits = ff.search(q["query"], SearchOptions()).hits
                fixed[q["id"]] = reference.ndcg10(
                    [{"path": h.path, "start_line": h.start_line, "end_line": h.end_line}
                     for h in hits], _targets(q))
        for n, setting in enumerate(settings):
            profiles.PROFILES["cv"] = {**profiles.TUNED, UNDERSTAND_CODE: {
                m: setting[m] for m in ("semantic", "text", "structural", "graph")}}
            profiles.PROFILE_K["cv"] = setting["k"]
            values = list(fixed.values())
            for q in varying:
                hits = ff.search(q["query"], SearchOptions(profile="cv")).hits
                values.append(reference.ndcg10(
                    [{"path": h.path, "start_line": h.start_line, "end_line": h.end_line}
                     for h in hits], _targets(q)))
            scores[n][repo["name"]] = sum(values) / len(values)
        ff.close()
        print(f"{repo['name']}: {len(varying)} understand_code questions", flush=True)

    def mean_over(n: int, names) -> float:
        names = list(names)
        return sum(scores[n][name] for name in names) / len(names)

    everything = [r["name"] for r in repos]
    tuned_n = len(settings) - 1
    best_all = max(range(len(GRID)), key=lambda n: mean_over(n, everything))
    held_out = {}
    for fold in range(FOLDS):
        train = [name for name in everything if fold_of[name] != fold]
        chosen = max(range(len(GRID)), key=lambda n: mean_over(n, train))
        print(f"fold {fold}: chose {GRID[chosen]} (training folds "
              f"{mean_over(chosen, train):.4f})")
        for name in everything:
            if fold_of[name] == fold:
                held_out[name] = scores[chosen][name]
    print(f"tuned profile, in-sample:          {mean_over(tuned_n, everything):.4f}")
    print(f"best grid setting, in-sample:      {mean_over(best_all, everything):.4f} "
          f"{GRID[best_all]}")
    print(f"grid chosen per fold, held-out:    {sum(held_out.values()) / len(held_out):.4f}")


if __name__ == "__main__":
    main()
