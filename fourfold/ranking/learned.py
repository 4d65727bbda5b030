"""The learned ranking stage: a LightGBM lambdarank model, trained on the development and
training sets (bench/learn_ranking.py), re-orders the fused spans of every modality from
what each modality said of them, what the index knows of them, and where a pasted text's
headline (Query.headline), searched as a question of its own, found their files.

It ranks pasted texts (issues, tracebacks) only: there it lifts the held-out folds, while
for short questions the fused order did better on held-out repositories than any model
tried (docs/benchmarks.md). Fusion with priors stays the first stage and the fallback:
without the model file, for a short question, or for a named definition or a who-calls,
the fused order stands."""
from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

from ..discovery.flags import DOWNRANKED, PROSE, TEST
from ..model import FUNCTION_KINDS, Hit
from ..query.model import Query
from ..store.snapshot import IndexSnapshot
from ..tokens import MODULE_INDEX_STEMS, file_stem, name_match, name_targets, name_words, \
    query_words, sub_words

MODEL_PATH = Path(__file__).with_name("ranker.txt")
# trained on the semantic ranks of the deep pass's model, for the repositories it answers:
# each model did better on held-out repositories of its own ranks (docs/benchmarks.md)
DEEP_MODEL_PATH = Path(__file__).with_name("ranker-deep.txt")
EXPLAINED = 4  # features shown per hit: those that moved its score most
# a few hundred candidates take well under a millisecond on one thread; more threads only
# wake (and spin) beside the searches of other questions
PREDICT_THREADS = 1
MODALITIES = ("semantic", "text", "structural", "graph")
INTENTS = ("understand_code", "find_similar", "exact_match")  # the intents it ranks
TYPE_KINDS = frozenset({"class", "struct", "enum", "trait", "impl", "object", "record"})
DECLARATION_KINDS = frozenset({"interface", "type", "protocol", "typealias", "reexport"})
FEATURES = (
    "pasted", "query_words", "intent_similar", "intent_exact",
    *(f"{m}_rank" for m in MODALITIES), *(f"{m}_share" for m in MODALITIES),
    "fused", "fused_rank", "votes",
    "centrality", "test", "prose", "vendor",
    "file_name_match", "folder_match", "symbol_match", "module_index",
    "file_hits", "file_fused", "file_best_rank", "first_of_file",
    "kind_function", "kind_type", "kind_declaration", "kind_other", "lines",
    "file_declarations", "file_definitions",
    "path_mentioned", "frame_position", "symbol_mentioned",
    "headline_rank", "headline_span",
)
HEADLINE_COLUMN = FEATURES.index("headline_rank")


def _words(text: str) -> frozenset[str]:
    return frozenset(sub_words(text)) if text else frozenset()


def with_headline(hits: list[Hit], headline: list[Hit]) -> list[Hit]:
    """The candidates, and after them the best span of each file the headline's own search
    found that no modality listed for the whole text (Query.headline): the stage can bring
    those up by their headline rank."""
    listed = {hit.path for hit in hits}
    # where it is, and nothing that search said of it: the features give its rank there
    return hits + [Hit(hit.path, hit.start_line, hit.end_line, 0.0, symbol=hit.symbol,
                       kind=hit.kind, lines=hit.lines, repository=hit.repository)
                   for hit in headline if hit.path not in listed]


def candidate_features(hits: list[Hit], query: Query, snapshot: IndexSnapshot,
                       headline: list[Hit] = ()) -> list[list[float]]:
    """One row of FEATURES per hit (NaN where a modality did not list it); `headline`: the
    answers of the headline's own search, one a file, best first."""
    nan = math.nan
    headline_rank = {}
    for rank, hit in enumerate(headline, 1):
        headline_rank.setdefault(hit.path, (rank, hit))
    words = query_words(query.text)
    targets = name_targets(words)
    mentions = query.mentions
    frame_of: dict[str, float] = {}
    for i, frame in enumerate(mentions.frames):  # innermost last: 1.0
        path = snapshot.resolve_path(frame.path)
        if path is not None:
            frame_of[path] = (i + 1) / len(mentions.frames)
    mentioned_paths = {p for p in map(snapshot.resolve_path, mentions.paths) if p} | set(frame_of)
    mentioned_names = {n.rsplit(".", 1)[-1] for n in mentions.names}
    per_file: dict[str, list[int]] = {}
    for i, hit in enumerate(hits):
        per_file.setdefault(hit.path, []).append(i)
    file_rows: dict[str, tuple] = {}
    for path, members in per_file.items():
        definitions = snapshot.definitions(path)
        declared = sum(1 for d in definitions if d.kind in DECLARATION_KINDS)
        implemented = sum(1 for d in definitions if d.kind in FUNCTION_KINDS)
        file_rows[path] = (len(members), sum(hits[i].score for i in members), members[0] + 1,
                           declared / max(declared + implemented, 1), math.log1p(len(definitions)))
    rows = []
    ranks = snapshot.centrality(per_file)
    for i, hit in enumerate(hits):
        flags = snapshot.file_flags.get(hit.path, 0)
        centrality = ranks.get((hit.path, hit.symbol)) if hit.symbol else None
        if centrality is None:
            centrality = ranks.get(hit.path, 0.0)
        folders = frozenset(w for part in hit.path.split("/")[:-1] for w in sub_words(part))
        symbol_words = _words(hit.symbol.rsplit(".", 1)[-1]) if hit.symbol else frozenset()
        kind = hit.kind or ""
        count, fused, best, declarations, definitions = file_rows[hit.path]
        rows.append([
            float(query.pasted), math.log1p(len(words)),
            float(query.intent == "find_similar"), float(query.intent == "exact_match"),
            *(float(hit.ranks[m]) if m in hit.ranks else nan for m in MODALITIES),
            *(hit.contributions.get(m, 0.0) for m in MODALITIES),
            hit.score, float(i + 1), float(len(hit.ranks)),
            math.log1p(centrality), float(bool(flags & TEST)), float(bool(flags & PROSE)),
            float(bool(flags & DOWNRANKED)),
            name_match(name_words(hit.path), targets),
            len(folders & words) / max(len(folders), 1),
            len(symbol_words & words) / max(len(symbol_words), 1),
            float(file_stem(hit.path) in MODULE_INDEX_STEMS),
            float(count), fused, float(best), float(per_file[hit.path][0] == i),
            float(kind in FUNCTION_KINDS), float(kind in TYPE_KINDS),
            float(kind in DECLARATION_KINDS),
            float(kind not in FUNCTION_KINDS | TYPE_KINDS | DECLARATION_KINDS),
            math.log1p(hit.end_line - hit.start_line + 1),
            declarations, definitions,
            float(hit.path in mentioned_paths), frame_of.get(hit.path, nan),
            float(bool(hit.symbol) and hit.symbol.rsplit(".", 1)[-1] in mentioned_names),
            *_headline_features(hit, headline_rank.get(hit.path)),
        ])
    return rows


def _headline_features(hit: Hit, found: tuple[int, Hit] | None) -> tuple[float, float]:
    """The rank of the hit's file among the headline's answers, and whether the hit overlaps
    the span answered for it there (NaN, 0 where the headline's search did not find it)."""
    if found is None:
        return math.nan, 0.0
    rank, answer = found
    return float(rank), float(hit.start_line <= answer.end_line
                              and answer.start_line <= hit.end_line)


@lru_cache(maxsize=2)
def _loaded_model(path: str) -> tuple[object, list[int]]:
    """The model at `path` and the columns of FEATURES it reads, by the names its file
    lists: each model file was trained on the features of its own dump."""
    text = Path(path).read_text(encoding="utf-8")
    # LightGBM aborts the whole process on a model cut short inside its trees
    if "\nend of trees\n" not in text:
        raise OSError(f"{path} is cut short: it does not hold all of its trees")
    import lightgbm  # loaded when a search is first ranked

    booster = lightgbm.Booster(model_str=text)
    names = booster.feature_name()
    unknown = [name for name in names if name not in FEATURES]
    if unknown:
        raise ValueError(f"it reads features this version does not compute: "
                         f"{', '.join(unknown)}")
    return booster, [FEATURES.index(name) for name in names]


class LearnedRanking:
    """Scores fused hits with the model at `path` (at `deep_path` where the deep pass's model
    found the semantic modality's hits, if that file is there); `available` is False
    without one. A model reads the features its file names (_loaded_model)."""

    def __init__(self, path: Path = MODEL_PATH, deep_path: Path = DEEP_MODEL_PATH):
        self.path = path
        self.deep_path = deep_path
        self.failure: str | None = None  # why the model could not be loaded, once it failed
        # looked for once: each question asks several times
        self._has_model, self._has_deep_model = path.is_file(), deep_path.is_file()

    @property
    def available(self) -> bool:
        return self.failure is None and self._has_model

    def applies_to(self, query: Query) -> bool:
        return query.pasted and query.intent in INTENTS and self.available

    def _model(self, deep: bool) -> tuple[object, list[int]] | None:
        """(booster, the columns of FEATURES it reads), or None where it cannot be loaded
        (self.failure says why)."""
        path = self.deep_path if deep and self._has_deep_model else self.path
        try:
            return _loaded_model(str(path))
        except Exception as exc:  # no OpenMP runtime (Debian's libgomp1): ImportError or
            # OSError; a damaged model file: LightGBM's own error type
            self.failure = f"the learned ranking could not load its model {path.name}: {exc}"
            return None

    def reads_headline(self, deep: bool) -> bool:
        """Whether the model that ranks (`deep`: the deep pass's) reads the headline's
        answers, so that they are worth searching for."""
        model = self._model(deep)
        return model is not None and HEADLINE_COLUMN in model[1]

    def rerank(self, hits: list[Hit], query: Query, snapshot: IndexSnapshot,
               deep: bool = False, headline: list[Hit] = ()) -> list[Hit]:
        """The hits, with the files only the headline's search found (with_headline),
        ordered by the model (`deep`: the deep pass's model answered the semantic modality;
        `headline`: that search's answers, one a file, best first). Each hit's score
        becomes a positive rank score (1 / (1 + rank)), so later stages that add scores
        (file support) keep working, and `hit.learned` holds the model's score (`explain`
        adds the features that moved it, for the answers kept)."""
        model = self._model(deep)
        if model is None:
            return hits
        if HEADLINE_COLUMN not in model[1]:
            headline = ()  # a model trained without the headline's features
        hits = with_headline(hits, headline)
        if not hits:
            return hits
        import numpy as np

        booster, columns = model
        x = np.asarray(candidate_features(hits, query, snapshot, headline),
                       dtype=np.float64)[:, columns]
        scores = booster.predict(x, num_threads=PREDICT_THREADS)
        order = sorted(range(len(hits)), key=lambda i: -scores[i])
        ranked = []
        for rank, i in enumerate(order):
            hit = hits[i]
            hit.learned = {"score": float(scores[i])}
            hit.learned_row = x[i]
            hit.score = 1.0 / (1 + rank)
            ranked.append(hit)
        return ranked

    def explain(self, hits: list[Hit], deep: bool = False) -> None:
        """Adds to each answer the stage ranked (`deep`: by the deep pass's model) the
        features that moved its score most, their SHAP contributions from LightGBM: for the
        answers only, as they cost about 30 times the score itself."""
        explained = [hit for hit in hits if hit.learned_row is not None]
        model = self._model(deep) if explained else None
        if model is None:
            return
        import numpy as np

        booster, columns = model
        contributions = booster.predict(np.stack([hit.learned_row for hit in explained]),
                                        pred_contrib=True, num_threads=PREDICT_THREADS)
        for hit, row in zip(explained, contributions):
            # the last column is the model's mean, not a feature's
            moved = np.argsort(-np.abs(row[:-1]), kind="stable")[:EXPLAINED]
            hit.learned.update({FEATURES[columns[f]]: float(row[f]) for f in moved})
            hit.learned_row = None
