"""Taking a repository out of an index: it stops answering, every row only it held goes
(files, documents, graph, codes, statistics, settings, vectors no chunk uses), the others
answer as before, and its id is never given again."""
from __future__ import annotations

import json
import sqlite3

import psycopg
import pytest

from fourfold import Fourfold
from fourfold.errors import NotIndexedError, QueryError
from fourfold.interfaces.cli import main
from fourfold.store.index_dir import DB_NAME
from fourfold.store.sqlite import COMPACTED_FREE_SHARE

from ..conftest import write_tree

REPOSITORIES = {
    "acme/billing": {
        "invoice.py": "from util import format_money\n\n\ndef render_invoice(order):\n"
                      "    \"\"\"Render an invoice as text.\"\"\"\n"
                      "    return 'INVOICE ' + format_money(order.total)\n",
        "util.py": "def format_money(cents):\n    return f'{cents / 100:.2f} EUR'\n",
    },
    "acme/auth": {
        "session.py": "from util import issue_token\n\n\ndef refresh_session(session):\n"
                      "    \"\"\"Issue a new token before the old one expires.\"\"\"\n"
                      "    session.token = issue_token(session.user)\n    return session\n",
        "util.py": "def issue_token(user):\n    return 'fft_' + user.name\n",
    },
}
QUESTIONS = ["refresh the session token", "issue_token", "who calls issue_token"]


@pytest.fixture(params=["sqlite", "postgres"])
def two_repositories(request, tmp_path):
    """Both repositories indexed (with vectors) into one embedded index or one PostgreSQL
    database: (how to open it, name -> root)."""
    if request.param == "sqlite":
        where = {"index_dir": tmp_path / "shared-index"}
    else:
        where = {"store_url": request.getfixturevalue("postgres_url")}
    roots = {}
    for name, files in REPOSITORIES.items():
        roots[name] = write_tree(tmp_path / name.split("/")[1], files)
        ff = Fourfold(roots[name], repository=name, **where)
        ff.index()
        ff.close()
    return where, roots


def rows_naming(where: dict, repo_id: int) -> dict[str, int]:
    """Rows of every table with a repository column that name `repo_id`, and the settings
    and facts kept under its id."""
    found = {}
    if "index_dir" in where:
        with sqlite3.connect(where["index_dir"] / DB_NAME) as conn:
            tables = [row[0] for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table'")]
            for table in tables:
                columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
                if "repo_id" in columns:
                    found[table] = conn.execute(f"SELECT count(*) FROM {table} WHERE "
                                                "repo_id=?", (repo_id,)).fetchone()[0]
            keys = [row[0] for row in conn.execute("SELECT key FROM meta")]
    else:
        with psycopg.connect(where["store_url"]) as conn:
            tables = [row[0] for row in conn.execute(
                "SELECT DISTINCT table_name FROM information_schema.columns WHERE "
                "table_schema = 'fourfold' AND column_name = 'repo_id'")]
            for table in tables:
                found[table] = conn.execute(f"SELECT count(*) FROM fourfold.{table} WHERE "
                                            "repo_id = %s", (repo_id,)).fetchone()[0]
            keys = [row[0] for row in conn.execute("SELECT key FROM fourfold.meta")]
    found["meta"] = sum(key.endswith(f":{repo_id}") or f":{repo_id}:" in key for key in keys)
    return {table: count for table, count in found.items() if count}


def answers(ff: Fourfold) -> dict:
    return {question: [(h.path, h.start_line, h.end_line) for h in
                       ff.search(question, limit=10).hits] for question in QUESTIONS}


def test_a_removed_repository_leaves_nothing_and_the_others_answer_as_before(
        two_repositories):
    where, roots = two_repositories
    billing = Fourfold(roots["acme/billing"], repository="acme/billing", **where)
    auth = Fourfold(roots["acme/auth"], repository="acme/auth", **where)
    before = answers(auth)
    model = auth.semantic.embedder.name
    vectors, billing_id = auth.store.vector_count(model), billing.repo_id()
    billing.search("render invoice", modalities=("semantic",))
    assert billing.store._codes.held((billing_id, model)) is not None
    assert rows_naming(where, billing_id)  # the check below can see rows where there are
    assert [r.name for r in auth.store.repos(only=[billing_id])] == ["acme/billing"]
    removed = auth.remove_repositories(["acme/billing"])
    assert [(r["name"], r["files"]) for r in removed] == [("acme/billing", 2)]
    assert auth.repository_names() == ["acme/auth"]
    assert rows_naming(where, billing_id) == {}
    if "index_dir" in where:  # the space it took goes back to the disk
        with sqlite3.connect(where["index_dir"] / DB_NAME) as conn:
            pages, free = (conn.execute(f"PRAGMA {count}").fetchone()[0]
                           for count in ("page_count", "freelist_count"))
        assert free <= pages * COMPACTED_FREE_SHARE
    # the vectors only its chunks used went; the other repository's stay
    assert 0 < auth.store.vector_count(model) < vectors
    assert auth.store.vector_progress(model)[0] == auth.store.vector_progress(model)[1]
    assert answers(auth) == before
    assert [d["path"] for d in auth.definitions("format_money")] == []
    assert [m.path for m in auth.grep("def ")] == ["session.py", "util.py"]
    with pytest.raises((NotIndexedError, QueryError)):
        billing.search("render invoice")
    assert billing.store._codes.held((billing_id, model)) is None  # let go, in that process
    with pytest.raises(QueryError, match="unknown repository 'acme/billing'"):
        auth.remove_repositories(["acme/billing"])
    # indexed again, it is a new repository with a new id, and answers as before
    billing.index()
    assert billing.repo_id() > billing_id
    assert billing.search("render invoice").hits[0].path == "invoice.py"
    assert [d["path"] for d in billing.definitions("format_money")] == ["util.py"]
    assert answers(auth) == before
    billing.close()
    auth.close()


def test_a_process_lets_go_of_a_removed_repository_it_answered_for(two_repositories,
                                                                    tmp_path):
    """A server's object that answered for other repositories (a view of each, their
    codes) lets go of a removed one on its next question, whichever repository it asks."""
    where, roots = two_repositories
    server = Fourfold(write_tree(tmp_path / "third", {"c.py": "def gamma():\n    pass\n"}),
                      repository="acme/third", **where)
    server.index(embed=False)
    billing_id = server.repository("acme/billing")
    model = server.semantic.embedder.name
    assert server.in_repository("acme/billing").search(
        "render invoice", modalities=("semantic",)).hits
    assert billing_id in server._views and server.store._codes.held((billing_id, model))
    remover = Fourfold(roots["acme/billing"], repository="acme/billing", **where)
    remover.remove_repositories(["acme/billing"])
    assert server.in_repository("acme/auth").search("refresh the session token").hits
    assert billing_id not in server._views
    assert server.store._codes.held((billing_id, model)) is None
    remover.close()
    server.close()


def test_the_last_repositories_ids_are_not_given_again(two_repositories, tmp_path):
    where, roots = two_repositories
    third = Fourfold(write_tree(tmp_path / "third", {"c.py": "def gamma():\n    pass\n"}),
                     repository="acme/third", **where)
    third.index(embed=False)
    ids = sorted(third.repository(name) for name in ("acme/billing", "acme/auth", "acme/third"))
    third.remove_repositories([str(ids[-1]), "acme/auth"])  # by id and by name
    other = Fourfold(write_tree(tmp_path / "other", {"a.py": "def alpha():\n    pass\n"}),
                     repository="acme/other", **where)
    other.index(embed=False)
    assert other.repo_id() > ids[-1]
    other.close()
    third.close()


def test_a_process_serving_a_removed_repository_indexes_it_anew_whole(two_repositories):
    """A watcher's object whose repository another process removed: its next run makes a
    new repository, with its graph and binary codes, and nothing is written under the old
    id."""
    where, roots = two_repositories
    watcher = Fourfold(roots["acme/billing"], repository="acme/billing", **where)
    old = watcher.repo_id()
    assert watcher.references("format_money")["total"] == 1
    remover = Fourfold(roots["acme/auth"], repository="acme/auth", **where)
    remover.remove_repositories(["acme/billing"])
    watcher.index()
    assert watcher.repo_id() > old
    assert watcher.references("format_money")["total"] == 1
    assert watcher.behind() == {"graph": False, "codes": False}
    assert watcher.store.code_mean(watcher.repo_id(), watcher.semantic.embedder.name)
    assert rows_naming(where, old) == {}
    watcher.close()
    remover.close()


def test_an_interrupted_removal_is_finished_before_the_repository_is_indexed_again(
        two_repositories, monkeypatch, capsys):
    where, roots = two_repositories
    billing = Fourfold(roots["acme/billing"], repository="acme/billing", **where)
    old = billing.repo_id()
    store_type = type(billing.store)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        # after its first step: SQLite's files go as written batches, a server's last rows
        # in one transaction
        patched.setattr(store_type, "write_batch", interrupted)
        patched.setattr(store_type, "_take_out_rows", interrupted, raising=False)
        with pytest.raises(KeyboardInterrupt):
            billing.remove_repositories(["acme/billing"])
    with pytest.raises(QueryError, match="is being taken out of the index"):
        billing.index()
    assert [r["name"] for r in billing.status()["repositories"] if r.get("removing")] == [
        "acme/billing"]
    at = (["--index-dir", str(where["index_dir"])] if "index_dir" in where
          else ["--store", where["store_url"]])
    assert main(["status", str(roots["acme/auth"]), *at]) == 0
    assert "run `fourfold remove acme/billing` again" in capsys.readouterr().out
    with pytest.raises(NotIndexedError):
        billing.search("render invoice")
    billing.remove_repositories(["acme/billing"])
    assert rows_naming(where, old) == {}
    billing.index()
    assert billing.repo_id() > old
    assert billing.search("render invoice").hits[0].path == "invoice.py"
    billing.close()


def test_a_setting_of_another_root_stays(tmp_path):
    """Only the removed repository's settings go, however like another's their names are
    (SQLite's LIKE ignores case)."""
    index = tmp_path / "index"
    upper = Fourfold(write_tree(tmp_path / "Proj", {"a.py": "A = 1\n"}), index_dir=index)
    upper.index(embed=False)
    lower = Fourfold(write_tree(tmp_path / "proj", {"b.py": "B = 1\n"}), index_dir=index,
                     max_file_bytes=4096)
    lower.index(embed=False)
    lower.remove_repositories(["Proj"])
    assert Fourfold(tmp_path / "proj", index_dir=index).max_file_bytes == 4096
    upper.close()
    lower.close()


def test_a_family_s_first_repository_goes_after_its_branches(postgres_url, tmp_path):
    """On a server a repository's branches share its documents: alone it is refused while
    they are there; named together, the branches go first; a branch alone goes and leaves
    what the others share."""
    files = {f"mod{i}.py": f"def handler_{i}(request):\n    return {i}\n" for i in range(4)}
    roots = {"acme/app": write_tree(tmp_path / "main", files),
             "acme/app@feature": write_tree(tmp_path / "feature", {
                 **files, "mod3.py": "def handler_3(request, retries):\n    return 3\n"}),
             "acme/app@fix": write_tree(tmp_path / "fix", {
                 **files, "mod2.py": "def handler_2(request):\n    return 22\n"})}
    opened = {name: Fourfold(root, repository=name, store_url=postgres_url)
              for name, root in roots.items()}
    for ff in opened.values():
        ff.index(embed=False)
    main_ff = opened["acme/app"]
    with pytest.raises(QueryError, match="acme/app@feature, acme/app@fix, which share them"):
        main_ff.remove_repositories(["acme/app"])
    with pytest.raises(QueryError, match="of acme/app@feature, which share them"):
        main_ff.remove_repositories(["acme/app@fix", "acme/app"])
    assert main_ff.search("handler_1").hits[0].path == "mod1.py"  # nothing was taken
    assert main_ff.repository_names() == ["acme/app", "acme/app@feature", "acme/app@fix"]
    fix_id = opened["acme/app@fix"].repo_id()
    main_ff.remove_repositories(["acme/app@fix"])
    assert rows_naming({"store_url": postgres_url}, fix_id) == {}
    for name in ("acme/app", "acme/app@feature"):  # the shared documents stay whole
        assert [d["path"] for d in opened[name].definitions("handler_1")] == ["mod1.py"]
        assert [m.text for m in opened[name].grep("return 2")] == ["    return 2"]
    assert [d["signature"] for d in opened["acme/app@feature"].definitions("handler_3")] == [
        "def handler_3(request, retries):"]
    assert [m.text for m in main_ff.grep("return 22")] == []  # the fix's own document went
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM fourfold.documents WHERE "
                            "path = 'mod2.py'").fetchone()[0] == 1
    ids = [opened[name].repo_id() for name in ("acme/app", "acme/app@feature")]
    main_ff.remove_repositories(["acme/app", "acme/app@feature"])
    assert main_ff.repository_names() == []
    for repo_id in ids:
        assert rows_naming({"store_url": postgres_url}, repo_id) == {}
    for ff in opened.values():
        ff.close()


def test_cli_removes_from_a_shared_index(two_repositories, capsys, monkeypatch):
    where, roots = two_repositories
    at = (["--index-dir", str(where["index_dir"])] if "index_dir" in where
          else ["--store", where["store_url"]])
    assert main(["remove", "acme/nowhere", *at]) == 2
    assert "unknown repository 'acme/nowhere'" in capsys.readouterr().err
    if "index_dir" in where:  # a server named by $FOURFOLD_STORE is not the index named
        monkeypatch.setenv("FOURFOLD_STORE", "postgresql://nobody@127.0.0.1:1/nothing")
        assert main(["remove", "acme/billing", *at]) == 2
        assert "--index-dir" in capsys.readouterr().err
        monkeypatch.delenv("FOURFOLD_STORE")
    assert main(["remove", "acme/billing", *at, "--dry-run"]) == 0
    assert capsys.readouterr().out.startswith("would remove acme/billing (")
    assert main(["status", *at, str(roots["acme/auth"]), "--json"]) == 0
    assert '"acme/billing"' in capsys.readouterr().out  # nothing was removed
    assert main(["token", "create", "bot", *at, "--repository", "acme/billing"]) == 0
    assert main(["token", "create", "all", *at]) == 0  # every repository: not named
    capsys.readouterr()
    assert main(["remove", "acme/billing", *at, "--json"]) == 0
    removed = json.loads(capsys.readouterr().out)["results"]
    assert [(r["name"], r["granted_to"]) for r in removed] == [("acme/billing", ["bot"])]
    assert main(["remove", "acme/auth", *at]) == 0
    assert capsys.readouterr().out.startswith("removed acme/auth (")
    assert main(["status", *at, str(roots["acme/auth"])]) == 1  # an empty index: exit 1
    assert "nothing indexed yet" in capsys.readouterr().out


def test_cli_remove_takes_odd_index_paths_clearly(tmp_path, capsys):
    """The paths `remove` is given: an index reached through a symlink the user names
    works; a folder outside any index, a folder that holds none and a name that is not
    UTF-8 are each one clear line and exit code 2, with nothing created."""
    index = tmp_path / "index"
    ff = Fourfold(write_tree(tmp_path / "repo", {"a.py": "A = 1\n"}), index_dir=index)
    ff.index(embed=False)
    ff.close()
    (tmp_path / "link").symlink_to(index, target_is_directory=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    odd = tmp_path / b"\xff-index".decode("utf-8", "surrogateescape")
    odd.mkdir()
    for args in (["--path", str(outside)], ["--index-dir", str(outside)],
                 ["--index-dir", str(odd)]):
        assert main(["remove", "repo", *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
    assert list(outside.iterdir()) == [] and list(odd.iterdir()) == []
    assert main(["remove", "repo", "--index-dir", str(tmp_path / "link")]) == 0
    assert capsys.readouterr().out.startswith("removed repo (")
