"""Incremental indexing, crash safety, locking and bad input."""
import os
import pickle
import threading
import time
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path

import pytest

from fourfold import Fourfold
from fourfold.errors import IndexBusyError
from fourfold.store.index_dir import IndexLock
from fourfold.model import Chunk, Symbol
from fourfold.discovery.walk import walk_paths
from tests.conftest import write_tree


def test_incremental_reindex_reads_only_the_changed_file(make_tree):
    files = {f"pkg{i // 100}/mod{i}.py": f"def func_{i}(x):\n    return x + {i}\n"
             for i in range(1000)}
    root = make_tree(files)
    ff = Fourfold(root)
    first = ff.index()
    assert first.files == 1000 and first.added == 1000
    target = root / "pkg3/mod345.py"
    target.write_text("def renamed_function(x):\n    return x * 2\n")
    started = time.perf_counter()
    second = ff.index()
    elapsed = time.perf_counter() - started
    assert second.read == 1 and second.changed == 1 and second.added == 0
    assert elapsed < 1.0
    assert [d["path"] for d in ff.definitions("renamed_function")] == ["pkg3/mod345.py"]
    assert not [d for d in ff.definitions("func_345") if d["match"] == "exact"]
    (root / "pkg0/mod7.py").unlink()
    third = ff.index()
    assert third.deleted == 1
    assert not ff.grep("func_7(", case_sensitive=True)


def test_touch_without_change_rewrites_nothing(make_tree):
    root = make_tree({"a.py": "x = 1\n"})
    ff = Fourfold(root)
    ff.index()
    os.utime(root / "a.py", ns=(1, 1))
    summary = ff.index()
    assert summary.read == 1 and summary.changed == 0 and summary.unchanged == 1


def test_a_new_parser_reads_every_file_again(make_tree, monkeypatch):
    from fourfold import indexer
    root = make_tree({"a.py": "def alpha():\n    return beta()\n", "b.py": "def beta():\n    pass\n"})
    ff = Fourfold(root)
    ff.index()
    assert ff.index().read == 0
    monkeypatch.setattr(indexer, "parser_fingerprint", lambda: "a later parser")
    summary = ff.index()
    assert summary.read == 2 and summary.changed == 2
    assert ff.index().read == 0
    assert [d["path"] for d in ff.definitions("beta")] == ["b.py"]
    assert [r["path"] for r in ff.references("beta")["results"]] == ["a.py"]


def test_bad_input_is_skipped_with_reasons(make_tree):
    root = make_tree({
        "good.py": "def ok():\n    return 1\n",
        "blob.dat2": b"\x00\x01\x02binary",
        "latin.py": b"name = '\xe9t\xe9'  # not utf-8\ndef latin_func():\n    pass\n",
        "locked.py": "def hidden():\n    pass\n",
    })
    os.chmod(root / "locked.py", 0)
    try:
        ff = Fourfold(root)
        summary = ff.index()
    finally:
        os.chmod(root / "locked.py", 0o644)
    if os.geteuid() == 0:  # root reads a file whatever its mode
        assert summary.skipped == {"binary": 1} and summary.files == 4
        assert [d["path"] for d in ff.definitions("hidden")] == ["locked.py"]
    else:
        assert summary.skipped == {"binary": 1, "unreadable file": 1}
        assert ff.definitions("hidden") == []
    assert ff.definitions("latin_func")[0]["path"] == "latin.py"
    # invalid bytes decoded with replacement
    assert [(m.path, m.line, m.text) for m in ff.grep("\ufffdt\ufffd")] == [
        ("latin.py", 1, "name = '\ufffdt\ufffd'  # not utf-8")]


def test_file_deleted_during_indexing_is_reported(make_tree, monkeypatch):
    from fourfold import indexer
    root = make_tree({"a.py": "x = 1\n", "b.py": "y = 2\n"})
    real = indexer.read_file

    def vanish(found, **options):
        if found.path == "b.py":
            os.unlink(found.abspath)
        return real(found, **options)
    monkeypatch.setattr(indexer, "read_file", vanish)
    summary = Fourfold(root).index(workers=1)
    assert summary.skipped.get("deleted during indexing") == 1


def test_crash_mid_index_keeps_previous_index_usable(make_tree, monkeypatch):
    from fourfold import indexer
    files = {f"m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(600)}
    root = make_tree(files)
    ff = Fourfold(root)
    ff.index()
    for i in range(600):
        (root / f"m{i}.py").write_text(f"def g{i}():\n    return {i}\n")
    real = indexer.read_file
    calls = {"n": 0}

    def crash(found, **options):
        calls["n"] += 1
        if calls["n"] == 400:
            raise KeyboardInterrupt
        return real(found, **options)
    monkeypatch.setattr(indexer, "read_file", crash)
    with pytest.raises(KeyboardInterrupt):
        ff.index(workers=1)
    # every file is at exactly its old or its new version, never missing: the batches
    # written before the 400th read hold new versions, the 15 read since then are lost
    versions = {f.path: [s.name for s in ff.store.symbols_of_file(f.file_id)]
                for f in ff.store.files()}
    assert len(versions) == 600
    new = sorted(p for p, names in versions.items() if names == ["g" + p[1:-3]])
    old = sorted(p for p, names in versions.items() if names == ["f" + p[1:-3]])
    assert len(new) + len(old) == 600
    assert len(new) == 399 // indexer.BATCH_FILES * indexer.BATCH_FILES == 384
    monkeypatch.setattr(indexer, "read_file", real)
    ff.index()
    assert ff.definitions("g599")[0]["path"] == "m599.py"


def test_second_indexer_is_refused(make_tree):
    root = make_tree({"a.py": "x = 1\n"})
    ff = Fourfold(root)
    with IndexLock(ff.index_dir):
        with pytest.raises(IndexBusyError, match="another fourfold indexer"):
            ff.index()
    assert ff.index().files == 1


def test_a_full_disk_at_the_lock_is_an_index_write_error_and_queries_answer(make_tree,
                                                                            monkeypatch):
    """On a full disk the lock still locks without the note of its holder's pid; where the
    lock file cannot be made the run fails with IndexWriteError (not an internal error),
    and a question after a first index that stopped answers from what was written."""
    import errno

    from fourfold.errors import IndexWriteError
    from fourfold.store import index_dir

    root = make_tree({"a.py": "def alpha():\n    return 1\n"})
    ff = Fourfold(root)
    real_write = os.write

    def full(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}").endswith(index_dir.LOCK_NAME):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", full)
    assert ff.index(embed=False).files == 1
    with IndexLock(ff.index_dir):  # it locks
        with pytest.raises(IndexBusyError):
            ff.index(embed=False)
    monkeypatch.undo()

    def no_file(path, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    (ff.index_dir / index_dir.LOCK_NAME).unlink()
    monkeypatch.setattr(index_dir, "open_private", no_file)
    with pytest.raises(IndexWriteError, match="No space left on device; free some space"):
        ff.index(embed=False)
    ff.store.set_setting(f"unfinished:{ff.repo_id()}", 1)  # as a first index that stopped
    assert ff.ensure_indexed() is None
    assert [d["path"] for d in ff.definitions("alpha")] == ["a.py"]


def test_second_indexer_waits_for_the_first_when_asked(make_tree):
    root = make_tree({"a.py": "x = 1\n"})
    ff = Fourfold(root)
    held, release = threading.Event(), threading.Event()

    def first_indexer() -> None:
        with IndexLock(ff.index_dir):
            held.set()
            release.wait(10)

    holder = threading.Thread(target=first_indexer)
    holder.start()
    held.wait(5)
    started = time.monotonic()
    with pytest.raises(IndexBusyError):
        ff.index(embed=False, wait_s=0.3)
    assert time.monotonic() - started >= 0.3
    threading.Timer(0.4, release.set).start()
    assert ff.index(embed=False, wait_s=10).files == 1
    holder.join(5)


def test_index_folder_ignores_itself(make_tree):
    root = make_tree({"a.py": "x = 1\n"})
    ff = Fourfold(root)
    ff.index()
    assert (root / ".fourfold" / ".gitignore").read_text().strip().endswith("*")
    assert ff.index().files == 1


def test_an_index_without_references_is_read_again_by_a_full_run(make_tree):
    from fourfold.indexer import index_repository
    root = make_tree({"a.py": "def alpha():\n    return beta()\n", "b.py": "def beta():\n    pass\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    assert ff.references("beta")["results"]
    summary = index_repository(ff.store, ff.root, ff.indexing_lock(),
                               skip_dirs=(str(ff.index_dir),), build_graph=False)
    assert summary.read == 2 and not ff.store.all_edges()
    assert index_repository(ff.store, ff.root, ff.indexing_lock(), skip_dirs=(str(ff.index_dir),),
                            build_graph=False).read == 0
    assert ff.index(embed=False).read == 2
    assert [r["path"] for r in ff.references("beta")["results"]] == ["a.py"]


@contextmanager
def watching(ff: Fourfold):
    """ff.watch in a thread, once its first run is done: the list of its runs' summaries;
    stopped on leaving."""
    summaries, stop = [], threading.Event()
    watcher = threading.Thread(target=ff.watch, daemon=True,
                               kwargs={"on_index": summaries.append, "stop": stop,
                                       "embed": False, "debounce_ms": 100})
    watcher.start()
    deadline = time.monotonic() + 10
    while not summaries and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.3)
    try:
        yield summaries
    finally:
        stop.set()
        watcher.join(timeout=5)
    assert not watcher.is_alive()


def test_watch_waits_for_another_indexer_then_indexes_the_change(make_tree):
    root = make_tree({"a.py": "def alpha():\n    return 1\n"})
    ff = Fourfold(root)
    with watching(ff) as summaries:
        assert summaries and summaries[0].added == 1
        with IndexLock(ff.index_dir):  # another process is indexing when the change arrives
            (root / "a.py").write_text("def alpha():\n    return 'edited_while_busy'\n")
            time.sleep(0.6)
            assert len(summaries) == 1
        deadline = time.monotonic() + 10
        while not ff.grep("edited_while_busy") and time.monotonic() < deadline:
            time.sleep(0.02)
    assert summaries[1].changed == 1
    assert [m.path for m in ff.grep("edited_while_busy")] == ["a.py"]


def test_watch_sees_a_change_made_while_its_first_run_indexes(make_tree):
    """The files are watched from the start: a change saved before the first run returns
    is indexed by the next one (watching only after the first run missed it)."""
    root = make_tree({"a.py": "def alpha():\n    return 1\n"})
    ff = Fourfold(root)
    summaries, stop = [], threading.Event()

    def on_index(summary) -> None:
        summaries.append(summary)
        if len(summaries) == 1:
            (root / "a.py").write_text("def alpha():\n    return 'saved_during_the_run'\n")

    watcher = threading.Thread(target=ff.watch, daemon=True,
                               kwargs={"on_index": on_index, "stop": stop, "embed": False,
                                       "debounce_ms": 50})
    watcher.start()
    deadline = time.monotonic() + 10
    while not (summaries and ff.grep("saved_during_the_run")) and time.monotonic() < deadline:
        time.sleep(0.02)  # a save seen as two batches (truncated, then written) takes two runs
    stop.set()
    watcher.join(timeout=5)
    assert not watcher.is_alive()
    assert {s.changed for s in summaries[1:] if s.changed} == {1}
    assert [m.path for m in ff.grep("saved_during_the_run")] == ["a.py"]


def test_parsed_records_cross_processes_whole():
    # the parser processes send these to the indexer; each pickles through its own __reduce__,
    # which must name every field (a field added later and left out would be lost)
    records = [Symbol("save", "User.save", "method", 3, 9, "def save(self)", "Saves.", "User"),
               Chunk(3, 9, "def save(self): ...", "User.save", "symbol")]
    for record in records:
        assert len(record.__reduce__()[1]) == len(fields(record))
    assert pickle.loads(pickle.dumps(records)) == records


def test_a_path_too_long_for_an_index_entry_is_left_out(make_tree):
    deep = "/".join(["d" * 200] * 6)  # 1,206 bytes: over MAX_PATH_BYTES
    root = make_tree({f"{deep}/buried.py": "def buried():\n    pass\n",
                      "names.py": "def short():\n    pass\n"})
    ff = Fourfold(root)
    summary = ff.index(embed=False)
    assert summary.skipped.get("path over 1024 bytes") == 1
    assert [f["path"] for f in ff.list_files()] == ["names.py"]


def test_a_file_whose_shared_parse_left_the_store_is_parsed_and_kept_under_this_parser(
        make_tree, tmp_path, monkeypatch):
    """A content held at another path is taken from the store; when that parse is gone by
    the time it is asked for, the file is read and parsed again, and its document is still
    the one this run's parser wrote (a later branch finds and shares it)."""
    from fourfold.parsing import parser_fingerprint
    from fourfold.store.sqlite import SQLiteStore

    source = "def shared_helper(value):\n    return value\n"
    index = {"index_dir": tmp_path / "index"}
    first = Fourfold(make_tree({"a/util.py": source}, "first"), **index)
    first.index(embed=False)
    monkeypatch.setattr(SQLiteStore, "parse_of", lambda self, content, language, parser: None)
    second = Fourfold(make_tree({"b/util.py": source}, "second"), **index)
    summary = second.index(embed=False)
    assert (summary.added, summary.reused) == (1, 0)
    assert ("b/util.py", second.store.file_states(second.repo_id())["b/util.py"].hash) in \
        second.store.held_documents(second.repo_id(), parser_fingerprint())
    assert [d["path"] for d in second.definitions("shared_helper")] == ["b/util.py"]
    first.close()
    second.close()


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_the_same_bytes_in_another_language_are_parsed_in_that_language(
        make_tree, tmp_path, request, store):
    """A parse is taken from the store only for the same content in the same language: the
    bytes of a.py renamed a.txt define nothing, and notes.txt renamed notes.py defines its
    functions, in another repository of the index and in the same one re-indexed."""
    python = "class Alpha:\n    def run(self):\n        return helper()\n"
    notes = "def beta():\n    return 1\n"
    where = ({"store_url": request.getfixturevalue("postgres_url")} if store == "postgres"
             else {"index_dir": tmp_path / "index"})
    first = Fourfold(make_tree({"a.py": python, "notes.txt": notes}, "first"), **where)
    first.index(embed=False)
    second = Fourfold(make_tree({"a.txt": python, "notes.py": notes}, "second"), **where)
    second.index(embed=False)
    assert [s["name"] for s in second.file_outline("a.txt")] == []
    assert [s["name"] for s in second.file_outline("notes.py")] == ["beta"]
    assert [d["path"] for d in second.definitions("beta")] == ["notes.py"]
    assert [d["path"] for d in second.definitions("Alpha")] == []
    from fourfold.parsing import parser_fingerprint
    content = second.store.file_states(second.repo_id())["a.txt"].hash
    held = second.store.parsed_contents(parser_fingerprint())
    assert {(content, "python"), (content, "text")} <= held, held
    assert [s.name for s in second.store.parse_of(content, "python", parser_fingerprint())[0]
            ] == ["Alpha", "run"]
    assert second.store.parse_of(content, "text", parser_fingerprint())[0] == []
    (first.root / "a.py").rename(first.root / "a.txt")
    (first.root / "notes.txt").rename(first.root / "notes.py")
    first.index(embed=False)
    assert [s["name"] for s in first.file_outline("a.txt")] == []
    assert [d["path"] for d in first.definitions("beta")] == ["notes.py"]
    assert first.definitions("Alpha") == []
    first.close()
    second.close()


def test_parser_workers_collect_their_garbage_while_the_indexer_pauses_its_own():
    """The indexing process pauses its cyclic collector; a forked parser must not inherit
    the pause, or a parse's cyclic garbage would pile up for the whole run."""
    import gc
    import multiprocessing

    from fourfold.collector import collector_paused
    from fourfold.indexer import _start_worker

    with collector_paused():
        assert not gc.isenabled()
        with multiprocessing.get_context("fork").Pool(
                1, initializer=_start_worker, initargs=(frozenset(), frozenset())) as pool:
            assert pool.apply(gc.isenabled) is True


def test_parser_processes_embed_what_they_parse_as_the_embedding_phase_would(make_tree):
    """On the parser pool the static model embeds each parsed file there; the vectors are
    those the embedding phase after parsing makes (one parser, no pool)."""
    files = {f"pkg/module_{i}.py": "".join(
        f"def handler_{i}_{j}(request, retries={j}):\n    '''Parse the body of request {j}.'''\n"
        f"    return parse_config(request.body, retries)\n\n\n" for j in range(40))
        for i in range(60)}
    assert sum(len(text) for text in files.values()) > 256 * 1024  # enough for the pool
    vectors = {}
    for workers in (2, 1):
        root = make_tree(files, name=f"repo{workers}")
        ff = Fourfold(root)
        summary = ff.index(workers=workers)
        assert summary.embedded == 60 * 40
        assert summary.embedded_while_parsing == (60 * 40 if workers == 2 else 0)
        vectors[workers] = dict(ff.store._conn().execute(
            "SELECT embed_hash, vec FROM vectors").fetchall())
        assert ff.search("parse the body of a request", modalities=["semantic"]).hits
        if workers == 2:  # vectors held: later runs embed only chunks new to the index
            for path in files:
                (root / path).write_text(files[path] + f"def added_{path[11:-3]}():\n    pass\n")
            again = ff.index(workers=2)
            assert (again.changed, again.embedded, again.embedded_while_parsing) == (60, 60, 0)
        ff.close()
    assert len(vectors[2]) == 60 * 40 and vectors[2] == vectors[1]


def test_parsed_files_are_written_before_the_graph_is_resolved(make_tree, monkeypatch):
    """An edit answers grep and search before a big repository's graph is worked on: every
    parsed file is in the store when resolution starts."""
    from fourfold import indexer

    ff = Fourfold(make_tree(_linked_modules()))
    written = []
    resolve = indexer._start_resolving

    def noting(store, repo_id, *args):
        written.append(len(store.file_states(repo_id)))
        return resolve(store, repo_id, *args)

    monkeypatch.setattr(indexer, "_start_resolving", noting)
    ff.index(workers=2, embed=False)
    assert written == [50]
    assert ff.references("run_3")  # and the graph was resolved


def test_a_run_over_changed_paths_reads_only_them(make_tree):
    root = make_tree({"pkg/a.py": "def alpha():\n    return 1\n",
                      "pkg/b.py": "def beta():\n    return alpha()\n",
                      "old/c.py": "def gamma():\n    return 3\n",
                      "old/d.py": "def delta():\n    return 4\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    (root / "pkg/a.py").write_text("def alpha():\n    return 'scoped_edit'\n")
    (root / "pkg/b.py").write_text("def beta():\n    return 'not_reported'\n")
    for name in ("c.py", "d.py"):
        (root / "old" / name).unlink()
    (root / "old").rmdir()
    run = ff.index(embed=False, changed=[str(root / "pkg/a.py"), str(root / "old")])
    assert run.changed_paths == ["pkg/a.py"] and run.read == 1
    assert (run.changed, run.deleted) == (1, 2)
    assert [m.path for m in ff.grep("scoped_edit")] == ["pkg/a.py"]
    assert not ff.grep("not_reported")  # a change no watcher reported is not looked at
    assert not ff.grep("gamma")
    assert ff.index(embed=False).changed == 1  # a whole walk finds it
    assert [m.path for m in ff.grep("not_reported")] == ["pkg/b.py"]


def test_a_run_over_changed_paths_walks_the_tree_where_it_must(make_tree):
    root = make_tree({"a.py": "x = 1\n", "skip.py": "y = 2\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    (root / ".gitignore").write_text("skip.py\n")
    (root / "b.py").write_text("z = 'unreported_file'\n")
    run = ff.index(embed=False, changed=[str(root / ".gitignore")])
    assert run.changed_paths is None and run.added == 2 and run.deleted == 1
    assert ff.grep("unreported_file") and not ff.grep("y = 2")


def test_the_graph_left_for_later_catches_up(make_tree):
    root = make_tree({"a.py": "def helper():\n    return 1\n",
                      "b.py": "from a import helper\n\ndef main():\n    return helper()\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    (root / "c.py").write_text("from a import helper\n\ndef later():\n    return helper()\n")
    run = ff.index(embed=False, changed=[str(root / "c.py")], graph_later=True)
    assert run.graph_behind and run.added == 1
    assert [m.path for m in ff.grep("def later")] == ["c.py"]  # answers at once
    assert ff.behind()["graph"] and ff.status()["modalities"]["graph"].startswith("building")
    callers = {r["symbol"] for r in ff.references("helper")["results"]}
    assert callers == {"main"}  # the graph as it was
    response = ff.search("who calls helper")
    assert "catching up" in response.unavailable["graph"]
    given_up = threading.Event()
    given_up.set()  # a change came first: nothing is done, nothing is lost
    assert ff.catch_up(interrupted=given_up) is False and ff.behind()["graph"]
    assert ff.catch_up() is True and not ff.behind()["graph"]
    assert {r["symbol"] for r in ff.references("helper")["results"]} == {"main", "later"}
    assert ff.status()["modalities"]["graph"] == "ready"
    assert "graph" not in ff.search("who calls helper").unavailable
    # a whole run after one that left the graph behind resolves it, changed files or not
    ff.index(embed=False, changed=[str(root / "c.py")], graph_later=True)
    (root / "c.py").write_text("from a import helper\n\ndef renamed():\n    return helper()\n")
    ff.index(embed=False, changed=[str(root / "c.py")], graph_later=True)
    ff.index(embed=False)
    assert not ff.behind()["graph"]
    assert {r["symbol"] for r in ff.references("helper")["results"]} == {"main", "renamed"}


def slow_catch_up(*args):
    """A big repository's catch-up: what the child process runs in the test below."""
    import fourfold.api
    time.sleep(30)
    return fourfold.api._catch_up_elsewhere(*args)


def _serving_children() -> list[int]:
    """This process's children that run a Spawned function."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as stat, open(f"/proc/{entry}/cmdline") as cmd:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
                if parent == os.getpid() and "fourfold.graph.forked" in cmd.read():
                    found.append(int(entry))
        except (OSError, ValueError):
            continue
    return found


def test_a_catch_up_given_up_midway_leaves_the_index_whole(make_tree, monkeypatch):
    import fourfold.api

    root = make_tree({"a.py": "def helper():\n    return 1\n",
                      "b.py": "from a import helper\n\ndef main():\n    return helper()\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    (root / "a.py").write_text("def helper():\n    return 'edited'\n")
    ff.index(embed=False, changed=[str(root / "a.py")], graph_later=True)
    original = fourfold.api._catch_up_elsewhere
    monkeypatch.setattr(fourfold.api, "_catch_up_elsewhere", slow_catch_up)
    monkeypatch.setattr(fourfold.api, "_catch_up", None)  # the work is the child's alone
    change = threading.Event()
    threading.Timer(1.0, change.set).start()
    started = time.perf_counter()
    assert ff.catch_up(interrupted=change) is False
    assert time.perf_counter() - started < 5
    while _serving_children() and time.perf_counter() - started < 5:
        time.sleep(0.02)  # stopped, not waited for
    assert not _serving_children()
    assert ff.behind()["graph"]
    (root / "a.py").write_text("def helper():\n    return 'edited again'\n")
    ff.index(embed=False, changed=[str(root / "a.py")], graph_later=True)  # not locked out
    monkeypatch.setattr(fourfold.api, "_catch_up_elsewhere", original)
    assert ff.catch_up() and not ff.behind()["graph"]
    assert [r["symbol"] for r in ff.references("helper")["results"]] == ["main"]
    assert [m.path for m in ff.grep("'edited again'")] == ["a.py"]


def test_changed_files_get_vectors_and_codes_without_retaking_every_code(make_tree):
    root = make_tree({f"m{i}.py": f"def job_{i}(x):\n    return x * {i}\n" for i in range(20)})
    ff = Fourfold(root)
    ff.index()
    repo_id, model = ff.repo_id(), ff.semantic.embedder.name
    mean = ff.store.code_mean(repo_id, model)

    def chunk_ids() -> set[int]:
        return {c.chunk_id for f in ff.store.files(repo_id)
                for c in ff.store.chunks_of_file(f.file_id)}

    def coded() -> set[int]:
        return set(ff.store.nearest_codes(repo_id, model, bytes(len(mean) // 32), 10_000))

    (root / "m3.py").write_text("def parse_invoice_total(text):\n    return sum(text)\n")
    (root / "new.py").write_text("def render_invoice_pdf(doc):\n    return doc\n")
    run = ff.index(changed=[str(root / "m3.py"), str(root / "new.py")], graph_later=True)
    assert run.embedded == 2
    assert ff.store.code_mean(repo_id, model) == mean  # codes added, not all retaken
    assert coded() == chunk_ids()  # the old chunks' codes went with them
    assert ff.behind() == {"graph": True, "codes": True}
    hits = ff.search("render invoice pdf", modalities=["semantic"]).hits
    assert hits and hits[0].path == "new.py"
    assert ff.catch_up() and ff.behind() == {"graph": False, "codes": False}
    assert ff.store.code_mean(repo_id, model) != mean and coded() == chunk_ids()


def test_codes_are_taken_anew_only_once_a_share_of_chunks_changed(make_tree):
    from fourfold.semantic.indexing import CODES_RETAKE_SHARE

    files = 64
    root = make_tree({f"m{i}.py": f"def job_{i}(x):\n    return x * {i}\n" for i in range(files)})
    ff = Fourfold(root)
    ff.index()
    repo_id, model = ff.repo_id(), ff.semantic.embedder.name
    mean = ff.store.code_mean(repo_id, model)
    allowed = int(files * CODES_RETAKE_SHARE)  # one chunk a file
    assert allowed >= 2

    edits = iter(range(1000))

    def edit(i: int) -> None:  # new text each time: one chunk to code
        (root / f"m{i}.py").write_text(f"def edited_{i}_{next(edits)}(x):\n    return x\n")
        ff.index(changed=[str(root / f"m{i}.py")], graph_later=True)

    for i in range(allowed):  # within the allowance: codes added, no retake owed
        edit(i)
        assert ff.behind()["codes"] is False
    assert ff.catch_up() and ff.store.code_mean(repo_id, model) == mean
    edit(allowed)  # one chunk past it
    assert ff.behind()["codes"] is True
    assert ff.catch_up() and ff.behind()["codes"] is False
    retaken = ff.store.code_mean(repo_id, model)
    assert retaken != mean
    edit(0)  # the allowance starts again from the new mean
    assert ff.behind()["codes"] is False
    for i in range(1, allowed):  # a removed file's chunks count too
        (root / f"m{i}.py").unlink()
        run = ff.index(changed=[str(root / f"m{i}.py")], graph_later=True)
        assert run.deleted_chunks == 1 and ff.behind()["codes"] is False
    (root / f"m{allowed}.py").unlink()
    ff.index(changed=[str(root / f"m{allowed}.py")], graph_later=True)
    assert ff.behind()["codes"] is True
    assert ff.catch_up() and ff.store.code_mean(repo_id, model) != retaken


def test_a_forked_child_does_not_outlive_its_killed_parent():
    import signal
    import subprocess
    import sys

    def alive(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().split()[2] != "Z"  # a zombie has ended
        except FileNotFoundError:
            return False

    program = ("import time\n"
               "from fourfold.graph.forked import Forked\n"
               "print(Forked.start(time.sleep, 60).process.pid, flush=True)\n"
               "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert alive(child)
    os.kill(parent.pid, signal.SIGKILL)  # no chance to stop its child itself
    parent.wait()
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


def _linked_modules() -> dict[str, str]:
    """50 modules calling each other, enough source to be parsed on the pool."""
    files = {f"pkg/module_{i}.py": f"from pkg.module_{(i + 1) % 50} import run_{(i + 1) % 50}\n"
             + "".join(f"def run_{i}_{j}():\n    return run_{(i + 1) % 50}()\n\n" for j in range(150))
             for i in range(50)}
    assert sum(len(text) for text in files.values()) > 256 * 1024
    return files


def test_vectors_and_codes_are_taken_while_the_child_resolves_the_graph(make_tree, monkeypatch):
    """The vectors the parsers made are put, and the binary codes taken, before the graph
    the forked child resolves is taken back and written."""
    import fourfold.graph.build as build
    from fourfold.semantic import indexing

    ff = Fourfold(make_tree(_linked_modules()))
    taken, stored = indexing.refresh_codes, build.store_graph
    seen = []

    def taking(store, model, repo_id):
        seen.append(("codes", ff.behind()["graph"], store.vector_count(model)))
        return taken(store, model, repo_id)

    def storing(store, repo_id, graph):
        seen.append(("graph",))
        return stored(store, repo_id, graph)

    monkeypatch.setattr(indexing, "refresh_codes", taking)
    monkeypatch.setattr(build, "store_graph", storing)
    summary = ff.index(workers=2)
    chunks = 50 * 151  # a chunk a function, and each module's import line
    assert summary.embedded_while_parsing == summary.embedded == chunks
    assert seen == [("codes", True, chunks), ("graph",)]  # the graph came from the child
    assert not ff.behind()["graph"] and ff.references("run_3")
    assert ff.search("run 3", modalities=["semantic"]).hits
    # Later runs embed after parsing, the cheap model beside the graph too
    seen.clear()
    for path in (Path(ff.root) / "pkg").iterdir():
        path.write_text(path.read_text() + "\ndef added():\n    return 1\n")
    again = ff.index(workers=2)
    assert (again.changed, again.embedded_while_parsing, again.embedded) == (50, 0, 50)
    assert seen == [("codes", True, chunks + 50), ("graph",)]


def test_a_model_that_is_not_cheap_embeds_after_the_graph(make_tree, monkeypatch):
    """It may take longer than the graph, which is not held back for it."""
    import fourfold.graph.build as build
    from fourfold.semantic import indexing, names

    monkeypatch.setattr(names, "embeds_while_parsing", lambda name: False)
    ff = Fourfold(make_tree(_linked_modules()))
    taken, stored = indexing.refresh_codes, build.store_graph
    seen = []
    monkeypatch.setattr(indexing, "refresh_codes", lambda store, model, repo_id: (
        seen.append(("codes", ff.behind()["graph"])), taken(store, model, repo_id))[1])
    monkeypatch.setattr(build, "store_graph", lambda store, repo_id, graph: (
        seen.append(("graph",)), stored(store, repo_id, graph))[1])
    summary = ff.index(workers=2)
    assert (summary.embedded_while_parsing, summary.embedded) == (0, 50 * 151)
    assert seen == [("graph",), ("codes", False)]
    assert ff.search("run 3", modalities=["semantic"]).hits


def test_embedding_that_fails_while_the_graph_is_resolved_stops_the_child(make_tree,
                                                                           monkeypatch):
    import multiprocessing

    from fourfold.semantic import indexing

    ff = Fourfold(make_tree(_linked_modules()))

    def failing(store, model, repo_id):
        raise RuntimeError("no room for codes")

    monkeypatch.setattr(indexing, "refresh_codes", failing)
    with pytest.raises(RuntimeError, match="no room for codes"):
        ff.index(workers=2)
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []
    assert ff.is_indexed() and ff.behind()["graph"]  # the files answer; the graph is owed
    assert ff.store.vector_count(ff.semantic.embedder.name) == 50 * 151  # vectors kept
    monkeypatch.undo()
    again = ff.index(workers=2)
    assert again.read == 0 and not ff.behind()["graph"] and ff.references("run_3")


def test_the_files_answer_while_the_graph_is_resolved(make_tree, monkeypatch):
    import fourfold.graph.build as build

    root = make_tree({"a.py": "def helper():\n    return 1\n",
                      "b.py": "from a import helper\n\ndef main():\n    return helper()\n"})
    resolve = build.rebuild_graph
    seen = []

    def watched_rebuild(*args, **kwargs):  # another process asks meanwhile
        other = Fourfold(root)
        seen.append(([m.path for m in other.grep("def main")], other.behind()["graph"],
                     other.status()["modalities"]["graph"]))
        return resolve(*args, **kwargs)

    monkeypatch.setattr(build, "rebuild_graph", watched_rebuild)
    ff = Fourfold(root)
    ff.index(embed=False)  # the first run: nothing answered before the files were written
    assert seen == [(["b.py"], True, "building: catching up with changed files: answers "
                                     "use the graph as it was")]
    assert not ff.behind()["graph"] and ff.references("helper")["total"] == 1


def test_a_run_stopped_while_resolving_leaves_the_graph_to_the_next(make_tree, monkeypatch):
    import fourfold.graph.build as build

    root = make_tree({"a.py": "def helper():\n    return 1\n",
                      "b.py": "from a import helper\n\ndef main():\n    return helper()\n"})
    resolve = build.rebuild_graph

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(build, "rebuild_graph", stopped)
    ff = Fourfold(root)
    with pytest.raises(KeyboardInterrupt):
        ff.index(embed=False)
    assert ff.is_indexed() and ff.behind()["graph"]  # the files answer; the graph is owed
    assert [m.path for m in ff.grep("def main")] == ["b.py"]
    monkeypatch.setattr(build, "rebuild_graph", resolve)
    run = ff.index(embed=False)
    assert run.read == 0 and not ff.behind()["graph"]
    assert ff.references("helper")["total"] == 1


def test_a_first_index_answers_while_it_is_written_and_is_finished_later(make_tree,
                                                                         monkeypatch):
    import fourfold.indexer as indexer
    from fourfold.store.sqlite import SQLiteStore

    root = make_tree({f"m{i:02}.py": f"def unit_{i}():\n    return 'token_{i}'\n"
                      for i in range(40)})
    monkeypatch.setattr(indexer, "ANSWERING_EVERY_S", 0.0)  # marked answerable at each batch
    monkeypatch.setattr(indexer, "BATCH_FILES", 8)  # five batches
    write, batches = SQLiteStore.write_batch, []

    def stopped_midway(self, *args):
        batches.append(args)
        if len(batches) == 3:
            raise KeyboardInterrupt  # Ctrl-C while the first index is written
        return write(self, *args)

    monkeypatch.setattr(SQLiteStore, "write_batch", stopped_midway)
    with pytest.raises(KeyboardInterrupt):
        Fourfold(root).index(embed=False, workers=1)
    monkeypatch.setattr(SQLiteStore, "write_batch", write)
    other = Fourfold(root)
    assert other.is_indexed()  # what was written answers
    assert [m.path for m in other.grep("token_3'")] == ["m03.py"]
    assert not other.grep("token_39")
    response = other.search("token_3")
    assert "still being written (40 files in all)" in response.unavailable["text"]
    assert other.status()["modalities"]["text"].startswith("building: the first index")
    finished = other.ensure_indexed()  # a search finishes what was stopped
    assert finished is not None and finished.added == 40 - 16
    assert [m.path for m in other.grep("token_39")] == ["m39.py"]
    assert "text" not in other.search("token_3").unavailable
    assert other.status()["modalities"]["text"] == "ready"
    assert other.ensure_indexed() is None


def _fts5_segments(conn, table: str) -> int:
    """The segments an FTS5 index is in (a data row's id holds its segment's number from
    bit 37 on; segment 0 is the index's own records)."""
    return conn.execute(f"SELECT count(DISTINCT id >> 37) FROM {table}_data "
                        "WHERE id >> 37 > 0").fetchone()[0]


@pytest.mark.parametrize("merge_after", [1, 10_000])
@pytest.mark.parametrize("workers", [1, 2])
def test_a_large_run_merges_the_text_indexes(make_tree, monkeypatch, merge_after, workers):
    """A run that wrote many files leaves the symbol token and trigram indexes merged (one
    segment each), so the next edit's commit has nothing of the bulk load left to merge and
    a grep reads each trigram once; a smaller run leaves them as written. Lookups are the
    same either way. With parser processes, the merge is made while a forked child
    resolves the graph."""
    from fourfold import indexer

    monkeypatch.setattr(indexer, "BATCH_FILES", 1)  # a segment per file
    monkeypatch.setattr(indexer, "MERGE_AFTER_FILES", merge_after)
    monkeypatch.setattr(indexer, "PARALLEL_BYTES", 0)  # the pool, and the forked child
    root = make_tree({f"m{i}.py": f"def parse_job_{i}(x):\n    return x\n" for i in range(12)})
    ff = Fourfold(root)
    ff.index(workers=workers)
    conn = ff.store._conn()
    for table in ("symbol_tokens", "content_trigrams"):
        segments = _fts5_segments(conn, table)
        assert (segments == 1) == (merge_after == 1), (table, segments)
        conn.execute(f"INSERT INTO {table}({table}) VALUES('integrity-check')")
    assert len(ff.store.symbols_by_token(["job"])) == 12
    assert len(ff.grep("parse_job_")) == 12


def test_a_large_run_interrupted_while_embedding_has_merged_the_trigram_index(
        make_tree, monkeypatch):
    """The merge comes before the embedding that runs beside the graph's child: a first
    index stopped there (Ctrl-C) is not left in many segments, which the next, smaller
    run would not merge."""
    from fourfold import indexer

    monkeypatch.setattr(indexer, "BATCH_FILES", 1)
    monkeypatch.setattr(indexer, "MERGE_AFTER_FILES", 1)
    monkeypatch.setattr(indexer, "PARALLEL_BYTES", 0)

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Fourfold, "embed", interrupted)
    root = make_tree({f"m{i}.py": f"def parse_job_{i}(x):\n    return x\n" for i in range(12)})
    ff = Fourfold(root)
    with pytest.raises(KeyboardInterrupt):
        ff.index(workers=2)
    assert _fts5_segments(ff.store._conn(), "content_trigrams") == 1
    assert len(ff.grep("parse_job_")) == 12


def test_chunks_of_files_are_bounded_in_files_and_bytes(tmp_path):
    from fourfold.discovery.walk import walk
    from fourfold.indexer import _chunks

    sizes = [100, 100, 100, 701, 100, 2000, 100, 100, 100, 100, 100]
    for i, size in enumerate(sizes):
        (tmp_path / f"f{i:02}.txt").write_text("x" * size)
    found = sorted(walk(tmp_path).files, key=lambda f: f.path)
    chunks = _chunks(found, 4, 1000)
    assert [[f.size for f in chunk] for chunk in chunks] == [
        [100, 100, 100], [701, 100], [2000], [100, 100, 100, 100], [100]]
    assert [f for chunk in chunks for f in chunk] == found


def test_files_parsed_ahead_of_the_writer_are_bounded_in_bytes(tmp_path, monkeypatch):
    """However slow the writer, the files handed to the parsers and not yet taken back
    hold a few chunks, or at most AHEAD_BYTES (and one chunk), of source: a parsed file
    takes many times its size in memory."""
    import multiprocessing

    import fourfold.indexer as indexer_module
    from fourfold.discovery.walk import walk

    for i in range(40):
        (tmp_path / f"mod_{i:02}.py").write_text("".join(
            f"def function_{i:02}_{j:04}(value):\n    return value + {j:04}\n"
            for j in range(8000)))
    found = walk(tmp_path).files
    size = found[0].size
    assert {f.size for f in found} == {size} and 256 * 1024 < size < 512 * 1024  # a chunk each
    fork = multiprocessing.get_context("fork")
    handed: list[int] = []

    class Recording:  # the pool the indexer gets, counting the bytes handed to it
        def Pool(self, *args, **kwargs):
            pool = fork.Pool(*args, **kwargs)
            apply_async = pool.apply_async

            def recorded(function, args):
                handed.append(sum(f.size for f in args[0]))
                return apply_async(function, args)
            pool.apply_async = recorded
            return pool

    monkeypatch.setattr(multiprocessing, "get_context", lambda method: Recording())
    monkeypatch.setattr(indexer_module, "AHEAD_BYTES", 3 * size)
    taken, most_ahead = [], 0
    for record, _ in indexer_module._parse_all(found, 2, True):
        taken.append(record.path)
        most_ahead = max(most_ahead, sum(handed) - len(taken) * size)
        time.sleep(0.01)  # a slow writer
    assert taken == [f.path for f in found]
    assert most_ahead == 3 * size  # without the bound in bytes: 8 chunks (4 a worker)


def test_a_spawned_child_runs_no_module_of_the_folder_it_starts_in(planted_modules):
    """A watcher started inside an untrusted repository: its pickle.py or json.py must not
    run in the catch-up's new interpreter."""
    from fourfold.graph.forked import Spawned

    child = Spawned.start(os.path.join, "a", "b")
    assert child is not None and child.result("failed") == os.path.join("a", "b")
    assert not planted_modules.exists()


def test_watch_sees_changes_below_folders_a_generic_filter_would_drop(tmp_path):
    """The watcher's filter tested every part of the absolute path against names such as
    .venv and node_modules: a repository inside a .venv (an editable install's checkout)
    was never re-indexed, and files the walk indexes under node_modules never either."""
    root = write_tree(tmp_path / ".venv" / "src" / "proj",
                      {"a.py": "x = 1\n", "node_modules/lib/i.js": "var x = 1;\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    with watching(ff):
        (root / "a.py").write_text("y = 'MARK_VENV'\n")
        (root / "node_modules/lib/i.js").write_text("var MARK_NODE = 1;\n")
        deadline = time.monotonic() + 20
        while not (ff.grep("MARK_VENV") and ff.grep("MARK_NODE")) \
                and time.monotonic() < deadline:
            time.sleep(0.05)
    assert [m.path for m in ff.grep("MARK_VENV")] == ["a.py"]
    assert [m.path for m in ff.grep("MARK_NODE")] == ["node_modules/lib/i.js"]


def test_a_change_through_a_link_out_of_the_root_needs_no_whole_walk(make_tree, tmp_path):
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    root = make_tree({"a.py": "x = 1\n"})
    os.symlink(outside, root / "link")
    changed = walk_paths(root, [str(root / "link" / "deep" / "o.txt")])
    assert changed is not None and not changed.report.files


def test_watch_indexes_files_of_a_folder_made_while_watching(make_tree):
    """Folders are watched one by one: a new folder's files, written before and after the
    watcher starts again on it, are indexed."""
    root = make_tree({"a.py": "x = 1\n"})
    ff = Fourfold(root)
    with watching(ff):
        (root / "pkg" / "sub").mkdir(parents=True)
        (root / "pkg" / "sub" / "first.py").write_text("FIRST_MARK = 1\n")
        deadline = time.monotonic() + 20
        while not ff.grep("FIRST_MARK") and time.monotonic() < deadline:
            time.sleep(0.05)
        (root / "pkg" / "sub" / "second.py").write_text("SECOND_MARK = 1\n")
        while not ff.grep("SECOND_MARK") and time.monotonic() < deadline:
            time.sleep(0.05)
    assert [m.path for m in ff.grep("FIRST_MARK")] == ["pkg/sub/first.py"]
    assert [m.path for m in ff.grep("SECOND_MARK")] == ["pkg/sub/second.py"]


def test_files_parsed_are_written_once_a_batch_of_files_or_of_bytes_is_pending(
        make_tree, monkeypatch):
    """Big writes commit less often (each commit writes the text indexes' new segments);
    the bytes held back are bounded too, so that a run of large files is written soon."""
    import fourfold.indexer as indexer
    from fourfold.store.sqlite import SQLiteStore

    small = {f"s{i:02}.py": f"def small_{i}():\n    return {i}\n" for i in range(24)}
    large = {f"t{i:02}.py": f"def large_{i}():\n    return '{'x' * 400}'\n" for i in range(6)}
    root = make_tree({**small, **large})
    monkeypatch.setattr(indexer, "BATCH_FILES", 8)
    monkeypatch.setattr(indexer, "BATCH_BYTES", 1000)
    read, parsed = indexer.read_file, []
    write, written = SQLiteStore.write_batch, []

    def counted_read(found, **options):
        parsed.append(found.path)
        return read(found, **options)

    def counted_write(self, repo_id, records, *rest):
        if records:  # how many files were parsed and not yet written, as this one came
            written.append((len(parsed) - sum(len(w[1]) for w in written),
                            [r.path for r in records]))
        return write(self, repo_id, records, *rest)

    monkeypatch.setattr(indexer, "read_file", counted_read)
    monkeypatch.setattr(SQLiteStore, "write_batch", counted_write)
    Fourfold(root).index(embed=False, workers=1)
    assert sum(len(paths) for _, paths in written) == 30
    small_writes = [paths for _, paths in written if paths[0].startswith("s")]
    large_writes = [(pending, paths) for pending, paths in written if paths[0].startswith("t")]
    assert [len(paths) for paths in small_writes] == [8, 8, 8]  # by count
    # by bytes: each as soon as three large files (over 1,000 bytes) are pending
    assert [(pending, len(paths)) for pending, paths in large_writes] == [(3, 3), (3, 3)]


def test_a_write_takes_files_up_to_a_count_and_up_to_their_bytes(monkeypatch):
    import fourfold.indexer as indexer
    from types import SimpleNamespace

    monkeypatch.setattr(indexer, "BATCH_FILES", 4)
    monkeypatch.setattr(indexer, "BATCH_BYTES", 100)

    def taken(*sizes):
        return indexer._batch_size([SimpleNamespace(size=size) for size in sizes])

    assert taken() == 0
    assert taken(10, 10, 10, 10, 10, 10) == 4  # the count
    assert taken(40, 40, 40, 40) == 3  # the bytes: the file reaching 100 included
    assert taken(500, 10) == 1  # a large file goes alone
    assert taken(10, 90, 10) == 2


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_a_moved_checkout_leaves_no_file_size_bound_for_a_later_one_at_its_old_folder(
        tmp_path, request, store):
    """The --max-file-bytes remembered for a folder is forgotten when the repository moves
    out of it (and with the repository on removal): a different repository checked out
    there later reads files of the default size."""
    import shutil

    from fourfold.store.base import max_file_bytes_setting
    from tests.conftest import write_tree

    where = ({"store_url": request.getfixturevalue("postgres_url")} if store == "postgres"
             else {"index_dir": tmp_path / "index"})
    big = "x = 1\n" * 100  # 600 bytes
    one = write_tree(tmp_path / "one", {"big.py": big})
    first = Fourfold(one, repository="acme/app", max_file_bytes=200, **where)
    assert first.index(embed=False).skipped
    first.close()
    two = tmp_path / "two"
    shutil.move(one, two)
    moved = Fourfold(two, repository="acme/app", max_file_bytes=200, **where)
    moved.index(embed=False)
    assert moved.store.setting(max_file_bytes_setting(str(one)), 0) == 0
    moved.remove_repositories(["acme/app"])
    moved.close()
    write_tree(one, {"big.py": big})
    later = Fourfold(one, repository="other/proj", **where)
    summary = later.index(embed=False)
    assert (summary.files, summary.skipped) == (1, {})
    later.close()


def test_files_the_store_holds_are_read_here_and_only_the_others_parsed_on_the_pool(
        make_tree, tmp_path, monkeypatch):
    """A fresh checkout's files (or another snapshot's unchanged ones) cost a read and a
    hash, cheaper here than a round trip to a parser process: the pool starts only for
    files to parse, and only where they are enough to pay for it."""
    from fourfold import indexer

    pools, parsed = [], []
    stop, chunks = indexer._stop_pool, indexer._chunks
    monkeypatch.setattr(indexer, "_stop_pool", lambda pool: (pools.append(1), stop(pool)))
    monkeypatch.setattr(indexer, "_chunks", lambda found, *rest: (
        parsed.append(sorted(f.path for f in found)), chunks(found, *rest))[1])
    padding = "# a line to make the file big enough for the pool\n" * 600
    files = {f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n{padding}" for i in range(12)}
    index_dir = tmp_path / "index"
    first = Fourfold(make_tree(files), index_dir=index_dir).index(workers=2, embed=False)
    assert (first.added, pools) == (12, [1])  # parsed on the pool
    checkout = Fourfold(make_tree(files, name="checkout"), index_dir=index_dir)
    summary = checkout.index(workers=2, embed=False)
    assert (summary.added, summary.shared, pools) == (12, 12, [1])  # no pool
    changed = {**files, "pkg/m3.py": f"def changed_here():\n    return 3\n{padding}"}
    snapshot = Fourfold(make_tree(changed, name="next"), index_dir=index_dir)
    summary = snapshot.index(workers=2, embed=False)
    assert (summary.shared, summary.read, pools) == (11, 12, [1])  # one file: parsed here
    assert [d["path"] for d in snapshot.definitions("changed_here")] == ["pkg/m3.py"]
    assert not [d for d in snapshot.definitions("f3") if d["match"] == "exact"]
    many = {**files, **{f"pkg/m{i}.py": f"def renamed_{i}():\n    return {i}\n{padding}"
                        for i in range(10)}}
    later = Fourfold(make_tree(many, name="later"), index_dir=index_dir)
    summary = later.index(workers=2, embed=False)
    assert (summary.shared, pools) == (2, [1, 1])  # ten files: parsed on the pool, alone
    assert parsed[-1] == [f"pkg/m{i}.py" for i in range(10)]
    assert [d["path"] for d in later.definitions("renamed_7")] == ["pkg/m7.py"]
    assert [d["path"] for d in later.definitions("f11")] == ["pkg/m11.py"]
