"""Text modality: exact literal and regex search (trigram prefilter, exact verification)
and BM25 ranking over identifier-split tokens."""
from __future__ import annotations

import functools
import itertools
import math
import numbers
import os
import re
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
import re._parser as sre_parse  # the stdlib regex parser, used only to find required literals
from dataclasses import dataclass
from functools import cached_property

import re2
import stringzilla

from ..collector import collector_paused
from ..errors import QueryError
from ..model import Hit
from ..store.base import PathKey, RequiredText, Store, StoredFile, unfinished_note
from ..store.snapshot import Snapshots
from ..tokens import name_match, name_targets, name_words, query_terms, singular
from ..query.model import GREP_TIME_BUDGET, MAX_PATTERN_CHARS, Query, check_text
from .base import inside_glob, path_ok
from .grep_pool import POOL_MIN_FILES, GrepPool, PoolUnavailable

MIN_TRIGRAM = 3
# Python's IGNORECASE takes i, I, İ and ı for one letter; RE2's case folding does not
_DOTTED_I = "iIİı"
GLOB_POOL_MOST = 65_536  # BM25 chunks a search under a narrow glob asks for at most
FOLDED_TRIGRAMS = 32  # trigrams a literal of several case forms asks for, whatever its length
MAX_SPELLINGS = 27  # of one trigram (an i's three forms, thrice); one with more is not asked
_WORD_CHAR = re.compile(r"\w")
# RE2 instructions (\pL{30} takes 36,000). A larger program compiles for tenths of a second
# and builds its automaton at a few MB a second (\pL{100}: 120,000 instructions, 3 MB/s).
MAX_REGEX_PROGRAM = 50_000


class ResultList(list):
    """Results in order; `partial` when the time budget ran out before every candidate file
    was scanned."""

    def __init__(self, items=(), partial: bool = False):
        super().__init__(items)
        self.partial = partial


@dataclass(slots=True)
class LineMatch:
    path: str
    line: int
    text: str
    file_id: int
    flags: int

    def to_dict(self) -> dict:
        return {"path": self.path, "line": self.line, "text": self.text}


def literal_required(pattern: str, case_sensitive: bool = True) -> RequiredText | None:
    """What a file holding the literal holds: its trigrams."""
    if len(pattern) < MIN_TRIGRAM:
        return None
    return pattern if case_sensitive else any_case(pattern)


def any_case(literal: str) -> RequiredText | None:
    """What a file holding the literal in any case holds, as the trigram index finds it.
    The index folds case by an older Unicode than the checks of the lines (Georgian
    Mtavruli, Cherokee, Osage, Adlam and others have case pairs it keeps apart), and an i
    may be a dotted or dotless one (Python folds them together): a trigram with such a
    letter holds any of its forms. None where too many spellings would be asked."""
    forms = [_case_forms(char) for char in literal]
    if all(len(f) == 1 for f in forms):
        return literal
    grams: list = []
    starts = range(len(literal) - MIN_TRIGRAM + 1)
    step = max(1, len(starts) // FOLDED_TRIGRAMS)  # a long literal: a sample of them
    for start in starts[::step]:
        spellings = math.prod(len(f) for f in forms[start:start + MIN_TRIGRAM])
        if spellings > MAX_SPELLINGS:
            continue  # a weaker prefilter: the lines are checked all the same
        spelt = sorted({"".join(f) for f in itertools.product(*forms[start:start + MIN_TRIGRAM])})
        grams.append(spelt[0] if len(spelt) == 1 else ("or", spelt))
    return ("and", grams) if grams else None


def _case_forms(char: str) -> tuple[str, ...]:
    if char in _DOTTED_I:
        return ("i", "\u0130", "\u0131")
    if char.isascii():
        return (char,)
    return _case_orbits().get(char, (char,))


@functools.cache
def _case_orbits() -> dict[str, tuple[str, ...]]:
    """Each character beyond ASCII whose case forms the trigram index keeps apart -> one
    form of each kind it keeps apart (of the closure of its simple lower and upper case
    mappings, as a search whatever its case takes them). Made once, on the first such
    search of a process (about 0.1 s): the forms are asked of SQLite's trigram tokenizer
    itself, which folds Greek, Cyrillic and most Latin letters."""
    orbit_of: dict[str, set[str]] = {}
    for code in range(0x20000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        for other in (char.lower(), char.upper()):
            if len(other) == 1 and other != char:
                merged = orbit_of.get(char, {char}) | orbit_of.get(other, {other})
                for member in merged:
                    orbit_of[member] = merged
    forms: dict[str, tuple[str, ...]] = {}
    for orbit, kinds in _folded_kinds({tuple(sorted(o)) for o in orbit_of.values()}).items():
        if len(kinds) > 1:
            forms.update((char, kinds) for char in orbit if not char.isascii())
    return forms


def _folded_kinds(orbits: set[tuple[str, ...]]) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Each orbit -> one form of each set of its forms the trigram tokenizer folds
    together: each form written thrice as a row, and asked for."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram', detail='none')")
        rows = sorted({char for orbit in orbits for char in orbit})
        db.executemany("INSERT INTO t(rowid, x) VALUES(?, ?)",
                       ((n, char * 3) for n, char in enumerate(rows, 1)))
        kinds = {}
        for orbit in orbits:
            found: dict[frozenset, str] = {}
            for char in orbit:
                found.setdefault(frozenset(n for (n,) in db.execute(
                    "SELECT rowid FROM t WHERE t MATCH ?", ('"' + char * 3 + '"',))), char)
            kinds[orbit] = tuple(sorted(found.values()))
        return kinds
    finally:
        db.close()


SPELLINGS_MOST = 16  # strings a run of literals may become through small alternations
# literals a text is searched for before a regex, at most (_first_line_from): with 8 a
# grep through the Linux kernel was faster, with 16 about even, with 40 slower
# (docs/benchmarks.md)
FIRST_LINE_LITERALS = 8


def _exact(items, known: dict) -> set[str] | None:
    """The strings a part of a regex matches where it is a few literals ("u(8|16)": u8
    and u16; "[xy]": x and y), else None. `known`: each group's, by its id, as groups
    nested hundreds deep are asked about at every level."""
    out = {""}
    for op, arg in items:
        spelt = _spellings(op, arg, known)
        if spelt is None or len(out) * len(spelt) > SPELLINGS_MOST:
            return None
        out = {a + b for a in out for b in spelt}
    return out


def _spellings(op, arg, known: dict) -> set[str] | None:
    """_exact of one item of a regex."""
    if op is sre_parse.LITERAL:
        return {chr(arg)}
    if op is sre_parse.IN:
        return {chr(a) for o, a in arg} if all(o is sre_parse.LITERAL for o, _ in arg) else None
    if op not in (sre_parse.SUBPATTERN, sre_parse.BRANCH):
        return None
    if id(arg) not in known:
        if op is sre_parse.SUBPATTERN:
            known[id(arg)] = _exact(arg[-1], known)
        else:
            spelt: set[str] | None = set()
            for branch in arg[1]:  # given up as soon as there are too many
                more = _exact(branch, known)
                if more is None or len(spelt | more) > SPELLINGS_MOST:
                    spelt = None
                    break
                spelt |= more
            known[id(arg)] = spelt
    return known[id(arg)]


def _required(items, shortest: int, known: dict) -> RequiredText | None:
    """What every match of these regex items holds: runs of literals (spelt out through
    small alternations) of at least `shortest` characters, joined by "and" and "or";
    `known`: as _exact's."""
    terms: list = []
    run = {""}  # what the run of literals so far may be

    def close() -> None:
        nonlocal run
        if all(len(spelling) >= shortest for spelling in run):
            terms.append(next(iter(run)) if len(run) == 1 else ("or", sorted(run)))
        run = {""}

    for op, arg in items:
        spelt = _spellings(op, arg, known)
        if spelt is not None:
            if len(run) * len(spelt) > SPELLINGS_MOST:
                close()
            run = {a + b for a in run for b in spelt}
            continue
        close()
        if op is sre_parse.SUBPATTERN:
            sub = _required(arg[-1], shortest, known)
            if sub is not None:
                terms.append(sub)
        elif op in (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, sre_parse.POSSESSIVE_REPEAT):
            low, _high, body = arg
            if low >= 1:
                sub = _required(body, shortest, known)
                if sub is not None:
                    terms.append(sub)
        elif op is sre_parse.BRANCH:
            branches = [_required(b, shortest, known) for b in arg[1]]
            if branches and all(b is not None for b in branches):
                terms.append(("or", branches))
        elif op is sre_parse.ATOMIC_GROUP:
            sub = _required(arg, shortest, known)
            if sub is not None:
                terms.append(sub)
    close()
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else ("and", terms)


MAX_REQUIRED_DEPTH = 32  # deeper trees narrow no better, and stores' query parsers have limits


def _depth(required: RequiredText | None) -> int:
    if required is None or isinstance(required, str):
        return 0
    return 1 + max(map(_depth, required[1]))


def regex_required(pattern: str, shortest: int = MIN_TRIGRAM) -> RequiredText | None:
    """The literals of at least `shortest` characters every line the regex matches must
    contain, or None (scan all)."""
    if "[:" in pattern:  # RE2 reads [[:upper:]] as a class, Python's parser as literals
        return None
    try:
        parsed = sre_parse.parse(pattern)
    except Exception:  # RE2 syntax Python cannot read: verification alone stays exact
        return None
    if any(op is sre_parse.LITERAL and arg > 0xFFFF for op, arg in parsed):
        return None
    try:
        required = _required(list(parsed), shortest, {})
        return required if _depth(required) <= MAX_REQUIRED_DEPTH else None
    except RecursionError:  # groups nested hundreds deep: no prefilter, verification is exact
        return None


def _in_any_case(required: RequiredText | None) -> RequiredText | None:
    """A regex's required literals, each as any_case finds it."""
    if required is None:
        return None
    if isinstance(required, str):
        return any_case(required)
    op, parts = required
    found = [_in_any_case(part) for part in parts]
    if op == "or":
        return None if None in found else ("or", found)
    kept = [part for part in found if part is not None]
    return ("and", kept) if kept else None


def _check_pattern(pattern: str) -> None:
    check_text(pattern, "the pattern")
    if not pattern:
        raise QueryError("empty pattern: give some text or a regular expression to find")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise QueryError(f"pattern too long: {len(pattern):,} characters, the limit is "
                         f"{MAX_PATTERN_CHARS:,}")


_ANY_BYTE = re.compile(r"(?<!\\)(?:\\\\)*\\C")  # \C not escaped itself


def compile_regex(pattern: str, case_sensitive: bool = True):
    if _ANY_BYTE.search(pattern):
        # the one construct that never_nl (below) leaves free to match a newline
        raise QueryError(f"unsupported regular expression {pattern!r}: \\C (any byte) can "
                         "match across lines; use . (any character)")
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = case_sensitive
    # grep's lines: a line matches when the pattern matches within it, so nothing in the
    # pattern may match a newline (not \s, [^;] or \n either): a match never spans lines
    options.never_nl = True
    # only a match's span is used; capturing groups would make RE2 track every one of them
    # (`(a*)*` repeated: a quarter of a second per match instead of microseconds)
    options.never_capture = True
    try:
        # compiled for UTF-8 bytes: RE2 on str re-encodes every text and maps every offset
        # back, two to four times slower than on the bytes kept by the content cache
        regex = re2.compile(("(?m)" + pattern).encode("utf-8", "surrogatepass"), options)
    except Exception as exc:  # google-re2 raises its own Error type with a bytes message
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise QueryError(f"invalid regular expression {pattern!r}: {detail}") from None
    if regex.programsize > MAX_REGEX_PROGRAM:
        raise QueryError(f"regular expression too large: {regex.programsize:,} RE2 "
                         f"instructions, the limit is {MAX_REGEX_PROGRAM:,}; use smaller "
                         "repetition counts or character classes")
    return regex


FOLDED_MAX_CHARS = 256  # a longer literal outgrows RE2's DFA memory: Python's re finds it


def compile_folded_literal(literal: str):
    """RE2 finding a literal whatever its case, as Python's IGNORECASE would, on UTF-8
    bytes: Python's re cannot skip ahead to the literal, and took several times as long
    through a big repository (docs/benchmarks.md). None for a literal over
    FOLDED_MAX_CHARS or one UTF-8 cannot carry (a lone surrogate)."""
    if len(literal) > FOLDED_MAX_CHARS or any("\ud800" <= char <= "\udfff" for char in literal):
        return None
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = False
    options.never_nl = True
    options.never_capture = True
    pattern = "".join(f"[{_DOTTED_I}]" if char in _DOTTED_I
                      else f"\\x{ord(char):02x}" if char.isascii() and not char.isalnum()
                      else char for char in literal)
    return re2.compile(pattern.encode("utf-8"), options)


def _literal_find(literal: bytes) -> Callable[[bytes, int], int]:
    """bytes.find by stringzilla's vector search: several times faster through text
    that does not hold the literal, as most of a grep's candidate text does not."""
    find = stringzilla.find
    return lambda text, pos: find(text, literal, pos)


def _re_find(pattern: re.Pattern) -> Callable[[str, int], int]:
    def find(text: str, pos: int) -> int:
        found = pattern.search(text, pos)
        return -1 if found is None else found.start()
    return find


def _literal_span(literal: bytes) -> Callable[[bytes, int], tuple[int, int]]:
    find = stringzilla.find

    def span(text: bytes, pos: int) -> tuple[int, int]:
        start = find(text, literal, pos)
        return start, start + len(literal)
    return span


def _is_word(char: str) -> bool:
    """A word character as Python's regexes know it: a letter or digit of any script, or
    the underscore (RE2's word boundary knows ASCII only, so whole words are checked here)."""
    return char.isalnum() or char == "_"


def _char_before(text: str | bytes, at: int) -> str:
    if isinstance(text, str):
        return text[at - 1] if at > 0 else ""
    start = at - 1
    while start > max(at - 4, 0) and text[start] & 0xC0 == 0x80:  # UTF-8 continuation bytes
        start -= 1
    return text[max(start, 0):at].decode("utf-8", "replace")[-1:]


def _char_at(text: str | bytes, at: int) -> str:
    if isinstance(text, str):
        return text[at] if at < len(text) else ""
    return text[at:at + 4].decode("utf-8", "replace")[:1]


_NOT_ASCII_WORD = re.compile(r"[^A-Za-z0-9_]")
_NOT_ASCII_WORD_BYTE = re.compile(rb"[^A-Za-z0-9_]")


def _whole_words(span: Callable[[str | bytes, int], tuple[int, int]]
                 ) -> Callable[[str | bytes, int], int]:
    """The next match with no word character just before or after it (grep -w). After a
    match inside a word, the search goes on past the run of ASCII word characters it
    starts in: no match starting within that run has a non-word character before it."""
    def find(text: str | bytes, pos: int) -> int:
        skip = _NOT_ASCII_WORD_BYTE if isinstance(text, bytes) else _NOT_ASCII_WORD
        while True:
            start, end = span(text, pos)
            if start < 0:
                return -1
            if not _is_word(_char_before(text, start)) and not _is_word(_char_at(text, end)):
                return start
            past = skip.search(text, start)
            if past is None:
                return -1
            pos = past.start() + 1
    return find


_UNANCHORED = re2._Anchor.UNANCHORED


def _re2_find(regex) -> Callable[[bytes, int], int]:
    """The next match of an RE2 regex, asked through its binding's own match call: the
    module's `search` wraps each hit in a Match object through a generator, a third of a
    common pattern's grep (google-re2 is pinned; tests/retrievers/test_text.py checks
    regex lines against Python's re)."""
    match = regex._regexp.Match
    return lambda text, pos: match(_UNANCHORED, text, pos, len(text))[0][0]


def _least_held(required: RequiredText) -> int:
    """The length of the longest literal a text holding what is required surely holds:
    roughly, how rare it is."""
    if isinstance(required, str):
        return len(required)
    op, parts = required
    return (max if op == "and" else min)(map(_least_held, parts))


def _looked_for(required: RequiredText) -> tuple[bytes, ...]:
    """What a text is searched for to find where a match may first be, UTF-8: one literal,
    or the alternatives of an "or" (of an "or" of them, all of them). Of an "and", its
    longest part alone (a line holding them all holds that one too; checking the others
    cost a whole grep more than it saved); of an "or" of more literals than
    FIRST_LINE_LITERALS, the beginning or end they share, where they share one
    (`[abcdefghi]_suffix` spelt out: `_suffix`)."""
    if isinstance(required, str):
        return (_utf8(required),)
    op, parts = required
    if op == "and":
        return _looked_for(max(parts, key=_least_held))
    if len(parts) > FIRST_LINE_LITERALS and all(isinstance(part, str) for part in parts):
        shared = max(os.path.commonprefix(parts),
                     os.path.commonprefix([part[::-1] for part in parts])[::-1], key=len)
        if shared:
            return (_utf8(shared),)
    return tuple(literal for part in parts for literal in _looked_for(part))


def _first_line_holding(wanted: tuple[bytes, ...], text: bytes) -> int:
    """Where in the UTF-8 text the first line holding any of `wanted` (_looked_for's)
    starts, or -1 where none does. Each literal after the first is looked for only before
    the earliest found so far: an occurrence overlapping it lies on its line, unless the
    literal spells a newline (a regex may), which no match holds: where such a literal is
    found only bounds where to begin."""
    earliest = -1
    for literal in wanted:
        found = stringzilla.find(text, literal, 0, len(text) if earliest < 0 else earliest)
        if found >= 0:
            earliest = found
    return -1 if earliest < 0 else text.rfind(b"\n", 0, earliest) + 1


def _first_line_from(required: RequiredText) -> Callable[[bytes], int] | None:
    """Where in a UTF-8 text the regex is first looked for: the first line that holds a
    literal every matching line holds, -1 in a text without it. The trigram index lists
    files that hold a literal's trigrams, not the literal, and a vector search for it runs
    many times faster than the regex through the lines before it; but not for many
    alternatives, each read through a text that lacks it (None: from the start)."""
    wanted = _looked_for(required)
    if len(wanted) > FIRST_LINE_LITERALS:
        return None
    return lambda text: _first_line_holding(wanted, text)


def _re2_span(regex) -> Callable[[bytes, int], tuple[int, int]]:
    """(start, end) of the next match, as _re2_find asks it; (-1, -1) for none."""
    match = regex._regexp.Match
    return lambda text, pos: match(_UNANCHORED, text, pos, len(text))[0]


def _quote_closed(pattern: str) -> str:
    """The regex with a \\Q quote it leaves open closed (\\E), so that what follows it
    stays a regex; RE2 refuses a \\E outside a quote."""
    quoted, at = False, 0
    while at < len(pattern):
        if quoted:
            if pattern.startswith("\\E", at):
                quoted, at = False, at + 2
            else:
                at += 1
        elif pattern[at] == "\\":
            quoted = pattern.startswith("Q", at + 1)
            at += 2
        else:
            at += 1
    return pattern + "\\E" if quoted else pattern


_CASE_FLAG = re.compile(r"\(\?[^:)]*i")  # (?i), (?mi:...), (?i-s) ... and, to be safe, (?P<id>


@dataclass(frozen=True)
class Finder:
    """What a grep looks for, as a process that did not parse it can build it again."""

    pattern: str
    regex: bool
    case_sensitive: bool
    whole_word: bool

    def required(self) -> RequiredText | None:
        """What a file must hold to match (its trigram candidates' query)."""
        if not self.regex:
            return literal_required(self.pattern, self.case_sensitive)
        required = regex_required(self.pattern)
        return required if self.literals_as_written() else _in_any_case(required)

    def literals_as_written(self) -> bool:
        """Whether what is required matches only as written: a case-sensitive search
        whose regex sets no flag that may make it ignore case."""
        return self.case_sensitive and not (self.regex and _CASE_FLAG.search(self.pattern))

    def compiled(self) -> tuple[Callable[[str | bytes, int], int], bool,
                                Callable[[bytes], int] | None]:
        """find(text, from) -> the start of the next match or -1; whether it searches
        UTF-8 bytes (RE2, a case-sensitive literal) rather than str; and first(text) ->
        where in a text to begin (-1: no line can match), or None (at its start)."""
        pattern, case_sensitive = self.pattern, self.case_sensitive
        if self.regex:
            program = compile_regex(pattern, case_sensitive)  # checked as written
            if self.whole_word:  # as grep -w: no word character just before or after
                program = compile_regex(rf"(?:^|\W)(?:{_quote_closed(pattern)})(?:$|\W)",
                                        case_sensitive)
            required = regex_required(pattern, 1) if self.literals_as_written() else None
            return (_re2_find(program), True,
                    None if required is None else _first_line_from(required))
        folded = None if case_sensitive else compile_folded_literal(pattern)
        if folded is not None:
            return (_whole_words(_re2_span(folded)) if self.whole_word
                    else _re2_find(folded)), True, None
        if case_sensitive:  # as UTF-8 bytes: the texts need not be decoded to be searched
            literal = _utf8(pattern)
            return (_whole_words(_literal_span(literal)) if self.whole_word
                    else _literal_find(literal)), True, None
        return _re_find(re.compile(
            rf"(?<!\w){re.escape(pattern)}(?!\w)" if self.whole_word else re.escape(pattern),
            re.IGNORECASE)), False, None


def matching_lines(text: str | bytes, find: Callable[[str | bytes, int], int],
                   first: Callable[[bytes], int] | None = None) -> list[tuple[int, str]]:
    """(line number, line) of each line of a text that `find(text, from)` (the start of
    the next match, or -1) finds a match in, looked for from `first(text)` where given
    (-1: nowhere); text is str, or UTF-8 bytes. No match spans a newline (see
    compile_regex), so a match marks its line; the search goes on from the next line, as
    a line is reported once. In UTF-8 bytes, newlines are counted and found by
    stringzilla's vector code: counting the newlines before each match with bytes.count
    was a third of a common pattern's grep."""
    utf8 = isinstance(text, bytes)
    newline, cr = (b"\n", b"\r") if utf8 else ("\n", "\r")
    count, find_newline = (stringzilla.count, stringzilla.find) if utf8 else (str.count,
                                                                              str.find)
    out: list[tuple[int, str]] = []
    line_no, counted, pos, size = 1, 0, 0, len(text)
    if first is not None:
        pos = first(text)
        if pos < 0:
            return out
    while pos < size:
        start = find(text, pos)
        if start < 0 or (start == size and text.endswith(newline)):
            break  # an empty match after the final newline is not a line
        line_no += count(text, newline, counted, start)
        counted = start
        line_start = text.rfind(newline, 0, start) + 1
        line_end = find_newline(text, newline, start)
        if line_end < 0:
            line_end = size
        line = text[line_start:line_end].rstrip(cr)
        out.append((line_no, line.decode("utf-8", "surrogatepass") if utf8 else line))
        pos = line_end + 1
    return out


STEM_BONUS = 1.0  # × the best BM25 score, for a file whose whole name the query spells out

GREP_READ_BATCH = 256  # files read from the store at once
GREP_LIMITED_READ = 32  # the same when a limit may stop the grep after a few files
GREP_KEPT_FILES = 2048  # a grep's first files whose texts are kept in the cache
GREP_LIST_PAGE = 64  # candidate files first listed when a limit is given (then 4x more)
CONTENT_CACHE_BYTES = 256 << 20


class ContentCache:
    """File texts kept in memory between searches, so a warm grep reads no database pages
    and decodes no UTF-8. Keyed by file id and checked by content hash (an id freed by a
    deleted file can come back for another); bounded in bytes of memory, oldest out first."""

    def __init__(self, store: Store, budget: int = CONTENT_CACHE_BYTES):
        self.store = store
        self.budget = budget
        # id -> [hash, str or None, UTF-8 bytes or None] (one of the two at least); by age
        self._texts: dict[int, list] = {}
        self._size = 0
        self._lock = threading.Lock()  # modalities and MCP calls run in threads

    def get(self, files: list[tuple[StoredFile, str]], utf8: bool = False, keep: bool = True
            ) -> dict[int, str | bytes]:
        """file id -> text (or its UTF-8 bytes, for RE2); "" for a file gone meanwhile.
        `keep`: texts read from the store are kept for later calls."""
        out: dict[int, str | bytes] = {}
        missing = []
        with self._lock:
            for stored, content_hash in files:
                entry = self._texts.get(stored.file_id)
                if entry is None or entry[0] != content_hash:
                    missing.append((stored.file_id, content_hash))
                    continue
                form = 2 if utf8 else 1
                if entry[form] is None:  # the other form, kept from another search
                    entry[form] = (_utf8(entry[1]) if utf8
                                   else entry[2].decode("utf-8", "surrogatepass"))
                    self._size += sys.getsizeof(entry[form])
                out[stored.file_id] = entry[form]
            self._shrink()
        if missing:
            # read in the form asked for: a store may keep UTF-8, and neither decodes it
            # only to have it encoded again here
            read = self.store.utf8_contents if utf8 else self.store.contents
            fetched = read(fid for fid, _ in missing)
            with self._lock:
                for fid, content_hash in missing:
                    if fid not in fetched:  # deleted since the candidates were listed
                        out[fid] = b"" if utf8 else ""
                        continue
                    out[fid] = fetched[fid]
                    if keep:
                        self._put(fid, [content_hash, None, fetched[fid]] if utf8
                                  else [content_hash, fetched[fid], None])
                self._shrink()
        return out

    @staticmethod
    def _cost(entry: list) -> int:
        return sum(sys.getsizeof(form) for form in entry[1:] if form is not None)

    def _put(self, file_id: int, entry: list) -> None:
        size = self._cost(entry)
        if size > self.budget // 8:
            return  # one huge file must not flush everything else
        old = self._texts.pop(file_id, None)
        if old is not None:
            self._size -= self._cost(old)
        self._texts[file_id] = entry
        self._size += size

    def _shrink(self) -> None:
        while self._size > self.budget and self._texts:
            self._size -= self._cost(self._texts.pop(next(iter(self._texts))))


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


class TextRetriever:
    modality = "text"

    def __init__(self, store: Store, snapshots: Snapshots, pool: GrepPool):
        """`pool`: the workers that search big greps (grep_pool), shared by the retrievers
        of one store."""
        self.store = store
        self.snapshots = snapshots
        self._pool = pool
        self._texts = ContentCache(store)
        self.time_budget = GREP_TIME_BUDGET

    @cached_property
    def _reader(self) -> ThreadPoolExecutor:
        """The one thread that reads a whole grep's next texts: it keeps its connection to
        the store from one grep to the next."""
        return ThreadPoolExecutor(1, thread_name_prefix="fourfold-grep-reader")

    def ready(self) -> bool:
        return True

    def incomplete(self) -> str | None:
        return unfinished_note(self.store, self.snapshots.scope()) or self.store.text_index_fault()

    # -- exact search -------------------------------------------------------------------
    def grep(self, pattern: str, regex: bool = False, case_sensitive: bool = False,
             whole_word: bool = False, path_glob: str | None = None, repo_id: int | None = None,
             limit: int | None = None, time_budget: float | None = None) -> ResultList:
        """Every line matching the pattern, in path then line order (like grep -rn). Files
        are scanned for at most `time_budget` seconds (default self.time_budget); then the
        lines found so far come back marked partial. The collector is paused meanwhile: a
        common pattern's lines are hundreds of thousands of objects and no cycles, whose
        collections took up to a sixth of such a grep."""
        with collector_paused():
            return self._grep(pattern, regex, case_sensitive, whole_word, path_glob, repo_id,
                              limit, time_budget)

    def _grep(self, pattern: str, regex: bool, case_sensitive: bool, whole_word: bool,
              path_glob: str | None, repo_id: int | None, limit: int | None,
              time_budget: float | None) -> ResultList:
        _check_pattern(pattern)
        check_text(path_glob, "path_glob")
        if time_budget is not None and (isinstance(time_budget, bool) or not isinstance(
                time_budget, numbers.Real) or not time_budget >= 0):  # NaN is not >= 0
            raise QueryError(f"time_budget is a number of seconds, at least 0, not "
                             f"{time_budget!r}")
        if not regex and ("\n" in pattern or "\x00" in pattern):
            return ResultList()  # no line holds a newline, no indexed text a NUL (binary)
        deadline = time.monotonic() + (self.time_budget if time_budget is None else time_budget)
        wanted = Finder(pattern, regex, case_sensitive, whole_word)
        find, utf8, first = wanted.compiled()
        required, as_written = wanted.required(), wanted.literals_as_written()
        if limit is None:
            candidates, _ = self._candidates(required, as_written, repo_id, path_glob, None,
                                             None)
            if len(candidates) >= POOL_MIN_FILES:
                try:
                    return self._grep_in_pool(wanted, candidates, deadline)
                except PoolUnavailable:
                    pass  # searched here, from the start
            batches = self._all_batches(candidates, utf8)
        out = ResultList()
        if limit is not None:
            batches = self._limited_batches(required, as_written, repo_id, path_glob, utf8,
                                            lambda: limit - len(out))
        for batch, texts in batches:
            for stored, _ in batch:
                if time.monotonic() > deadline:
                    out.partial = True
                    return out
                out.extend(self._line_matches(stored, matching_lines(texts[stored.file_id],
                                                                     find, first)))
                if limit is not None and len(out) >= limit:
                    del out[limit:]
                    return out
        return out

    def _limited_batches(self, required: RequiredText | None, as_written: bool,
                         repo_id: int | None, path_glob: str | None, utf8: bool,
                         wanted: Callable[[], int]) -> Iterator[tuple[list, dict]]:
        """Candidate files with their texts, a few at a time, listed a page at a time: a
        common pattern's first lines then cost neither listing nor reading every file that
        holds it. `wanted()`: how many lines are still wanted; each page is sized by the
        lines the files read so far held (half as many again as they predict; from the
        second page on at least 4x the first, as each listing costs about as much as
        reading a few hundred more files' names; at most 4x the last page)."""
        page, read = GREP_LIST_PAGE, 0
        candidates, last = self._candidates(required, as_written, repo_id, path_glob, None, page)
        asked = wanted()
        while True:
            for start in range(0, len(candidates), GREP_LIMITED_READ):
                batch = candidates[start:start + GREP_LIMITED_READ]
                # as a whole grep does, only the first files' texts are kept (a rare line
                # of common trigrams is looked for through every candidate)
                yield batch, self._texts.get(batch, utf8=utf8,
                                             keep=read + start < GREP_KEPT_FILES)
            if last is None:
                return
            read += len(candidates)
            found = asked - wanted()
            predicted = math.ceil(1.5 * wanted() * read / found) if found else 4 * page
            page = min(4 * page, max(4 * GREP_LIST_PAGE, predicted))
            candidates, last = self._candidates(required, as_written, repo_id, path_glob, last,
                                                page)

    def _grep_in_pool(self, wanted: Finder, candidates: list[tuple[StoredFile, str]],
                      deadline: float) -> ResultList:
        """A whole grep through many files, searched by worker processes (grep_pool)."""
        out = ResultList()
        found = self._pool.batches(wanted, [stored.file_id for stored, _ in candidates],
                                   deadline)
        try:
            for lines_of, partial in found:
                for position, lines in lines_of:
                    out.extend(self._line_matches(candidates[position][0], lines))
                if partial:
                    out.partial = True
                    break
        finally:
            found.close()  # the workers' other batches read and dropped, the pool let go
        return out

    def _all_batches(self, candidates: list[tuple[StoredFile, str]], utf8: bool
                     ) -> Iterator[tuple[list, dict]]:
        """Every candidate file with its text, a batch at a time; the next batch is read in
        a thread while this one is searched (SQLite and LZ4 let go of the interpreter while
        they work). Only the first files' texts are kept in the cache: a grep through more
        than it holds would otherwise replace every text in it, for no later hit."""
        ahead = None
        for start in range(0, len(candidates), GREP_READ_BATCH):
            batch = candidates[start:start + GREP_READ_BATCH]
            texts = self._reader.submit(self._texts.get, batch, utf8,
                                        keep=start < GREP_KEPT_FILES)
            if ahead is not None:
                yield ahead[0], ahead[1].result()
            ahead = (batch, texts)
        if ahead is not None:
            yield ahead[0], ahead[1].result()

    def _candidates(self, required: RequiredText | None, as_written: bool, repo_id: int | None,
                    path_glob: str | None, after: PathKey | None, limit: int | None
                    ) -> tuple[list[tuple[StoredFile, str]], PathKey | None]:
        """Candidate files under path_glob, and the key of the last one listed where more
        may follow (None when the listing is complete). `as_written`: the required literals
        match only as written (Finder.literals_as_written)."""
        listed = self.store.trigram_candidates(required, repo_id, after=after, limit=limit,
                                               case_sensitive=as_written)
        last = ((listed[-1][0].path, listed[-1][0].file_id)
                if limit is not None and len(listed) == limit else None)
        if path_glob is not None:
            listed = [c for c in listed if path_ok(c[0].path, path_glob)]
        return listed, last

    @staticmethod
    def _line_matches(stored: StoredFile, lines: list[tuple[int, str]]) -> list[LineMatch]:
        """A file's matching lines (matching_lines') as answers."""
        return [LineMatch(stored.path, line_no, line, stored.file_id, stored.flags)
                for line_no, line in lines]

    # -- ranked search ------------------------------------------------------------------
    def search(self, query: Query, limit: int) -> list[Hit]:
        if query.literal:
            return self.literal_hits(query, limit)
        terms = query_terms(query.text)
        if not terms:
            return []
        glob = query.filters.path_glob

        def ranked(want: int) -> tuple[int, list[Hit]]:
            chunks = self.store.bm25_chunks(terms, want, query.filters.repo_id)
            return len(chunks), [Hit(c.path, c.start_line, c.end_line, score, symbol=c.symbol,
                                     kind=c.kind)
                                 for c, score in chunks if path_ok(c.path, glob)]
        hits = inside_glob(ranked, glob, limit * 3, limit * 3, GLOB_POOL_MOST)
        return self._name_bonus(hits, terms, query)[:limit]

    def _name_bonus(self, hits: list[Hit], terms: list[str], query: Query) -> list[Hit]:
        """A file whose name the query spells out ("JSON array" -> JsonArray.java) is likely
        the answer: its best chunk gains a bonus, and such files join even when BM25 missed
        them."""
        if not hits:
            return hits
        query_words = name_targets({singular(t) for t in terms})
        snapshot = self.snapshots.current()
        names = snapshot.file_name_words
        unit = hits[0].score * STEM_BONUS
        best_in_file: dict[str, Hit] = {}
        for hit in hits:
            best_in_file.setdefault(hit.path, hit)
        for path, hit in best_in_file.items():
            hit.score += unit * name_match(names.get(path, ()), query_words)
        # a file named wholly by the question holds one of its words: found through them,
        # not by matching every file's name
        named = {p for word in query_words for p in snapshot.files_by_name_word.get(word, ())}
        missing = sorted((p for p in named if p not in best_in_file
                          and name_match(names[p], query_words) == 1.0
                          and path_ok(p, query.filters.path_glob)),
                         key=snapshot.file_position.__getitem__)
        for path in missing[:20]:
            stored = snapshot.files.get(path)
            chunks = self.store.chunks_of_file(stored.file_id) if stored else []
            if chunks:
                first = next((c for c in chunks if c.symbol), chunks[0])
                hits.append(Hit(path, first.start_line, first.end_line, unit * 0.9,
                                symbol=first.symbol, kind=first.kind))
        return sorted(hits, key=lambda h: -h.score)

    def literal_hits(self, query: Query, limit: int) -> list[Hit]:
        """Files containing the exact string, as spans around the matches."""
        matches = self.grep(query.literal, path_glob=query.filters.path_glob,
                            repo_id=query.filters.repo_id,
                            case_sensitive=any(c.isupper() for c in query.literal))
        by_file: dict[str, list[LineMatch]] = {}
        for m in matches:
            by_file.setdefault(m.path, []).append(m)
        # The file named after the string (TRPCError -> TRPCError.ts) usually defines it.
        wanted = name_words(query.literal)
        ranked = sorted(by_file.values(),
                        key=lambda ms: (not wanted or name_words(ms[0].path) != wanted,
                                        -len(ms), ms[0].path))
        ranked = ranked[:limit]
        # a span of two lines either side of the first match, within the file
        texts = self.store.utf8_contents(ms[0].file_id for ms in ranked)
        hits = ResultList(partial=matches.partial)
        for rank, ms in enumerate(ranked):
            first, text = ms[0].line, texts.get(ms[0].file_id, b"")
            last = text.count(b"\n") + (not text.endswith(b"\n"))
            hits.append(Hit(ms[0].path, max(1, first - 2), max(first, min(first + 2, last)),
                            1.0 / (1 + rank), kind="match",
                            lines=[(m.line, m.text) for m in ms[:5]]))
        return hits
