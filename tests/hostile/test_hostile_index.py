"""A repository is untrusted input: the index folder it may ship, its subfolders, a damaged
or full disk, a terminated indexer. Each test is the reproduction of a case that once
wrote, served or crashed where it must not."""
from __future__ import annotations

import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fourfold import Fourfold
from fourfold.errors import FourfoldError
from fourfold.interfaces.cli import main
from fourfold.interfaces.mcp.paths import PathRefused
from fourfold.interfaces.mcp.tools import FourfoldService

CODE = {"src/app.py": "def handler(request):\n    return 'APP_MARKER'\n",
        "src/util.py": "import os\n\ndef helper():\n    return os.sep\n"}


def run_cli(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fourfold.interfaces.cli", *args],
                          capture_output=True, text=True, timeout=120, **kwargs)


@pytest.fixture
def victim(tmp_path) -> Path:
    """A file outside every repository that nothing may write to."""
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir()
    path.write_text("precious\n")
    return path


# -- what a repository may ship in .fourfold ------------------------------------------------
@pytest.mark.parametrize("lock", ["index.lock", "readers.lock"])
@pytest.mark.parametrize("command", ["index", "search"])
def test_shipped_lock_symlink_does_not_truncate_its_target(make_tree, victim, command, lock):
    root = make_tree(CODE)
    (root / ".fourfold").mkdir()
    os.symlink(victim, root / ".fourfold" / lock)
    args = ["index", str(root), "--no-embed"] if command == "index" else \
        ["search", "handler", str(root)]
    assert main(args) == 0
    assert victim.read_text() == "precious\n"
    assert not (root / ".fourfold" / lock).is_symlink()


@pytest.mark.parametrize("name", [".gitignore", "index.sqlite", "index.sqlite-wal",
                                  "index.sqlite-shm", "readers.lock"])
def test_shipped_dangling_symlinks_create_nothing_outside(make_tree, tmp_path, name):
    root = make_tree(CODE)
    (root / ".fourfold").mkdir()
    target = tmp_path / "outside" / f"planted-{name}"
    target.parent.mkdir(exist_ok=True)
    os.symlink(target, root / ".fourfold" / name)
    assert main(["index", str(root), "--no-embed"]) == 0
    assert not target.exists()
    assert list(target.parent.iterdir()) == []
    assert main(["grep", "APP_MARKER", str(root)]) == 0


def test_shipped_chunk_index_folder_is_never_written_through(make_tree, tmp_path, victim):
    """The BM25 index is a folder of Tantivy's files beside the database: a repository can
    ship it as a symlink, or ship links named like the files Tantivy opens for writing."""
    linked = make_tree(CODE, name="linked")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (linked / ".fourfold").mkdir()
    os.symlink(elsewhere, linked / ".fourfold" / "chunk-index")
    planted = make_tree(CODE, name="planted")
    (planted / ".fourfold" / "chunk-index").mkdir(parents=True)
    for name in (".tantivy-writer.lock", ".tantivy-meta.lock", "meta.json", ".managed.json",
                 "fourfold-token"):
        os.symlink(victim, planted / ".fourfold" / "chunk-index" / name)
    for root in (linked, planted):
        assert main(["index", str(root), "--no-embed"]) == 0
        assert Fourfold(root).search("handler request", modalities=("text",)).hits[0].path \
            == "src/app.py"
        folder = root / ".fourfold" / "chunk-index"
        assert folder.is_dir() and not folder.is_symlink()
        assert not any(p.is_symlink() for p in folder.iterdir())
    assert list(elsewhere.iterdir()) == []
    assert victim.read_text() == "precious\n"


def test_a_folder_named_outside_utf8_is_refused_clearly(make_tree, tmp_path, capsys):
    """The index keeps paths as UTF-8 and Tantivy opens its folder by a UTF-8 name: a root
    or an index folder named otherwise gets one clear line, and nothing is created."""
    root = make_tree(CODE)
    odd_index = os.fsdecode(os.fsencode(tmp_path) + b"/index-\xff")
    assert main(["index", str(root), "--no-embed", "--index-dir", odd_index]) == 2
    err = capsys.readouterr().err
    assert "is not a valid UTF-8 path" in err and "--index-dir" in err
    assert "Traceback" not in err and not os.path.exists(odd_index)
    odd_root = os.fsdecode(os.fsencode(tmp_path) + b"/repo-\xff")
    shutil.copytree(root, odd_root)
    assert main(["index", odd_root, "--no-embed", "--index-dir", str(tmp_path / "idx")]) == 2
    err = capsys.readouterr().err
    assert "is not a valid UTF-8 path" in err and "rename the folder" in err
    assert not (tmp_path / "idx").exists()
    assert main(["index", str(root), "--no-embed"]) == 0  # a UTF-8 one is indexed as ever


def test_index_folder_that_is_a_symlink_is_refused(make_tree, tmp_path, capsys):
    root = make_tree(CODE)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, root / ".fourfold")
    assert main(["index", str(root), "--no-embed"]) == 2
    err = capsys.readouterr().err
    assert "symlink" in err and "--index-dir" in err and "Traceback" not in err
    assert list(elsewhere.iterdir()) == []
    # the way out the message names works
    assert main(["index", str(root), "--no-embed", "--index-dir", str(tmp_path / "idx")]) == 0


def test_shipped_index_is_never_served(make_tree, tmp_path, capsys):
    """A database made elsewhere (here: a real index, its root rewritten to '/') and shipped
    in the repository's .fourfold is discarded, not served."""
    other = make_tree({"secret.py": "TOKEN = 'SHIPPED_ROW'\n"}, name="other")
    Fourfold(other).index(embed=False)
    db = other / ".fourfold" / "index.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE repos SET root='/'")
    root = make_tree(CODE)
    shutil.copytree(other / ".fourfold", root / ".fourfold")

    assert main(["grep", "SHIPPED_ROW", str(root)]) == 1
    err = capsys.readouterr().err
    assert "not built in this folder" in err
    assert main(["grep", "APP_MARKER", str(root)]) == 0
    ff = Fourfold(root)
    assert ff.notes == []  # rebuilt here: trusted from now on
    assert [h.path for h in ff.search("token shipped row", modalities=("text",)).hits] == []
    assert [r["root"] for r in ff.status()["repositories"]] == [str(root)]


def test_moved_checkout_is_rebuilt_not_served_under_its_old_root(make_tree, tmp_path):
    root = make_tree(CODE)
    Fourfold(root).index(embed=False)
    moved = tmp_path / "moved"
    root.rename(moved)
    ff = Fourfold(moved)
    assert ff.notes == [f"the index in {moved / '.fourfold'} was not built in this folder "
                        "(shipped with the repository, copied or moved); it was discarded and "
                        "is built anew"]
    assert not ff.is_indexed()
    ff.index(embed=False)
    assert [m.path for m in ff.grep("APP_MARKER")] == ["src/app.py"]


# -- a subfolder is served alone ---------------------------------------------------------------
def test_subfolder_of_an_indexed_folder_serves_only_itself(make_tree):
    root = make_tree({**CODE, "private/creds.py": "PASSWORD = 'SUBFOLDER_SECRET'\n"})
    Fourfold(root).index(embed=False)
    sub = root / "src"

    assert main(["grep", "SUBFOLDER_SECRET", str(sub)]) == 1
    assert main(["grep", "APP_MARKER", str(sub)]) == 0
    ff = Fourfold(sub)
    assert ff.index_dir == sub / ".fourfold"
    hits = ff.search("password creds secret").hits
    assert [(h.path, h.symbol) for h in hits] == [("util.py", None), ("app.py", "handler")]

    service = FourfoldService(sub, watch=False, embed=False).start(block=True)
    try:
        assert service.text_pattern_search("SUBFOLDER_SECRET")["total"] == 0
        assert service.text_pattern_search("APP_MARKER")["total"] == 1
        assert service.find_symbol("PASSWORD")["total"] == 0
        with pytest.raises(PathRefused):
            service.get_file("../private/creds.py")
        with pytest.raises(PathRefused):
            service.get_file(str(root / "private" / "creds.py"))
        paths = [r["path"] for r in service.intelligent_search("PASSWORD")["results"]]
        assert paths == ["util.py", "app.py"]  # never private/creds.py, which defines it
    finally:
        service.close()


def test_outline_of_a_file_finds_the_index_above_it(make_tree, monkeypatch, capsys):
    root = make_tree(CODE)
    Fourfold(root).index(embed=False)
    monkeypatch.chdir(root / "src")
    assert main(["outline", "app.py", "--json"]) == 0
    assert '"handler"' in capsys.readouterr().out
    assert not (root / "src" / ".fourfold").exists()


# -- damaged database, full disk, termination --------------------------------------------------
def _damage(db: Path, how: str) -> None:
    size = db.stat().st_size
    if how == "truncated":
        os.truncate(db, 4096 * 2)
        return
    with open(db, "r+b") as handle:
        for offset in range(4096 * 2, size, max(4096, size // 40)):
            handle.seek(offset)
            handle.write(os.urandom(4096))


@pytest.mark.parametrize("how", ["random bytes", "truncated"])
def test_damaged_database_says_how_to_rebuild_and_rebuild_works(make_tree, how):
    root = make_tree({f"pkg/m{i}.py": f"def f{i}():\n    return 'VALUE_{i}'\n" * 40
                      for i in range(60)})
    assert run_cli("index", str(root), "--no-embed").returncode == 0
    _damage(root / ".fourfold" / "index.sqlite", how)
    for args in (["grep", "VALUE_7", str(root)], ["def", "f7", str(root)],
                 ["search", "f7", str(root)], ["status", str(root)]):
        result = run_cli(*args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        assert f"fourfold index --rebuild {root}" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    rebuilt = run_cli("index", "--rebuild", str(root), "--no-embed")
    assert rebuilt.returncode == 0, rebuilt.stderr
    found = run_cli("grep", "VALUE_7'", str(root))
    assert found.returncode == 0 and "pkg/m7.py" in found.stdout


def _small_disk() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, as on a full disk
    resource.setrlimit(resource.RLIMIT_FSIZE, (400_000, 400_000))


def test_full_disk_stops_cleanly_and_keeps_what_was_written(make_tree):
    root = make_tree({f"pkg/m{i}.py": f"def f{i}():\n    return 'FULL_{i}'\n" * 60
                      for i in range(120)})
    result = subprocess.run([sys.executable, "-m", "fourfold.interfaces.cli", "index",
                             str(root), "--no-embed", "--workers", "1"],
                            capture_output=True, text=True, timeout=120, preexec_fn=_small_disk)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "cannot write the index" in result.stderr and "free some space" in result.stderr
    # room again: the next run completes the index
    assert run_cli("index", str(root), "--no-embed").returncode == 0
    found = run_cli("grep", "FULL_99'", str(root))
    assert found.returncode == 0 and "pkg/m99.py" in found.stdout


def test_sigterm_while_indexing_stops_without_tracebacks(make_tree):
    body = "".join(f"def function_{j}(a, b):\n    return helper_{j}(a) + b\n\n" for j in range(60))
    root = make_tree({f"pkg{i % 30}/mod{i}.py": body for i in range(600)})
    process = subprocess.Popen([sys.executable, "-m", "fourfold.interfaces.cli", "index",
                                str(root), "--no-embed", "--workers", "2"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock = root / ".fourfold" / "index.lock"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (lock.exists() and lock.read_text()):
        time.sleep(0.02)
    time.sleep(0.5)  # parsing is under way on both workers
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM, (out, err)
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert err.strip() == "fourfold: terminated; the index keeps its last complete batch"
    # the index is usable, and the next run finishes it
    assert run_cli("index", str(root), "--no-embed").returncode == 0
    assert run_cli("grep", "function_59", str(root), "--limit", "1").returncode == 0


# -- change detection and remembered settings --------------------------------------------------
def _edit_keeping_size_and_mtime(path: Path, text: str) -> None:
    before = path.stat()
    assert len(text.encode()) == before.st_size
    time.sleep(0.01)  # a ctime of its own
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_same_size_edit_with_its_old_mtime_is_noticed(make_tree):
    root = make_tree({"a.py": "VALUE = 'OLD_TEXT'\n", "b.py": "OTHER = 1\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    _edit_keeping_size_and_mtime(root / "a.py", "VALUE = 'NEW_TEXT'\n")
    summary = ff.index(embed=False)
    assert (summary.read, summary.changed) == (1, 1)  # b.py is not read again
    assert [m.path for m in ff.grep("NEW_TEXT")] == ["a.py"]
    assert ff.grep("OLD_TEXT") == []


def test_verify_reads_every_file_and_writes_only_changed_ones(make_tree):
    root = make_tree({"a.py": "VALUE = 'OLD_TEXT'\n", "b.py": "OTHER = 1\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    summary = ff.index(embed=False, verify=True)
    assert (summary.read, summary.changed, summary.unchanged) == (2, 0, 2)
    _edit_keeping_size_and_mtime(root / "a.py", "VALUE = 'NEW_TEXT'\n")
    assert main(["index", str(root), "--verify", "--no-embed"]) == 0
    assert [m.path for m in ff.grep("NEW_TEXT")] == ["a.py"]


def test_size_cap_is_remembered_for_later_runs(make_tree):
    big = "x = 1\n" * 500_000  # 3 MB: over the default cap of 2 MiB
    root = make_tree({"big.py": big + "BIG_MARKER = 2\n", "small.py": "y = 2\n"})
    Fourfold(root, max_file_bytes=8_000_000).index(embed=False)
    later = Fourfold(root)  # as `fourfold watch` or the MCP server open it
    assert later.max_file_bytes == 8_000_000
    (root / "small.py").write_text("y = 3\n")
    summary = later.index(embed=False)
    assert summary.deleted == 0 and summary.files == 2
    assert [m.path for m in later.grep("BIG_MARKER")] == ["big.py"]


def test_unwritable_index_location_is_a_clear_error(make_tree, tmp_path):
    root = make_tree(CODE)
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(FourfoldError, match="cannot create index folder"):
        Fourfold(root, index_dir=blocker / "index")
