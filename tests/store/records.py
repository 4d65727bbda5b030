"""File records the store tests write, and a small realistic Python corpus for ranking."""
from __future__ import annotations

import textwrap

from fourfold.model import Chunk, Reference, Symbol
from fourfold.store.base import (NO_REFERENCES, FileRecord, FileStamp, compress_references,
                                 encode_references)
from fourfold.tokens import chunk_body, token_text

ALPHA = "def alpha():\n    return beta()\n"


def alpha_record(stamp: FileStamp = FileStamp(30, 111, 222, 333)) -> FileRecord:
    return FileRecord(
        "pkg/a.py", stamp, "hash-a", "python", 0, ALPHA,
        [Symbol("alpha", "alpha", "function", 1, 2, "def alpha():", "Alpha.", None)],
        [Chunk(1, 2, ALPHA.rstrip("\n"), "alpha", "symbol")],
        compress_references(encode_references([Reference("call", "beta", 2, "alpha")])),
        ["def alpha return beta"], ["chunk-a"])


def readme_record() -> FileRecord:
    return FileRecord("README.md", FileStamp(6, 1, 2, 3), "hash-b", None, 0, "hello\n", [],
                      [Chunk(1, 1, "hello", None, "text")], NO_REFERENCES, ["hello"], ["chunk-b"])


def python_record(path: str, source: str) -> FileRecord:
    """A record of Python source chunked per top-level definition, the way the indexer
    fills one (symbols, chunk bodies and their BM25 token text)."""
    text = textwrap.dedent(source).lstrip("\n")
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines, 1) if line.startswith(("def ", "class "))]
    symbols, chunks = [], []
    for start, end in zip(starts, starts[1:] + [len(lines)]):
        while end > start and not lines[end - 1].strip():
            end -= 1
        header = lines[start - 1]
        name = header.split()[1].split("(")[0].rstrip(":")
        kind = "class" if header.startswith("class") else "function"
        symbols.append(Symbol(name, name, kind, start, end, header.rstrip(":"), "", None))
        chunks.append(Chunk(start, end, chunk_body(lines, start, end), name, "symbol"))
    bodies = [c.text for c in chunks]
    return FileRecord(path, FileStamp(len(text), 1, 1, 1), f"hash-{path}", "python", 0, text,
                      symbols, chunks, NO_REFERENCES, [token_text(b) for b in bodies],
                      [f"{path}#{c.start_line}" for c in chunks])


CORPUS = {
    "config/parser.py": '''
        class ConfigParser:
            """Parse configuration files into sections."""
            def __init__(self, path):
                self.path = path
                self.sections = {}

        def parse_config(path):
            parser = ConfigParser(path)
            return parser.read_file(path)

        def parse_config_string(text):
            """Parse configuration given as a string."""
            return ConfigParser(None).read_string(text)

        def read_file(path, encoding="utf-8"):
            with open(path, encoding=encoding) as handle:
                return handle.read()
        ''',
    "config/loader.py": '''
        def load_config(paths):
            merged = {}
            for path in paths:
                merged.update(parse_config(path))
            return merged

        def find_config_files(root):
            return sorted(root.glob("**/*.cfg"))

        def default_config():
            return {"logging": {"level": "INFO"}, "cache": {"size": 128}}

        class ConfigError(Exception):
            """A configuration file could not be parsed."""
        ''',
    "io/files.py": '''
        def read_file(path):
            with open(path, "rb") as handle:
                return handle.read()

        def write_file(path, data):
            with open(path, "wb") as handle:
                handle.write(data)

        def read_lines(path):
            return read_file(path).decode().splitlines()

        def copy_file(source, target):
            write_file(target, read_file(source))

        class FileReader:
            def __init__(self, path):
                self.path = path
            def read(self):
                return read_file(self.path)
        ''',
    "net/http_client.py": '''
        class HttpClient:
            def __init__(self, base_url, timeout=10):
                self.base_url = base_url
                self.timeout = timeout

        def get_json(client, path):
            response = client.request("GET", client.base_url + path)
            return response.json()

        def post_json(client, path, payload):
            return client.request("POST", client.base_url + path, json=payload)

        def retry_request(func, attempts=3):
            for attempt in range(attempts):
                try:
                    return func()
                except ConnectionError:
                    if attempt == attempts - 1:
                        raise

        def parse_headers(raw):
            return dict(line.split(": ", 1) for line in raw.splitlines() if line)
        ''',
    "util/cache.py": '''
        class LruCache:
            def __init__(self, size=128):
                self.size = size
                self.entries = {}

        def cached(func):
            cache = {}
            def wrapper(*args):
                if args not in cache:
                    cache[args] = func(*args)
                return cache[args]
            return wrapper

        def clear_cache(cache):
            cache.entries.clear()

        def cache_key(*parts):
            return ":".join(str(p) for p in parts)
        ''',
    "util/strings.py": '''
        def snake_case(name):
            out = []
            for char in name:
                if char.isupper() and out:
                    out.append("_")
                out.append(char.lower())
            return "".join(out)

        def camel_case(name):
            head, *rest = name.split("_")
            return head + "".join(part.title() for part in rest)

        def parse_bool(text):
            return text.strip().lower() in ("1", "true", "yes", "on")

        def truncate(text, width):
            return text if len(text) <= width else text[:width - 1] + "..."

        def normalise_whitespace(text):
            return " ".join(text.split())
        ''',
    "cli/main.py": '''
        def main(argv=None):
            args = parse_arguments(argv)
            config = load_config(args.config)
            return run(config, args)

        def parse_arguments(argv):
            parser = ArgumentParser(prog="tool")
            parser.add_argument("--config", action="append", default=[])
            return parser.parse_args(argv)

        def run(config, args):
            print("running with", len(config), "sections")
            return 0

        def report_error(error):
            print("error:", error)
            return 2
        ''',
    "db/models.py": '''
        class User:
            def __init__(self, name, email):
                self.name = name
                self.email = email

        class Session:
            def __init__(self, user, token):
                self.user = user
                self.token = token

        def create_user(db, name, email):
            db.execute("INSERT INTO users VALUES (?, ?)", (name, email))
            return User(name, email)

        def find_user(db, email):
            row = db.execute("SELECT name, email FROM users WHERE email = ?", (email,)).fetchone()
            return User(*row) if row else None

        def delete_user(db, email):
            db.execute("DELETE FROM users WHERE email = ?", (email,))
        ''',
}


def corpus_records() -> list[FileRecord]:
    return [python_record(path, source) for path, source in CORPUS.items()]


def needle_record(path: str, text: str) -> FileRecord:
    return FileRecord(path, FileStamp(len(text), 1, 1, 1), f"hash-{path}-{text}", None, 0, text,
                      [], [Chunk(1, 1, text.strip(), None, "text")], NO_REFERENCES, [text.strip()],
                      [f"chunk-{path}-{text}"])


def write_out_of_order(store) -> tuple[int, int]:
    """Two repositories whose files hold "needle" or "hay": the first's written out of path
    order in batches, then some edited, deleted and added (new documents, numbered last);
    the second shares 20 of the first's documents. Returns their ids."""
    first, second = store.ensure_repo("/a", "a"), store.ensure_repo("/b", "b")
    scrambled = [f"d{n % 5}/f{(n * 7) % 40:02}.py" for n in range(40)]
    for start in range(0, 40, 8):
        store.write_batch(first, [needle_record(p, "needle\n" if n % 3 else "hay\n")
                                  for n, p in enumerate(scrambled[start:start + 8], start)],
                          [], [])
    store.write_batch(second, [needle_record(p, "needle\n") for p in sorted(scrambled)[:20]],
                      [], [])
    store.write_batch(first, [needle_record(p, "needle again\n") for p in sorted(scrambled)[::6]],
                      ["d4/f39.py", "d0/f00.py"], [])
    store.write_batch(first, [needle_record("a/first.py", "needle\n"),
                              needle_record("e/last.py", "needle\n")], [], [])
    return first, second
