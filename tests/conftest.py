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


@pytest.fixture(autouse=True)
def private_vector_cache(tmp_path_factory, monkeypatch):
    """Tests never read or write the user's shared embedding cache."""
    if "FOURFOLD_CACHE_DIR" not in __import__("os").environ:
        monkeypatch.setenv("FOURFOLD_CACHE_DIR", str(tmp_path_factory.mktemp("vector-cache")))
