"""Weighted Reciprocal Rank Fusion with a graph-importance boost."""
from __future__ import annotations

import math

from ..discovery.flags import DOWNRANKED, PROSE, TEST
from ..model import Hit
from ..tokens import name_match, name_targets, name_words, query_words

BOOST_SCALE = 0.3
BOOST_CAP = 1.5
DOWNRANK_FACTOR = 0.5  # vendor / build / generated / archive / minified
TEST_FACTOR = 0.5  # tests rank below source unless the query asks for tests
PROSE_FACTOR = 0.5  # docs, config and data rank below code unless the query asks for them
# A file whose name a question spells ("field naming policy" -> FieldNamingPolicy.java) gains
# up to this share. Only in questions of at most NAME_BOOST_MAX_WORDS distinct words
# (stopwords aside): a long text (an issue, a stack trace) names files in passing. Both
# values were chosen on the development sets (docs/benchmarks.md).
NAME_BOOST = 0.5
NAME_BOOST_MAX_WORDS = 12


def rrf_contribution(weight: float, rank: int, k: float) -> float:
    """weight × 1 / (k + rank + 1), rank 0-based."""
    return weight / (k + rank + 1)


def centrality_boost(centrality: float) -> float:
    """min(1 + 0.3 ln(1 + c), 1.5); c is PageRank relative to the uniform share (mean 1)."""
    return min(1.0 + BOOST_SCALE * math.log1p(max(centrality, 0.0)), BOOST_CAP)


def hit_key(hit: Hit) -> tuple:
    """Hits from different modalities name the same code by symbol, else by start line."""
    return (hit.repo, hit.path, hit.symbol) if hit.symbol else (hit.repo, hit.path, hit.start_line)


def fuse(ranked: dict[str, list[Hit]], weights: dict[str, float], k: float) -> list[Hit]:
    """Merge per-modality lists; a hit's score is the sum of its weighted reciprocal ranks.

    Hits are merged per span (symbol or start line), not per file: one vote per file and
    modality ranks worse (docs/benchmarks.md).
    """
    merged: dict[tuple, Hit] = {}
    for modality, hits in ranked.items():
        weight = weights.get(modality, 0.0)
        if weight <= 0:
            continue
        seen: set[tuple] = set()
        rank = 0
        for hit in hits:
            key = hit_key(hit)
            if key in seen:
                continue
            seen.add(key)
            share = rrf_contribution(weight, rank, k)
            rank += 1
            fused = merged.get(key)
            if fused is None:
                fused = Hit(hit.path, hit.start_line, hit.end_line, 0.0, symbol=hit.symbol,
                            kind=hit.kind, lines=list(hit.lines), repo=hit.repo)
                merged[key] = fused
            elif share > max(fused.contributions.values()):
                # the span the strongest vote points at: the whole definition from the
                # structural modality rather than one piece of it that text matched
                fused.start_line, fused.end_line, fused.kind = hit.start_line, hit.end_line, \
                    hit.kind
                fused.lines = list(hit.lines)  # shown lines stay inside the span
            elif not fused.lines and hit.lines:
                fused.lines = list(hit.lines)
            fused.contributions[modality] = share
            fused.ranks[modality] = rank
            fused.score += share
    return sorted(merged.values(), key=lambda h: -h.score)


def question_words(text: str) -> frozenset[str]:
    """What a file name is matched against (name_targets): the words of a question, nothing
    for a long text."""
    words = query_words(text)
    return name_targets(words) if len(words) <= NAME_BOOST_MAX_WORDS else frozenset()


def apply_priors(hits: list[Hit], file_flags: dict[tuple, int], centrality: dict[tuple, float],
                 wants_tests: bool, boost: bool = True, wants_prose: bool = False,
                 named: frozenset[str] | None = None) -> list[Hit]:
    """Centrality boost and the boost of files whose name the question spells (`named`:
    question_words), then down-rank vendor/build/generated/archive paths, tests, and files in
    no programming language (docs, config, data)."""
    for hit in hits:
        key = (hit.repo, hit.path)
        factors = {}
        if boost:
            c = centrality.get((hit.repo, hit.path, hit.symbol)) if hit.symbol else None
            factors["centrality"] = centrality_boost(c if c is not None
                                                     else centrality.get(key, 0.0))
        if named:
            factors["file_name"] = 1.0 + NAME_BOOST * name_match(name_words(hit.path), named)
        flags = file_flags.get(key, 0)
        if flags & DOWNRANKED:
            factors["vendor"] = DOWNRANK_FACTOR
        if flags & TEST and not wants_tests:
            factors["test"] = TEST_FACTOR
        if flags & PROSE and not wants_prose:
            factors["prose"] = PROSE_FACTOR
        hit.factors = {name: f for name, f in factors.items() if f != 1.0}
        factor = math.prod(hit.factors.values())
        hit.score *= factor
        if factor != 1.0:
            hit.contributions = {m: v * factor for m, v in hit.contributions.items()}
    return sorted(hits, key=lambda h: -h.score)


FILE_SUPPORT = 0.25  # chosen on the development sets (docs/benchmarks.md)


def with_file_support(hits: list[Hit], share: float = FILE_SUPPORT) -> list[Hit]:
    """Each file's best hit gains a share of the scores of the file's other hits: a file
    that several modalities and several of its chunks point at is more likely the answer
    than one lucky chunk elsewhere. Returns every hit, re-sorted; `best_per_file` then
    keeps one per file."""
    rest: dict[tuple, float] = {}
    best: dict[tuple, Hit] = {}
    for hit in hits:
        key = (hit.repo, hit.path)
        if key in best:
            rest[key] = rest.get(key, 0.0) + hit.score
        else:
            best[key] = hit
    for key, extra in rest.items():
        best[key].file_support = share * extra
        best[key].score += share * extra
    return sorted(hits, key=lambda h: -h.score)


def best_per_file(hits: list[Hit]) -> list[Hit]:
    seen: set[tuple] = set()
    out = []
    for hit in hits:
        key = (hit.repo, hit.path)
        if key not in seen:
            seen.add(key)
            out.append(hit)
    return out
