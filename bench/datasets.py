#!/usr/bin/env python3
"""Benchmark data sets for fourfold: where they live and how to recreate the source trees.

The benchmark data (queries, gold answers, the reference scorer and materialize.py) is read-only
under ``<workspace>/shared/bench`` (see its README.md). The source trees those queries refer to
are third-party code: they are written into ``bench/.cache/trees/`` (git-ignored) and must never
be committed.

Layout of the cache::

    bench/.cache/trees/semble/<name>/                 one tree per semble-dev repo, holding only
                                                      its benchmark_root folder (kept at its path)
    bench/.cache/trees/semble/<name>/<benchmark_root> the folder to index ("index root")
    bench/.cache/trees/localize/<instance_id>/        whole repo at base_commit (= index root)
    bench/.cache/trees/.stamps/<kind>/<key>.json      written after a tree is complete

Recreating the cache:

1. Bring each repository's git history with the session ``fetch`` tool (source
   ``github:<owner>/<name>``). It leaves a bare git dir at ``/work/.mirror/<owner>+<name>/repo``
   (``mirror_path``); override the mirror folder with ``FOURFOLD_MIRROR_DIR``.
2. ``python bench/datasets.py prepare`` materializes every missing tree (pinned ``revision``,
   or ``fallback_ref`` when the pinned commit is not in the snapshot) and prints what it did.
3. ``python bench/datasets.py check`` lists the trees, their file counts and sizes;
   ``python bench/datasets.py sources`` lists the ``fetch`` sources needed and which are present.

As prepared here (fetch snapshots of 2 Dec): all 21 + 22 trees; guzzle and http4s use their
``fallback_ref`` (7.8 and series/0.23: the pinned commits are not in the snapshots); a few large
data blobs (>4 MiB: pvlib .csv/.ipynb data, one pydicom file) are absent from the snapshots and
skipped, none of them .py gold files.

Scoring: semble-dev paths may be relative to the index root or to the repo root (the scorer
matches on '/'-suffix); localization paths are relative to the repo root. Note that the xmonad
and zls annotations are written relative to their benchmark_root (e.g. "Core.hs"), the rest
relative to the repo root; and one secondary target (exposed#9, exposed-jdbc/.../SchemaUtils.kt)
lies outside exposed's benchmark_root, so no index of that root can find it.

Only the standard library is used, so any Python (the project venv or the semble baseline venv)
can import this module.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
CACHE_DIR = BENCH_DIR / ".cache"
TREES_DIR = CACHE_DIR / "trees"
STAMPS_DIR = TREES_DIR / ".stamps"


def _default_data_dir() -> Path:
    env = os.environ.get("FOURFOLD_BENCH_DATA")
    if env:
        return Path(env)
    sibling = REPO_ROOT.parent / "shared" / "bench"
    return sibling if sibling.is_dir() else Path("/work/shared/bench")


DATA_DIR = _default_data_dir()
SEMBLE_DATA = DATA_DIR / "semble-dev"
LOCALIZE_DATA = DATA_DIR / "localization-dev.jsonl"
TRAIN_DATA = DATA_DIR / "localization-train.jsonl"
# instance -> the release whose source stands in for its base commit (see its "method")
TRAIN_RELEASES = BENCH_DIR / "localization_train_releases.json"
SDISTS_DIR = CACHE_DIR / "sdists"
PYPI_PROJECT = {"django/django": "Django", "matplotlib/matplotlib": "matplotlib",
                "scikit-learn/scikit-learn": "scikit-learn"}
MATERIALIZE = DATA_DIR / "materialize.py"
MIRROR_DIR = Path(os.environ.get("FOURFOLD_MIRROR_DIR", "/work/.mirror"))


# ----------------------------------------------------------------------------- locations

def mirror_path(owner_name: str) -> Path | None:
    """Git dir of the fetched snapshot of ``owner/name``, or None when it is not there.

    The fetch tool writes ``<MIRROR_DIR>/<owner>+<name>/repo`` (a bare repository). The match
    falls back to a case-insensitive one, since GitHub names are case-insensitive.
    """
    want = owner_name.replace("/", "+")
    cands = [MIRROR_DIR / want]
    if MIRROR_DIR.is_dir():
        cands += [p for p in MIRROR_DIR.iterdir() if p.name.lower() == want.lower()]
    for base in cands:
        for git_dir in (base / "repo", base):
            if (git_dir / "HEAD").is_file() and (git_dir / "objects").is_dir():
                return git_dir
    return None


def semble_tree(name: str) -> Path:
    return TREES_DIR / "semble" / name


def localize_tree(instance_id: str) -> Path:
    return TREES_DIR / "localize" / instance_id


def release_tree(project: str, version: str) -> Path:
    return TREES_DIR / "releases" / f"{project}-{version}"


def _stamp(kind: str, key: str) -> Path:
    return STAMPS_DIR / kind / f"{key}.json"


def _read_stamp(kind: str, key: str) -> dict | None:
    p = _stamp(kind, key)
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


# ----------------------------------------------------------------------------- data sets

def semble_repos() -> list[dict]:
    """The 21 semble-dev repositories with their queries.

    Each dict: name, language, github, revision, fallback_ref, benchmark_root, tree (folder the
    tree was written to), index_root (folder to index: tree/benchmark_root, or tree),
    materialized (stamp dict or None: rev actually used, counts), queries (list of dicts:
    id "<name>#<n>", query, relevant, secondary, category; targets are repo-root-relative paths
    or {"path", "start_line", "end_line"}).
    """
    repos = json.loads((SEMBLE_DATA / "repos.json").read_text())
    out = []
    for r in repos:
        name = r["name"]
        tree = semble_tree(name)
        root = r.get("benchmark_root")
        ann = json.loads((SEMBLE_DATA / "annotations" / f"{name}.json").read_text())
        queries = [{"id": f"{name}#{i}", "query": q["query"],
                    "relevant": q.get("relevant", []), "secondary": q.get("secondary", []),
                    "category": q.get("category", "semantic")} for i, q in enumerate(ann)]
        out.append({"name": name, "language": r.get("language"), "github": r["github"],
                    "revision": r["revision"], "fallback_ref": r.get("fallback_ref"),
                    "benchmark_root": root, "tree": tree,
                    "index_root": tree / root if root else tree,
                    "materialized": _read_stamp("semble", name), "queries": queries})
    return out


def localization_instances() -> list[dict]:
    """The 22 localization-dev instances.

    Each dict: instance_id, repo (owner/name), base_commit, tree (= index root; the whole repo
    at base_commit), query (issue text), gold_files (repo-root-relative .py paths).
    """
    out = []
    for line in LOCALIZE_DATA.read_text().splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        tree = localize_tree(d["instance_id"])
        out.append({"instance_id": d["instance_id"], "repo": d["repo"],
                    "base_commit": d["base_commit"], "tree": tree, "index_root": tree,
                    "query": d["query"], "gold_files": d["gold_files"],
                    "materialized": _read_stamp("localize", d["instance_id"])})
    return out


def train_instances() -> list[dict]:
    """The 398 localization-train instances, each indexed at a release tree (several
    instances share one). Each dict: instance_id, repo, release, tree (= index root),
    query, gold_files, gold_spans, materialized."""
    releases = json.loads(TRAIN_RELEASES.read_text())["instances"]
    out = []
    for line in TRAIN_DATA.read_text().splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        project, version = PYPI_PROJECT[d["repo"]], releases[d["instance_id"]]["release"]
        tree = release_tree(project, version)
        out.append({"instance_id": d["instance_id"], "repo": d["repo"], "release": version,
                    "tree": tree, "index_root": tree, "query": d["query"],
                    "gold_files": d["gold_files"], "gold_spans": d.get("gold_spans") or {},
                    "materialized": _read_stamp("releases", tree.name)})
    return out


# ----------------------------------------------------------------------------- prepare

def _has_commit(git_dir: Path, rev: str) -> str | None:
    for cand in (rev, f"origin/{rev}", f"refs/heads/{rev}"):
        r = subprocess.run(["git", "-C", str(git_dir), "rev-parse", "--verify", "-q",
                            cand + "^{commit}"], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.strip()
    return None


def _materialize(kind: str, key: str, github: str, revs: list[str], out: Path,
                 subdir: str | None) -> dict:
    """Write one tree through shared/bench/materialize.py; returns the stamp written."""
    git_dir = mirror_path(github)
    if git_dir is None:
        raise RuntimeError(f"no git dir for {github} under {MIRROR_DIR} (fetch github:{github})")
    rev = next((r for r in revs if r and _has_commit(git_dir, r)), None)
    if rev is None:
        raise RuntimeError(f"none of {[r for r in revs if r]} is a commit in {git_dir}")
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    if out.exists():
        shutil.rmtree(out)
    cmd = [sys.executable, str(MATERIALIZE), str(git_dir), rev, str(tmp)]
    if subdir:
        cmd += ["--subdir", subdir]
    t0 = time.time()
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise RuntimeError(f"materialize failed: {res.stderr.strip() or res.stdout.strip()}")
    fields = dict(kv.split("=", 1) for kv in res.stdout.split() if "=" in kv)
    tmp.mkdir(parents=True, exist_ok=True)  # an empty listing still yields a folder
    tmp.rename(out)
    stamp = {"kind": kind, "key": key, "github": github, "git_dir": str(git_dir),
             "requested": revs[0], "used_ref": rev, "rev": fields.get("rev"),
             "fallback": rev != revs[0], "subdir": subdir,
             "written": int(fields.get("written", 0)), "missing": int(fields.get("missing", 0)),
             "seconds": round(time.time() - t0, 2)}
    sp = _stamp(kind, key)
    sp.parent.mkdir(parents=True, exist_ok=True)
    sp.write_text(json.dumps(stamp, indent=1) + "\n")
    return stamp


def prepare(only: set[str] | None = None, force: bool = False) -> int:
    """Materialize every missing tree; returns the number of failures."""
    jobs = []
    for r in semble_repos():
        jobs.append(("semble", r["name"], r["github"], [r["revision"], r["fallback_ref"]],
                     r["tree"], r["benchmark_root"], r["materialized"]))
    for inst in localization_instances():
        jobs.append(("localize", inst["instance_id"], inst["repo"], [inst["base_commit"]],
                     inst["tree"], None, inst["materialized"]))
    failures = 0
    for kind, key, github, revs, out, subdir, stamp in jobs:
        if only and key not in only and kind not in only:
            continue
        if stamp and out.is_dir() and not force:
            print(f"skip   {kind:8} {key}: present ({stamp['written']} files @ {stamp['rev'][:12]})")
            continue
        try:
            st = _materialize(kind, key, github, revs, out, subdir)
        except RuntimeError as e:
            failures += 1
            print(f"FAIL   {kind:8} {key}: {e}")
            continue
        note = f" (fallback {st['used_ref']}; pinned {revs[0][:12]} not in snapshot)" \
            if st["fallback"] else ""
        print(f"made   {kind:8} {key}: written={st['written']} missing={st['missing']} "
              f"rev={st['rev'][:12]}{note} -> {out.relative_to(REPO_ROOT)} [{st['seconds']}s]")
    return failures


def _unpack_sdist(archive: Path, out: Path) -> int:
    """Extract a source archive into `out`, without its top folder; links, devices and
    paths leaving the folder are skipped. Returns the files written."""
    import tarfile

    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    written = 0
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            parts = Path(member.name).parts[1:]
            if not member.isfile() or not parts or ".." in parts:
                continue
            target = tmp.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(member) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            written += 1
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return written


def _pypi_files(project: str) -> list[dict]:
    """PyPI's list of a project's files (name, url, sha256, upload time)."""
    import urllib.request

    request = urllib.request.Request(f"https://pypi.org/simple/{project.lower()}/", headers={
        "Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)["files"]


def prepare_releases(force: bool = False) -> int:
    """Download (from PyPI, checked against its sha256) and unpack every release tree
    localization-train needs; returns the number of failures."""
    import hashlib
    import urllib.request

    needed = sorted({(PYPI_PROJECT[i["repo"]], i["release"]) for i in train_instances()})
    failures = 0
    listings: dict[str, list[dict]] = {}
    for project, version in needed:
        tree = release_tree(project, version)
        if _read_stamp("releases", tree.name) and tree.is_dir() and not force:
            print(f"skip   release  {tree.name}: present")
            continue
        t0 = time.time()
        files = listings.setdefault(project, _pypi_files(project))
        wanted = {f"{project}-{version}.tar.gz".lower(),
                  f"{project.replace('-', '_')}-{version}.tar.gz".lower()}
        entry = next((f for f in files if f["filename"].lower() in wanted), None)
        if entry is None:
            failures += 1
            print(f"FAIL   release  {tree.name}: no source archive on PyPI")
            continue
        SDISTS_DIR.mkdir(parents=True, exist_ok=True)
        archive = SDISTS_DIR / entry["filename"]
        if not archive.is_file():
            with urllib.request.urlopen(entry["url"], timeout=300) as answer:
                data = answer.read()
            if hashlib.sha256(data).hexdigest() != entry["hashes"]["sha256"]:
                failures += 1
                print(f"FAIL   release  {tree.name}: sha256 differs from PyPI's")
                continue
            archive.write_bytes(data)
        written = _unpack_sdist(archive, tree)
        stamp = {"kind": "releases", "key": tree.name, "archive": archive.name,
                 "written": written, "rev": version, "seconds": round(time.time() - t0, 2)}
        sp = _stamp("releases", tree.name)
        sp.parent.mkdir(parents=True, exist_ok=True)
        sp.write_text(json.dumps(stamp, indent=1) + "\n")
        print(f"made   release  {tree.name}: written={written} [{stamp['seconds']}s]")
    return failures


def build_release_map() -> int:
    """Rebuild TRAIN_RELEASES' instance -> release table from its anchors and PyPI's upload
    dates (needs the network; the result is committed)."""
    import bisect
    import datetime as dt
    import re

    doc = json.loads(TRAIN_RELEASES.read_text())
    day = dt.date.fromisoformat
    instances = {}
    rows = [json.loads(line) for line in TRAIN_DATA.read_text().splitlines() if line.strip()]
    for repo, project in PYPI_PROJECT.items():
        files = _pypi_files(project)
        freezes: dict[str, tuple[str, dt.date]] = {}  # X.Y -> its first (pre-)release
        for f in files:
            name = f["filename"]
            if not name.endswith(".tar.gz"):
                continue
            version = re.sub(r"^[A-Za-z_-]+-", "", name[:-7])
            m = re.match(r"^(\d+)\.(\d+)((?:\.0)?(?:(?:a|b|rc)\d+)?)$", version)
            when = day(f["upload-time"][:10])
            key = m and f"{m.group(1)}.{m.group(2)}"
            if key and (key not in freezes or when < freezes[key][1]):
                freezes[key] = (version, when)
        releases = sorted(freezes.values(), key=lambda vt: vt[1])
        anchors = sorted((int(n), day(d)) for n, d in doc["anchors"][repo].items())
        numbers = [n for n, _ in anchors]
        for row in rows:
            if row["repo"] != repo:
                continue
            n = int(row["instance_id"].rsplit("-", 1)[1])
            i = bisect.bisect_left(numbers, n)
            if i < len(numbers) and numbers[i] == n:
                when = anchors[i][1]
            elif i in (0, len(numbers)):
                when = anchors[min(i, len(numbers) - 1)][1]
            else:
                (n0, t0), (n1, t1) = anchors[i - 1], anchors[i]
                when = t0 + (t1 - t0) * ((n - n0) / (n1 - n0)) if t1 >= t0 else t1
            cutoff = when - dt.timedelta(days=14)
            version = [v for v, t in releases if t <= cutoff][-1]
            instances[row["instance_id"]] = {"release": version, "estimated_date": str(when)}
    doc["instances"] = instances
    TRAIN_RELEASES.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{len(instances)} instances, {len({v['release'] for v in instances.values()})} "
          f"releases")
    return 0


# ----------------------------------------------------------------------------- check

def _tree_stats(path: Path) -> tuple[int, int]:
    n = size = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            try:
                size += os.lstat(os.path.join(dirpath, f)).st_size
                n += 1
            except OSError:
                pass
    return n, size


def check() -> int:
    missing = 0
    total_n = total_size = 0
    rows = [("semble", r["name"], r["index_root"], r["materialized"]) for r in semble_repos()]
    rows += [("localize", i["instance_id"], i["index_root"], i["materialized"])
             for i in localization_instances()]
    for kind, key, root, stamp in rows:
        if not root.is_dir() or not stamp:
            missing += 1
            print(f"MISSING {kind:8} {key:38} {root.relative_to(REPO_ROOT)}")
            continue
        n, size = _tree_stats(root)
        total_n += n
        total_size += size
        fb = f" fallback={stamp['used_ref']}" if stamp.get("fallback") else ""
        gone = f" blobs_missing={stamp['missing']}" if stamp.get("missing") else ""
        print(f"ok      {kind:8} {key:38} files={n:6} size={size / 1e6:8.2f}MB "
              f"rev={stamp['rev'][:12]}{fb}{gone}  {root.relative_to(REPO_ROOT)}")
    print(f"{len(rows) - missing}/{len(rows)} trees present, {total_n} files, "
          f"{total_size / 1e6:.1f} MB in index roots")
    return 1 if missing else 0


def sources() -> int:
    """Print the fetch-tool sources the data sets need and whether each snapshot is present."""
    repos = sorted({r["github"] for r in semble_repos()}, key=str.lower)
    repos += sorted({i["repo"] for i in localization_instances()}, key=str.lower)
    missing = 0
    for gh in repos:
        git_dir = mirror_path(gh)
        missing += git_dir is None
        print(f"github:{gh:45} {git_dir or 'MISSING'}")
    return 1 if missing else 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("prepare", "check", "sources", "releases"):
        print("usage: datasets.py prepare [--force] [NAME|semble|localize|train ...]\n"
              "       datasets.py check\n       datasets.py sources\n"
              "       datasets.py releases   (rebuild localization-train's release table)")
        return 2
    if argv[0] == "releases":
        return build_release_map()
    if argv[0] == "check":
        return check()
    if argv[0] == "sources":
        return sources()
    force = "--force" in argv
    only = {a for a in argv[1:] if not a.startswith("--")} or None
    if only == {"train"}:
        return 1 if prepare_releases(force) else 0
    return 1 if prepare(only, force) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
