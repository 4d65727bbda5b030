"""Weighted Reciprocal Rank Fusion: one ranked list from the lists of several modalities."""
from __future__ import annotations

from ..model import Hit


def rrf_contribution(weight: float, rank: int, k: float) -> float:
    """weight × 1 / (k + rank + 1), rank 0-based."""
    return weight / (k + rank + 1)


def hit_key(hit: Hit) -> tuple:
    """Hits from different modalities name the same code by symbol, else by start line."""
    return (hit.path, hit.symbol) if hit.symbol else (hit.path, hit.start_line)


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
                            kind=hit.kind, lines=list(hit.lines))
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
