"""The command line as a user runs it: exit codes, JSON output, clear errors."""
import json
import signal
import socket
import subprocess
import sys
import time

import pytest

from fourfold.semantic.embedder import DEFAULT_MODEL

PROJECT = {
    "app/config.py": '''
        """Configuration loading."""
        import json


        def parse_config(path):
            """Read a JSON config file."""
            with open(path) as handle:
                return json.load(handle)


        class Settings:
            def __init__(self, path):
                self.values = parse_config(path)

            def get(self, key):
                return self.values[key]
        ''',
    "app/main.py": '''
        from app.config import Settings, parse_config


        def run():
            settings = Settings("app.json")
            raw = parse_config("other.json")
            raise ConnectionError("ECONNREFUSED while starting")
        ''',
    "web/server.ts": '''
        export function startServer(port: number): void {
          console.log("listening", port);
        }
        ''',
}


def fourfold(*args, cwd=None):
    result = subprocess.run([sys.executable, "-m", "fourfold.interfaces.cli", *args],
                            capture_output=True, text=True, cwd=cwd)
    return result.returncode, result.stdout, result.stderr


@pytest.fixture
def project(make_tree):
    return make_tree(PROJECT)


def test_search_indexes_on_first_use_and_answers_json(project):
    code, out, err = fourfold("search", "def parse_config", str(project), "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["intent"] == "find_definition"
    assert payload["fusion_strategy"] == "direct"
    first = payload["results"][0]
    assert (first["path"], first["start_line"], first["symbol"]) == ("app/config.py", 6,
                                                                     "parse_config")


def test_search_explain_shows_routing_votes_and_priors(project):
    code, out, err = fourfold("search", "how is the config file parsed", str(project),
                              "--explain")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("# intent understand_code")
    assert lines[1] == ("# weights semantic 0.3, text 0.4, structural 0.3; k 5; "
                        f"semantic model {DEFAULT_MODEL}")
    header = [line for line in lines if line.startswith("# ")]
    assert header[-1].startswith("# timings ") and "total" in header[-1]
    first, why = lines[len(header)], lines[len(header) + 1]
    assert first.startswith("app/config.py:")
    assert why.startswith("    = ") and "text #" in why and "file_name ×1.50" in why
    code, out, _ = fourfold("search", "how is the config file parsed", str(project), "--json")
    payload = json.loads(out)
    hit = payload["results"][0]
    assert set(hit["ranks"]) == set(hit["contributions"]) and hit["factors"]["file_name"] == 1.5
    assert payload["semantic_model"] == DEFAULT_MODEL


def test_explain_says_a_function_answer_was_named_in_the_question(capsys):
    from fourfold.interfaces.cli import _print_hit_explanation
    from fourfold.model import Hit

    _print_hit_explanation(Hit("app/config.py", 3, 9, 0.1, symbol="parse", named=True))
    assert capsys.readouterr().out == (
        "    = no votes · named in the question: placed after the first answers\n")


def test_grep_exit_codes_and_regex_errors(project):
    assert fourfold("index", str(project))[0] == 0
    code, out, _ = fourfold("grep", "econnrefused", str(project))
    assert code == 0 and out.strip() == 'app/main.py:8:    raise ConnectionError("ECONNREFUSED ' \
                                        'while starting")'
    assert fourfold("grep", "econnrefused", str(project), "--case-sensitive")[0] == 1
    code, _, err = fourfold("grep", "foo(", str(project), "--regex")
    assert code == 2 and "invalid regular expression" in err and "Traceback" not in err
    code, _, err = fourfold("search", "  ", str(project))
    assert code == 2 and "empty query" in err


def test_grep_lines_before_one_the_output_cannot_carry_are_printed(make_tree):
    """Lines are written in batches; where the output's encoding cannot carry a character,
    the lines before it still come out, as they did a line at a time."""
    import os

    root = make_tree({"f.txt": "needle a\nneedle b\nneedle \u00e9\nneedle c\n"})
    assert fourfold("index", str(root), "--no-embed")[0] == 0
    result = subprocess.run([sys.executable, "-m", "fourfold.interfaces.cli", "grep", "needle",
                             str(root)], capture_output=True,
                            env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert result.stdout == b"f.txt:1:needle a\nf.txt:2:needle b\n"
    assert result.returncode == 2 and b"UnicodeEncodeError" in result.stderr


def test_def_outline_refs_impact(project):
    assert fourfold("index", str(project))[0] == 0
    code, out, _ = fourfold("def", "parseConfig", str(project), "--json")
    assert code == 0 and json.loads(out)["results"][0]["qualname"] == "parse_config"
    code, out, _ = fourfold("outline", str(project / "app/config.py"), "--json")
    tree = json.loads(out)["results"]
    settings = next(n for n in tree if n["name"] == "Settings")
    assert [c["name"] for c in settings["children"]] == ["__init__", "get"]
    code, out, _ = fourfold("refs", "parse_config", str(project), "--json")
    callers = {(r["path"], r["symbol"]) for r in json.loads(out)["results"] if r["resolved"]}
    assert callers == {("app/config.py", "Settings.__init__"), ("app/main.py", "run")}
    code, out, _ = fourfold("impact", "parse_config", str(project), "--json")
    impact = [(r["path"], r["symbol"], r["distance"]) for r in json.loads(out)["results"]]
    assert impact == [("app/config.py", "Settings.__init__", 1), ("app/main.py", "run", 1)]


def test_map_lists_the_most_central_files_and_symbols(project):
    assert fourfold("index", str(project), "--no-embed")[0] == 0
    code, out, _ = fourfold("map", str(project), "--json")
    repo_map = json.loads(out)
    assert code == 0 and repo_map["files"][0]["path"] == "app/config.py"  # main.py imports it
    assert repo_map["symbols"][0]["symbol"] == "parse_config"  # called from two places
    ranks = [s["rank"] for s in repo_map["symbols"]]
    assert ranks == sorted(ranks, reverse=True) and ranks[0] > 1.0 > ranks[-1]


def test_status_and_not_indexed_error(project, tmp_path):
    code, out, err = fourfold("def", "x", str(project), "--index-dir", str(tmp_path / "idx"))
    # indexes on first use, then finds no definition named x: exit 1, nothing printed
    assert (code, out) == (1, "") and err.startswith("indexed 3 files in "), err
    code, out, _ = fourfold("status", str(project), "--index-dir", str(tmp_path / "idx"),
                            "--json")
    assert code == 0
    status = json.loads(out)
    assert status["index_dir"] == str(tmp_path / "idx") and status["total"] == 1
    repo = status["repositories"][0]
    assert (repo["root"], repo["files"], repo["symbols"], repo["chunks"]) == (
        str(project), 3, 6, 8)
    assert repo["languages"] == {"python": 2, "typescript": 1}
    code, out, _ = fourfold("status", str(project), "--index-dir", str(tmp_path / "idx"))
    assert f"({project}, id {repo['id']}): 3 files" in out  # an id names it too
    code, _, err = fourfold("index", str(tmp_path / "missing"))
    assert code == 2 and "no such folder" in err


def test_batch_search(project, tmp_path):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "a", "query": "Settings"}\n{"id": "b", "query": "startServer"}\n')
    code, out, err = fourfold("search", "--batch", str(queries), str(project))
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["id"] for line in lines] == ["a", "b"]
    assert lines[0]["results"][0]["path"] == "app/config.py"
    assert lines[1]["results"][0]["path"] == "web/server.ts"


def test_watch_reindexes_changed_files_until_interrupted(project):
    # Ctrl-C as a terminal gives it, whatever this run inherited: a job a shell starts in the
    # background without job control (a CI runner) ignores SIGINT, and so do its children
    proc = subprocess.Popen([sys.executable, "-m", "fourfold.interfaces.cli", "watch",
                             str(project), "--json", "--no-embed", "--debounce-ms", "100"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        first = json.loads(proc.stdout.readline())
        assert (first["added"], first["files"]) == (3, 3)
        (project / "app" / "retry.py").write_text("def retry_with_backoff():\n    pass\n")
        (project / "web" / "server.ts").unlink()
        update = json.loads(proc.stdout.readline())
        while update["added"] + update["deleted"] < 2:  # both may arrive in one batch or two
            nxt = json.loads(proc.stdout.readline())
            update = {k: update[k] + nxt[k] for k in ("added", "deleted")}
        assert (update["added"], update["deleted"]) == (1, 1)
        code, out, _ = fourfold("def", "retry_with_backoff", str(project), "--json")
        assert code == 0 and json.loads(out)["results"][0]["path"] == "app/retry.py"
        assert fourfold("grep", "startServer", str(project))[0] == 1
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 130  # as the README says: Ctrl-C
    finally:
        proc.kill()


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


@pytest.mark.parametrize("stop, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_serve_and_watch_exit_as_the_readme_says_when_stopped(project, stop, code):
    """130 after Ctrl-C, 143 after SIGTERM, once each is serving or waiting for changes: the
    server said 0 where SIGINT was ignored as it started (a background job: uvicorn takes
    the signal all the same, and returns), the watcher 0 while waiting."""
    from tests.servers import free_port

    port = free_port()
    for argv, sigint in ((["serve", str(project), "--port", str(port), "--no-watch"],
                          signal.SIG_IGN),
                         (["watch", str(project), "--no-embed", "--json"], signal.SIG_DFL)):
        proc = subprocess.Popen([sys.executable, "-m", "fourfold.interfaces.cli", *argv],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, sigint))
        try:
            if argv[0] == "serve":  # once it accepts connections, uvicorn has the signals
                deadline = time.monotonic() + 30
                while not _accepts(port):
                    assert proc.poll() is None and time.monotonic() < deadline
                    time.sleep(0.1)
            else:  # its first run is done: it waits for changes
                assert json.loads(proc.stdout.readline())["files"] == 3
                time.sleep(0.5)
            proc.send_signal(stop)
            assert proc.wait(timeout=15) == code, (argv[0], proc.stderr.read())
        finally:
            proc.kill()


def test_index_refuses_or_waits_while_another_indexer_runs(project):
    holder = subprocess.Popen(  # another process holds the index until its stdin closes
        [sys.executable, "-c", "import sys; from pathlib import Path; "
         "from fourfold.store.index_dir import IndexLock; d = Path(sys.argv[1]); d.mkdir(); "
         "lock = IndexLock(d).__enter__(); print('held', flush=True); sys.stdin.read()",
         str(project / ".fourfold")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        code, _, err = fourfold("index", str(project), "--no-embed")
        assert code == 2 and "another fourfold indexer (pid" in err
        waiting = subprocess.Popen(
            [sys.executable, "-m", "fourfold.interfaces.cli", "index", str(project),
             "--no-embed", "--json", "--wait", "20"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        assert waiting.poll() is None  # still waiting for the lock
        holder.stdin.close()
        out, err = waiting.communicate(timeout=30)
        code = waiting.returncode
        assert code == 0, err
        assert json.loads(out)["added"] == 3
    finally:
        holder.kill()
