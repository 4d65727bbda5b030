"""Index throughput and grep latency, side by side with ripgrep on the same files.

    python bench/text_speed.py [FOLDER]     (default: the running interpreter's stdlib)

Copies FOLDER to a temporary tree (without __pycache__ and site-packages: the standard
library only), indexes it cold with fourfold (text, structure and graph; embedding timed
separately), then times 20 literal and 20 regex patterns: fourfold's warm in-process grep (index open,
no process start) and `rg -n --no-ignore` (one process per query, as a user runs it).
Prints medians and the ratio; both tools must report the same number of matching lines.
"""
from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from fourfold import Fourfold  # noqa: E402

LITERALS = ["def __init__", "import os", "return None", "raise ValueError", "self.assert",
            "isinstance", "TypeError", "encoding", "__name__", "subprocess.run",
            "socket", "with open(", "lambda", "yield from", "async def", "@property",
            "kwargs", "TODO", "deprecated", "http://"]
REGEXES = [r"def \w+_test", r"class \w+Error", r"import (os|sys)", r"self\.\w+ = None",
           r"raise \w+Error\(", r"0x[0-9a-f]{4}", r"@\w+\.setter", r"except \w+ as e",
           r"\bTODO\b", r"return \w+\(\)", r"print\(f\"", r"if __name__", r"[A-Z]{5,}_[A-Z]+",
           r"async with \w+", r"def __\w+__\(self\)", r"\d+\.\d+\.\d+", r"assert\w+Equal",
           r"os\.path\.join\(", r"logging\.getLogger", r"https?://\S+"]


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> None:
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(shutil.__file__).parent
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["FOURFOLD_CACHE_DIR"] = str(Path(tmp) / "vector-cache")  # embed cold
        tree = Path(tmp) / "tree"
        shutil.copytree(source, tree, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "site-packages"),
                        symlinks=True)
        src_bytes = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())
        index_dir = Path(tmp) / "index"
        started = time.perf_counter()
        ff = Fourfold(tree, index_dir=index_dir)
        summary = ff.index(embed=False)
        seconds = time.perf_counter() - started
        index_bytes = sum(p.stat().st_size for p in index_dir.glob("index.sqlite*"))
        print(f"corpus {source} (without site-packages): {summary.files} files indexed, "
              f"{src_bytes / 1e6:.1f} MB")
        print(f"index (text, structure, graph): {seconds:.2f} s cold = "
              f"{summary.files / seconds:.0f} files/s; index size {index_bytes / 1e6:.1f} MB = "
              f"{index_bytes / src_bytes:.2f}x source")
        started = time.perf_counter()
        embedded = ff.embed()
        seconds = time.perf_counter() - started
        index_bytes = sum(p.stat().st_size for p in index_dir.glob("index.sqlite*"))
        print(f"embedding ({ff.semantic.embedder.name}): {embedded} chunks in {seconds:.2f} s "
              f"= {embedded / seconds:.0f} chunks/s; index size now {index_bytes / 1e6:.1f} MB")
        started = time.perf_counter()
        again = ff.index()
        print(f"no-change re-index: {time.perf_counter() - started:.3f} s ({again.read} read)")

        for label, patterns, regex in (("literal", LITERALS, False), ("regex", REGEXES, True)):
            ours, theirs, mismatched = [], [], []
            for pattern in patterns:
                ff.grep(pattern, regex=regex, case_sensitive=True)  # warm
                t0 = time.perf_counter()
                lines = ff.grep(pattern, regex=regex, case_sensitive=True)
                ours.append(time.perf_counter() - t0)
                cmd = ["rg", "-n", "--no-ignore", "--hidden", "-g", "!.fourfold", "-c"]
                if not regex:
                    cmd.append("-F")
                t0 = time.perf_counter()
                out = subprocess.run(cmd + ["--", pattern, "."], cwd=tree, capture_output=True,
                                     text=True).stdout
                theirs.append(time.perf_counter() - t0)
                rg_count = sum(int(line.rsplit(":", 1)[1]) for line in out.splitlines())
                if rg_count != len(lines):
                    mismatched.append((pattern, len(lines), rg_count))
            print(f"grep {label}: fourfold p50 {median_ms(ours):.1f} ms, ripgrep p50 "
                  f"{median_ms(theirs):.1f} ms, ratio {median_ms(theirs) / median_ms(ours):.1f}x"
                  f" (p95 fourfold {sorted(ours)[int(len(ours) * .95) - 1] * 1000:.1f} ms)")
            for pattern, n_ours, n_rg in mismatched:
                print(f"   count differs for {pattern!r}: fourfold {n_ours}, ripgrep {n_rg}")


if __name__ == "__main__":
    main()
