"""A large corpus on one machine: the Linux kernel's source (Debian's linux-source package).

    python bench/big_corpus.py prepare        download and unpack the corpus (once)
    python bench/big_corpus.py index [--no-embed] [--repeat N]
                                              a cold `fourfold index`, whole process: wall
                                              time, peak memory of the process and its
                                              workers, index bytes against source bytes
    python bench/big_corpus.py query [--each] fused search p50 / p95, warm, in-process
                                              (--each: each modality alone too)
    python bench/big_corpus.py grep [--any-case]
                                              fourfold grep against ripgrep, same files
                                              (and the first lines of sparse patterns)
    python bench/big_corpus.py edit           a one-file edit under `fourfold watch`: how
                                              long until grep finds the new line
    python bench/big_corpus.py cli            `fourfold grep` against `rg`, whole processes
                                              as a user runs them, output to /dev/null
    python bench/big_corpus.py snapshot [--repeat N]
                                              another snapshot (ten files changed) into a
                                              copy of the index holding the kernel

Each but prepare and snapshot takes --store URL: the same on a PostgreSQL server's index
(index: into an empty database).

The corpus is the kernel tree Debian ships as /usr/src/linux-source-6.1.tar.xz in the
binary package linux-source-6.1 (Debian's package pool is reachable from these machines,
GitHub's history of the kernel is too large to fetch). Debian appends `/*` and
`!/debian/` to the top-level .gitignore (its packaging keeps only debian/ under git);
`prepare` takes those two lines out so the upstream rules apply. Everything lives under
bench/.cache/corpus (git-ignored); the index under bench/.cache/indexes/corpus.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

PACKAGE = "linux-source-6.1"
VERSION = "6.1.192-3"  # the version measured; `prepare` says so when another is taken
CORPUS = BENCH / ".cache" / "corpus"
TREE = CORPUS / "linux-source-6.1"
INDEX = BENCH / ".cache" / "indexes" / "corpus" / "linux"
VECTOR_CACHE = BENCH / ".cache" / "indexes" / "corpus" / "vector-cache"

# Under 1,000 matching lines each in the tree (checked by the run: it prints the counts).
RARE_LITERALS = ["tcp_retransmit_timer", "btrfs_commit_transaction", "ext4_fc_replay",
                 "kvm_vcpu_kick", "xhci_ring_cmd_db", "smp_call_function_many_cond",
                 "blk_mq_run_hw_queue", "drm_atomic_helper_commit_tail", "rcu_barrier_tasks",
                 "snd_pcm_period_elapsed", "nf_conntrack_helper_register", "ath9k_hw_reset",
                 "sched_setaffinity", "io_uring_cmd_done", "page_pool_put_full_page",
                 "crypto_skcipher_encrypt", "of_property_read_u32_array", "dma_fence_signal",
                 "netif_napi_add_weight", "bpf_prog_run_pin_on_cpu"]
RARE_REGEXES = [r"tcp_\w+_timer\(", r"btrfs_\w+_transaction\(", r"ext4_fc_\w+_replay",
                r"kvm_vcpu_\w+_kick", r"xhci_\w+_ring\(", r"blk_mq_\w+_hw_queues?\(",
                r"drm_atomic_helper_\w+_commit", r"rcu_\w+_tasks_\w+\(",
                r"snd_pcm_\w+_elapsed", r"nf_conntrack_\w+_register\(", r"ath9k_hw_\w+_reset",
                r"sched_\w+affinity\(", r"io_uring_\w+_done\(", r"page_pool_\w+_page\(",
                r"crypto_skcipher_\w+crypt\(", r"of_property_read_u(8|16|32)_array\(",
                r"dma_fence_\w+_signal", r"netif_napi_add_\w+\(", r"bpf_prog_run_\w+_cpu",
                r"struct \w+_ops \w+_kvm_ops"]
# Over 10,000 matching lines each.
COMMON = [("return 0;", False), ("#include <linux/", False), ("static int", False),
          ("unsigned long", False), ("struct device", False), ("kfree(", False),
          (r"if \(!\w+\)", True), (r"return -E[A-Z]+;", True), (r"\bu(8|16|32|64)\b", True),
          (r"struct \w+ \*\w+;", True)]
# Few lines, though every trigram of each is common: listing their first lines by the
# trigram index checks tens of thousands of files, and reading files in path order until
# 100 lines come reads nearly all of them.
SPARSE = ["device_x", "return -ENOMEM; }", "static int __init int"]
QUESTIONS = [
    "how does the scheduler pick the next task to run",
    "where are TCP retransmission timeouts handled",
    "how does ext4 allocate blocks for a new file",
    "page fault handling for anonymous memory",
    "how are network packets received by NAPI polling",
    "where is the RCU grace period started",
    "how does the block layer dispatch requests to hardware queues",
    "how is a new process created by fork",
    "where are USB devices enumerated after they are plugged in",
    "how does the kernel verify module signatures",
    "btrfs transaction commit",
    "how does the OOM killer choose a victim",
    "where are system calls dispatched on x86_64",
    "how are io_uring submissions processed",
    "how does the slab allocator free an object",
    "where is the dentry cache looked up during path walk",
    "how does KVM run a virtual CPU",
    "how are interrupts routed to a CPU",
    "where does the kernel parse the command line",
    "how are eBPF programs verified before they run",
]


def tree_memory(pid: int) -> tuple[int, int]:
    """(anonymous, all) proportional set size in bytes of a process and its descendants.
    Proportional: forked workers share their parent's pages, which resident sizes would
    count once per process. "All" adds file pages, mostly the index database mapped into
    memory (clean page cache, which the system can take back)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    anonymous, total, stack = 0, 0, [pid]
    while stack:
        pid = stack.pop()
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                fields = {line.split(":")[0]: int(line.split()[1]) * 1024
                          for line in f if line.startswith("Pss")}
            anonymous += fields.get("Pss_Anon", 0) + fields.get("Pss_Shmem", 0)
            total += fields.get("Pss", 0)
        except (OSError, ValueError, IndexError):
            pass
        stack += children.get(pid, [])
    return anonymous, total


def source_bytes() -> tuple[int, int]:
    """(files, bytes) fourfold indexes in the tree: its own walk, ignore rules applied."""
    from fourfold.discovery.walk import walk

    report = walk(TREE)
    return len(report.files), sum(f.size for f in report.files)


def prepare(_: argparse.Namespace) -> None:
    if TREE.is_dir():
        print(f"{TREE} is there already")
        return
    CORPUS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=CORPUS) as tmp:
        got = subprocess.run(["apt-get", "download", f"{PACKAGE}={VERSION}"], cwd=tmp,
                             capture_output=True, text=True)
        if got.returncode != 0:  # the mirror keeps the newest build only
            print(f"{PACKAGE} {VERSION} is gone from the mirror; taking its newest build")
            subprocess.run(["apt-get", "download", PACKAGE], cwd=tmp, check=True)
        deb = next(Path(tmp).glob("*.deb"))
        print(f"downloaded {deb.name}")
        subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
        with tarfile.open(Path(tmp) / "usr" / "src" / f"{PACKAGE}.tar.xz") as archive:
            archive.extractall(CORPUS, filter="data")
    ignore = TREE / ".gitignore"
    lines = ignore.read_text().splitlines()
    ignore.write_text("\n".join(line for line in lines if line not in ("/*", "!/debian/")) + "\n")
    files, size = source_bytes()
    print(f"{TREE}: {files} files fourfold indexes, {size / 1e6:.0f} MB")


def index(args: argparse.Namespace) -> None:
    files, size = source_bytes()
    print(f"corpus: {files} files, {size / 1e6:.0f} MB")
    if args.store and args.repeat > 1:
        sys.exit("--store indexes into an empty database once: give --repeat 1")
    runs = []
    for _ in range(args.repeat):
        shutil.rmtree(VECTOR_CACHE, ignore_errors=True)  # embed cold
        if not args.store:  # the embedded index made anew; a server's is left to the others
            shutil.rmtree(INDEX, ignore_errors=True)
            INDEX.mkdir(parents=True)
        env = {**os.environ, "FOURFOLD_CACHE_DIR": str(VECTOR_CACHE)}
        command = [sys.executable, "-m", "fourfold.interfaces.entry", "index", str(TREE),
                   "--json", *(["--no-embed"] if args.no_embed else []),
                   *_index_options(args.store)]
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
        peak = [0, 0, 0.0]  # anonymous, all, seconds into the run of the anonymous peak
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                anonymous, total = tree_memory(process.pid)
                if anonymous > peak[0]:
                    peak[0], peak[2] = anonymous, time.perf_counter() - started
                peak[1] = max(peak[1], total)
                stop.wait(1.0)  # reading smaps costs CPU: not too often

        sampler = threading.Thread(target=sample)
        sampler.start()
        out = process.communicate()[0]
        seconds = time.perf_counter() - started
        stop.set()
        sampler.join()
        if process.returncode:
            sys.exit(f"fourfold index failed ({process.returncode})")
        summary = json.loads(out.strip().splitlines()[-1])
        stored = (_database_size(args.store) if args.store else
                  sum(p.stat().st_size for p in INDEX.rglob("*") if p.is_file()))
        runs.append((seconds, peak[0], stored))
        read = summary.get("bytes") or size
        print(f"index{' (no vectors)' if args.no_embed else ''}: {seconds:.1f} s wall, peak "
              f"memory {peak[0] / 2**20:.0f} MiB anonymous ({peak[2]:.0f} s into the run), "
              f"{peak[1] / 2**20:.0f} MiB with mapped files (process and workers, "
              f"proportional); index {stored / 1e6:.0f} MB "
              f"= {stored / read:.2f}x the {read / 1e6:.0f} MB read; "
              + json.dumps({k: summary[k] for k in ("files", "seconds", "embedded",
                                                    "embed_seconds") if k in summary}))
    if len(runs) > 1:
        print(f"median of {len(runs)}: {statistics.median(r[0] for r in runs):.1f} s, "
              f"peak {statistics.median(r[1] for r in runs) / 2**20:.0f} MiB anonymous")


def _index_options(store: str | None) -> list[str]:
    """The CLI options naming the index: the server's, or the embedded one under INDEX."""
    return ["--store", store] if store else ["--index-dir", str(INDEX)]


def _database_size(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]


def _open(store: str | None = None):
    from fourfold import Fourfold

    if store:
        return Fourfold(TREE, store_url=store)
    if not (INDEX / "index.sqlite").is_file():
        sys.exit("no index yet: run `python bench/big_corpus.py index` first")
    return Fourfold(TREE, index_dir=INDEX)


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def _timed(ff, rounds: int, modalities: tuple[str, ...] | None = None) -> list[float]:
    """Milliseconds of each search of every question, `rounds` times."""
    timings = []
    for _ in range(rounds):
        for question in QUESTIONS:
            started = time.perf_counter()
            ff.search(question, modalities=modalities)
            timings.append((time.perf_counter() - started) * 1000)
    return timings


def query(args: argparse.Namespace) -> None:
    ff = _open(args.store)
    for question in QUESTIONS:
        ff.search(question)  # warm: caches, the model, pages of the index
    timings = _timed(ff, args.rounds)
    print(f"fused search, {len(QUESTIONS)} questions x {args.rounds} rounds: p50 "
          f"{statistics.median(timings):.1f} ms, p95 {_percentile(timings, 0.95):.1f} ms")
    for question in QUESTIONS[:3]:
        top = ff.search(question).hits[:3]
        print(f"  {question!r}: " + ", ".join(f"{h.path}:{h.start_line}" for h in top))
    if args.each:
        for modality in ("text", "structural", "semantic", "graph"):
            timings = _timed(ff, args.rounds, (modality,))
            print(f"  {modality} alone: p50 {statistics.median(timings):.1f} ms, "
                  f"p95 {_percentile(timings, 0.95):.1f} ms")


def _rg(pattern: str, regex: bool, first: int | None = None, any_case: bool = False
        ) -> tuple[float, int]:
    """(seconds, matching lines) of one ripgrep process over the tree, as fourfold reads it
    (ignore rules, no hidden files, files up to 2 MiB); with `first`, until that many lines
    have come; `any_case`: ripgrep -i."""
    # --no-ignore-parent: the corpus lies inside this project's checkout, whose .gitignore
    # (build/, ...) ripgrep would otherwise apply to the kernel's tree
    command = ["rg", "-n", "--no-ignore-parent", "--max-filesize", "2M", "-g", "!.fourfold",
               *([] if regex else ["-F"]), *(["-i"] if any_case else []), "--", pattern, "."]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=TREE, stdout=subprocess.PIPE)
    lines = 0
    for _ in process.stdout:
        lines += 1
        if first is not None and lines >= first:
            process.kill()
            break
    process.stdout.close()
    process.wait()
    return time.perf_counter() - started, lines


def grep(args: argparse.Namespace) -> None:
    ff = _open(args.store)
    case_sensitive, any_case = not args.any_case, args.any_case
    cases = ([("rare literals", p, False) for p in RARE_LITERALS]
             + [("rare regexes", p, True) for p in RARE_REGEXES])
    for label in ("rare literals", "rare regexes"):
        ours, theirs = [], []
        for _, pattern, regex in (c for c in cases if c[0] == label):
            found = ff.grep(pattern, regex=regex, case_sensitive=case_sensitive, time_budget=600)
            rounds_ours, rounds_rg = [], []
            for _ in range(args.rounds):
                started = time.perf_counter()
                ff.grep(pattern, regex=regex, case_sensitive=case_sensitive, time_budget=600)
                rounds_ours.append(time.perf_counter() - started)
                seconds, count = _rg(pattern, regex, any_case=any_case)
                rounds_rg.append(seconds)
            ours.append(statistics.median(rounds_ours))
            theirs.append(statistics.median(rounds_rg))
            if count != len(found):
                print(f"   {pattern!r}: fourfold {len(found)} lines, ripgrep {count}")
            if args.verbose:
                print(f"   {pattern!r}: {len(found)} lines, fourfold {ours[-1] * 1000:.1f} ms, "
                      f"ripgrep {theirs[-1] * 1000:.0f} ms")
        print(f"{label}: fourfold p50 {statistics.median(ours) * 1000:.1f} ms, ripgrep p50 "
              f"{statistics.median(theirs) * 1000:.0f} ms, ratio "
              f"{statistics.median(theirs) / statistics.median(ours):.1f}x")
    for pattern, regex in COMMON:
        wholes, rg_wholes = [], []
        for _ in range(args.rounds):  # the median; the first grep also starts the workers
            started = time.perf_counter()
            found = ff.grep(pattern, regex=regex, case_sensitive=case_sensitive,
                            time_budget=600)
            wholes.append(time.perf_counter() - started)
            rg_seconds, count = _rg(pattern, regex, any_case=any_case)
            rg_wholes.append(rg_seconds)
        whole, rg_whole = statistics.median(wholes), statistics.median(rg_wholes)
        firsts, rg_firsts = [], []
        for _ in range(args.rounds):  # the median: the first also lists the files' order
            started = time.perf_counter()
            ff.grep(pattern, regex=regex, case_sensitive=case_sensitive, limit=100)
            firsts.append(time.perf_counter() - started)
            rg_firsts.append(_rg(pattern, regex, first=100, any_case=any_case)[0])
        first, rg_first = statistics.median(firsts), statistics.median(rg_firsts)
        note = "" if count == len(found) else f" (ripgrep {count} lines)"
        print(f"{pattern!r}: {len(found)} lines{note}; whole result fourfold {whole:.2f} s "
              f"(first {wholes[0]:.2f} s), ripgrep {rg_whole:.2f} s ({rg_whole / whole:.1f}x); "
              f"first 100 fourfold "
              f"{first * 1000:.1f} ms, ripgrep {rg_first * 1000:.0f} ms "
              f"({rg_first / first:.1f}x)")
    for pattern in SPARSE:
        found = ff.grep(pattern, case_sensitive=case_sensitive, time_budget=600)
        firsts = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            ff.grep(pattern, case_sensitive=case_sensitive, limit=100)
            firsts.append(time.perf_counter() - started)
        print(f"{pattern!r} (sparse, common trigrams): {len(found)} lines; first 100 fourfold "
              f"{statistics.median(firsts) * 1000:.1f} ms, ripgrep "
              f"{_rg(pattern, False, first=100, any_case=any_case)[0] * 1000:.0f} ms")


def _process_seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=TREE, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def cli(args: argparse.Namespace) -> None:
    """Whole `fourfold grep` processes (start, open the index, grep, print every line)
    against whole ripgrep processes, alternating, the median of --rounds each."""
    _open(args.store)  # the index exists
    where = _index_options(args.store)
    cases = [(p, False) for p in RARE_LITERALS[:3]] + COMMON
    for pattern, regex in cases:
        ours = [sys.executable, "-m", "fourfold.interfaces.entry", "grep", "--case-sensitive",
                *(["--regex"] if regex else []), "--time-budget", "600", *where, "--",
                pattern, "."]
        theirs = ["rg", "-n", "--no-ignore-parent", "--max-filesize", "2M", "-g", "!.fourfold",
                  *([] if regex else ["-F"]), "--", pattern, "."]
        rounds_ours, rounds_rg = [], []
        for _ in range(args.rounds):
            rounds_ours.append(_process_seconds(ours))
            rounds_rg.append(_process_seconds(theirs))
        mine, rg = statistics.median(rounds_ours), statistics.median(rounds_rg)
        print(f"{pattern!r}: fourfold grep {mine:.2f} s, rg {rg:.2f} s ({rg / mine:.1f}x)")


GRAPH_NAMES = ["mutex_lock", "spin_lock", "kmalloc", "printk", "schedule"]


def _rss_mib() -> int:
    with open("/proc/self/status") as status:
        return int(status.read().split("VmRSS:")[1].split()[0]) // 1024


def graph(args: argparse.Namespace) -> None:
    """Graph questions in this new process: the first (which reads the graph), the memory
    it left, then callers and blast radius of a few common names, round by round. --dump
    writes the answers as JSON, to compare two versions."""
    import resource

    ff = _open(args.store)
    started = time.perf_counter()
    ff.references("update_rq_clock")
    first = time.perf_counter() - started
    print(f"first caller question {first:.2f} s; process {_rss_mib()} MiB after it, peak "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB")
    rounds = []
    for _ in range(args.rounds):
        started = time.perf_counter()
        for name in GRAPH_NAMES:
            ff.references(name, limit=50)
            ff.impact(name, depth=3, limit=50)
        rounds.append(time.perf_counter() - started)
    print(f"{2 * len(GRAPH_NAMES)} questions (references and impact of "
          f"{', '.join(GRAPH_NAMES)}): " + ", ".join(f"{r:.2f}" for r in rounds) + " s")
    if args.dump:
        answers = {"references": ff.references("update_rq_clock", limit=5000),
                   "callees": ff.callees("schedule", limit=5000),
                   "impact": ff.impact("update_rq_clock", depth=3, limit=100_000),
                   "importers": ff.importers("include/linux/sched.h", limit=100_000),
                   "callers of kfree": ff.references("kfree", limit=100_000)["total"]}
        Path(args.dump).write_text(json.dumps(answers, sort_keys=True, default=str))


def edit(args: argparse.Namespace) -> None:
    """Save a new line into one file while `fourfold watch` runs; time until grep finds it
    (and, with --graph, until the graph and then the binary codes have caught up, before
    the next save)."""
    target = TREE / "kernel" / "sched" / "core.c"
    original = target.read_bytes()
    env = {**os.environ, "FOURFOLD_CACHE_DIR": str(VECTOR_CACHE)}
    watcher = subprocess.Popen([sys.executable, "-m", "fourfold.interfaces.entry", "watch",
                                str(TREE), *_index_options(args.store)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ready = threading.Event()

    def read() -> None:  # the first index run is done when watch says what it indexed
        for line in watcher.stdout:
            if "files" in line:
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    ff = _open(args.store)
    delays: list[float] = []
    graph_delays: list[float] = []
    caught_up_delays: list[float] = []
    try:
        if not ready.wait(600):
            sys.exit("watch did not finish its first run")
        for attempt in range(args.rounds):
            marker = f"fourfold_edit_marker_{os.getpid()}_{attempt}"
            target.write_bytes(original + f"/* {marker} */\n".encode())
            saved = time.perf_counter()
            while not ff.grep(marker, case_sensitive=True):
                if time.perf_counter() - saved > 600:
                    sys.exit("the edit was not indexed within 10 minutes")
                time.sleep(0.005)
            delays.append((time.perf_counter() - saved) * 1000)
            while args.graph and ff.behind()["graph"]:
                if time.perf_counter() - saved > 1200:
                    sys.exit("the graph did not catch up within 20 minutes")
                time.sleep(0.1)
            if args.graph:
                graph_delays.append(time.perf_counter() - saved)
                while ff.behind()["codes"]:
                    if time.perf_counter() - saved > 1200:
                        sys.exit("the codes were not taken anew within 20 minutes")
                    time.sleep(0.1)
                caught_up_delays.append(time.perf_counter() - saved)
            time.sleep(1.0)
    finally:
        target.write_bytes(original)
        # the watcher indexes the file as it was before it stops: else the index keeps the
        # last edit until the next index run, and greps on it differ from ripgrep's
        restored = time.perf_counter()
        while (delays and ff.grep(marker, case_sensitive=True)
               and time.perf_counter() - restored < 60):
            time.sleep(0.05)
        watcher.terminate()
        watcher.wait()
    print(f"edit searchable after: median {statistics.median(delays):.0f} ms "
          f"({', '.join(f'{d:.0f}' for d in delays)} ms)")
    if graph_delays:
        print("graph caught up after: " + ", ".join(f"{d:.1f}" for d in graph_delays) + " s")
        print("codes caught up after: " + ", ".join(f"{d:.1f}" for d in caught_up_delays)
              + " s")


# Files of the kernel given a new function each in `snapshot`'s copy of the tree.
SNAPSHOT_EDITS = ["kernel/sched/core.c", "mm/slub.c", "fs/ext4/inode.c", "net/ipv4/tcp.c",
                  "drivers/net/ethernet/intel/e1000e/netdev.c", "drivers/usb/core/hub.c",
                  "kernel/fork.c", "block/blk-mq.c"]


def snapshot(args: argparse.Namespace) -> None:
    """Another snapshot of the kernel into an index holding it: a copy of the tree with a new
    function in each of SNAPSHOT_EDITS, a file added and one taken away, indexed as a
    repository of its own (`fourfold index`, whole process) into a copy of the kernel's
    index, whose graph is first resolved whole by this code (the one a snapshot may take
    and patch: fourfold.graph.seeded)."""
    from fourfold.graph.build import rebuild_graph
    from fourfold.graph.provenance import resolver_version
    from fourfold.store.base import graph_resolved_by_setting
    from fourfold.store.index_dir import identity
    from fourfold.store.sqlite import SQLiteStore

    if not (INDEX / "index.sqlite").is_file():
        sys.exit("no index yet: run `python bench/big_corpus.py index` first")
    with tempfile.TemporaryDirectory(dir=BENCH / ".cache") as tmp:
        tree, base = Path(tmp) / "linux-snapshot", Path(tmp) / "base"
        shutil.copytree(TREE, tree, symlinks=True)
        for n, path in enumerate(SNAPSHOT_EDITS):
            with open(tree / path, "a") as f:
                f.write(f"\nstatic int __maybe_unused fourfold_snapshot_{n}(void *p)\n"
                        "{\n\tkfree(p);\n\treturn 0;\n}\n")
        (tree / "drivers/misc/fourfold_snapshot.c").write_text(
            "#include <linux/slab.h>\n\nint fourfold_snapshot(void *p)\n{\n\tkfree(p);\n"
            "\treturn 0;\n}\n")
        (tree / "drivers/misc/dummy-irq.c").unlink()

        def marked(folder: Path) -> SQLiteStore:  # a copy of an index is trusted here
            store = SQLiteStore(folder / "index.sqlite")
            store.mark_identity(identity(folder))
            return store

        shutil.copytree(INDEX, base)
        store = marked(base)
        kernel = store.repos(counts=False)[0].repo_id
        if store.setting(graph_resolved_by_setting(kernel), 0) != resolver_version():
            rebuild_graph(store, kernel)
        store.close()
        for attempt in range(args.repeat):
            copy = Path(tmp) / f"index-{attempt}"
            shutil.copytree(base, copy)
            marked(copy).close()
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "fourfold.interfaces.entry", "index", str(tree),
                            "--index-dir", str(copy), "--repository", "linux-snapshot",
                            "--json"], env={**os.environ, "FOURFOLD_CACHE_DIR": str(
                                VECTOR_CACHE)}, check=True, stdout=subprocess.DEVNULL)
            seconds = time.perf_counter() - started
            store = SQLiteStore(copy / "index.sqlite", readonly=True)
            mine = next(r.repo_id for r in store.repos(counts=False) if r.repo_id != kernel)
            seeded = store.setting(graph_resolved_by_setting(mine), 0) < 0  # negated: seeded
            store.close()
            shutil.rmtree(copy)
            print(f"another snapshot: {seconds:.1f} s "
                  f"(graph {'patched from the kernel' if seeded else 'resolved whole'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("prepare").set_defaults(run=prepare)
    run = commands.add_parser("index")
    run.add_argument("--no-embed", action="store_true")
    run.add_argument("--repeat", type=int, default=1)
    run.add_argument("--store", help="a PostgreSQL URL: index into that server (an empty "
                     "database; its size is the index's); peak memory is this machine's "
                     "indexing processes', not the server's")
    run.set_defaults(run=index)
    run = commands.add_parser("query")
    run.add_argument("--rounds", type=int, default=3)
    run.add_argument("--store", help="ask the index on this PostgreSQL server instead")
    run.add_argument("--each", action="store_true", help="also each modality alone")
    run.set_defaults(run=query)
    run = commands.add_parser("grep")
    run.add_argument("--rounds", type=int, default=3)
    run.add_argument("--store", help="grep the index on this PostgreSQL server instead")
    run.add_argument("--verbose", action="store_true")
    run.add_argument("--any-case", action="store_true",
                     help="every pattern in any case: fourfold's default, ripgrep -i")
    run.set_defaults(run=grep)
    run = commands.add_parser("cli")
    run.add_argument("--rounds", type=int, default=3)
    run.add_argument("--store", help="grep the index on this PostgreSQL server instead")
    run.set_defaults(run=cli)
    run = commands.add_parser("graph")
    run.add_argument("--rounds", type=int, default=3)
    run.add_argument("--store", help="ask the index on this PostgreSQL server instead")
    run.add_argument("--dump", help="write the answers to this JSON file")
    run.set_defaults(run=graph)
    run = commands.add_parser("edit")
    run.add_argument("--rounds", type=int, default=3)
    run.add_argument("--store", help="watch into the index on this PostgreSQL server instead")
    run.add_argument("--graph", action="store_true",
                     help="also time until the graph, then the codes, have caught up, "
                     "before the next save")
    run.set_defaults(run=edit)
    run = commands.add_parser("snapshot")
    run.add_argument("--repeat", type=int, default=1)
    run.set_defaults(run=snapshot)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
