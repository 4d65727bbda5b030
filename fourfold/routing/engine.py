"""One search: classify the question, run the modalities it deserves, fuse their lists."""
from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Callable

from ..collector import collector_paused
from ..errors import ModalityUnavailable, QueryError
from ..model import Hit
from ..query.filters import Filters, apply_filters
from ..query.model import Query, check_limit, check_text
from ..retrievers.base import Retriever
from ..store.snapshot import IndexSnapshot
from ..ranking.fusion import fuse
from ..ranking.granularity import FILE, GRANULARITIES, SPAN, names_used, to_granularity
from ..ranking.learned import LearnedRanking
from ..ranking.priors import apply_priors, question_words
from .intent import (EXACT_MATCH, FIND_REFERENCES, IMPACT_ANALYSIS, INTENTS, TARGETED_INTENTS,
                     UNDERSTAND_CODE, Intent, classify)
from .options import RANKINGS, SearchOptions, SearchResponse
from .profiles import DIRECT_CONFIDENCE, DOMINANT, MODALITIES, PRESETS, PROFILE_K, PROFILES

CANDIDATES_PER_MODALITY = 60
DEEPER_CANDIDATES = 300  # for answers past the first: the same for every limit up to 100
# What one answer is, by intent: who calls X or what breaks is answered by every call site
# and dependent, several to a file; anything else by the best span of each file.
GRANULARITY = {intent: SPAN if intent in (FIND_REFERENCES, IMPACT_ANALYSIS) else FILE
               for intent in INTENTS}
FILTERED_POOL_FACTOR = 4  # candidates asked for when a language or kind filter thins them
NO_FILTERS = Filters()
# The longest issue texts pasted as questions run to about 20,000 characters; a longer query
# only costs time and memory and is refused.
MAX_QUERY_CHARS = 32_000
# modality weights are relative shares: past this, a score could overflow to infinity
MAX_WEIGHT = 1000
# files a pasted text's headline is searched for on its own, for the learned stage
HEADLINE_FILES = 20


def _answer_key(hit: Hit) -> tuple:
    return (hit.repository, hit.path, hit.symbol, hit.start_line, hit.end_line)


def _file_key(hit: Hit) -> tuple:
    return (hit.repository, hit.path)


def check_weights(weights: dict[str, float]) -> None:
    """Weights are numbers from 0 to MAX_WEIGHT, and at least one is above 0."""
    for modality, weight in weights.items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not (
                0 <= weight <= MAX_WEIGHT):
            raise QueryError(f"the weight of {modality} must be a number from 0 to "
                             f"{MAX_WEIGHT:,}, not {weight!r}")
    if not any(weights.values()):
        raise QueryError("every weight is 0: give at least one modality a weight above 0")


def _check_modalities(options: "SearchOptions") -> None:
    """The modalities and weights name known modalities; weights only selected ones."""
    if isinstance(options.modalities, str):
        raise QueryError(f"modalities is a tuple of names, e.g. ({options.modalities!r},)")
    for m in [*(options.modalities or ()), *(options.weights or {})]:
        if m not in MODALITIES:
            raise QueryError(f"unknown modality {m!r}; use {', '.join(MODALITIES)}")
    if options.modalities is not None and options.weights is not None:
        unused = [m for m in options.weights if m not in options.modalities]
        if unused:
            raise QueryError(f"weights name {', '.join(unused)}, which is not among the "
                             f"modalities asked ({', '.join(options.modalities)})")


class SearchEngine:
    def __init__(self, retrievers: dict[str, Retriever], snapshot: Callable[[], IndexSnapshot]):
        """`snapshot()`: the index's current generation, for the filter and ranking stages."""
        self.retrievers = retrievers
        self.snapshot = snapshot
        self.learned = LearnedRanking()
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="fourfold-modality")

    def _run(self, modality: str, query: Query, limit: int, response: SearchResponse
             ) -> list[Hit]:
        retriever = self.retrievers.get(modality)
        if retriever is None:
            response.unavailable[modality] = "not available in this index"
            return []
        started = time.perf_counter()
        try:
            if not retriever.ready():
                response.unavailable[modality] = "still being built"
                return []
            hits = retriever.search(query, limit)
            if getattr(hits, "model", None):  # the semantic modality's SemanticHits
                response.semantic_model = hits.model
            incomplete = retriever.incomplete()
            if incomplete:
                response.unavailable[modality] = incomplete
            if getattr(hits, "partial", False):  # the text modality's ResultList
                response.unavailable[modality] = "partial: the scan stopped at its time budget"
            if query.filters != NO_FILTERS:
                hits = apply_filters(hits, query.filters, self.snapshot())
            return hits
        except ModalityUnavailable as exc:
            response.unavailable[modality] = str(exc)
            return []
        finally:
            response.timings_ms[modality] = (time.perf_counter() - started) * 1000

    def search(self, text: str, options: SearchOptions | None = None) -> SearchResponse:
        options = options or SearchOptions()
        check_text(text, "the question")
        if not text or not text.strip():
            raise QueryError("empty query: ask a question, name a symbol, or quote a string")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # bytes of another encoding, read from a command line
            raise QueryError("the question is not valid UTF-8 text (another encoding?): "
                             "fourfold reads questions as UTF-8") from None
        if len(text) > MAX_QUERY_CHARS:
            raise QueryError(f"query too long: {len(text):,} characters, the limit is "
                             f"{MAX_QUERY_CHARS:,}; quote the lines that matter")
        if options.preset not in PRESETS:
            raise QueryError(f"unknown preset {options.preset!r}; use {', '.join(PRESETS)}")
        if options.granularity not in (None, *GRANULARITIES):
            raise QueryError(f"unknown granularity {options.granularity!r}; use "
                             f"{', '.join(GRANULARITIES)}")
        if options.ranking not in RANKINGS:
            raise QueryError(f"unknown ranking {options.ranking!r}; use {', '.join(RANKINGS)}")
        if options.profile not in PROFILES:
            raise QueryError(f"unknown weight profile {options.profile!r}")
        check_limit(options.limit)
        if options.rrf_k is not None and not (isinstance(options.rrf_k, (int, float))
                                              and 0 <= options.rrf_k < math.inf):
            raise QueryError(f"rrf_k must be a finite number of at least 0, not "
                             f"{options.rrf_k!r}")
        if options.weights is not None:
            check_weights(options.weights)
        _check_modalities(options)
        with collector_paused():  # what a question makes lives until its answer
            return self._answer(text, options)

    def _answer(self, text: str, options: SearchOptions) -> SearchResponse:
        # The first answers come from the same candidates whatever the limit, so that the
        # first 10 of 100 are the 10 asked for alone; more than those give are added after
        # them from deeper lists.
        response = self._search(text, options, CANDIDATES_PER_MODALITY)
        if response.complete or len(response.hits) >= options.limit \
                or options.limit * 3 <= CANDIDATES_PER_MODALITY:
            response.complete = True
            return response
        deeper = self._search(text, options, max(DEEPER_CANDIDATES, options.limit * 3))
        key = _file_key if (options.granularity or GRANULARITY[response.intent]) == FILE \
            else _answer_key
        held = {key(hit) for hit in response.hits}
        more = [hit for hit in deeper.hits if key(hit) not in held][
            :options.limit - len(response.hits)]
        # scored below every first answer, each half the one before, whatever the limit: so
        # they stay after them where answers are merged by score (several repositories)
        floor = min((hit.score for hit in response.hits), default=1.0)
        for place, hit in enumerate(more, 1):
            hit.score = floor * 0.5 ** place
        response.hits += more
        response.timings_ms["total"] += deeper.timings_ms["total"]
        response.complete = True
        return response

    def _search(self, text: str, options: SearchOptions, pool: int) -> SearchResponse:
        """The answers to `text` from lists of `pool` candidates per modality at least."""
        started = time.perf_counter()
        intent = classify(text)
        if options.intent:
            if options.intent not in INTENTS:
                raise QueryError(f"unknown intent {options.intent!r}; use {', '.join(INTENTS)}")
            # The classifier's target where the forced intent takes one (else the whole
            # text); the direct path only where the classifier chose that intent too.
            target = ((intent.target or text.strip()) if options.intent in TARGETED_INTENTS
                      else None)
            intent = Intent(options.intent, 1.0, "forced", target, intent.kind,
                            intent.plain and options.intent == intent.intent)
        preset = PRESETS[options.preset]
        weights = dict(PROFILES[options.profile][intent.intent])
        if options.weights:
            weights = {m: options.weights.get(m, 0.0) for m in weights}
        modalities = list(options.modalities or preset["modalities"])
        if options.modalities is None and options.weights:
            modalities = [m for m, w in weights.items() if w > 0]
        k = next(v for v in (options.rrf_k, PROFILE_K.get(options.profile), preset["k"])
                 if v is not None)
        query = Query(text=text, intent=intent.intent, target=intent.target, kind=intent.kind,
                      literal=intent.target if intent.intent == EXACT_MATCH else None,
                      transitive=intent.intent == IMPACT_ANALYSIS, filters=options.filters())
        response = SearchResponse(text, intent.intent, intent.confidence, intent.rule,
                                  intent.target, "rrf", [], {}, [])
        asked = pool  # for the headline's search, which asks for more itself where filtered
        if query.filters.needs_index_facts:  # retrievers cannot push these down: ask for more
            pool *= FILTERED_POOL_FACTOR

        # Direct path: a confident, plain-shaped question goes to its dominant modality alone.
        dominant = DOMINANT[intent.intent]
        explicit = options.modalities is not None or options.weights is not None
        if (options.direct and not explicit and intent.plain
                and intent.confidence >= DIRECT_CONFIDENCE):
            hits = self._run(dominant, query, pool, response)
            if hits:
                response.fusion_strategy = "direct"
                response.modalities = [dominant]
                response.weights = {dominant: 1.0}
                for rank, hit in enumerate(hits, 1):
                    hit.contributions = {dominant: hit.score}
                    hit.ranks = {dominant: rank}
                response.hits = self._finish(hits, options, query, response)
                response.timings_ms["total"] = (time.perf_counter() - started) * 1000
                return response

        active = [m for m in modalities if weights.get(m, 0.0) > 0]
        if not active and modalities:
            active = modalities[:1]
            weights = {active[0]: 1.0}
        response.modalities = active
        response.weights = {m: weights.get(m, 0.0) for m in active}
        futures = {m: self._pool.submit(self._run, m, query, pool, response) for m in active}
        try:
            headline = self._headline_answers(query, options, asked, response, active)
        finally:  # the modalities waited for, whatever the headline's search raised
            ranked = {m: f.result() for m, f in futures.items()}
        if len(active) == 1:
            response.fusion_strategy = "single"
        fused = fuse(ranked, response.weights, k)
        response.rrf_k = k
        if not fused and intent.intent == EXACT_MATCH and not explicit:
            # The exact string is nowhere: answer with its words rather than nothing.
            fallback = self.search(text, replace(options, intent=UNDERSTAND_CODE))
            fallback.rule = f"{intent.rule}; not found verbatim, searched its words"
            return fallback
        response.hits = self._finish(fused, options, query, response, headline)
        if self.learned.failure and options.ranking == "learned" and query.pasted:
            response.unavailable["learned_ranking"] = self.learned.failure
        response.timings_ms["total"] = (time.perf_counter() - started) * 1000
        return response

    def _headline_answers(self, query: Query, options: SearchOptions, pool: int,
                          response: SearchResponse, modalities: list[str]) -> list[Hit]:
        """Where the learned stage will rank a pasted text with a headline (an issue's
        title) by a model that reads it, the files that headline finds as a question of its
        own, best first: its few words often name what the long text around them blurs.
        Searched while the modalities search the whole text: the deep pass's model embeds
        that text outside the interpreter's lock."""
        if not (query.headline and options.ranking == "learned"
                and self.learned.applies_to(query)
                and self.learned.reads_headline(self._deep_answers(modalities))):
            return []
        answered = self._search(query.headline, replace(
            options, intent=None, ranking="fused", granularity=FILE, limit=HEADLINE_FILES),
            pool)
        response.timings_ms["headline"] = answered.timings_ms["total"]
        return answered.hits

    def _deep_answers(self, modalities: list[str]) -> bool:
        """Whether the deep pass's model answers the semantic modality among these, known
        before it has answered."""
        semantic = self.retrievers.get("semantic")
        try:
            return "semantic" in modalities and semantic is not None and semantic.answers_deep()
        except ModalityUnavailable:  # no model loads: the modality says so as it runs
            return False

    def _deep(self, response: SearchResponse) -> bool:
        """Whether the deep pass's model answered the semantic modality."""
        semantic = self.retrievers.get("semantic")
        return (response.semantic_model is not None and semantic is not None
                and semantic.is_deep_model(response.semantic_model))

    def _finish(self, hits: list[Hit], options: SearchOptions, query: Query,
                response: SearchResponse, headline: list[Hit] = ()) -> list[Hit]:
        snapshot = self.snapshot()
        # a question about code; a named symbol or string is the structural modality's to rank
        named = question_words(query.text) if query.intent == UNDERSTAND_CODE else None
        hits = apply_priors(hits, snapshot.file_flags,
                            snapshot.centrality(hit.path for hit in hits), query.wants_tests,
                            boost=options.boost, wants_prose=query.wants_prose, named=named)
        deep = self._deep(response)
        learned = options.ranking == "learned" and self.learned.applies_to(query)
        if learned:
            hits = self.learned.rerank(hits, query, snapshot, deep=deep, headline=headline)
            learned = self.learned.failure is None
        # Functions are placed by the names a pasted text mentions only where the deep
        # pass's model answered: on the static model's answers, whose first files are less
        # often right, that did worse on held-out repositories (docs/benchmarks.md).
        mentioned = query.mentioned_names if deep else frozenset()
        hits = to_granularity(
            hits, options.granularity or GRANULARITY[query.intent], snapshot.definitions,
            support=not learned, named=query.identifiers, kinds=query.filters.kinds,
            uses_of=(lambda path: names_used(snapshot.definitions(path), snapshot.text(path),
                                             mentioned)) if mentioned else None)[:options.limit]
        if learned:
            self.learned.explain(hits, deep=deep)
        return hits
