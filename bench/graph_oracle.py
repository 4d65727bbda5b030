"""Call-graph accuracy of fourfold against Jedi on a real third-party Python project.

For a sample of functions and methods of the project, compare the call sites (file, line)
that fourfold resolves to each definition (EXACT or INFERRED edges: a guess by name alone
is no answer) with the call sites that Jedi's ``Script.get_references`` finds (a reference
counts as a call site when the name is followed by ``(`` or is used as a ``@decorator``).
Reports micro-averaged precision and recall and lists the disagreements.

Usage:
    pip download click==8.3.1 --no-deps -d /tmp/oracle && \
        python -m zipfile -e /tmp/oracle/click-*.whl /tmp/oracle/src
    python bench/graph_oracle.py /tmp/oracle/src click [--limit 80] [--verbose]

The project's code is read from the given folder and never copied into this repository.
"""
from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fourfold.graph.facts import FileFacts  # noqa: E402
from fourfold.graph.resolve import resolve_graph  # noqa: E402
from fourfold.parsing import parse_file  # noqa: E402
from fourfold.store.base import Resolution  # noqa: E402


def load(root: Path, package: str):
    facts, sources = {}, {}
    for p in sorted((root / package).rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        data = p.read_bytes()
        res = parse_file(data, "python")
        facts[rel] = FileFacts("python", res.symbols, res.references)
        sources[rel] = data.decode("utf-8", "replace")
    return facts, sources


def is_call_site(line_text: str, col: int, name: str) -> bool:
    after = line_text[col + len(name):].lstrip()
    before = line_text[:col].rstrip()
    return after.startswith("(") or before.endswith("@") or re.search(r"@[\w.]*$", before) is not None


def jedi_call_sites(jedi, project, root: Path, sources, rel: str, line: int, name: str):
    text = sources[rel]
    line_text = text.splitlines()[line - 1]
    m = re.search(r"\bdef\s+(" + re.escape(name) + r")\b", line_text)
    if not m:
        return None
    script = jedi.Script(text, path=str(root / rel), project=project)
    sites = set()
    for ref in script.get_references(line, m.start(1), include_builtins=False):
        if ref.is_definition() or ref.module_path is None:
            continue
        try:
            ref_rel = Path(ref.module_path).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
        if ref_rel not in sources:
            continue
        lt = sources[ref_rel].splitlines()[ref.line - 1]
        if is_call_site(lt, ref.column, ref.name):
            sites.add((ref_rel, ref.line))
    return sites


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path, help="folder that contains the package directory")
    ap.add_argument("package")
    ap.add_argument("--limit", type=int, default=150, help="functions/methods to sample")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    import jedi

    t0 = time.perf_counter()
    facts, sources = load(args.root, args.package)
    t1 = time.perf_counter()
    edges = resolve_graph(facts)
    t2 = time.perf_counter()
    print(f"{len(facts)} files, {sum(len(f.symbols) for f in facts.values())} symbols, "
          f"{len(edges)} edges; parse {t1 - t0:.2f}s, resolve {t2 - t1:.2f}s")

    ours: dict[tuple[str, str], set] = {}
    for e in edges:
        if e.kind == "call" and e.resolution >= Resolution.INFERRED and e.dst_symbol:
            ours.setdefault((e.dst_path, e.dst_symbol), set()).add((e.src_path, e.line))

    defs = [(p, s) for p, f in facts.items() for s in f.symbols
            if s.kind in ("function", "method") and not (s.name.startswith("__") and s.name.endswith("__"))]
    # A seeded random sample, independent of either tool's output.
    rng = random.Random(args.seed)
    rng.shuffle(defs)
    sample = defs[: args.limit]

    project = jedi.Project(str(args.root), added_sys_path=[str(args.root)])
    tp = fp = fn = 0
    n_funcs = 0
    why_fp: Counter = Counter()
    why_fn: Counter = Counter()
    for rel, sym in sample:
        j = jedi_call_sites(jedi, project, args.root, sources, rel, sym.start_line, sym.name)
        if j is None:
            continue
        n_funcs += 1
        f = ours.get((rel, sym.qualname), set())
        tp += len(f & j)
        for site in sorted(f - j):
            fp += 1
            lt = sources[site[0]].splitlines()[site[1] - 1].strip()
            why_fp[_category(lt, sym.name)] += 1
            if args.verbose:
                print(f"  FP {sym.qualname:40s} {site[0]}:{site[1]}  {lt[:90]}")
        for site in sorted(j - f):
            fn += 1
            lt = sources[site[0]].splitlines()[site[1] - 1].strip()
            why_fn[_category(lt, sym.name)] += 1
            if args.verbose:
                print(f"  FN {sym.qualname:40s} {site[0]}:{site[1]}  {lt[:90]}")
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    print(f"functions/methods compared: {n_funcs}")
    print(f"call sites: fourfold {tp + fp}, jedi {tp + fn}, agreed {tp}")
    print(f"precision {precision:.3f}  recall {recall:.3f}")
    print("false positives by receiver:", dict(why_fp.most_common()))
    print("false negatives by receiver:", dict(why_fn.most_common()))
    return 0


def _category(line_text: str, name: str) -> str:
    m = re.search(r"([\w.()\[\]]*?)\.?\b" + re.escape(name) + r"\s*\(", line_text)
    if not m or not m.group(1):
        return "plain name"
    recv = m.group(1).rstrip(".")
    if recv in ("self", "cls"):
        return "self/cls"
    if recv.startswith("super"):
        return "super()"
    if "(" in recv or "[" in recv:
        return "expression receiver"
    return "name receiver"


if __name__ == "__main__":
    raise SystemExit(main())
