"""Task-context benchmark: how much of a task's gold code `get_task_context`'s pack holds.

    python bench/task_context.py [--budgets 4000 8000] [--sets localize semble]

Tasks: the localization-dev issues (the issue text; gold: the files the fix changed) and,
with `--sets semble`, the semble-dev queries (gold: relevant and secondary targets, some with
line ranges). Each task's cached index (bench/.cache/indexes/<set>/<name>, made by
`python bench/eval.py localize|semble`) builds its task context under each setting of
`SETTINGS`, packed as `get_task_context` packs by default (40 spans, 80 lines a span) at
each budget. File recall: the share of a task's gold files that some span of the pack lies
in; line recall: the share of the gold line ranges' lines that the pack's spans cover (tasks
whose gold has ranges only); both averaged over tasks, per set.

Every setting past "none" (the default pack) is a choice made on this data, so it is also
scored leaving one repository out: the setting with the best mean file recall (over budgets
and the sets run) on the other repositories is scored on the held-out one's tasks
("held-out" rows).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))
import datasets  # noqa: E402

from fourfold import Fourfold  # noqa: E402
from fourfold.context import (DEFAULT_SETTINGS, SEARCH_HITS, ContextSettings,  # noqa: E402
                              approx_tokens, task_context)

INDEXES = BENCH / ".cache" / "indexes"
SPAN_LIMIT = 40  # get_task_context's default spans per pack

# "none" is the default pack; the others add 1 or 2 declarations the task names
# (config_points) after the first hit, the first three hits or all of them (config_after).
SETTINGS: dict[str, ContextSettings] = {
    "none": ContextSettings(config_points=0),
    **{f"config{n}-after{k}": ContextSettings(config_points=n, config_after=k)
       for n in (1, 2) for k in (1, 3, SEARCH_HITS)},
}


def localize_tasks() -> list[dict]:
    """One index per issue: [{"repo", "tree", "index", "tasks": [(id, text, gold)]}]."""
    return [{"repo": inst["repo"], "tree": Path(inst["tree"]),
             "index": INDEXES / "localize" / inst["instance_id"],
             "tasks": [(inst["instance_id"], inst["query"],
                        [(path, None, None) for path in inst["gold_files"]])]}
            for inst in datasets.localization_instances()]


def semble_tasks() -> list[dict]:
    """One index per repository, holding all its queries."""
    out = []
    for repo in datasets.semble_repos():
        tasks = []
        for q in repo["queries"]:
            gold = [(t, None, None) if isinstance(t, str)
                    else (t["path"], t.get("start_line"), t.get("end_line"))
                    for t in q["relevant"] + q["secondary"]]
            tasks.append((q["id"], q["query"], gold))
        out.append({"repo": repo["github"], "tree": Path(repo["index_root"]),
                    "index": INDEXES / "semble" / repo["name"], "tasks": tasks})
    return out


def same_file(pack_path: str, gold_path: str) -> bool:
    """Gold paths may be relative to the repository root or to the indexed folder (as the
    reference scorer allows): one path is the other or ends with it after a '/'."""
    return (pack_path == gold_path or gold_path.endswith("/" + pack_path)
            or pack_path.endswith("/" + gold_path))


def recall(spans: list[dict], gold: list[tuple]) -> tuple[float, float | None]:
    """(share of gold files with a span, share of gold range lines covered or None)."""
    files = {path for path, _, _ in gold}
    found = sum(1 for g in files if any(same_file(s["path"], g) for s in spans))
    ranges = [(p, a, b) for p, a, b in gold if a is not None and b is not None]
    if not ranges:
        return found / len(files), None
    covered = total = 0
    for path, first, last in ranges:
        lines = set(range(first, last + 1))
        total += len(lines)
        for span in spans:
            if same_file(span["path"], path):
                lines -= set(range(span["start_line"], span["end_line"] + 1))
        covered += last - first + 1 - len(lines)
    return found / len(files), covered / total


def tokens_before_gold(packed: dict, gold: list[tuple]) -> int | None:
    """The tokens a pack spends before its first span in a gold file (None: none there)."""
    spent = 0
    for span in packed["spans"]:
        if any(same_file(span["path"], g) for g, _, _ in gold):
            return spent
        spent += approx_tokens(span)
    return None


def remember_searches(ff: Fourfold) -> None:
    """Search each task once for all settings: they differ only after the search."""
    search, seen = ff.search_with_fallback, {}

    def remembered(query: str, **kw):
        key = (query, tuple(sorted(kw.items())))
        if key not in seen:
            seen[key] = search(query, **kw)
        return seen[key]

    ff.search_with_fallback = remembered


def measure(group: dict, budgets: list[int]) -> list[dict]:
    """Per task of one index: {"id", "repo", setting: {budget: (file, line, tokens),
    "before_gold": tokens}}."""
    ff = Fourfold(group["tree"], index_dir=group["index"])
    try:
        ff.index()
        remember_searches(ff)
        rows = []
        for task_id, text, gold in group["tasks"]:
            row: dict = {"id": task_id, "repo": group["repo"], "lines": False}
            for name, settings in SETTINGS.items():
                context = task_context(ff, text, settings=settings)
                row[name] = {}
                for budget in budgets:
                    packed = context.pack(limit=SPAN_LIMIT, max_tokens=budget)
                    files, lines = recall(packed["spans"], gold)
                    row[name][budget] = (files, lines, packed["used_tokens"])
                    row["lines"] = lines is not None
                row[name]["before_gold"] = tokens_before_gold(packed, gold)
            rows.append(row)
        return rows
    finally:
        ff.close()


def mean(values) -> float:
    values = list(values)
    return statistics.fmean(values) if values else float("nan")


def overall(rows: list[dict], setting: str, budgets: list[int]) -> float:
    """Mean file recall over budgets, each set weighted equally."""
    sets = {r["set"] for r in rows}
    return mean(mean(r[setting][b][0] for r in rows if r["set"] == s for b in budgets)
                for s in sets)


def held_out(rows: list[dict], budgets: list[int]) -> tuple[dict[str, dict], dict[str, str]]:
    """Leave one repository out; returns, per held-out task id, the chosen setting's scores,
    and the setting each held-out repository got."""
    chosen, scores = {}, {}
    for repo in sorted({r["repo"] for r in rows}):
        train = [r for r in rows if r["repo"] != repo]
        # ties go to the earlier setting, so "none" stays unless another does better
        best = max(SETTINGS, key=lambda s: overall(train, s, budgets))
        chosen[repo] = best
        for r in rows:
            if r["repo"] == repo:
                scores[r["id"]] = r[best]
    return scores, chosen


def table(title: str, rows: list[dict], budgets: list[int], names: list[str],
          held: dict[str, dict]) -> None:
    lined = [r for r in rows if r["lines"]]
    print(f"\n{title}: {len(rows)} tasks, {len({r['repo'] for r in rows})} repositories"
          + (f", {len(lined)} with gold line ranges" if lined else
             "; line recall n/a (gold has files only)"))
    head = "".join(f" | files@{b} | lines@{b} | tokens@{b}" for b in budgets)
    print(f"{'setting':18}{head} | median tokens before gold")

    def line(name: str, scores: list[dict]) -> None:
        cells = ""
        for b in budgets:
            files = mean(s[b][0] for s in scores)
            covered = [s[b][1] for s in scores if s[b][1] is not None]
            lines = f"{mean(covered):.3f}" if covered else "n/a"
            cells += (f" | {files:>{6 + len(str(b))}.3f} | {lines:>{6 + len(str(b))}}"
                      f" | {mean(s[b][2] for s in scores):>{7 + len(str(b))}.0f}")
        before = [s["before_gold"] for s in scores if s["before_gold"] is not None]
        print(f"{name:18}{cells} | {statistics.median(before) if before else 'n/a':>8}")

    for name in names:
        line(name, [r[name] for r in rows])
    line("held-out", [held[r["id"]] for r in rows])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--budgets", type=int, nargs="+", default=[4000, 8000])
    parser.add_argument("--sets", nargs="+", choices=["localize", "semble"],
                        default=["localize"])
    args = parser.parse_args()
    budgets = args.budgets
    rows: list[dict] = []
    for name in args.sets:
        for group in (localize_tasks() if name == "localize" else semble_tasks()):
            measured = measure(group, budgets)
            for row in measured:
                row["set"] = name
            rows += measured
            print(f"  {name} {group['index'].name}: {len(measured)} tasks", file=sys.stderr)
    held, chosen = held_out(rows, budgets)
    best = max(SETTINGS, key=lambda s: overall(rows, s, budgets))
    for name in args.sets:
        table(f"{name}-dev", [r for r in rows if r["set"] == name], budgets,
              list(SETTINGS), held)
    print(f"\nin-sample best (mean file recall over budgets and sets): {best}")
    print("chosen per held-out repository: "
          + ", ".join(f"{repo.split('/')[-1]}={name}" for repo, name in chosen.items()))
    print(f"default in fourfold/context.py: config_points={DEFAULT_SETTINGS.config_points}, "
          f"config_after={DEFAULT_SETTINGS.config_after}")


if __name__ == "__main__":
    main()
