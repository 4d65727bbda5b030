"""One HTTP server: the MCP endpoint at /mcp and the web page at /, behind one token gate.

A request is let in by the server's own token (FOURFOLD_TOKEN or --token: everything), or
by an access token of the index (`fourfold token create`: the repositories it grants). An
agent sends it as `Authorization: Bearer`; a browser signs in once at /login and is given
a session: a random id in a cookie (HttpOnly, SameSite=Strict), named by the server's port,
that this process maps to the token until it stops or SESSION_S pass. A browser sends a
host's cookies to each of its ports, so the token itself never goes in one: another server
on the host would read it. The cookie opens the page, never /mcp, so another site cannot
make a browser call the tools. On loopback, with neither kind set up,
requests need no token (the local default); binding any other address needs one. On
loopback the Host header must name the loopback too, against DNS rebinding (the SDK checks
/mcp's Host and Origin itself).

A client that goes away mid-request (killed, or its connection dropped) is nobody's error:
the request is dropped without the ASGI traceback uvicorn would otherwise log.
"""
import hmac
import json
import logging
import os
import re
import secrets
import signal
import sys
import threading
import time
from urllib.parse import quote, urlencode

import anyio.to_thread
from starlette.requests import ClientDisconnect, HTTPConnection

from ..api import Grant
from ..errors import FourfoldError
from .caller import GRANT_KEY

SESSION_COOKIE = "fourfold_session_"  # and the server's port: one per server of a host
SESSION_S = 12 * 3600  # a sign-in lasts this long (or until the server stops)
MOST_SESSIONS = 10_000  # the oldest are forgotten past this many
NOTHING = Grant("anonymous", "read", frozenset())  # a request let in to see nothing

log = logging.getLogger("fourfold.mcp")

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
TOKEN_ENV = "FOURFOLD_TOKEN"
BEARER = b"bearer "
MCP_PATH = "/mcp"
OPEN_PATHS = ("/login", "/static/")  # the sign-in form and its style need no token


class TokenGate:
    """ASGI wrapper: lets a request in by the server token or an index access token (its
    grant then travels in the request's state for the tools and pages), else answers 401
    (/mcp) or sends the browser to the sign-in form."""

    def __init__(self, app, server_token: str | None, ff, open_without_token: bool,
                 loopback: bool):
        self.app = app
        self.server_token = server_token.encode() if server_token else None
        self.ff = ff
        self.open_without_token = open_without_token
        self.loopback = loopback
        self._sessions: dict[str, tuple[bytes, float]] = {}  # id -> (token, expiry), in order
        self._sessions_lock = threading.Lock()

    def sign_in(self, secret: str) -> str | None:
        """A new session's id for a token that would be let in (the sign-in form asks);
        None for one that would not."""
        token = secret.encode("utf-8", "surrogateescape")
        if self._grant(token) is False:
            return None
        session = secrets.token_urlsafe(32)
        now = time.monotonic()
        with self._sessions_lock:
            for old, (_, expiry) in list(self._sessions.items()):
                if expiry > now and len(self._sessions) < MOST_SESSIONS:
                    break  # the rest are younger
                del self._sessions[old]
            self._sessions[session] = (token, now + SESSION_S)
        return session

    def _session_token(self, session: str) -> bytes:
        """The token a live session signed in with; b"" for none."""
        with self._sessions_lock:
            token, expiry = self._sessions.get(session, (b"", 0.0))
        return token if expiry > time.monotonic() else b""

    def _grant(self, secret: bytes):
        """None: the server's own token (everything); a Grant; False: refused."""
        if self.server_token and hmac.compare_digest(secret, self.server_token):
            return None
        # looked up on every request: a revoked token is refused from the next one on
        grant = self.ff.grant(secret.decode("latin-1"))
        return grant if grant is not None else False

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        headers = dict(scope.get("headers") or [])
        page = not (path == MCP_PATH or path.startswith(MCP_PATH + "/"))
        if page and self.loopback and not _names_loopback(headers):
            return await _plain(send, 403, "this server answers only to a loopback host name")
        given = headers.get(b"authorization", b"")
        secret = given[len(BEARER):].strip() if given[:len(BEARER)].lower() == BEARER else b""
        if not secret and page:
            secret = self._session_token(HTTPConnection(scope).cookies.get(
                session_cookie(scope), ""))
        try:
            grant = await anyio.to_thread.run_sync(self._grant, secret) if secret else None
            unadmitted = (grant is False or not secret) and not (
                self.open_without_token
                and not await anyio.to_thread.run_sync(self.ff.tokens_in_use))
        except FourfoldError as exc:  # the tokens are in the index: it cannot be read now
            # the cause names the store's server: logged, not told to who has shown no token
            log.warning("cannot check a token: %s", exc)
            return await _plain(send, 503, "the index cannot be reached now; try again",
                                [(b"retry-after", b"5")])
        if grant is False and not page:
            return await refuse(send, "unknown or revoked token")
        if unadmitted:
            if not page:
                return await refuse(send, "this fourfold server needs "
                                          "'Authorization: Bearer <token>'")
            if not path.startswith(OPEN_PATHS):
                return await _sign_in(send, scope)
            grant = NOTHING  # the sign-in form and static files show nothing of the index
        elif grant is False:
            grant = None  # an open loopback server: a stale cookie changes nothing
        scope.setdefault("state", {})[GRANT_KEY] = grant
        try:
            await self.app(scope, receive, send)
        except* ClientDisconnect:  # raised alone, or out of the SDK's task groups
            log.debug("client disconnected during %s %s", scope["method"], path)


def session_cookie(scope) -> str:
    """The name of this server's session cookie: by its port, so that two servers of one
    host do not overwrite each other's sign-in."""
    server = scope.get("server") or ("", 0)
    return f"{SESSION_COOKIE}{server[1] or 0}"


LOOPBACK_HOST_HEADER = re.compile(r"(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?")


def _names_loopback(headers: dict[bytes, bytes]) -> bool:
    """Whether the Host header is a loopback name, with at most a numeric port."""
    host = headers.get(b"host", b"").decode("latin-1").lower()
    return LOOPBACK_HOST_HEADER.fullmatch(host) is not None


async def _respond(send, status: int, body: bytes, content_type: bytes,
                   headers: list | None = None) -> None:
    """A whole response, sent by the gate itself (the app never sees the request)."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type),
                            (b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


async def _plain(send, status: int, text: str, headers: list | None = None) -> None:
    await _respond(send, status, text.encode(), b"text/plain; charset=utf-8", headers)


async def _sign_in(send, scope) -> None:
    # the path as the browser sent it (still percent-encoded), so that it comes back whole
    path = scope.get("raw_path", b"").decode("latin-1") or quote(scope["path"])
    target = path + ("?" + scope["query_string"].decode("latin-1")
                     if scope.get("query_string") else "")
    await _plain(send, 303, "sign in first",
                 [(b"location", b"/login?" + urlencode({"next": target}).encode())])


async def refuse(send, why: str) -> None:
    await _respond(send, 401, json.dumps({"error": f"unauthorized: {why}"}).encode(),
                   b"application/json", [(b"www-authenticate", b'Bearer realm="fourfold"')])


def resolve_token(host: str, token: str | None, ff=None) -> str | None:
    """The server's own bearer token, if any; refuses a non-loopback bind with neither it
    nor an active access token in the index."""
    token = token or os.environ.get(TOKEN_ENV) or None
    if token is not None and not token.strip():  # the gate strips what a client sends:
        raise FourfoldError("the token is blank: no client could send it")  # none would pass
    if host not in LOOPBACK_HOSTS and not token and not (ff is not None and ff.tokens_in_use()):
        raise FourfoldError(f"refusing to listen on {host} without a token: set {TOKEN_ENV}, "
                            "pass --token, or create access tokens with `fourfold token "
                            "create` (or bind to 127.0.0.1)")
    return token


def http_app(server, service, host: str, token: str | None):
    """The ASGI app serving an MCPServer and the web page behind the token gate. A server
    over a shared store keeps no session between requests, so that any number of them can
    answer behind one load balancer."""
    from .web.app import WebPage

    app = server.streamable_http_app(host=host, stateless_http=service.serves_many)
    gate = TokenGate(app, token, service.ff,
                     open_without_token=host in LOOPBACK_HOSTS and not token,
                     loopback=host in LOOPBACK_HOSTS)
    app.router.routes.extend(WebPage(service, gate.sign_in).routes())
    return gate


def free_port(host: str) -> int:
    """A port nobody listens on now (the OS picks it)."""
    return listenable(host, 0)


def listenable(host: str, port: int) -> int:
    """The port (0: a free one the OS picks) if `host` can listen on it now; FourfoldError
    where it cannot (taken, an unknown host, an address not this machine's), before
    anything says a server is there."""
    import socket

    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
            probe.bind((host, port))
            return probe.getsockname()[1]
    except OSError as exc:
        raise FourfoldError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def run_http(server, service, host: str, port: int, token: str | None) -> None:
    """Serve until a signal stops it, then raise KeyboardInterrupt where that was Ctrl-C
    (uvicorn takes the signal and returns; the exit code should say so); the index starts
    catching up once the app is built."""
    import uvicorn

    listenable(host, port)
    app = http_app(server, service, host, token)
    service.start()
    shown = f"[{host}]" if ":" in host else host
    print(f"fourfold web page on http://{shown}:{port}/ and MCP server on "
          f"http://{shown}:{port}/mcp" + (" (token required)" if token else ""),
          file=sys.stderr, flush=True)
    web = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    signals: list[int] = []
    stop = web.handle_exit

    def handle_exit(sig: int, frame) -> None:
        signals.append(sig)
        stop(sig, frame)

    web.handle_exit = handle_exit
    web.run()
    if not web.started:
        raise FourfoldError(f"the server did not start on {shown}:{port}")
    if signal.SIGINT in signals:
        raise KeyboardInterrupt
