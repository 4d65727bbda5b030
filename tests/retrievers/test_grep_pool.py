"""A whole grep through many files searched by worker processes: the same lines, in the
same order, as the calling process finds by itself; partial past the time budget; and a
search by itself where the workers are busy or die."""
from __future__ import annotations

import pytest

from fourfold import Fourfold
from fourfold.retrievers import grep_pool

FILES = {f"pkg/m{i:02d}.py": (f"def job_{i}(x):\n    return x * {i}\n" * (i % 3 + 1)
                              + ("# TODO: élan Straße\n" if i % 4 == 0 else "")
                              + ("JOB_LIMIT = 3\n" if i % 5 == 0 else ""))
         for i in range(23)}
FILES["docs/notes.txt"] = "job_1 and job_2\nNothing here\n\ttodo: tabs\n"
CASES = [("job_1", {}), ("TODO", {"case_sensitive": True}), ("straße", {}),
         (r"job_\d+\(", {"regex": True}), ("x", {"whole_word": True}),
         (r"x \* [0-9]", {"regex": True, "case_sensitive": True}),
         ("return", {"path_glob": "pkg/m1*.py"})]


@pytest.fixture
def indexed(index_on_each_store):
    return index_on_each_store(FILES)[1]


def _lines(found) -> list[tuple[str, int, str]]:
    return [(m.path, m.line, m.text) for m in found]


def _by_itself(ff: Fourfold, monkeypatch, pattern: str, options: dict) -> list[tuple]:
    with monkeypatch.context() as searching_here:
        searching_here.setattr("fourfold.retrievers.text.POOL_MIN_FILES", 10**9)
        return _lines(ff.grep(pattern, **options))


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr("fourfold.retrievers.text.POOL_MIN_FILES", 1)
    monkeypatch.setattr(grep_pool, "POOL_BATCH", 2)


def test_workers_find_the_same_lines_in_the_same_order(indexed, monkeypatch, small_batches,
                                                       make_tree):
    pool_starts = []
    start = grep_pool.GrepPool._start
    monkeypatch.setattr(grep_pool.GrepPool, "_start",
                        lambda self: pool_starts.append(1) or start(self))
    for pattern, options in CASES:
        found = _lines(indexed.grep(pattern, **options))
        assert found and found == _by_itself(indexed, monkeypatch, pattern, options), pattern
    assert len(pool_starts) == len(CASES)  # every grep went through the workers
    processes = list(indexed.text._pool._processes)
    assert len(processes) == grep_pool.pool_workers() and all(p.poll() is None
                                                              for p in processes)
    # another repository of the store greps with the same workers
    where = ({"store_url": indexed.store_url} if indexed.store_url
             else {"index_dir": indexed.index_dir})
    indexer = Fourfold(make_tree({"other.py": "job_1 = 1\n"}, "other"), repository="other",
                       **where)
    indexer.index(embed=False)
    indexer.close()
    other = indexed.in_repository("other")
    assert other.text._pool is indexed.text._pool
    assert _lines(other.grep("job_1")) == [("other.py", 1, "job_1 = 1")]
    indexed.close()
    assert all(p.poll() is not None for p in processes)


def test_past_the_time_budget_the_lines_found_come_back_partial(indexed, small_batches):
    everything = _lines(indexed.grep("job"))
    cut = indexed.grep("job", time_budget=0)
    assert cut.partial and _lines(cut) == everything[:len(cut)]
    again = indexed.grep("job")  # what the workers still sent was read and dropped
    assert not again.partial and _lines(again) == everything


def test_busy_or_dead_workers_leave_the_grep_to_the_caller(indexed, monkeypatch,
                                                          small_batches):
    expected = _by_itself(indexed, monkeypatch, "job_1", {})
    assert _lines(indexed.grep("job_1")) == expected
    pool = indexed.text._pool
    first = list(pool._processes)
    first[0].kill()
    first[0].wait()
    assert _lines(indexed.grep("job_1")) == expected  # dead before: all started again
    assert len(pool._processes) == len(first) and not set(pool._processes) & set(first)
    receive = grep_pool.GrepPool._receive
    replies = []

    def dying(self, worker):  # a worker dies in the middle of a grep
        replies.append(worker)
        if len(replies) == 2:
            self._processes[worker].kill()
            self._processes[worker].wait()
        return receive(self, worker)

    monkeypatch.setattr(grep_pool.GrepPool, "_receive", dying)
    assert _lines(indexed.grep("job_1")) == expected  # found by the caller, from the start
    assert len(replies) == 2 and pool._processes == []  # stopped
    monkeypatch.setattr(grep_pool.GrepPool, "_receive", receive)
    assert _lines(indexed.grep("job_1")) == expected and not pool._processes  # a while
    pool._failed_at -= grep_pool.RESTART_AFTER_S
    assert _lines(indexed.grep("job_1")) == expected and pool._processes  # started again
    with pool._lock:  # another grep holds them
        searched = []
        by_itself = indexed.text._all_batches
        monkeypatch.setattr(indexed.text, "_all_batches",
                            lambda *a: searched.append(1) or by_itself(*a))
        assert _lines(indexed.grep("job_1")) == expected and searched == [1]


def test_a_partial_batch_ends_the_lines(indexed, monkeypatch, small_batches):
    """Past the budget a worker sends what it found and says so; the batches after it
    (other workers', searched meanwhile) are left out, so the lines are a prefix."""
    def batches(finder, file_ids, deadline):
        yield [(0, [(1, "first")])], False
        yield [(3, [(2, "cut here")])], True
        yield [(4, [(3, "after the cut")])], False

    monkeypatch.setattr(indexed.text._pool, "batches", batches)
    found = indexed.grep("job")
    assert found.partial and [m.text for m in found] == ["first", "cut here"]


def test_a_worker_error_stops_the_workers_and_the_caller_searches(indexed, monkeypatch,
                                                                  small_batches):
    expected = _by_itself(indexed, monkeypatch, "job", {})
    assert _lines(indexed.grep("job")) == expected
    pool = indexed.text._pool
    receive = grep_pool.GrepPool._receive
    calls = []

    def failing(self, worker):  # the last batch in flight answers with an error
        calls.append(worker)
        reply = receive(self, worker)
        if len(calls) == 3:
            raise OSError("grep worker: OperationalError: database is locked")
        return reply

    monkeypatch.setattr(grep_pool.GrepPool, "_receive", failing)
    assert _lines(indexed.grep("job")) == expected and pool._processes == []
    monkeypatch.setattr(grep_pool.GrepPool, "_receive", receive)
    pool._failed_at -= grep_pool.RESTART_AFTER_S
    assert _lines(indexed.grep("job")) == expected and pool._processes


def test_a_closed_pool_starts_no_workers(indexed, small_batches, monkeypatch):
    expected = _by_itself(indexed, monkeypatch, "job", {})
    pool = indexed.text._pool
    pool.close()
    assert _lines(indexed.grep("job")) == expected and pool._processes == []


def test_workers_do_not_run_modules_of_the_folder_they_start_in(indexed, small_batches,
                                                               monkeypatch, planted_modules):
    """A server started inside an untrusted repository: its pickle.py or json.py must not
    run in the workers."""
    expected = _by_itself(indexed, monkeypatch, "job", {})
    assert _lines(indexed.grep("job")) == expected
    assert indexed.text._pool._processes and not planted_modules.exists()


def test_workers_outlive_the_thread_that_started_them(indexed, small_batches):
    """A web server answers in threads that end when idle; the workers stay."""
    import threading
    import time

    found = []
    asking = threading.Thread(target=lambda: found.append(_lines(indexed.grep("job"))))
    asking.start()
    asking.join()
    processes = list(indexed.text._pool._processes)
    time.sleep(0.3)
    assert processes and all(p.poll() is None for p in processes)
    assert _lines(indexed.grep("job")) == found[0]
    assert indexed.text._pool._processes == processes  # the same ones
