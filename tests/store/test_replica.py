"""A streaming read replica of a PostgreSQL store answers searches like its primary, says
how far behind it is, and refuses writes with a clear error."""
from __future__ import annotations

import time

import psycopg

from fourfold import Fourfold
from fourfold.interfaces.cli import main
from tests.conftest import write_tree
from tests.postgres import Cluster


def caught_up(primary: str, replica: str) -> bool:
    """Whether the replica has replayed everything the primary has written so far. The
    insert position, not the write one: the test clusters commit asynchronously, so a
    commit's record may not be written out yet when the indexer returns."""
    with psycopg.connect(primary) as conn:
        written = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]
    with psycopg.connect(replica) as conn:
        return conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn",
                            (written,)).fetchone()[0]


def test_a_read_replica_answers_and_says_how_far_behind(tmp_path, capsys):
    primary, replica = Cluster(), Cluster()
    primary.start()
    try:
        replica.start_as_replica(primary)
        root = write_tree(tmp_path / "repo", {
            "ledger.py": "def post_entry(book, amount):\n    return book.append(amount)\n",
            "report.py": "from ledger import post_entry\n\n\ndef close_month(book):\n"
                         "    return post_entry(book, 0)\n"})
        assert main(["index", str(root), "--store", primary.url, "--repository", "books"]) == 0
        deadline = time.monotonic() + 30
        while not caught_up(primary.url, replica.url):
            assert time.monotonic() < deadline, "the replica did not catch up"
            time.sleep(0.2)
        on_primary = Fourfold(store_url=primary.url).in_repository("books")
        on_replica = Fourfold(store_url=replica.url).in_repository("books")
        for question in ("post_entry", "who calls post_entry", "closing the month"):
            assert [(h.path, h.start_line) for h in on_replica.search(question).hits] == \
                [(h.path, h.start_line) for h in on_primary.search(question).hits]
        lag = on_replica.status()["replica_behind_s"]
        assert 0.0 <= lag < 60.0
        assert "replica_behind_s" not in on_primary.status()
        capsys.readouterr()
        assert main(["status", "--store", replica.url]) == 0
        assert "a read replica" in capsys.readouterr().out
        (root / "audit.py").write_text("def audit():\n    return 1\n")
        assert main(["index", str(root), "--store", replica.url, "--repository", "books"]) == 2
        assert "read-only replica" in capsys.readouterr().err
    finally:
        replica.stop()
        primary.stop()
