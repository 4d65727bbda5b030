"""The repositories an index serves: finding one by what a user calls it, and its branch."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from .errors import QueryError
from .store.base import RepoInfo


def find_repository(repos: Iterable[RepoInfo], spec: str) -> int:
    """The id of the repository a user names by name, root path or id."""
    repos = list(repos)
    for repo in repos:
        if spec in (repo.name, repo.root, str(repo.repo_id)):
            return repo.repo_id
    try:
        wanted = Path(spec).expanduser().resolve()
    except (OSError, ValueError, RuntimeError):
        wanted = None
    for repo in repos:
        if wanted is not None and Path(repo.root) == wanted:
            return repo.repo_id
    names = ", ".join(r.name for r in repos) or "none"
    raise QueryError(f"unknown repository {spec!r}; indexed: {names}")


def git_branch(root: Path) -> str | None:
    """The checked-out branch (or detached commit), read from .git without running git."""
    try:
        git = root / ".git"
        if git.is_file():  # a worktree or submodule: .git names the real folder
            line = git.read_text().strip()
            if line.startswith("gitdir:"):
                git = (root / line.split(":", 1)[1].strip()).resolve()
        head = (git / "HEAD").read_text().strip()
    except OSError:
        return None
    if head.startswith("ref:"):
        return head.split("refs/heads/", 1)[-1]
    return head[:12] or None
