"""The command line under a careless user's arguments: an index folder that holds the
repository, a mistyped folder, options out of range, a literal that starts with `-`,
nothing indexed behind the user's back."""
from __future__ import annotations

import json
import sqlite3

import pytest

from fourfold import Fourfold, SearchOptions
from fourfold.errors import FourfoldError, IndexDamagedError
from fourfold.interfaces.cli import main
from tests.conftest import write_tree

FILES = {"src/a.py": "def parse_options(argv):\n    return '--verbose' in argv\n",
         "src/b.py": "def helper():\n    return 1\n"}


def test_an_index_folder_holding_the_repository_is_refused(tmp_path, capsys):
    """Its `.gitignore` of `*` hid every file of a git project, and the index's own files
    were indexed."""
    project = write_tree(tmp_path / "work" / "proj", FILES)
    for index_dir in (tmp_path / "work", project):
        assert main(["index", str(project), "--index-dir", str(index_dir), "--no-embed"]) == 2
        assert "holds the repository" in capsys.readouterr().err
        assert not (index_dir / ".gitignore").exists()
        assert not (index_dir / "index.sqlite").exists()


def test_remove_with_a_path_that_is_not_there_removes_nothing(tmp_path, capsys):
    project = write_tree(tmp_path / "proj", FILES)
    Fourfold(project).index(embed=False)
    code = main(["remove", "proj", "--path", str(project / "typo" / "folder")])
    assert code == 2 and "no such folder" in capsys.readouterr().err
    assert Fourfold(project).repo_id() is not None


def test_commands_on_a_file_under_no_index_index_nothing(tmp_path, monkeypatch, capsys):
    elsewhere = write_tree(tmp_path / "elsewhere", {"notes.py": "x = 1\n"})
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["outline", str(elsewhere / "notes.py")]) == 2
    assert main(["similar", f"{elsewhere / 'notes.py'}:1"]) == 2
    assert "under no indexed folder" in capsys.readouterr().err
    assert not (here / ".fourfold").exists() and not (elsewhere / ".fourfold").exists()


def test_a_batch_names_at_most_one_repository(tmp_path, capsys):
    project = write_tree(tmp_path / "proj", FILES)
    batch = tmp_path / "q.jsonl"
    batch.write_text('{"id": 1, "query": "helper"}\n')
    code = main(["search", "--batch", str(batch), str(project), "--repository", "alpha",
                 "--repository", "beta"])
    assert code == 2 and "--batch asks one repository" in capsys.readouterr().err
    assert not (project / ".fourfold").exists()


@pytest.mark.parametrize("argv", [
    ["index", ".", "--max-file-bytes", "-1"], ["index", ".", "--max-file-bytes", "0"],
    ["index", ".", "--workers", "1000"], ["index", ".", "--workers", "0"],
    ["index", ".", "--wait", "-1"], ["index", ".", "--wait", "nan"],
    ["watch", ".", "--debounce-ms", "-5"], ["grep", "x", ".", "--time-budget", "-1"],
    ["serve", ".", "--port", "70000"], ["ui", ".", "--port", "-1"],
])
def test_options_out_of_range_are_refused(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and "must be" in capsys.readouterr().err
    assert not (tmp_path / ".fourfold").exists()


def test_remove_of_an_empty_name_is_an_error(tmp_path, capsys):
    project = write_tree(tmp_path / "proj", FILES)
    Fourfold(project).index(embed=False)
    assert main(["remove", "", "--path", str(project)]) == 2
    assert "name the repositories to remove" in capsys.readouterr().err


def test_a_literal_starting_with_a_dash_is_searched_after_two_dashes(tmp_path, capsys):
    project = write_tree(tmp_path / "proj", FILES)
    Fourfold(project).index(embed=False)
    capsys.readouterr()
    assert main(["grep", "--", "--verbose", str(project)]) == 0
    assert "src/a.py:2:" in capsys.readouterr().out


def test_a_read_only_index_is_not_called_damaged(tmp_path):
    """As root in a test, permissions do not stop a write: SQLite's own error is mapped."""
    ff = Fourfold(write_tree(tmp_path / "proj", FILES))
    failure = ff.store._failure(sqlite3.OperationalError("attempt to write a readonly database"))
    assert isinstance(failure, FourfoldError) and not isinstance(failure, IndexDamagedError)
    assert "not writable" in str(failure) and "--rebuild" not in str(failure)


def test_serve_on_a_port_in_use_says_so_before_claiming_it_serves(tmp_path, capsys):
    import socket

    project = write_tree(tmp_path / "proj", FILES)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", str(project), "--no-watch", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "web page on" not in err
    assert main(["serve", str(project), "--no-watch", "--host", "nosuchhost.invalid",
                 "--port", "0", "--token", "t0ken"]) == 2
    assert "cannot listen on nosuchhost.invalid" in capsys.readouterr().err


def test_a_blank_token_is_refused():
    """The gate strips what a client sends: a server of a blank token let no one in."""
    from fourfold.interfaces.http import resolve_token

    with pytest.raises(FourfoldError, match="the token is blank"):
        resolve_token("0.0.0.0", "   ")
    assert resolve_token("0.0.0.0", " t0ken ") == " t0ken "


def test_a_defect_is_one_line_unless_debugging(tmp_path, monkeypatch, capsys):
    from fourfold.interfaces import cli

    def broken(args):
        raise RuntimeError("a defect")

    monkeypatch.setattr(cli, "cmd_status", broken)
    project = write_tree(tmp_path / "proj", FILES)
    assert main(["status", str(project)]) == 2
    err = capsys.readouterr().err
    assert "internal error (RuntimeError: a defect)" in err and "Traceback" not in err
    monkeypatch.setenv("FOURFOLD_DEBUG", "1")
    with pytest.raises(RuntimeError):
        main(["status", str(project)])


def test_a_page_past_the_end_of_a_graph_answer_says_so(tmp_path, capsys):
    project = write_tree(tmp_path / "proj", {
        "lib.py": "def target():\n    return 1\n",
        "a.py": "from lib import target\n\n\ndef one():\n    return target()\n",
        "b.py": "from lib import target\n\n\ndef two():\n    return target()\n"})
    Fourfold(project).index(embed=False)
    capsys.readouterr()
    main(["refs", "target", str(project), "--limit", "1"])
    assert "# 1 of 2 shown; next page: --offset 1" in capsys.readouterr().out
    main(["refs", "target", str(project), "--offset", "5"])
    out = capsys.readouterr().out
    assert "None" not in out and "# none past --offset 5: there are 2" in out


def test_a_line_separator_in_a_file_name_is_shown_escaped(tmp_path, capsys):
    project = write_tree(tmp_path / "proj", {"odd\u2028name.py": "needle_ls = 1\n"})
    Fourfold(project).index(embed=False)
    capsys.readouterr()
    assert main(["grep", "needle_ls", str(project)]) == 0
    out = capsys.readouterr().out
    assert "\u2028" not in out and "odd\\u2028name.py" in out


@pytest.mark.parametrize("command", [["index"], ["search", "helper"], ["grep", "helper"]])
def test_an_unknown_embedding_model_is_refused_before_any_work(command, tmp_path, capsys):
    """It was found out after the index run, which then exited 0 without vectors."""
    project = write_tree(tmp_path / "proj", FILES)
    code = main([*command[:1], *command[1:], str(project), "--embedder", "bogus"])
    assert code == 2
    err = capsys.readouterr().err
    assert "unknown embedding model 'bogus'" in err and "openai[:MODEL]" in err
    assert not (project / ".fourfold").exists()


def test_grep_with_a_limit_says_whether_more_lines_match(tmp_path, capsys):
    project = write_tree(tmp_path / "proj",
                         {"a.py": "".join(f"marker_{n} = {n}\n" for n in range(5))})
    Fourfold(project).index(embed=False)
    for limit, more in ((3, True), (5, False), (9, False)):
        assert main(["grep", "marker_", str(project), "--limit", str(limit), "--json"]) == 0
        out, err = capsys.readouterr()
        payload = json.loads(out)
        assert payload["total"] == len(payload["results"]) == min(limit, 5)
        assert payload["total_is_lower_bound"] is more
        assert ("more match (raise --limit)" in err) is more


def test_status_of_a_folder_never_indexed_makes_no_index(tmp_path, capsys):
    """It made an index and called each of its empty modalities ready."""
    project = write_tree(tmp_path / "proj", FILES)
    assert main(["status", str(project)]) == 1
    assert f"no index at {project / '.fourfold'}" in capsys.readouterr().out
    assert main(["status", str(project), "--json"]) == 1
    payload = json.loads(capsys.readouterr().out)
    assert (payload["repositories"], payload["modalities"], payload["total"]) == ([], {}, 0)
    assert not (project / ".fourfold").exists()
    Fourfold(project).index(embed=False)
    assert main(["status", str(project), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["total"] == 1 and payload["modalities"]["text"] == "ready"
    assert main(["remove", "proj", "--path", str(project)]) == 0
    capsys.readouterr()
    assert main(["status", str(project), "--json"]) == 1  # an index that holds nothing now
    assert json.loads(capsys.readouterr().out)["modalities"] == {}


@pytest.mark.parametrize("command", [["grep", "token_"], ["def", "unit_1"], ["files"],
                                     ["map"]])
def test_answers_from_an_unfinished_first_index_say_so(command, tmp_path, monkeypatch,
                                                      capsys):
    """Only search said that another process still wrote the first index."""
    import fourfold.indexer as indexer
    from fourfold.store.index_dir import IndexLock
    from fourfold.store.sqlite import SQLiteStore

    project = write_tree(tmp_path / "proj", {f"m{i:02}.py": f"def unit_{i}():\n"
                                             f"    return 'token_{i}'\n" for i in range(40)})
    monkeypatch.setattr(indexer, "ANSWERING_EVERY_S", 0.0)  # answerable at each batch
    monkeypatch.setattr(indexer, "BATCH_FILES", 8)  # five batches
    write, batches = SQLiteStore.write_batch, []

    def stopped_midway(self, *args):
        batches.append(args)
        if len(batches) == 3:
            raise KeyboardInterrupt
        return write(self, *args)

    monkeypatch.setattr(SQLiteStore, "write_batch", stopped_midway)
    with pytest.raises(KeyboardInterrupt):
        Fourfold(project).index(embed=False, workers=1)
    monkeypatch.setattr(SQLiteStore, "write_batch", write)
    with IndexLock(project / ".fourfold"):  # another indexer goes on writing it
        assert main([*command[:1], *command[1:], str(project)]) != 2
    assert "the first index is still being written (40 files in all)" in \
        capsys.readouterr().err
    assert main([*command[:1], *command[1:], str(project)]) != 2  # finishes it
    assert "still being written" not in capsys.readouterr().err


def test_index_reports_the_files_it_read_and_not_its_wait(tmp_path, capsys):
    """It said every file's bytes were read on a run that read none, and counted the wait
    for another indexer as the run's time."""
    import threading
    import time

    from fourfold.store.index_dir import IndexLock

    project = write_tree(tmp_path / "proj", FILES)
    assert main(["index", str(project), "--no-embed"]) == 0
    assert ", 2 read, in " in capsys.readouterr().out
    lock = IndexLock(project / ".fourfold").__enter__()  # another indexer, for 1.5 s
    threading.Timer(1.5, lock.__exit__, (None, None, None)).start()
    started = time.monotonic()
    assert main(["index", str(project), "--no-embed", "--wait", "10", "--json"]) == 0
    assert time.monotonic() - started >= 1.5
    summary = json.loads(capsys.readouterr().out)
    assert (summary["read"], summary["unchanged"]) == (0, 2) and summary["seconds"] < 1.0


def test_a_text_word_index_gone_is_reported_and_mended(tmp_path, capsys):
    """With its meta file deleted, ranked text answers were empty while status said
    ready."""
    from fourfold.store.index_dir import CHUNK_INDEX_NAME

    project = write_tree(tmp_path / "proj", FILES)
    Fourfold(project).index(embed=False)
    (project / ".fourfold" / CHUNK_INDEX_NAME / "meta.json").unlink()
    reader = Fourfold(project)
    assert "word index" in reader.status()["modalities"]["text"]
    response = reader.search("parse options verbose", SearchOptions(modalities=("text",)))
    assert not response.hits and "word index" in response.unavailable["text"]
    # a command that indexes on first use mends it first
    assert main(["search", "parse options verbose", str(project), "--modality", "text",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["path"] == "src/a.py"
    assert reader.status()["modalities"]["text"] == "ready"


def test_a_rebuild_waits_for_no_process_to_have_the_index_open(tmp_path, capsys):
    """A server or watcher left on the deleted database answered from it, and its watcher
    wrote into it, until started again."""
    import subprocess
    import sys

    project = write_tree(tmp_path / "proj", FILES)
    first = Fourfold(project)
    first.index(embed=False)
    first.close()  # an object left open in this process holds the index too
    holder = subprocess.Popen(  # another process with the index open, until stdin closes
        [sys.executable, "-c", "import sys; from fourfold import Fourfold; "
         "ff = Fourfold(sys.argv[1]); print('open', flush=True); sys.stdin.read()",
         str(project)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        assert main(["index", str(project), "--rebuild", "--no-embed"]) == 2
        assert "is open in another process" in capsys.readouterr().err
        check = Fourfold(project)
        assert check.is_indexed()  # nothing was deleted
        check.close()
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    assert main(["index", str(project), "--rebuild", "--no-embed", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["added"] == 2
