"""Streamable HTTP: the MCP endpoint at http://HOST:PORT/mcp, behind a bearer token.

Binding any address but loopback needs a token (FOURFOLD_TOKEN or --token); on loopback the
SDK checks Host and Origin headers against DNS rebinding.
"""
import hmac
import json
import os
import sys

from ...errors import FourfoldError

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
TOKEN_ENV = "FOURFOLD_TOKEN"


class BearerTokenMiddleware:
    """ASGI wrapper: every HTTP request must carry `Authorization: Bearer <token>`."""

    def __init__(self, app, token: str):
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = json.dumps({"error": "unauthorized: this fourfold server needs "
                                            "'Authorization: Bearer <token>'"}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b'Bearer realm="fourfold"'),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def resolve_token(host: str, token: str | None) -> str | None:
    """The bearer token to enforce; refuses a non-loopback bind without one."""
    token = token or os.environ.get(TOKEN_ENV) or None
    if host not in LOOPBACK_HOSTS and not token:
        raise FourfoldError(f"refusing to listen on {host} without a bearer token: set "
                            f"{TOKEN_ENV} or pass --token (or bind to 127.0.0.1)")
    return token


def http_app(server, host: str, token: str | None):
    """The ASGI app serving an MCPServer (with the token check when a token is set)."""
    app = server.streamable_http_app(host=host)
    return BearerTokenMiddleware(app, token) if token else app


def run_http(server, service, host: str, port: int, token: str | None) -> None:
    """Serve until interrupted; the index starts catching up once the app is built."""
    import uvicorn

    app = http_app(server, host, token)
    service.start()
    shown = f"[{host}]" if ":" in host else host
    print(f"fourfold MCP server on http://{shown}:{port}/mcp"
          + (" (bearer token required)" if token else ""), file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
