"""Paging: every tool answers one page of a full result list, bounded by `limit` rows and
`max_tokens` tokens, and an opaque cursor that fetches the next page.

Budgets count the reply as sent: one compact JSON text (`to_json`), estimated by
`approx_tokens` (characters // 4 + 1). A page's estimate, frame and cursor included, never
exceeds `max_tokens`: rows that do not fit wait for the next page, and a first row that alone
exceeds the budget is cut (its longest texts shortened, lists shortened) and marked
`"truncated": true`. The reported `approx_tokens` is the estimate of the whole reply text.

A cursor carries its offset and a hash of the query it belongs to and of the index's
generation, so a cursor passed back with other arguments, or after the index changed (its
rows would repeat or skip some), is refused instead of paging a different answer.

A reply's own fields (`frame`) take at most half the budget: past that, the tool's
diagnostics go first (`spare`), then the frame's longest texts and lists are cut.
"""
import base64
import copy
import hashlib
import json
from typing import Any, Callable

from ...api import Fourfold
from ...errors import QueryError

DEFAULT_MAX_TOKENS = 4000
MIN_MAX_TOKENS = 200  # less holds no page: a reply's counts and cursor, one row cut short
MAX_MAX_TOKENS = 50_000
MAX_PAGE = 500            # rows in one page
LINE_CHARS = 400          # a matched or shown line is cut to this many characters

approx_tokens = Fourfold.estimate_tokens


def to_json(value: Any) -> str:
    """The reply text: compact JSON, UTF-8 (the text `approx_tokens` counts; the same as
    fourfold.context.to_json)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def cut(text: str, n: int = LINE_CHARS) -> str:
    """`text`, cut to `n` characters (an ellipsis marks the cut)."""
    return text if len(text) <= n else text[:n] + "…"


def query_key(tool: str, args: dict, generation: Any = None) -> str:
    """A short name of one tool call's arguments (paging arguments left out) and of the
    index generation it answers from: '<arguments hash>.<generation hash>'."""
    def digest(value: Any, size: int) -> str:
        blob = json.dumps(value, sort_keys=True, default=str)
        return hashlib.blake2b(blob.encode(), digest_size=size).hexdigest()

    return f"{digest([tool, args], 8)}.{digest(generation, 4)}"


def encode_cursor(offset: int, key: str) -> str:
    """The cursor of the page starting at `offset` of the query `key`."""
    raw = json.dumps({"o": offset, "k": key}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, key: str) -> int:
    """The offset a cursor points at; refuses a cursor minted for other arguments."""
    if cursor is None or cursor == "":
        return 0
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()).decode())
        offset, owner = int(data["o"]), str(data["k"])
    except Exception:
        raise QueryError("invalid cursor: pass back the cursor string exactly as returned, "
                         "or omit it to start from the first page") from None
    if owner != key:
        if owner.split(".")[0] == key.split(".")[0]:
            raise QueryError("the index changed since this cursor was made (files were "
                             "indexed again), so its pages would repeat or skip results: "
                             "repeat the call without the cursor to start again")
        raise QueryError("this cursor belongs to a different query: repeat the same arguments "
                         "with the cursor, or omit the cursor to start again")
    if offset < 0:
        raise QueryError("invalid cursor offset")
    return offset


def clamp_budget(limit: int | None, max_tokens: int | None, default_limit: int,
                 max_limit: int = MAX_PAGE) -> tuple[int, int]:
    """(rows, tokens) of one page: defaults filled in, too small refused, too large capped."""
    if limit is None:
        limit = default_limit
    if limit < 1:
        raise QueryError("limit must be at least 1")
    tokens = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
    if tokens < MIN_MAX_TOKENS:
        raise QueryError(f"max_tokens must be at least {MIN_MAX_TOKENS}")
    return min(limit, max_limit), min(tokens, MAX_MAX_TOKENS)


def settle(reply: dict, field: str = "approx_tokens") -> dict:
    """`reply` with `field` set to the estimate of the whole reply, that field included."""
    n = 0
    while True:  # the estimate grows with its own digits: climb to the fixed point
        reply[field] = n
        m = approx_tokens(reply)
        if m <= n:
            return reply
        n = m


def shrink(item: Any, room: int) -> Any:
    """A copy of one row cut to an estimate of at most `room` tokens where it can be: its
    longest strings shortened (an ellipsis marks each cut), its longest lists shortened;
    a dict is marked `"truncated": true`."""
    if not isinstance(item, dict):
        return item
    item = copy.deepcopy(item)
    item["truncated"] = True
    limit = 4 * max(room, 1) - 1          # the most characters an estimate of `room` allows
    for _ in range(500):
        excess = len(to_json(item)) - limit
        if excess <= 0:
            break
        best = _longest(item)
        if best is None:
            break
        holder, key, value, _ = best
        if isinstance(value, list):
            while len(value) > 1 and excess > 0:
                excess -= len(to_json(value.pop())) + 1
        else:
            holder[key] = value[:max(8, len(value) - excess - 1)] + "…"
    return item


def _longest(node: Any, best: tuple | None = None) -> tuple | None:
    """(container, key, value) of the longest string (over 9 characters) or list (over one
    item) inside node, by JSON length."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        if isinstance(value, (dict, list)):
            best = _longest(value, best)
        if (isinstance(value, str) and len(value) > 9) or (isinstance(value, list)
                                                            and len(value) > 1):
            size = len(to_json(value))
            if best is None or size > best[3]:
                best = (node, key, value, size)
    return best


def fill(rows: list, offset: int, limit: int, room: int,
         render: Callable[[Any], Any] | None = None) -> tuple[list, int]:
    """(items, their summed estimate): rows from `offset`, rendered, at most `limit` of them
    and `room` tokens; the first one is always there, cut by `shrink` if it alone is over."""
    out: list = []
    used = 0
    for row in rows[offset:offset + limit]:
        item = render(row) if render else row
        cost = approx_tokens(item)
        if used + cost > room:
            if out:
                break
            item = shrink(item, room)
            cost = approx_tokens(item)
        out.append(item)
        used += cost
    return out, used


def fit_frame(frame: dict, room: int, spare: tuple[str, ...] = ()) -> dict:
    """`frame` within an estimate of `room` tokens where it can be: the `spare` fields
    left out in turn, then its longest texts and lists cut (see shrink)."""
    for name in spare:
        if approx_tokens(frame) <= room:
            return frame
        frame = {k: v for k, v in frame.items() if k != name}
    return frame if approx_tokens(frame) <= room else shrink(frame, room)


def page(rows: list, offset: int, limit: int, max_tokens: int, key: str,
         render: Callable[[Any], Any] | None = None, frame: dict | None = None,
         spare: tuple[str, ...] = ()) -> dict:
    """One page of rows, at most `limit` rows and `max_tokens` tokens counted on the whole
    reply: `frame` (the reply's other fields; past half the budget, fit_frame with
    `spare`), then total, offset, returned, results, cursor and approx_tokens (the
    estimate of it all). At least one row, cut if need be."""
    frame = frame or {}

    def reply(out: list, cursor: str | None, used: int) -> dict:
        return {**frame, "total": len(rows), "offset": offset, "returned": len(out),
                "results": out, "cursor": cursor, "approx_tokens": used}

    # the frame with its widest cursor and counts: every row's estimate adds to it
    reserve = approx_tokens(reply([], encode_cursor(len(rows), key), max_tokens)) + 1
    if reserve > max_tokens // 2:
        frame = fit_frame(frame, max(1, approx_tokens(frame) - (reserve - max_tokens // 2)),
                          spare)
        reserve = approx_tokens(reply([], encode_cursor(len(rows), key), max_tokens)) + 1
    out, _ = fill(rows, offset, limit, max_tokens - reserve, render)
    nxt = offset + len(out)
    return settle(reply(out, encode_cursor(nxt, key) if nxt < len(rows) else None, 0))
