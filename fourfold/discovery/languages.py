"""Language detection by file name, extension and shebang line."""
from __future__ import annotations

import re

EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".hxx": "cpp", ".h++": "cpp", ".ipp": "cpp", ".inl": "cpp",
    ".cs": "csharp",
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby",
    ".php": "php",
    ".kt": "kotlin", ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala", ".sc": "scala",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash",
    ".lua": "lua",
    ".hs": "haskell", ".lhs": "haskell",
    ".ex": "elixir", ".exs": "elixir",
    ".zig": "zig",
    # Text-only languages: indexed for text and semantic search, no grammar.
    ".md": "markdown", ".markdown": "markdown", ".rst": "rst", ".txt": "text",
    ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".ini": "ini",
    ".cfg": "ini", ".xml": "xml", ".html": "html", ".htm": "html", ".css": "css",
    ".scss": "css", ".sql": "sql", ".proto": "protobuf", ".graphql": "graphql",
    ".vue": "vue", ".svelte": "svelte", ".dart": "dart", ".r": "r", ".jl": "julia",
    ".ml": "ocaml", ".clj": "clojure", ".erl": "erlang", ".pl": "perl", ".pm": "perl",
    ".m": "objc", ".mm": "objc", ".tf": "hcl", ".cmake": "cmake",
}

FILENAMES: dict[str, str] = {
    "Makefile": "make", "makefile": "make", "GNUmakefile": "make",
    "Dockerfile": "dockerfile", "Rakefile": "ruby", "Gemfile": "ruby",
    "CMakeLists.txt": "cmake", "BUILD": "starlark", "WORKSPACE": "starlark",
    ".bashrc": "bash", ".zshrc": "bash", ".profile": "bash",
}

_SHEBANG = re.compile(rb"^#!\s*(?:\S*/env\s+(?:-S\s+)?)?(?:\S*/)?([A-Za-z0-9_.+-]+)")
_INTERPRETERS = {
    "python": "python", "python3": "python", "python2": "python",
    "node": "javascript", "nodejs": "javascript", "deno": "typescript", "bun": "javascript",
    "sh": "bash", "bash": "bash", "zsh": "bash", "dash": "bash", "ksh": "bash",
    "ruby": "ruby", "php": "php", "lua": "lua", "luajit": "lua", "elixir": "elixir",
    "runghc": "haskell", "runhaskell": "haskell", "perl": "perl", "kotlin": "kotlin",
    "swift": "swift", "scala": "scala",
}


def detect_language(name: str, head: bytes = b"") -> str | None:
    """Language of a file from its base name, extension, or the shebang in its first bytes."""
    if name in FILENAMES:
        return FILENAMES[name]
    dot = name.rfind(".")
    if dot > 0:
        lang = EXTENSIONS.get(name[dot:].lower())
        if lang:
            return lang
    if head.startswith(b"#!"):
        match = _SHEBANG.match(head.split(b"\n", 1)[0])
        if match:
            name = match.group(1).decode("ascii", "replace")
            return _INTERPRETERS.get(name) or _INTERPRETERS.get(re.sub(r"[\d.]+$", "", name))
    return None
