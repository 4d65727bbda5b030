"""Navigation over an index: its files, its definitions by kind, and the lines around text
matches (the Fourfold methods list_files, symbols and with_context call these)."""
from __future__ import annotations

from .errors import QueryError
from .query.filters import in_glob, kinds_named, languages_named, no_glob
from .query.model import check_text
from .retrievers.base import path_ok
from .store.base import Store


def list_files(store: Store, glob: str | None, name: str | None, languages,
               repo_id: int | None) -> list[dict]:
    """See Fourfold.list_files."""
    check_text(glob, "the glob")
    check_text(name, "the name")
    allowed = languages_named(languages) if languages else None
    glob = None if no_glob(glob) else glob.strip()
    fragment = name.strip().lower() if name and name.strip() else None
    repos = [r for r in store.repos(counts=False)
             if r.indexed_at and (repo_id is None or r.repo_id == repo_id)]
    rows = []
    for repo in repos:
        for path, state in store.file_states(repo.repo_id).items():
            rows.append((path, repo, state.stamp.size))
    languages_of = {(f.repo_id, f.path): f.language for f in store.files(repo_id)}
    out = []
    for path, repo, size in sorted(rows, key=lambda r: (r[0], r[1].name)):
        language = languages_of.get((repo.repo_id, path))
        if glob and not in_glob(path, glob):
            continue
        if fragment and fragment not in path.rsplit("/", 1)[-1].lower():
            continue
        if allowed is not None and language not in allowed:
            continue
        row = {"path": path, "language": language, "size": size}
        if len(repos) > 1:
            row["repository"] = repo.name
        out.append(row)
    return out


def symbols(store: Store, kind: str, path_glob: str | None, repo_id: int | None) -> list[dict]:
    """See Fourfold.symbols."""
    check_text(kind, "the kind")
    check_text(path_glob, "path_glob")
    if not kind or not kind.strip():
        raise QueryError("give a kind (class, function, interface ...) to list")
    allowed = kinds_named([kind])
    path_glob = None if no_glob(path_glob) else path_glob.strip()
    ids = []
    for repo in store.repos(counts=False):
        if repo.indexed_at and (repo_id is None or repo.repo_id == repo_id):
            ids += [sid for sid, path, _n, _q, k, _p in store.graph_symbols(repo.repo_id)
                    if k in allowed and path_ok(path, path_glob)]
    found = sorted(store.symbols_by_id(ids, repo_id), key=lambda s: (s.path, s.start_line, s.qualname))
    return [{"path": s.path, "start_line": s.start_line, "end_line": s.end_line,
             "name": s.name, "qualname": s.qualname, "kind": s.kind,
             "signature": s.signature, "doc": s.doc, "language": s.language}
            for s in found]


def with_context(store: Store, matches, context: int) -> list[dict]:
    """See Fourfold.with_context."""
    if not 0 <= context <= 10:
        raise QueryError("context must be between 0 and 10 lines")
    texts = store.contents({m.file_id for m in matches}) if context else {}
    split: dict[int, list[str]] = {}
    out = []
    for m in matches:
        row = {"path": m.path, "line": m.line, "text": m.text}
        if context:
            if m.file_id not in split:
                lines = [ln.rstrip("\r") for ln in texts.get(m.file_id, "").split("\n")]
                split[m.file_id] = lines[:-1] if lines and lines[-1] == "" else lines
            lines = split[m.file_id]  # none where the file was indexed again meanwhile
            row["before"] = [{"line": n, "text": lines[n - 1]}
                             for n in range(max(1, m.line - context), min(m.line, len(lines) + 1))]
            row["after"] = [{"line": n, "text": lines[n - 1]}
                            for n in range(m.line + 1, min(len(lines), m.line + context) + 1)]
        out.append(row)
    return out
