"""Weight profiles per intent and the search presets."""
from __future__ import annotations

from .intent import (EXACT_MATCH, FIND_DEFINITION, FIND_REFERENCES, FIND_SIMILAR,
                     IMPACT_ANALYSIS, UNDERSTAND_CODE)

MODALITIES = ("semantic", "text", "structural", "graph")

# The hand-set "seed" profile: the default until a measured profile beats it on held-out data.
SEED = {
    FIND_DEFINITION: {"semantic": 0.2, "text": 0.1, "structural": 0.6, "graph": 0.1},
    FIND_REFERENCES: {"semantic": 0.1, "text": 0.2, "structural": 0.2, "graph": 0.5},
    UNDERSTAND_CODE: {"semantic": 0.5, "text": 0.2, "structural": 0.2, "graph": 0.1},
    FIND_SIMILAR: {"semantic": 0.4, "text": 0.3, "structural": 0.2, "graph": 0.1},
    IMPACT_ANALYSIS: {"semantic": 0.1, "text": 0.1, "structural": 0.1, "graph": 0.7},
    EXACT_MATCH: {"semantic": 0.0, "text": 0.9, "structural": 0.1, "graph": 0.0},
}
# Chosen on the development sets (bench/eval.py; figures in docs/benchmarks.md).
# find_definition: structural 0.8 lets the exact definition keep its rank against text and
# semantic votes for other chunks.
TUNED = {intent: dict(weights) for intent, weights in SEED.items()}
TUNED[UNDERSTAND_CODE] = {"semantic": 0.3, "text": 0.4, "structural": 0.3, "graph": 0.1}
TUNED[FIND_DEFINITION] = {"semantic": 0.1, "text": 0.1, "structural": 0.8, "graph": 0.1}
# find_similar: issue texts with pasted code land here, where their words count most.
TUNED[FIND_SIMILAR] = {"semantic": 0.3, "text": 0.5, "structural": 0.2, "graph": 0.1}
PROFILES = {"seed": SEED, "tuned": TUNED}
# RRF k per profile (None: the preset's k): a small k lets each modality's first answers
# decide more.
PROFILE_K = {"seed": None, "tuned": 5}

PRESETS = {
    "quick": {"modalities": ("semantic",), "k": 40},
    "default": {"modalities": ("semantic", "text", "structural"), "k": 40},
    "thorough": {"modalities": MODALITIES, "k": 60},
}

DOMINANT = {intent: max(weights, key=weights.get) for intent, weights in SEED.items()}
DIRECT_CONFIDENCE = 0.85


def parse_weights(spec: str) -> dict[str, float]:
    """'semantic=0.5,text=0.3' -> {'semantic': 0.5, 'text': 0.3}."""
    from ..errors import QueryError

    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in MODALITIES:
            raise QueryError(f"unknown modality {name!r} in weights; use {', '.join(MODALITIES)}")
        try:
            out[name] = float(value)
        except ValueError:
            raise QueryError(f"weight for {name} must be a number, got {value!r}") from None
    return out
