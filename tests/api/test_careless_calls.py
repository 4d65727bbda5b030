"""The library under a careless caller's arguments: a clear QueryError, never a silently
emptied index, a wrong page or a raw TypeError."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fourfold import Fourfold, SearchOptions
from fourfold.errors import FourfoldError, QueryError
from tests.conftest import write_tree

FILES = {"app/util.py": "def helper(x):\n    return x + 1\n",
         "app/a.py": "from app.util import helper\n\n\ndef first():\n    return helper(1)\n",
         "app/b.py": "from app.util import helper\n\n\ndef second():\n    return helper(2)\n"}


@pytest.fixture()
def indexed(tmp_path):
    root = write_tree(tmp_path / "proj", FILES)
    ff = Fourfold(root)
    ff.index()
    return ff


@pytest.mark.parametrize("bad", [-1, 0.5, float("nan"), True, "100", 1 << 41])
def test_a_bound_on_file_size_is_checked_before_it_is_remembered(tmp_path, bad):
    """-1 skipped every file and was remembered for later runs; a float broke every later
    opening of the index (int() of the stored text)."""
    root = write_tree(tmp_path / "proj", FILES)
    Fourfold(root).index(embed=False)
    with pytest.raises(QueryError, match="max_file_bytes must be a whole number"):
        Fourfold(root, max_file_bytes=bad)
    assert len(Fourfold(root).list_files()) == 3


def test_a_bound_remembered_before_it_was_checked_is_not_used(tmp_path):
    root = write_tree(tmp_path / "proj", FILES)
    ff = Fourfold(root)
    ff.index(embed=False)
    for stored in (-1, "nan"):  # as an earlier release let them be written
        ff.store.set_setting(f"max_file_bytes:{ff.root}", stored)
        again = Fourfold(root)
        assert again.max_file_bytes == 2 * 1024 * 1024
        assert again.index(embed=False).files == 3


@pytest.mark.parametrize("paging", [{"limit": -1}, {"limit": 0}, {"offset": -1},
                                    {"limit": "5"}, {"offset": 1.5}])
def test_graph_pages_are_checked(indexed, paging):
    """related() returned all but the last row at limit -1 and the last row at offset -1."""
    for ask in (lambda: indexed.related("helper", **paging),
                lambda: indexed.references("helper", **paging),
                lambda: indexed.impact("helper", **paging)):
        with pytest.raises(QueryError, match="must be a whole number"):
            ask()
    page = indexed.related("helper", limit=1)
    assert (page["total"], len(page["results"]), page["next_offset"]) == (2, 1, 1)


@pytest.mark.parametrize("packing", [{"start": -1}, {"limit": 0}, {"max_tokens": None},
                                     {"max_tokens": 0}])
def test_packing_task_context_is_checked(indexed, packing):
    """start -1 wrapped around to the last span; limit 0 left a pager on the same page."""
    context = indexed.task_context("where is helper called")
    with pytest.raises(QueryError, match="must be a whole number"):
        context.pack(**packing)


@pytest.mark.parametrize("limit", [0, -5, None])
def test_similar_code_checks_the_limit_asked_for(indexed, limit):
    with pytest.raises(QueryError, match=f"limit must be a whole number from 1 to 10,000, "
                                         f"not {limit!r}"):
        indexed.similar_code("app/util.py", 2, limit=limit)
    assert indexed.similar_code("app/util.py", 2, limit=10_000)["capped"] is False
    with pytest.raises(QueryError, match="line must be a whole number"):
        indexed.similar_at("app/util.py", "2")


@pytest.mark.parametrize("options, message", [
    (SearchOptions(weights={"Text": 1.0}), "unknown modality 'Text'"),
    (SearchOptions(modalities=("Text",)), "unknown modality 'Text'"),
    (SearchOptions(modalities="text"), "modalities is a tuple of names"),
    (SearchOptions(modalities=("text",), weights={"structural": 1.0}),
     "weights name structural, which is not among the modalities asked"),
])
def test_search_names_only_known_and_asked_modalities(indexed, options, message):
    """Each answered nothing, silently (or split "text" into letters)."""
    with pytest.raises(QueryError, match=message):
        indexed.search("helper", options)
    assert indexed.search("helper", SearchOptions(modalities=("text",),
                                                  weights={"text": 1.0})).hits


def test_one_name_or_none_is_taken_where_several_are_expected(indexed):
    """"python" was split into letters ("unknown language 'p'"); None was a TypeError."""
    for languages in ("python", ["python"], None):
        assert indexed.search("helper", languages=languages).hits
    assert indexed.search("helper", kinds="function").hits
    with pytest.raises(QueryError, match="a language is named by a string, not 3"):
        indexed.search("helper", languages=[3])
    with pytest.raises(QueryError, match="a path glob is a string"):
        indexed.search("helper", path_glob=5)


def test_search_options_come_one_way(indexed):
    """Fields beside a SearchOptions were dropped; a misspelt field was a TypeError."""
    with pytest.raises(QueryError, match="not both \\(here also limit\\)"):
        indexed.search("helper", SearchOptions(limit=1), limit=5)
    with pytest.raises(QueryError, match="unexpected keyword argument 'limt'"):
        indexed.search("helper", limt=5)
    with pytest.raises(QueryError, match="options must be a SearchOptions, not dict"):
        indexed.search("helper", {"limit": 3})
    with pytest.raises(QueryError, match="not both \\(here also limit\\)"):  # its twin
        indexed.search_repositories("helper", None, SearchOptions(limit=1), limit=5)


def test_an_unknown_repository_id_is_not_called_unindexed(indexed):
    for ask in (lambda: indexed.grep("helper", repo_id=99),
                lambda: indexed.list_files(repo_id=99), lambda: indexed.map(repo_id=99)):
        with pytest.raises(QueryError, match="no repository with id 99"):
            ask()
    with pytest.raises(QueryError, match="no repository with id '1'"):
        indexed.grep("helper", repo_id="1")


def test_a_repository_is_named_by_its_id_as_a_number_too(indexed):
    """repository(1) was a TypeError from pathlib; the docstrings say ids are taken."""
    repo_id = indexed.repo_id()
    assert indexed.repository(repo_id) == indexed.repository(str(repo_id)) == repo_id
    with pytest.raises(QueryError, match="unknown repository '99'"):
        indexed.repository(99)
    with pytest.raises(QueryError, match="named by its name, root or id, not 1.5"):
        indexed.repository(1.5)


def test_repositories_to_search_or_remove_are_named_by_id_or_one_name(tmp_path):
    """remove_repositories([1]) was an AttributeError (str.strip of a number) and
    remove_repositories("proj") looked up one repository per letter."""
    index = tmp_path / "index"
    roots = [write_tree(tmp_path / name, FILES) for name in ("one", "two")]
    for root in roots:
        Fourfold(root, index_dir=index).index(embed=False)
    ff = Fourfold(roots[0], index_dir=index)
    two = ff.repository("two")
    assert ff.search_repositories("helper", two).repositories_searched == ["two"]
    assert ff.search_repositories("helper", [two]).repositories_searched == ["two"]
    for bad in ([None], [" "], [], [1.5], 0, [0]):
        with pytest.raises(QueryError):
            ff.remove_repositories(bad)
    with pytest.raises(QueryError, match="unknown repository '0'"):  # not "every one"
        ff.search_repositories("helper", 0)
    assert [r["name"] for r in ff.remove_repositories(two, dry_run=True)] == ["two"]
    assert [r["name"] for r in ff.remove_repositories("two")] == ["two"]
    assert [r.name for r in ff.store.repos(counts=False)] == ["one"]


def test_a_path_relative_to_the_root_is_found_from_a_subfolder(indexed, monkeypatch):
    """From a subfolder, outline("app/a.py") read as <subfolder>/app/a.py only."""
    monkeypatch.chdir(indexed.root / "app")
    assert [n["name"] for n in indexed.outline("app/a.py")] == ["first"]
    assert [n["name"] for n in indexed.outline("a.py")] == ["first"]  # relative to the cwd
    assert indexed.located("app/util.py") == (indexed.repo_id(), "app/util.py")
    with pytest.raises(FourfoldError, match="not in the index"):
        indexed.outline("app/none.py")


def test_the_file_system_root_is_not_taken_for_a_project():
    """Fourfold("/") made /.fourfold and would have walked /proc and /sys."""
    made = not (Path("/") / ".fourfold").exists()
    try:
        with pytest.raises(FourfoldError, match="file system's root"):
            Fourfold("/")
        assert not made or not (Path("/") / ".fourfold").exists()
    finally:
        if made and (Path("/") / ".fourfold").exists():
            shutil.rmtree("/.fourfold")


def test_a_question_during_another_process_first_index_is_told_to_wait(tmp_path):
    """While another process wrote a first index (nothing written yet), a question was told
    to run `fourfold index` itself."""
    from fourfold.errors import NotIndexedError
    from fourfold.store.index_dir import LOCK_NAME, IndexLock

    root = write_tree(tmp_path / "proj", FILES)
    ff = Fourfold(root)
    with IndexLock(ff.index_dir):  # as an indexer holds it (its pid written in the lock)
        with pytest.raises(NotIndexedError, match=f"being indexed \\(process {os.getpid()}\\)"):
            ff.grep("helper")
    with pytest.raises(NotIndexedError, match="not indexed yet; run `fourfold index"):
        ff.grep("helper")
    ended = subprocess.Popen(["true"])  # a killed indexer's pid, left in the lock file
    ended.wait()
    (ff.index_dir / LOCK_NAME).write_text(f"pid {ended.pid}")
    with pytest.raises(NotIndexedError, match="not indexed yet"):
        ff.grep("helper")


def test_a_planted_or_garbled_lock_file_names_no_indexer(tmp_path):
    """The lock file is read, not trusted: a symlink to a file naming a live process (this
    one) is not followed, text that is not "pid N" names no one, and neither does a live
    process that holds no lock on it (a killed indexer's pid given to another process); a
    held lock without its note (a full disk) names its holder as the system lists it."""
    from fourfold.store.index_dir import LOCK_NAME, IndexLock, indexer_at_work

    folder = tmp_path / "index"
    folder.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text(f"pid {os.getpid()}")
    (folder / LOCK_NAME).symlink_to(elsewhere)
    assert indexer_at_work(folder) is None
    (folder / LOCK_NAME).unlink()
    for garbled in (b"pid", b"pid -1", b"pid 1 2", b"\xff\xfe pid", b"process 1"):
        (folder / LOCK_NAME).write_bytes(garbled)
        assert indexer_at_work(folder) is None
    # a live process (this one) that holds no lock on it: a killed indexer's pid, reused
    (folder / LOCK_NAME).write_text(f"pid {os.getpid()}")
    assert indexer_at_work(folder) is None
    (folder / LOCK_NAME).unlink()
    with IndexLock(folder):
        assert indexer_at_work(folder) == os.getpid()
        # its pid note unwritten (a full disk): the holder as the system lists it
        os.truncate(folder / LOCK_NAME, 0)
        assert indexer_at_work(folder) == os.getpid()
    assert indexer_at_work(folder) is None


@pytest.mark.parametrize("call, message", [
    (lambda ff: ff.search(123), "the question must be text, not int"),
    (lambda ff: ff.search(b"helper"), "the question must be text, not bytes"),
    (lambda ff: ff.grep(5), "the pattern must be text, not int"),
    (lambda ff: ff.grep("helper", path_glob=5), "path_glob must be text, not int"),
    (lambda ff: ff.grep("helper", time_budget="10"), "time_budget is a number of seconds"),
    (lambda ff: ff.grep("helper", time_budget=float("nan")), "time_budget is a number"),
    (lambda ff: ff.grep("helper", time_budget=-1), "time_budget is a number"),
    (lambda ff: ff.definitions(5), "the name must be text, not int"),
    (lambda ff: ff.impact(["helper"]), "the name must be text, not list"),
    (lambda ff: ff.task_context(5), "the task must be text, not int"),
    (lambda ff: ff.importers(5), "the file or module must be text"),
    (lambda ff: ff.related(5, relation="imports"), "the path must be text"),
    (lambda ff: ff.definitions("helper", path_glob=5), "path_glob must be text"),
    (lambda ff: ff.list_files(glob=5), "the glob must be text"),
    (lambda ff: ff.list_files(name=5), "the name must be text"),
    (lambda ff: ff.symbols(5), "the kind must be text"),
    (lambda ff: ff.similar(5), "the location must be text"),
    (lambda ff: ff.outline(5), "the path must be text or a path, not int"),
    (lambda ff: ff.file_text(5), "the path must be text"),
    (lambda ff: ff.file_outline(5), "the path must be text"),
    (lambda ff: ff.line_count(5), "the path must be text"),
])
def test_a_wrongly_typed_argument_is_a_clear_error(indexed, call, message):
    """A number or bytes where text belongs reached `.strip()` or `len()` (an AttributeError
    or a TypeError from deep inside), or answered nothing as if the file were not indexed;
    a time budget of text failed at an addition."""
    with pytest.raises(QueryError, match=message):
        call(indexed)
    assert [(m.path, m.line) for m in indexed.grep("helper", time_budget=5)] == [
        ("app/a.py", 1), ("app/a.py", 5), ("app/b.py", 1), ("app/b.py", 5), ("app/util.py", 1)]


def test_any_real_number_of_seconds_is_a_time_budget_and_a_path_object_a_path(indexed):
    from fractions import Fraction

    import numpy as np

    for budget in (Fraction(1, 2), np.int64(5), np.float32(1.5), float("inf"), 3):
        assert len(indexed.grep("helper", time_budget=budget)) == 5
    assert [s["name"] for s in indexed.outline(Path(indexed.root) / "app/util.py")] == ["helper"]
