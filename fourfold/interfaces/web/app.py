"""The web page: search, read a file, follow callers and callees, see the map and the status.

Every page is rendered on the server (Jinja2 templates, autoescaped; code highlighted by
Pygments), so it works without JavaScript: `GET /?q=QUERY&repository=R&language=L&glob=G`
is a result page. static/app.js only improves it (results while typing, keys to move
through them). The routes sit beside the MCP endpoint in one ASGI app (interfaces/http.py)
and answer through the same Service as the MCP tools, so a token's repository grants
apply here too; nothing here reads a file from disk, only the index.
"""
import functools
import time
from pathlib import Path
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import anyio.to_thread
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ... import __version__
from ...api import SearchOptions
from ...errors import FourfoldError, IndexBusyError, NotIndexedError, StoreUnavailable
from ..caller import GRANT_KEY, current_grant
from ..http import session_cookie
from ..service import Service
from .highlight import highlighted_lines, marked, question_words, style_sheet
from .picture import Node, neighbourhood_svg

HERE = Path(__file__).parent
RESULTS = 20            # hits on a result page
SNIPPET_LINES = 6       # code lines shown under a hit
SNIPPET_CHARS = 400     # of each such line (a minified file's line is megabytes)
IN_FILE_DEPTH = 500     # answers asked for "more from this file", before other paths go
FILE_PAGE_LINES = 5000  # lines of a file shown on one page
EVERY_REPOSITORY = "*"  # the search form's choice of every repository the caller sees
RETRY_AFTER_S = "5"     # when an index still being built or out of reach may answer
RELATED_CAP = 200       # callers or callees listed for a symbol
MAP_ENTRIES = 25        # central files and symbols on the map page
MODALITY_ORDER = ("text", "structural", "graph", "semantic")
# what a page may load: its own scripts and styles only (inline style attributes draw the
# vote bars); an injected script would not run even if escaping failed somewhere
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self' "
                               "'unsafe-inline'; img-src 'self' data:; base-uri 'none'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff", "referrer-policy": "same-origin"}


def _glob_of_path(path: str) -> str:
    """A glob matching exactly this path (its wildcard characters taken literally)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in path)


def _line_number(text: str) -> int | None:
    """A line number from a URL; anything else (a Unicode digit, 5,000 digits) is none."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 9 else None


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "never"
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count > 1 else ''} ago"
    return "just now"


def _size(count: int | None) -> str:
    if count is None:
        return "?"
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"


def _same_origin(request: Request) -> bool:
    """Whether a form was posted from this server's own page: a browser names the page's
    origin on every POST (a client without one, such as curl, is no browser to trick)."""
    origin = request.headers.get("origin")
    if origin is None:
        return request.headers.get("sec-fetch-site") in (None, "same-origin", "none")
    return urlsplit(origin).netloc == request.headers.get("host")


def _as_caller(grant, work):
    """work() as the caller a request's token names (None: the server's own caller)."""
    token = current_grant.set(grant)
    try:
        return work()
    finally:
        current_grant.reset(token)


class _AnyPath(PathConvertor):
    """A path of any characters: a file's name may hold a newline, where Starlette's own
    path convertor stops."""

    regex = r"[\s\S]*"


register_url_convertor("any_path", _AnyPath())


class WebPage:
    """The page's routes over a Service; `sign_in(secret)` gives a session's id for a
    good token (None for another)."""

    def __init__(self, service: Service, sign_in):
        self.service = service
        self.ff = service.ff
        self.sign_in = sign_in
        self.env = Environment(loader=FileSystemLoader(HERE / "templates"),
                               autoescape=select_autoescape(default=True),
                               trim_blocks=True, lstrip_blocks=True)
        self.env.filters["age"] = lambda when: _age(time.time() - when if when else None)
        self.env.filters["size"] = _size
        self.env.filters["stamp"] = lambda when: time.strftime(
            "%Y-%m-%d %H:%M:%S UTC", time.gmtime(when))
        self.env.globals.update(version=__version__, file_url=self.file_url,
                                modality_order=MODALITY_ORDER)
        self.highlight_css = style_sheet()

    def routes(self) -> list:
        return [Route("/", self.search_page), Route("/file/{path:any_path}", self.file_page),
                Route("/map", self.map_page), Route("/status", self.status_page),
                Route("/login", self.login_page, methods=["GET", "POST"]),
                Route("/static/highlight.css", self.highlight_style),
                Mount("/static", StaticFiles(directory=HERE / "static"), name="static")]

    # -- plumbing ---------------------------------------------------------------------------
    @staticmethod
    def file_url(path: str, repository: str | None = None, line: int | None = None,
                 symbol: str | None = None) -> str:
        query = {k: v for k, v in (("repository", repository), ("symbol", symbol),
                                   ("line", line)) if v}
        return (f"/file/{quote(path)}" + (f"?{urlencode(query)}" if query else "")
                + (f"#L{line}" if line else ""))

    async def _render(self, request: Request, build, *args,
                      error_template: str = "error.html") -> Response:
        """Run build(*args) -> (template, context) in a worker thread as the request's
        caller (its token's grant), then render; a FourfoldError becomes `error_template`
        (a page, or for the page's script a fragment)."""
        grant = (request.scope.get("state") or {}).get(GRANT_KEY)

        def answer():
            self.service.await_fresh()
            return build(*args)

        try:
            template, context = await anyio.to_thread.run_sync(
                functools.partial(_as_caller, grant, answer))
            status = 200
        except (NotIndexedError, IndexBusyError, StoreUnavailable) as exc:  # later, it may
            # a store's message names its server: for those who see every repository
            told = str(exc) if _as_caller(grant, self.service.sees_everything) else \
                "the index cannot answer now; try again in a few seconds"
            template, context, status = error_template, {"message": told}, 503
        except FourfoldError as exc:
            template, context, status = error_template, {"message": str(exc)}, 400
        self.service.answered()
        context.setdefault("repositories", await anyio.to_thread.run_sync(
            functools.partial(_as_caller, grant, self.service.visible_repositories)))
        html = self.env.get_template(template).render(request_path=request.url.path,
                                                      **context)
        status = context.pop("status", status)
        return HTMLResponse(html, status_code=status, headers={
            **SECURITY_HEADERS, **({"retry-after": RETRY_AFTER_S} if status == 503 else {})})

    def _repository(self, name: str | None) -> tuple[int | None, str | None]:
        """(id, name) of the repository a page shows; its name only when the index holds
        several (links then carry it)."""
        repo_id = self.service.answering_repository(name or None)
        several = len(self.ff.repository_names()) > 1
        return repo_id, (self.ff.repository_name_of(repo_id) if several and repo_id else None)

    # -- search -----------------------------------------------------------------------------
    async def search_page(self, request: Request) -> Response:
        params = request.query_params
        if params.get("partial"):  # the page's script asks for the result list alone
            return await self._render(request, self._search, dict(params), "results.html",
                                      error_template="error_fragment.html")
        return await self._render(request, self._search, dict(params), "search.html")

    def _search(self, params: dict, template: str) -> tuple[str, dict]:
        query = params.get("q", "").strip()
        asked = params.get("repository") or None
        language, glob = params.get("language") or None, params.get("glob") or None
        in_file = params.get("file") or None
        # in one file every span; else as asked: "function" lists each function the hits
        # lie in, several to a file (an unknown value is the engine's clear error)
        granularity = "span" if in_file else params.get("granularity") or None
        context = {"q": query, "repository": asked or "", "language": language or "",
                   "glob": glob or "", "file": in_file or "", "hits": None,
                   "granularity": granularity or ""}
        if template == "search.html":  # the form's choices; a result list has no form
            context["languages"] = self._languages()
        if not query:
            return template, context
        visible = self.service.visible_repositories()
        every = asked == EVERY_REPOSITORY or (asked is None and self.service.serves_many)
        several = every and len(visible) > 1
        if every and len(visible) == 1:
            asked = visible[0]
        repo_id, repo_name = (None, None) if several else self._repository(asked)
        # in one file: its glob also matches the file's namesakes in subfolders, so more
        # are asked for, and those of other paths dropped below
        options = SearchOptions(languages=(language,) if language else (),
                                path_glob=_glob_of_path(in_file) if in_file else glob,
                                repo_id=repo_id, limit=IN_FILE_DEPTH if in_file else RESULTS,
                                granularity=granularity)
        started = time.perf_counter()
        if several:
            response, notes = self.ff.search_repositories(query, visible, options), []
        else:
            response, notes = self.ff.search_with_fallback(query, options)
        files: dict = {}
        words = question_words(query)
        # the path's glob also matches it in subfolders (globs match at any depth)
        shown = [h for h in response.hits if not in_file or h.path == in_file][:RESULTS]
        context.update(
            response=response, notes=notes,
            elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
            hits=[self._hit(h, h.repository or repo_name, files, words) for h in shown])
        return template, context

    def _hit(self, hit, repository: str | None, files: dict, words: list[str]) -> dict:
        """What a result shows: where, which symbol, the code, and each modality's share."""
        key = (repository, hit.path)
        if key not in files:
            stored = self.ff.file_text(hit.path, self.ff.repository(repository)
                                       if repository else self.service.answering_repository(None))
            files[key] = stored or {"lines": [], "language": None}
        stored = files[key]
        if hit.lines:
            numbers = [n for n, _ in hit.lines][:SNIPPET_LINES]
        else:
            last = min(hit.end_line, hit.start_line + SNIPPET_LINES - 1, len(stored["lines"]))
            numbers = list(range(hit.start_line, last + 1))
        shown = [stored["lines"][n - 1][:SNIPPET_CHARS] for n in numbers
                 if 0 < n <= len(stored["lines"])]
        total = sum(hit.contributions.values()) or 1.0
        return {"path": hit.path, "repository": repository, "start_line": hit.start_line,
                "end_line": hit.end_line, "symbol": hit.symbol, "kind": hit.kind,
                "score": hit.score,
                "code": list(zip(numbers, (marked(line, words) for line in highlighted_lines(
                    shown, stored["language"], hit.path)))),
                "shares": {m: hit.contributions.get(m, 0.0) / total for m in MODALITY_ORDER}}

    def _languages(self) -> list[str]:
        """The languages of the repositories the caller may see, for the filter's choices."""
        visible = set(self.service.visible_repositories())
        return sorted({language for repo in self.ff.repositories() if repo["name"] in visible
                       for language in repo["languages"] or ()})

    # -- one file ---------------------------------------------------------------------------
    async def file_page(self, request: Request) -> Response:
        return await self._render(request, self._file, request.path_params["path"],
                                  dict(request.query_params))

    def _file(self, path: str, params: dict) -> tuple[str, dict]:
        asked = params.get("repository")
        if asked == EVERY_REPOSITORY:  # a file is in one repository: the one holding it
            holding = [name for name in self.service.visible_repositories()
                       if self.ff.holds_file(path, self.ff.repository(name))]
            if len(holding) > 1:
                return "error.html", {"message": f"{path} is in several repositories "
                                                 f"({', '.join(holding)}): name one",
                                      "status": 400}
            asked = holding[0] if holding else None
        repo_id, repository = self._repository(asked)
        stored = self.ff.file_text(path, repo_id)
        if stored is None:
            return "error.html", {"message": f"{path} is not in the index", "status": 404}
        outline = self.ff.file_outline(path, repo_id) or []
        symbol = params.get("symbol") or None
        line = _line_number(params.get("line", ""))
        if symbol is None and line is not None:
            covering = [s for s in outline if s["start_line"] <= line <= s["end_line"]]
            symbol = covering[-1]["qualname"] if covering else None
        callers = callees = None
        if symbol:
            mine = f"{path}:{symbol}"
            callers = [r for r in self.ff.related(symbol, "callers", repo_id,
                                                  limit=RELATED_CAP)["results"]
                       if r.get("definition") in (mine, None)]
            callees = [r for r in self.ff.related(symbol, "callees", repo_id,
                                                  limit=RELATED_CAP)["results"]
                       if r.get("definition") == mine]
        # a page of the file: the one holding the line asked for, or the one `from` starts
        total = len(stored["lines"])
        asked = _line_number(params.get("from", "")) or (
            (line - 1) // FILE_PAGE_LINES * FILE_PAGE_LINES + 1 if line else 1)
        first = min(max(1, asked), max(1, total))
        past = max(line or 0, asked)
        missing = (f"line {past:,} is past the end of {path} ({total:,} lines): its last "
                   "lines are shown" if past > total else None)
        last = min(total, first + FILE_PAGE_LINES - 1)
        lines = highlighted_lines(stored["lines"][first - 1:last], stored["language"], path)
        page = lambda start: f"/file/{quote(path)}?" + urlencode(  # noqa: E731
            {k: v for k, v in (("repository", repository), ("from", start)) if v})
        return "file.html", {"path": path, "repository": repository,
                             "language": stored["language"], "lines": lines, "first": first,
                             "total": total,
                             "earlier": page(max(1, first - FILE_PAGE_LINES)) if first > 1
                             else None,
                             "later": page(last + 1) if last < total else None,
                             "outline": outline, "symbol": symbol, "line": line,
                             "callers": callers, "callees": callees, "missing": missing}

    # -- the map ----------------------------------------------------------------------------
    async def map_page(self, request: Request) -> Response:
        return await self._render(request, self._map, dict(request.query_params))

    def _map(self, params: dict) -> tuple[str, dict]:
        visible = self.service.visible_repositories()
        if params.get("repository") == EVERY_REPOSITORY:  # a map is of one repository
            params = {**params, "repository": visible[0] if len(visible) == 1 else None}
        if not params.get("repository") and self.service.serves_many and len(visible) > 1:
            return "map.html", {"choose": visible, "repository": None, "picture": None,
                                "central": None}  # a map is of one repository: which?
        repo_id, repository = self._repository(params.get("repository"))
        central = self.ff.map(limit=MAP_ENTRIES, repo_id=repo_id)
        symbol = params.get("symbol") or None
        focus = params.get("focus") or None
        if not symbol and not focus and central["files"]:
            focus = central["files"][0]["path"]
        picture, missing = None, None
        if symbol and not self.ff.definitions(symbol, limit=1, repo_id=repo_id):
            missing = f"no definition of {symbol} in the index"
        elif symbol:
            picture = self._symbol_picture(symbol, repo_id, repository)
        elif focus and self.ff.line_count(focus, repo_id) is None:
            missing = f"{focus} is not in the index"
        elif focus:
            picture = self._file_picture(focus, repo_id, repository)
        return "map.html", {"repository": repository, "central": central, "focus": focus,
                            "symbol": symbol, "picture": picture, "missing": missing}

    def _map_url(self, repository: str | None, **focus) -> str:
        query = {k: v for k, v in (("repository", repository), *focus.items()) if v}
        return "/map?" + urlencode(query)

    def _file_picture(self, path: str, repo_id: int | None, repository: str | None):
        importers = self.ff.related(path, "importers", repo_id, limit=RELATED_CAP)
        imports = self.ff.related(path, "imports", repo_id, limit=RELATED_CAP)
        seen_left = dict.fromkeys(r["path"] for r in importers["results"] if r["path"] != path)
        seen_right = dict.fromkeys(r["path"] for r in imports["results"] if r["path"] != path)
        node = lambda p: Node(p, self._map_url(repository, focus=p), p)  # noqa: E731
        return neighbourhood_svg(Node(path, self.file_url(path, repository), path),
                                 [node(p) for p in seen_left], [node(p) for p in seen_right],
                                 ("imported by", "imports"))

    def _symbol_picture(self, symbol: str, repo_id: int | None, repository: str | None):
        callers = self.ff.related(symbol, "callers", repo_id, limit=RELATED_CAP)["results"]
        callees = self.ff.related(symbol, "callees", repo_id, limit=RELATED_CAP)["results"]

        def nodes(rows):
            out = {}
            for r in rows:
                name = r.get("symbol")
                if name and name not in out:
                    out[name] = Node(name, self._map_url(repository, symbol=name),
                                     f"{name} ({r.get('path')})", r.get("resolution", ""))
            return list(out.values())

        return neighbourhood_svg(Node(symbol, self._map_url(repository, symbol=symbol)),
                                 nodes(callers), nodes(callees), ("called by", "calls"))

    # -- status -----------------------------------------------------------------------------
    async def status_page(self, request: Request) -> Response:
        return await self._render(request, self._status)

    def _status(self) -> tuple[str, dict]:
        repositories = [{**repo, "modalities": self.ff.modality_status(repo["id"])}
                        for repo in self.ff.repositories() if self.service.sees(repo["name"])]
        return "status.html", {"shown": repositories, "index_bytes": self.service.index_bytes(),
                               "replica_behind_s": self.ff.replica_lag(),
                               # a store URL names its server and user: for those
                               # who see everything
                               "location": (self.ff.location if self.service.sees_everything()
                                            else None),
                               "freshness": self.service.freshness(),
                               "serves_many": self.service.serves_many}

    # -- tokens and static files ----------------------------------------------------------
    async def login_page(self, request: Request) -> Response:
        target = request.query_params.get("next", "/")
        if not target.startswith("/") or target.startswith("//"):
            target = "/"  # never a redirect off this server
        context = {"next": target, "failed": False, "repositories": []}
        if request.method == "POST":
            if not _same_origin(request):
                return HTMLResponse("sign in from this server's own page", status_code=403,
                                    headers=SECURITY_HEADERS)
            secret = await _signed_in_token(request)
            if secret is None:
                return HTMLResponse("the sign-in form holds one token, nothing more",
                                    status_code=400, headers=SECURITY_HEADERS)
            session = secret and await anyio.to_thread.run_sync(self.sign_in, secret)
            if session:
                response = RedirectResponse(target, status_code=303)
                response.set_cookie(session_cookie(request.scope), session, httponly=True,
                                    samesite="strict", secure=request.url.scheme == "https")
                return response
            context["failed"] = True
        html = self.env.get_template("login.html").render(request_path="/login", **context)
        return HTMLResponse(html, status_code=401 if context["failed"] else 200,
                            headers=SECURITY_HEADERS)

    async def highlight_style(self, request: Request) -> Response:
        return Response(self.highlight_css, media_type="text/css")


SIGN_IN_BYTES = 4096  # a token and the form's name for it: anyone may post here unsigned


async def _signed_in_token(request: Request) -> str | None:
    """The token a sign-in form posts; None for anything else (another type of body, more
    than SIGN_IN_BYTES, more than the one field): the body is read only that far, as
    whoever posts here has shown no token yet."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return None
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > SIGN_IN_BYTES:
            return None
    try:
        fields = parse_qs(body.decode("utf-8"), max_num_fields=2)
    except (UnicodeDecodeError, ValueError):
        return None
    return fields.get("token", [""])[0].strip()
