"""The repositories an index serves: finding one by what a user calls it, its branch, and
which of them a question should search."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from .errors import ModalityUnavailable, QueryError
from .store.base import RepoInfo, Store
from .tokens import identifier_tokens, query_terms

# Set by hand, not fitted (docs/benchmarks.md reports how often the right one is kept):
MAX_SEARCHED = 6      # repositories one question searches at most
RELATIVE_FLOOR = 0.2  # a repository with less than this share of the best one's evidence is skipped
EVIDENCE_CHUNKS = 300  # the best chunks of the whole index the evidence is read from
BEST_PER_REPOSITORY = 5  # a repository's evidence: the BM25 of its best few chunks


@dataclass
class RepositoryChoice:
    """Which repositories a question searches and which it skips, and why."""

    searched: list[RepoInfo]
    skipped: list[RepoInfo] = field(default_factory=list)
    evidence: dict[int, float] = field(default_factory=dict)  # repository id -> evidence


def find_repository(repos: Iterable[RepoInfo], spec: str | int) -> int:
    """The id of the repository a user names by name, root path or id (a name first: a
    folder may be named like another repository's id); an id may come as a number."""
    repos = list(repos)
    if isinstance(spec, int) and not isinstance(spec, bool):
        spec = str(spec)
    if not isinstance(spec, str):
        raise QueryError(f"a repository is named by its name, root or id, not {spec!r}")
    named = [repo for repo in repos if repo.name == spec]
    if len(named) > 1:  # an embedded index written before its names were unique
        held = ", ".join(f"{repo.root} (id {repo.repo_id})" for repo in named)
        raise QueryError(f"repository name {spec!r} names several repositories: {held}; "
                         "name one by its root path or id")
    named = (named or [repo for repo in repos if repo.root == spec]
             or [repo for repo in repos if str(repo.repo_id) == spec])
    if named:
        return named[0].repo_id
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


def choose_repositories(store: Store, repos: list[RepoInfo], question: str,
                        repo_of_file: dict[int, int], limit: int = MAX_SEARCHED
                        ) -> RepositoryChoice:
    """Narrow a question to the repositories likely to hold its answer rather than asking
    every one: one BM25 query over all of them at once, each repository's evidence the sum
    of its best chunks' scores, and a repository that defines a name the question spells
    counted as strong as the best. `repo_of_file`: file id -> repository id."""
    if len(repos) <= 1:
        return RepositoryChoice(list(repos))
    wanted = {r.repo_id for r in repos}
    evidence = _text_evidence(store, wanted, query_terms(question), repo_of_file)
    names = [w for w in question.replace("`", " ").split()
             if w.isidentifier() and len(identifier_tokens(w)) > 1]
    if names:
        strongest = max(evidence.values(), default=1.0)
        for symbol in store.symbols_named(names):
            repo_id = repo_of_file.get(symbol.file_id)
            if repo_id in wanted:
                evidence[repo_id] = max(evidence.get(repo_id, 0.0), strongest)
    ranked = sorted(repos, key=lambda r: (-evidence.get(r.repo_id, 0.0), r.name))
    best = evidence.get(ranked[0].repo_id, 0.0)
    if best <= 0.0:  # nothing to go by: the first ones, and the answer says which were left
        return RepositoryChoice(ranked[:limit], ranked[limit:], evidence)
    searched = [r for r in ranked if evidence.get(r.repo_id, 0.0) >= RELATIVE_FLOOR * best][:limit]
    chosen = {r.repo_id for r in searched}
    return RepositoryChoice(searched, [r for r in ranked if r.repo_id not in chosen], evidence)


def _text_evidence(store: Store, wanted: set[int], terms: list[str],
                   repo_of_file: dict[int, int]) -> dict[int, float]:
    try:
        return _bm25_evidence(store, wanted, terms, repo_of_file)
    except ModalityUnavailable:  # the word index is being made: nothing to go by, as no terms
        return {}


def _bm25_evidence(store: Store, wanted: set[int], terms: list[str],
                   repo_of_file: dict[int, int]) -> dict[int, float]:
    """Each wanted repository's evidence: the summed BM25 of its best few chunks. Where
    some of the index's repositories are not wanted (a token's grant, a named few), each
    wanted one is asked on its own, so that the others' text cannot crowd it out of the
    best chunks of the whole index and so decide which of the wanted ones are searched."""
    if not terms:
        return {}
    if wanted >= set(repo_of_file.values()):
        scores: dict[int, list[float]] = {}
        for chunk, score in store.bm25_chunks(terms, EVIDENCE_CHUNKS):
            repo_id = repo_of_file.get(chunk.file_id)
            if repo_id in wanted and len(scores.setdefault(repo_id, [])) < BEST_PER_REPOSITORY:
                scores[repo_id].append(score)
        return {repo_id: sum(s) for repo_id, s in scores.items()}
    evidence = {}
    for repo_id in sorted(wanted):
        best = store.bm25_chunks(terms, BEST_PER_REPOSITORY, repo_id=repo_id)
        if best:
            evidence[repo_id] = sum(score for _, score in best)
    return evidence
