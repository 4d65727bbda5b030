"""Access tokens over HTTP: a token sees only the repositories it is granted, through every
tool, and a revoked one is refused from the next request on."""
from __future__ import annotations

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from fourfold.access import Grant
from fourfold.errors import QueryError
from fourfold.interfaces.caller import current_grant
from fourfold.interfaces.cli import main
from fourfold.interfaces.mcp.tools import FourfoldService
from tests.interfaces.test_mcp import call, call_error, run
from tests.servers import mcp_http_server

def token(capsys, where, name, *granted) -> str:
    args = ["token", "create", name, *where]
    for repo in granted:
        args += ["--repository", repo]
    capsys.readouterr()
    assert main(args) == 0
    return capsys.readouterr().out.strip()


def as_client(url: str, secret: str):
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"})
    return http, Client(streamable_http_client(url, http_client=http))


def status(url: str, secret: str | None) -> int:
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json"}
    if secret:
        headers["Authorization"] = f"Bearer {secret}"
    return httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                                  "params": {}}, headers=headers, timeout=10).status_code


def test_a_token_sees_only_its_repositories(two_repositories, capsys):
    where, serve, _ = two_repositories
    only_two = token(capsys, where, "reader-two", "acme/two")
    everything = token(capsys, where, "reader-all")
    assert only_two.startswith("fft_") and only_two != everything
    with mcp_http_server(serve) as (url, _):
        assert status(url, None) == 401  # tokens exist: none may come in without one
        assert status(url, "fft_guessed") == 401

        async def go():
            with anyio.fail_after(60):
                http, client = as_client(url, only_two)
                async with http, client:
                    found = await call(client, "text_pattern_search",
                                       {"pattern": "SECRET", "repository": "acme/two"})
                    assert [r["path"] for r in found["results"]] == ["two.py"]
                    for tool, args in (
                            ("text_pattern_search", {"pattern": "SECRET",
                                                     "repository": "acme/one"}),
                            ("get_file", {"path": "one.py", "repository": "acme/one"}),
                            ("find_symbol", {"name": "alpha_handler",
                                             "repository": "acme/one"}),
                            ("list_files", {"repository": "acme/one"}),
                            ("repository_context", {"repository": "acme/one"}),
                            ("intelligent_search", {"query": "alpha handler",
                                                    "repository": "acme/one"})):
                        text = await call_error(client, tool, args)
                        assert "not granted" in text and "ALPHA" not in text
                    context = await call(client, "repository_context",
                                         {"repository": "acme/two"})
                    assert [r["name"] for r in context["repositories"]] == ["acme/two"]
                    search = await call(client, "intelligent_search",
                                        {"query": "beta handler", "repository": "acme/two"})
                    assert "ALPHA" not in str(search)
                http, client = as_client(url, everything)
                async with http, client:
                    found = await call(client, "text_pattern_search",
                                       {"pattern": "SECRET", "repository": "acme/one"})
                    assert [r["path"] for r in found["results"]] == ["one.py"]
        run(go)

        assert main(["token", "revoke", "reader-two", *where]) == 0
        assert status(url, only_two) == 401  # at once, without a restart
        assert status(url, everything) != 401  # let in (400: no MCP session yet)


@pytest.fixture
def service(two_repositories):
    """The MCP tools over the two repositories, called in this process (so that nothing
    re-indexes between two calls): serving acme/one's folder, or every repository of
    the server."""
    where, _, one = two_repositories
    if where[0] == "--index-dir":
        tools = FourfoldService(one, index_dir=where[1], watch=False, embed=False)
    else:
        tools = FourfoldService(store_url=where[1], watch=False, embed=False)
    yield tools.start(block=True)
    tools.close()


def test_a_token_is_never_answered_from_another_tokens_cached_answers(service):
    """The same question without a repository means each token's own repositories: the
    answers cached for one are not served to the other."""
    def paths(grant: Grant, tool: str, **args) -> set[str]:
        token = current_grant.set(grant)
        try:
            return {row["path"] for row in getattr(service, tool)(**args)["results"]}
        finally:
            current_grant.reset(token)
    everything = Grant("reader-all", "read", None)
    only_two = Grant("reader-two", "read", frozenset({"acme/two"}))
    assert "one.py" in paths(everything, "intelligent_search", query="handler")
    assert paths(only_two, "intelligent_search", query="handler") == {"two.py"}
    if service.serves_many:
        return  # a server's grep asks for one repository by name
    assert paths(everything, "text_pattern_search", pattern="SECRET") == {"one.py"}
    assert paths(only_two, "text_pattern_search", pattern="SECRET") == {"two.py"}


def test_a_token_learns_nothing_of_repositories_it_is_not_granted(service):
    """A repository that does not exist and one not granted are refused in the same words,
    which name only the token's own; the served repository's index runs and re-indexing
    are not a token's that may not see it."""
    only_two = Grant("reader-two", "write", frozenset({"acme/two"}))
    token = current_grant.set(only_two)
    try:
        refusals = set()
        for asked in ("acme/one", "acme/nowhere", str(service.ff.repository("acme/one")),
                      "999"):
            with pytest.raises(QueryError) as refused:
                service.answering_repository(asked)
            refusals.add(str(refused.value).replace(repr(asked), "NAME"))
        assert len(refusals) == 1 and "acme/one" not in refusals.pop()
        context = service.repository_context()
        assert [r["name"] for r in context["repositories"]] == ["acme/two"]
        assert context["index_bytes"] is None  # how much the others hold
        if not service.serves_many:  # this process indexed acme/one
            assert context["freshness"]["last_index"] is None
            with pytest.raises(QueryError, match="not granted"):
                service.reindex()
            current_grant.set(None)
            everything = service.repository_context(repository="acme/one")
            assert everything["freshness"]["last_index"]["root"] == str(service.root)
            assert everything["index_bytes"] > 0
    finally:
        current_grant.reset(token)


def test_token_list_never_shows_a_secret(two_repositories, capsys):
    where, _, _ = two_repositories
    secret = token(capsys, where, "ci", "acme/one")
    assert main(["token", "list", *where, "--json"]) == 0
    out = capsys.readouterr().out
    assert '"name": "ci"' in out and '"repositories": ["acme/one"]' in out
    assert secret not in out and secret[4:] not in out
    assert main(["token", "create", "bad", *where, "--repository", "acme/nowhere"]) == 2
    assert "unknown repository acme/nowhere" in capsys.readouterr().err
    assert main(["token", "create", "ci", *where]) == 2  # the name is taken
    assert main(["token", "revoke", "nobody", *where]) == 2
