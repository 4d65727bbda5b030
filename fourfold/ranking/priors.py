"""The ranking stage: priors applied once to the fused hits of every modality (centrality,
a file named by the question, vendored / test / prose files below first-party source); and
the same priors ordering a list of definitions. What one answer is (a file, a span, a
function) is granularity.py's."""
from __future__ import annotations

import math

from ..discovery.flags import DOWNRANKED, PROSE, TEST
from ..model import Hit
from ..query.model import QUESTION_MAX_WORDS
from ..tokens import name_match, name_targets, name_words, query_words

BOOST_SCALE = 0.3
BOOST_CAP = 1.5
# The share of its score a file keeps for what it is; each chosen by leaving repositories
# out (docs/benchmarks.md).
DOWNRANK_FACTOR = 0.5  # vendor / build / generated / archive / minified
TEST_FACTOR = 0.25  # tests, unless the query asks for them
PROSE_FACTOR = 0.25  # docs, config and data, unless the query asks for them
# A file whose name a question spells ("field naming policy" -> FieldNamingPolicy.java) gains
# up to this share; a pasted text (query.model.QUESTION_MAX_WORDS) names files in passing.
# Chosen by leaving repositories out (docs/benchmarks.md).
NAME_BOOST = 0.5


def centrality_boost(centrality: float) -> float:
    """min(1 + 0.3 ln(1 + c), 1.5); c is PageRank relative to the uniform share (mean 1)."""
    return min(1.0 + BOOST_SCALE * math.log1p(max(centrality, 0.0)), BOOST_CAP)


def flag_factors(flags: int, wants_tests: bool, wants_prose: bool) -> dict[str, float]:
    """The share a file keeps for what it is, by prior: vendored or generated code, tests
    unless the question asks for them, prose unless it asks for docs or configuration."""
    factors = {}
    if flags & DOWNRANKED:
        factors["vendor"] = DOWNRANK_FACTOR
    if flags & TEST and not wants_tests:
        factors["test"] = TEST_FACTOR
    if flags & PROSE and not wants_prose:
        factors["prose"] = PROSE_FACTOR
    return factors


def rank_definitions(found: list) -> list:
    """(symbol, tier) pairs as a definition lookup answers them: by match tier, then the
    repository's own source, its tests, vendored or generated code; the retriever's order
    breaking ties."""
    return sorted(found, key=lambda st: (st[1], bool(st[0].flags & DOWNRANKED),
                                         bool(st[0].flags & TEST)))


def question_words(text: str) -> frozenset[str]:
    """What a file name is matched against (name_targets): the words of a question, nothing
    for a long text."""
    words = query_words(text)
    return name_targets(words) if len(words) <= QUESTION_MAX_WORDS else frozenset()


def apply_priors(hits: list[Hit], file_flags: dict[str, int], centrality: dict, 
                 wants_tests: bool, boost: bool = True, wants_prose: bool = False,
                 named: frozenset[str] | None = None) -> list[Hit]:
    """Centrality boost and the boost of files whose name the question spells (`named`:
    question_words), then down-rank vendor/build/generated/archive paths, tests, and files in
    no programming language (docs, config, data)."""
    for hit in hits:
        factors = {}
        if boost:
            c = centrality.get((hit.path, hit.symbol)) if hit.symbol else None
            factors["centrality"] = centrality_boost(c if c is not None
                                                     else centrality.get(hit.path, 0.0))
        if named:
            factors["file_name"] = 1.0 + NAME_BOOST * name_match(name_words(hit.path), named)
        factors.update(flag_factors(file_flags.get(hit.path, 0), wants_tests, wants_prose))
        hit.factors = {name: f for name, f in factors.items() if f != 1.0}
        factor = math.prod(hit.factors.values())
        hit.score *= factor
        if factor != 1.0:
            hit.contributions = {m: v * factor for m, v in hit.contributions.items()}
    return sorted(hits, key=lambda h: -h.score)
