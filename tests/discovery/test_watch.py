"""The watcher watches the folders the walk visits, one by one: never what a shipped
symlink points at, and a folder that appears is watched from then on."""
import os
import shutil
import threading
import time
from contextlib import contextmanager

from fourfold.discovery.watch import watch_changes
from tests.conftest import write_tree


def inotify_watches() -> int:
    """How many inotify watches this process holds now (from /proc)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/self/fdinfo/{fd}") as info:
                count += sum(line.startswith("inotify wd:") for line in info)
        except OSError:
            pass  # closed meanwhile
    return count


@contextmanager
def watching(root):
    """watch_changes in a thread: the set of paths it reported so far; stopped on leaving."""
    seen: set[str] = set()
    stop = threading.Event()

    def run() -> None:
        for batch in watch_changes(root, None, stop, debounce_ms=50):
            seen.update(path for _, path in batch)

    before = inotify_watches()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while inotify_watches() == before and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)
    try:
        yield seen
    finally:
        stop.set()
        thread.join(timeout=5)
    assert not thread.is_alive()


def wait_for(condition, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)


def only_a_later_edit_is_seen(root, seen: set[str], later) -> None:
    """After a change that starts the watcher again (the batch names the root), an edit of
    the file `later` is reported, and nothing else."""
    wait_for(lambda: str(root) in seen)
    assert str(root) in seen
    seen.clear()
    later.write_text("changed later\n")
    wait_for(lambda: seen)
    time.sleep(0.2)
    assert seen == {str(later)}


def test_a_link_to_a_folder_outside_is_not_watched(tmp_path):
    outside = write_tree(tmp_path / "outside",
                         {f"d{i}/e{j}/f.txt": "x\n" for i in range(10) for j in range(10)})
    root = write_tree(tmp_path / "repo", {"src/a.py": "x = 1\n", "build/out.py": "x = 2\n",
                                          ".gitignore": "build/\n"})
    os.symlink(outside, root / "outside")
    before = inotify_watches()
    with watching(root) as seen:
        # the root and src/: not the 111 folders outside, nor the ignored build/
        assert inotify_watches() - before == 2
        (outside / "d0" / "e0" / "f.txt").write_text("changed\n")
        (root / "build" / "out.py").write_text("x = 3\n")
        (root / "src" / "a.py").write_text("x = 4\n")
        wait_for(lambda: str(root / "src" / "a.py") in seen)
        time.sleep(0.3)
    assert seen == {str(root / "src" / "a.py")}


def test_a_new_folder_is_watched_and_what_changed_meanwhile_is_found(tmp_path):
    root = write_tree(tmp_path / "repo", {"a.py": "x = 1\n"})
    with watching(root) as seen:
        (root / "new" / "deeper").mkdir(parents=True)
        # the watcher starts again on the new folders, then names the root: a whole walk
        wait_for(lambda: str(root) in seen)
        assert str(root / "new") in seen
        only_a_later_edit_is_seen(root, seen, root / "new" / "deeper" / "b.py")


def test_a_folder_no_longer_ignored_is_watched(tmp_path):
    root = write_tree(tmp_path / "repo", {"a.py": "x = 1\n", "gen/g.py": "g = 1\n",
                                          ".gitignore": "gen/\n"})
    with watching(root) as seen:
        (root / "gen" / "g.py").write_text("g = 2\n")
        (root / ".gitignore").write_text("")
        only_a_later_edit_is_seen(root, seen, root / "gen" / "g.py")


def test_a_folder_gone_before_it_is_watched_starts_the_watcher_again(tmp_path, monkeypatch):
    from fourfold.discovery import watch

    root = write_tree(tmp_path / "repo", {"a.py": "x = 1\n"})
    real = watch.watched_folders
    calls = []

    def walked_then_gone(*args):
        calls.append(args)
        return real(*args) | ({str(root / "gone")} if len(calls) == 1 else set())

    monkeypatch.setattr(watch, "watched_folders", walked_then_gone)
    with watching(root) as seen:
        (root / "a.py").write_text("x = 2\n")
        wait_for(lambda: str(root / "a.py") in seen)
    assert len(calls) == 2 and str(root) in seen and str(root / "a.py") in seen


def test_a_folder_deleted_and_made_again_in_one_batch_is_watched_again(tmp_path):
    """Its watch went with it, though the set of folders' names is the same (a branch
    switch that swaps a folder's files)."""
    root = write_tree(tmp_path / "repo", {"a.py": "x = 1\n", "d/old.py": "y = 1\n"})
    with watching(root) as seen:
        shutil.rmtree(root / "d")
        (root / "d").mkdir()
        (root / "d" / "new.py").write_text("y = 2\n")
        only_a_later_edit_is_seen(root, seen, root / "d" / "new.py")


def test_a_folder_that_became_a_file_before_it_was_watched_starts_the_watcher_again(
        tmp_path, monkeypatch):
    """watchfiles refuses a path below a file with an OSError that is no
    FileNotFoundError; the watcher walks again instead of dying."""
    from fourfold.discovery import watch

    root = write_tree(tmp_path / "repo", {"a.py": "x = 1\n"})
    real = watch.watched_folders
    calls = []

    def walked_then_a_file(*args):
        calls.append(args)
        return real(*args) | ({str(root / "a.py" / "d")} if len(calls) == 1 else set())

    monkeypatch.setattr(watch, "watched_folders", walked_then_a_file)
    with watching(root) as seen:
        (root / "a.py").write_text("x = 2\n")
        wait_for(lambda: str(root / "a.py") in seen)
    assert len(calls) == 2 and str(root / "a.py") in seen


def test_an_exclude_file_made_after_the_watcher_started_is_seen(tmp_path):
    root = write_tree(tmp_path / "repo", {"a.py": "x = 1\n", ".git/HEAD": "ref\n"})
    with watching(root) as seen:
        (root / ".git" / "HEAD").write_text("other\n")  # the rest of .git is not reported
        (root / ".git" / "info").mkdir()
        (root / ".git" / "info" / "exclude").write_text("a.py\n")
        wait_for(lambda: str(root) in seen)
        assert str(root) in seen and str(root / ".git" / "HEAD") not in seen
        seen.clear()
        (root / ".git" / "info" / "exclude").write_text("")
        wait_for(lambda: seen)
    assert str(root / ".git" / "info" / "exclude") in seen


def test_a_root_taken_away_and_made_again_is_watched_again(tmp_path):
    root = write_tree(tmp_path / "repo", {"src/a.py": "x = 1\n"})
    with watching(root) as seen:
        shutil.rmtree(root)
        wait_for(lambda: str(root / "src" / "a.py") in seen)
        write_tree(root, {"src/a.py": "x = 2\n"})
        time.sleep(1.5)  # the watcher looks for the root while nothing changes
        seen.clear()
        (root / "src" / "a.py").write_text("x = 3\n")
        wait_for(lambda: str(root / "src" / "a.py") in seen)
    assert str(root / "src" / "a.py") in seen


def test_the_batch_that_moves_folders_comes_once_the_new_watches_are_there(tmp_path):
    """With the root named in it: one whole walk, after the watcher started again, not
    one for the batch and another for the root."""
    root = write_tree(tmp_path / "repo", {"a.py": "x = 1\n"})
    batches: list[set[str]] = []
    stop = threading.Event()

    def run() -> None:
        for batch in watch_changes(root, None, stop, debounce_ms=50):
            batches.append({path for _, path in batch})

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    time.sleep(0.5)
    (root / "pkg").mkdir()
    wait_for(lambda: batches)
    time.sleep(0.6)
    stop.set()
    thread.join(timeout=5)
    assert batches == [{str(root), str(root / "pkg")}]


def test_a_folder_whose_name_is_not_utf8_is_not_watched_and_stops_nothing(tmp_path):
    root = write_tree(tmp_path / "repo", {"src/a.py": "x = 1\n"})
    odd = os.path.join(os.fsencode(root), b"caf\xe9")  # Latin-1, no UTF-8
    os.mkdir(odd)
    before = inotify_watches()
    with watching(root) as seen:
        assert inotify_watches() - before == 2  # the root and src/, as the walk lists them
        with open(os.path.join(odd, b"b.py"), "w") as handle:
            handle.write("y = 1\n")
        (root / "src" / "a.py").write_text("x = 2\n")
        wait_for(lambda: str(root / "src" / "a.py") in seen)
        time.sleep(0.3)
    assert seen == {str(root / "src" / "a.py")}
