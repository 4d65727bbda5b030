"""Navigation: listing files, symbols by kind without a name, context lines around text
matches, similar code with its code and a real total (API, MCP tools, CLI)."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from fourfold.api import Fourfold
from fourfold.errors import QueryError
from fourfold.interfaces.cli import main
from tests.conftest import write_tree

FILES = {
    "src/api/client.ts": '''\
        export interface Options {
          baseUrl: string;
        }

        export interface Retry {
          attempts: number;
        }

        export class Client {
          constructor(private options: Options) {}
        }
        ''',
    "src/api/types.ts": '''\
        export interface User {
          id: number;
        }
        ''',
    "lib/other.ts": '''\
        export interface Hidden {
          x: number;
        }
        ''',
    "app/config.py": '''\
        import json

        # TODO: cache
        def load_config(path):
            with open(path) as f:
                return json.load(f)


        def save_config(path, data):
            with open(path, "w") as f:
                json.dump(data, f)
        ''',
    "app/Config_Loader.py": '''\
        def loader():
            return 1
        ''',
    "configs/notes.md": "# notes\n\nTODO: write\n",
}


def size(rel: str) -> int:
    return len(textwrap.dedent(FILES[rel]).encode())


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return write_tree(tmp_path_factory.mktemp("nav") / "repo", FILES)


@pytest.fixture(scope="module")
def ff(repo):
    ff = Fourfold(repo)
    ff.index()
    yield ff
    ff.close()


@pytest.fixture(scope="module")
def service(repo, ff):
    pytest.importorskip("mcp")
    from fourfold.interfaces.mcp.tools import FourfoldService

    svc = FourfoldService(repo, watch=False).start(block=True)
    yield svc
    svc.close()


def cli(capsys, *argv) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


# -- 1. list_files -------------------------------------------------------------------------
def test_list_files_api(ff):
    every = ff.list_files()
    assert [(f["path"], f["language"], f["size"]) for f in every] == [
        (p, lang, size(p)) for p, lang in [
            ("app/Config_Loader.py", "python"), ("app/config.py", "python"),
            ("configs/notes.md", "markdown"), ("lib/other.ts", "typescript"),
            ("src/api/client.ts", "typescript"), ("src/api/types.ts", "typescript")]]
    # the name fragment matches the file name only, in any case (not configs/)
    assert [f["path"] for f in ff.list_files(name="CONFIG")] == [
        "app/Config_Loader.py", "app/config.py"]
    assert [f["path"] for f in ff.list_files(glob="src/*")] == [
        "src/api/client.ts", "src/api/types.ts"]
    assert [f["path"] for f in ff.list_files(languages=("ts",))] == [
        "lib/other.ts", "src/api/client.ts", "src/api/types.ts"]
    assert ff.list_files(name="nothing-like-this") == []
    with pytest.raises(QueryError, match="unknown language"):
        ff.list_files(languages=("klingon",))
    assert ff.line_count("app/config.py") == 11


def test_list_files_tool_pages(service):
    first = service.list_files(limit=4)
    assert (first["total"], first["returned"]) == (6, 4)
    assert first["results"][1] == {"path": "app/config.py", "language": "python",
                                   "size": size("app/config.py"), "lines": 11}
    rest = service.list_files(limit=4, cursor=first["cursor"])
    assert [r["path"] for r in rest["results"]] == ["src/api/client.ts", "src/api/types.ts"]
    assert rest["cursor"] is None
    found = service.list_files(name="loader", language="python")
    assert [(r["path"], r["lines"]) for r in found["results"]] == [("app/Config_Loader.py", 2)]
    with pytest.raises(QueryError, match="unknown language"):
        service.list_files(language="klingon")


def test_list_files_unknown_argument_refused(service):
    from mcp import Client

    from fourfold.interfaces.mcp.server import build_server
    from tests.interfaces.test_mcp import run

    async def call_error(client, name: str, args: dict) -> str:
        result = await client.call_tool(name, args)
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert result.is_error, text
        return text

    async def call(client, name: str, args: dict) -> dict:
        result = await client.call_tool(name, args)
        assert not result.is_error
        if result.structured_content is not None:
            return result.structured_content
        return json.loads(" ".join(getattr(c, "text", "") for c in result.content))

    async def go():
        async with Client(build_server(service)) as client:
            text = await call_error(client, "list_files", {"glob": "src/*"})
            assert "unknown argument 'glob'" in text and "list_files accepts:" in text
            text = await call_error(client, "list_files", {"nme": "config"})
            assert "did you mean 'name'" in text
            text = await call_error(client, "text_pattern_search",
                                    {"pattern": "x", "context_lines": 11})
            assert "context_lines" in text
            ok = await call(client, "list_files", {"name": "types"})
            assert [r["path"] for r in ok["results"]] == ["src/api/types.ts"]
    run(go)


def test_files_cli(capsys, repo):
    code, out = cli(capsys, "files", str(repo), "--name", "config", "--json")
    assert code == 0
    assert [r["path"] for r in json.loads(out)["results"]] == [
        "app/Config_Loader.py", "app/config.py"]
    code, out = cli(capsys, "files", str(repo), "--glob", "lib/*")
    assert (code, out) == (0, f"lib/other.ts  typescript  {size('lib/other.ts')} B\n")
    code, out = cli(capsys, "files", str(repo), "--name", "zzz")
    assert (code, out) == (1, "")
    assert cli(capsys, "files", str(repo), "--language", "klingon")[0] == 2


# -- 2. symbols by kind ----------------------------------------------------------------------
def test_symbols_by_kind(ff, service):
    found = ff.symbols("interface", path_glob="src/*")
    assert [(d["path"], d["start_line"], d["kind"], d["name"]) for d in found] == [
        ("src/api/client.ts", 1, "interface", "Options"),
        ("src/api/client.ts", 5, "interface", "Retry"),
        ("src/api/client.ts", 9, "class", "Client"),  # kind words mean families
        ("src/api/types.ts", 1, "interface", "User")]
    assert [(d["name"], d["kind"]) for d in ff.symbols("function")] == [
        ("loader", "function"), ("load_config", "function"), ("save_config", "function"),
        ("constructor", "method")]  # function means methods too, as in every filter
    assert [d["name"] for d in ff.symbols("method")] == ["constructor"]
    with pytest.raises(QueryError, match="unknown kind"):
        ff.symbols("gadget")
    page1 = service.structural_search(kind="interface", path_glob="src/*", limit=3)
    assert (page1["mode"], page1["total"], page1["returned"]) == ("kind", 4, 3)
    page2 = service.structural_search(kind="interface", path_glob="src/*", limit=3,
                                      cursor=page1["cursor"])
    assert [r["name"] for r in page2["results"]] == ["User"]
    assert page2["cursor"] is None
    with pytest.raises(QueryError, match="only `kind`"):
        service.structural_search()
    with pytest.raises(QueryError, match="give one of"):
        service.structural_search(name="User", path="src/api/types.ts")


def test_def_cli_without_name(capsys, repo, monkeypatch):
    monkeypatch.chdir(repo)
    code, out = cli(capsys, "def", "--kind", "interface", "--glob", "src/*")
    assert code == 0
    assert out.splitlines()[::2] == [
        "src/api/client.ts:1-3  interface Options", "src/api/client.ts:5-7  interface Retry",
        "src/api/client.ts:9-11  class Client", "src/api/types.ts:1-3  interface User"]
    assert cli(capsys, "def")[0] == 2
    code, out = cli(capsys, "def", "load_config", str(repo), "--json")
    assert [r["path"] for r in json.loads(out)["results"]] == ["app/config.py"]


# -- 3. context lines --------------------------------------------------------------------------
def test_grep_context(ff, service):
    rows = ff.with_context(ff.grep("TODO"), 2)
    assert rows == [
        {"path": "app/config.py", "line": 3, "text": "# TODO: cache",
         "before": [{"line": 1, "text": "import json"}, {"line": 2, "text": ""}],
         "after": [{"line": 4, "text": "def load_config(path):"},
                   {"line": 5, "text": "    with open(path) as f:"}]},
        {"path": "configs/notes.md", "line": 3, "text": "TODO: write",
         "before": [{"line": 1, "text": "# notes"}, {"line": 2, "text": ""}],
         "after": []}]
    assert ff.with_context(ff.grep("TODO"), 0) == [
        {"path": "app/config.py", "line": 3, "text": "# TODO: cache"},
        {"path": "configs/notes.md", "line": 3, "text": "TODO: write"}]
    with pytest.raises(QueryError):
        ff.with_context(ff.grep("TODO"), 11)
    answer = service.text_pattern_search("json.load", context_lines=1)
    assert answer["total"] == 1
    assert answer["results"] == [{
        "path": "app/config.py", "line": 6, "text": "        return json.load(f)",
        "before": [{"line": 5, "text": "    with open(path) as f:"}],
        "after": [{"line": 7, "text": ""}]}]
    plain = service.text_pattern_search("json.load")
    assert plain["results"] == [{"path": "app/config.py", "line": 6,
                                 "text": "        return json.load(f)"}]


def test_grep_cli_context(capsys, repo):
    code, out = cli(capsys, "grep", "with open", str(repo), "-C", "1")
    assert code == 0
    assert out.splitlines() == [
        "app/config.py-4-def load_config(path):",
        "app/config.py:5:    with open(path) as f:",
        "app/config.py-6-        return json.load(f)",
        "--",
        "app/config.py-9-def save_config(path, data):",
        "app/config.py:10:    with open(path, \"w\") as f:",
        "app/config.py-11-        json.dump(data, f)"]
    code, out = cli(capsys, "grep", "open", str(repo), "-C", "3")
    assert out.splitlines()[0] == "app/config.py-2-"
    assert len(out.splitlines()) == 10 and "--" not in out.splitlines()


# -- 4. similar code ---------------------------------------------------------------------------
def test_similar_code_shows_code_and_real_total(ff, service):
    lines = {p: textwrap.dedent(t).split("\n") for p, t in FILES.items()}
    found = ff.similar_code("src/api/types.ts", 1, limit=200, code_lines=2)
    other_chunks = sum(len(ff.store.chunks_of_file(f.file_id)) for f in ff.store.files()
                       if f.path != "src/api/types.ts")
    assert (found["total"], found["capped"]) == (other_chunks, False)
    assert len(found["results"]) == other_chunks
    for hit in found["results"]:
        assert hit["path"] != "src/api/types.ts"
        want = min(2, hit["end_line"] - hit["start_line"] + 1)
        assert hit["code"] == [{"line": n, "text": lines[hit["path"]][n - 1]}
                               for n in range(hit["start_line"], hit["start_line"] + want)]
    small = ff.similar_code("src/api/types.ts", 1, limit=2)
    assert (small["total"], small["capped"]) == (2, True)
    answer = service.find_similar_code("src/api/types.ts", 1, limit=3)
    assert (answer["total"], answer["total_is_lower_bound"], answer["notes"]) == (
        other_chunks, False, [])
    first = answer["results"][0]
    shown = lines[first["path"]][first["start_line"] - 1:min(first["end_line"],
                                                               first["start_line"] + 5)]
    assert first["code"] == "\n".join(f"{first['start_line'] + i:>5}  {t}"
                                      for i, t in enumerate(shown))
