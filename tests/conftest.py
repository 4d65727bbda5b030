from __future__ import annotations

import textwrap
from pathlib import Path

import pytest


def write_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content), encoding="utf-8")
    return root


@pytest.fixture
def make_tree(tmp_path):
    def make(files: dict[str, str | bytes], name: str = "repo") -> Path:
        return write_tree(tmp_path / name, files)
    return make


@pytest.fixture
def planted_modules(tmp_path, monkeypatch):
    """The working folder becomes one whose pickle.py and json.py (an untrusted
    repository's) would leave a mark if they ran; returns where that mark would be."""
    planted = tmp_path / "planted"
    planted.mkdir()
    marker = tmp_path / "ran"
    for name in ("pickle", "json"):
        (planted / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'a').write('{name}')\nraise SystemExit(3)\n")
    monkeypatch.chdir(planted)
    return marker


@pytest.fixture(autouse=True)
def private_vector_cache(tmp_path_factory, monkeypatch):
    """Tests never read or write the user's shared embedding cache."""
    if "FOURFOLD_CACHE_DIR" not in __import__("os").environ:
        monkeypatch.setenv("FOURFOLD_CACHE_DIR", str(tmp_path_factory.mktemp("vector-cache")))


# -- PostgreSQL --------------------------------------------------------------------------
import itertools  # noqa: E402  (the PostgreSQL fixtures are appended to this file)
import os  # noqa: E402
from urllib.parse import urlsplit, urlunsplit  # noqa: E402

import psycopg  # noqa: E402

from tests.postgres import Cluster, ClusterError  # noqa: E402


@pytest.fixture(scope="session")
def postgres_server():
    """The admin URL of a PostgreSQL server for the tests: FOURFOLD_TEST_POSTGRES when set,
    else a private cluster started for this session. A server that cannot start fails the
    tests that need it: a store suite that skipped would pass without testing anything."""
    if os.environ.get("FOURFOLD_TEST_POSTGRES"):
        yield os.environ["FOURFOLD_TEST_POSTGRES"]
        return
    try:
        cluster = Cluster()
        cluster.start()
    except ClusterError as exc:
        pytest.fail(f"cannot start a PostgreSQL server for the tests: {exc}", pytrace=False)
    try:
        yield cluster.url
    finally:
        cluster.stop()


_postgres_databases = itertools.count(1)


@pytest.fixture
def postgres_url(postgres_server):
    """The URL of a fresh, empty database on the test server, dropped after the test."""
    name = f"test_{next(_postgres_databases)}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    yield urlunsplit(urlsplit(postgres_server)._replace(path="/" + name))
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')  # ends connections left open


@pytest.fixture(params=["sqlite", "postgres"])
def index_on_each_store(request, make_tree):
    """index(files) -> (root, Fourfold): the tree indexed without vectors, in the embedded
    index or in a fresh PostgreSQL database (the fixture's two parameters); closed after
    the test."""
    from fourfold.api import Fourfold

    opened = []

    def index(files: dict[str, str | bytes]) -> tuple[Path, "Fourfold"]:
        root = make_tree(files)
        url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
        opened.append(Fourfold(root, store_url=url))
        opened[-1].index(embed=False)
        return root, opened[-1]

    yield index
    for ff in opened:
        ff.close()
