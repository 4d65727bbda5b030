"""The MCP tools over a shared server store holding several repositories: the search tools
ask all of them (narrowed, each hit naming its repository), the others need one named, and
the server neither indexes nor watches."""
from __future__ import annotations

import pytest
from mcp import Client

from fourfold import Fourfold
from fourfold.errors import FourfoldError
from fourfold.interfaces.mcp.server import build_server
from fourfold.interfaces.mcp.tools import FourfoldService
from tests.conftest import write_tree
from tests.interfaces.test_mcp import call, call_error, run

BILLING = {"invoice.py": "class InvoiceRenderer:\n    def render_pdf(self, invoice):\n"
                         "        return draw_pages(invoice)\n"}
AUTH = {"session.py": "def refresh_session_token(session):\n    return issue_token(session)\n"}


@pytest.fixture
def service(postgres_url, tmp_path):
    for name, files in (("acme/billing", BILLING), ("acme/auth", AUTH)):
        ff = Fourfold(write_tree(tmp_path / name.split("/")[1], files), store_url=postgres_url,
                      repository=name)
        ff.index(embed=False)
        ff.close()
    served = FourfoldService(store_url=postgres_url).start()
    yield served
    served.close()


@pytest.fixture
def server(service):
    return build_server(service)


def test_tools_over_a_store_of_several_repositories(server):
    async def go():
        async with Client(server) as client:
            found = await call(client, "intelligent_search",
                               {"query": "render the invoice as a pdf"})
            assert found["results"][0]["repository"] == "acme/billing"
            assert found["results"][0]["path"] == "invoice.py"
            assert found["repositories_searched"][0] == "acme/billing"
            one = await call(client, "intelligent_search",
                             {"query": "refresh session token", "repository": "acme/auth"})
            assert [r["path"] for r in one["results"]][:1] == ["session.py"]
            assert "repository" not in one["results"][0]
            text = await call_error(client, "find_symbol", {"name": "render_pdf"})
            assert "name one in `repository`: acme/auth, acme/billing" in text
            symbol = await call(client, "find_symbol",
                                {"name": "render_pdf", "repository": "acme/billing"})
            assert symbol["results"][0]["path"] == "invoice.py"
            overview = await call(client, "repository_context", {})
            assert sorted(r["name"] for r in overview["repositories"]) == [
                "acme/auth", "acme/billing"]
            assert "does not read files" in await call_error(client, "reindex", {})
    run(go)


def test_file_paths_on_a_server_stay_inside_the_repository(service, tmp_path):
    """The server reads files from the index, not a disk: a stored path answers, anything
    that would leave the repository is refused, a symlink on the server's disk included."""
    shown = service.get_file("invoice.py", repository="acme/billing")
    assert "class InvoiceRenderer:" in shown["text"]
    root = tmp_path / "billing"  # where acme/billing was indexed from
    (root / "out").symlink_to(tmp_path)
    for bad in ("../auth/session.py", "/etc/passwd", str(tmp_path / "auth" / "session.py"),
                "out/auth/session.py", "caf\udce9.py", "%2e%2e/auth/session.py", ""):
        with pytest.raises(FourfoldError):
            service.get_file(bad, repository="acme/billing")
    assert service.get_file(str(root / "invoice.py"), repository="acme/billing")["text"] \
        == shown["text"]


def test_a_question_for_a_repository_not_on_the_server_indexes_nothing(postgres_url, tmp_path,
                                                                          monkeypatch, capsys):
    """A mistyped --repository on a server store indexed the folder the caller stood in
    into the team's index under that name."""
    from fourfold.interfaces.cli import main

    here = write_tree(tmp_path / "anywhere", {"private.py": "SECRET_NOTE = 1\n"})
    monkeypatch.chdir(here)
    assert main(["search", "where is the note", "--store", postgres_url,
                 "--repository", "nope"]) == 2
    err = capsys.readouterr().err
    assert "'nope' is not indexed" in err and "Traceback" not in err
    assert "nope" not in Fourfold(None, store_url=postgres_url).repository_names()


def test_a_first_index_that_fails_leaves_no_repository_behind(postgres_url, tmp_path,
                                                             monkeypatch):
    """The repository's row is written before its run (a transaction of its own): where
    that first run fails, nothing of it is kept, the row neither."""
    from fourfold.store.postgres import PostgresStore

    kept = write_tree(tmp_path / "kept", AUTH)
    Fourfold(kept, store_url=postgres_url, repository="kept").index(embed=False)
    failing = write_tree(tmp_path / "failing", BILLING)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(PostgresStore, "write_batch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Fourfold(failing, store_url=postgres_url, repository="failing").index(embed=False,
                                                                             workers=1)
    monkeypatch.undo()

    def listed() -> list[str]:  # every repository row, indexed or not
        return sorted(r.name for r in PostgresStore(postgres_url).repos(counts=False))

    assert listed() == ["kept"]
    Fourfold(failing, store_url=postgres_url, repository="failing").index(embed=False)
    assert listed() == ["failing", "kept"]


def test_the_overview_of_a_server_pages_its_repositories(service):
    """It listed every repository whatever the budget (3,647 tokens at max_tokens=100 with
    40 repositories)."""
    first = service.repository_context(limit=1)
    assert first["total"] == 2 and len(first["repositories"]) == 1 and first["cursor"]
    second = service.repository_context(limit=1, cursor=first["cursor"])
    assert len(second["repositories"]) == 1 and second["cursor"] is None
    assert sorted(r["name"] for r in first["repositories"] + second["repositories"]) == [
        "acme/auth", "acme/billing"]
    small = service.repository_context(max_tokens=300)
    assert small["approx_tokens"] <= 300 and small["repositories"]
