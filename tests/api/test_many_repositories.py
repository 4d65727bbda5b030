"""Several repositories in one index: each answers alone, a search can ask several or all,
and every hit of such a search names its repository."""
from __future__ import annotations

import json

import pytest

from fourfold import Fourfold
from fourfold.errors import FourfoldError, NotIndexedError, QueryError
from fourfold.interfaces.cli import main
from fourfold.parsing import parser_fingerprint

from ..conftest import write_tree
from ..servers import free_port

REPOSITORIES = {
    "acme/billing": {
        "invoice.py": '''
            class InvoiceRenderer:
                """Renders an invoice as a PDF document."""

                def render_pdf(self, invoice):
                    return draw_pages(invoice.lines)
            ''',
        "util.py": '''
            def format_money(cents):
                return f"{cents / 100:.2f} EUR"
            ''',
    },
    "acme/auth": {
        "session.py": '''
            def refresh_session_token(session):
                """Issue a new token before the old one expires."""
                session.token = issue_token(session.user)
                return session
            ''',
        "util.py": '''
            def constant_time_compare(a, b):
                return hmac_compare(a, b)
            ''',
    },
    "acme/search": {
        "tokenizer.py": '''
            def tokenize_document(text):
                return [word.lower() for word in text.split()]
            ''',
    },
}


@pytest.fixture(params=["sqlite", "postgres"])
def shared_index(request, tmp_path):
    """The three repositories indexed into one index: an embedded one shared through
    --index-dir, or a PostgreSQL database. Returns (how to open it as CLI arguments,
    name -> Fourfold)."""
    if request.param == "sqlite":
        where = {"index_dir": tmp_path / "shared-index"}
        cli = ["--index-dir", str(tmp_path / "shared-index")]
    else:
        url = request.getfixturevalue("postgres_url")
        where = {"store_url": url}
        cli = ["--store", url]
    opened = {}
    for name, files in REPOSITORIES.items():
        root = write_tree(tmp_path / name.split("/")[1], files)
        ff = Fourfold(root, repository=name, **where)
        ff.index(embed=False)
        opened[name] = ff
    yield cli, opened
    for ff in opened.values():
        ff.close()


def test_each_repository_answers_only_from_itself(shared_index):
    _, ff = shared_index
    billing, auth = ff["acme/billing"], ff["acme/auth"]
    assert billing.search("render invoice pdf").hits[0].path == "invoice.py"
    assert all(h.path != "invoice.py" for h in auth.search("render invoice pdf").hits)
    # the same path in two repositories is two files
    assert [m.text.strip() for m in billing.grep("def ")] == ["def render_pdf(self, invoice):",
                                                              "def format_money(cents):"]
    assert [m.text.strip() for m in auth.grep("def ", path_glob="util.py")] == [
        "def constant_time_compare(a, b):"]
    assert [d["path"] for d in auth.definitions("format_money")] == []
    assert [f["path"] for f in billing.list_files()] == ["invoice.py", "util.py"]


def test_a_search_of_every_repository_narrows_and_names_them(shared_index):
    _, ff = shared_index
    response = ff["acme/auth"].search_repositories("refresh_session_token before it expires")
    top = response.hits[0]
    assert (top.repository, top.path) == ("acme/auth", "session.py")
    assert response.repositories_searched[0] == "acme/auth"
    assert "acme/search" in response.repositories_skipped  # nothing there to go by
    assert set(response.repositories_searched) | set(response.repositories_skipped) == set(
        REPOSITORIES)
    assert all(h.repository in response.repositories_searched for h in response.hits)


def test_a_search_of_named_repositories_stays_in_them(shared_index):
    _, ff = shared_index
    response = ff["acme/billing"].search_repositories(
        "format money", ["acme/auth", "acme/search"])
    assert {h.repository for h in response.hits} <= {"acme/auth", "acme/search"}
    assert all(h.path != "util.py" or h.repository == "acme/auth" for h in response.hits)
    with pytest.raises(QueryError, match="unknown repository 'acme/nowhere'"):
        ff["acme/billing"].search_repositories("format money", ["acme/nowhere"])


def test_other_repositories_text_does_not_decide_which_named_ones_are_searched(
        shared_index, tmp_path, monkeypatch):
    """A token granted some repositories: the others' text, however strong, cannot push its
    own out of the evidence that picks which of them a question searches."""
    import fourfold.repositories

    cli, ff = shared_index
    where = {"index_dir": cli[1]} if cli[0] == "--index-dir" else {"store_url": cli[1]}
    noise = Fourfold(write_tree(tmp_path / "noise", {
        f"render{i}.py": f'''
            def render_invoice_pdf_{i}(invoice):
                """Render the invoice pdf, render the pdf of the invoice."""
                return render_pdf(invoice, pdf=True)
            ''' for i in range(6)}), repository="acme/noise", **where)
    noise.index(embed=False)
    monkeypatch.setattr(fourfold.repositories, "EVIDENCE_CHUNKS", 3)
    response = ff["acme/auth"].search_repositories("render invoice pdf",
                                                   ["acme/billing", "acme/auth"])
    assert response.repositories_searched == ["acme/billing"]
    assert response.repositories_skipped == ["acme/auth"]
    assert response.hits[0].path == "invoice.py"
    noise.close()


def test_an_unindexed_repository_name_is_a_clear_error(shared_index, tmp_path):
    cli, ff = shared_index
    other = Fourfold(tmp_path / "billing", repository="acme/unknown",
                     **({"index_dir": cli[1]} if cli[0] == "--index-dir" else {"store_url": cli[1]}))
    with pytest.raises(NotIndexedError, match="acme/auth, acme/billing, acme/search"):
        other.search("anything")
    other.close()


@pytest.mark.parametrize("shared_index", ["sqlite"], indirect=True)
def test_a_repository_name_names_one_repository_of_an_embedded_index(shared_index, tmp_path):
    """A second folder under a name the index already gives another is refused, saying
    what to do; the index keeps what it held."""
    cli, ff = shared_index
    other = write_tree(tmp_path / "elsewhere" / "billing", {"util.py": "def moved(): pass\n"})
    same_name = Fourfold(other, repository="acme/billing", index_dir=cli[1])
    with pytest.raises(FourfoldError, match="'acme/billing' is taken in this index by "
                       f"{ff['acme/billing'].root}.*--repository NAME"):
        same_name.index(embed=False)
    same_name.close()
    assert [d["path"] for d in ff["acme/billing"].definitions("format_money")] == ["util.py"]
    assert [r.name for r in ff["acme/billing"].store.repos()] == list(REPOSITORIES)
    # once the first folder is gone (moved), the name moves to the new one, files and all
    billing = ff["acme/billing"]
    before = {f["path"]: f["size"] for f in billing.list_files()}
    moved = billing.root.rename(tmp_path / "moved-billing")
    again = Fourfold(moved, repository="acme/billing", index_dir=cli[1])
    summary = again.index(embed=False)
    assert (again.repo_id(), summary.added, summary.changed) == (billing.repo_id(), 0, 0)
    assert {f["path"]: f["size"] for f in again.list_files()} == before
    assert [r.root for r in again.store.repos()].count(str(moved)) == 1
    again.close()


def test_an_indexed_folder_asked_for_by_another_name_is_refused_not_indexed_again(
        make_tree, capsys):
    """An embedded index holds a folder under one name: another name for it is refused
    with what to do, by index and by a search that would index first."""
    root = make_tree({"a.py": "def hello():\n    return 1\n"})
    assert main(["index", str(root), "--no-embed"]) == 0
    capsys.readouterr()
    expected = (f"{root} is indexed in {root / '.fourfold'} as {root.name!r}: ask for it by "
                f"that name (--repository {root.name}), or take it out (`fourfold remove "
                f"{root.name} --index-dir {root / '.fourfold'}`) and index it again as 'foo'")
    for command in (["index", str(root), "--repository", "foo", "--no-embed"],
                    ["search", "hello", str(root), "--repository", "foo"]):
        assert main(command) == 2
        out, err = capsys.readouterr()
        assert err.strip() == f"fourfold: {expected}" and "indexed" not in out
    assert main(["search", "hello", str(root), "--repository", root.name, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["path"] == "a.py"


@pytest.mark.parametrize("shared_index", ["sqlite"], indirect=True)
def test_an_index_holding_one_name_twice_answers_each_by_id(shared_index):
    """An embedded index written before names were unique may hold one twice: a
    question for each repository by id is answered from that one, and the name alone is
    refused as ambiguous."""
    _, ff = shared_index
    billing, auth = ff["acme/billing"], ff["acme/auth"]
    conn = billing.store._conn()
    with conn:
        conn.execute("UPDATE repos SET name='acme/billing' WHERE id=?", (auth.repo_id(),))
    assert [(d["path"], d["name"]) for d in billing.definitions(
        "constant_time_compare", repo_id=auth.repo_id())] == [("util.py", "constant_time_compare")]
    assert billing.definitions("constant_time_compare") == []
    hits = billing.search("constant_time_compare", repo_id=auth.repo_id(),
                          granularity="function").hits
    assert [(h.path, h.symbol) for h in hits[:1]] == [("util.py", "constant_time_compare")]
    with pytest.raises(QueryError, match="names several repositories"):
        billing.repository("acme/billing")
    assert billing.repository(str(auth.root)) == auth.repo_id()
    assert billing.modality_status(auth.repo_id())["text"] == "ready"


@pytest.mark.parametrize("shared_index", ["sqlite"], indirect=True)
def test_a_name_comes_before_an_id(shared_index, tmp_path):
    """A repository named like another's id is found by its name; the other by its root."""
    cli, ff = shared_index
    billing = ff["acme/billing"]
    named = Fourfold(write_tree(tmp_path / "one", {"one.py": "def one(): pass\n"}),
                     repository=str(billing.repo_id()), index_dir=cli[1])
    named.index(embed=False)
    assert billing.repository(str(billing.repo_id())) == named.repo_id() != billing.repo_id()
    assert billing.repository(str(billing.root)) == billing.repo_id()
    assert billing.in_repository(str(billing.repo_id())).definitions("one")[0]["path"] == "one.py"
    named.close()


@pytest.mark.parametrize("shared_index", ["sqlite"], indirect=True)
def test_a_path_is_looked_up_in_the_repository_whose_root_holds_it(shared_index):
    """The outline of another repository's file (an absolute path) is that repository's,
    though both hold its path."""
    _, ff = shared_index
    billing, auth = ff["acme/billing"], ff["acme/auth"]
    theirs = str(auth.root / "util.py")
    assert billing.located(theirs) == (auth.repo_id(), "util.py")
    assert [node["name"] for node in billing.outline(theirs)] == ["constant_time_compare"]
    assert [node["name"] for node in billing.outline(str(billing.root / "util.py"))] == [
        "format_money"]
    inner = Fourfold(write_tree(billing.root / "inner", {"deep.py": "def deep(): pass\n"}),
                     repository="acme/inner", index_dir=billing.index_dir)
    inner.index(embed=False)  # a repository inside another's folder: the innermost root
    assert billing.located(str(inner.root / "deep.py")) == (inner.repo_id(), "deep.py")
    inner.close()


def test_cli_searches_one_several_or_every_repository(shared_index, capsys, monkeypatch,
                                                       tmp_path):
    cli, _ = shared_index
    monkeypatch.chdir(tmp_path)
    assert main(["search", "tokenize document", *cli, "--repository", "acme/search",
                 "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert [r["path"] for r in one["results"]][:1] == ["tokenizer.py"]
    assert "repository" not in one["results"][0]
    assert main(["search", "tokenize document", *cli, "--repository", "*", "--json"]) == 0
    every = json.loads(capsys.readouterr().out)
    assert (every["results"][0]["repository"], every["results"][0]["path"]) == (
        "acme/search", "tokenizer.py")
    assert every["repositories_searched"][0] == "acme/search"
    assert main(["grep", "def", *cli, "--repository", "acme/auth", "--repository",
                 "acme/search"]) == 2
    assert "answers from one repository" in capsys.readouterr().err


def test_indexers_of_two_repositories_do_not_wait_for_each_other(postgres_url, tmp_path):
    """While one repository's indexing run is open (not committed), another repository
    indexes to the end, and a reader sees the first one's old generation until it commits."""
    from fourfold.store.postgres import PostgresStore
    from tests.store.records import alpha_record

    first = PostgresStore(postgres_url)
    repo = first.ensure_repo("/src/first", "acme/first")
    root = write_tree(tmp_path / "second", REPOSITORIES["acme/search"])
    second = Fourfold(root, store_url=postgres_url, repository="acme/second")
    with first.indexing_lock("acme/first"), first.indexing_run():
        first.write_batch(repo, [alpha_record()], [], [])
        first.mark_indexed(repo, 1.0, "parser")
        second.index(embed=False, wait_s=0)  # neither its lock nor a row of the first's
        assert second.search("tokenize document").hits[0].path == "tokenizer.py"
        assert second.repository_names() == ["acme/second"]  # the first is not done yet
    assert second.repository_names() == ["acme/first", "acme/second"]
    second.close()
    first.close()


@pytest.mark.parametrize("where", ["sqlite", "postgres"])
def test_a_second_branch_writes_only_the_files_that_differ(where, request, tmp_path):
    """One document per path and content, shared by every branch holding it (on a server,
    by the branches of one family: acme/app@main and acme/app@feature); the same content at
    another path is parsed once and written again."""
    index = ({"index_dir": tmp_path / "index"} if where == "sqlite"
             else {"store_url": request.getfixturevalue("postgres_url")})
    files = {f"pkg/mod{i}.py": f"from pkg.util import respond\n\n\ndef handler_{i}(request):"
             f"\n    return respond({i})\n" for i in range(11)}
    files["pkg/util.py"] = "def respond(code):\n    return code\n"
    main_root = write_tree(tmp_path / "main", files)
    feature_root = write_tree(tmp_path / "feature", {
        **files, "pkg/mod3.py": "def handler_3(request, retries):\n    return retry(3)\n"})
    main = Fourfold(main_root, repository="acme/app@main", **index)
    first = main.index(embed=False)
    feature = Fourfold(feature_root, repository="acme/app@feature", **index)
    second = feature.index(embed=False)
    assert (first.shared, first.reused, first.added) == (0, 0, 12)
    assert (second.shared, second.reused, second.added) == (11, 0, 12)  # only mod3.py is new
    assert len(main.store.held_documents(main.repo_id(), parser_fingerprint())) == 13
    # the shared definition is ranked in each branch's own graph
    for ff, callers in ((main, 11), (feature, 10)):
        assert ff.map()["symbols"][0]["symbol"] == "respond"
        assert ff.references("respond")["total"] == callers
    text = {"modalities": ("text",)}
    assert [h.path for h in feature.search("retries", **text).hits] == ["pkg/mod3.py"]
    assert main.search("retries", **text).hits == []
    assert {r["name"]: r["chunks"] for r in main.status()["repositories"]} == {
        "acme/app@main": 23, "acme/app@feature": 22}
    for ff in (main, feature):
        assert [d["path"] for d in ff.definitions("handler_7")] == ["pkg/mod7.py"]
        assert len(ff.symbols("function")) == 12
        assert [h.path for h in ff.grep("respond(7)")] == ["pkg/mod7.py"]
    assert [d["signature"] for d in feature.definitions("handler_3")] == [
        "def handler_3(request, retries):"]
    assert [d["signature"] for d in main.definitions("handler_3")] == [
        "def handler_3(request):"]
    assert [h.path for h in feature.grep("retry(3)")] == ["pkg/mod3.py"]
    assert list(main.grep("retry(3)")) == []
    # a file main drops stays whole in the feature branch that still holds it
    (main_root / "pkg/mod7.py").unlink()
    main.index(embed=False)
    assert main.definitions("handler_7") == [] and list(main.grep("respond(7)")) == []
    assert [d["path"] for d in feature.definitions("handler_7")] == ["pkg/mod7.py"]
    assert [h.path for h in feature.grep("respond(7)")] == ["pkg/mod7.py"]
    assert len(main.store.held_documents(main.repo_id(), parser_fingerprint())) == 13
    # the same contents at other paths are other documents: parsed once, written again
    moved = Fourfold(write_tree(tmp_path / "moved", {
        f"src/{path}": text for path, text in files.items()}), repository="acme/moved", **index)
    third = moved.index(embed=False)
    assert (third.shared, third.reused, third.added) == (0, 12, 12)
    for ff in (main, feature, moved):
        ff.close()


def test_a_server_that_is_down_is_one_clear_line_and_exit_code_2(capsys, tmp_path):
    url = f"postgresql://fourfold:secret@127.0.0.1:{free_port()}/fourfold"
    assert main(["search", "anything", "--store", url, "--repository", "acme/api"]) == 2
    assert main(["index", str(write_tree(tmp_path / "r", {"a.py": "x = 1\n"})), "--store",
                 url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "Traceback" not in err and "secret" not in err
    assert err.startswith("fourfold: cannot connect to the PostgreSQL store at 127.0.0.1:")
