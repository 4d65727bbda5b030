"""Paging: every tool answers one page of a full result list, bounded by `limit` rows and
about `max_tokens` tokens, and an opaque cursor that fetches the next page.

A cursor carries its offset and a hash of the query it belongs to, so a cursor passed back
with other arguments is refused instead of paging a different answer.
"""
import base64
import hashlib
import json
from typing import Any, Callable

from ...api import Fourfold
from ...errors import QueryError

DEFAULT_MAX_TOKENS = 4000
MIN_MAX_TOKENS = 100
MAX_MAX_TOKENS = 50_000
MAX_PAGE = 500            # rows in one page
LINE_CHARS = 400          # a matched or shown line is cut to this many characters

approx_tokens = Fourfold.estimate_tokens


def cut(text: str, n: int = LINE_CHARS) -> str:
    """`text`, cut to `n` characters (an ellipsis marks the cut)."""
    return text if len(text) <= n else text[:n] + "…"


def query_key(tool: str, args: dict) -> str:
    """A short hash naming one tool call's arguments (paging arguments left out)."""
    blob = json.dumps([tool, args], sort_keys=True, default=str)
    return hashlib.blake2b(blob.encode(), digest_size=8).hexdigest()


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


def page(rows: list, offset: int, limit: int, max_tokens: int, key: str,
         render: Callable[[Any], Any] | None = None) -> dict:
    """One page of rows: at most `limit` rows and about `max_tokens` tokens (at least one row)."""
    out: list = []
    used = 0
    for row in rows[offset:offset + limit]:
        item = render(row) if render else row
        cost = approx_tokens(item)
        if out and used + cost > max_tokens:
            break
        out.append(item)
        used += cost
    nxt = offset + len(out)
    return {"total": len(rows), "offset": offset, "returned": len(out), "results": out,
            "cursor": encode_cursor(nxt, key) if nxt < len(rows) else None,
            "approx_tokens": used}
