"""Task context: the code a task needs, packed into a token budget.

`Fourfold.task_context(task)` runs a fused search for the task, adds each top hit's graph
neighbours (the most central definitions it calls and its most central callers) and, when
its settings ask for them, the declarations outside functions in the hits' files whose names
the task names (settings defaults, flags, fields, registries: `config_points`), then drops
spans inside the part of an earlier one of the same file that a pack sends; `TaskContext.pack`
then fills a token budget with whole lines of those spans, best first. The MCP tool
`get_task_context` pages it; any other interface can call the same two steps.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import FourfoldError, QueryError
from .model import FUNCTION_KINDS
from .store.base import Resolution
from .query.model import check_limit, check_offset, check_text
from .tokens import query_words, singular, sub_words

if TYPE_CHECKING:
    from .api import Fourfold

SEARCH_HITS = 15        # fused hits a task starts from
NEIGHBOUR_HITS = 6      # the hits whose graph neighbours are added
CALLEES, CALLERS = 3, 2  # neighbours kept per hit, most central first
MIN_ROOM = 60           # a span cut to fewer tokens than this is not worth sending
LINE_CHARS = 400
SPAN_LINES = 80         # the most lines of a span a pack sends unless told otherwise
MIN_SPAN_LINES = 5      # the fewest it sends of a span, but for the last of a page
DOCUMENT_LANGUAGES = frozenset({"markdown", "rst", "text"})  # prose: its `x = y` is an example
DECLARATION_LINES = 60  # a declared value longer than this (a huge table) is cut
COMMENT_LINES = 3       # comment lines above a declaration kept with it
COMMENT_STARTS = ("#", "//", "/*", "*", "--", "@")
STRING_LITERAL = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')
ASSIGNED = re.compile(r"\s*(?:[A-Za-z_]\w*\s+)*?(?P<name>[A-Za-z_]\w*)\s*(?::[^=]*)?:?=(?!=)")
FIELD = re.compile(r"\s*(?:(?:pub|public|private|protected|internal|readonly|static|final)\s+)*"
                   r"(?P<name>[A-Za-z_]\w*)\s*:?\s+\*?[\w.\[\]<>]+[,;]?\s*(?:`[^`]*`\s*)?"
                   r"(?://.*)?$")
# first words of statements that FIELD would otherwise read as a name and its type
STATEMENT_WORDS = frozenset({"import", "from", "return", "package", "use", "export", "raise",
                             "yield", "del", "pass", "break", "continue", "goto", "throw",
                             "include", "require", "extends", "implements", "else", "end",
                             "assert", "global", "nonlocal", "await", "print", "delete",
                             "new", "case", "default"})


@dataclass(frozen=True)
class ContextSettings:
    """Whether and where a pack holds the declarations the task names. On by default, one
    after the first hit (the best setting in-sample): a task that names a setting, flag or
    field needs its definition, which no file-level benchmark sees; on the task-context
    benchmark (bench/task_context.py, docs/benchmarks.md) it costs held-out gold-file recall
    at most 0.003."""

    config_points: int = 1  # how many declarations (config_points)
    config_after: int = 1   # after how many hits (each with its neighbours)


DEFAULT_SETTINGS = ContextSettings()


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
             max_span_lines: int = SPAN_LINES) -> dict:
        """Spans from `start` with their numbered lines, at most `limit` of them and about
        `max_tokens` tokens (the span that overflows is cut to whole lines; at least one
        span). A span whose lines an earlier span of the page sent is left out (a method
        inside a class sent whole). Returns {"spans", "used_tokens", "next"}: `next` is the
        first span not sent."""
        check_offset(start)
        check_limit(limit, most=None)
        check_limit(max_tokens, most=None, what="max_tokens")
        check_limit(max_span_lines, most=None, what="max_span_lines")
        max_span_lines = max(max_span_lines, MIN_SPAN_LINES)
        files: dict[str, list[str]] = {}
        out: list[dict] = []
        sent: dict[str, list[tuple[int, int]]] = {}  # per path, the line ranges sent
        used = 0
        index = start
        while index < len(self.spans) and len(out) < limit:
            span = self.spans[index]
            if any(a <= span["start_line"] and span["end_line"] <= b
                   for a, b in sent.get(span["path"], ())):
                index += 1
                continue
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
            sent.setdefault(span["path"], []).append((first, last))
            used += cost
            index += 1
            if used >= max_tokens:
                break
        return {"spans": out, "used_tokens": used, "next": index}


def task_context(ff: "Fourfold", task: str, languages: tuple[str, ...] = (),
                 path_glob: str | None = None, repo_id: int | None = None,
                 include_neighbours: bool = True,
                 settings: ContextSettings | None = None) -> TaskContext:
    """The spans relevant to a task, best first: search hits, each followed by its
    neighbours, with the declarations the task names after the first hits."""
    check_text(task, "the task")
    if not task or not task.strip():
        raise QueryError("empty task: describe what you are about to do")
    settings = settings or DEFAULT_SETTINGS
    response, notes = ff.search_with_fallback(task, languages=languages, path_glob=path_glob,
                                              repo_id=repo_id, limit=SEARCH_HITS)
    spans: list[dict] = []
    for rank, hit in enumerate(response.hits, 1):
        spans.append({"path": hit.path, "start_line": hit.start_line, "end_line": hit.end_line,
                      "symbol": hit.symbol, "kind": hit.kind, "reason": f"search result {rank}",
                      "score": round(hit.score, 6)})
        if include_neighbours and hit.symbol and rank <= NEIGHBOUR_HITS:
            spans.extend(neighbours(ff, hit.path, hit.symbol, repo_id))
        if rank == min(settings.config_after, len(response.hits)):
            spans.extend(config_points(ff, task, response.hits, settings.config_points,
                                       repo_id))
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
    callees = {e.dst_symbol for t in targets for e in loaded.outgoing(t.symbol_id)
               if e.kind == "call" and e.resolution >= Resolution.INFERRED
               and e.dst_symbol is not None and e.dst_symbol not in own}
    callers = {e.src_symbol for t in targets for e in loaded.incoming(t.symbol_id)
               if e.src_symbol is not None and e.src_symbol not in own
               and e.resolution >= Resolution.INFERRED}

    def central(ids: set[int], n: int) -> list[int]:
        return sorted(ids, key=lambda sid: (-rank.get(sid, 0.0), sid))[:n]

    wanted = ([(sid, f"called by {symbol}") for sid in central(callees, CALLEES)]
              + [(sid, f"calls {symbol}") for sid in central(callers, CALLERS)])
    info = {s.symbol_id: s for s in ff.store.symbols_by_id([sid for sid, _ in wanted],
                                                           repo_id)}
    return [{"path": s.path, "start_line": s.start_line, "end_line": s.end_line,
             "symbol": s.qualname, "kind": s.kind, "reason": reason}
            for sid, reason in wanted if (s := info.get(sid)) is not None]


def config_points(ff: "Fourfold", task: str, hits: list, n: int,
                  repo_id: int | None = None) -> list[dict]:
    """Up to `n` declarations outside any function (module constants, class attributes,
    struct fields: where settings, defaults, flags and registries are defined) in the files
    the search found, whose names the task names: by the share of a name's words the task
    names (or inflects: `_same_word`), then by the rank of the file's first hit. Each span
    is the whole statement with the comment right above it."""
    if n <= 0:
        return []
    wanted = query_words(task)
    found: list[tuple[float, int, int, dict]] = []
    for file_rank, path in enumerate(dict.fromkeys(hit.path for hit in hits)):
        stored = ff.store.file_by_path(path, repo_id)
        if stored is None or stored.language in (None, *DOCUMENT_LANGUAGES):
            continue
        lines = ff.store.content(stored.file_id).split("\n")
        local = [False] * (len(lines) + 2)  # line number -> inside a function's body
        for symbol in ff.store.symbols_of_file(stored.file_id):
            if symbol.kind in FUNCTION_KINDS:
                local[symbol.start_line + 1:symbol.end_line + 1] = \
                    [True] * max(0, symbol.end_line - symbol.start_line)
        depths = _bracket_depths(lines, "([{", ")]}")
        # a line inside open parentheses or square brackets is an argument or an item, not a
        # declaration (braces also hold struct and class bodies, whose fields are)
        in_arguments = _bracket_depths(lines, "([", ")]")
        for number, line in enumerate(lines, 1):
            name = declared_name(line) if in_arguments[number - 1] == 0 else None
            if name is None or local[number]:
                continue
            words = [singular(w) for w in sub_words(name)]
            named = sum(1 for w in words if any(_same_word(w, q) for q in wanted))
            if named:
                first, last = _statement(lines, depths, number)
                found.append((named / len(words), file_rank, number,
                              {"path": stored.path, "start_line": first, "end_line": last,
                               "symbol": name, "kind": "declaration",
                               "reason": "declaration the task names"}))
    found.sort(key=lambda f: (-f[0], f[1], f[2]))
    return [span for *_, span in found[:n]]


def declared_name(line: str) -> str | None:
    """The name a line declares: assigned (`x = `, `x: T = `, `const X = `, `x := `) or, as
    in a struct or record, followed by a type (`Hidden bool`, `name: String,`)."""
    if assigned := ASSIGNED.match(line):
        return assigned["name"]
    field = FIELD.match(line)
    return field["name"] if field and field["name"] not in STATEMENT_WORDS else None


def _same_word(word: str, task_word: str) -> bool:
    """Whether a name's word is a task's word, or the same word inflected: they share all but
    the last letter of the shorter one ("hidden" ~ "hide", "config" ~ "configuration")."""
    if word == task_word:
        return True
    shorter = min(len(word), len(task_word))
    shared = len(os.path.commonprefix([word, task_word]))
    return shorter >= 3 and shared >= max(3, shorter - 1)


def _bracket_depths(lines: list[str], opening: str, closing: str) -> list[int]:
    """How many of the `opening` brackets are open where each line starts (string literals
    on one line skipped; a bracket in a multi-line string may miscount)."""
    depths, depth = [], 0
    for line in lines:
        depths.append(depth)
        code = STRING_LITERAL.sub("", line)
        depth = max(0, depth + sum(code.count(c) for c in opening)
                    - sum(code.count(c) for c in closing))
    return depths


def _statement(lines: list[str], depths: list[int], number: int) -> tuple[int, int]:
    """The lines of the statement declared on line `number` (until its brackets close, at
    most DECLARATION_LINES) and of the comment lines right above it."""
    first = number
    while first > 1 and number - first < COMMENT_LINES and \
            lines[first - 2].lstrip().startswith(COMMENT_STARTS):
        first -= 1
    last = number
    while last < min(len(lines), number + DECLARATION_LINES - 1) \
            and depths[last] > depths[number - 1]:
        last += 1
    return first, last


def _dedupe(spans: list[dict]) -> list[dict]:
    """Drop spans inside the lines every pack sends of an earlier one of the same file (its
    first MIN_SPAN_LINES): the same function found twice, for two reasons. A pack leaves
    out the others whose lines its page sent."""
    kept: list[dict] = []
    for span in spans:
        if not any(k["path"] == span["path"] and k["start_line"] <= span["start_line"]
                   and span["end_line"] <= min(k["end_line"],
                                               k["start_line"] + MIN_SPAN_LINES - 1)
                   for k in kept):
            kept.append(span)
    return kept
