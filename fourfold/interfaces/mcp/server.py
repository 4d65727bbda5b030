"""The MCP server and its command line: `fourfold mcp` (stdio), `fourfold serve` (HTTP) and
`python -m fourfold.interfaces.mcp`.

Only argparse and logging are imported here at import time: the CLI registers these verbs
on every run, and the SDK, pydantic and the index load only when a server starts.
"""
import argparse
import logging
import os
import sys

from ...errors import FourfoldError
from ..cli import EXIT_INTERRUPTED, bounded_int

SERVER_NAME = "fourfold"
INSTRUCTIONS = """\
fourfold searches the code of the indexed repository locally (no network).
Start with `intelligent_search` for any question: it classifies the question (definition,
references, exact string, concept, impact) and blends text, structural, graph and semantic
retrieval (`preset` quick: semantic only; default: with text and structural; thorough: all
four). Use the specialised tools when you know what you need: `find_symbol` (jump to a
definition), `text_pattern_search` (grep), `structural_search` (definitions by name or kind,
outline of a file), `dependency_search` (callers, callees, importers, imports, subclasses),
`analyze_dependencies` (blast radius before a change), `get_file` (read lines), `list_files`
(find a file), `find_similar_code` (relatives of the code at path:line), `semantic_search`
(by meaning), `repository_context` (a map of the repository), `get_task_context` (a
token-budgeted pack of the code relevant to a task).
Every answer is paged: `limit` (at most 500 results; get_file: 5000 lines) and `max_tokens`
(200 to 50,000; characters // 4 + 1 of the compact JSON reply, reported as `approx_tokens`)
bound a page (a result alone over it is cut, `truncated`), `total` counts all results (or
the first ones kept, where `total_is_lower_bound`), and `cursor` (null on the last page),
passed back with the same other arguments, gets the next page until the index changes. Optional filters: `path_glob` (e.g. 'src/**/*.ts'), `language` (e.g. 'python'),
`repository` (a repository's name, on a server holding several). A value out of range or an
unknown argument is an error naming it.
Paths are relative to the repository root; lines are 1-based and ranges inclusive."""


def build_server(service):
    """An MCPServer (mcp SDK 2.x) exposing the tools the service declares."""
    from mcp.server.mcpserver import MCPServer

    from ... import __version__
    from .registry import declared_tools

    return MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, version=__version__,
                     tools=declared_tools(service))


def run_stdio(service) -> None:
    """Serve over stdin/stdout until the client goes away."""
    import anyio

    server = build_server(service)  # import the SDK before indexing competes for the GIL
    service.start()
    anyio.run(server.run_stdio_async)


# -- command line --------------------------------------------------------------------------
def _common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", nargs="?", default=".", help="repository folder (default: .)")
    parser.add_argument("--index-dir", default=None,
                        help="index folder (default: PATH/.fourfold or the nearest above)")
    parser.add_argument("--no-watch", action="store_true",
                        help="do not watch the files to keep the index fresh")
    parser.add_argument("--store", default=os.environ.get("FOURFOLD_STORE") or None,
                        metavar="URL",
                        help="answer from every repository of a PostgreSQL index "
                             "(postgresql://USER@HOST:PORT/DB; default $FOURFOLD_STORE); such "
                             "a server does not index: `fourfold index PATH --store URL` does")


def _http_args(parser: argparse.ArgumentParser, port: int = 8765) -> None:
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1; any other needs a token)")
    parser.add_argument("--port", type=bounded_int(0, 65535), default=port,
                        help=f"port (default {port or 'a free one'})")
    parser.add_argument("--token", default=None,
                        help="bearer token clients must send (default: $FOURFOLD_TOKEN)")


def add_subcommands(subparsers) -> None:
    """Register `mcp` (stdio) and `serve` (streamable HTTP) on the CLI's subparsers."""
    p = subparsers.add_parser("mcp", help="run the MCP server over stdio (for agents)",
                              description="Run the fourfold MCP server over stdio.")
    _common_args(p)
    p.set_defaults(func=cmd_mcp)
    p = subparsers.add_parser("serve", help="run the MCP server (HTTP) and the web page",
                              description="Run the fourfold MCP server over streamable HTTP "
                                          "at http://HOST:PORT/mcp, and the web page at "
                                          "http://HOST:PORT/.")
    _common_args(p)
    _http_args(p)
    p.set_defaults(func=cmd_serve)
    p = subparsers.add_parser("ui", help="open the web page on a folder (a local server)",
                              description="Serve the web page (and the MCP endpoint) for a "
                                          "folder on a free loopback port; prints the "
                                          "address.")
    _common_args(p)
    _http_args(p, port=0)
    p.set_defaults(func=cmd_serve)


def _setup_logging() -> None:
    level = os.environ.get("FOURFOLD_LOG", "WARNING").upper()
    logging.basicConfig(level=getattr(logging, level, logging.WARNING), stream=sys.stderr,
                        format="fourfold-mcp %(levelname)s %(message)s")


def _serve(args, http: bool = False) -> int:
    from .tools import FourfoldService

    try:
        service = FourfoldService(args.path, index_dir=args.index_dir, watch=not args.no_watch,
                                  store_url=args.store)
    except FourfoldError as exc:
        print(f"fourfold: {exc}", file=sys.stderr)
        return 2
    try:
        if http:
            from ..http import free_port, resolve_token, run_http

            token = resolve_token(args.host, args.token, service.ff)
            port = args.port or free_port(args.host)
            run_http(build_server(service), service, args.host, port, token)
        else:
            run_stdio(service)
    except FourfoldError as exc:
        print(f"fourfold: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fourfold: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        service.close()
    return 0


def cmd_mcp(args) -> int:
    """`fourfold mcp`: serve over stdio."""
    _setup_logging()
    return _serve(args)


def cmd_serve(args) -> int:
    """`fourfold serve`: serve over streamable HTTP (a token is needed off loopback)."""
    _setup_logging()
    return _serve(args, http=True)


def main(argv: list[str] | None = None) -> int:
    """`python -m fourfold.interfaces.mcp [PATH] [--http --host H --port N --token T]`."""
    parser = argparse.ArgumentParser(prog="python -m fourfold.interfaces.mcp",
                                     description="fourfold MCP server (stdio by default)")
    _common_args(parser)
    parser.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    _http_args(parser)
    args = parser.parse_args(argv)
    return cmd_serve(args) if args.http else cmd_mcp(args)
