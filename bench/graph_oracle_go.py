"""Call-graph accuracy of fourfold against go/types on a real Go module.

The oracle (bench/go_oracle, a small standard-library Go program) type-checks the module's
non-test packages and lists every call whose callee go/types resolves to a function or
method declared in the module: (caller file, line of the callee's name) -> (callee file,
"Func" or "Type.Method"). fourfold's answer is its "call" edges resolved EXACT or INFERRED
to a symbol (a guess by name alone is no answer), over the same files. An edge agrees when
caller file, line, callee file and callee qualname are all the same. Reports precision and
recall over all call sites and lists the disagreements by kind.

Usage:
    (cd bench/go_oracle && go run . /tmp/pflag) > /tmp/gobench/pflag_calls.jsonl
    python bench/graph_oracle_go.py /tmp/pflag /tmp/gobench/pflag_calls.jsonl [--verbose]

The project's code is read from the given folder and never copied into this repository.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fourfold.graph.facts import FileFacts  # noqa: E402
from fourfold.graph.resolve import resolve_graph  # noqa: E402
from fourfold.parsing import parse_file  # noqa: E402
from fourfold.store.base import Resolution  # noqa: E402

# Folders the go tool never builds as part of the module.
SKIP_DIRS = {"testdata", "vendor"}


def go_files(root: Path):
    for p in sorted(root.rglob("*.go")):
        parts = p.relative_to(root).parts
        if p.name.endswith("_test.go") or any(
                d in SKIP_DIRS or d.startswith((".", "_")) for d in parts[:-1]):
            continue
        yield p


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("root", type=Path, help="the module's folder (holds go.mod)")
    ap.add_argument("oracle", type=Path, help="JSON lines written by bench/go_oracle")
    ap.add_argument("--verbose", action="store_true", help="list every disagreement")
    ap.add_argument("--show", type=int, default=10, help="disagreements of each kind to list")
    args = ap.parse_args()

    t0 = time.perf_counter()
    facts, lines, kinds = {}, {}, {}
    for p in go_files(args.root):
        rel = p.relative_to(args.root).as_posix()
        data = p.read_bytes()
        res = parse_file(data, "go")
        facts[rel] = FileFacts("go", res.symbols, res.references)
        lines[rel] = data.decode("utf-8", "replace").splitlines()
        for s in res.symbols:
            kinds[(rel, s.qualname)] = s.kind
    t1 = time.perf_counter()
    edges = resolve_graph(facts)
    t2 = time.perf_counter()
    print(f"{len(facts)} files, {sum(len(f.symbols) for f in facts.values())} symbols, "
          f"{len(edges)} edges; parse {t1 - t0:.2f}s, resolve {t2 - t1:.2f}s")

    # Only calls to functions and methods are compared, as bench/graph_oracle.py does: Go
    # conversions T(x) and composite literals T{...}, which fourfold links as calls to the
    # type, call no function, and go/types lists none of them.
    ours: dict[tuple, Resolution] = {}
    name_only: set = set()
    to_types = Counter()
    for e in edges:
        if e.kind != "call" or not e.dst_symbol:
            continue
        if kinds.get((e.dst_path, e.dst_symbol)) not in ("function", "method"):
            to_types[e.resolution.name] += 1
            continue
        key = (e.src_path, e.line, e.dst_path, e.dst_symbol)
        if e.resolution >= Resolution.INFERRED:
            ours[key] = e.resolution
        elif e.resolution == Resolution.NAME_ONLY:
            name_only.add(key)

    oracle: dict[tuple, str] = {}
    checked = set()
    for raw in args.oracle.read_text().splitlines():
        c = json.loads(raw)
        if "checked" in c:
            checked.add(c["checked"])
        else:
            oracle[(c["file"], c["line"], c["callee_file"], c["callee"])] = c["kind"]
    # A package go/types could not check (a missing import, a newer Go) has no oracle: its
    # files' calls are left out on both sides and named here.
    unchecked = sorted(set(facts) - checked)
    if unchecked:
        print(f"{len(unchecked)} files not type-checked, not compared: {unchecked[:8]}")
    ours = {k: v for k, v in ours.items() if k[0] in checked}

    print("call edges to a type, not compared:", dict(to_types))
    agreed = ours.keys() & oracle.keys()
    fps = sorted(ours.keys() - oracle.keys())
    fns = sorted(oracle.keys() - ours.keys())
    precision = len(agreed) / len(ours) if ours else 1.0
    recall = len(agreed) / len(oracle) if oracle else 1.0
    print(f"call sites: fourfold {len(ours)}, go/types {len(oracle)}, agreed {len(agreed)}")
    print(f"precision {precision:.3f}  recall {recall:.3f}")
    print("agreed by level:", dict(Counter(ours[k].name for k in agreed)))
    print("oracle calls by kind:", dict(Counter(oracle.values())))

    # Why each side disagrees: whether go/types has the extra edge's call at all, and what
    # fourfold did with a missed call (a name-only guess of the same target, another target,
    # nothing). A call is matched across the sides by its site and the callee's own name.
    def site(k):
        return k[0], k[1], k[3].rsplit(".", 1)[-1]
    our_sites = {site(k) for k in ours}
    oracle_sites = {site(k) for k in oracle}
    fp_why = Counter(f"{ours[k].name}: " + ("go/types has another target" if site(k) in oracle_sites
                                            else "go/types has no such call") for k in fps)

    def fn_reason(k):
        if k in name_only:
            return "name-only guess, same target"
        if site(k) in our_sites:
            return "resolved to another target"
        return "no resolved edge"
    fn_why = Counter(f"{oracle[k]}: {fn_reason(k)}" for k in fns)
    print("false positives:", dict(fp_why.most_common()))
    print("false negatives:", dict(fn_why.most_common()))
    n = None if args.verbose else args.show
    for label, keys, why in (("FP", fps, lambda k: ours[k].name), ("FN", fns, fn_reason)):
        for k in keys[:n]:
            text = lines[k[0]][k[1] - 1].strip() if k[0] in lines else ""
            print(f"  {label} {k[0]}:{k[1]} -> {k[2]} {k[3]} ({why(k)})  {text[:80]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
