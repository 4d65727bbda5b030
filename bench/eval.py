"""Quality, latency and zero-result rate on the benchmark sets, scored by the reference scorer.

    python bench/eval.py semble   [--preset default] [--modality M ...] [--no-direct] ...
    python bench/eval.py semble --deep   (the deep pass after indexing: its model answers
        semantic questions; without --deep the indexing model answers)
    python bench/eval.py localize [--preset default] ...
    python bench/eval.py train [--granularity function]   (localization-train, 398 issues at
        release trees: bench/datasets.py prepare train; --releases Django-3.1a1,...: only
        the issues of those trees, scored over them alone)
    python bench/eval.py semble --ablations        (each modality alone, presets, direct, boost)
    python bench/eval.py semble --store postgresql://…   (every repository in one server index)
    python bench/eval.py semble --shared [--across]  (one embedded index holding every
        repository; --across asks all of them for each query, as search_repositories does)

Trees come from bench/datasets.py (prepare them first); indexes are kept under
bench/.cache/indexes/ and updated incrementally, so a second run only searches.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))
import datasets  # noqa: E402

from fourfold import Fourfold, SearchOptions  # noqa: E402
from fourfold.api import DEEP_EMBEDDER  # noqa: E402
from fourfold.routing.profiles import parse_weights  # noqa: E402

SCORER = datasets.DATA_DIR / "score.py"
INDEXES = BENCH / ".cache" / "indexes"
RESULTS = BENCH / ".cache" / "results"
EMBEDDER = "default"  # --embedder
REPOS: set[str] | None = None  # --repos: only these semble-dev repositories
STORE: str | None = None  # --store: one server index for every repository
SHARED = False  # --shared: one embedded index for every repository
ACROSS = False  # --across: each query asks every repository of the shared index
SELECTED: list[bool] = []  # --across: whether the query's own repository was searched
DEEP = False  # --deep: the deep pass after indexing (its model answers semantic questions)
RELEASES: set[str] | None = None  # --releases: only the train instances of these trees


def open_index(kind: str, key: str, root: Path, log: dict) -> Fourfold:
    deep = DEEP_EMBEDDER if DEEP else None  # without --deep, the indexing model answers
    if STORE:
        ff = Fourfold(root, store_url=STORE, repository=key, embedder=EMBEDDER,
                      deep_embedder=deep)
    elif SHARED:
        ff = Fourfold(root, index_dir=INDEXES / f"{kind}-shared", repository=key,
                      embedder=EMBEDDER, deep_embedder=deep)
    else:
        ff = Fourfold(root, index_dir=INDEXES / kind / key, embedder=EMBEDDER,
                      deep_embedder=deep)
    started = time.perf_counter()
    summary = ff.index()
    if DEEP:
        ff.deepen()
    log.setdefault("index_s", {})[key] = time.perf_counter() - started
    log.setdefault("files", {})[key] = summary.files
    return ff


def run_queries(ff: Fourfold, queries: list[tuple[str, str]], options: SearchOptions,
                out: list[dict], latencies: list[float], intents: dict) -> None:
    for qid, text in queries:
        started = time.perf_counter()
        if ACROSS:
            response = ff.search_repositories(text, None, options)
            SELECTED.append(ff.repository_name in response.repositories_searched)
            # a hit in another repository is a miss, whatever its path
            response.hits = [h if h.repository == ff.repository_name else
                             replace(h, path=f"{h.repository}::{h.path}") for h in response.hits]
        else:
            response = ff.search(text, options)
        latencies.append((time.perf_counter() - started) * 1000)
        intents[qid] = response.intent
        out.append({"id": qid, "intent": response.intent,
                    "fusion_strategy": response.fusion_strategy,
                    "results": [{"path": h.path, "start_line": h.start_line,
                                 "end_line": h.end_line, "symbol": h.symbol}
                                for h in response.hits]})


def score(kind: str, results_file: Path) -> dict:
    target = {"semble": datasets.SEMBLE_DATA, "localize": datasets.LOCALIZE_DATA,
              "train": datasets.TRAIN_DATA}[kind]
    if kind == "train" and RELEASES:  # the scorer counts every instance it is given
        asked = {json.loads(line)["id"] for line in results_file.read_text().splitlines()}
        subset = RESULTS / f"{results_file.stem}.dataset.jsonl"
        subset.write_text("".join(line + "\n" for line in target.read_text().splitlines()
                                  if line.strip() and json.loads(line)["instance_id"] in asked))
        target = subset
    only = [arg for name in sorted(REPOS or ()) for arg in ("--repo", name)]
    out = subprocess.run([sys.executable, str(SCORER), "semble" if kind == "semble" else
                          "localize", str(target), str(results_file),
                          "--json", *only], capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def per_intent_ndcg(kind: str, results: list[dict]) -> dict[str, tuple[int, float]]:
    """NDCG@10 per classified intent (semble only), scoring each intent's queries alone."""
    if kind != "semble":
        return {}
    sys.path.insert(0, str(SCORER.parent))
    import score as reference  # the reference scorer's own functions

    repos = {r["name"]: r for r in datasets.semble_repos()}
    by_intent: dict[str, list[float]] = defaultdict(list)
    for rec in results:
        name, n = rec["id"].rsplit("#", 1)
        q = repos[name]["queries"][int(n)]
        targets = [(t, None, None) if isinstance(t, str)
                   else (t["path"], t.get("start_line"), t.get("end_line"))
                   for t in q.get("relevant", []) + q.get("secondary", [])]
        by_intent[rec["intent"]].append(reference.ndcg10(rec["results"], targets))
    return {k: (len(v), sum(v) / len(v)) for k, v in sorted(by_intent.items())}


def evaluate(kind: str, options: SearchOptions, label: str, quiet: bool = False) -> dict:
    log: dict = {}
    results: list[dict] = []
    latencies: list[float] = []
    intents: dict[str, str] = {}
    if kind == "semble":
        repos = [r for r in datasets.semble_repos() if not REPOS or r["name"] in REPOS]
        if ACROSS:  # every repository indexed before the first query asks them all
            for repo in repos:
                open_index("semble", repo["name"], Path(repo["index_root"]), log).close()
        for repo in repos:
            ff = open_index("semble", repo["name"], Path(repo["index_root"]), log)
            queries = [(q["id"], q["query"]) for q in repo["queries"]]
            run_queries(ff, queries, options, results, latencies, intents)
            ff.close()
    elif kind == "train":
        by_tree: dict[Path, list[dict]] = defaultdict(list)
        for inst in datasets.train_instances():
            if not RELEASES or inst["tree"].name in RELEASES:
                by_tree[inst["tree"]].append(inst)
        for tree, instances in sorted(by_tree.items()):
            ff = open_index("releases", tree.name, tree, log)
            run_queries(ff, [(i["instance_id"], i["query"]) for i in instances], options,
                        results, latencies, intents)
            ff.close()
    else:
        for inst in datasets.localization_instances():
            ff = open_index("localize", inst["instance_id"], Path(inst["tree"]), log)
            run_queries(ff, [(inst["instance_id"], inst["query"])], options, results,
                        latencies, intents)
            ff.close()
    RESULTS.mkdir(parents=True, exist_ok=True)
    results_file = RESULTS / f"{kind}-{label}.jsonl"
    results_file.write_text("".join(json.dumps(r) + "\n" for r in results))
    scored = score(kind, results_file)
    zero = sum(1 for r in results if not r["results"]) / max(len(results), 1)
    latencies.sort()
    summary = {
        "label": label, "scores": scored, "zero_result_rate": zero,
        "latency_p50_ms": statistics.median(latencies),
        "latency_p95_ms": latencies[max(int(len(latencies) * 0.95) - 1, 0)],
        "index_median_s": statistics.median(log["index_s"].values()),
        "index_total_s": sum(log["index_s"].values()),
        "per_intent": per_intent_ndcg(kind, results),
        "strategies": dict(Counter(r["fusion_strategy"] for r in results)),
    }
    if SELECTED:
        summary["own_repository_searched"] = sum(SELECTED) / len(SELECTED)
    if not quiet:
        print_summary(kind, summary)
    return summary


def print_summary(kind: str, s: dict) -> None:
    sc = s["scores"]
    if kind == "semble":
        cats = " ".join(f"{c} {v:.3f}" for c, v in sc["by_category"].items())
        head = f"NDCG@10 {sc['ndcg10']:.4f} ({cats})"
    else:
        head = " ".join(f"{k} {v:.3f}" for k, v in sc.items() if k.startswith(("acc", "Acc",
                                                                               "mrr", "MRR")))
        if not head:
            head = json.dumps(sc)
    print(f"[{s['label']}] {head}; zero-result {s['zero_result_rate']:.3f}; "
          f"p50 {s['latency_p50_ms']:.1f} ms p95 {s['latency_p95_ms']:.1f} ms; "
          f"index median {s['index_median_s']:.2f} s, total {s['index_total_s']:.1f} s; "
          f"strategies {s['strategies']}")
    if "own_repository_searched" in s:
        print(f"    the query's own repository was searched for "
              f"{s['own_repository_searched']:.1%} of the queries")
    for intent, (n, v) in s["per_intent"].items():
        print(f"    intent {intent:<16} n={n:<4} NDCG@10 {v:.3f}")


def options_from(args) -> SearchOptions:
    return SearchOptions(preset=args.preset,
                         modalities=tuple(args.modality) if args.modality else None,
                         weights=parse_weights(args.weights) if args.weights else None,
                         rrf_k=args.rrf_k, profile=args.profile, limit=args.limit,
                         direct=not args.no_direct, boost=not args.no_boost,
                         granularity=args.granularity, ranking=args.ranking)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["semble", "localize", "train"])
    parser.add_argument("--preset", default="default")
    parser.add_argument("--modality", action="append")
    parser.add_argument("--weights")
    parser.add_argument("--rrf-k", type=float)
    parser.add_argument("--profile", default="tuned")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--granularity", choices=["file", "span", "function"])
    parser.add_argument("--ranking", choices=["learned", "fused"], default="learned")
    parser.add_argument("--no-direct", action="store_true")
    parser.add_argument("--no-boost", action="store_true")
    parser.add_argument("--label")
    parser.add_argument("--embedder", default="default",
                        help="embedding model (vectors of each model are kept side by side)")
    parser.add_argument("--repos", help="only these semble-dev repositories (comma-separated); "
                                         "the scores then cover those only")
    parser.add_argument("--releases", help="train: only the instances of these release trees "
                                            "(comma-separated, e.g. Django-3.1a1); the "
                                            "scores then cover those only")
    parser.add_argument("--ablations", action="store_true")
    parser.add_argument("--deep", action="store_true",
                        help="run the deep pass after indexing; without it the indexing "
                             "model answers even where an index holds the deep model's codes")
    parser.add_argument("--store", help="index every repository into this server store")
    parser.add_argument("--shared", action="store_true",
                        help="index every repository into one embedded index")
    parser.add_argument("--across", action="store_true",
                        help="with --shared or --store: ask every repository for each query")
    args = parser.parse_args()
    global EMBEDDER, REPOS, STORE, SHARED, ACROSS, DEEP, RELEASES
    EMBEDDER, STORE, SHARED, ACROSS = args.embedder, args.store, args.shared, args.across
    DEEP = args.deep
    RELEASES = set(args.releases.split(",")) if args.releases else None
    if ACROSS and not (STORE or SHARED):
        parser.error("--across needs --shared or --store")
    REPOS = set(args.repos.split(",")) if args.repos else None
    if not args.ablations:
        label = args.label or "-".join(filter(None, [args.preset, "deep" if DEEP else "",
                                                     *(args.modality or []),
                                                     args.granularity or "",
                                                     "fused" if args.ranking == "fused" else "",
                                                     "nodirect" if args.no_direct else "",
                                                     "noboost" if args.no_boost else ""]))
        evaluate(args.kind, options_from(args), label)
        return
    runs = [(f"only-{m}", SearchOptions(modalities=(m,), direct=False, limit=args.limit))
            for m in ("text", "structural", "semantic", "graph")]
    runs += [(p, SearchOptions(preset=p, limit=args.limit)) for p in ("quick", "default",
                                                                      "thorough")]
    runs += [("default-nodirect", SearchOptions(direct=False, limit=args.limit)),
             ("default-noboost", SearchOptions(boost=False, limit=args.limit))]
    for label, options in runs:
        evaluate(args.kind, options, label)


if __name__ == "__main__":
    main()
