"""Hostile input, crashes, concurrency and hostile repositories: does fourfold hold?

Each case builds its own repository or situation in a temporary folder, runs the real
`fourfold` command line as a subprocess (or the MCP service class in a subprocess, for
the MCP cases) and checks one expectation. Nothing outside the temporary folder is
touched; "victim" files outside a repository live in the same temporary folder. The only
network address used is 127.0.0.1.

    python bench/hostile.py                 # every case, a Markdown table on stdout
    python bench/hostile.py --only 1a,5,10  # a subset
    python bench/hostile.py --json          # one JSON document
    python bench/hostile.py --source DIR    # test the fourfold package found in DIR

Bounded cases (10, 11, 12) report wall seconds and peak RSS (the process and its
children, polled from /proc, plus wait4's ru_maxrss) and are killed at twice their target.
Exit code: 0 when every case held, 1 otherwise.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import resource
import selectors
import re
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parent.parent
TIMEOUT_S = 60.0
EXCEPTION_LINE = re.compile(r"^[\w.]+(Error|Exception|Interrupt|Exit)\b")


# -- registry ---------------------------------------------------------------------------------
@dataclass
class Outcome:
    ok: bool
    observed: str
    seconds: float | None = None
    peak_mb: float | None = None


@dataclass
class Case:
    id: str
    group: str
    title: str
    expected: str
    run: Callable[[Path], Outcome]


CASES: list[Case] = []


def case(cid: str, group: str, title: str, expected: str):
    def register(fn: Callable[[Path], Outcome]) -> Callable[[Path], Outcome]:
        CASES.append(Case(cid, group, title, expected, fn))
        return fn
    return register


# -- running fourfold -------------------------------------------------------------------------
@dataclass
class Run:
    rc: int | None  # None: killed at the timeout
    out: str
    err: str
    seconds: float

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.err

    def brief(self) -> str:
        """Exit code and the first line of stderr that says something."""
        if self.rc is None:
            return f"timed out after {self.seconds:.0f}s"
        lines = [ln for ln in self.err.splitlines() if ln.strip()]
        if self.traceback:
            raised = [ln for ln in lines if EXCEPTION_LINE.match(ln)] or lines
            return f"exit {self.rc}, traceback: {raised[-1][:90]}"
        return f"exit {self.rc}" + (f": {lines[0][:90]}" if lines else "")


class Env:
    """Environment of every subprocess: the package under test, private cache and home."""
    source = REPO
    base: Path

    @classmethod
    def vars(cls) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FOURFOLD_")}
        env.update(PYTHONPATH=str(cls.source), FOURFOLD_CACHE_DIR=str(cls.base / "cache"),
                   HOME=str(cls.base / "home"), GIT_CONFIG_NOSYSTEM="1",
                   GIT_CONFIG_GLOBAL=os.devnull, PYTHONDONTWRITEBYTECODE="1",
                   PYTHONSAFEPATH="1")  # the package from PYTHONPATH, never the cwd
        return env


def _command(args: tuple[str, ...]) -> list[str]:
    return [sys.executable, "-m", "fourfold.interfaces.cli", *args]


def run(cmd: list[str], timeout: float = TIMEOUT_S, preexec=None) -> Run:
    """Run a command in its own session; at the timeout kill the whole group."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=Env.base, env=Env.vars(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=preexec)
    try:
        out, err = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, err = proc.communicate()
        rc = None
    return Run(rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
               time.monotonic() - started)


def spawn(cmd: list[str], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
          ) -> subprocess.Popen:
    """Start a command in its own session (so that its whole group can be killed)."""
    return subprocess.Popen(cmd, cwd=Env.base, env=Env.vars(), stdin=subprocess.DEVNULL,
                            stdout=stdout, stderr=stderr, start_new_session=True)


def ff(*args: str, **kw) -> Run:
    return run(_command(args), **kw)


def py(code: str, *args: str, **kw) -> Run:
    return run([sys.executable, "-c", code, *args], **kw)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def index(root: Path, *extra: str, **kw) -> Run:
    return ff("index", str(root), "--no-embed", *extra, **kw)


def grep(root: Path, pattern: str, *extra: str) -> tuple[Run, list[dict]]:
    """(run, matches) of `fourfold grep --json`."""
    r = ff("grep", pattern, str(root), "--json", *extra)
    try:
        return r, json.loads(r.out.strip().splitlines()[-1])["results"] if r.rc == 0 else []
    except (ValueError, IndexError, KeyError):
        return r, []


def must(r: Run) -> Run:
    """A setup step that has to succeed for the case to mean anything."""
    if r.rc != 0:
        raise RuntimeError(f"setup failed: {r.brief()}")
    return r


def paths_of(matches: list[dict]) -> set[str]:
    return {m["path"] for m in matches}


def _readline(proc: subprocess.Popen, timeout: float) -> str:
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if sel.select(timeout):
            return proc.stdout.readline().decode("utf-8", "replace")
    return ""


def _skipped(r: Run) -> str:
    try:
        payload = json.loads(r.out.strip().splitlines()[-1])
        return f"skipped {payload.get('skipped') or 'nothing'}"
    except (ValueError, IndexError):
        return r.brief()


# -- measuring bounded runs -------------------------------------------------------------------
def _tree(pid: int) -> list[int]:
    """pid and its descendants (from /proc/PID/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def _status_kb(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def measured(cmd: list[str], kill_s: float, kill_mb: float, t: Path
             ) -> tuple[Run, float, float, str | None]:
    """Run cmd, polling its memory; kill it past kill_s seconds or kill_mb of RSS.
    Returns (run, seconds, peak MB, why it was killed or None)."""
    out_path, err_path = t / "measured.out", t / "measured.err"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        started = time.monotonic()
        proc = spawn(cmd, stdout=out, stderr=err)
    peak_kb, killed, status = 0, None, None
    while status is None:
        pid, wait_status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            status = wait_status
            peak_kb = max(peak_kb, usage.ru_maxrss)
            break
        tree_kb = sum(_status_kb(p, "VmRSS") for p in _tree(proc.pid))
        peak_kb = max(peak_kb, tree_kb, _status_kb(proc.pid, "VmHWM"))
        elapsed = time.monotonic() - started
        if killed is None and (elapsed > kill_s or peak_kb > kill_mb * 1024):
            killed = (f"killed at {elapsed:.1f}s" if elapsed > kill_s
                      else f"killed at {peak_kb / 1024:.0f} MB")
            _kill_group(proc.pid)
        time.sleep(0.02)
    seconds = time.monotonic() - started
    _kill_group(proc.pid)  # leftover children
    proc.returncode = os.waitstatus_to_exitcode(status)
    rc = None if killed else proc.returncode
    r = Run(rc, out_path.read_text("utf-8", "replace"), err_path.read_text("utf-8", "replace"),
            seconds)
    return r, seconds, peak_kb / 1024, killed


# -- building repositories --------------------------------------------------------------------
def tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    root.mkdir(parents=True, exist_ok=True)
    return root


def small_repo(t: Path, name: str = "repo", **extra: str | bytes) -> Path:
    files = {"app.py": "def hello(name):\n    return greet(name)\n\n\ndef greet(n):\n"
                       "    return 'hi ' + n\n"}
    files.update(extra)
    return tree(t / name, files)


def medium_repo(t: Path, files: int = 150, name: str = "repo") -> Path:
    """Enough Python (~1 MB) for the parser pool and an index run of a few seconds."""
    root = t / name
    root.mkdir(parents=True)
    for i in range(files):
        body = "".join(f"def func_{i}_{j}(a, b):\n    x = helper_{j}(a) + {j}\n"
                       f"    return compute(x, b) * {i}\n\n" for j in range(80))
        (root / f"m{i:03d}.py").write_text(body + f"MARK_EVERY_FILE = {i}\n")
    return root


def victim(t: Path, text: str = "precious victim content\n") -> Path:
    path = t / "victim.txt"
    path.write_text(text)
    return path


def no_caps(argv: list[str]) -> list[str]:
    """As root, drop the capabilities that bypass file permissions, so a chmod 000 file or
    a read-only folder means what it means for a normal user."""
    if os.geteuid() != 0:
        return argv
    return ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", *argv]


def children_started(pid: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(_tree(pid)) > 1:
            return True
        time.sleep(0.02)
    return False


def group_gone(pgid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


# -- drivers run in a subprocess ---------------------------------------------------------------
# With a lock file given, another indexer holds it and the calls are answered at once
# from the existing index, as a freshly started server does while its catch-up index waits.
MCP_DRIVER = r"""
import fcntl, json, sys
from fourfold.interfaces.mcp.tools import FourfoldService
root, calls, lock = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
service = FourfoldService(root, watch=False, embed=False)
if lock:
    held = open(lock, "a+")
    fcntl.flock(held, fcntl.LOCK_EX)
service.start(block=not lock)
out = []
for name, kwargs in calls:
    try:
        out.append({"ok": getattr(service, name)(**kwargs)})
    except Exception as exc:
        out.append({"error": type(exc).__name__ + ": " + str(exc)})
if lock:
    held.close()
service.close()
print(json.dumps(out, default=str))
"""

# Index with a hook between the walk and the reads: the file `swap.py` is replaced by a
# symlink to a target outside (`symlink`) or deleted (`delete`) - the race, made certain.
RACE_DRIVER = r"""
import json, os, sys
import fourfold.indexer as indexer
import fourfold.discovery.walk as walk_module
from fourfold import Fourfold
root, action, target = sys.argv[1:4]
real_walk = walk_module.walk
hooked = []
def walk(*args, **kwargs):
    report = real_walk(*args, **kwargs)
    hooked.append(1)
    path = os.path.join(root, "swap.py")
    os.remove(path)
    if action == "symlink":
        os.symlink(target, path)
    return report
indexer.walk = walk_module.walk = walk
summary = Fourfold(root).index(embed=False)
print(json.dumps({"hooked": bool(hooked), **summary.to_dict()}))
"""


def mcp(root: Path, *calls: tuple[str, dict], busy_lock: Path | None = None
        ) -> tuple[Run, list[dict]]:
    """Call FourfoldService methods on root; one {"ok": ...} or {"error": ...} per call."""
    r = py(MCP_DRIVER, str(root), json.dumps(calls), str(busy_lock or ""))
    try:
        return r, json.loads(r.out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return r, [{"error": "driver failed: " + r.brief()} for _ in calls]


def refused(result: dict) -> bool:
    return "error" in result


def show(result: dict) -> str:
    if "error" in result:
        return "refused: " + result["error"][:80]
    return "served: " + json.dumps(result["ok"])[:80]


def race(root: Path, action: str, target: str) -> tuple[Run, dict | None]:
    """(run, index summary); the summary is None when the hook was not reached."""
    r = py(RACE_DRIVER, str(root), action, target)
    try:
        summary = json.loads(r.out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return r, None
    return r, summary if summary.pop("hooked") else None


# =============================================================================================
# Cases that failed in the review (issue items 1-15)
# =============================================================================================
def _lock_symlink(t: Path, verb: tuple[str, ...]) -> Outcome:
    root = small_repo(t)
    target = victim(t)
    (root / ".fourfold").mkdir()
    (root / ".fourfold" / "index.lock").symlink_to(target)
    r = ff(*verb, str(root))
    text = target.read_text()
    ok = text == "precious victim content\n"
    return Outcome(ok, f"{r.brief()}; victim {'intact' if ok else f'now {len(text)} B'}")


@case("1a", "hostile index folder", "shipped .fourfold/index.lock symlink, `index`",
      "the link's target outside the repo is left intact")
def lock_symlink_index(t: Path) -> Outcome:
    return _lock_symlink(t, ("index", "--no-embed"))


@case("1b", "hostile index folder", "shipped .fourfold/index.lock symlink, `search`",
      "the link's target outside the repo is left intact")
def lock_symlink_search(t: Path) -> Outcome:
    return _lock_symlink(t, ("search", "hello"))


def _dangling(t: Path, name: str) -> Outcome:
    root = small_repo(t)
    target = t / "outside" / f"created-{name}"
    target.parent.mkdir()
    (root / ".fourfold").mkdir()
    (root / ".fourfold" / name).symlink_to(target)
    r = index(root)
    created = sorted(p.name for p in target.parent.iterdir())
    ok = not created
    return Outcome(ok, f"{r.brief()}; outside: {', '.join(created) if created else 'nothing'}")


@case("2a", "hostile index folder", "shipped dangling symlink .fourfold/.gitignore",
      "no file is created at the link's target outside the repo")
def dangling_gitignore(t: Path) -> Outcome:
    return _dangling(t, ".gitignore")


@case("2b", "hostile index folder", "shipped dangling symlink .fourfold/index.sqlite",
      "no file is created at the link's target outside the repo")
def dangling_sqlite(t: Path) -> Outcome:
    return _dangling(t, "index.sqlite")


@case("2c", "hostile index folder", "shipped .fourfold is a symlink to a folder outside",
      "nothing is written into the outside folder")
def index_dir_symlink(t: Path) -> Outcome:
    root = small_repo(t)
    outside = t / "outside"
    outside.mkdir()
    (root / ".fourfold").symlink_to(outside, target_is_directory=True)
    r = index(root)
    written = sorted(p.name for p in outside.iterdir())
    return Outcome(not written, f"{r.brief()}; outside: {', '.join(written) or 'empty'}")


def _forged_index(t: Path) -> Path:
    """A repo shipping .fourfold/index.sqlite built elsewhere, its repository root set to
    '/' so that it claims every folder."""
    donor = tree(t / "donor", {"planted.py": "FORGED_ROW_MARKER = 'served from a shipped index'\n"})
    must(index(donor))
    root = small_repo(t)
    (root / ".fourfold").mkdir()
    conn = sqlite3.connect(donor / ".fourfold" / "index.sqlite")
    conn.execute("UPDATE repos SET root='/'")
    conn.commit()
    conn.execute("VACUUM INTO ?", (str(root / ".fourfold" / "index.sqlite"),))
    conn.close()
    return root


@case("3a", "hostile index folder", "shipped .fourfold/index.sqlite (root '/'), `grep`",
      "rows of a shipped index are not served as the repo's code")
def forged_index_grep(t: Path) -> Outcome:
    root = _forged_index(t)
    r, found = grep(root, "FORGED_ROW_MARKER")
    return Outcome(not found, f"{r.brief()}; {len(found)} forged line(s) served")


@case("3b", "hostile index folder", "shipped .fourfold/index.sqlite, after `fourfold index`",
      "after indexing, only files on disk are served")
def forged_index_after_index(t: Path) -> Outcome:
    root = _forged_index(t)
    r1 = index(root)
    r, found = grep(root, "FORGED_ROW_MARKER")
    return Outcome(not found, f"index {r1.brief()}; {len(found)} forged line(s) served")


def _parent_indexed(t: Path) -> Path:
    """parent/ indexed as a whole; parent/public is then served on its own."""
    parent = tree(t / "parent", {
        "private/creds.py": "SECRET_TOKEN = 'hunter2'\n\n\ndef load_credentials():\n"
                            "    return SECRET_TOKEN\n",
        "public/app.py": "def handler(request):\n    return request\n"})
    must(index(parent))
    return parent / "public"


@case("4a", "scope", "`grep` in a subfolder whose parent has an index",
      "no file outside the subfolder (../private/creds.py) is returned")
def subfolder_grep(t: Path) -> Outcome:
    public = _parent_indexed(t)
    r, found = grep(public, "SECRET_TOKEN")
    return Outcome(not found, f"{r.brief()}; paths: {sorted(paths_of(found)) or 'none'}")


@case("4b", "scope", "`search` in a subfolder whose parent has an index",
      "no file outside the subfolder is returned")
def subfolder_search(t: Path) -> Outcome:
    public = _parent_indexed(t)
    r = ff("search", "SECRET_TOKEN", str(public), "--json")
    try:
        hits = {h["path"] for h in json.loads(r.out.strip().splitlines()[-1])["results"]}
    except (ValueError, IndexError, KeyError):
        hits = set()
    leaked = {p for p in hits if "creds" in p}
    return Outcome(not leaked, f"{r.brief()}; paths: {sorted(hits) or 'none'}")


@case("4c", "scope", "MCP find_symbol served from a subfolder whose parent has an index",
      "symbols of ../private/creds.py are not returned")
def subfolder_find_symbol(t: Path) -> Outcome:
    public = _parent_indexed(t)
    r, (res,) = mcp(public, ("find_symbol", {"name": "load_credentials"}))
    leaked = "error" not in res and "creds" in json.dumps(res["ok"])
    return Outcome(not leaked, ("leaked: " if leaked else "") + show(res))


@case("4d", "scope", "MCP get_file from a subfolder whose parent has an index, answered "
                    "at once while the catch-up index waits for another indexer",
      "get_file('private/creds.py') and get_file('../private/creds.py') are refused")
def subfolder_get_file(t: Path) -> Outcome:
    public = _parent_indexed(t)
    r, results = mcp(public, ("get_file", {"path": "private/creds.py"}),
                     ("get_file", {"path": "../private/creds.py"}),
                     busy_lock=public.parent / ".fourfold" / "index.lock")
    leaked = [res for res in results if "error" not in res and "hunter2" in json.dumps(res)]
    return Outcome(not leaked, "; ".join(show(res) for res in results))


@case("5", "race", "a file swapped for a symlink out of the root between walk and read",
      "the outside file's content is not stored")
def swap_for_symlink(t: Path) -> Outcome:
    root = small_repo(t, **{"swap.py": "x = 1\n"})
    secret = victim(t, "OUTSIDE_SECRET_MARKER = 1\n")
    r, summary = race(root, "symlink", str(secret))
    if summary is None:
        return Outcome(False, f"walk hook not reached: {r.brief()}")
    g, found = grep(root, "OUTSIDE_SECRET_MARKER")
    return Outcome(not found, f"index {r.brief()}; {len(found)} outside line(s) grep-able")


@case("6", "hostile repo", "one file name that is not UTF-8",
      "the other files are indexed")
def non_utf8_name(t: Path) -> Outcome:
    root = small_repo(t, **{"good.py": "GOOD_FILE_MARKER = 1\n"})
    with open(os.path.join(os.fsencode(root), b"bad\xff\xfe.py"), "wb") as f:
        f.write(b"x = 1\n")
    r = index(root)
    g, found = grep(root, "GOOD_FILE_MARKER")
    return Outcome(r.rc == 0 and bool(found), f"index {r.brief()}; good.py found: {bool(found)}")


@case("7", "hostile repo", ".gitignore of 2,500 lines (`*.gen<i>`)",
      "the patterns apply and the other files are indexed")
def huge_gitignore(t: Path) -> Outcome:
    lines = "".join(f"*.gen{i}\n" for i in range(2500))
    root = small_repo(t, **{".gitignore": lines, "keep.py": "KEEP_MARKER = 1\n",
                            "skip.gen7": "KEEP_MARKER = 'ignored'\n"})
    r = index(root)
    g, found = grep(root, "KEEP_MARKER")
    ok = r.rc == 0 and paths_of(found) == {"keep.py"}
    return Outcome(ok, f"index {r.brief()}; found in: {sorted(paths_of(found)) or 'nothing'}")


def _indexed_db(t: Path, files: int = 40) -> tuple[Path, Path]:
    root = tree(t / "repo", {f"f{i:02d}.py": f"def fn_{i}():\n    return 'DB_MARKER {i}'\n" * 40
                             for i in range(files)})
    must(index(root))
    return root, root / ".fourfold" / "index.sqlite"


@case("8a", "corruption", "random bytes written over the middle third of index.sqlite",
      "`grep`/`index` exit 2 with a one-line message (or answer correctly), no traceback")
def random_bytes_db(t: Path) -> Outcome:
    root, db = _indexed_db(t)
    data = bytearray(db.read_bytes())
    third = len(data) // 3
    data[third:2 * third] = random.Random(7).randbytes(third)
    db.write_bytes(bytes(data))
    runs = [ff("grep", "DB_MARKER", str(root)), index(root)]
    ok = all(not r.traceback and r.rc in (0, 1, 2) for r in runs)
    return Outcome(ok, f"grep {runs[0].brief()}; index {runs[1].brief()}")


@case("8b", "corruption", "index.sqlite truncated to half",
      "a message says how to rebuild, and `fourfold index --rebuild` restores search")
def truncated_db(t: Path) -> Outcome:
    root, db = _indexed_db(t)
    with open(db, "r+b") as f:
        f.truncate(db.stat().st_size // 2)
    first = [ff("grep", "DB_MARKER", str(root)), index(root)]
    said = any("--rebuild" in r.err for r in first)
    rebuild = index(root, "--rebuild")
    g, found = grep(root, "DB_MARKER")
    ok = said and rebuild.rc == 0 and len(found) == 40 * 40 and not any(r.traceback for r in first)
    return Outcome(ok, f"grep {first[0].brief()}; --rebuild {rebuild.brief()}; "
                       f"{len(found)}/1600 lines after")


@case("8c", "corruption", "disk full while indexing (file-size limit, RLIMIT_FSIZE 256 KB)",
      "exit 2 with a one-line message, no traceback")
def disk_full(t: Path) -> Outcome:
    root = tree(t / "repo", {f"f{i:02d}.py": "".join(f"def fn_{i}_{j}(): pass\n"
                                                     for j in range(400)) for i in range(60)})

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))
    r = index(root, preexec=limit)
    return Outcome(r.rc == 2 and not r.traceback, r.brief())


@case("9", "crash", "SIGTERM to `fourfold index` while the parser pool runs",
      "it stops without tracebacks (no BrokenPipe from workers), no process left behind")
def sigterm_during_index(t: Path) -> Outcome:
    root = medium_repo(t)
    err_path = t / "stderr"
    with open(err_path, "wb") as err:
        proc = spawn(_command(("index", str(root), "--no-embed", "--workers", "2")), stderr=err)
    if not children_started(proc.pid):
        _kill_group(proc.pid)
        proc.wait()
        return Outcome(False, "no parser workers seen")
    time.sleep(0.4)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        pass
    left = not group_gone(proc.pid)
    _kill_group(proc.pid)
    proc.wait()
    err_text = err_path.read_text("utf-8", "replace")
    tracebacks = err_text.count("Traceback")
    broken = "BrokenPipe" in err_text
    ok = not tracebacks and not left
    return Outcome(ok, f"exit {proc.returncode}; {tracebacks} traceback(s)"
                       + (" (BrokenPipeError)" if broken else "")
                       + ("; processes left behind" if left else ""))


def _startup_baseline(t: Path, argv: list[str]) -> float:
    r, seconds, _, _ = measured(argv, TIMEOUT_S, 4096, t)
    return seconds


def _long_query(t: Path, pairs: int) -> Outcome:
    """One PascalCase word, 'AbAb…', of `pairs` sub-words, over 40 files of Ab… names."""
    root = tree(t / "repo", {f"ab_module_{i}.py": "".join(
        f"class Ab{j}Handler:\n    def ab_method_{j}(self, a):\n        return AbAb(a) + {j}\n\n"
        for j in range(40)) for i in range(40)})
    must(index(root))
    base = _startup_baseline(t, _command(("search", "hello", str(root))))
    r, seconds, peak, killed = measured(_command(("search", "Ab" * pairs, str(root))),
                                        base + 2.0, 400, t)
    ok = not killed and not r.traceback and seconds - base <= 1.0 and peak <= 200
    return Outcome(ok, f"{killed or r.brief()}; {seconds:.2f}s (start-up {base:.2f}s), "
                       f"peak {peak:.0f} MB", seconds, peak)


@case("10a", "resources", "a 100 KB one-word query ('AbAb…')",
      "answered or refused ≤ 1 s beyond start-up, ≤ 200 MB peak")
def huge_query(t: Path) -> Outcome:
    return _long_query(t, 50 * 1024)


@case("10b", "resources", "a 30 KB one-word query ('AbAb…')",
      "answered or refused ≤ 1 s beyond start-up, ≤ 200 MB peak")
def long_query(t: Path) -> Outcome:
    return _long_query(t, 15 * 1024)


@case("11", "resources", "a 10 MB minified file (cap raised to 20 MB)",
      "indexed with ≤ 300 MB peak")
def minified_10mb(t: Path) -> Outcome:
    root = t / "repo"
    root.mkdir()
    parts, size, i = [], 0, 0
    while size < 10 * 1024 * 1024:
        chunk = f"var v{i}=function(a,b){{return a*{i}+b.x{i}}};"
        parts.append(chunk)
        size += len(chunk)
        i += 1
    (root / "bundle.min.js").write_text("".join(parts))
    cmd = _command(("index", str(root), "--no-embed", "--workers", "1",
                    "--max-file-bytes", str(20 * 1024 * 1024)))
    r, seconds, peak, killed = measured(cmd, TIMEOUT_S, 600, t)
    ok = not killed and r.rc == 0 and peak <= 300
    return Outcome(ok, f"{killed or r.brief()}; {seconds:.1f}s, peak {peak:.0f} MB",
                   seconds, peak)


def _nested_regex(t: Path, repeat: int) -> Outcome:
    root = small_repo(t, **{"a.txt": "aaaa baaa caaa: return x\n" * 8000})  # 200 KB
    must(index(root))
    base = _startup_baseline(t, _command(("grep", "hello", str(root))))
    cmd = _command(("grep", "--regex", "(a*)*" * repeat, str(root)))
    r, seconds, peak, killed = measured(cmd, base + 4.0, 500, t)
    ok = not killed and not r.traceback and seconds - base <= 2.0
    return Outcome(ok, f"{killed or r.brief()}; {seconds:.2f}s (start-up {base:.2f}s), "
                       f"peak {peak:.0f} MB", seconds, peak)


@case("12a", "resources", "regex `(a*)*` × 512",
      "answered or refused within 2 s beyond start-up")
def nested_regex_512(t: Path) -> Outcome:
    return _nested_regex(t, 512)


@case("12b", "resources", "regex `(a*)*` × 2048",
      "answered or refused within 2 s beyond start-up")
def nested_regex_2048(t: Path) -> Outcome:
    return _nested_regex(t, 2048)


@case("12c", "resources", "regex `(a*)*` × 800 (4,000 characters)",
      "answered or refused within 2 s beyond start-up")
def nested_regex_800(t: Path) -> Outcome:
    return _nested_regex(t, 800)


@case("13a", "text fidelity", "text after a NUL byte beyond the first 8 KB",
      "the whole file is binary, as `grep -I` decides: skipped and counted, not half-indexed")
def nul_after_8k(t: Path) -> Outcome:
    body = b"# padding line\n" * 700 + b"\0\nAFTER_NUL_MARKER = 1\n"
    root = small_repo(t, **{"late.py": body})
    i = index(root, "--json")
    r, found = grep(root, "PADDING LINE")
    binary = json.loads(i.out.strip().splitlines()[-1])["skipped"].get("binary", 0) if i.rc == 0 else 0
    return Outcome(binary == 1 and not found,
                   f"{binary} file(s) skipped as binary; {len(found)} line(s) of it found")


@case("13b", "text fidelity", "a UTF-16 file with a BOM",
      "indexed as text; its words are found by grep")
def utf16_bom(t: Path) -> Outcome:
    root = small_repo(t, **{"notes.txt": "title = 'UTF16_MARKER'\n".encode("utf-16")})
    i = index(root, "--json")
    r, found = grep(root, "UTF16_MARKER")
    return Outcome(bool(found), f"{len(found)} line(s) found; index {_skipped(i)}")


def _multiline_regex(t: Path, pattern: str, text: str, want: list[int]) -> Outcome:
    root = small_repo(t, **{"code.c": text})
    index(root)
    r, found = grep(root, pattern, "--regex")
    lines = sorted(m["line"] for m in found if m["path"] == "code.c")
    return Outcome(lines == want, f"lines {lines} (grep -E: {want})")


@case("14a", "text fidelity", "regex `return[^;]*;` that can run across a newline",
      "the same lines as grep -E (line by line)")
def regex_across_lines(t: Path) -> Outcome:
    text = "int f() {\n  // return value\n  return x;\n}\nint g() { return 1; }\n"
    return _multiline_regex(t, r"return[^;]*;", text, [3, 5])


@case("14b", "text fidelity", "regex `\\s+bar` where \\s can match a newline",
      "the same lines as grep -E (line by line)")
def regex_whitespace_newline(t: Path) -> Outcome:
    text = "foo\n    bar = 1;\nbaz  bar;\n"
    return _multiline_regex(t, r"\s+bar", text, [2, 3])


@case("15a", "freshness", "same-size edit with the old mtime restored, `index --verify`",
      "`index --verify` notices the edit")
def same_size_same_mtime(t: Path) -> Outcome:
    root = small_repo(t, **{"v.py": "VALUE = 'OLDOLD_MARK'\n"})
    index(root)
    path = root / "v.py"
    st = path.stat()
    path.write_text("VALUE = 'NEWNEW_MARK'\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    r = index(root, "--verify")
    g, found = grep(root, "NEWNEW_MARK")
    return Outcome(bool(found), f"index --verify {r.brief()}; new text found: {bool(found)}")


@case("15b", "freshness", "a symlinked folder sorting before its real folder",
      "the real folder's files are indexed under their real path")
def symlink_dir_first(t: Path) -> Outcome:
    root = small_repo(t, **{"z_real/mod.py": "REAL_DIR_MARKER = 1\n"})
    (root / "a_link").symlink_to(root / "z_real", target_is_directory=True)
    index(root)
    r, found = grep(root, "REAL_DIR_MARKER")
    paths = paths_of(found)
    return Outcome("z_real/mod.py" in paths, f"found under: {sorted(paths) or 'nothing'}")


@case("15c", "freshness", "`index --max-file-bytes 5000000`, then `watch`",
      "the file indexed under the raised cap stays indexed")
def cap_remembered(t: Path) -> Outcome:
    root = small_repo(t, **{"big.txt": "filler line of text\n" * 130_000 + "BIG_FILE_MARKER\n"})
    index(root, "--max-file-bytes", "5000000")
    before = bool(grep(root, "BIG_FILE_MARKER")[1])
    proc = spawn(_command(("watch", str(root), "--no-embed", "--json")), stdout=subprocess.PIPE)
    try:
        first = _readline(proc, 30.0)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.wait()
    after = bool(grep(root, "BIG_FILE_MARKER")[1])
    return Outcome(before and after, f"before watch: {before}; after: {after}"
                                     + ("" if first else " (watch printed nothing)"))


# =============================================================================================
# Cases that held in the review (a reconstruction)
# =============================================================================================
@case("h1", "crash", "kill -9 of `fourfold index` mid-run, then index again",
      "the next index completes and every file is searchable")
def kill9_then_index(t: Path) -> Outcome:
    root = medium_repo(t)
    proc = spawn(_command(("index", str(root), "--no-embed", "--workers", "2")))
    children_started(proc.pid)
    time.sleep(0.5)
    _kill_group(proc.pid)
    proc.wait()
    r = index(root)
    g, found = grep(root, "MARK_EVERY_FILE")
    return Outcome(r.rc == 0 and len(found) == 150,
                   f"re-index {r.brief()}; {len(found)}/150 files searchable")


def _two_indexers(t: Path, *extra: str) -> tuple[list[Run], int]:
    root = medium_repo(t, files=80)
    cmd = _command(("index", str(root), "--no-embed", "--workers", "1", *extra))
    procs = [spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    runs = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _kill_group(p.pid)
            out, err = p.communicate()
        runs.append(Run(p.returncode, out.decode(), err.decode(), 0.0))
    g, found = grep(root, "MARK_EVERY_FILE")
    return runs, len(found)


@case("h2", "concurrency", "two `fourfold index` at once",
      "one indexes, the other refuses cleanly (exit 2) or also succeeds; index complete")
def concurrent_indexers(t: Path) -> Outcome:
    runs, n = _two_indexers(t)
    clean = all(r.rc == 0 or (r.rc == 2 and "another fourfold indexer" in r.err) for r in runs)
    ok = clean and any(r.rc == 0 for r in runs) and n == 80
    return Outcome(ok, f"{' / '.join(r.brief() for r in runs)}; {n}/80 files")


@case("h3", "concurrency", "two `fourfold index --wait 60` at once",
      "both succeed; index complete")
def concurrent_indexers_wait(t: Path) -> Outcome:
    runs, n = _two_indexers(t, "--wait", "60")
    ok = all(r.rc == 0 for r in runs) and n == 80
    return Outcome(ok, f"{' / '.join(r.brief() for r in runs)}; {n}/80 files")


@case("h4", "concurrency", "`grep` while an index run rewrites every file",
      "each grep answers (exit 0), no error")
def read_while_writing(t: Path) -> Outcome:
    root = medium_repo(t, files=100)
    must(index(root))
    for p in root.glob("*.py"):
        p.write_text(p.read_text() + "CHANGED = 1\n")
    proc = spawn(_command(("index", str(root), "--no-embed", "--workers", "2")))
    greps = [ff("grep", "MARK_EVERY_FILE", str(root)) for _ in range(3)]
    try:
        proc.wait(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.wait()
    ok = all(g.rc == 0 and not g.traceback for g in greps)
    return Outcome(ok, ", ".join(g.brief() for g in greps) + f"; indexer exit {proc.returncode}")


@case("h5", "freshness", "git branch switch between two index runs",
      "files of the old branch are gone, the new branch's are found")
def branch_switch(t: Path) -> Outcome:
    root = small_repo(t, **{"only_a.py": "BRANCH_A_MARK = 1\n"})
    git = lambda *a: run(["git", "-C", str(root), "-c", "user.email=h@example.invalid",
                          "-c", "user.name=h", *a])
    git("init", "-q", "-b", "a")
    git("add", "-A")
    git("commit", "-qm", "a")
    git("checkout", "-qb", "b")
    git("rm", "-q", "only_a.py")
    (root / "only_b.py").write_text("BRANCH_B_MARK = 1\n")
    git("add", "-A")
    git("commit", "-qm", "b")
    git("checkout", "-q", "a")
    index(root)
    git("checkout", "-q", "b")
    r = index(root)
    a, b = grep(root, "BRANCH_A_MARK")[1], grep(root, "BRANCH_B_MARK")[1]
    return Outcome(r.rc == 0 and not a and bool(b), f"old branch lines {len(a)}, new {len(b)}")


@case("h6", "hostile repo", "symlink loops (a folder linking to itself and to the root)",
      "index finishes; each file indexed once")
def symlink_loop(t: Path) -> Outcome:
    root = small_repo(t, **{"pkg/mod.py": "LOOP_MARK = 1\n"})
    (root / "pkg" / "self").symlink_to(root / "pkg", target_is_directory=True)
    (root / "pkg" / "up").symlink_to(root, target_is_directory=True)
    r = index(root, timeout=30)
    g, found = grep(root, "LOOP_MARK")
    return Outcome(r.rc == 0 and len(found) == 1,
                   f"{r.brief()}; indexed as {sorted(paths_of(found))}")


@case("h7", "hostile repo", "symlinks out of the root (a file and a folder)",
      "the outside content is not indexed")
def symlink_out(t: Path) -> Outcome:
    root = small_repo(t)
    outside = tree(t / "outside", {"secret.py": "OUTSIDE_LINK_MARK = 1\n"})
    (root / "link.py").symlink_to(outside / "secret.py")
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    r = index(root)
    g, found = grep(root, "OUTSIDE_LINK_MARK")
    return Outcome(r.rc == 0 and not found, f"{r.brief()}; {len(found)} outside line(s)")


def _get_file(t: Path, *paths: str, setup=None) -> Outcome:
    root = small_repo(t)
    secret = victim(t, "OUTSIDE_SECRET = 'hunter2'\n")
    if setup:
        setup(root, secret)
    r, results = mcp(root, *[("get_file", {"path": p.format(secret=secret, root=root)})
                            for p in paths])
    ok = all(refused(res) and "Traceback" not in res["error"] for res in results)
    return Outcome(ok, "; ".join(show(res) for res in results))


@case("h8", "MCP paths", "get_file('../victim.txt') and '..\\\\victim.txt'",
      "refused")
def mcp_dotdot(t: Path) -> Outcome:
    return _get_file(t, "../victim.txt", "..\\victim.txt")


@case("h9", "MCP paths", "get_file with an absolute path outside the root",
      "refused")
def mcp_absolute(t: Path) -> Outcome:
    return _get_file(t, "{secret}")


@case("h10", "MCP paths", "get_file('%2e%2e/victim.txt') (percent-encoded)",
      "refused")
def mcp_encoded(t: Path) -> Outcome:
    return _get_file(t, "%2e%2e/victim.txt", "%2E%2E%2Fvictim.txt")


@case("h11", "MCP paths", "get_file of a symlink in the repo that points outside",
      "refused")
def mcp_symlink_out(t: Path) -> Outcome:
    def setup(root: Path, secret: Path) -> None:
        (root / "link.txt").symlink_to(secret)
    return _get_file(t, "link.txt", setup=setup)


@case("h12", "MCP paths", "get_file of the index itself, a NUL path, a ~ path",
      "refused")
def mcp_odd_paths(t: Path) -> Outcome:
    return _get_file(t, ".fourfold/index.sqlite", "app.py\x00.txt", "~/victim.txt")


@case("h13", "MCP paths", "text_pattern_search with path_glob '../**' and '/**'",
      "refused")
def mcp_glob_dotdot(t: Path) -> Outcome:
    root = small_repo(t)
    r, results = mcp(root, ("text_pattern_search", {"pattern": "hello", "path_glob": "../**"}),
                     ("text_pattern_search", {"pattern": "hello", "path_glob": "/**"}))
    return Outcome(all(refused(res) for res in results), "; ".join(show(res) for res in results))


@case("h14", "MCP paths", "a forged or foreign paging cursor",
      "a clean error, no traceback")
def mcp_bad_cursor(t: Path) -> Outcome:
    root = small_repo(t)
    r, results = mcp(root, ("text_pattern_search", {"pattern": "return", "cursor": "!!notbase64"}),
                     ("get_file", {"path": "app.py", "cursor": "eyJvIjogOTl9"}))
    return Outcome(all(refused(res) for res in results), "; ".join(show(res) for res in results))


RESOLVE_TOKEN = r"""
from fourfold.interfaces.http import resolve_token
from fourfold.errors import FourfoldError
try:
    resolve_token("0.0.0.0", None)
    print("accepted")
except FourfoldError as exc:
    print("refused:", exc)
"""


@case("h15", "HTTP", "serving on 0.0.0.0 without a token (checked without binding)",
      "refused")
def http_no_token(t: Path) -> Outcome:
    r = py(RESOLVE_TOKEN)
    return Outcome(r.out.startswith("refused"), (r.out.strip() or r.brief())[:100])


INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "hostile", "version": "0"}}})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(port: int, headers: dict[str, str]) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        conn.request("POST", "/mcp", INITIALIZE, {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream", **headers})
        return conn.getresponse().status
    finally:
        conn.close()


def _with_server(t: Path, token: str | None, requests: list[dict[str, str]]) -> list[int] | str:
    """Start `fourfold serve` on 127.0.0.1, send each request, stop it; the statuses."""
    root = small_repo(t)
    port = _free_port()
    cmd = _command(("serve", str(root), "--no-watch", "--host", "127.0.0.1",
                    "--port", str(port)) + (("--token", token) if token else ()))
    proc = spawn(cmd)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    return f"server exited {proc.returncode}"
                time.sleep(0.1)
        else:
            return "server did not start"
        return [_post(port, h) for h in requests]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.wait()


@case("h16", "HTTP", "bearer token: none, wrong, right",
      "401, 401, then accepted")
def http_token(t: Path) -> Outcome:
    got = _with_server(t, "s3cret-token", [{}, {"Authorization": "Bearer wrong"},
                                           {"Authorization": "Bearer s3cret-token"}])
    if isinstance(got, str):
        return Outcome(False, got)
    return Outcome(got[0] == got[1] == 401 and got[2] not in (401, 403),
                   f"statuses {got}")


@case("h17", "HTTP", "Host: evil.example (DNS rebinding)",
      "rejected (421)")
def http_bad_host(t: Path) -> Outcome:
    got = _with_server(t, None, [{"Host": "evil.example"}])
    if isinstance(got, str):
        return Outcome(False, got)
    return Outcome(got[0] in (400, 403, 421), f"status {got[0]}")


@case("h18", "HTTP", "Origin: http://evil.example",
      "rejected (403)")
def http_bad_origin(t: Path) -> Outcome:
    got = _with_server(t, None, [{"Origin": "http://evil.example"}])
    if isinstance(got, str):
        return Outcome(False, got)
    return Outcome(got[0] in (400, 403), f"status {got[0]}")


@case("h19", "queries", "regex `(a+)+$` over a 50,000-character 'aaa…!' line",
      "answers in under 5 s (RE2 is linear)")
def redos(t: Path) -> Outcome:
    root = small_repo(t, **{"long.txt": "a" * 50_000 + "!\n"})
    index(root)
    r = ff("grep", "--regex", "(a+)+$", str(root), timeout=10)
    return Outcome(r.rc in (0, 1) and r.seconds < 5, f"{r.brief()} in {r.seconds:.2f}s",
                   r.seconds)


def _query(t: Path, query: str) -> Outcome:
    root = small_repo(t)
    index(root)
    r = ff("search", query, str(root))
    return Outcome(r.rc in (0, 1, 2) and not r.traceback, r.brief())


@case("h20", "queries", "search '\"foo\" AND NEAR(' (FTS syntax)",
      "no traceback")
def fts_syntax(t: Path) -> Outcome:
    return _query(t, '"foo" AND NEAR(')


@case("h21", "queries", "search '*' and '\"'", "no traceback")
def fts_star(t: Path) -> Outcome:
    a, b = _query(t / "a", "*"), _query(t / "b", '"')
    return Outcome(a.ok and b.ok, f"'*': {a.observed}; '\"': {b.observed}")


@case("h22", "queries", "grep for the literal 'NEAR(a, \"b\") OR *'",
      "the line holding it is found")
def fts_literal(t: Path) -> Outcome:
    root = small_repo(t, **{"q.txt": 'x = NEAR(a, "b") OR * y\n'})
    index(root)
    r, found = grep(root, 'NEAR(a, "b") OR *')
    return Outcome(len(found) == 1, f"{r.brief()}; {len(found)} line(s)")


@case("h23", "queries", "empty query, empty grep pattern",
      "a clean error (exit 1 or 2), no traceback")
def empty_query(t: Path) -> Outcome:
    root = small_repo(t)
    index(root)
    runs = [ff("search", "", str(root)), ff("grep", "", str(root))]
    ok = all(r.rc in (1, 2) and not r.traceback for r in runs)
    return Outcome(ok, "; ".join(r.brief() for r in runs))


@case("h24", "queries", "invalid regex '(' and oversized 'a{1000}{1000}'",
      "exit 2 with a message, no traceback")
def bad_regex(t: Path) -> Outcome:
    root = small_repo(t)
    index(root)
    runs = [ff("grep", "--regex", "(", str(root)),
            ff("grep", "--regex", "a{1000}{1000}", str(root), timeout=20)]
    ok = all(r.rc == 2 and not r.traceback for r in runs)
    return Outcome(ok, "; ".join(r.brief() for r in runs))


@case("h25", "hostile repo", "a binary file (NUL in the first bytes, .py name)",
      "skipped as binary; the rest indexed")
def binary_file(t: Path) -> Outcome:
    root = small_repo(t, **{"blob.py": b"\x00\x01BINARY_MARK" * 100})
    r = index(root, "--json")
    g, found = grep(root, "BINARY_MARK")
    h, app = grep(root, "def hello")
    return Outcome(r.rc == 0 and not found and bool(app), f"{_skipped(r)}; blob lines {len(found)}")


@case("h26", "hostile repo", "a 3 MB file over the 2 MB cap",
      "skipped as too large; the rest indexed")
def over_cap(t: Path) -> Outcome:
    root = small_repo(t, **{"huge.txt": "OVER_CAP_MARK\n" * 230_000})
    r = index(root, "--json")
    g, found = grep(root, "OVER_CAP_MARK")
    return Outcome(r.rc == 0 and not found and "too large" in r.out, _skipped(r))


@case("h27", "hostile repo", "deeply nested code (3,000 nested brackets, 400 nested ifs)",
      "index finishes; the other files are indexed")
def deep_nesting(t: Path) -> Outcome:
    ifs = "".join("    " * i + f"if x{i}:\n" for i in range(400)) + "    " * 400 + "pass\n"
    root = small_repo(t, **{"deep.py": "x = " + "[" * 3000 + "]" * 3000 + "\n",
                            "ifs.py": ifs, "deep.js": "f(" * 3000 + ")" * 3000 + ";\n"})
    r = index(root, "--json", timeout=60)
    g, found = grep(root, "def hello")
    return Outcome(r.rc == 0 and bool(found), f"{r.brief()}; {_skipped(r)}")


@case("h28", "hostile repo", "an unreadable file (chmod 000; root's bypass dropped)",
      "skipped; the rest indexed")
def unreadable_file(t: Path) -> Outcome:
    root = small_repo(t, **{"locked.py": "LOCKED_MARK = 1\n"})
    (root / "locked.py").chmod(0)
    r = run(no_caps(_command(("index", str(root), "--no-embed", "--json"))))
    (root / "locked.py").chmod(0o644)
    g, found = grep(root, "def hello")
    return Outcome(r.rc == 0 and bool(found), f"{r.brief()}; {_skipped(r)}")


@case("h29", "hostile repo", "a read-only repository folder (no index yet)",
      "exit 2 with a message, no traceback")
def read_only_repo(t: Path) -> Outcome:
    root = small_repo(t)
    root.chmod(0o555)
    r = run(no_caps(_command(("index", str(root), "--no-embed"))))
    root.chmod(0o755)
    return Outcome(r.rc == 2 and not r.traceback, r.brief())


@case("h30", "hostile repo", "a FIFO in the repository",
      "skipped; index does not hang")
def fifo(t: Path) -> Outcome:
    root = small_repo(t)
    os.mkfifo(root / "pipe.py")
    r = index(root, "--json", timeout=30)
    return Outcome(r.rc == 0, f"{r.brief()}; {_skipped(r)}")


@case("h31", "race", "a file deleted between walk and read",
      "index finishes; the file is reported and not indexed")
def deleted_mid_index(t: Path) -> Outcome:
    root = small_repo(t, **{"swap.py": "DELETED_MARK = 1\n"})
    r, summary = race(root, "delete", "")
    if summary is None:
        return Outcome(False, f"walk hook not reached: {r.brief()}")
    g, found = grep(root, "DELETED_MARK")
    return Outcome(r.rc == 0 and not found, f"skipped {summary['skipped']}; lines {len(found)}")


@case("h32", "hostile repo", "file names with a newline, spaces, a leading dash, unicode",
      "all indexed and found")
def odd_names(t: Path) -> Outcome:
    names = ["new\nline.py", "with space.py", "-rf.py", "--help.py", "ünï cødé.py"]
    root = small_repo(t, **{n: "ODD_NAME_MARK = 1\n" for n in names})
    r = index(root)
    g, found = grep(root, "ODD_NAME_MARK")
    return Outcome(paths_of(found) == set(names), f"{r.brief()}; {len(paths_of(found))}/5 found")


@case("h33", "hostile repo", "invalid UTF-8 bytes inside a file",
      "indexed; its ASCII text found")
def invalid_utf8_content(t: Path) -> Outcome:
    root = small_repo(t, **{"latin.py": b"# caf\xe9 \xff\xfe\nLATIN_MARK = 1\n"})
    index(root)
    r, found = grep(root, "LATIN_MARK")
    return Outcome(len(found) == 1, f"{r.brief()}; {len(found)} line(s)")


@case("h34", "bad input", "`index` of a folder that does not exist",
      "exit 2 with a message")
def missing_folder(t: Path) -> Outcome:
    r = index(t / "nowhere")
    return Outcome(r.rc == 2 and not r.traceback, r.brief())


@case("h35", "bad input", "an empty repository: index, then search",
      "index exit 0; search exit 1 (nothing), no traceback")
def empty_repo(t: Path) -> Outcome:
    root = t / "empty"
    root.mkdir()
    r1, r2 = index(root), ff("search", "anything", str(root))
    return Outcome(r1.rc == 0 and r2.rc == 1 and not r2.traceback,
                   f"index {r1.brief()}; search {r2.brief()}")


@case("h36", "crash", "a stale index.lock file left by a dead indexer",
      "the next index runs")
def stale_lock(t: Path) -> Outcome:
    root = small_repo(t)
    (root / ".fourfold").mkdir()
    (root / ".fourfold" / "index.lock").write_text("pid 999999")
    r = index(root)
    return Outcome(r.rc == 0, r.brief())


@case("h37", "bad input", "CLI `--glob '../*'` and `--glob '/etc/*'`",
      "nothing outside the repository is returned")
def cli_glob_outside(t: Path) -> Outcome:
    root = small_repo(t)
    victim(t, "def hello(): pass\n")
    index(root)
    found = grep(root, "hello", "--glob", "../*")[1] + grep(root, "hello", "--glob", "/etc/*")[1]
    return Outcome(not found, f"{len(found)} line(s)")


# -- the run ---------------------------------------------------------------------------------
def run_case(c: Case, base: Path) -> Outcome:
    t = base / c.id
    t.mkdir()
    try:
        outcome = c.run(t)
    except Exception as exc:  # the harness itself failed: report it, go on
        outcome = Outcome(False, f"harness error: {type(exc).__name__}: {exc}"[:160])
    outcome.observed = outcome.observed.replace(str(base), "$TMP")
    return outcome


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(rows: list[tuple[Case, Outcome]]) -> str:
    out = ["| # | case | expected | observed | ok |", "|---|---|---|---|---|"]
    for c, o in rows:
        out.append(f"| {c.id} | {_cell(c.group + ': ' + c.title)} | {_cell(c.expected)} | "
                   f"{_cell(o.observed)} | {'held' if o.ok else '**FAILED**'} |")
    held = sum(o.ok for _, o in rows)
    out.append("")
    out.append(f"{held} held, {len(rows) - held} failed")
    return "\n".join(out)


def _rmtree(path: Path) -> None:
    """Remove the temporary folder, first making writable what a case left read-only."""
    for folder, _, _ in os.walk(path):  # symlinks are not followed
        os.chmod(folder, stat.S_IRWXU)
    shutil.rmtree(path, ignore_errors=True)


def selected(wanted: set[str] | None) -> list[Case]:
    """The cases asked for: '10' also names 10a, 10b, ..."""
    if wanted is None:
        return list(CASES)
    return [c for c in CASES if c.id in wanted
            or (c.id[-1].isalpha() and not c.id.isalpha() and c.id[:-1] in wanted)]


def _rounded(fields: dict) -> dict:
    return {k: round(v, 2) if isinstance(v, float) else v for k, v in fields.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="comma-separated case ids, e.g. 1a,5,10")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--source", type=Path, default=REPO,
                        help="folder holding the fourfold package to test (default: this checkout)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    wanted = {w.strip() for w in args.only.split(",")} if args.only else None
    cases = selected(wanted)
    unknown = wanted - {c.id for c in cases} - {c.id[:-1] for c in cases} if wanted else set()
    if unknown:
        parser.error(f"unknown case ids: {', '.join(sorted(unknown))}")
    Env.source = args.source.resolve()
    base = Path(tempfile.mkdtemp(prefix="fourfold-hostile-"))
    Env.base = base
    (base / "home").mkdir()
    rows: list[tuple[Case, Outcome]] = []
    started = time.monotonic()
    try:
        for c in cases:
            t0 = time.monotonic()
            outcome = run_case(c, base)
            rows.append((c, outcome))
            print(f"{c.id:>4} {'held' if outcome.ok else 'FAIL'} {time.monotonic() - t0:5.1f}s "
                  f"{outcome.observed[:100]}", file=sys.stderr, flush=True)
    finally:
        if args.keep:
            print(f"kept {base}", file=sys.stderr)
        else:
            _rmtree(base)
    total = time.monotonic() - started
    if args.json:
        print(json.dumps({"seconds": round(total, 1), "held": sum(o.ok for _, o in rows),
                          "failed": sum(not o.ok for _, o in rows),
                          "cases": [{"id": c.id, "group": c.group, "case": c.title,
                                     "expected": c.expected, **_rounded(asdict(o))}
                                    for c, o in rows]},
                         ensure_ascii=False, indent=1))
    else:
        print(table(rows))
        print(f"\n({total:.0f}s, source {Env.source})")
    return 0 if all(o.ok for _, o in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
