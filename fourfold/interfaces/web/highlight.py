"""Code as HTML, highlighted on the server by Pygments, one string per source line.

Pygments escapes what it shows and closes its spans at every line end (a token spanning
lines, such as a docstring, is split), so each line's HTML stands alone and can sit in its
own table row with its own anchor.
"""
import re
from functools import lru_cache

from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_by_name, get_lexer_for_filename
from pygments.util import ClassNotFound

# beyond these a file is shown escaped but plain: highlighting costs a request seconds of
# CPU on a large or minified file, and it gains nothing on such text
MAX_HIGHLIGHTED_LINES = 20_000
MAX_HIGHLIGHTED_CHARS = 256_000
MAX_HIGHLIGHTED_LINE = 2_000
CARRIAGE_RETURN = "\u240d"  # a lone CR inside a line, shown: to a lexer it would end the line
LEXER_OPTIONS = {"stripnl": False, "stripall": False, "ensurenl": True}
FORMATTER = HtmlFormatter(nowrap=True)


@lru_cache(maxsize=64)
def _lexer(language: str | None, suffix: str) -> Lexer:
    """The lexer for an indexed file: by fourfold's language name, else by the file name's
    suffix, else plain text. PHP code is often a fragment without its `<?php` opener."""
    extra = {"startinline": True} if language == "php" else {}
    for find, key in ((get_lexer_by_name, language), (get_lexer_for_filename, "x" + suffix)):
        if key:
            try:
                return find(key, **LEXER_OPTIONS, **extra)
            except ClassNotFound:
                continue
    return TextLexer(**LEXER_OPTIONS)


def highlighted_lines(lines: list[str], language: str | None, path: str) -> list[Markup]:
    """The HTML of each line (as many as given), highlighted as `language` (or by `path`)."""
    if not lines:
        return []
    lines = [line.replace("\r", CARRIAGE_RETURN) for line in lines]
    if len(lines) > MAX_HIGHLIGHTED_LINES or sum(map(len, lines)) > MAX_HIGHLIGHTED_CHARS \
            or max(map(len, lines)) > MAX_HIGHLIGHTED_LINE:
        return [escape(line) for line in lines]
    name = path.rsplit("/", 1)[-1]
    suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
    html = highlight("\n".join(lines), _lexer(language, suffix), FORMATTER).split("\n")
    html += [""] * (len(lines) - len(html))
    return [Markup(part) for part in html[:len(lines)]]


def style_sheet() -> str:
    """The CSS of the highlighting's token classes (light theme)."""
    return FORMATTER.get_style_defs(".code")


_TAG = re.compile(r"(<[^>]*>)")
# question words that are no code: not marked in snippets
UNMARKED = frozenset("""a an and are as at be by can do does for from how in into is it of on
or the that this to what when where which who why with calls called defined used uses work
works handled""".split())
_WORD = re.compile(r"[A-Za-z_$][\w$]*")


MARKED_WORDS = 20  # a pasted text's thousands of words would make marking take seconds


def question_words(question: str) -> list[str]:
    """The words of a question worth marking in code: names and words of 3+ letters that
    are not question words, the MARKED_WORDS longest, longest first."""
    words = {w for w in _WORD.findall(question) if len(w) >= 3 and w.lower() not in UNMARKED}
    return sorted(words, key=lambda w: (-len(w), w))[:MARKED_WORDS]


def marked(html: Markup, words: list[str]) -> Markup:
    """Highlighted HTML with each of `words` (any case) wrapped in <mark>, in text only:
    never inside a tag, an attribute or a character reference."""
    if not words:
        return html
    pattern = re.compile(r"&[#\w]+;|(" + "|".join(re.escape(str(escape(w))) for w in words)
                         + ")", re.IGNORECASE)
    parts = _TAG.split(str(html))
    for i in range(0, len(parts), 2):  # even places hold text, odd ones tags
        parts[i] = pattern.sub(lambda m: f"<mark>{m.group(1)}</mark>" if m.group(1)
                               else m.group(0), parts[i])
    return Markup("".join(parts))

