"""What one answer is: a file, a span, or a function. The fused hits are spans (a chunk,
a definition, a line); this stage turns them into the unit the caller asked for.

- "file": each file's best span, with a share of its other spans' scores (file support).
- "span": every span as fused.
- "function": every function or method the spans lie in (the one a span overlaps most),
  several per file; a span in a class body outside its methods answers with the class, a
  span outside any definition (module-level code) stays a span. Where the question allows
  only some kinds (`--kind class`), only definitions of those kinds are answers. The
  definitions of the first files whose names the question spells out follow the first
  answers (NAMED_AFTER); so do, for a pasted text, the functions of the first files that
  use the most names it mentions (USING_AFTER).
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Set as AbstractSet
from dataclasses import replace

from ..model import FUNCTION_KINDS, Hit
from ..store.base import StoredSymbol

FILE, SPAN, FUNCTION = "file", "span", "function"
GRANULARITIES = (FILE, SPAN, FUNCTION)

CONTAINER_KINDS = frozenset({"class", "struct", "enum", "interface", "trait", "impl", "object",
                             "record", "protocol", "module"})
UNIT_KINDS = FUNCTION_KINDS | CONTAINER_KINDS  # what a function answer can be
FILE_SUPPORT = 0.25  # chosen by leaving repositories out (docs/benchmarks.md)
# A definition's score is its best span's plus this share of its other spans': the same
# reasoning (and value) as a file's support.
DEFINITION_SUPPORT = FILE_SUPPORT
# The definitions the question names in the first NAMED_FILES files of the function answers
# come right after the first NAMED_AFTER answers; chosen leaving each localization-train
# repository out (docs/benchmarks.md).
NAMED_FILES = 2
NAMED_AFTER = 4
# The functions of the first USING_FILES files of the function answers that use at least
# USING_AT_LEAST of the names a pasted text mentions come right after the first USING_AFTER
# answers, most names first, at most USING_MOST: a fix often changes the code that calls
# what the issue names, which no search span may have reached. Chosen leaving each
# localization-train repository out (docs/benchmarks.md).
USING_FILES = 3
USING_AT_LEAST = 2
USING_AFTER = 4
USING_MOST = 4


def with_file_support(hits: list[Hit], share: float = FILE_SUPPORT) -> list[Hit]:
    """Each file's best hit gains a share of the scores of the file's other hits: a file
    that several modalities and several of its chunks point at is more likely the answer
    than one lucky chunk elsewhere. Returns every hit, re-sorted; `best_per_file` then
    keeps one per file."""
    rest: dict[str, float] = {}
    best: dict[str, Hit] = {}
    for hit in hits:
        key = hit.path
        if key in best:
            rest[key] = rest.get(key, 0.0) + hit.score
        else:
            best[key] = hit
    for key, extra in rest.items():
        best[key].file_support = share * extra
        best[key].score += share * extra
    return sorted(hits, key=lambda h: -h.score)


def best_per_file(hits: list[Hit]) -> list[Hit]:
    seen: set[str] = set()
    out = []
    for hit in hits:
        if hit.path not in seen:
            seen.add(hit.path)
            out.append(hit)
    return out


def _overlap(symbol: StoredSymbol, hit: Hit) -> int:
    return min(symbol.end_line, hit.end_line) - max(symbol.start_line, hit.start_line) + 1


def enclosing_definition(hit: Hit, definitions: list[StoredSymbol]) -> StoredSymbol | None:
    """The function or method the span lies in (the one it overlaps most, innermost on a
    tie, then the first), else the innermost class-like definition holding its first line,
    else None. The order of `definitions` does not matter."""
    functions = [s for s in definitions if s.kind in FUNCTION_KINDS and _overlap(s, hit) > 0]
    if functions:
        return max(functions, key=lambda s: (_overlap(s, hit), -(s.end_line - s.start_line),
                                             -s.start_line))
    containers = [s for s in definitions if s.kind in CONTAINER_KINDS
                  and s.start_line <= hit.start_line <= s.end_line]
    return min(containers, key=lambda s: (s.end_line - s.start_line, s.start_line),
               default=None)


def by_function(hits: list[Hit], definitions_of: Callable[[str], list[StoredSymbol]],
                support: float = DEFINITION_SUPPORT, named: AbstractSet[str] = frozenset(),
                kinds: AbstractSet[str] = frozenset()) -> list[Hit]:
    """One hit per definition the spans lie in, best first (see the module's doc); `named`:
    the names the question spells out (Query.identifiers); `kinds`: the only definition
    kinds the question allows, if any (a hit answers with the definition of those kinds it
    lies in)."""
    best: dict[tuple, Hit] = {}
    rest: dict[tuple, float] = {}
    for hit in hits:
        definitions = [s for s in definitions_of(hit.path) if not kinds or s.kind in kinds]
        symbol = enclosing_definition(hit, definitions)
        if symbol is None:
            key = (hit.path, hit.start_line, hit.end_line)
            unit = hit
        else:
            key = (hit.path, symbol.qualname, symbol.start_line)
            unit = replace(hit, start_line=symbol.start_line, end_line=symbol.end_line,
                           symbol=symbol.qualname, kind=symbol.kind,
                           lines=[(n, t) for n, t in hit.lines
                                  if symbol.start_line <= n <= symbol.end_line])
        if key in best:
            rest[key] = rest.get(key, 0.0) + hit.score
        else:
            best[key] = unit
    for key, extra in rest.items():
        best[key].definition_support = support * extra
        best[key].score += support * extra
    ranked = sorted(best.values(), key=lambda h: -h.score)
    return with_named_definitions(ranked, definitions_of, named, kinds) if named else ranked


def _unit(hit: Hit) -> tuple:
    """What makes a function answer one: its file, definition and first line."""
    return (hit.path, hit.symbol, hit.start_line)


def _placed_after(ranked: list[Hit], after: int,
                  chosen: list[tuple[str, StoredSymbol, dict]]) -> list[Hit]:
    """`ranked` with the definitions `chosen` ((path, definition, the fields that say why))
    right after its first `after` answers, in that order, scored as the answer they come
    before: each the answer found further down, or a new one. The rest keep their order."""
    if not chosen:
        return ranked
    found = {_unit(h): h for h in ranked[after:]}
    score = ranked[after].score if len(ranked) > after else ranked[-1].score
    placed = [replace(found.get((path, symbol.qualname, symbol.start_line))
                      or Hit(path, symbol.start_line, symbol.end_line, 0.0,
                             symbol=symbol.qualname, kind=symbol.kind), score=score, **why)
              for path, symbol, why in chosen]
    moved = {_unit(h) for h in placed}
    return ranked[:after] + placed + [h for h in ranked[after:] if _unit(h) not in moved]


def with_named_definitions(ranked: list[Hit],
                           definitions_of: Callable[[str], list[StoredSymbol]],
                           named: AbstractSet[str], kinds: AbstractSet[str] = frozenset()
                           ) -> list[Hit]:
    """Function answers with the definitions the question names in their first files
    placed right after the first NAMED_AFTER answers (found there or not): an issue that
    names `URLValidator` or `deconstruct` often asks about that definition of the file
    it is about, but less surely than the answers that lead."""
    if not ranked:
        return ranked
    seen = {_unit(h) for h in ranked[:NAMED_AFTER]}
    chosen = []
    for path in list(dict.fromkeys(h.path for h in ranked))[:NAMED_FILES]:
        for symbol in definitions_of(path):
            name = symbol.qualname.rsplit(".", 1)[-1]
            key = (path, symbol.qualname, symbol.start_line)
            if (name not in named or name.startswith("__") or key in seen
                    or symbol.kind not in UNIT_KINDS or (kinds and symbol.kind not in kinds)):
                continue
            seen.add(key)
            chosen.append((path, symbol, {"named": True}))
    return _placed_after(ranked, NAMED_AFTER, chosen)


def names_used(definitions: list[StoredSymbol], text: str, names: AbstractSet[str]
               ) -> dict[tuple[str, int], int]:
    """How many of `names` each function of a file uses (its lines name them), by
    (qualname, start line); functions that use none are left out. The text is read once
    (each function's lines on their own cost a file of nested functions quadratic time)."""
    if not names:
        return {}
    found = re.compile("(?<![A-Za-z0-9_])(?:" + "|".join(map(re.escape, sorted(names)))
                       + ")(?![A-Za-z0-9_])")
    lines_of: dict[str, list[int]] = {}  # name -> the lines it is on, ascending
    line, read = 1, 0
    for match in found.finditer(text):
        line += text.count("\n", read, match.start())  # lines as symbols count them
        read = match.start()
        on = lines_of.setdefault(match.group(), [])
        if not on or on[-1] != line:
            on.append(line)
    used = {}
    for symbol in definitions:
        if symbol.kind in FUNCTION_KINDS:
            count = sum(1 for on in lines_of.values()
                        if bisect_right(on, symbol.end_line) > bisect_left(on, symbol.start_line))
            if count:
                used[(symbol.qualname, symbol.start_line)] = count
    return used


def with_definitions_using(ranked: list[Hit],
                           definitions_of: Callable[[str], list[StoredSymbol]],
                           uses_of: Callable[[str], Mapping[tuple[str, int], int]],
                           kinds: AbstractSet[str] = frozenset()) -> list[Hit]:
    """Function answers with the functions of their first files that use the most of the
    names a pasted text mentions (`uses_of`, per path: names_used) placed right after the
    first USING_AFTER answers (see USING_FILES), before those placed for being named,
    which are not placed again."""
    if len(ranked) <= USING_AFTER:
        return ranked
    fixed = {_unit(h) for h in ranked[:USING_AFTER]} | {_unit(h) for h in ranked if h.named}
    candidates = []
    for order, path in enumerate(list(dict.fromkeys(h.path for h in ranked))[:USING_FILES]):
        used = uses_of(path)  # functions only (names_used)
        for symbol in definitions_of(path):
            uses = used.get((symbol.qualname, symbol.start_line), 0)
            if (uses >= USING_AT_LEAST and not (kinds and symbol.kind not in kinds)
                    and (path, symbol.qualname, symbol.start_line) not in fixed):
                candidates.append((-uses, order, symbol.start_line, path, symbol))
    return _placed_after(ranked, USING_AFTER, [
        (path, symbol, {"uses_mentioned": -uses})
        for uses, _, _, path, symbol in sorted(candidates)[:USING_MOST]])


def to_granularity(hits: list[Hit], granularity: str,
                   definitions_of: Callable[[str], list[StoredSymbol]], support: bool = True,
                   named: AbstractSet[str] = frozenset(), kinds: AbstractSet[str] = frozenset(),
                   uses_of: Callable[[str], Mapping[tuple[str, int], int]] | None = None
                   ) -> list[Hit]:
    """`support`: a file's (or definition's) other hits add to its best one; off when a
    learned ranking has already weighed them. For function answers: `named`, `kinds`, the
    names the question spells out and the definition kinds it allows; `uses_of`, where
    functions are placed by the names a pasted text mentions, how many each function of a
    file uses (names_used)."""
    if granularity == FILE:
        return best_per_file(with_file_support(hits) if support else hits)
    if granularity == FUNCTION:
        ranked = by_function(hits, definitions_of, DEFINITION_SUPPORT if support else 0.0,
                             named, kinds)
        return (with_definitions_using(ranked, definitions_of, uses_of, kinds)
                if uses_of is not None else ranked)
    return hits
