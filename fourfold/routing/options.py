"""What a caller asks of a search (SearchOptions) and what it gets back (SearchResponse):
the engine's request and answer, apart from the engine, so that an interface or an index
run reads them without loading the retrievers and ranking stages."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..model import Hit
from ..query.filters import Filters

RANKINGS = ("learned", "fused")


@dataclass
class SearchResponse:
    query: str
    intent: str
    confidence: float
    rule: str
    target: str | None
    fusion_strategy: str  # "direct", "rrf" or "single"
    modalities: list[str]
    weights: dict[str, float]
    hits: list[Hit]
    unavailable: dict[str, str] = field(default_factory=dict)  # modality -> why it did not answer
    timings_ms: dict[str, float] = field(default_factory=dict)
    rrf_k: float | None = None  # the k of the fusion (None on the direct path)
    repositories_searched: list[str] = field(default_factory=list)  # when several were asked
    repositories_skipped: list[str] = field(default_factory=list)
    repositories_unavailable: dict[str, str] = field(default_factory=dict)  # name -> why
    semantic_model: str | None = None  # the model the semantic modality answered with
    # every answer asked for is in (SearchEngine.search; an exact string's fallback is so)
    complete: bool = field(default=False, repr=False)

    def to_dict(self) -> dict:
        return {
            "query": self.query, "intent": self.intent, "confidence": self.confidence,
            "rule": self.rule, "target": self.target, "fusion_strategy": self.fusion_strategy,
            "modalities": self.modalities, "weights": self.weights, "rrf_k": self.rrf_k,
            "unavailable": self.unavailable,
            **({"semantic_model": self.semantic_model} if self.semantic_model else {}),
            **({"repositories_searched": self.repositories_searched,
                "repositories_skipped": self.repositories_skipped}
               if self.repositories_searched else {}),
            **({"repositories_unavailable": self.repositories_unavailable}
               if self.repositories_unavailable else {}),
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
            "results": [h.to_dict() for h in self.hits],
        }


@dataclass
class SearchOptions:
    preset: str = "default"
    modalities: tuple[str, ...] | None = None
    weights: dict[str, float] | None = None
    intent: str | None = None
    rrf_k: float | None = None
    profile: str = "tuned"
    limit: int = 10
    granularity: str | None = None  # file, span or function; None: by intent (GRANULARITY)
    ranking: str = "learned"  # "fused": fusion and priors only, no learned ranking stage
    direct: bool = True
    boost: bool = True
    languages: tuple[str, ...] = ()  # only files in these languages ("typescript", "py" ...)
    kinds: tuple[str, ...] = ()  # only code in definitions of these kinds ("class", "method")
    exclude_tests: bool = False  # leave test files out (else they rank below source)
    path_glob: str | None = None
    repo_id: int | None = None

    def filters(self) -> Filters:
        """The filters these options ask for, checked (unknown values are an error)."""
        return Filters.of(self.repo_id, self.path_glob, self.languages, self.kinds,
                          self.exclude_tests)
