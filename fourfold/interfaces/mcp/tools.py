"""The MCP tools: the agent-facing contract (names, parameters, result shapes).

Each tool is one method below, marked with @tool: its typed signature is the input schema
and its docstring the description (server.py registers them in a loop). The methods are
plain Python too (tests and bench/hostile.py call them directly). Every tool pages its
answer: `limit` and `max_tokens` bound one page, `total` says how many results exist, and
`cursor` (opaque; null on the last page) fetches the next page when passed back with the
same arguments. Errors are FourfoldError messages written for the agent.
"""
import time
from dataclasses import replace
from typing import Annotated, Any, Literal

import re2

from pydantic import Field

from ...api import SearchOptions
from ...errors import QueryError
from .paging import (DEFAULT_MAX_TOKENS, LINE_CHARS, MAX_PAGE, approx_tokens, clamp_budget, cut,
                     decode_cursor, encode_cursor, fill, page, query_key, settle, to_json)
from ..caller import current_grant
from .params import (Cursor, FilePath, Intent, Kind, Language, Limit, MaxTokens, Modalities,
                     PathGlob, Granularity, Preset, Repository, Snippet, Weights, tool)
from .paths import check_glob, check_path, inside_root
from ..service import Service

# what repository_context keeps of the last index run where its budget is too small for all
LAST_INDEX_BRIEF = ("reason", "finished_at", "files", "added", "changed", "deleted")
REPOSITORY_BRIEF = ("name", "files", "age_seconds")  # where even that is too much

SEARCH_DEPTH = 100        # ranked results computed once per query, then paged
GREP_CAP = 50_000         # matching lines kept per pattern
MAX_SIMILAR = 200         # nearest chunks kept for find_similar_code
SIMILAR_CODE_LINES = 6    # code lines shown per similar chunk
GRAPH_CAP = 100_000       # graph rows kept per query
DEFINITIONS_CAP = 1000    # definitions kept per name
MAX_DEPTH = 10
MAX_FILE_PAGE = 5000      # lines in one get_file page (max_tokens bounds it too)
FILE_LINE_CHARS = 2000
SIGNATURE_CHARS = 300
ECHO_CHARS = 200          # a query, name or task repeated in the reply is cut to this
MAX_NAME_CHARS = 1000     # a symbol, module or file name to look up


class FourfoldService(Service):
    """The tools an MCP server exposes over one index, kept fresh by Service."""

    # -- helpers --------------------------------------------------------------------------
    def _begin(self, tool_name: str, args: dict, cursor: str | None, limit: int | None,
               max_tokens: int | None, default_limit: int, max_limit: int = MAX_PAGE
               ) -> tuple[str, int, int, int]:
        """Wait for freshness; then (query key, offset, rows, tokens) of the asked page."""
        self.await_fresh()
        key = query_key(tool_name, args, self.ff.generation())
        offset = decode_cursor(cursor, key)
        limit, tokens = clamp_budget(limit, max_tokens, default_limit, max_limit)
        return key, offset, limit, tokens

    def _safe_path(self, raw: str, repository: str | None) -> tuple[int, str]:
        """(repository id, stored path) of an agent's path, refused if outside the root."""
        check_path(raw)  # refuse a bad path before looking up its repository
        repo_id, root = self.ff.repository_root(self.answering_repository(repository))
        return repo_id, inside_root(raw, root, self.ff.index_dir)

    def _snippet(self, path: str, start: int, end: int, n: int, repo_id: int | None,
                 files: dict) -> list[dict]:
        """Up to n lines of path from start, as {"line", "text"} (files: a per-call cache)."""
        if (repo_id, path) not in files:
            stored = self.ff.file_text(path, repo_id)
            files[(repo_id, path)] = stored["lines"] if stored else []
        lines = files[(repo_id, path)]
        start = max(1, start)
        stop = min(end, start + n - 1, len(lines))
        return [{"line": i, "text": cut(lines[i - 1])} for i in range(start, stop + 1)]

    def _search_tool(self, tool_name: str, query: str, preset: str, modalities, weights,
                     intent, language, path_glob, repository, limit, cursor, max_tokens,
                     snippet_lines: int, granularity: str | None) -> dict:
        """The search tools: fused (or one modality's) hits, paged, with code lines."""
        path_glob = check_glob(path_glob)
        args = {"query": query, "preset": preset, "modalities": modalities, "weights": weights,
                "intent": intent, "language": language, "path_glob": path_glob,
                "repository": repository, "snippet_lines": snippet_lines,
                "granularity": granularity}
        key, offset, limit, tokens = self._begin(tool_name, args, cursor, limit, max_tokens, 10)
        several = repository is None and self.serves_many and len(self.visible_repositories()) > 1
        repo_id = None if several else self.answering_repository(repository)
        visible = self.visible_repositories() if several else None

        def compute() -> list:
            options = SearchOptions(
                preset=preset, modalities=tuple(modalities) if modalities else None,
                weights=dict(weights) if weights else None, intent=intent,
                languages=(language,) if language else (), path_glob=path_glob,
                repo_id=repo_id, limit=SEARCH_DEPTH, granularity=granularity)
            if several:
                response, notes = self.ff.search_repositories(query, visible, options), []
            else:
                response, notes = self.ff.search_with_fallback(query, options)
            d = response.to_dict()
            header = {k: d[k] for k in ("intent", "confidence", "rule", "target",
                                        "fusion_strategy", "modalities", "weights",
                                        "unavailable", "timings_ms", "repositories_searched",
                                        "repositories_skipped", "repositories_unavailable")
                      if k in d}
            return [{**header, "notes": notes,
                     "total_is_lower_bound": len(response.hits) >= SEARCH_DEPTH}] + [
                h.to_dict() for h in response.hits]

        rows = self.rows(key, compute)
        files: dict = {}

        def render(hit: dict) -> dict:
            # votes and shares stay; ranks and prior factors (the CLI's --explain) would
            # cost an agent's page room
            out = {k: v for k, v in hit.items() if k not in ("lines", "ranks", "factors",
                                                             "learned")}
            if snippet_lines > 0:
                shown = hit.get("lines") or self._snippet(
                    hit["path"], hit["start_line"], hit["end_line"], snippet_lines,
                    self.ff.repository(hit["repository"]) if "repository" in hit else repo_id,
                    files)
                out["lines"] = [{"line": ln["line"], "text": cut(ln["text"])}
                                for ln in shown[:snippet_lines]]
            return out

        return page(rows[1:], offset, limit, tokens, key, render,
                    frame={"query": cut(query, ECHO_CHARS), **rows[0]},
                    spare=("timings_ms", "weights", "modalities", "rule", "confidence",
                           "fusion_strategy", "repositories_skipped"))

    # -- tools ----------------------------------------------------------------------------
    @tool()
    def intelligent_search(
            self,
            query: Annotated[str, Field(description="A question, symbol name, quoted "
                                                    "string or pattern.")],
            preset: Preset = "default", modalities: Modalities = None, weights: Weights = None,
            intent: Intent = None, language: Language = None, path_glob: PathGlob = None,
            repository: Repository = None, limit: Limit = 10, cursor: Cursor = None,
            max_tokens: MaxTokens = DEFAULT_MAX_TOKENS, snippet_lines: Snippet = 4,
            granularity: Granularity = None
    ) -> dict[str, Any]:
        """Start here for any code question: classifies it (definition, references,
        string, concept, impact) and fuses text, structural, graph and semantic search."""
        return self._search_tool("intelligent_search", query, preset, modalities, weights,
                                 intent, language, path_glob, repository, limit, cursor,
                                 max_tokens, snippet_lines, granularity)

    @tool()
    def semantic_search(
            self,
            query: Annotated[str, Field(description="What the code does, in words.")],
            language: Language = None, path_glob: PathGlob = None,
            repository: Repository = None, limit: Limit = 10, cursor: Cursor = None,
            max_tokens: MaxTokens = DEFAULT_MAX_TOKENS, snippet_lines: Snippet = 4,
            granularity: Granularity = None
    ) -> dict[str, Any]:
        """Code that does what the query describes, found by meaning, not words."""
        return self._search_tool("semantic_search", query, "default", ["semantic"], None,
                                 None, language, path_glob, repository, limit, cursor,
                                 max_tokens, snippet_lines, granularity)

    @tool()
    def text_pattern_search(
            self,
            pattern: Annotated[str, Field(description="Literal text, or RE2 if regex.")],
            regex: bool = False, case_sensitive: bool = False, whole_word: bool = False,
            path_glob: PathGlob = None, repository: Repository = None, limit: Limit = 50,
            cursor: Cursor = None, max_tokens: MaxTokens = DEFAULT_MAX_TOKENS,
            context_lines: Annotated[int, Field(ge=0, le=10)] = 0
    ) -> dict[str, Any]:
        """grep -rn: every line matching a literal or RE2 regex, in path order."""
        path_glob = check_glob(path_glob)
        args = {"pattern": pattern, "regex": regex, "case_sensitive": case_sensitive,
                "whole_word": whole_word, "path_glob": path_glob, "repository": repository,
                "context_lines": context_lines}
        if not 0 <= context_lines <= 10:
            raise QueryError("context_lines must be between 0 and 10")
        key, offset, limit, tokens = self._begin("text_pattern_search", args, cursor, limit,
                                                 max_tokens, 50)
        repo_id = self.answering_repository(repository)

        def compute() -> list:
            matches = self.ff.grep(pattern, regex=regex, case_sensitive=case_sensitive,
                                   whole_word=whole_word, path_glob=path_glob,
                                   limit=GREP_CAP + 1, repo_id=repo_id)
            # the partial mark is cached with the lines, so that every page says so; the
            # lines are kept cut (around the match), their context is read per page
            return [matches.partial] + [
                replace(m, text=_around(m.text, pattern, regex, case_sensitive))
                for m in matches]

        rows = self.rows(key, compute)
        partial, rows = rows[0], rows[1:]
        notes = []
        if len(rows) > GREP_CAP:
            rows = rows[:GREP_CAP]
            notes.append(f"more than {GREP_CAP} matching lines; only the first {GREP_CAP} "
                         "(in path order) are paged: narrow the pattern or path_glob")
        if partial:
            notes.append("partial: the scan stopped at its time budget with files left "
                         "unread; narrow the pattern or path_glob")
        shown: dict[int, dict] = {}

        def render(match) -> dict:
            if id(match) not in shown:  # the page's rows read their files once
                window = rows[offset:offset + limit]
                for m, row in zip(window, self.ff.with_context(window, context_lines)):
                    shown[id(m)] = _cut_lines(row)
            return shown[id(match)]

        return page(rows, offset, limit, tokens, key, render, frame={
            "pattern": cut(pattern, ECHO_CHARS), "total_is_lower_bound": bool(notes),
            "partial": partial, "notes": notes})

    @tool()
    def structural_search(
            self,
            name: Annotated[str | None, Field(description="Exact, qualified "
                                                          "('Class.method') or prefix.")] = None,
            kind: Kind = None,
            path: Annotated[str | None, Field(description="Instead of name: outline this "
                                                          "file.")] = None,
            path_glob: PathGlob = None, repository: Repository = None, limit: Limit = 20,
            cursor: Cursor = None, max_tokens: MaxTokens = DEFAULT_MAX_TOKENS) -> dict[str, Any]:
        """Definitions by `name`, the outline of the file at `path`, or with only `kind`
        every definition of that kind."""
        _bounded(name, "name")
        has_name, has_path = bool(name and name.strip()), bool(path and path.strip())
        if (has_name and has_path) or not (has_name or has_path or (kind and kind.strip())):
            raise QueryError("give one of `name` (definitions by name, optionally with "
                             "`kind`), `path` (the outline of one file) or only `kind` "
                             "(every definition of that kind, optionally under `path_glob`)")
        path_glob = check_glob(path_glob)
        by_kind = not has_name and not has_path
        if by_kind:
            repo_id = self.answering_repository(repository)
            args = {"kind": kind, "path_glob": path_glob, "repository": repository,
                    "mode": "kind"}
        elif path:
            repo_id, rel = self._safe_path(path, repository)
            args = {"path": rel, "kind": kind, "repository": repo_id}
        else:
            repo_id = self.answering_repository(repository)
            args = {"name": name, "kind": kind, "path_glob": path_glob, "repository": repository}
        key, offset, limit, tokens = self._begin("structural_search", args, cursor, limit,
                                                 max_tokens, 20)

        def compute() -> list:
            if by_kind:
                return [_definition(d) for d in self.ff.symbols(kind, path_glob, repo_id)]
            if not path:
                return [_definition(d) for d in self.ff.definitions(
                    name, kind, repo_id=repo_id, path_glob=path_glob, limit=DEFINITIONS_CAP)]
            outline = self.ff.file_outline(rel, repo_id, kind)
            if outline is None:
                raise QueryError(f"{rel} is not in the index (ignored, binary, too large or "
                                 "missing)")
            return [{**s, "signature": cut(s["signature"], SIGNATURE_CHARS)} for s in outline]

        mode = ({"mode": "kind", "path_glob": path_glob} if by_kind else
                {"mode": "outline", "path": rel} if path else
                {"mode": "definitions", "name": cut(name, ECHO_CHARS)})
        rows = self.rows(key, compute)
        return page(rows, offset, limit, tokens, key, frame={
            **mode, "kind": kind,
            "total_is_lower_bound": not by_kind and not path and len(rows) >= DEFINITIONS_CAP})

    @tool()
    def find_symbol(
            self,
            name: Annotated[str, Field(description="e.g. 'parse' or 'Parser.parse'")],
            kind: Kind = None, path_glob: PathGlob = None, repository: Repository = None,
            include_code: bool = True,
            code_lines: Annotated[int, Field(ge=0, le=400)] = 30,
            limit: Limit = 5, cursor: Cursor = None, max_tokens: MaxTokens = DEFAULT_MAX_TOKENS
    ) -> dict[str, Any]:
        """Jump to definition: best matches for a name (exact, qualified, any case,
        prefix) with their code."""
        if not name or not name.strip():
            raise QueryError("empty name: give the symbol to look up")
        _bounded(name, "name")
        path_glob = check_glob(path_glob)
        args = {"name": name, "kind": kind, "path_glob": path_glob, "repository": repository}
        key, offset, limit, tokens = self._begin("find_symbol", args, cursor, limit,
                                                 max_tokens, 5)
        repo_id = self.answering_repository(repository)
        files: dict = {}

        def compute() -> list:
            return [_definition(d) for d in self.ff.definitions(
                name, kind, repo_id=repo_id, path_glob=path_glob, limit=DEFINITIONS_CAP)]

        def render(row: dict) -> dict:
            if not include_code or code_lines <= 0:
                return row
            lines = self._snippet(row["path"], row["start_line"], row["end_line"], code_lines,
                                  repo_id, files)
            return {**row, "code": "\n".join(f"{ln['line']:>5}  {ln['text']}" for ln in lines),
                    "code_truncated": row["end_line"] - row["start_line"] + 1 > len(lines)}

        rows = self.rows(key, compute)
        notes = [] if rows else [f"no definition matches {cut(name, ECHO_CHARS)!r}; try "
                                 "intelligent_search or text_pattern_search"]
        return page(rows, offset, limit, tokens, key, render, frame={
            "name": cut(name, ECHO_CHARS), "total_is_lower_bound": len(rows) >= DEFINITIONS_CAP,
            "notes": notes})

    @tool()
    def dependency_search(
            self,
            name: Annotated[str, Field(description="A symbol; for importers a file or "
                                                   "module; for imports a file.")],
            relation: Literal["callers", "callees", "importers", "imports",
                              "subclasses"] = "callers",
            repository: Repository = None, limit: Limit = 20, cursor: Cursor = None,
            max_tokens: MaxTokens = DEFAULT_MAX_TOKENS) -> dict[str, Any]:
        """One graph step: a symbol's call sites or callees, a module's importers, a
        file's imports, a class's subclasses; each link says how sure it is."""
        _bounded(name, "name")
        if relation == "imports":  # a file: as get_file takes it
            name = self._safe_path(name, repository)[1]
        elif relation == "importers":
            check_glob(name)
        args = {"name": name, "relation": relation, "repository": repository}
        key, offset, limit, tokens = self._begin("dependency_search", args, cursor, limit,
                                                 max_tokens, 20)
        repo_id = self.answering_repository(repository)

        def compute() -> list:
            found = self.ff.related(name, relation, repo_id, limit=GRAPH_CAP)
            return [found["notes"]] + found["results"]

        rows = self.rows(key, compute)
        return page(rows[1:], offset, limit, tokens, key,
                    frame={"name": cut(name, ECHO_CHARS), "relation": relation, "notes": rows[0]})

    @tool()
    def analyze_dependencies(
            self, name: str, depth: Annotated[int, Field(ge=1, le=MAX_DEPTH)] = 3,
            repository: Repository = None, limit: Limit = 30, cursor: Cursor = None,
            max_tokens: MaxTokens = DEFAULT_MAX_TOKENS) -> dict[str, Any]:
        """Blast radius of changing a symbol: its dependents within `depth` hops,
        nearest first."""
        if not 1 <= depth <= MAX_DEPTH:
            raise QueryError(f"depth must be between 1 and {MAX_DEPTH}")
        _bounded(name, "name")
        args = {"name": name, "depth": depth, "repository": repository}
        key, offset, limit, tokens = self._begin("analyze_dependencies", args, cursor, limit,
                                                 max_tokens, 30)
        repo_id = self.answering_repository(repository)

        def compute() -> list:
            found = self.ff.impact(name, depth, limit=GRAPH_CAP, repo_id=repo_id)
            return [(found["notes"], found["summary"])] + found["results"]

        rows = self.rows(key, compute)
        notes, summary = rows[0]
        return page(rows[1:], offset, limit, tokens, key, frame={
            "name": cut(name, ECHO_CHARS), "depth": depth, "summary": summary, "notes": notes})

    @tool()
    def get_file(
            self, path: FilePath,
            start_line: Annotated[int, Field(ge=1)] = 1,
            end_line: Annotated[int | None, Field(ge=1)] = None,
            repository: Repository = None,
            limit: Annotated[int, Field(ge=1, le=MAX_FILE_PAGE)] = 400,
            cursor: Cursor = None, max_tokens: MaxTokens = DEFAULT_MAX_TOKENS) -> dict[str, Any]:
        """Read a file or line range, with line numbers."""
        repo_id, rel = self._safe_path(path, repository)
        if start_line < 1:
            raise QueryError("start_line must be at least 1 (lines are 1-based)")
        if end_line is not None and end_line < start_line:
            raise QueryError("end_line must not be before start_line")
        args = {"path": rel, "repo": repo_id, "start_line": start_line, "end_line": end_line}
        key, offset, limit, tokens = self._begin("get_file", args, cursor, limit, max_tokens,
                                                 400, MAX_FILE_PAGE)
        stored = self.ff.file_text(rel, repo_id)
        if stored is None:
            raise QueryError(f"{rel} is not in the index (missing, ignored, binary or too "
                             "large); use text_pattern_search or intelligent_search to find files")
        lines = stored["lines"]
        last = len(lines) if end_line is None else min(end_line, len(lines))
        first = n = start_line + offset
        shown: list[str] = []
        used = 0
        stopped_by = None
        truncated = False
        # the reply around the text at its widest; each line adds its JSON and a "\n"
        widest = {"path": rel, "language": stored["language"], "total_lines": len(lines),
                  "total": max(0, last - start_line + 1), "start_line": first, "end_line": last,
                  "returned": limit, "text": "", "cursor": encode_cursor(last, key),
                  "approx_tokens": tokens, "truncated": False, "notes": [
                      _stopped_note(first, last, start_line, last, f"max_tokens={tokens}")]}
        if any(len(lines[i]) > FILE_LINE_CHARS for i in range(first - 1, last)):
            widest["notes"].append(_cut_note(last, last))
        room = 4 * tokens - 1 - len(to_json(widest))  # characters left for the text
        cut_lines = []
        while n <= last:
            text = f"{n:>6}  {cut(lines[n - 1], FILE_LINE_CHARS)}"
            cost = len(to_json(text)) - 2 + (2 if shown else 0)
            if len(shown) == limit or (shown and used + cost > room):
                stopped_by = f"limit={limit}" if len(shown) == limit else f"max_tokens={tokens}"
                break
            while cost > room and len(text) > 21:  # one line alone over the budget: cut it
                text = text[:max(20, len(text) - (cost - room) - 1)] + "…"
                cost, truncated = len(to_json(text)) - 2, True
            shown.append(text)
            if len(lines[n - 1]) > FILE_LINE_CHARS:
                cut_lines.append(n)
            used += cost
            n += 1
        notes = [] if stopped_by is None else [
            _stopped_note(first, n - 1, start_line, last, stopped_by)]
        if cut_lines:  # minified code, data: text_pattern_search shows a line around a match
            truncated = True
            notes.append(_cut_note(len(cut_lines), cut_lines[0]))
        return settle({"path": rel, "language": stored["language"], "total_lines": len(lines),
                       "total": max(0, last - start_line + 1), "start_line": first,
                       "end_line": n - 1, "returned": len(shown), "text": "\n".join(shown),
                       "cursor": encode_cursor(n - start_line, key) if n <= last else None,
                       "approx_tokens": 0, "truncated": truncated, "notes": notes})

    @tool()
    def find_similar_code(
            self, path: FilePath,
            line: Annotated[int, Field(ge=1)] = 1,
            repository: Repository = None, limit: Limit = 10, cursor: Cursor = None,
            max_tokens: MaxTokens = DEFAULT_MAX_TOKENS) -> dict[str, Any]:
        """Code resembling the block at path:line (near-duplicates, other
        implementations)."""
        repo_id, rel = self._safe_path(path, repository)
        if line < 1:
            raise QueryError("line must be at least 1 (lines are 1-based)")
        args = {"path": rel, "repo": repo_id, "line": line}
        key, offset, limit, tokens = self._begin("find_similar_code", args, cursor, limit,
                                                 max_tokens, 10)

        def compute() -> list:
            found = self.ff.similar_code(rel, line, repo_id, limit=MAX_SIMILAR,
                                         code_lines=SIMILAR_CODE_LINES)
            return [found["capped"]] + [
                {**{k: v for k, v in h.items() if k != "code"},
                 "code": "\n".join(f"{c['line']:>5}  {cut(c['text'])}" for c in h["code"]),
                 "code_truncated": h["end_line"] - h["start_line"] + 1 > len(h["code"])}
                for h in found["results"]]

        rows = self.rows(key, compute)
        capped, rows = rows[0], rows[1:]
        notes = [f"only the {MAX_SIMILAR} nearest chunks are kept; more exist"] if capped else []
        semantic = self.ff.modality_status(repo_id).get("semantic", "")
        if semantic != "ready":  # no or some vectors yet: fewer neighbours than there are
            notes.append(f"the semantic index is not complete ({semantic}): similar code "
                         "is found among what is embedded so far")
        return page(rows, offset, limit, tokens, key, frame={
            "path": rel, "line": line, "total_is_lower_bound": capped, "notes": notes})

    @tool()
    def repository_context(
            self, repository: Repository = None,
            limit: Limit = 15,
            cursor: Cursor = None, max_tokens: MaxTokens = DEFAULT_MAX_TOKENS) -> dict[str, Any]:
        """Orientation: languages, size, index freshness, the most central files and
        symbols."""
        key, offset, limit, tokens = self._begin("repository_context",
                                                 {"repository": repository}, cursor, limit,
                                                 max_tokens, 15)
        # on a server, naming no repository lists every one the caller sees, without a map
        overview = repository is None and self.serves_many and len(self.visible_repositories()) > 1
        repo_id = None if overview else self.answering_repository(repository)
        now = time.time()
        repos = [{**r, "age_seconds": round(now - r["indexed_at"], 1) if r["indexed_at"] else None,
                  "modalities": self.ff.modality_status(r["id"])}
                 for r in self.ff.repositories(repo_id) if self.sees(r["name"])]

        def compute() -> list:
            if overview:
                return [[], []]
            repo_map = self.ff.map(limit=500, repo_id=repo_id)
            return [repo_map["files"], repo_map["symbols"]]

        files, symbols = self.rows(key, compute)
        # where the index is (a store URL names its server and user): for those who see
        # every repository
        where = {"index_dir": self.ff.location} if self.sees_everything() else {}
        if overview:  # every repository the caller sees, paged
            reply = {**where, "index_bytes": self.index_bytes(), "freshness": self.freshness(),
                     "total": len(repos), "repositories": [],
                     "cursor": encode_cursor(len(repos), key), "approx_tokens": tokens}
            shown, _ = fill(repos, offset, limit, tokens - approx_tokens(reply) - 1)
            nxt = offset + len(shown)
            reply.update({"repositories": shown,
                          "cursor": encode_cursor(nxt, key) if nxt < len(repos) else None})
            return settle(reply)
        total = max(len(files), len(symbols))
        reply = {**where, "index_bytes": self.index_bytes(),
                 "repositories": repos, "freshness": self.freshness(), "total": total,
                 "central_files": [], "central_files_total": len(files),
                 "central_symbols": [], "central_symbols_total": len(symbols),
                 "cursor": encode_cursor(total, key), "approx_tokens": tokens}
        last = reply["freshness"].get("last_index")
        if last and approx_tokens(reply) > tokens // 2:
            # a small budget: the last run's summary says less
            reply["freshness"]["last_index"] = {
                **{k: last[k] for k in LAST_INDEX_BRIEF if k in last}, "truncated": True}
        if approx_tokens(reply) > tokens // 2:  # still: the repositories in brief, and
            # where the index is, its size and freshness left out while over half the budget
            reply["repositories"] = [{k: r[k] for k in REPOSITORY_BRIEF if k in r}
                                     for r in repos]
            for name in ("index_dir", "index_bytes", "freshness"):
                if approx_tokens(reply) > tokens // 2:
                    reply.pop(name, None)
            reply["truncated"] = True
        room = tokens - approx_tokens(reply) - 1
        # both lists advance by one offset: each shows as many rows as the other, but for
        # a list already at its end, which leaves all the room to the other
        going = [rows for rows in (files, symbols) if offset < len(rows)]
        shown = {id(rows): fill(rows, offset, limit, room // len(going))[0] for rows in going}
        if len(going) == 2:
            n = min(len(v) for v in shown.values())
            shown = {k: v[:n] for k, v in shown.items()}
        shown_files, shown_symbols = shown.get(id(files), []), shown.get(id(symbols), [])
        nxt = offset + max(len(shown_files), len(shown_symbols))
        reply.update({"central_files": shown_files, "central_symbols": shown_symbols,
                      "cursor": encode_cursor(nxt, key) if nxt < total else None})
        return settle(reply)

    @tool()
    def get_task_context(
            self,
            task: Annotated[str, Field(description="What you are about to do.")],
            max_tokens: MaxTokens = 8000,
            path_glob: PathGlob = None, language: Language = None,
            repository: Repository = None,
            include_neighbours: bool = True,
            max_span_lines: Annotated[int, Field(ge=5, le=400)] = 80,
            limit: Limit = 40,
            cursor: Cursor = None) -> dict[str, Any]:
        """The code a task needs in one call, within max_tokens: the best spans plus
        the definitions they use and their callers."""
        if not task or not task.strip():
            raise QueryError("empty task: describe what you are about to do")
        path_glob = check_glob(path_glob)
        args = {"task": task, "path_glob": path_glob, "language": language,
                "repository": repository, "include_neighbours": include_neighbours}
        key, offset, limit, tokens = self._begin("get_task_context", args, cursor, limit,
                                                 max_tokens, 40)
        repo_id = self.answering_repository(repository)
        context = self.rows(key, lambda: [self.ff.task_context(
            task, language, path_glob, repo_id, include_neighbours)])[0]
        total = len(context.spans)
        echo = cut(task, ECHO_CHARS)
        widest = {"task": echo, "max_tokens": tokens, "used_tokens": tokens, "total": total,
                  "offset": offset, "returned": limit, "spans": [],
                  "cursor": encode_cursor(total, key), "search": context.search}
        packed = context.pack(offset, limit, max(1, tokens - approx_tokens(widest) - 1),
                              max(5, min(max_span_lines, 400)))
        nxt = packed["next"]
        return settle({"task": echo, "max_tokens": tokens, "used_tokens": 0,
                       "total": total, "offset": offset, "returned": len(packed["spans"]),
                       "spans": packed["spans"], "cursor": encode_cursor(nxt, key) if nxt < total
                       else None, "search": context.search}, "used_tokens")

    @tool(read_only=False)
    def reindex(self) -> dict[str, Any]:
        """Re-index changed files now (files are watched already; for stale results)."""
        grant = current_grant.get()
        if grant is not None and not grant.writes:
            raise QueryError("this token may read, not write: reindex needs a write token")
        if not self.sees_served():
            raise QueryError("reindex re-indexes the repository this server serves, which "
                             "this token is not granted")
        if self.serves_many:
            raise QueryError("this server answers from what its indexers write; it does not "
                             "read files itself (`fourfold index PATH --store URL` updates a "
                             "repository)")
        summary = self.reindex_now()
        return {**summary, "total": summary["added"] + summary["changed"] + summary["deleted"],
                "embedding": "in the background" if self.embed_enabled else "off",
                "cursor": None}

    @tool()
    def list_files(
            self,
            path_glob: PathGlob = None,
            name: Annotated[str | None, Field(description="Part of the file name.")] = None,
            language: Language = None, repository: Repository = None, limit: Limit = 100,
            cursor: Cursor = None, max_tokens: MaxTokens = DEFAULT_MAX_TOKENS) -> dict[str, Any]:
        """Indexed files (path, language, bytes, lines) in path order."""
        path_glob = check_glob(path_glob)
        args = {"path_glob": path_glob, "name": name, "language": language,
                "repository": repository}
        key, offset, limit, tokens = self._begin("list_files", args, cursor, limit,
                                                 max_tokens, 100)
        repo_id = self.answering_repository(repository)
        rows = self.rows(key, lambda: self.ff.list_files(
            path_glob, name, (language,) if language else (), repo_id))

        def render(row: dict) -> dict:
            return {**row, "lines": self.ff.line_count(row["path"], repo_id)}

        return page(rows, offset, limit, tokens, key, render)


def _cut_lines(match: dict) -> dict:
    """A text match's context lines, if any, cut for an agent's page (the matched line is
    cut already, around its match)."""
    out = dict(match)
    for side in ("before", "after"):
        if side in match:
            out[side] = [{"line": c["line"], "text": cut(c["text"])} for c in match[side]]
    return out


def _definition(d: dict) -> dict:
    """A definition row with its signature and docstring cut for an agent's page."""
    return {**d, "signature": cut(d["signature"], SIGNATURE_CHARS),
            "doc": cut(d["doc"] or "", SIGNATURE_CHARS)}


def _stopped_note(first: int, shown_to: int, start_line: int, last: int, by: str) -> str:
    """get_file's note of a page that stopped before the range's end."""
    return (f"lines {first}-{shown_to} of {start_line}-{last}: the page stopped at {by}; "
            "pass `cursor` for the rest")


def _cut_note(count: int, first_cut: int) -> str:
    """get_file's note of the lines it cut at FILE_LINE_CHARS."""
    return (f"{count} line(s) over {FILE_LINE_CHARS:,} characters are cut (first: line "
            f"{first_cut}); text_pattern_search shows such a line around what it matches")


def _bounded(value: str | None, parameter: str, most: int = MAX_NAME_CHARS) -> None:
    """Refuse a name longer than any a repository holds (it would only be echoed back)."""
    if value is not None and len(value) > most:
        raise QueryError(f"{parameter} is {len(value):,} characters long; give at most "
                         f"{most:,}")


def _around(text: str, pattern: str, regex: bool, case_sensitive: bool) -> str:
    """A matched line cut for an agent's page around its first match, so that a long line
    (minified code) still shows what matched: an ellipsis marks each cut."""
    if len(text) <= LINE_CHARS:
        return text
    try:
        if regex:
            found = re2.search(pattern if case_sensitive else "(?i)" + pattern, text)
            at = found.start() if found else 0
        else:
            at = max(0, (text if case_sensitive else text.lower()).find(
                pattern if case_sensitive else pattern.lower()))
    except re2.error:
        at = 0
    start = max(0, min(at - LINE_CHARS // 4, len(text) - LINE_CHARS))
    return ("…" if start else "") + cut(text[start:])
