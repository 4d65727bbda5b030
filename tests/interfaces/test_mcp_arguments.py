"""What a careless or hostile agent's arguments cost the MCP tools: memory, budgets and
pages stay bounded, a stale cursor or a stale match is no crash, a long line still shows
what matched."""
from __future__ import annotations

import tracemalloc

import pytest

from fourfold.errors import FourfoldError, QueryError
from fourfold.interfaces.mcp import tools
from fourfold.interfaces.mcp.paging import approx_tokens
from fourfold.interfaces.mcp.tools import FourfoldService
from tests.conftest import write_tree

WIDE = "x" * 120
FILES = {
    **{f"data/part{i}.txt": "".join(f"row {n} alpha {WIDE}\n" for n in range(2000))
       for i in range(6)},
    "src/app.py": "from src.util import helper\n\n\ndef main():\n    return helper()\n",
    "src/util.py": "def helper():\n    return 1\n\n\ndef helper2():\n    return 2\n",
    "src/more.py": "def helper():\n    return 3\n",
    "min/bundle.js": "var a=1;" * 20_000 + "needle_long();" + "var b=2;" * 5_000 + "\n",
}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return write_tree(tmp_path_factory.mktemp("arguments") / "repo", FILES)


@pytest.fixture(scope="module")
def service(root):
    svc = FourfoldService(root, watch=False, embed=False).start(block=True)
    yield svc
    svc.close()


def test_a_grep_with_context_holds_no_context_for_lines_it_does_not_show(service):
    """Each of 12,000 matches' 21 lines of context were made and cached: about 1 GB per
    call for wide files, 32 calls cached."""
    service.clear_cache()
    tracemalloc.start()
    try:
        found = service.text_pattern_search("alpha", context_lines=10, limit=1, max_tokens=2000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found["total"] == 12_000 and found["returned"] == 1
    assert len(found["results"][0]["after"]) == 10
    assert peak < 40 * 2 ** 20, f"{peak / 2 ** 20:.0f} MiB"
    # a later page shows its own lines' context
    nxt = service.text_pattern_search("alpha", context_lines=2, limit=2, max_tokens=2000)
    page2 = service.text_pattern_search("alpha", context_lines=2, limit=2, max_tokens=2000,
                                        cursor=nxt["cursor"])
    row = page2["results"][0]
    assert (row["line"], [c["line"] for c in row["before"]]) == (3, [1, 2])


def test_a_cursor_from_before_the_index_changed_is_refused(service, root):
    first = service.list_files(limit=2)
    (root / "src" / "added.py").write_text("x = 1\n")
    try:
        service.reindex()
        with pytest.raises(QueryError, match="the index changed since this cursor"):
            service.list_files(limit=2, cursor=first["cursor"])
        with pytest.raises(QueryError, match="belongs to a different query"):
            service.list_files(limit=3, name="app", cursor=first["cursor"])
    finally:
        (root / "src" / "added.py").unlink()
        service.reindex()


def test_replies_keep_to_max_tokens_whatever_is_echoed(service):
    traceback = "Traceback (most recent call last):\n" + "".join(
        f'  File "src/app.py", line {n}, in main\n    helper_{n}()\n' for n in range(400))
    for budget in (200, 300, 4000):
        reply = service.intelligent_search(traceback, max_tokens=budget)
        assert reply["approx_tokens"] <= budget and approx_tokens(reply) <= budget
        assert len(reply["query"]) <= tools.ECHO_CHARS + 1
    task = service.get_task_context(traceback, max_tokens=2000)
    assert task["used_tokens"] <= 2000 and len(task["task"]) <= tools.ECHO_CHARS + 1
    for tool in (service.find_symbol, service.dependency_search,
                 service.analyze_dependencies):
        with pytest.raises(QueryError, match="at most 1,000"):
            tool("a" * 1_000_001)


def test_capped_totals_say_they_are_lower_bounds(service, monkeypatch):
    monkeypatch.setattr(tools, "DEFINITIONS_CAP", 1)
    assert service.find_symbol("helper")["total_is_lower_bound"] is True
    assert service.structural_search(name="helper")["total_is_lower_bound"] is True
    monkeypatch.setattr(tools, "DEFINITIONS_CAP", 1000)
    service.clear_cache()
    assert service.find_symbol("helper")["total_is_lower_bound"] is False
    monkeypatch.setattr(tools, "SEARCH_DEPTH", 2)
    assert service.intelligent_search("helper returns a number")["total_is_lower_bound"]


def test_a_long_line_is_shown_around_its_match_and_cut_lines_are_said(service):
    found = service.text_pattern_search("needle_long")
    assert "needle_long" in found["results"][0]["text"]
    assert found["results"][0]["text"].startswith("…")
    regex = service.text_pattern_search(r"needle_\w+\(", regex=True)
    assert "needle_long" in regex["results"][0]["text"]
    shown = service.get_file("min/bundle.js", max_tokens=50_000)
    assert shown["truncated"] is True
    assert any("over 2,000 characters are cut (first: line 1)" in n for n in shown["notes"])


def test_similar_code_says_the_semantic_index_is_not_complete(service):
    found = service.find_similar_code("src/util.py", 1)
    assert any("semantic index is not complete" in n for n in found["notes"])


def test_imports_take_a_path_as_get_file_does(service, root):
    expected = service.dependency_search("src/app.py", relation="imports")["results"]
    assert expected
    for written in (str(root / "src" / "app.py"), "./src/app.py"):
        assert service.dependency_search(written, relation="imports")["results"] == expected


def test_a_path_with_a_lone_surrogate_is_refused(service):
    for call in (lambda: service.get_file("src/\ud800.py"),
                 lambda: service.find_similar_code("src/\ud800.py"),
                 lambda: service.list_files(path_glob="src/\ud800*")):
        with pytest.raises(FourfoldError, match="not valid Unicode"):
            call()


def test_weights_past_the_bound_are_refused(service):
    with pytest.raises(QueryError, match="from 0 to 1,000"):
        service.intelligent_search("helper", weights={"text": 1.7e308, "semantic": 1.7e308})


def test_context_of_a_match_whose_file_changed_since_is_no_crash(service, root):
    matches = service.ff.grep("helper2")
    (root / "src" / "util.py").write_text("x = 1\n")
    try:
        service.reindex()
        rows = service.ff.with_context(matches, 3)
        assert rows[0]["line"] == 5 and all(c["line"] <= 5 for c in rows[0]["before"])
    finally:
        (root / "src" / "util.py").write_text(FILES["src/util.py"])
        service.reindex()


def test_cached_result_lists_are_bounded_by_rows(service, monkeypatch):
    from fourfold.interfaces import service as shared

    monkeypatch.setattr(shared, "CACHED_ROWS", 15_000)
    service.clear_cache()
    for pattern in ("alpha", "row", "xxxx"):
        service.text_pattern_search(pattern, limit=1)
    held = sum(len(rows) for rows in service._cache.values())
    assert len(service._cache) == 1 and held == 12_001  # the newest list is kept


def test_an_error_does_not_send_a_huge_argument_back(service):
    from mcp import Client

    from fourfold.interfaces.mcp.server import build_server
    from tests.interfaces.test_mcp import call_error, run

    async def go():
        async with Client(build_server(service)) as client:
            text = await call_error(client, "get_file", {"path": "src/" + "a" * 100_000})
            assert len(text) < 1200 and "…" in text
    run(go)
