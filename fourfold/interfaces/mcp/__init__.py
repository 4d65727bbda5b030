"""MCP server: fourfold's tools for coding agents, over stdio or streamable HTTP.

    fourfold mcp [PATH]                      # stdio, for Claude Code / Cursor / VS Code / Codex
    fourfold serve [PATH] --port 8765        # streamable HTTP on http://127.0.0.1:8765/mcp
    python -m fourfold.interfaces.mcp [PATH] [--http --port N]

Transport only: every answer comes from the fourfold.api.Fourfold methods. One module a job:
service.py (index lifecycle: watcher, freshness, background embedding, result cache),
params.py and tools.py (the tools, one typed method each: their signatures are the input
schemas), paging.py (cursors, token budgets), paths.py (agent paths kept inside the root),
server.py (registration, stdio, the CLI verbs) and http.py (streamable HTTP, bearer token).
Nothing here imports the `mcp` SDK at import time, so `fourfold --help` stays fast.
"""
