"""Task context: the code a task needs, packed into a token budget.

`Fourfold.task_context(task)` runs a fused search for the task, adds each top hit's graph
neighbours (the most central definitions it calls and its most central callers) and drops
spans inside an earlier one of the same file; `TaskContext.pack` then fills a token budget
with whole lines of those spans, best first. The MCP tool `get_task_context` pages it; any
other interface can call the same two steps.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import FourfoldError, QueryError
from .store.base import Resolution

if TYPE_CHECKING:
    from .api import Fourfold

SEARCH_HITS = 15        # fused hits a task starts from
NEIGHBOUR_HITS = 6      # the hits whose graph neighbours are added
CALLEES, CALLERS = 3, 2  # neighbours kept per hit, most central first
MIN_ROOM = 60           # a span cut to fewer tokens than this is not worth sending
LINE_CHARS = 400


def to_json(value: Any) -> str:
    """The compact JSON text of a value, as the MCP server sends it (no spaces, UTF-8)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def approx_tokens(value: Any) -> int:
    """The one token estimate budgets count in: characters // 4 + 1 of the text sent (a
    string as is, anything else as its compact JSON, `to_json`). It is at least a quarter
    token a character, and summing it over the parts of a reply over-counts the whole."""
    text = value if isinstance(value, str) else to_json(value)
    return len(text) // 4 + 1


def numbered(n: int, line: str, limit: int = LINE_CHARS) -> str:
    """One line as shown to a reader: its number, then the text cut to `limit` characters."""
    text = line if len(line) <= limit else line[:limit] + "…"
    return f"{n:>6}  {text}"


@dataclass
class TaskContext:
    """The ranked spans for one task (before packing) and how the search answered."""

    ff: "Fourfold"
    repo_id: int | None
    search: dict
    spans: list[dict]

    def pack(self, start: int = 0, limit: int = 40, max_tokens: int = 8000,
             max_span_lines: int = 80) -> dict:
        """Spans from `start` with their numbered lines, at most `limit` of them and about
        `max_tokens` tokens (the span that overflows is cut to whole lines; at least one
        span). Returns {"spans", "used_tokens", "next"}: `next` is the first span not sent."""
        files: dict[str, list[str]] = {}
        out: list[dict] = []
        used = 0
        index = start
        while index < len(self.spans) and len(out) < limit:
            span = self.spans[index]
            if span["path"] not in files:
                stored = self.ff.file_text(span["path"], self.repo_id)
                files[span["path"]] = stored["lines"] if stored else []
            lines = files[span["path"]]
            first = max(1, span["start_line"])
            last = min(span["end_line"], len(lines), first + max_span_lines - 1)
            body = [numbered(n, lines[n - 1]) for n in range(first, last + 1)]
            entry = dict(span)
            line_cut = False

            def spent_on(body: list[str]) -> int:
                """The estimate of the span as sent (its JSON, text and marks included)."""
                return approx_tokens({**entry, "start_line": first, "text": "\n".join(body),
                                      "end_line": first + len(body) - 1, "truncated": False})

            cost = spent_on(body)
            if used + cost > max_tokens:
                room = max_tokens - used - approx_tokens(entry)
                if room < MIN_ROOM and out:
                    break
                kept, spent = [], 0
                for line in body:
                    spent += approx_tokens(line) + 1
                    if spent > max(room, MIN_ROOM):
                        break
                    kept.append(line)
                body = kept or body[:1]
                while len(body) > 1 and used + spent_on(body) > max_tokens:
                    body.pop()
                if out and used + spent_on(body) > max_tokens:
                    break
                while body and used + spent_on(body) > max_tokens and len(body[0]) > 21:
                    # the first span's line alone is larger than the budget: cut it
                    over = 4 * (used + spent_on(body) - max_tokens)
                    body = [body[0][:max(20, len(body[0]) - over - 1)] + "…"]
                    line_cut = True
                last = first + len(body) - 1
                cost = spent_on(body)
            entry.update({"start_line": first, "end_line": last, "text": "\n".join(body),
                          "truncated": last < span["end_line"] or line_cut})
            out.append(entry)
            used += cost
            index += 1
            if used >= max_tokens:
                break
        return {"spans": out, "used_tokens": used, "next": index}


def task_context(ff: "Fourfold", task: str, languages: tuple[str, ...] = (),
                 path_glob: str | None = None, repo_id: int | None = None,
                 include_neighbours: bool = True) -> TaskContext:
    """The spans relevant to a task, best first: search hits, then neighbours of each."""
    if not task or not task.strip():
        raise QueryError("empty task: describe what you are about to do")
    response, notes = ff.search_with_fallback(task, languages=languages, path_glob=path_glob,
                                              repo_id=repo_id, limit=SEARCH_HITS)
    spans: list[dict] = []
    for rank, hit in enumerate(response.hits, 1):
        spans.append({"path": hit.path, "start_line": hit.start_line, "end_line": hit.end_line,
                      "symbol": hit.symbol, "kind": hit.kind, "reason": f"search result {rank}",
                      "score": round(hit.score, 6)})
        if include_neighbours and hit.symbol and rank <= NEIGHBOUR_HITS:
            spans.extend(neighbours(ff, hit.path, hit.symbol, repo_id))
    search = {"intent": response.intent, "modalities": response.modalities,
              "unavailable": response.unavailable, "notes": notes}
    return TaskContext(ff, repo_id, search, _dedupe(spans))


def neighbours(ff: "Fourfold", path: str, symbol: str, repo_id: int | None) -> list[dict]:
    """The most central definitions a symbol (defined in `path`) calls, then its most
    central callers, each as a span with the reason it is there."""
    graph = ff.graph
    loaded = graph.graph()
    try:
        targets = [t for t in graph.definitions_of(symbol, repo_id) if t.path == path]
    except FourfoldError:
        return []
    own = {t.symbol_id for t in targets}
    rank = loaded.symbol_rank
    # edges guessed by name alone are no evidence of a relation
    callees = {e.dst_symbol for t in targets for e in loaded.outgoing.get(t.symbol_id, [])
               if e.kind == "call" and e.resolution >= Resolution.INFERRED
               and e.dst_symbol is not None and e.dst_symbol not in own}
    callers = {e.src_symbol for t in targets for e in loaded.incoming.get(t.symbol_id, [])
               if e.src_symbol is not None and e.src_symbol not in own
               and e.resolution >= Resolution.INFERRED}

    def central(ids: set[int], n: int) -> list[int]:
        return sorted(ids, key=lambda sid: (-rank.get(sid, 0.0), sid))[:n]

    wanted = ([(sid, f"called by {symbol}") for sid in central(callees, CALLEES)]
              + [(sid, f"calls {symbol}") for sid in central(callers, CALLERS)])
    info = {s.symbol_id: s for s in ff.store.symbols_by_id([sid for sid, _ in wanted])}
    return [{"path": s.path, "start_line": s.start_line, "end_line": s.end_line,
             "symbol": s.qualname, "kind": s.kind, "reason": reason}
            for sid, reason in wanted if (s := info.get(sid)) is not None]


def _dedupe(spans: list[dict]) -> list[dict]:
    """Drop spans contained in an earlier one of the same file."""
    kept: list[dict] = []
    for span in spans:
        if not any(k["path"] == span["path"] and k["start_line"] <= span["start_line"]
                   and span["end_line"] <= k["end_line"] for k in kept):
            kept.append(span)
    return kept
