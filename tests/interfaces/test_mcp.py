"""MCP server: tools through the SDK's own client (in-process, stdio, HTTP), freshness,
path safety and paging."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from fourfold.errors import QueryError  # noqa: E402
from fourfold.interfaces.mcp.paging import decode_cursor, encode_cursor  # noqa: E402
from fourfold.interfaces.mcp.paths import PathRefused  # noqa: E402
from fourfold.interfaces.mcp.server import build_server  # noqa: E402
from fourfold.interfaces.mcp.tools import FourfoldService  # noqa: E402
from tests.conftest import write_tree  # noqa: E402
from tests.servers import PROJECT_ROOT, free_port, mcp_http_server, server_env  # noqa: E402


TOOLS = {"intelligent_search", "semantic_search", "text_pattern_search", "structural_search",
         "find_symbol", "dependency_search", "analyze_dependencies", "get_file",
         "find_similar_code", "repository_context", "get_task_context", "reindex",
         "list_files"}

FIXTURE = {
    "src/config.py": '''\
        """Configuration loading."""
        import json


        class BaseLoader:
            def load(self, path):
                raise NotImplementedError


        class JsonLoader(BaseLoader):
            def load(self, path):
                with open(path) as f:
                    return json.load(f)


        def parse_config(path):
            """Parse the config file at path."""
            data = JsonLoader().load(path)
            return validate(data)


        def validate(data):
            if "name" not in data:
                raise ValueError("config needs a name")
            return data
        ''',
    "src/app.py": '''\
        from src.config import parse_config


        def main():
            cfg = parse_config("app.json")
            print(cfg["name"])


        def retry_with_backoff(fn, attempts=3):
            for i in range(attempts):
                try:
                    return fn()
                except Exception:
                    pass
        ''',
    "web/client.ts": '''\
        export interface Options { baseUrl: string; }

        export class HttpClient {
          constructor(private options: Options) {}
          fetchUser(id: string): Promise<string> {
            return request(this.options.baseUrl + "/users/" + id);
          }
        }

        export function request(url: string): Promise<string> {
          return fetch(url).then(r => r.text());
        }
        ''',
    "web/index.ts": '''\
        import { HttpClient } from "./client";

        const client = new HttpClient({ baseUrl: "http://localhost" });
        client.fetchUser("42");
        ''',
    "docs/long.txt": "".join(f"line {i}\n" for i in range(1, 1001)),
}


def run(coro_fn, *args):
    """anyio.run, re-raising the first real error out of the SDK's task-group wrapping."""
    try:
        return anyio.run(coro_fn, *args)
    except BaseExceptionGroup as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        raise leaf from None


async def call(client, name: str, args: dict | None = None) -> dict:
    result = await client.call_tool(name, args or {})
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert not result.is_error, f"{name} failed: {text}"
    return json.loads(text)  # one compact JSON text block (no structured copy)


async def call_error(client, name: str, args: dict) -> str:
    result = await client.call_tool(name, args)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert result.is_error, f"{name}({args}) should have failed, got {text[:300]}"
    assert "Traceback" not in text
    return text


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    root = write_tree(tmp_path_factory.mktemp("mcp") / "repo", FIXTURE)
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOPSECRET\n")
    (root / "link_out").symlink_to(outside, target_is_directory=True)
    (root / "link_file.txt").symlink_to(outside / "secret.txt")
    return root


@pytest.fixture(scope="module")
def service(repo):
    svc = FourfoldService(repo, watch=False).start(block=True)
    yield svc
    svc.close()


@pytest.fixture(scope="module")
def server(service):
    return build_server(service)


# -- in-process ------------------------------------------------------------------------------
def test_in_process_lists_and_calls_every_tool(server, repo):
    async def go():
        async with Client(server) as client:
            listed = (await client.list_tools()).tools
            assert {t.name for t in listed} == TOOLS
            for tool in listed:
                assert tool.description, tool.name
                assert tool.input_schema["type"] == "object"
            by_name = {t.name: t for t in listed}
            props = by_name["intelligent_search"].input_schema["properties"]
            for param in ("query", "preset", "modalities", "weights", "language", "path_glob",
                          "limit", "cursor", "max_tokens", "repository"):
                assert param in props

            r = await call(client, "intelligent_search", {"query": "parse_config"})
            assert [h["path"] for h in r["results"]] == [
                "src/config.py", "src/app.py", "docs/long.txt", "web/client.ts", "web/index.ts"]
            assert r["total"] == 5 and r["cursor"] is None
            assert r["results"][0]["lines"][0]["text"].startswith("def parse_config")
            assert (r["intent"], r["modalities"]) == ("find_definition",
                                                      ["semantic", "text", "structural"])

            r = await call(client, "intelligent_search",
                           {"query": "config", "modalities": ["text"], "path_glob": "src/*",
                            "limit": 1})
            assert r["returned"] == 1 and all(h["path"].startswith("src/") for h in r["results"])
            assert r["total"] == 2 and r["cursor"] is not None  # the second file is a page on

            # at function granularity a file answers with each function the hits lie in
            r = await call(client, "intelligent_search",
                           {"query": "load config", "modalities": ["text"],
                            "path_glob": "src/*", "granularity": "function"})
            units = [(h["path"], h["symbol"]) for h in r["results"]]
            assert len(units) == len(set(units)) and len(units) > 2
            assert len({s for path, s in units if path == "src/config.py" and s}) >= 2
            assert "granularity" in props

            r = await call(client, "semantic_search", {"query": "retry with backoff"})
            assert "retry_with_backoff" in [h["symbol"] for h in r["results"][:3]]
            assert r["modalities"] == ["semantic"] and r["notes"] == []  # the model is bundled

            r = await call(client, "text_pattern_search", {"pattern": "config"})
            assert r["total"] == 6
            assert {"path": "src/config.py", "line": 16,
                    "text": "def parse_config(path):"} in r["results"]
            r = await call(client, "text_pattern_search",
                           {"pattern": r"def \w+\(", "regex": True, "path_glob": "src/*.py"})
            assert r["total"] == 6
            r = await call(client, "text_pattern_search",
                           {"pattern": "Config", "case_sensitive": True})
            assert r["total"] == 1 and r["results"][0]["line"] == 1
            r = await call(client, "text_pattern_search", {"pattern": "load", "whole_word": True})
            assert {m["line"] for m in r["results"]} == {6, 11, 13, 18}

            r = await call(client, "structural_search", {"name": "HttpClient", "kind": "class"})
            assert r["results"][0]["path"] == "web/client.ts"
            assert r["results"][0]["kind"] == "class"
            r = await call(client, "structural_search", {"path": "src/config.py"})
            assert r["mode"] == "outline"
            assert [s["qualname"] for s in r["results"]] == [
                "BaseLoader", "BaseLoader.load", "JsonLoader", "JsonLoader.load",
                "parse_config", "validate"]
            assert [s["depth"] for s in r["results"]][:2] == [0, 1]

            r = await call(client, "find_symbol", {"name": "parse_config"})
            assert r["results"][0]["match"] == "exact"
            assert r["results"][0]["doc"] == "Parse the config file at path."
            assert "   16  def parse_config(path):" in r["results"][0]["code"]

            r = await call(client, "dependency_search", {"name": "parse_config"})
            assert r["total"] == 1 and r["results"][0]["symbol"] == "main"
            r = await call(client, "dependency_search",
                           {"name": "HttpClient.fetchUser", "relation": "callees"})
            assert r["results"][0]["symbol"] == "request"
            r = await call(client, "dependency_search",
                           {"name": "web/client.ts", "relation": "importers"})
            assert r["results"][0]["path"] == "web/index.ts"
            r = await call(client, "dependency_search",
                           {"name": "web/index.ts", "relation": "imports"})
            assert [x["path"] for x in r["results"]] == ["web/client.ts"]
            r = await call(client, "dependency_search",
                           {"name": "BaseLoader", "relation": "subclasses"})
            assert [x["symbol"] for x in r["results"]] == ["JsonLoader"]

            r = await call(client, "analyze_dependencies", {"name": "validate", "depth": 3})
            assert [(x["symbol"], x["distance"]) for x in r["results"]] == [
                ("parse_config", 1), ("main", 2)]
            assert r["summary"]["files"] == 2
            r = await call(client, "analyze_dependencies", {"name": "validate", "depth": 1})
            assert r["total"] == 1

            r = await call(client, "get_file", {"path": "src/config.py", "start_line": 16,
                                                "end_line": 19})
            assert r["text"].splitlines()[0] == "    16  def parse_config(path):"
            assert r["returned"] == 4 and r["total_lines"] == 25 and r["cursor"] is None
            r = await call(client, "get_file", {"path": str(repo / "web" / "index.ts")})
            assert r["path"] == "web/index.ts" and r["total_lines"] == 4

            r = await call(client, "find_similar_code", {"path": "web/client.ts", "line": 10})
            assert r["path"] == "web/client.ts" and r["line"] == 10 and r["total"] == 28
            assert r["results"][0]["path"] == "web/index.ts"  # the file that uses the client
            assert all(h["path"] != "web/client.ts" for h in r["results"])
            assert {"path", "start_line", "end_line", "symbol", "score"} <= set(r["results"][0])

            r = await call(client, "repository_context")
            repo_info = r["repositories"][0]
            assert repo_info["files"] == 5  # the two symlinks out of the root are not read
            assert repo_info["languages"] == {"python": 2, "typescript": 2, "text": 1}
            assert repo_info["modalities"] == {"semantic": "ready", "text": "ready",
                                               "structural": "ready", "graph": "ready"}
            assert r["central_files_total"] == len(r["central_files"]) == 4  # all but the text
            assert "docs/long.txt" not in [f["path"] for f in r["central_files"]]
            assert r["central_symbols"]

            r = await call(client, "get_task_context",
                           {"task": "change how parse_config validates the config file",
                            "max_tokens": 1500})
            assert r["used_tokens"] <= 1500
            reasons = {(s["symbol"], s["reason"].split()[0]) for s in r["spans"]}
            assert ("parse_config", "search") in reasons
            assert ("validate", "called") in reasons  # a graph neighbour of the top hit
            assert all(s["text"] for s in r["spans"])
            small = await call(client, "get_task_context",
                               {"task": "change how parse_config validates the config file",
                                "max_tokens": 200})
            assert small["used_tokens"] <= 200 and small["returned"] == 1
            assert small["cursor"] is not None

            r = await call(client, "reindex")
            assert (r["unchanged"], r["read"], r["total"]) == (5, 0, 0)

            # Errors are tool errors with a clear message.
            text = await call_error(client, "intelligent_search", {"query": "   "})
            assert "empty query" in text
            text = await call_error(client, "text_pattern_search",
                                    {"pattern": "(", "regex": True})
            assert "invalid regular expression '('" in text
            text = await call_error(client, "get_file", {"path": "nope/missing.py"})
            assert "not in the index" in text
            text = await call_error(client, "intelligent_search",
                                    {"query": "x", "cursor": "garbage!!"})
            assert "cursor" in text
    run(go)


def test_modality_not_ready_answers_from_ready_ones(service, monkeypatch):
    semantic = service.ff.engine.retrievers["semantic"]  # the bundled model: always there
    monkeypatch.setattr(semantic, "ready", lambda: False)
    note = ("modalities not ready (semantic: still being built); answered from text, "
            "structural instead")
    r = service.semantic_search("retry with backoff", snippet_lines=0)
    assert r["unavailable"] == {"semantic": "still being built"} and r["notes"] == [note]
    assert r["modalities"] == ["text", "structural"]
    assert [h["symbol"] for h in r["results"]] == ["retry_with_backoff"]
    r = service.intelligent_search("parse_config", preset="quick", snippet_lines=0)
    assert r["notes"] == [note] and r["modalities"] == ["text", "structural"]
    assert [h["path"] for h in r["results"]] == ["src/config.py", "src/app.py"]
    context = service.repository_context()
    assert context["repositories"][0]["modalities"]["semantic"] == "building"


def test_cursor_is_bound_to_its_query(service):
    first = service.text_pattern_search("config", limit=2)
    assert first["cursor"]
    with pytest.raises(QueryError, match="this cursor belongs to a different query"):
        service.text_pattern_search("load", limit=2, cursor=first["cursor"])
    assert decode_cursor(encode_cursor(7, "k"), "k") == 7


# -- stdio subprocess ----------------------------------------------------------------------------
def test_stdio_subprocess(repo, service):
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "fourfold.interfaces.mcp", str(repo), "--no-watch"],
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)})

    async def go():
        with anyio.fail_after(40):
            async with Client(params) as client:
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                r = await call(client, "find_symbol", {"name": "HttpClient"})
                assert r["results"][0]["path"] == "web/client.ts"
                r = await call(client, "intelligent_search", {"query": "fetchUser"})
                assert r["results"][0]["path"] == "web/client.ts"
                r = await call(client, "get_file", {"path": "web/index.ts", "start_line": 3,
                                                    "end_line": 3})
                assert "new HttpClient" in r["text"]
                text = await call_error(client, "get_file", {"path": "../outside/secret.txt"})
                assert "TOPSECRET" not in text
    run(go)


# -- HTTP ---------------------------------------------------------------------------------------
def test_http_requires_token(repo, service):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    # Any address other than loopback needs a token: refused at start.
    refused = subprocess.run(
        [sys.executable, "-m", "fourfold.interfaces.mcp", str(repo), "--http",
         "--host", "0.0.0.0", "--port", str(free_port()), "--no-watch"],
        env=server_env(), capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2 and "token" in refused.stderr

    token = "s3cret-token"
    with mcp_http_server([str(repo)], server_env(FOURFOLD_TOKEN=token)) as (url, _):
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        headers = {"Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json"}
        for auth in (None, "Bearer wrong", f"Basic {token}", token):
            h = dict(headers)
            if auth:
                h["Authorization"] = auth
            resp = httpx2.post(url, json=body, headers=h, timeout=10)
            assert resp.status_code == 401, (auth, resp.status_code)
            assert "tools" not in resp.text

        async def go():
            with anyio.fail_after(30):
                async with httpx2.AsyncClient(
                        headers={"Authorization": f"Bearer {token}"}) as http:
                    async with Client(streamable_http_client(url, http_client=http)) as client:
                        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                        r = await call(client, "text_pattern_search", {"pattern": "parse_config"})
                        assert r["total"] == 3
        run(go)


# -- path safety --------------------------------------------------------------------------------
def test_path_traversal_refused(server, repo):
    outside_abs = str(repo.parent / "outside" / "secret.txt")
    bad = ["../outside/secret.txt", "src/../../outside/secret.txt", "../../../../etc/passwd",
           "/etc/passwd", outside_abs, "%2e%2e/outside/secret.txt", "%2E%2E%2Foutside%2Fsecret.txt",
           "..%2foutside/secret.txt", "src/%2e%2e/%2e%2e/outside/secret.txt",
           "%252e%252e/outside/secret.txt", "..\\outside\\secret.txt", "~/.bashrc",
           "link_out/secret.txt", "link_file.txt", "src/config.py\x00.txt",
           ".fourfold/index.sqlite", "", "."]

    async def go():
        async with Client(server) as client:
            for path in bad:
                for tool, args in (("get_file", {"path": path}),
                                   ("structural_search", {"path": path}),
                                   ("find_similar_code", {"path": path})):
                    text = await call_error(client, tool, args)
                    assert "TOPSECRET" not in text
                    assert "root:" not in text
            for glob in ("../*", "/etc/*", "%2e%2e/*"):
                await call_error(client, "text_pattern_search",
                                 {"pattern": "x", "path_glob": glob})
                await call_error(client, "intelligent_search", {"query": "x", "path_glob": glob})
            text = await call_error(client, "get_file", {"path": "link_out/secret.txt"})
            assert "outside" in text
            # A legitimate absolute path inside the root is fine.
            ok = await call(client, "get_file", {"path": str(repo / "src" / "app.py")})
            assert ok["path"] == "src/app.py"
    run(go)


# -- paging ---------------------------------------------------------------------------------------
def test_paging_walks_thousands_of_hits(tmp_path):
    files = {f"gen/m{i:03d}.py": "".join(f"needle_{j} = {i} * {j}\n" for j in range(25))
             for i in range(120)}
    root = write_tree(tmp_path / "big", files)
    expected = {(f"gen/m{i:03d}.py", j + 1) for i in range(120) for j in range(25)}
    svc = FourfoldService(root, watch=False).start(block=True)
    try:
        async def go():
            async with Client(build_server(svc)) as client:
                first = await call(client, "text_pattern_search",
                                   {"pattern": "needle", "limit": 400, "max_tokens": 2000})
                assert first["total"] == len(expected) == 3000
                assert first["approx_tokens"] <= 2000 and first["returned"] == 124
                seen: list[tuple[str, int]] = []
                page = first
                pages = 0
                while True:
                    assert page["offset"] == len(seen)  # no gap
                    seen.extend((m["path"], m["line"]) for m in page["results"])
                    pages += 1
                    if page["cursor"] is None:
                        break
                    page = await call(client, "text_pattern_search",
                                      {"pattern": "needle", "limit": 400, "max_tokens": 12000,
                                       "cursor": page["cursor"]})
                    assert page["total"] == 3000
                assert len(seen) == len(set(seen)) == 3000  # no duplicates
                assert set(seen) == expected              # no gaps
                assert pages == 9  # 120 lines in 2,000 tokens, then 7 of 400 and 80

                # A long file pages by lines.
                lines, cursor = [], None
                while True:
                    args = {"path": "gen/m000.py", "limit": 7}
                    if cursor:
                        args["cursor"] = cursor
                    r = await call(client, "get_file", args)
                    lines.extend(r["text"].splitlines())
                    cursor = r["cursor"]
                    if cursor is None:
                        break
                assert [int(x.split()[0]) for x in lines] == list(range(1, 26))
        run(go)
    finally:
        svc.close()


def test_get_file_pages_long_file(service):
    got, cursor = [], None
    while True:
        r = service.get_file("docs/long.txt", start_line=100, end_line=899, limit=250,
                             cursor=cursor)
        got.extend(r["text"].splitlines())
        cursor = r["cursor"]
        if cursor is None:
            break
    assert [ln.split(None, 1)[1] for ln in got] == [f"line {i}" for i in range(100, 900)]


# -- freshness ------------------------------------------------------------------------------------
def test_catch_up_index_waits_for_the_first_answer(tmp_path):
    from fourfold import Fourfold

    root = write_tree(tmp_path / "indexed", {"a.py": "def alpha():\n    return 1\n"})
    Fourfold(root).index(embed=False)
    (root / "b.py").write_text("def beta():\n    return 2\n")  # changed while no server ran
    svc = FourfoldService(root, watch=False, embed=False).start()
    try:
        time.sleep(0.3)
        assert svc.last_index is None  # the existing index answers; nothing competes yet

        async def first_answer():
            async with Client(build_server(svc)) as client:
                r = await call(client, "find_symbol", {"name": "alpha"})
                assert r["total"] == 1
        run(first_answer)
        deadline = time.monotonic() + 20
        while svc.last_index is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert svc.last_index["reason"] == "start" and svc.last_index["added"] == 1
    finally:
        svc.close()


def test_freshness_under_running_server(tmp_path):
    root = write_tree(tmp_path / "live", {"a.py": "def alpha():\n    return 1\n",
                                          "b.py": "def beta():\n    return 2\n"})
    svc = FourfoldService(root, watch=True, debounce_ms=200, step_ms=30).start(block=True)
    try:
        deadline = time.monotonic() + 5
        while not svc.watching and time.monotonic() < deadline:
            time.sleep(0.02)
        assert svc.watching
        time.sleep(0.2)  # let the watcher settle

        async def until(client, pattern: str, want: int) -> float:
            started = time.monotonic()
            while True:
                r = await call(client, "text_pattern_search", {"pattern": pattern})
                if r["total"] == want:
                    return time.monotonic() - started
                assert time.monotonic() - started < 2.0, f"{pattern}: {r['total']} != {want}"
                await anyio.sleep(0.05)

        async def go():
            async with Client(build_server(svc)) as client:
                assert (await call(client, "find_symbol", {"name": "alpha"}))["total"] == 1
                # edit
                (root / "a.py").write_text("def alpha():\n    return 'freshly_edited'\n")
                await until(client, "freshly_edited", 1)
                # add: the file answers at once, the graph catches up after
                (root / "c.py").write_text("from a import alpha\n\ndef gamma_added():\n"
                                           "    return alpha()\n")
                await until(client, "gamma_added", 1)
                r = await call(client, "find_symbol", {"name": "gamma_added"})
                assert r["results"][0]["path"] == "c.py"
                assert svc.last_index["changed_paths"] == ["c.py"]
                started = time.monotonic()
                while not (await call(client, "dependency_search",
                                      {"name": "alpha", "relation": "callers"}))["total"]:
                    assert time.monotonic() - started < 5.0, "the graph did not catch up"
                    await anyio.sleep(0.05)
                assert not svc.ff.behind()["graph"]
                # delete
                (root / "b.py").unlink()
                await until(client, "beta", 0)
                # a branch switch: many files change at once
                for i in range(20):
                    (root / f"branch_{i}.py").write_text(f"def switched_{i}():\n    pass\n")
                (root / "a.py").unlink()
                await until(client, "def switched_", 20)
                await until(client, "def alpha", 0)
        run(go)
    finally:
        svc.close()


def test_cli_subcommands_register():
    import argparse

    from fourfold.interfaces.mcp.server import add_subcommands, cmd_mcp, cmd_serve

    parser = argparse.ArgumentParser()
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["serve", "repo", "--port", "9999", "--no-watch"])
    assert (args.func, args.path, args.port, args.host, args.no_watch) == (
        cmd_serve, "repo", 9999, "127.0.0.1", True)
    args = parser.parse_args(["mcp"])
    assert (args.func, args.path, args.index_dir) == (cmd_mcp, ".", None)


# -- tool declarations ------------------------------------------------------------------------
def test_unknown_arguments_are_refused_by_name(server):
    cases = [("get_file", {"path": "src/config.py", "offset": 10}, "offset", None),
             ("intelligent_search", {"query": "config", "limt": 3}, "limt", "limit"),
             ("text_pattern_search", {"pattern": "x", "case_sensitve": True}, "case_sensitve",
              "case_sensitive"),
             ("find_symbol", {"name": "validate", "page": 2}, "page", None),
             ("reindex", {"force": True}, "force", None)]

    async def go():
        async with Client(server) as client:
            for tool, args, wrong, hint in cases:
                text = await call_error(client, tool, args)
                assert f"unknown argument {wrong!r}" in text, text
                assert f"{tool} accepts:" in text, text
                if hint:
                    assert f"did you mean {hint!r}" in text, text
            text = await call_error(client, "get_file", {"path": "src/config.py", "offset": 1})
            assert "path, start_line, end_line, repository, limit, cursor, max_tokens" in text
            # a bad value names the parameter, without pydantic's noise
            text = await call_error(client, "get_file", {"path": "src/config.py", "limit": 0})
            assert "limit:" in text and "errors.pydantic.dev" not in text
    run(go)


TOOL_LIST_CHARS = 24_784 // 3  # a third of the list before the tools were declared once


def test_tool_list_is_compact_and_strict(server):
    async def go():
        async with Client(server) as client:
            return await client.list_tools()

    listed = run(go)
    for tool in listed.tools:
        assert tool.description and "  " not in tool.description, tool.name
        schema = tool.input_schema
        assert schema["additionalProperties"] is False, tool.name
        assert "title" not in json.dumps(schema), tool.name
        for name, prop in schema["properties"].items():
            assert prop.get("type"), (tool.name, name)
            assert "anyOf" not in prop, (tool.name, name)
    # the result as a client receives it: compact JSON, absent fields left out
    sent = json.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True),
                      separators=(",", ":"), ensure_ascii=False)
    assert len(sent) <= TOOL_LIST_CHARS, len(sent)


def test_instructions_state_the_bounds_the_schemas_leave_out():
    from fourfold.interfaces.mcp.paging import MAX_MAX_TOKENS, MAX_PAGE, MIN_MAX_TOKENS
    from fourfold.interfaces.mcp.server import INSTRUCTIONS
    from fourfold.interfaces.mcp.tools import MAX_FILE_PAGE

    text = " ".join(INSTRUCTIONS.split())
    assert f"at most {MAX_PAGE} results; get_file: {MAX_FILE_PAGE} lines" in text
    assert f"{MIN_MAX_TOKENS} to {MAX_MAX_TOKENS:,}" in text
    for name in TOOLS:
        assert f"`{name}`" in text or name == "reindex", name


def test_bounds_left_out_of_the_schema_are_still_enforced(server):
    async def go():
        async with Client(server) as client:
            for tool, args, bad in [
                    ("get_file", {"path": "src/config.py", "limit": 5001}, "limit:"),
                    ("text_pattern_search", {"pattern": "x", "max_tokens": 99}, "max_tokens:"),
                    ("analyze_dependencies", {"name": "validate", "depth": 11}, "depth:")]:
                text = await call_error(client, tool, args)
                assert bad in text, text
            r = await call(client, "get_file", {"path": "docs/long.txt", "limit": 5000})
            assert r["returned"] > 0
    run(go)


@pytest.mark.parametrize("sources", ["interfaces/*.py", "interfaces/mcp/*.py",
                                     "interfaces/web/*.py"])
def test_interfaces_use_only_the_api(sources):
    """The interfaces (CLI, MCP server, web page and the server they share) import only
    fourfold.api, fourfold.errors and each other, and never reach past the API into its
    store or retrievers."""
    allowed = {"fourfold.api", "fourfold.errors"}
    for source in sorted((PROJECT_ROOT / "fourfold").glob(sources)):
        package = ["fourfold", *source.relative_to(PROJECT_ROOT / "fourfold").parent.parts]
        tree = ast.parse(source.read_text(), str(source))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = package[:len(package) + 1 - node.level] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                if module == "fourfold":
                    assert {a.name for a in node.names} == {"__version__"}, source.name
                elif module.startswith("fourfold") and not module.startswith(
                        "fourfold.interfaces"):
                    assert module in allowed, f"{source.name} imports {module}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    assert not alias.name.startswith("fourfold"), source.name
            elif isinstance(node, ast.Attribute) and node.attr in (
                    "store", "graph", "structural", "text", "semantic", "engine"):
                owner = node.value
                name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
                assert name != "ff", f"{source.name}:{node.lineno} reaches past the API"


def test_cli_help_does_not_import_the_sdk():
    code = ("import sys\nfrom fourfold.interfaces.cli import build_parser\nbuild_parser()\n"
            "print(sorted(m for m in ('mcp', 'pydantic') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=PROJECT_ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# -- get_file bounds and kinds ------------------------------------------------------------------
def test_get_file_pages_beyond_500_lines(service):
    r = service.get_file("docs/long.txt", limit=1000, max_tokens=50_000)
    assert r["returned"] == 1000 and r["cursor"] is None and not r["notes"]
    assert r["text"].splitlines()[-1].split(None, 1) == ["1000", "line 1000"]
    r = service.get_file("docs/long.txt", limit=600, max_tokens=50_000)
    assert r["returned"] == 600 and r["cursor"]
    assert "limit=600" in r["notes"][0] and "lines 1-600 of 1-1000" in r["notes"][0]
    r = service.get_file("docs/long.txt", max_tokens=500)
    assert r["returned"] == 98 and r["cursor"]  # the cursor names the index's generation too
    assert r["notes"] == ["lines 1-98 of 1-1000: the page stopped at max_tokens=500; pass "
                          "`cursor` for the rest"]


def test_kind_method_means_methods_only(tmp_path):
    root = write_tree(tmp_path / "kinds", {"lib/store.py": '''\
        def save(item):
            return item


        class Repo:
            def save(self, item):
                return save(item)
        '''})
    svc = FourfoldService(root, watch=False, embed=False).start(block=True)
    try:
        r = svc.find_symbol("save", kind="method")
        assert [(d["qualname"], d["kind"]) for d in r["results"]] == [("Repo.save", "method")]
        r = svc.structural_search(name="save", kind="method")
        assert {d["kind"] for d in r["results"]} == {"method"}
        r = svc.structural_search(path="lib/store.py", kind="method")
        assert [s["qualname"] for s in r["results"]] == ["Repo.save"]
        assert {d["qualname"] for d in svc.find_symbol("save")["results"]} == {"save",
                                                                              "Repo.save"}
    finally:
        svc.close()


def test_runs_merged_for_one_embedding_count_what_both_changed():
    from fourfold.indexer import IndexSummary
    from fourfold.interfaces.service import _merged

    first = IndexSummary("/r", added=1, deleted=2, deleted_chunks=5, changed_paths=["a.py"])
    second = IndexSummary("/r", changed=1, deleted=1, deleted_chunks=3, changed_paths=["b.py"])
    merged = _merged(first, second)
    assert (merged.added, merged.changed, merged.deleted, merged.deleted_chunks,
            merged.changed_paths) == (1, 1, 3, 8, ["a.py", "b.py"])
    assert _merged(first, IndexSummary("/r")).changed_paths is None  # a whole walk
    assert not merged.took_over
    # the later run took over the earlier one's mark: one embedding takes both runs'
    # codes, and owes what the earlier one had taken over
    third = IndexSummary("/r", changed_paths=["c.py"], took_over=first.run)
    assert _merged(first, third).took_over == 0
    assert _merged(IndexSummary("/r", took_over=7, run=3),
                   IndexSummary("/r", took_over=3)).took_over == 7
    assert _merged(first, IndexSummary("/r", took_over=9)).took_over == 9


def test_a_server_started_while_another_indexer_runs_indexes_once_it_is_done(
        make_tree, monkeypatch):
    """The start's index run met the folder's lock held (an index run in another process)
    and its thread died: the files changed before the start were never indexed."""
    from fourfold import Fourfold
    from fourfold.interfaces import service as service_module
    from fourfold.store.index_dir import IndexLock

    monkeypatch.setattr(service_module, "BUSY_WAIT_S", 0.2)
    root = make_tree({"a.py": "def alpha():\n    return 1\n"})
    Fourfold(root).index(embed=False)
    (root / "b.py").write_text("def added_before_the_start():\n    return 2\n")
    svc = FourfoldService(root, watch=False, embed=False)
    try:
        with IndexLock(svc.ff.index_dir):
            svc.start()
            svc.answered()  # the start's run begins now, and meets the lock
            time.sleep(0.8)
            assert "another fourfold indexer" in (svc.last_error or "")
        deadline = time.monotonic() + 20
        while (svc.last_index or {}).get("reason") != "start" and time.monotonic() < deadline:
            time.sleep(0.05)  # the run is over (its files answer a little before)
        assert [m.path for m in svc.ff.grep("added_before_the_start")] == ["b.py"]
        assert svc.last_error is None and svc.last_index["reason"] == "start"
    finally:
        svc.close()


def test_real_names_with_backslashes_or_percent_signs_are_read_as_named(tmp_path):
    """get_file('back\\x.py') answered with back/x.py where both exist, and a real name
    holding %2e was refused, even a folder named `%2e%2e`; encoded traversal that names no
    real file still is."""
    root = write_tree(tmp_path / "odd", {"back/x.py": "slash = 1\n", "back\\x.py": "backslash = 1\n",
                                         "win/y.py": "windows = 1\n", "100%2e5.txt": "a name\n",
                                         "caf%e9.py": "latin = 1\n", "a%25252525.py": "deep = 1\n",
                                         "%2e%2e/z.py": "encoded = 1\n"})
    svc = FourfoldService(root, watch=False).start(block=True)
    try:
        assert "backslash = 1" in svc.get_file("back\\x.py")["text"]
        assert "slash = 1" in svc.get_file("back/x.py")["text"]
        assert "windows = 1" in svc.get_file("win\\y.py")["text"]  # an agent's separators
        assert "a name" in svc.get_file("100%2e5.txt")["text"]
        assert "latin = 1" in svc.get_file("caf%e9.py")["text"]  # not UTF-8 once decoded
        assert "deep = 1" in svc.get_file("a%25252525.py")["text"]
        assert "encoded = 1" in svc.get_file("%2e%2e/z.py")["text"]  # a real folder's name
        for bad in ("%2e%2e/odd/back/x.py", "%2e%2e/%2e%2e/z.py", "%252e%252e/x", "..%5codd",
                    "%ff/%2e%2e/x", "%2525252e%2525252e/x"):
            with pytest.raises(PathRefused):
                svc.get_file(bad)
    finally:
        svc.close()
