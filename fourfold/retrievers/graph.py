"""Graph modality: callers, callees, importers and blast radius over the stored edges.

A repository's edges are read once as columns (fourfold.graph.loaded; read again when the
graph is written again), so a depth-3 impact query is a breadth-first walk in memory.

Each answer row says how sure its edge is: "resolution" is "exact", "inferred", "name_only"
or "none" (fourfold.store.base.Resolution), and "resolved" is true for exact and inferred.
Edges guessed by name alone are listed after resolved ones and left out of impact walks;
a note counts them.
"""
from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..collector import collector_paused
from ..errors import QueryError
from ..model import Hit
from ..query.model import Query, check_limit, check_offset, check_text
from ..store.base import (Resolution, Store, StoredEdge, StoredSymbol, graph_behind_setting,
                          graph_version_setting, unfinished_note)
from .structural import StructuralRetriever

if TYPE_CHECKING:
    from ..graph.loaded import LoadedGraph, Node

MAX_RANKED_REFERENCES = 2000  # references ranked for the graph modality's answer


def _sure(e: StoredEdge) -> bool:
    """Resolved by more than the name: exact or with an inferred receiver type."""
    return e.resolution >= Resolution.INFERRED


def _resolution_word(e: StoredEdge) -> str:
    return Resolution(e.resolution).name.lower()


def _by_resolution(row: dict) -> int:
    """Sort rank of a row: resolved, then guessed by name, then without a definition."""
    return 0 if row["resolved"] else 1 if row["resolution"] == "name_only" else 2


def _name_only_note(count: int, treated: str) -> list[str]:
    if not count:
        return []
    return [f"{count} more call site{'s' if count > 1 else ''} by name only: the target is "
            "the one definition of that name in the repository, not confirmed by an import "
            f"or a type; {treated}"]


def paged(rows: list[dict], limit: int, offset: int, notes: list[str]) -> dict:
    """One page of a graph answer: `limit` rows from `offset`, with the total, the next
    page's offset where there is one, and notes."""
    check_limit(limit, most=None)
    check_offset(offset)
    out = {"total": len(rows), "offset": offset, "results": rows[offset:offset + limit],
           "notes": notes}
    if offset + limit < len(rows):
        out["next_offset"] = offset + limit
    return out


class GraphRetriever:
    modality = "graph"

    def __init__(self, store: Store, structural: StructuralRetriever,
                 scope: Callable[[], int | None] = lambda: None):
        """scope() -> the repository whose graph this is (None: every one)."""
        self.store = store
        self.structural = structural
        self.scope = scope
        self._graph: LoadedGraph | None = None
        self._lock = threading.Lock()

    def ready(self) -> bool:
        return True

    def behind(self) -> bool:
        """Whether files were written since the graph was resolved: it catches up, and
        answers use it as it was meanwhile."""
        repo_id = self.scope()
        return repo_id is not None and bool(self.store.setting(graph_behind_setting(repo_id), 0))

    def incomplete(self) -> str | None:
        """What answers miss meanwhile: a first index still written, a graph behind."""
        return unfinished_note(self.store, self.scope()) or (
            "catching up with changed files: answers use the graph as it was"
            if self.behind() else None)

    def _paged(self, rows: list[dict], limit: int, offset: int, notes: list[str]) -> dict:
        """An answer's page, whose notes say what the graph misses now (incomplete())."""
        missing = self.incomplete()
        return paged(rows, limit, offset, notes + ([missing] if missing else []))

    # -- loading ----------------------------------------------------------------------
    def graph(self) -> LoadedGraph:
        """The repository's graph as last written: read again only when it is written
        again (files saved meanwhile leave it as it was, see behind())."""
        repo_id = self.scope()
        generation = (self.store.generation() if repo_id is None else
                      self.store.setting(graph_version_setting(repo_id), 0), repo_id)
        with self._lock:
            if self._graph is None or self._graph.generation != generation:
                # the old graph let go first: questions wait for the new one anyway, and
                # two at once took the kernel's 3.0 GB to 5.8 GB
                self._graph = None
                self._graph = self._load(generation)
            return self._graph

    def read_again(self) -> None:
        """Read the graph now if one is held and it was written since."""
        if self._graph is not None:
            self.graph()

    def _load(self, generation: tuple) -> LoadedGraph:
        """The graph read whole, as columns (the collector paused: reading makes millions
        of short-lived objects and no cycles)."""
        from ..graph.loaded import LoadedGraph  # numpy: only when a graph is asked for

        def ranks() -> tuple[dict[int, float], dict[int, float]]:
            with collector_paused():
                return self.store.centrality(generation[1])

        with collector_paused():
            return LoadedGraph(generation, self.store.edge_columns(generation[1]), ranks,
                               {f.file_id: f.path for f in self.store.files(generation[1])})

    # -- targets ----------------------------------------------------------------------
    def definitions_of(self, name: str, repo_id: int | None = None) -> list[StoredSymbol]:
        """The definitions a name means: exact or qualified matches, else case/style matches."""
        check_text(name, "the name")
        if not name or not name.strip():
            raise QueryError("empty name: give the symbol to look up")
        found = self.structural.definitions(name.strip(), repo_id=repo_id, limit=200)
        best = min((tier for _, tier in found), default=None)
        if best is None or best > 2:
            return []
        return [s for s, tier in found if tier == best]

    def _symbol_info(self, ids) -> dict[int, StoredSymbol]:
        return {s.symbol_id: s for s in self.store.symbols_by_id(ids, self.scope())}

    def _definition_notes(self, name: str, targets: list[StoredSymbol]) -> list[str]:
        if not targets:
            return [f"no definition named {name!r} in the index"]
        if len(targets) > 1:
            listed = ", ".join(f"{t.qualname} ({t.path}:{t.start_line})" for t in targets[:5])
            return [f"{len(targets)} definitions match {name!r}: {listed}; each result names "
                    "its definition; a qualified name picks one"]
        return []

    # -- queries ----------------------------------------------------------------------
    def references(self, name: str, limit: int = 50, offset: int = 0,
                   repo_id: int | None = None) -> dict:
        """Call sites and other uses of a symbol, each with the calling symbol."""
        g = self.graph()
        targets = self.definitions_of(name, repo_id)
        edges = [(t, e) for t in targets for e in g.incoming(t.symbol_id)]
        callers = self._symbol_info({e.src_symbol for _, e in edges if e.src_symbol is not None})
        paths = g.paths
        rows = []
        for target, e in edges:
            caller = callers.get(e.src_symbol)
            rows.append({"path": paths.get(e.src_file, "?"), "line": e.line, "kind": e.kind,
                         "symbol": caller.qualname if caller else None,
                         "start_line": caller.start_line if caller else e.line,
                         "end_line": caller.end_line if caller else e.line,
                         "definition": f"{target.path}:{target.qualname}",
                         "resolved": _sure(e), "resolution": _resolution_word(e)})
        resolved_sites = {(r["path"], r["line"]) for r in rows}
        unresolved = [e for e in g.unresolved_calls(name)
                      if (paths.get(e.src_file), e.line) not in resolved_sites]
        unresolved_callers = self._symbol_info(
            {e.src_symbol for e in unresolved if e.src_symbol is not None})
        for e in unresolved:
            caller = unresolved_callers.get(e.src_symbol)
            rows.append({"path": paths.get(e.src_file, "?"), "line": e.line, "kind": e.kind,
                         "symbol": caller.qualname if caller else None,
                         "start_line": caller.start_line if caller else e.line,
                         "end_line": caller.end_line if caller else e.line,
                         "definition": None, "resolved": False, "resolution": "none",
                         "name": e.name})
        rows.sort(key=lambda r: (_by_resolution(r), r["path"], r["line"]))
        notes = self._definition_notes(name, targets)
        notes += _name_only_note(
            sum(1 for _, e in edges if e.resolution == Resolution.NAME_ONLY),
            "listed after the resolved ones with resolution=name_only")
        if unresolved:
            from ..graph.loaded import last_name

            notes.append(f"{len(unresolved)} call sites of the name {last_name(name)!r} could "
                         "not be resolved to a definition; they are listed last with "
                         "resolution=none")
        return self._paged(rows, limit, offset, notes)

    def callees(self, name: str, limit: int = 50, offset: int = 0,
                repo_id: int | None = None) -> dict:
        g = self.graph()
        targets = self.definitions_of(name, repo_id)
        edges = [(t, e) for t in targets for e in g.outgoing(t.symbol_id)
                 if e.kind == "call"]
        info = self._symbol_info({e.dst_symbol for _, e in edges if e.dst_symbol is not None})
        paths = g.paths
        rows = []
        for target, e in edges:
            callee = info.get(e.dst_symbol)
            rows.append({"path": callee.path if callee else None, "line": e.line,
                         "call_site": f"{target.path}:{e.line}", "name": e.name,
                         "symbol": callee.qualname if callee else None,
                         "start_line": callee.start_line if callee else None,
                         "end_line": callee.end_line if callee else None,
                         "kind": callee.kind if callee else None,
                         "definition": f"{target.path}:{target.qualname}",
                         "resolved": callee is not None and _sure(e),
                         "resolution": _resolution_word(e) if callee is not None else "none"})
            if callee is None:
                rows[-1]["path"] = paths.get(e.src_file)
        rows.sort(key=lambda r: (_by_resolution(r), r["call_site"]))
        return self._paged(rows, limit, offset, self._definition_notes(name, targets))

    def importers(self, file_or_module: str, limit: int = 50, offset: int = 0,
                  repo_id: int | None = None) -> dict:
        check_text(file_or_module, "the file or module")
        g = self.graph()
        paths = g.paths
        wanted = file_or_module.strip().strip("/")
        if not wanted:
            raise QueryError("empty file or module name")
        as_path = wanted.replace(".", "/")
        targets = [fid for fid, p in paths.items()
                   if p == wanted or p.rsplit(".", 1)[0] == as_path
                   or p.rsplit(".", 1)[0].endswith("/" + as_path)
                   or p.endswith("/" + wanted)
                   or p.rsplit(".", 1)[0] in (as_path + "/__init__", as_path + "/index",
                                              as_path + "/mod")]
        rows = []
        for fid in targets:
            for e in g.importers(fid):
                rows.append({"path": paths.get(e.src_file), "line": e.line, "name": e.name,
                             "imports": paths[fid]})
        rows.sort(key=lambda r: (r["path"], r["line"]))
        notes = [] if targets else [f"no indexed file matches {file_or_module!r}"]
        return self._paged(rows, limit, offset, notes)

    def imports(self, path: str, limit: int = 50, offset: int = 0) -> dict:
        """The indexed files a file imports (the other direction of importers), in line
        order; imports of code outside the repository are not edges and are not listed."""
        check_text(path, "the path")
        g = self.graph()
        paths = g.paths
        source = next((fid for fid, p in paths.items() if p == path), None)
        rows = [{"path": paths.get(e.dst_file), "line": e.line, "name": e.name,
                 "imported_by": path}
                for e in sorted(g.imports(source) if source is not None else [],
                                 key=lambda e: e.line)]
        notes = [] if source is not None else [f"{path} is not an indexed file"]
        return self._paged(rows, limit, offset, notes)

    def impact(self, name: str, depth: int = 3, limit: int = 50, offset: int = 0,
               repo_id: int | None = None) -> dict:
        """Transitive dependents, nearest first, then by centrality; cycle-safe and paged.
        Only resolved edges are walked; a note counts the targets' callers by name only."""
        if depth < 1:
            raise QueryError("depth must be at least 1")
        g = self.graph()
        targets = self.definitions_of(name, repo_id)
        from ..graph.centrality import impact as bfs_impact  # numpy: only when asked

        distance = bfs_impact(g.dependents, [("s", t.symbol_id) for t in targets], depth)
        info = self._symbol_info([n[1] for n in distance if n[0] == "s"])
        paths = g.paths

        def centrality(node: Node) -> float:
            return (g.symbol_rank.get(node[1], 0.0) if node[0] == "s"
                    else g.file_rank.get(node[1], 0.0))

        ordered = sorted(distance.items(), key=lambda kv: (kv[1], -centrality(kv[0]), kv[0]))
        rows = []
        for node, dist in ordered:
            if node[0] == "s":
                s = info.get(node[1])
                if s is None:
                    continue
                rows.append({"path": s.path, "start_line": s.start_line, "end_line": s.end_line,
                             "symbol": s.qualname, "kind": s.kind, "distance": dist,
                             "centrality": round(centrality(node), 4)})
            else:
                rows.append({"path": paths.get(node[1]), "start_line": 1, "end_line": 1,
                             "symbol": None, "kind": "module", "distance": dist,
                             "centrality": round(centrality(node), 4)})
        guessed = sum(1 for t in targets for e in g.incoming(t.symbol_id)
                      if e.resolution == Resolution.NAME_ONLY)
        return self._paged(rows, limit, offset,
                           self._definition_notes(name, targets)
                           + _name_only_note(guessed, "their callers are not followed"))

    # -- the retriever interface ------------------------------------------------------
    def search(self, query: Query, limit: int) -> list[Hit]:
        if not query.target:
            return []
        repo_id = query.filters.repo_id
        if query.transitive:  # nearest first, then by centrality
            rows = self.impact(query.target, depth=3, limit=limit, repo_id=repo_id)["results"]
        else:
            rows = self._callers_by_calls(query.target, repo_id)
        hits: dict[tuple, Hit] = {}
        call_lines: dict[tuple, list[int]] = defaultdict(list)
        for r in rows:
            if r["path"] is None:
                continue
            key = (r["path"], r.get("symbol") or r["start_line"])
            if key not in hits:
                if len(hits) == limit:
                    continue
                hits[key] = Hit(r["path"], r["start_line"], r["end_line"], 1.0 / (1 + len(hits)),
                                symbol=r.get("symbol"), kind=r.get("kind"))
            if not query.transitive and r.get("line"):
                call_lines[key].append(r["line"])
        self._show_call_sites(hits, call_lines, repo_id)
        return list(hits.values())

    def _show_call_sites(self, hits: dict[tuple, Hit], call_lines: dict[tuple, list[int]],
                         repo_id: int | None) -> None:
        """A referencing hit shows the lines of its calls, not the top of its function."""
        texts: dict[str, list[str]] = {}
        for key, lines in call_lines.items():
            path = key[0]
            if path not in texts:
                stored = self.store.file_by_path(path, repo_id)
                texts[path] = self.store.content(stored.file_id).split("\n") if stored else []
            hits[key].lines = [(n, texts[path][n - 1].rstrip("\r")) for n in sorted(set(lines))
                               if 0 < n <= len(texts[path])]

    def _callers_by_calls(self, name: str, repo_id: int | None) -> list[dict]:
        """The referencing code of a name ranked as evidence: resolved references first,
        then the code that references it most often, then by path."""
        rows = self.references(name, limit=MAX_RANKED_REFERENCES, repo_id=repo_id)["results"]
        calls: dict[tuple, int] = {}
        for r in rows:
            key = (r["path"], r.get("symbol") or r["start_line"])
            calls[key] = calls.get(key, 0) + 1
        return sorted(rows, key=lambda r: (
            not r["resolved"], -calls[(r["path"], r.get("symbol") or r["start_line"])],
            r["path"] or "", r["line"]))
