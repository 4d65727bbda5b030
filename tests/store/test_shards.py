"""Repositories spread over PostgreSQL servers: a coordinator and two shard servers, each
its own initdb cluster on this machine. The same answers as one server; a search spanning
both shards; a stopped shard named in the answer (and indexing there refused, changing
nothing); a repository moved between shards answering the same afterwards."""
from __future__ import annotations

import re
import shutil

import psycopg
import pytest

from fourfold import Fourfold
from fourfold.errors import FourfoldError
from fourfold.interfaces.cli import main
from tests.conftest import write_tree
from tests.postgres import Cluster

REPOSITORIES = {
    "acme/billing": {
        "invoice.py": "def render_invoice(order):\n    return f'INVOICE {order.total}'\n",
        "tax.py": "from invoice import render_invoice\n\n\ndef vat(amount):\n"
                  "    return amount * 0.2\n\n\ndef billed(order):\n"
                  "    return render_invoice(order)\n"},
    "acme/search": {
        "ranker.py": "def rank_documents(query, docs):\n    return sorted(docs, key=len)\n",
        "index.py": "from ranker import rank_documents\n\n\ndef answer(query, docs):\n"
                    "    return rank_documents(query, docs)\n"},
    "acme/auth": {
        "tokens.py": "def check_token(secret):\n    return secret.startswith('fft_')\n",
        "login.py": "from tokens import check_token\n\n\ndef login(secret):\n"
                    "    return check_token(secret)\n"},
}
QUESTIONS = ["render_invoice", "who calls rank_documents", "how are tokens checked",
             '"INVOICE"', "vat amount", "login"]


@pytest.fixture(scope="module")
def servers():
    """(coordinator URL, one-server URL, shard one URL, shard two URL, shard clusters)."""
    clusters = [Cluster() for _ in range(3)]
    for cluster in clusters:
        cluster.start()
    coordinator, one, two = clusters
    with psycopg.connect(coordinator.url, autocommit=True) as admin:
        admin.execute("CREATE DATABASE single")
        admin.execute("CREATE DATABASE coordinator")
    base = coordinator.url.rsplit("/", 1)[0]
    try:
        yield f"{base}/coordinator", f"{base}/single", one.url, two.url, (one, two)
    finally:
        for cluster in clusters:
            cluster.stop()


@pytest.fixture(scope="module")
def placed(servers, tmp_path_factory):
    """Every repository indexed on one server and on the coordinator; then billing placed
    on shard one, search on shard two, auth left on the coordinator."""
    coordinator, single, one, two, _ = servers
    roots = {}
    for name, files in REPOSITORIES.items():
        roots[name] = write_tree(tmp_path_factory.mktemp("repo"), files)
        for store in (single, coordinator):
            assert main(["index", str(roots[name]), "--store", store,
                         "--repository", name]) == 0
    assert main(["shard", "add", "one", one, "--store", coordinator]) == 0
    assert main(["shard", "add", "two", two, "--store", coordinator]) == 0
    assert main(["shard", "place", "acme/billing", "one", "--store", coordinator]) == 0
    assert main(["shard", "place", "acme/search", "two", "--store", coordinator]) == 0
    return roots


def answers(url: str, name: str | None = None) -> dict:
    """Each question's hits (repository, path, lines) from one repository, or across all."""
    ff = Fourfold(store_url=url)
    out = {}
    for question in QUESTIONS:
        if name is None:
            response = ff.search_repositories(question, None, limit=10)
        else:
            response = ff.in_repository(name).search(question, limit=10)
        out[question] = [(h.repository, h.path, h.start_line, h.end_line)
                         for h in response.hits]
    ff.close()
    return out


def rows_on(url: str, table: str = "files") -> dict[int, int]:
    with psycopg.connect(url) as conn:
        return dict(conn.execute(f"SELECT repo_id, count(*) FROM fourfold.{table} "
                                 "GROUP BY repo_id").fetchall())


def test_the_same_answers_as_one_server(servers, placed):
    coordinator, single, one, two, _ = servers
    ff = Fourfold(store_url=coordinator)
    where = {r["name"]: r.get("shard") for r in ff.repositories()}
    assert where == {"acme/billing": "one", "acme/search": "two", "acme/auth": None}
    billing, search = ff.repository("acme/billing"), ff.repository("acme/search")
    assert set(rows_on(one)) == {billing} and set(rows_on(two)) == {search}
    assert set(rows_on(one, "chunk_postings")) == {billing}  # every table's rows moved
    for name in REPOSITORIES:
        assert answers(coordinator, name) == answers(single, name)
    assert answers(coordinator) == answers(single)
    shards = {s["name"]: s for s in ff.shards()}
    assert shards["one"]["repositories"] == ["acme/billing"]
    assert shards["two"]["unreachable"] is None


def test_a_search_spans_both_shards(servers, placed):
    coordinator = servers[0]
    response = Fourfold(store_url=coordinator).search_repositories(
        "render_invoice rank_documents", None, limit=10)
    found = {h.repository for h in response.hits}
    assert {"acme/billing", "acme/search"} <= found


def test_indexing_writes_to_the_repository_s_shard(servers, placed):
    coordinator, _, one, _, _ = servers
    root = placed["acme/billing"]
    (root / "refund.py").write_text("def refund_order(order):\n    return -order.total\n")
    assert main(["index", str(root), "--store", coordinator,
                 "--repository", "acme/billing"]) == 0
    with psycopg.connect(one) as conn:
        assert conn.execute("SELECT count(*) FROM fourfold.files WHERE path = 'refund.py'"
                            ).fetchone() == (1,)
    hits = Fourfold(store_url=coordinator).in_repository("acme/billing").search("refund_order")
    assert hits.hits[0].path == "refund.py"
    # an edit marks the old chunks and symbols dead on the shard, where they are listed
    (root / "refund.py").write_text("def refund_payment(payment):\n    return 0\n")
    assert main(["index", str(root), "--store", coordinator,
                 "--repository", "acme/billing"]) == 0
    with psycopg.connect(one) as conn:
        assert conn.execute("SELECT count(*) FROM fourfold.dead_entries").fetchone()[0] > 0
    billing = Fourfold(store_url=coordinator).in_repository("acme/billing")
    assert billing.search("refund_payment").hits[0].path == "refund.py"
    assert [d["name"] for d in billing.definitions("refund_payment")] == ["refund_payment"]
    assert not [d for d in billing.definitions("refund_order") if d["name"] == "refund_order"]


def test_a_repository_s_graph_is_patched_on_its_shard(servers, placed):
    """An edit of calls alone in a repository placed on a shard patches its graph there:
    the edited file's input, its edges and the ranks under its new ids."""
    from fourfold.graph.patch import patch_graph

    coordinator, _, _, two, _ = servers
    root = placed["acme/search"]
    ff = Fourfold(root, store_url=coordinator, repository="acme/search")
    ranks = ff.store.ranks_of_files(ff.repo_id(), ["index.py", "ranker.py"])
    assert "index.py" in ranks[1] and ("index.py", "answer") in ranks[0]
    (root / "index.py").write_text("from ranker import rank_documents\n\n\ndef answer(query, "
                                   "docs):\n    # ranked\n    return rank_documents(query, "
                                   "docs)\n")
    ff.index(embed=False, changed=[str(root / "index.py")], graph_later=True)
    assert patch_graph(ff.store, ff.repo_id())
    with psycopg.connect(two) as conn:
        assert conn.execute("SELECT g.file_id FROM fourfold.graph_inputs g JOIN "
                            "fourfold.files f ON f.id = g.file_id WHERE g.path = 'index.py'"
                            ).fetchone() is not None
    callers = ff.references("rank_documents")["results"]
    assert [(r["path"], r["symbol"], r["line"]) for r in callers] == [("index.py", "answer", 6)]
    assert ff.store.ranks_of_files(ff.repo_id(), ["index.py", "ranker.py"]) == ranks
    # a file added, then taken away: patched there too, its ranks made and dropped
    (root / "extra.py").write_text("from ranker import rank_documents\n\n\ndef again(q):\n"
                                   "    return rank_documents(q, [])\n")
    ff.index(embed=False, changed=[str(root / "extra.py")], graph_later=True)
    assert patch_graph(ff.store, ff.repo_id())
    assert ("extra.py", "again") in {(r["path"], r["symbol"])
                                     for r in ff.references("rank_documents")["results"]}
    symbol_ranks, file_ranks = ff.store.ranks_of_files(ff.repo_id(), ["extra.py"])
    assert "extra.py" in file_ranks and ("extra.py", "again") in symbol_ranks
    (root / "extra.py").unlink()
    ff.index(embed=False, changed=[str(root / "extra.py")], graph_later=True)
    assert patch_graph(ff.store, ff.repo_id())
    with psycopg.connect(two) as conn:
        assert conn.execute("SELECT count(*) FROM fourfold.graph_inputs WHERE path = "
                            "'extra.py'").fetchone() == (0,)
    assert ff.catch_up() and not ff.behind()["graph"]
    ff.close()


def test_a_stopped_shard_is_named_and_the_others_answer(servers, placed, capsys):
    coordinator, _, _, _, (_, shard_two) = servers
    before = answers(coordinator, "acme/search")
    shard_two.pause()
    try:
        ff = Fourfold(store_url=coordinator)
        response = ff.search_repositories("render_invoice check_token rank_documents", None)
        assert {h.repository for h in response.hits} == {"acme/billing", "acme/auth"}
        assert list(response.repositories_unavailable) == ["acme/search"]
        assert "shard 'two' does not answer" in response.repositories_unavailable["acme/search"]
        with pytest.raises(FourfoldError, match="shard 'two' .* does not answer"):
            ff.in_repository("acme/search").search("rank_documents")
        assert ff.in_repository("acme/billing").search("render_invoice").hits
        status = {r["name"]: r for r in ff.repositories()}
        assert "does not answer" in status["acme/search"]["unreachable"]
        assert status["acme/billing"]["files"] == 3
        # indexing a repository whose shard is down fails clearly and changes nothing
        (placed["acme/search"] / "ranker.py").write_text("def rank_documents(q, d):\n"
                                                         "    return []\n")
        capsys.readouterr()
        assert main(["index", str(placed["acme/search"]), "--store", coordinator,
                     "--repository", "acme/search"]) == 2
        assert "shard 'two'" in capsys.readouterr().err
        with pytest.raises(FourfoldError, match=r"shard 'two' \(127\.0\.0\.1:\d+/postgres\) "
                                                r"does not answer"):
            Fourfold(placed["acme/search"], store_url=coordinator,
                     repository="acme/search").index()
        assert main(["shard", "list", "--store", coordinator]) == 0
        assert "two" in capsys.readouterr().out
        # a repository on the coordinator is indexed meanwhile: its run read every
        # partition for parses to reuse, and failed on the shard it has nothing on
        extra = placed["acme/auth"] / "extra.py"
        extra.write_text("def indexed_while_two_is_down():\n    return 1\n")
        assert main(["index", str(placed["acme/auth"]), "--store", coordinator,
                     "--repository", "acme/auth"]) == 0, capsys.readouterr().err
        assert [m.path for m in Fourfold(store_url=coordinator).in_repository(
            "acme/auth").grep("indexed_while_two_is_down")] == ["extra.py"]
        extra.unlink()
        assert main(["index", str(placed["acme/auth"]), "--store", coordinator,
                     "--repository", "acme/auth"]) == 0, capsys.readouterr().err
        # a second checkout of it, whose graph is a copy of its twin's: no repository of
        # the shard that does not answer is asked whether it is that twin
        checkout = shutil.copytree(placed["acme/auth"], placed["acme/auth"].parent / "auth2")
        assert main(["index", str(checkout), "--store", coordinator,
                     "--repository", "acme/auth@checkout"]) == 0, capsys.readouterr().err
        twin = Fourfold(store_url=coordinator).in_repository("acme/auth@checkout")
        assert [(r["path"], r["symbol"]) for r in twin.references("check_token")["results"]
                if r["kind"] == "call"] == [("login.py", "login")]
        assert Fourfold(store_url=coordinator).remove_repositories(["acme/auth@checkout"])
    finally:
        shard_two.resume()
    (placed["acme/search"] / "ranker.py").write_text(REPOSITORIES["acme/search"]["ranker.py"])
    assert answers(coordinator, "acme/search") == before


def test_a_moved_repository_answers_the_same(servers, placed):
    coordinator, _, one, two, _ = servers
    ff = Fourfold(store_url=coordinator)
    before = {name: answers(coordinator, name) for name in REPOSITORIES}
    billing = ff.repository("acme/billing")
    assert ff.place_repository("acme/billing", "two") > 0
    assert billing not in rows_on(one) and billing in rows_on(two)
    assert ff.place_repository("acme/search", "coordinator") > 0
    assert ff.repository("acme/search") not in rows_on(two)
    assert {name: answers(coordinator, name) for name in REPOSITORIES} == before
    with pytest.raises(FourfoldError, match="no shard named 'nowhere'"):
        ff.place_repository("acme/auth", "nowhere")
    with pytest.raises(FourfoldError, match="holds a fourfold index of its own"):
        ff.add_shard("again", coordinator)
    # shard one holds no rows now: still, one database is one shard (its rows read twice)
    with pytest.raises(FourfoldError, match="is shard 'one' already"):
        ff.add_shard("twice", one)


def test_a_branch_lives_on_its_family_s_shard_shares_its_documents_and_moves_with_it(
        servers, placed, tmp_path):
    coordinator, _, one, two, _ = servers
    ff = Fourfold(store_url=coordinator)
    ff.place_repository("acme/billing", "one")
    billing = ff.repository("acme/billing")
    documents = rows_on(one, "documents")[billing]
    root = write_tree(tmp_path / "feature", {
        **REPOSITORIES["acme/billing"], "tax.py": "def vat(amount):\n    return amount * 0.25\n"})
    assert main(["index", str(root), "--store", coordinator,
                 "--repository", "acme/billing@feature"]) == 0
    feature = ff.repository("acme/billing@feature")
    where = {r["name"]: r.get("shard") for r in ff.repositories()}
    assert where["acme/billing@feature"] == "one"
    # its files on the shard; of its documents only the changed tax.py is new there
    assert rows_on(one)[feature] == 2 and rows_on(one, "documents")[billing] == documents + 1
    branch = ff.in_repository("acme/billing@feature")
    assert [m.text for m in branch.grep("0.25")] == ["    return amount * 0.25"]
    assert list(ff.in_repository("acme/billing").grep("0.25")) == []
    assert ff.place_repository("acme/billing@feature", "two") > 0  # the family moves whole
    where = {r["name"]: r.get("shard") for r in ff.repositories()}
    assert where["acme/billing"] == where["acme/billing@feature"] == "two"
    assert billing not in rows_on(one, "documents") and feature not in rows_on(one)
    assert [m.text for m in branch.grep("0.25")] == ["    return amount * 0.25"]
    assert ff.in_repository("acme/billing").search("render_invoice").hits[0].path == \
        "invoice.py"
    ff.close()


def test_a_repository_on_a_shard_is_removed_there_and_leaves_its_bounds(
        servers, placed, tmp_path):
    coordinator, _, one, two, _ = servers
    ff = Fourfold(store_url=coordinator)
    before = {name: answers(coordinator, name) for name in REPOSITORIES}
    root = write_tree(tmp_path / "extra", {"extra.py": "def extra_work():\n    return 1\n"})
    for name in ("acme/extra", "acme/extra@next"):
        assert main(["index", str(root), "--store", coordinator, "--repository", name]) == 0
    assert ff.place_repository("acme/extra", "two") > 0
    extra, following = ff.repository("acme/extra"), ff.repository("acme/extra@next")
    assert {extra, following} <= set(rows_on(two))
    assert main(["remove", "acme/extra", "acme/extra@next", "--store", coordinator]) == 0
    for table in ("files", "documents", "chunks", "chunk_postings", "edges"):
        assert not {extra, following} & set(rows_on(two, table))
    with psycopg.connect(coordinator) as conn:
        bounds = conn.execute("SELECT pg_get_expr(relpartbound, oid) FROM pg_class WHERE "
                              "relname = 'files__two'").fetchone()[0]
    assert not {extra, following} & {int(n) for n in re.findall(r"-?\d+", bounds)}
    assert "acme/extra" not in {s["name"]: s for s in ff.shards()}["two"]["repositories"]
    assert {name: answers(coordinator, name) for name in REPOSITORIES} == before
    ff.close()


def _as_at_schema_9(coordinator: str, shard: str) -> None:
    """Turn a coordinator and its shard back into what schema 9 kept: a row per (chunk,
    term) and per (symbol, token), on the shard for the repositories placed there."""
    from fourfold.store import postgres
    from tests.store import schema9

    with psycopg.connect(coordinator, autocommit=True) as conn:
        rows = schema9.rows_of_lists(conn)
        bounds = conn.execute("SELECT pg_get_expr(c.relpartbound, c.oid) FROM pg_class c "
                              "WHERE c.relname = 'chunk_postings__one'").fetchone()[0]
        trgm = postgres.trgm_schema(conn.cursor())
    # (the shard first: a coordinator's transaction that has read it holds it open)
    with psycopg.connect(shard, autocommit=True) as on_shard:
        schema9.make_tables(on_shard.cursor(), trgm, partitioned=False)
        schema9.later_steps_undone(on_shard.cursor(), coordinator=False)
    with psycopg.connect(coordinator, autocommit=True) as conn, conn.transaction(), \
            conn.cursor() as cur:
        schema9.make_tables(cur, trgm, partitioned=True)
        for table in rows:
            cur.execute(f"CREATE FOREIGN TABLE fourfold.{table}__one PARTITION OF "
                        f"fourfold.{table} {bounds} SERVER fourfold_shard_one OPTIONS "
                        f"(schema_name 'fourfold', table_name '{table}')")
        schema9.insert_rows(cur, rows)
        schema9.later_steps_undone(cur, coordinator=True)


def test_an_upgrade_turns_every_shard_s_rows_into_word_lists(tmp_path):
    """Schema 10 on a sharded store: the coordinator's and each shard's term and token rows
    become word lists, each on its own server, and every repository answers as before."""
    clusters = [Cluster() for _ in range(2)]
    for cluster in clusters:
        cluster.start()
    try:
        coordinator, shard = clusters[0].url, clusters[1].url
        for name in ("acme/billing", "acme/search"):
            root = write_tree(tmp_path / name.replace("/", "_"), REPOSITORIES[name])
            assert main(["index", str(root), "--store", coordinator, "--repository",
                         name]) == 0
        assert main(["shard", "add", "one", shard, "--store", coordinator]) == 0
        assert main(["shard", "place", "acme/billing", "one", "--store", coordinator]) == 0
        before = {name: answers(coordinator, name) for name in ("acme/billing", "acme/search")}
        billing = Fourfold(store_url=coordinator).repository("acme/billing")
        _as_at_schema_9(coordinator, shard)
        assert set(rows_on(shard, "chunk_terms")) == set(rows_on(shard, "symbol_tokens")) \
            == {billing}
        assert {name: answers(coordinator, name)  # opening the store upgrades it
                for name in ("acme/billing", "acme/search")} == before
        assert set(rows_on(shard, "chunk_postings")) == \
            set(rows_on(shard, "symbol_postings")) == {billing}
        assert set(rows_on(coordinator, "chunk_postings")) == {billing, billing + 1}
        with psycopg.connect(shard) as conn:
            assert conn.execute("SELECT to_regclass('fourfold.chunk_terms'), to_regclass("
                                "'fourfold.symbol_tokens')").fetchone() == (None, None)
    finally:
        for cluster in clusters:
            cluster.stop()


def test_a_new_branch_of_a_placed_family_holds_no_one_back_while_it_indexes(servers, placed,
                                                                            tmp_path):
    """A new branch was moved to its family's shard inside the run's one transaction: the
    partitions' exclusive locks held every search and indexer of the server to its end."""
    import threading
    import time

    coordinator, _, _, _, _ = servers
    ff = Fourfold(store_url=coordinator)
    ff.place_repository("acme/billing", "one")
    root = write_tree(tmp_path / "slow", REPOSITORIES["acme/billing"])
    inside, release = threading.Event(), threading.Event()

    def held(phase, done, total):
        inside.set()
        release.wait(30)  # the run stays open meanwhile

    branch = Fourfold(root, store_url=coordinator, repository="acme/billing@slow")
    run = threading.Thread(target=lambda: branch.index(progress=held, embed=False),
                           daemon=True)
    run.start()
    try:
        assert inside.wait(30)
        found, done = [], threading.Event()
        reader = threading.Thread(target=lambda: (found.extend(Fourfold(
            store_url=coordinator).in_repository("acme/auth").grep("check_token")),
            done.set()), daemon=True)
        started = time.monotonic()
        reader.start()
        assert done.wait(10), "a search of another repository waited for the run"
        assert found and time.monotonic() - started < 10
    finally:
        release.set()
        run.join(60)
    assert not run.is_alive()
    ff.remove_repositories(["acme/billing@slow"])
