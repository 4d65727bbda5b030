"""Who is calling: the grant of the token an HTTP request presented, for the tools to
consult while they answer that request (None: a local caller, who may see everything)."""
from contextvars import ContextVar

GRANT_KEY = "fourfold_grant"  # where the HTTP layer leaves the grant in the request's state
current_grant: ContextVar = ContextVar("fourfold_grant", default=None)


def grant_of_request(context) -> object | None:
    """The grant the HTTP layer attached to the request a tool call came in (None for
    stdio and for callers without a token on an open loopback server)."""
    try:
        request = context.request_context.request
    except (AttributeError, ValueError):  # no request context: stdio, or a direct call
        return None
    if request is None:
        return None
    return (request.scope.get("state") or {}).get(GRANT_KEY)
