"""MCP budgets: the text an agent receives is what is counted, and it fits `max_tokens`."""
from __future__ import annotations

import json

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402

from fourfold.api import Fourfold  # noqa: E402
from fourfold.interfaces.mcp.server import build_server  # noqa: E402
from fourfold.interfaces.mcp.tools import FourfoldService  # noqa: E402
from tests.conftest import write_tree  # noqa: E402

LONG = "x" * 390


def _module(i: int) -> str:
    body = [f'"""Module {i}: handlers that process the widget payload {LONG[:120]}."""',
            "from gen.m000 import process_widget", ""]
    for j in range(12):
        body += [f"def process_widget_{j}(payload, retries=3):",
                 f'    """Process widget payload {j} with retries {LONG[:200]}."""',
                 f"    value = process_widget(payload)  # widget {LONG}"]
        body += [f"    value = value + {k}  # widget step {k} {LONG[:300]}" for k in range(20)]
        body += ["    return value", ""]
    return "\n".join(body) + "\n"


FILES = {f"gen/m{i:03d}.py": _module(i) for i in range(40)}
FILES["gen/m000.py"] += ("\n\nclass Widget:\n    pass\n\n\ndef process_widget(payload):\n"
                         "    return payload\n")
FILES["gen/sub.py"] = "from gen.m000 import Widget\n\n" + "".join(
    f"class W{i}(Widget):\n    '''{LONG}'''\n\n" for i in range(60))
FILES["gen/wide.txt"] = "".join(f"{i} {'y' * 1990}\n" for i in range(300))
FILES["gen/one.txt"] = "z" * 1999 + "\n"

# every tool that takes max_tokens, with arguments that have large answers
CALLS = [
    ("intelligent_search", {"query": "process widget payload with retries", "limit": 100}),
    ("intelligent_search", {"query": "process_widget", "snippet_lines": 40, "limit": 100}),
    ("semantic_search", {"query": "handle the widget payload", "snippet_lines": 40,
                         "limit": 100}),
    ("text_pattern_search", {"pattern": "widget", "limit": 500}),
    ("text_pattern_search", {"pattern": "y{100}", "regex": True, "limit": 500}),
    ("structural_search", {"name": "process_widget", "limit": 500}),
    ("structural_search", {"path": "gen/m001.py", "limit": 500}),
    ("find_symbol", {"name": "process_widget", "code_lines": 400, "limit": 100}),
    ("dependency_search", {"name": "process_widget", "relation": "callers", "limit": 500}),
    ("dependency_search", {"name": "Widget", "relation": "subclasses", "limit": 500}),
    ("analyze_dependencies", {"name": "process_widget", "limit": 500}),
    ("get_file", {"path": "gen/m001.py", "limit": 5000}),
    ("get_file", {"path": "gen/wide.txt", "limit": 5000}),
    ("get_file", {"path": "gen/one.txt"}),
    ("find_similar_code", {"path": "gen/m001.py", "line": 5, "limit": 200}),
    ("repository_context", {"limit": 500}),
    ("get_task_context", {"task": "change how widgets process their payload",
                          "max_span_lines": 400, "limit": 500}),
]
BUDGETS = (200, 300, 1000, 4000)  # 200: the least max_tokens takes


def _run(fn):
    try:
        return anyio.run(fn)
    except BaseExceptionGroup as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        raise leaf from None


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    root = write_tree(tmp_path_factory.mktemp("budgets") / "repo", FILES)
    svc = FourfoldService(root, watch=False).start(block=True)
    yield svc
    svc.close()


def delivered(result) -> str:
    """Everything a tool reply carries to the agent: its text blocks and structured content."""
    text = "".join(getattr(c, "text", "") for c in result.content)
    if result.structured_content is not None:
        text += json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
    return text


def test_every_budgeted_tool_holds_max_tokens_over_large_answers(service):
    async def go():
        worst = {}
        async with Client(build_server(service)) as client:
            for name, args in CALLS:
                for budget in BUDGETS:
                    result = await client.call_tool(name, {**args, "max_tokens": budget})
                    text = delivered(result)
                    assert not result.is_error, f"{name}: {text[:300]}"
                    ratio = len(text) / (4 * budget)
                    worst[name] = max(worst.get(name, 0.0), ratio)
                    assert len(text) <= 4 * budget, (name, args, budget, len(text))
                    reply = json.loads(text)  # one compact JSON text, nothing repeated
                    assert result.structured_content is None and len(result.content) == 1
                    assert text == json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
                    used = reply.get("approx_tokens", reply.get("used_tokens"))
                    assert used == Fourfold.estimate_tokens(text) <= budget, (name, budget)
                    assert reply.get("returned", 1) >= 1 or reply["total"] == 0, (name, budget)
        return worst
    print(_run(go))


def test_a_single_result_larger_than_the_budget_is_cut_and_marked(service):
    async def go():
        async with Client(build_server(service)) as client:
            r = json.loads(delivered(await client.call_tool(
                "find_symbol", {"name": "process_widget_3", "code_lines": 400,
                                "max_tokens": 200})))
            assert r["returned"] == 1 and r["results"][0]["truncated"] is True
            r = json.loads(delivered(await client.call_tool(
                "get_file", {"path": "gen/one.txt", "max_tokens": 200})))
            assert r["returned"] == 1 and r["truncated"] is True
            assert r["cursor"] is None
    _run(go)


def test_the_estimate_is_the_documented_rule():
    # tokens = characters of the compact JSON text // 4 + 1 (at least a quarter token a char)
    assert Fourfold.estimate_tokens("x" * 40) == 11
    assert Fourfold.estimate_tokens({"a": [1, 2]}) == len('{"a":[1,2]}') // 4 + 1
    assert Fourfold.estimate_tokens({"é": "\n"}) == len('{"é":"\\n"}') // 4 + 1


def test_the_repository_map_pages_both_lists_without_repeats(service):
    """Its two lists share one offset: a page that showed more files than symbols showed
    some files again on the next."""
    files, symbols, cursor = [], [], None
    for _ in range(100):
        page = service.repository_context(limit=20, max_tokens=1000, cursor=cursor)
        assert page["approx_tokens"] <= 1000
        files += [f["path"] for f in page["central_files"]]
        symbols += [(s["path"], s["symbol"]) for s in page["central_symbols"]]
        cursor = page["cursor"]
        if cursor is None:
            break
    assert len(files) == len(set(files)) == page["central_files_total"]
    assert len(symbols) == len(set(symbols)) == page["central_symbols_total"]

