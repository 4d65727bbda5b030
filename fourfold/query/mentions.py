"""What a pasted text (an issue, a traceback, a log) names exactly: files, traceback frames
and code names. Parsed once per query; the structural modality looks each one up."""
from __future__ import annotations

import re
from dataclasses import dataclass

# Python's 'File "x.py", line 3, in f'; Node's "at f (x.js:3:5)"; Java's "at a.B.f(B.java:3)";
# Rust's "at src/x.rs:3:5"; Go's indented "/src/x.go:3 +0x1d".
_FRAMES = re.compile(
    r'File "(?P<py>[^"\n]+)", line (?P<pyline>\d+)(?:, in (?P<pyfn>[\w<>.]+))?'
    r"|\bat (?:(?P<jsfn>[\w$.<>]+) \()?(?P<js>[^\s():]+\.\w+):(?P<jsline>\d+)(?::\d+)?\)?"
    r"|\bat (?P<jvfn>[\w$.]+)\((?P<jv>\w+\.\w+):(?P<jvline>\d+)\)"
    r"|(?:^|\n)[ \t]+(?P<go>[\w./-]+\.go):(?P<goline>\d+)")
# a relative or absolute path with at least one folder and an extension
_PATH = re.compile(r"(?<![\w/.-])(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]\w{0,5}\b")
# Every pattern here runs in linear time on a hostile 32,000-character text: no nested
# quantifier can split one run of characters two ways, and a URL scheme is bounded.
_DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # an identifier-shaped word
_URL = re.compile(r"\b[a-z][a-z0-9+.-]{0,20}://\S+")
# dotted words that are not code: abbreviations, versions, host names
_NOT_CODE = re.compile(r"^(?:e\.g|i\.e|etc|vs|www)\b|\.(?:com|org|net|io|html?)$", re.I)
MAX_MENTIONS = 40  # names kept, most mentioned first


def _is_code_name(word: str) -> bool:
    """camelCase, PascalCase with two or more capitals (EmailMessage, URLValidator), or
    snake_case: a name no prose word has."""
    bare = word.strip("_")
    if "_" in bare:
        return any(c.isalpha() for c in bare)
    upper = sum(c.isupper() for c in bare)
    lower = any(c.islower() for c in bare)
    return lower and (upper >= 2 or (upper == 1 and bare[0].islower()))


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str | None


@dataclass(frozen=True)
class Mentions:
    """`frames` innermost last, as tracebacks print them; `paths` and `names` in order of
    first appearance, names ranked by how often the text repeats them."""

    frames: tuple[Frame, ...] = ()
    paths: tuple[str, ...] = ()
    names: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.frames or self.paths or self.names)


def mentions_of(text: str) -> Mentions:
    frames = []
    for m in _FRAMES.finditer(text):
        path = m.group("py") or m.group("js") or m.group("jv") or m.group("go")
        line = int(m.group("pyline") or m.group("jsline") or m.group("jvline")
                   or m.group("goline"))
        function = m.group("pyfn") or m.group("jsfn") or m.group("jvfn")
        if function and function.startswith("<"):  # <module>, <lambda>
            function = None
        frames.append(Frame(path, line, function))
    prose = _URL.sub(" ", text)
    # a link to a file in a repository host names the file ("…/blob/main/src/x.py#L3")
    linked = [m.group(0).split("#")[0].split("?")[0] for m in _URL.finditer(text)]
    paths = list(dict.fromkeys([m.group(0) for m in _PATH.finditer(prose)]
                               + [u.split("://", 1)[1] for u in linked
                                  if _PATH.search(u.split("://", 1)[1])]))
    counts: dict[str, int] = {}
    for m in _DOTTED.finditer(prose):
        word = m.group(0)
        if not (_NOT_CODE.search(word) or any(word in p for p in paths)):
            counts[word] = counts.get(word, 0) + 1
    for m in IDENTIFIER.finditer(prose):
        word = m.group(0)
        called = prose[m.end():m.end() + 1] == "("
        if called or _is_code_name(word):
            counts[word] = counts.get(word, 0) + 1
    order = {w: i for i, w in enumerate(counts)}
    names = sorted(counts, key=lambda w: (-counts[w], order[w]))[:MAX_MENTIONS]
    return Mentions(tuple(frames), tuple(paths), tuple(names))
