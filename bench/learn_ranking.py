"""Train and cross-validate the learned ranking stage (fourfold/ranking/learned.py).

    python bench/learn_ranking.py dump      # candidates, features and labels of every query
    python bench/learn_ranking.py dump --deep   # the same with the deep pass's semantic ranks
    python bench/learn_ranking.py dump --deep --releases Django-3.1a1,...  # a sample of trees
    python bench/learn_ranking.py cv        # leave-repositories-out folds, scored by score.py
    python bench/learn_ranking.py cv --ablate   # the same, each feature group left out
    python bench/learn_ranking.py train     # fit on everything, write the shipped model
    python bench/learn_ranking.py train --data deep   # the model for the deep pass's ranks
    python bench/learn_ranking.py misses    # where held-out function answers lose

--data static|deep|both: the dump the model is fitted on (train: static writes ranker.txt,
deep ranker-deep.txt, which the engine uses where the deep pass's model answered); cv
--data both fits one model on the two dumps together and scores each dump's held-out folds
apart (the alternative to two models, measured in docs/benchmarks.md).

Data: semble-dev (21 repositories, 421 questions) and localization-train (398 issues of 3
repositories, at release trees: bench/datasets.py prepare train). Each question is searched
with the fused ranking at span granularity (every candidate, after priors); a candidate's
label is 1 when it covers a semble target or lies in a gold file, 2 when it also lies in a
gold function. Folds leave whole repositories out: the semble repositories in name order,
every third to one fold, and one localization repository per fold (django, matplotlib,
scikit-learn). Both the fused and the learned results of a held-out fold go through the
same granularity stage and the reference scorer. localization-dev is never trained on.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))
import datasets  # noqa: E402

from fourfold import Fourfold, SearchOptions  # noqa: E402
from fourfold.api import DEEP_EMBEDDER  # noqa: E402
from fourfold.model import Hit  # noqa: E402
from fourfold.store.base import StoredSymbol  # noqa: E402
from fourfold.query.model import Query  # noqa: E402
from fourfold.ranking.granularity import (UNIT_KINDS, enclosing_definition,  # noqa: E402
                                          names_used, to_granularity)
from fourfold.ranking.learned import (DEEP_MODEL_PATH, FEATURES, INTENTS,  # noqa: E402
                                      MODEL_PATH, candidate_features, with_headline)
from fourfold.routing.engine import GRANULARITY  # noqa: E402

INDEXES = BENCH / ".cache" / "indexes"
OUT = BENCH / ".cache" / "ranking"
SCORER = datasets.DATA_DIR / "score.py"
FOLDS = 3
TRAIN_FOLD = {"django/django": 0, "matplotlib/matplotlib": 1, "scikit-learn/scikit-learn": 2}
# Chosen by the held-out folds among 7 settings (docs/benchmarks.md): smaller trees and
# fewer rounds than these overfit less.
PARAMS = {"objective": "lambdarank", "metric": "ndcg", "eval_at": [10], "num_leaves": 7,
          "learning_rate": 0.05, "min_data_in_leaf": 200, "feature_fraction": 0.8,
          "bagging_fraction": 0.8, "bagging_freq": 1, "lambdarank_truncation_level": 20,
          "verbose": -1, "seed": 7, "num_threads": 2}
ROUNDS = 100
GROUPS = {  # feature groups, for the ablation table
    "modality ranks and shares": [f for f in FEATURES if f.endswith(("_rank", "_share"))
                                  and f != "fused_rank"],
    "fused score and rank": ["fused", "fused_rank", "votes"],
    "file priors": ["centrality", "test", "prose", "vendor"],
    "name matches": ["file_name_match", "folder_match", "symbol_match", "module_index"],
    "file support": ["file_hits", "file_fused", "file_best_rank", "first_of_file"],
    "kind and size": ["kind_function", "kind_type", "kind_declaration", "kind_other", "lines",
                      "file_declarations", "file_definitions"],
    "issue mentions": ["path_mentioned", "frame_position", "symbol_mentioned"],
    "headline": ["headline_rank", "headline_span"],
    "query": ["pasted", "query_words", "intent_similar", "intent_exact"],
}


def _covers(hit: dict, target) -> bool:
    if isinstance(target, str):
        path, start, end = target, None, None
    else:
        path, start, end = target["path"], target.get("start_line"), target.get("end_line")
    a, b = hit["path"].strip("/"), path.strip("/")
    if not (a == b or a.endswith("/" + b) or b.endswith("/" + a)):
        return False
    return start is None or (hit["start_line"] <= end and start <= hit["end_line"])


def _same_symbol(hit: str, gold: str) -> bool:
    h, g = hit.split("."), gold.split(".")
    return h[-1] == g[-1] and (len(g) == 1 or len(h) == 1 or h[-2] == g[-2])


class Capture:
    """Stands in for the engine's learned stage: keeps the candidates it would rank (every
    fused hit after priors, before the granularity stage) and leaves their order."""

    failure = None  # as LearnedRanking's: the stage loaded

    def __init__(self):
        self.hits: list[Hit] = []
        self.rows: list[list[float]] = []

    def applies_to(self, query: Query) -> bool:
        return True

    def reads_headline(self, deep: bool) -> bool:
        return True

    def rerank(self, hits: list[Hit], query: Query, snapshot, deep: bool = False,
               headline: list[Hit] = ()) -> list[Hit]:
        self.hits = [replace(h) for h in with_headline(hits, headline)]
        self.rows = (candidate_features(self.hits, query, snapshot, headline)
                     if query.intent in INTENTS else [])
        return hits

    def explain(self, hits: list[Hit], deep: bool = False) -> None:
        """Nothing to explain: the fused order was left as it was."""


def _dump_queries(ff: Fourfold, dataset: str, fold: int, queries: list[dict], out) -> None:
    snapshot = ff.snapshots.current()
    capture = ff.engine.learned = Capture()
    for q in queries:
        response = ff.search(q["query"], SearchOptions())
        hits, rows = capture.hits, capture.rows
        candidates = []
        for i, hit in enumerate(hits):
            d = {"path": hit.path, "start_line": hit.start_line, "end_line": hit.end_line,
                 "symbol": hit.symbol, "score": hit.score}
            unit = enclosing_definition(hit, snapshot.definitions(hit.path))
            d["unit"] = ([unit.qualname, unit.start_line, unit.end_line, unit.kind] if unit
                         else None)
            if dataset == "semble":
                d["label"] = int(any(_covers(d, t) for t in q["targets"]))
            else:
                in_file = hit.path in q["gold_spans"] or hit.path in q["gold_files"]
                in_function = bool(unit) and any(
                    _same_symbol(unit.qualname, s) for s in q["gold_spans"].get(hit.path, ()))
                d["label"] = 2 if in_function else int(in_file)
            if rows:
                d["x"] = [None if isinstance(v, float) and math.isnan(v) else v for v in rows[i]]
            candidates.append(d)
        # what the function stage reads: the names the question spells out, and every
        # definition a function answer can be of the candidates' files
        paths = list(dict.fromkeys(c["path"] for c in candidates))
        definitions = {path: [[d.qualname, d.start_line, d.end_line, d.kind]
                              for d in snapshot.definitions(path) if d.kind in UNIT_KINDS]
                       for path in paths}
        # and how many of the names a pasted text mentions each function uses
        mentioned = Query(q["query"]).mentioned_names
        uses = {path: [[*key, count] for key, count in names_used(
                    snapshot.definitions(path), snapshot.text(path), mentioned).items()]
                for path in (paths if mentioned else ())}
        out.write(json.dumps({"id": q["id"], "dataset": dataset, "fold": fold,
                              "intent": response.intent, "candidates": candidates,
                              "identifiers": sorted(Query(q["query"]).identifiers),
                              "definitions": definitions, "uses": uses,
                              "deep": response.semantic_model == DEEP_EMBEDDER}) + "\n")


def _dump_path(data: str) -> Path:
    return OUT / ("candidates.jsonl" if data == "static" else f"candidates-{data}.jsonl")


def _open(root: Path, index_dir: Path, deep: bool) -> Fourfold:
    """The index, with the deep pass run where asked; without it the indexing model's
    semantic ranks, even where the index holds the deep model's codes."""
    ff = Fourfold(root, index_dir=index_dir, deep_embedder=DEEP_EMBEDDER if deep else None)
    ff.index()
    if deep:
        ff.deepen()
    return ff


def dump(deep: bool, releases: set[str] | None = None) -> None:
    """`releases`: only the localization-train issues of these release trees (a sample
    whose deep pass takes less than all 22 trees')."""
    OUT.mkdir(parents=True, exist_ok=True)
    with open(_dump_path("deep" if deep else "static"), "w") as out:
        repos = sorted(datasets.semble_repos(), key=lambda r: r["name"])
        for n, repo in enumerate(repos):
            ff = _open(Path(repo["index_root"]), INDEXES / "semble" / repo["name"], deep)
            queries = [{"id": q["id"], "query": q["query"],
                        "targets": q["relevant"] + q["secondary"]} for q in repo["queries"]]
            _dump_queries(ff, "semble", n % FOLDS, queries, out)
            ff.close()
            print(f"semble {repo['name']}: {len(queries)} questions", flush=True)
        by_tree: dict[Path, list[dict]] = defaultdict(list)
        for inst in datasets.train_instances():
            by_tree[inst["tree"]].append(inst)
        for tree, instances in sorted(by_tree.items()):
            if releases is not None and tree.name not in releases:
                continue
            ff = _open(tree, INDEXES / "releases" / tree.name, deep)
            for inst in instances:
                _dump_queries(ff, "train", TRAIN_FOLD[inst["repo"]],
                              [{"id": inst["instance_id"], "query": inst["query"],
                                "gold_files": inst["gold_files"],
                                "gold_spans": inst["gold_spans"]}], out)
            ff.close()
            print(f"train {tree.name}: {len(instances)} issues", flush=True)


def load(data: str) -> list[dict]:
    return [json.loads(line) for line in open(_dump_path(data))]


def _matrix(records: list[dict], drop: set[str]):
    import numpy as np

    keep = [i for i, f in enumerate(FEATURES) if f not in drop]
    xs, ys, groups = [], [], []
    for r in records:
        rows = [c for c in r["candidates"] if "x" in c]
        if not rows or not any(c["label"] for c in rows):
            continue
        xs += [[math.nan if c["x"][i] is None else c["x"][i] for i in keep] for c in rows]
        ys += [c["label"] for c in rows]
        groups.append(len(rows))
    return np.asarray(xs, dtype=np.float64), np.asarray(ys), groups, keep


def fit(records: list[dict], drop: set[str] = frozenset()):
    import lightgbm

    x, y, groups, keep = _matrix(records, set(drop))
    data = lightgbm.Dataset(x, y, group=groups,
                            feature_name=[FEATURES[i] for i in keep])
    return lightgbm.train(PARAMS, data, num_boost_round=ROUNDS), keep


def _definitions(record: dict) -> dict[str, list[StoredSymbol]]:
    """Per path of the record's candidates, the definitions a function answer can be, as
    the dump kept them: all the granularity stage reads of the index."""
    return {path: [StoredSymbol(0, 0, path, qualname.rsplit(".", 1)[-1], qualname, kind,
                                start, end, "", "", None, 0, None)
                   for qualname, start, end, kind in found]
            for path, found in record["definitions"].items()}


def _results(record: dict, model=None, keep=None, granularity: str | None = None,
             limit: int | None = None) -> list[dict]:
    """The record's answer: its candidates (re-ordered by the model when one is given and
    the intent is one it ranks) through the granularity stage, as the engine does it; the
    first 10 (20 functions) unless `limit` says."""
    import numpy as np

    hits = [Hit(c["path"], c["start_line"], c["end_line"], c["score"], symbol=c["symbol"])
            for c in record["candidates"]]
    # the engine's rule (LearnedRanking.applies_to): pasted texts of the intents it ranks
    learned = (model is not None and record["intent"] in INTENTS and len(hits) > 1
               and record["candidates"][0]["x"][FEATURES.index("pasted")] == 1.0)
    if learned:
        x = np.asarray([[math.nan if c["x"][i] is None else c["x"][i] for i in keep]
                        for c in record["candidates"]], dtype=np.float64)
        scores = model.predict(x)
        order = sorted(range(len(hits)), key=lambda i: -scores[i])
        hits = [hits[i] for i in order]
        for rank, h in enumerate(hits):
            h.score = 1.0 / (1 + rank)
    granularity = granularity or GRANULARITY[record["intent"]]
    definitions = _definitions(record)
    # the engine's rule: functions placed by the names an issue mentions where the deep
    # pass's model answered
    uses = {path: {(qualname, start): count for qualname, start, count in found}
            for path, found in record["uses"].items()}
    out = to_granularity(hits, granularity, lambda path: definitions.get(path, []),
                         support=not learned, named=frozenset(record["identifiers"]),
                         uses_of=(lambda path: uses.get(path, {}))
                         if record["deep"] and uses else None)
    return [{"path": h.path, "start_line": h.start_line, "end_line": h.end_line,
             "symbol": h.symbol}
            for h in out[:limit or (10 if granularity != "function" else 20)]]


def _score(records: list[dict], results: dict[str, list[dict]], name: str) -> dict:
    """semble-dev NDCG@10 by the reference scorer."""
    path = OUT / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"id": r["id"], "results": results[r["id"]]}) + "\n"
                            for r in records))
    out = subprocess.run([sys.executable, str(SCORER), "semble", str(datasets.SEMBLE_DATA),
                          str(path), "--json"], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)


def _localize_subset(results: dict, ids: set[str]) -> dict:
    """file acc@5 and function acc@10 over the given instances (the reference scorer's rules,
    applied to a subset of its data set)."""
    rows = [json.loads(l) for l in datasets.TRAIN_DATA.read_text().splitlines() if l.strip()]
    acc5 = fn10 = n = fn_n = 0
    for inst in rows:
        if inst["instance_id"] not in ids:
            continue
        n += 1
        hits = results[inst["instance_id"]]
        files = list(dict.fromkeys(h["path"] for h in hits))
        acc5 += all(any(f == g or f.endswith("/" + g) for f in files[:5])
                    for g in inst["gold_files"])
        spans = [(f, s) for f, names in (inst.get("gold_spans") or {}).items() for s in names]
        if spans:
            fn_n += 1
            syms = list(dict.fromkeys((h["path"], h["symbol"]) for h in hits if h["symbol"]))
            fn10 += all(any(p == f and _same_symbol(sym, s) for p, sym in syms[:10])
                        for f, s in spans)
    return {"acc@5": acc5 / max(n, 1), "function_acc@10": fn10 / max(fn_n, 1), "n": n}


def evaluate(records: list[dict], models: dict[int, tuple] | None, label: str) -> dict:
    """Scores of every fold's records, each ranked by the model not trained on it (models:
    fold -> (model, keep); one model under key -1 ranks every fold: in-sample)."""
    out = {}
    for dataset in ("semble", "train"):
        mine = [r for r in records if r["dataset"] == dataset]
        files, functions = {}, {}
        for r in mine:
            model, keep = (models.get(r["fold"], models.get(-1)) if models else (None, None))
            files[r["id"]] = _results(r, model, keep)
            if dataset == "train":
                functions[r["id"]] = _results(r, model, keep, "function")
        if dataset == "semble":
            scored = _score(mine, files, f"{label}-semble")
            out["semble_ndcg10"] = scored["ndcg10"]
            out["semble_by_category"] = scored["by_category"]
        else:
            ids = {r["id"] for r in mine}
            out["train_file_acc5"] = _localize_subset(files, ids)["acc@5"]
            out["train_function_acc10"] = _localize_subset(functions, ids)["function_acc@10"]
    return out


def fold_models(records: list[dict], drop: set[str] = frozenset()) -> dict:
    """fold -> the model fitted on every other fold (leaving its repositories out)."""
    return {fold: fit([r for r in records if r["fold"] != fold], drop) for fold in range(FOLDS)}


def cross_validate(records: list[dict], drop: set[str] = frozenset()) -> dict:
    return evaluate(records, fold_models(records, drop), "heldout")


# What a gold span names where the fix changed no definition of the tree: the module's
# imports, module-level code, its docstring (the data set's names for them).
MODULE_PARTS = ("imports", "impl", "docstring")


def function_misses(records: list[dict]) -> None:
    """Where the held-out function answers of localization-train lose: each gold (file,
    function) not among the first 10 functions, by why; then what the first 10 would
    score with every gold definition of the first few answer files placed first (a
    perfect ranking within those files: the most placing functions of a file can give)."""
    gold = {i["instance_id"]: i["gold_spans"] for i in datasets.train_instances()}
    models = fold_models(records)
    why: dict[str, int] = defaultdict(int)
    answered = {k: 0 for k in (0, 1, 2, 3, 5)}
    issues = module_issues = 0
    for r in records:
        spans = [(path, name) for path, names in gold.get(r["id"], {}).items()
                 for name in names]
        if r["dataset"] != "train" or not spans:
            continue
        issues += 1
        module_issues += any(name.split(":")[0] in MODULE_PARTS for _, name in spans)
        model, keep = models[r["fold"]]
        units = list(dict.fromkeys((h["path"], h["symbol"]) for h in
                                   _results(r, model, keep, "function", limit=1000)
                                   if h["symbol"]))
        files = list(dict.fromkeys(path for path, _ in units))
        candidates = {c["path"] for c in r["candidates"]}
        for path, name in spans:
            if any(p == path and _same_symbol(s, name) for p, s in units[:10]):
                continue
            defined = [q for q, *_ in r["definitions"].get(path, ())]
            if name.split(":")[0] in MODULE_PARTS:
                why[f"a module part ({name.split(':')[0]})"] += 1
            elif path not in candidates:
                why["file not among the candidates"] += 1
            elif not any(_same_symbol(q, name) for q in defined):
                why["not a definition of the tree (added by the fix)"] += 1
            else:
                at = files.index(path) if path in files else None
                why["a definition of answer file "
                    + ("past 10" if at is None or at >= 10 else str(at + 1))] += 1
        for k in answered:
            placed = [(p, q) for p in files[:k] for q, *_ in r["definitions"].get(p, ())
                      if any(p == g and _same_symbol(q, name) for g, name in spans)]
            top = list(dict.fromkeys(placed + units))[:10]
            answered[k] += all(any(p == g and _same_symbol(q, name) for p, q in top)
                               for g, name in spans)
    print(f"{issues} issues with gold functions; gold functions not among the first 10:")
    for reason, count in sorted(why.items(), key=lambda kv: -kv[1]):
        print(f"  {count:4d}  {reason}")
    print(f"{module_issues} issues name a module part, which no answer made of definitions "
          f"holds: function Acc@k is at most {1 - module_issues / issues:.3f}")
    for k, count in answered.items():
        print(f"function Acc@10 with the gold definitions of the first {k} answer files placed "
              f"first: {count / issues:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("step", choices=["dump", "cv", "train", "misses"])
    parser.add_argument("--ablate", action="store_true")
    parser.add_argument("--deep", action="store_true", help="dump: run the deep pass first")
    parser.add_argument("--releases", help="dump: only the localization-train issues of these "
                        "release trees (comma-separated, e.g. Django-3.1a1,matplotlib-3.7.0rc1)")
    parser.add_argument("--data", choices=["static", "deep", "both"], default="static",
                        help="cv, train: the dump(s) to fit on")
    args = parser.parse_args()
    if args.step == "dump":
        dump(args.deep, set(args.releases.split(",")) if args.releases else None)
        return
    if args.data == "both":
        both = {data: load(data) for data in ("static", "deep")}
        records = both["static"] + both["deep"]
    else:
        records = load(args.data)
    if args.step == "misses":
        function_misses(records)
        return
    if args.step == "train":
        if args.data == "both":
            parser.error("train fits the model of one dump: --data static or --data deep")
        path = DEEP_MODEL_PATH if args.data == "deep" else MODEL_PATH
        model, _ = fit(records)
        model.save_model(str(path))
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
        return
    if args.data == "both":
        folds = {fold: fit([r for r in records if r["fold"] != fold]) for fold in range(FOLDS)}
        everything = {-1: fit(records)}
        for data, mine in both.items():
            print(f"{data}, fused (no learned stage):", json.dumps(evaluate(mine, None, "fused")))
            print(f"{data}, held-out folds:          ",
                  json.dumps(evaluate(mine, folds, "heldout")))
            print(f"{data}, in-sample:               ",
                  json.dumps(evaluate(mine, everything, "insample")))
        return
    fused = evaluate(records, None, "fused")
    print("fused (no learned stage):", json.dumps(fused))
    print("held-out folds:          ", json.dumps(cross_validate(records)))
    print("in-sample:               ", json.dumps(evaluate(records, {-1: fit(records)},
                                                           "insample")))
    if args.ablate:
        for group, names in GROUPS.items():
            print(f"without {group}:", json.dumps(cross_validate(records, set(names))))


if __name__ == "__main__":
    main()
