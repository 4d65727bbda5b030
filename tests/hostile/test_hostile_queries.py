"""Hostile queries and patterns: huge queries are refused or answered fast and small,
pathological regexes are bounded, a grep stops at its time budget and says so, and regex
lines are grep's lines."""
from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
import sys
import time

import pytest

from fourfold import Fourfold
from fourfold.errors import QueryError
from fourfold.interfaces.cli import main
from fourfold.retrievers import text as text_module
from fourfold.routing.engine import MAX_QUERY_CHARS
from fourfold.routing.intent import _CAMEL, _KEYWORD_FORM

from tests.conftest import write_tree


def handlers_repo(root):
    """40 files of PascalCase classes: every `Ab...` query word has thousands of candidates."""
    return write_tree(root, {f"ab_module_{i}.py": "".join(
        f"class Ab{j}Handler:\n    def ab_method_{j}(self, a):\n        return AbAb(a) + {j}\n\n"
        for j in range(40)) for i in range(40)})


@pytest.fixture(scope="module")
def handlers(tmp_path_factory):
    root = handlers_repo(tmp_path_factory.mktemp("hostile") / "repo")
    Fourfold(root).index(embed=False)
    return root


# -- case 10: unbounded queries ----------------------------------------------------------------
def test_query_over_the_limit_is_refused_at_once(handlers, capsys):
    query = "Ab" * 50 * 1024  # one PascalCase word of 51,200 sub-words
    ff = Fourfold(handlers)
    started = time.perf_counter()
    with pytest.raises(QueryError, match=f"limit is {MAX_QUERY_CHARS:,}"):
        ff.search(query)
    assert time.perf_counter() - started < 1.0
    assert main(["search", query, str(handlers)]) == 2
    err = capsys.readouterr().err
    assert "query too long: 102,400 characters" in err and "Traceback" not in err


def test_names_and_patterns_that_are_not_utf8_are_one_clear_line(handlers, capsys, monkeypatch):
    """A command line in another encoding reaches Python as surrogates, which no database
    can take: every command says so in one line, exit code 2."""
    monkeypatch.chdir(handlers)
    for argv in (["outline", "caf\udce9.py", "."], ["grep", "caf\udce9", "."],
                 ["def", "caf\udce9_handler", "."]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not valid UTF-8" in err and "Traceback" not in err
    assert main(["files", ".", "--glob", "caf\udce9*"]) == 1  # matched in Python: no file


def test_a_question_that_is_not_utf8_is_refused_clearly(handlers, capsys):
    ff = Fourfold(handlers)
    with pytest.raises(QueryError, match="not valid UTF-8"):
        ff.search("load\ud800 handler")
    assert main(["search", "how is the caf\udce9 handler built", str(handlers)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not valid UTF-8" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [
    ["search", "ab method", "--limit", "0"], ["search", "ab method", "--limit", "-1"],
    ["search", "ab method", "--limit", "ten"], ["grep", "AbAb", "--limit", "-1"],
    ["def", "ab_method_1", "--limit", "0"], ["map", "--limit", "-5"],
    ["refs", "ab_method_1", "--limit", "0"]])
def test_a_limit_below_one_is_a_usage_error(handlers, capsys, argv):
    with pytest.raises(SystemExit) as stopped:
        main([*argv[:2], str(handlers), *argv[2:]] if argv[0] != "map"
             else ["map", str(handlers), *argv[1:]])
    assert stopped.value.code == 2
    assert "must be a whole number of at least 1" in capsys.readouterr().err


@pytest.mark.parametrize("options, message", [
    ({"limit": 100_000_000}, "from 1 to 10,000"), ({"limit": 10 ** 20}, "from 1 to 10,000"),
    ({"limit": 0}, "from 1 to 10,000"), ({"limit": 2.5}, "from 1 to 10,000"),
    ({"rrf_k": -1}, "rrf_k must be"), ({"rrf_k": float("nan")}, "rrf_k must be"),
    ({"rrf_k": float("inf")}, "rrf_k must be"),
    ({"weights": {"text": -1.0}}, "weight of text"),
    ({"weights": {"text": float("nan")}}, "weight of text"),
    ({"weights": {"text": float("inf"), "semantic": 1.0}}, "weight of text"),
    ({"weights": {"text": 0.0, "semantic": 0.0}}, "every weight is 0")])
def test_search_options_out_of_bounds_are_clear_errors(handlers, options, message):
    """A huge limit once asked the BM25 engine to allocate gigabytes and aborted the process;
    a negative k divided by zero; NaN and infinite scores are no valid JSON."""
    ff = Fourfold(handlers)
    with pytest.raises(QueryError, match=message):
        ff.search("how is an ab handler made", **options)
    for call in (lambda: ff.definitions("ab_method_1", limit=0),
                 lambda: ff.map(limit=-1), lambda: ff.grep("AbAb", limit=0)):
        with pytest.raises(QueryError, match="whole number"):
            call()


def test_a_batch_answers_bad_lines_as_errors_and_goes_on(handlers, tmp_path, capsys):
    batch = tmp_path / "batch.jsonl"
    batch.write_bytes(b'not json\n{"id": 2}\n{"id": 3, "query": 5}\n[1]\n'
                      b'{"id": 5, "query": "how is the caf\xe9 handler built"}\n\xff\xfe\n'
                      b'{"id": 7, "query": "how is an ab handler made"}\n'
                      b'{"id": "\\ud800", "query": "how is an ab handler made"}\n')
    assert main(["search", "--batch", str(batch), str(handlers)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["id"] for line in lines] == [None, 2, 3, None, 5, None, 7, "\ud800"]
    assert all("error" in line and not line["results"] for line in lines[:6])
    assert "line 1 is not a JSON object" in lines[0]["error"]
    assert "not valid UTF-8" in lines[4]["error"]
    assert lines[6]["results"] and "error" not in lines[6]
    assert main(["search", "--batch", str(tmp_path / "missing.jsonl"), str(handlers)]) == 2
    err = capsys.readouterr().err
    assert "cannot read the batch file" in err and "Traceback" not in err


# Each just under the limit; each took seconds to minutes or gigabytes before: prefixes of a
# long word, a backtracking identifier pattern, a cubic definition pattern, a name matched
# against thousands of symbols, more terms than SQLite nests.
_PROBE = r"""
import json, sys, time
from fourfold import Fourfold
from fourfold.routing.engine import MAX_QUERY_CHARS
n = MAX_QUERY_CHARS - 10
queries = {
    "long word in a question": "how does " + "a" * (n - 9),
    "capitalised word failing at its end": "A" + "a" * (n - 2) + "!",
    "definition keyword, spaces": "def foo" + " " * (n - 8) + "x",
    "PascalCase word": "Ab" * (n // 2),
    "quoted string": '"' + "a" * (n - 2) + '"',
    "1500 distinct words": " ".join(f"zq{i}" for i in range(1500)),
}
ff = Fourfold(sys.argv[1])
ff.search("hello handler")  # warm: the index open, its caches read
out = {}
for name, query in queries.items():
    started = time.perf_counter()
    try:
        ff.search(query)
        error = None
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    out[name] = {"seconds": time.perf_counter() - started, "error": error}
# VmHWM, not ru_maxrss: that one keeps the peak of the parent this process was forked from
with open("/proc/self/status") as status:
    out["peak_mb"] = next(int(line.split()[1]) for line in status
                          if line.startswith("VmHWM:")) / 1024
print(json.dumps(out))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads the peak memory from /proc")
def test_queries_just_under_the_limit_are_fast_and_small(handlers):
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(handlers)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    peak = result.pop("peak_mb")
    for name, r in result.items():
        assert r["error"] is None, (name, r["error"])
        assert r["seconds"] <= 1.0, (name, r["seconds"])
    assert peak <= 200, peak


def test_path_globs_are_bounded(handlers):
    """A glob past MAX_GLOB_CHARS is a clear error wherever it is given; one just under it,
    of the shapes that cost most to translate and match, answers at once."""
    ff = Fourfold(handlers)
    for refused in ("*a" * 513, "[a" * 513):
        for ask in (lambda g: ff.search("handler", path_glob=g),
                    lambda g: ff.grep("Ab", path_glob=g), lambda g: ff.list_files(glob=g),
                    lambda g: ff.definitions("Ab1Handler", path_glob=g)):
            with pytest.raises(QueryError, match="a path glob of 1,026 characters; at most 1,024"):
                ask(refused)
    started = time.perf_counter()
    for glob in ("*a" * 511 + "*", "[a" * 512, "**/" * 341, "*?" * 512):
        assert ff.grep("Ab", path_glob=glob, limit=5) == []
        assert ff.search("handler", path_glob=glob).hits == []
    assert time.perf_counter() - started < 5
    assert [m.path for m in ff.grep("class Ab1Handler", path_glob="ab_module_1?.py")] == [
        f"ab_module_1{i}.py" for i in range(10)]


def test_identifier_patterns_keep_their_meaning():
    """The linear forms of the identifier and definition patterns accept exactly what their
    plain forms do, on every short string over the characters that matter to them."""
    camel = re.compile(r"^[A-Za-z_$]*[a-z][A-Z]\w*$|^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$"
                       r"|^[A-Z]\w*[a-z]\w*$")
    for chars in itertools.chain.from_iterable(
            itertools.product("aB1_$!é", repeat=n) for n in range(7)):
        word = "".join(chars)
        assert bool(_CAMEL.match(word)) == bool(camel.match(word)), word
    keyword = re.compile(_KEYWORD_FORM.pattern.removesuffix(
        r"\s*(?:(\(.*\))\s*)?(?:[:{]\s*)?$") + r"\s*(\(.*\))?\s*[:{]?\s*$")
    assert keyword.pattern != _KEYWORD_FORM.pattern
    for chars in itertools.product(" ():{x`", repeat=6):
        query = "def f" + "".join(chars)
        old, new = keyword.match(query), _KEYWORD_FORM.match(query)
        assert (old and old.groups()) == (new and new.groups()), query


# -- case 12: pathological regexes and the time budget ----------------------------------------
@pytest.fixture(scope="module")
def marked(tmp_path_factory):
    """Twelve files, each with three MARK lines, and one of a's."""
    root = tmp_path_factory.mktemp("marked") / "repo"
    files = {f"f{i:02d}.txt": "".join(f"line {j} MARK_LINE {i}\nfiller {j}\n" for j in range(3))
             for i in range(12)}
    files["a.txt"] = "aaaaaaaaaaaaaaaaaaaa\n" * 50
    write_tree(root, files)
    Fourfold(root).index(embed=False)
    return root


def all_lines(root):
    return {(p.name, n) for p in root.glob("*.txt")
            for n in range(1, len(p.read_text().splitlines()) + 1)}


def test_nested_quantifier_regex_answers_quickly(marked):
    ff = Fourfold(marked)
    started = time.perf_counter()
    matches = ff.grep("(a*)*" * 512, regex=True)
    assert time.perf_counter() - started < 2.0
    assert not matches.partial
    # it matches the empty string, so every line
    assert {(m.path, m.line) for m in matches} == all_lines(marked)


def test_regex_and_pattern_bounds_are_clear_errors(marked):
    ff = Fourfold(marked)
    started = time.perf_counter()
    with pytest.raises(QueryError, match=f"limit is {text_module.MAX_PATTERN_CHARS:,}"):
        ff.grep("(a*)*" * 2048, regex=True)
    with pytest.raises(QueryError, match="pattern too long"):
        ff.grep("x" * (text_module.MAX_PATTERN_CHARS + 1))
    with pytest.raises(QueryError, match=f"limit is {text_module.MAX_REGEX_PROGRAM:,}"):
        ff.grep(r"\pL{100}", regex=True)
    with pytest.raises(QueryError, match="any byte"):
        ff.grep(r"a\Cb", regex=True)
    assert time.perf_counter() - started < 2.0


def test_deeply_nested_regex_is_verified_without_prefilter(tmp_path):
    root = write_tree(tmp_path / "repo", {"deep.txt": "abc" * 400 + "\n" + "abc" * 10 + "\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    pattern = "(?:abc" * 400 + ")+" * 400  # too deep for the literal prefilter's recursion
    assert [(m.path, m.line) for m in ff.grep(pattern, regex=True)] == [("deep.txt", 1)]


class TickingClock:
    """time.monotonic for the text modality: one second passes at every reading."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now


def test_grep_stops_at_its_time_budget(marked, monkeypatch):
    ff = Fourfold(marked)
    full = ff.grep("MARK_LINE")
    assert not full.partial and len(full) == 36
    monkeypatch.setattr(text_module, "time", TickingClock())
    partial = ff.grep("MARK_LINE", time_budget=3)
    assert partial.partial
    assert len({m.path for m in partial}) == 3  # three readings fit in the budget
    assert [(m.path, m.line) for m in partial] == [(m.path, m.line) for m in full[:9]]


def test_cli_grep_reports_partial(marked, monkeypatch, capsys):
    assert main(["grep", "MARK_LINE", str(marked), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["partial"] is False and out["total"] == 36
    monkeypatch.setattr(text_module, "time", TickingClock())
    assert main(["grep", "MARK_LINE", str(marked), "--json", "--time-budget", "3"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["partial"] is True and out["total"] == 9
    assert "partial" in captured.err and "--time-budget" in captured.err
    assert main(["grep", "MARK_LINE", str(marked), "--time-budget", "3"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 9 and "partial" in captured.err


def test_fused_search_notes_a_partial_scan(marked, monkeypatch):
    ff = Fourfold(marked)
    assert "text" not in ff.search('"MARK_LINE"').unavailable
    monkeypatch.setattr(text_module, "time", TickingClock())
    response = ff.search('"MARK_LINE"')
    assert response.unavailable == {"text": "partial: the scan stopped at its time budget"}
    # what the scan found before it stopped is still the answer
    assert [(h.path, h.start_line) for h in response.hits] == [
        (f"f{i:02d}.txt", 1) for i in range(10)]


def test_mcp_reports_partial_and_refuses_a_huge_query(marked):
    pytest.importorskip("mcp")
    from fourfold.interfaces.mcp.tools import FourfoldService
    service = FourfoldService(marked, watch=False).start(block=True)
    try:
        r = service.text_pattern_search("MARK_LINE")
        assert r["partial"] is False and r["total"] == 36 and not r["notes"]
        service.ff.text.time_budget = 0
        r = service.text_pattern_search("filler")
        assert r["partial"] is True and r["total_is_lower_bound"] is True
        assert (r["total"], r["returned"]) == (0, 0)  # no time at all: nothing read
        assert r["notes"] == ["partial: the scan stopped at its time budget with files left "
                              "unread; narrow the pattern or path_glob"]
        with pytest.raises(QueryError, match="query too long"):
            service.intelligent_search("Ab" * 50 * 1024)
    finally:
        service.close()


# -- case 14: a regex matches a line when it matches within that line -------------------------
LINES_REPO = {
    "code.c": "int f() {\n  // return value\n  return x;\n}\nint g() { return 1; }\n",
    "ws.txt": "foo\n    bar = 1;\nbaz  bar;\n",
    "mix.txt": "return x\ny = 1; return z;\n  foo\nfoo\na\nb\nab\na  b\n\nlast x y",
    "crlf.txt": b"alpha end\r\nbeta\r\n\r\nend\r\nx = 12;\r\n",
}
# pattern -> lines as grep reports them (grep -P, line by line)
KNOWN = {
    r"return[^;]*;": {("code.c", 3), ("code.c", 5), ("mix.txt", 2)},
    r"\s+bar": {("ws.txt", 2), ("ws.txt", 3)},
    r"a\s*\n?b": {("mix.txt", 7), ("mix.txt", 8)},
    r"end$": set(),  # CRLF: the line ends in \r
    r"^\s*$": {("mix.txt", 9), ("crlf.txt", 3)},
}
PATTERNS = list(KNOWN) + [r"\s+foo", r"x.*y$", r"^$", r"[^a-z]+$", r"^\w+$", r"\D+\d",
                          r"\w+\s*=\s*\d+;?", r"(a*)*(a*)*", r"^}", r"y\W"]


@pytest.fixture(scope="module")
def lines_repo(tmp_path_factory):
    root = write_tree(tmp_path_factory.mktemp("lines") / "repo", LINES_REPO)
    Fourfold(root).index(embed=False)
    return root


def gnu_grep(root, pattern: str) -> set[tuple[str, int]]:
    out = subprocess.run(["grep", "-rnP", "--binary-files=without-match",
                          "--exclude-dir=.fourfold", "--", pattern, "."], cwd=root,
                         capture_output=True, text=True, errors="replace").stdout
    return {(line.split(":", 2)[0].removeprefix("./"), int(line.split(":", 2)[1]))
            for line in out.splitlines()}


@pytest.mark.parametrize("pattern", list(KNOWN))
def test_regex_lines_known_answers(lines_repo, pattern):
    ours = {(m.path, m.line) for m in Fourfold(lines_repo).grep(pattern, regex=True,
                                                                case_sensitive=True)}
    assert ours == KNOWN[pattern]


@pytest.mark.skipif(shutil.which("grep") is None
                    or subprocess.run(["grep", "-P", "x"], input="x", text=True,
                                      capture_output=True).returncode != 0,
                    reason="needs GNU grep with -P")
@pytest.mark.parametrize("pattern", PATTERNS)
def test_regex_lines_equal_gnu_grep(lines_repo, pattern):
    ours = {(m.path, m.line) for m in Fourfold(lines_repo).grep(pattern, regex=True,
                                                                case_sensitive=True)}
    assert ours == gnu_grep(lines_repo, pattern)
