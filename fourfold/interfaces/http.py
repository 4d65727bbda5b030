"""Streamable HTTP: the MCP endpoint at http://HOST:PORT/mcp, behind bearer tokens.

A request is let in by the server's own token (FOURFOLD_TOKEN or --token: everything), or
by an access token of the index (`fourfold token create`: the repositories it grants). On
loopback, with neither kind set up, requests need no token (the local default); binding any
other address needs one. On loopback the SDK also checks Host and Origin headers against DNS
rebinding.

A client that goes away mid-request (killed, or its connection dropped) is nobody's error:
the request is dropped without the ASGI traceback uvicorn would otherwise log.
"""
import hmac
import json
import logging
import os
import sys

import anyio.to_thread
from starlette.requests import ClientDisconnect

from ..errors import FourfoldError
from .caller import GRANT_KEY

log = logging.getLogger("fourfold.mcp")

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
TOKEN_ENV = "FOURFOLD_TOKEN"
BEARER = b"bearer "


class TokenGate:
    """ASGI wrapper: lets a request in by the server token or an index access token (its
    grant then travels in the request's state for the tools), else answers 401."""

    def __init__(self, app, server_token: str | None, ff, open_without_token: bool):
        self.app = app
        self.server_token = server_token.encode() if server_token else None
        self.ff = ff
        self.open_without_token = open_without_token

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        secret = given[len(BEARER):].strip() if given[:len(BEARER)].lower() == BEARER else b""
        grant = None
        if self.server_token and secret and hmac.compare_digest(secret, self.server_token):
            pass  # the server's own token: everything
        elif secret:
            # looked up on every request: a revoked token is refused from the next one on
            grant = await anyio.to_thread.run_sync(self.ff.grant, secret.decode("latin-1"))
            if grant is None:
                return await refuse(send, "unknown or revoked token")
        elif not (self.open_without_token and not await anyio.to_thread.run_sync(
                self.ff.tokens_in_use)):
            return await refuse(send, "this fourfold server needs "
                                      "'Authorization: Bearer <token>'")
        scope.setdefault("state", {})[GRANT_KEY] = grant
        try:
            await self.app(scope, receive, send)
        except* ClientDisconnect:  # raised alone, or out of the SDK's task groups
            log.debug("client disconnected during %s %s", scope["method"], scope["path"])


async def refuse(send, why: str) -> None:
    body = json.dumps({"error": f"unauthorized: {why}"}).encode()
    await send({"type": "http.response.start", "status": 401,
                "headers": [(b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="fourfold"'),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def resolve_token(host: str, token: str | None, ff=None) -> str | None:
    """The server's own bearer token, if any; refuses a non-loopback bind with neither it
    nor an active access token in the index."""
    token = token or os.environ.get(TOKEN_ENV) or None
    if host not in LOOPBACK_HOSTS and not token and not (ff is not None and ff.tokens_in_use()):
        raise FourfoldError(f"refusing to listen on {host} without a token: set {TOKEN_ENV}, "
                            "pass --token, or create access tokens with `fourfold token "
                            "create` (or bind to 127.0.0.1)")
    return token


def http_app(server, service, host: str, token: str | None):
    """The ASGI app serving an MCPServer behind the token gate. A server over a shared
    store keeps no session between requests, so that any number of them can answer behind
    one load balancer."""
    app = server.streamable_http_app(host=host, stateless_http=service.serves_many)
    return TokenGate(app, token, service.ff,
                     open_without_token=host in LOOPBACK_HOSTS and not token)


def run_http(server, service, host: str, port: int, token: str | None) -> None:
    """Serve until interrupted; the index starts catching up once the app is built."""
    import uvicorn

    app = http_app(server, service, host, token)
    service.start()
    shown = f"[{host}]" if ":" in host else host
    print(f"fourfold MCP server on http://{shown}:{port}/mcp"
          + (" (bearer token required)" if token else ""), file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
