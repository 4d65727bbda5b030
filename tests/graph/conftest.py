"""Fixtures of the graph's tests."""
from __future__ import annotations

import pytest

from fourfold.api import Fourfold

from .test_patch import _own_source


@pytest.fixture(params=["sqlite", "postgres"])
def one_index(request, tmp_path, make_tree):
    """(the own source as a tree, open(root, name) -> a Fourfold of that repository in one
    index: an embedded one, or a PostgreSQL database; its repositories share a family)."""
    where = ({"index_dir": tmp_path / "index"} if request.param == "sqlite"
             else {"store_url": request.getfixturevalue("postgres_url")})
    opened = []

    def open_(root, name: str) -> Fourfold:
        opened.append(Fourfold(root, repository=name, **where))
        return opened[-1]

    yield make_tree(_own_source()), open_
    for ff in opened:
        ff.close()
