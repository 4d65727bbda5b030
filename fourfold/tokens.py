"""Identifier-aware tokens for BM25: `parseConfigFile`, `parse_config_file`,
`parse-config-file` and `config.parse_file` all yield their sub-words, and identifiers are
also kept whole so an exact identifier still scores highest."""
from __future__ import annotations

import itertools
import re
from functools import lru_cache

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_SUBWORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

STOPWORDS = frozenset("""
a an and are as at be by can do does did for from how i in into is it its me my of on or
our so that the their them then there these this those to was we were what when where which
who whom why will with you your should would could code find show get use used using
""".split())


@lru_cache(maxsize=65_536)
def identifier_tokens(word: str) -> tuple[str, ...]:
    """Lower-cased sub-words of an identifier, plus the whole identifier when it has parts."""
    parts = [p.lower() for p in _SUBWORD.findall(word)]
    whole = word.lower().strip("_")
    if whole and (len(parts) != 1 or parts[0] != whole):
        parts.append(whole)
    return tuple(parts)


def sub_words(word: str) -> tuple[str, ...]:
    """Lower-cased sub-words of an identifier, without the whole: 'parseConfig' -> (parse,
    config), 'json' -> (json,)."""
    parts = identifier_tokens(word)
    return parts[:-1] if len(parts) > 1 else parts


def tokens(text: str) -> list[str]:
    out: list[str] = []
    for word in _WORD.findall(text):
        out.extend(identifier_tokens(word))
    return out


# Runs of the characters _WORD's words are made of: every other byte (a non-ASCII character
# comes as "?") becomes a space, so that bytes.split() cuts the text where _WORD would.
_WORD_RUNS = bytes(c if chr(c).isascii() and (chr(c).isalnum() or c == ord("_")) else 32
                   for c in range(256))
_RUN_TOKENS: dict[bytes, str] = {}  # a run -> its tokens, space-separated
RUN_TOKENS_MAX = 200_000  # runs remembered by one process (tens of MB)


# _SUBWORD's pieces, and the ends of lines (runs learned together are one per line)
_SUBWORD_OR_END = re.compile(_SUBWORD.pattern + r"|\n")


def token_text(text: str) -> str:
    """The text as the space-separated tokens that the BM25 index stores: " ".join(
    tokens(text)). See token_texts, which this is when a run is not known yet."""
    runs = text.encode("ascii", "replace").translate(_WORD_RUNS).split()
    try:
        return _without_empty_runs(" ".join(map(_RUN_TOKENS.__getitem__, runs)))
    except KeyError:
        return token_texts([text])[0]


def token_texts(texts: list[str]) -> list[str]:
    """Each text's token_text, cut by C calls, each run's tokens remembered and the runs not
    seen before learned together (indexing reads every chunk; a large repository holds
    millions of distinct runs: register names, hex constants).

    The index keeps no copy of them (contentless FTS5): a delete hands the same tokens back,
    rebuilt from the stored file text. Changing this function or `chunk_body` therefore
    needs a new store schema version, so that old indexes are rebuilt."""
    runs = [text.encode("ascii", "replace").translate(_WORD_RUNS).split() for text in texts]
    known = _RUN_TOKENS
    new = set(itertools.chain.from_iterable(runs)).difference(known)
    if new:
        if len(known) + len(new) > RUN_TOKENS_MAX:
            known.clear()
            new = set(itertools.chain.from_iterable(runs))
        _learn_runs(list(new))
    tokens_of = known.__getitem__
    return [_without_empty_runs(" ".join(map(tokens_of, text_runs))) for text_runs in runs]


def _without_empty_runs(joined: str) -> str:
    """A run of underscores alone has no tokens and leaves two spaces, or one at an end: rare,
    so looked for after joining rather than filtered out of every run."""
    if "  " in joined or joined[:1] == " " or joined[-1:] == " ":
        return " ".join(joined.split())
    return joined


def _learn_runs(runs: list[bytes]) -> None:
    """What tokens() makes of each run, for all of them at once. _WORD reads a run as its
    leading digits (a word) and then an identifier, whose sub-words are followed by the
    whole identifier when it has several."""
    text = b"\n".join(runs).decode("ascii")
    pieces = " ".join(_SUBWORD_OR_END.findall(text)).lower().split("\n")
    known = _RUN_TOKENS
    for run, split, whole in zip(runs, pieces, text.lower().split("\n")):
        split = split.strip()
        identifier = whole.lstrip("0123456789")
        if split.count(" ") > (len(identifier) < len(whole)):  # several sub-words
            split += " " + identifier.strip("_")
        known[run] = split


def chunk_body(lines: list[str], start_line: int, end_line: int) -> str:
    """The text of a chunk (1-based inclusive lines of ``text.split("\n")``)."""
    return "\n".join(lines[start_line - 1:end_line])


# A long text (a pasted issue) is ranked by its first MAX_QUERY_TERMS distinct terms: names
# are looked up with an OR of one condition per term, and SQLite refuses an expression nested
# deeper than 1000.
MAX_QUERY_TERMS = 800


def query_terms(query: str) -> list[str]:
    """Distinct query tokens without stopwords (all of them if every word is a stopword), at
    most MAX_QUERY_TERMS."""
    terms = list(dict.fromkeys(tokens(query)))
    kept = [t for t in terms if t not in STOPWORDS and len(t) > 1]
    return (kept or terms)[:MAX_QUERY_TERMS]


def query_words(query: str) -> set[str]:
    """The query's terms in crude singular, as names are matched against them."""
    return {singular(t) for t in query_terms(query)}


def file_stem(path: str) -> str:
    """A file's name without any extension: 'src/JsonArray.java' -> 'JsonArray',
    'types.d.ts' -> 'types'."""
    return path.rsplit("/", 1)[-1].split(".", 1)[0]


# A folder's index file is imported by the folder's name (`extract/mod.rs` is `extract`).
MODULE_INDEX_STEMS = frozenset({"mod", "index", "__init__", "init"})


def module_stem(path: str) -> str:
    """The name a file is used by: its stem ('src/JsonArray.java' -> 'JsonArray'), or the
    folder's name for a folder's index file, any file whose stem is mod, index, __init__ or
    init ('axum/src/extract/mod.rs' -> 'extract', 'pkg/__init__.py' -> 'pkg',
    'docs/guide/index.md' -> 'guide'); one at the indexed root keeps its own name."""
    stem = file_stem(path)
    if stem in MODULE_INDEX_STEMS and "/" in path:
        return path.rsplit("/", 2)[-2]
    return stem


def singular(word: str) -> str:
    """A crude singular for matching words ("routes" ~ "route"); short words stay."""
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


# A name word this long also matches the query words it begins ("config" ~ "configuration",
# "lock" ~ "lockfile", "util" ~ "utility"); chosen on the development sets.
NAME_PREFIX_MIN = 4
# File-name words are shorter; prefixes of every length of a long query word would take
# memory quadratic in its length (a 100 KB word: gigabytes).
NAME_PREFIX_MAX = 64
STEM_PARTIAL = 0.5  # share of a name match per matched word when the name is only partly named


@lru_cache(maxsize=200_000)
def name_words(path: str) -> tuple[str, ...]:
    """The words of a file's name without extension: 'src/JsonArray.java' -> (json, array)."""
    return stem_words(module_stem(path))


def stem_words(stem: str) -> tuple[str, ...]:
    """name_words of a file whose module_stem is `stem`."""
    return tuple(dict.fromkeys(singular(w) for w in sub_words(stem) if w))


def name_targets(query_words: set[str]) -> frozenset[str]:
    """What a file-name word may equal to match a query: the query's words and their
    prefixes of NAME_PREFIX_MIN to NAME_PREFIX_MAX letters (built once per query, so each
    file costs set lookups only)."""
    return frozenset(q[:i] for q in query_words
                     for i in range(min(NAME_PREFIX_MIN, len(q)),
                                    min(len(q), NAME_PREFIX_MAX) + 1)) | query_words


def name_match(words: tuple[str, ...], targets: frozenset[str]) -> float:
    """1.0 when the query names every word of the file name (`targets`: name_targets of the
    query's words); a partial share otherwise."""
    if not words:
        return 0.0
    matched = sum(1 for w in words if w in targets)
    if matched == len(words):
        return 1.0
    if len(words) > 1 and matched:
        return STEM_PARTIAL * matched / len(words)
    return 0.0


def normalise_name(name: str) -> str:
    """A name without case or separators: parse_config, parseConfig and ParseConfig agree."""
    return re.sub(r"[_\-$]", "", name.lower())
