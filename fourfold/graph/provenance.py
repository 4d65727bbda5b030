"""Which code made a stored graph, and whether another repository may take it as its own
(graph.copied, graph.seeded): only a graph this very code resolved whole, or seeded, and
up to date with its files. No numpy here: a fresh checkout that copies its twin's graph
needs none."""
from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path

from ..store.base import (Store, graph_behind_setting, graph_resolved_by_setting,
                          unfinished_setting)


@cache
def resolver_version() -> int:
    """Names the code that resolves and ranks a graph (this package's source): a graph
    made by other code is not copied to a twin (graph.copied) as if made now."""
    digest = hashlib.blake2b(digest_size=7)
    package = Path(__file__).parent
    for source in sorted(package.rglob("*.py")):
        digest.update(str(source.relative_to(package)).encode() + b"\0" + source.read_bytes())
    return int.from_bytes(digest.digest(), "big")


def takeable(store: Store, repo_id: int) -> bool:
    """Whether the repository's stored graph may be taken by another repository: made by a
    whole resolution or a seed by this code (graph_resolved_by_setting), neither behind its
    files nor left unfinished."""
    return (abs(store.setting(graph_resolved_by_setting(repo_id), 0)) == resolver_version()
            and not store.setting(graph_behind_setting(repo_id), 0)
            and not store.setting(unfinished_setting(repo_id), 0))
