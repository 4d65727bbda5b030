"""Intent classification: ordered rules, first match wins. Costs microseconds."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..query.model import MAX_PATTERN_CHARS

FIND_DEFINITION = "find_definition"
FIND_REFERENCES = "find_references"
UNDERSTAND_CODE = "understand_code"
FIND_SIMILAR = "find_similar"
IMPACT_ANALYSIS = "impact_analysis"
EXACT_MATCH = "exact_match"
INTENTS = (FIND_DEFINITION, FIND_REFERENCES, UNDERSTAND_CODE, FIND_SIMILAR, IMPACT_ANALYSIS,
           EXACT_MATCH)
# the intents that ask about one thing: an identifier, a quoted string, a file
TARGETED_INTENTS = frozenset({FIND_DEFINITION, FIND_REFERENCES, IMPACT_ANALYSIS, EXACT_MATCH})


@dataclass(frozen=True)
class Intent:
    intent: str
    confidence: float
    rule: str
    target: str | None = None  # identifier, quoted string, or the X of "who calls X"
    kind: str | None = None  # definition kind asked for ("class", "function", ...)
    plain: bool = False  # the query is nothing but the pattern: the direct path may answer it

    def to_dict(self) -> dict:
        return {"intent": self.intent, "confidence": self.confidence, "rule": self.rule,
                "target": self.target}


_IDENT = r"[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*"
DEFINITION_KEYWORDS = {
    "def": "function", "class": "class", "func": "function", "fn": "function",
    "function": "function", "import": "import", "interface": "interface", "struct": "struct",
    "type": "type", "trait": "trait", "enum": "enum", "module": "module", "impl": "impl",
    "protocol": "interface", "object": "class", "record": "class", "namespace": "namespace",
    "method": "method", "const": "constant", "defmodule": "module", "defp": "function",
    "macro": "macro", "typedef": "type",
}
_KEYWORD_FORM = re.compile(
    rf"^\s*({'|'.join(sorted(DEFINITION_KEYWORDS, key=len, reverse=True))})\s+`?({_IDENT})`?"
    r"\s*(?:(\(.*\))\s*)?(?:[:{]\s*)?$")  # not "\s*(...)?\s*[:{]?\s*$": cubic on spaces
_DEFINITION_PHRASE = re.compile(
    rf"^\s*where\s+(?:is|are)\s+(?:the\s+)?(?:(?:class|function|method|type|struct|"
    rf"interface|constant|variable)\s+)?`?({_IDENT})`?\s+(?:defined|declared|implemented)\s*$|"
    rf"^\s*(?:the\s+)?(?:definition|declaration)\s+of\s+`?({_IDENT})`?\s*$",
    re.IGNORECASE)
_REFERENCES = re.compile(
    rf"^\s*(?:who|what)\s+(?:calls|uses|invokes|references|imports)\s+`?({_IDENT})`?|"
    rf"^\s*(?:callers|usages|uses|references|call\s+sites|importers)\s+(?:of|to)\s+`?({_IDENT})`?|"
    rf"^\s*where\s+(?:is|are)\s+`?({_IDENT})`?\s+(?:used|called|referenced|imported)|"
    rf"^\s*find\s+(?:all\s+)?(?:usages|references|callers)\s+(?:of|to)\s+`?({_IDENT})`?",
    re.IGNORECASE)
_IMPACT = re.compile(r"\b(impact|blast\s+radius|what\s+depends\s+on|depends\s+on|"
                     r"what\s+(?:would\s+)?breaks?\s+if|dependents\s+of|affected\s+by)\b",
                     re.IGNORECASE)
_QUOTED = re.compile(r"\"([^\"]+)\"|'([^']{2,})'|`([^`]+)`")
_ERROR_TOKEN = re.compile(
    r"\b(Traceback|[A-Z]\w*(?:Error|Exception|Panic|Fault)|E[A-Z]{3,}|[A-Z][A-Z0-9]*_[A-Z0-9_]+)\b")
# camelCase / PascalCase / Capitalised identifiers, in linear time: the first and last
# alternatives stop at the first lower-upper pair and the first lower-case letter, where the
# plain "[A-Za-z_$]*[a-z][A-Z]\w*" and "[A-Z]\w*[a-z]\w*" backtrack quadratically on a long
# word that fails at its end.
_CAMEL = re.compile(r"^(?:[A-Za-z_$]*\$)?(?:[A-Z_]|[a-z](?![A-Z]))*[a-z][A-Z]\w*$"
                    r"|^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$|^[A-Z][^\Wa-z]*[a-z]\w*$")
_SNAKE = re.compile(r"^_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*$")
_DOTTED = re.compile(rf"^{_IDENT}$")
_PLAIN_WORD = re.compile(r"^[A-Za-z_$][\w$]*$")
_UNDERSTAND = re.compile(r"^\s*(how|why|explain|what\s+is|what\s+does|describe)\b|"
                         r"\b(architecture|overview|design|flow|works?|handled|handling)\b",
                         re.IGNORECASE)
_SIMILAR_WORDS = re.compile(r"\b(similar\s+to|like\s+this|same\s+as|looks\s+like)\b",
                            re.IGNORECASE)
SHORT_QUERY_WORDS = 12
MIN_QUOTED_CHARS = 3  # a trigram: what the text index can look up
_CODE_PUNCT = re.compile(r"[(){};=<>\[\]]|=>|->|::")


def _looks_like_code(query: str) -> bool:
    if "\n" in query.strip() and len(_CODE_PUNCT.findall(query)) >= 2:
        return True
    return len(_CODE_PUNCT.findall(query)) >= 4 and not _UNDERSTAND.search(query)


def _last_identifier(text: str) -> str | None:
    candidates = [w for w in re.findall(_IDENT, text)
                  if _CAMEL.match(w) or _SNAKE.match(w) or "." in w or "::" in w]
    return candidates[-1] if candidates else None


def classify(query: str) -> Intent:
    """Put a query into one of six intents with a confidence; first matching rule wins."""
    intent = _first_rule(query)
    if intent.target is not None and len(intent.target) > MAX_PATTERN_CHARS:
        # longer than any name, and than grep takes: pasted data, searched by its words
        return Intent(UNDERSTAND_CODE, 0.40, "fallback", None)
    return intent


def _quoted(q: str) -> tuple[str, bool] | None:
    """The first string the question quotes that names something to look for, and whether
    it is the whole question: one shorter than a trigram ("br", "Z" in an issue's title)
    only where it is, as no index holds it and it is part of most lines."""
    for match in _QUOTED.finditer(q):
        literal, whole = next(g for g in match.groups() if g), match.group(0) == q
        if whole or len(literal) >= MIN_QUOTED_CHARS:
            return literal, whole
    return None


def _first_rule(query: str) -> Intent:
    q = query.strip().strip("?").strip()
    match = _KEYWORD_FORM.match(q)
    if match:
        return Intent(FIND_DEFINITION, 0.95, "definition keyword", match.group(2),
                      kind=DEFINITION_KEYWORDS[match.group(1)], plain=True)
    match = _DEFINITION_PHRASE.match(q)
    if match:
        return Intent(FIND_DEFINITION, 0.90, "definition phrase",
                      next(g for g in match.groups() if g), plain=True)
    match = _REFERENCES.match(q)
    if match:
        target = next(g for g in match.groups() if g)
        plain = match.end() >= len(q.rstrip("`").rstrip())
        return Intent(FIND_REFERENCES, 0.90, "references phrase", target, plain=plain)
    short = len(q.split()) <= SHORT_QUERY_WORDS  # a pasted issue quotes strings incidentally
    if _IMPACT.search(q) and (short or "\n" not in q):  # a pasted text says "depends on" in passing
        rest = _IMPACT.split(q)[-1]
        target = _last_identifier(rest) or _last_identifier(q)
        if target is None:
            words = re.findall(_IDENT, rest)
            target = words[-1] if words else None
        return Intent(IMPACT_ANALYSIS, 0.90, "impact phrase", target, plain=target is not None)
    quoted = _quoted(q) if short else None
    if quoted:
        literal, whole = quoted
        return Intent(EXACT_MATCH, 0.90, "quoted string", literal, plain=whole)
    match = _ERROR_TOKEN.search(q) if short else None
    if match and not _UNDERSTAND.match(q):
        return Intent(EXACT_MATCH, 0.85, "error token", match.group(1), plain=match.group(0) == q)
    if _CAMEL.match(q) or _SNAKE.match(q):
        return Intent(FIND_DEFINITION, 0.80, "identifier", q)
    if _DOTTED.match(q) and any(sep in q for sep in (".", "::", "#", "->")):
        return Intent(FIND_DEFINITION, 0.70, "dotted identifier", q)
    if _PLAIN_WORD.match(q):
        return Intent(FIND_DEFINITION, 0.60, "single word", q)
    if _SIMILAR_WORDS.search(q) or _looks_like_code(query):
        return Intent(FIND_SIMILAR, 0.70, "code snippet or 'similar to'", None)
    if _UNDERSTAND.search(q):
        return Intent(UNDERSTAND_CODE, 0.75, "question word", None)
    return Intent(UNDERSTAND_CODE, 0.40, "fallback", None)
