"""Fixtures the interface tests share."""
from __future__ import annotations

import pytest

from fourfold.interfaces.cli import main
from tests.conftest import write_tree

ONE = {"one.py": "def alpha_handler():\n    return 'ALPHA_SECRET'\n"}
TWO = {"two.py": "def beta_handler():\n    return 'BETA_SECRET'\n"}


@pytest.fixture(params=["sqlite", "postgres"])
def two_repositories(request, tmp_path):
    """acme/one and acme/two in one index; (CLI arguments naming the index, the server's
    command line arguments)."""
    one = write_tree(tmp_path / "one", ONE)
    two = write_tree(tmp_path / "two", TWO)
    if request.param == "sqlite":
        where = ["--index-dir", str(tmp_path / "index")]
        serve = [str(one), *where]  # serves acme/one; acme/two is in the same index
    else:
        where = ["--store", request.getfixturevalue("postgres_url")]
        serve = where
    for root, name in ((one, "acme/one"), (two, "acme/two")):
        assert main(["index", str(root), *where, "--repository", name, "--no-embed"]) == 0
    return where, serve, one
