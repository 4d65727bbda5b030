"""Intent rules, weighted RRF arithmetic, the boost, priors, the direct path and its fallback."""
import math
from types import SimpleNamespace

import pytest

from fourfold.discovery.flags import PROSE, TEST, VENDOR
from fourfold.model import Hit
from fourfold.query.model import Query
from fourfold.routing.engine import SearchEngine, SearchOptions
from fourfold.ranking.fusion import fuse, rrf_contribution
from fourfold.ranking.priors import (BOOST_CAP, NAME_BOOST, apply_priors, rank_definitions,
                                     centrality_boost, question_words)
from fourfold.ranking.granularity import best_per_file, with_file_support
from fourfold.query.model import QUESTION_MAX_WORDS
from fourfold.routing.intent import classify
from fourfold.routing.profiles import SEED, parse_weights

RULES = [
    # query, intent, confidence, target
    ("def parse_config", "find_definition", 0.95, "parse_config"),
    ("class Session", "find_definition", 0.95, "Session"),
    ("func NewServer", "find_definition", 0.95, "NewServer"),
    ("fn main", "find_definition", 0.95, "main"),
    ("interface Handler", "find_definition", 0.95, "Handler"),
    ("struct Config", "find_definition", 0.95, "Config"),
    ("type Options", "find_definition", 0.95, "Options"),
    ("import requests", "find_definition", 0.95, "requests"),
    ("where is parseConfig defined?", "find_definition", 0.90, "parseConfig"),
    ("where is the class Session implemented", "find_definition", 0.90, "Session"),
    ("definition of `Router.mount`", "find_definition", 0.90, "Router.mount"),
    ("who calls save_user", "find_references", 0.90, "save_user"),
    ("callers of Session.close", "find_references", 0.90, "Session.close"),
    ("usages of parseConfig", "find_references", 0.90, "parseConfig"),
    ("references to `Router`", "find_references", 0.90, "Router"),
    ("where is save_user used?", "find_references", 0.90, "save_user"),
    ("what breaks if I change Session.close", "impact_analysis", 0.90, "Session.close"),
    ("blast radius of parse_config", "impact_analysis", 0.90, "parse_config"),
    ("what depends on UserModel", "impact_analysis", 0.90, "UserModel"),
    ('"ECONNREFUSED"', "exact_match", 0.90, "ECONNREFUSED"),
    ("where does it log 'connection reset by peer'", "exact_match", 0.90,
     "connection reset by peer"),
    # a string of one or two characters is in most lines: one in a sentence is not sought
    ('"db"', "exact_match", 0.90, "db"),
    ('MySQL backend uses deprecated "db" and "passwd" kwargs', "exact_match", 0.90, "passwd"),
    ('Wrong mime type for "br" and "Z" files', "understand_code", 0.40, None),
    ("ECONNREFUSED", "exact_match", 0.85, "ECONNREFUSED"),
    ("Traceback in the worker", "exact_match", 0.85, "Traceback"),
    ("KeyError when loading", "exact_match", 0.85, "KeyError"),
    ("parseConfig", "find_definition", 0.80, "parseConfig"),
    ("parse_config", "find_definition", 0.80, "parse_config"),
    ("HandlerStack", "find_definition", 0.80, "HandlerStack"),
    ("os.path.join", "find_definition", 0.70, "os.path.join"),
    ("Rails::Engine", "find_definition", 0.70, "Rails::Engine"),
    ("view", "find_definition", 0.60, "view"),
    ("code similar to this retry loop", "find_similar", 0.70, None),
    ("for (let i = 0; i < n; i++) { total += xs[i]; }", "find_similar", 0.70, None),
    ("how does auth work", "understand_code", 0.75, None),
    ("explain the caching layer", "understand_code", 0.75, None),
    ("where is authentication handled", "understand_code", 0.75, None),
    ("connection pooling and TCP connector", "understand_code", 0.40, None),
    # a pasted issue says "depends on" in passing: it is not an impact question
    ("Saving a model fails\nThe result depends on the order of the fields in Meta, and the "
     "admin crashes when the form is rendered twice", "understand_code", 0.40, None),
]


@pytest.mark.parametrize("query,intent,confidence,target", RULES)
def test_classifier_rules(query, intent, confidence, target):
    got = classify(query)
    assert (got.intent, got.confidence, got.target) == (intent, confidence, target)


def test_classifier_is_cheap():
    import time
    started = time.perf_counter()
    for _ in range(200):
        for query, *_ in RULES:
            classify(query)
    per_query_ms = (time.perf_counter() - started) * 1000 / (200 * len(RULES))
    assert per_query_ms < 1.0


def h(path, line=1, symbol=None, score=0.0):
    return Hit(path, line, line + 5, score, symbol=symbol)


def test_weighted_rrf_arithmetic():
    ranked = {"text": [h("a.py"), h("b.py")], "semantic": [h("b.py"), h("c.py")]}
    fused = fuse(ranked, {"text": 0.2, "semantic": 0.5}, k=40)
    scores = {x.path: x.score for x in fused}
    assert scores["a.py"] == pytest.approx(0.2 / 41)
    assert scores["b.py"] == pytest.approx(0.2 / 42 + 0.5 / 41)
    assert scores["c.py"] == pytest.approx(0.5 / 42)
    assert [x.path for x in fused] == ["b.py", "c.py", "a.py"]
    b = next(x for x in fused if x.path == "b.py")
    assert b.contributions == pytest.approx({"text": 0.2 / 42, "semantic": 0.5 / 41})
    assert b.ranks == {"text": 2, "semantic": 1}  # what --explain shows
    assert rrf_contribution(0.6, 0, 60) == pytest.approx(0.6 / 61)


def test_merged_hit_takes_the_span_of_its_strongest_vote():
    tail_piece = Hit("engine.rb", 782, 782, 0.0, symbol="Rails.Engine")
    definition = Hit("engine.rb", 348, 782, 0.0, symbol="Rails.Engine")
    fused = fuse({"semantic": [tail_piece], "structural": [definition]},
                 {"semantic": 0.2, "structural": 0.6}, k=5)
    assert [(x.start_line, x.end_line) for x in fused] == [(348, 782)]
    assert fused[0].score == pytest.approx(0.2 / 6 + 0.6 / 6)
    weak = fuse({"semantic": [tail_piece], "structural": [definition]},
                {"semantic": 0.6, "structural": 0.2}, k=5)
    assert (weak[0].start_line, weak[0].end_line) == (782, 782)


def test_zero_weight_modality_does_not_vote():
    fused = fuse({"text": [h("a.py")], "graph": [h("z.py")]}, {"text": 1.0, "graph": 0.0}, 40)
    assert [x.path for x in fused] == ["a.py"]


def test_boost_formula_and_cap():
    assert centrality_boost(0.0) == 1.0
    assert centrality_boost(1.0) == pytest.approx(1 + 0.3 * math.log(2))
    assert centrality_boost(1e9) == BOOST_CAP


def test_definitions_rank_source_then_tests_then_vendored_code_within_a_tier():
    def d(name, flags):
        return SimpleNamespace(path=name, flags=flags)
    found = [(d("vendor_test", VENDOR | TEST), 0), (d("test", TEST), 0), (d("vendor", VENDOR), 0),
             (d("src", 0), 0), (d("src_worse_match", 0), 1)]
    assert [s.path for s, _ in rank_definitions(found)] == [
        "src", "test", "vendor", "vendor_test", "src_worse_match"]


def test_priors_downrank_vendor_and_tests_and_boost_hubs():
    hits = [h("vendor/lib.py", score=1.0), h("tests/test_x.py", score=1.0),
            h("src/leaf.py", score=1.0), h("src/hub.py", score=1.0)]
    flags = {("vendor/lib.py"): VENDOR, ("tests/test_x.py"): TEST}
    centrality = {("src/hub.py"): 20.0, ("src/leaf.py"): 0.1}
    out = apply_priors(hits, flags, centrality, wants_tests=False)
    assert [x.path for x in out[:2]] == ["src/hub.py", "src/leaf.py"]
    assert out[0].factors == {"centrality": BOOST_CAP}
    assert next(x for x in out if x.path == "tests/test_x.py").factors == {"test": 0.25}
    assert [(x.path, x.score) for x in out[2:]] == [("vendor/lib.py", 0.5),
                                                    ("tests/test_x.py", 0.25)]
    assert out[0].score == pytest.approx(BOOST_CAP)
    asked = apply_priors([h("tests/test_x.py", score=1.0)], flags, {}, wants_tests=True)
    assert asked[0].score == 1.0


def test_a_file_whose_name_the_question_spells_rises():
    named = question_words("field naming policy and key transformation")

    def prefixes(word):  # a word and its beginnings of four letters or more
        return {word[:n] for n in range(4, len(word) + 1)}
    # "and" is dropped; "key" is too short to have a beginning of its own
    assert named == (prefixes("field") | prefixes("naming") | prefixes("policy") | {"key"}
                     | prefixes("transformation"))
    hits = [h("src/test/NamingPolicyTest.java", score=1.0), h("src/Gson.java", score=0.9),
            h("src/FieldNamingPolicy.java", score=0.8)]
    out = apply_priors(hits, {}, {}, wants_tests=False, boost=False, named=named)
    scores = {x.path: x.score for x in out}
    assert out[0].path == "src/FieldNamingPolicy.java"
    assert scores["src/FieldNamingPolicy.java"] == pytest.approx(0.8 * (1 + NAME_BOOST))
    # two of the three words of NamingPolicyTest: a partial share
    assert scores["src/test/NamingPolicyTest.java"] == pytest.approx(1 + NAME_BOOST * 0.5 * 2 / 3)
    assert scores["src/Gson.java"] == 0.9
    folder = apply_priors([h("src/extract/mod.rs", score=0.1)], {}, {}, wants_tests=False,
                          boost=False, named=question_words("how extractors extract state"))
    assert folder[0].score == pytest.approx(0.1 * (1 + NAME_BOOST))


def test_a_long_text_names_files_in_passing_and_boosts_none():
    issue = " ".join(f"word{i}" for i in range(QUESTION_MAX_WORDS)) + " policy"
    assert question_words(issue) == frozenset()
    out = apply_priors([h("src/Policy.java", score=1.0)], {}, {}, wants_tests=False,
                       boost=False, named=question_words(issue))
    assert out[0].score == 1.0


def test_prose_files_rank_below_code_unless_the_question_asks_for_them():
    flags = {("docs/setup.rst"): PROSE}
    out = apply_priors([h("docs/setup.rst", score=1.0), h("src/setup.py", score=0.8)], flags,
                       {}, wants_tests=False, boost=False)
    assert [(x.path, x.score) for x in out] == [("src/setup.py", 0.8), ("docs/setup.rst", 0.25)]
    kept = apply_priors([h("docs/setup.rst", score=1.0)], flags, {}, wants_tests=False,
                        boost=False, wants_prose=True)
    assert kept[0].score == 1.0
    docs_first = engine(text=[h("docs/setup.rst", score=1.0), h("src/setup.py", score=0.9)])[0]
    docs_first.snapshot = lambda: facts(flags)
    asked = docs_first.search("where do the docs explain setup", SearchOptions(boost=False))
    plain = docs_first.search("where is setup explained", SearchOptions(boost=False))
    assert asked.hits[0].path == "docs/setup.rst" and plain.hits[0].path == "src/setup.py"


def test_file_support_lifts_a_file_that_many_hits_point_at():
    def hits():
        return [h("lone.py", 1, score=0.30), h("busy.py", 1, score=0.26),
                h("busy.py", 40, score=0.1), h("busy.py", 80, score=0.1),
                h("other.py", 1, score=0.2)]
    out = best_per_file(with_file_support(hits(), share=0.25))
    assert [x.path for x in out] == ["busy.py", "lone.py", "other.py"]
    assert out[0].score == pytest.approx(0.26 + 0.25 * 0.2)
    assert out[0].to_dict()["file_support"] == pytest.approx(0.05)
    assert "file_support" not in out[1].to_dict()
    flat = best_per_file(with_file_support(hits(), share=0.0))
    assert [x.path for x in flat] == ["lone.py", "busy.py", "other.py"]


def test_best_chunk_per_file():
    hits = [h("a.py", 1), h("a.py", 50), h("b.py", 1)]
    assert [(x.path, x.start_line) for x in best_per_file(hits)] == [("a.py", 1), ("b.py", 1)]


class FakeRetriever:
    def __init__(self, modality, hits):
        self.modality, self.hits, self.calls = modality, hits, 0

    def ready(self):
        return True

    def incomplete(self):
        return None

    def search(self, query: Query, limit: int):
        self.calls += 1
        return [Hit(x.path, x.start_line, x.end_line, x.score, symbol=x.symbol)
                for x in self.hits][:limit]


def engine(**hits):
    retrievers = {m: FakeRetriever(m, hits.get(m, [])) for m in
                  ("text", "structural", "graph", "semantic")}
    return SearchEngine(retrievers, lambda: facts()), retrievers


def facts(file_flags=None, centrality=None):
    """A stand-in for the index snapshot the filter and ranking stages read."""
    return SimpleNamespace(file_flags=file_flags or {},
                           centrality=lambda paths: centrality or {},
                           definitions=lambda path: [])


def test_direct_path_asks_only_the_dominant_modality():
    eng, r = engine(structural=[h("def.py", symbol="parse_config", score=1.0)],
                    text=[h("other.py")])
    response = eng.search("def parse_config")
    assert response.fusion_strategy == "direct"
    assert response.modalities == ["structural"]
    assert r["text"].calls == 0 and r["semantic"].calls == 0
    assert response.hits[0].path == "def.py"


def test_empty_direct_answer_falls_back_to_fusion():
    eng, r = engine(structural=[], text=[h("mention.py", score=1.0)])
    response = eng.search("def parse_config")
    assert response.fusion_strategy == "rrf"
    assert response.modalities == ["semantic", "text", "structural"]
    assert r["structural"].calls == 2  # direct try, then as part of the fused run
    assert response.hits[0].path == "mention.py"


def test_exact_match_never_runs_semantic():
    eng, r = engine(text=[h("a.py", score=1.0)], semantic=[h("b.py")])
    eng.search("ECONNREFUSED while connecting", SearchOptions(direct=False, profile="seed"))
    assert r["semantic"].calls == 0


def test_explicit_control_overrides():
    eng, r = engine(text=[h("a.py")], semantic=[h("b.py")], structural=[h("c.py")])
    response = eng.search("how does auth work", SearchOptions(modalities=("text",)))
    assert response.modalities == ["text"] and r["semantic"].calls == 0
    response = eng.search("how does auth work",
                          SearchOptions(weights=parse_weights("semantic=1,text=0")))
    assert response.modalities == ["semantic"]
    response = eng.search("how does auth work", SearchOptions(intent="exact_match",
                                                              profile="seed"))
    assert response.intent == "exact_match" and "semantic" not in response.modalities
    assert SEED["exact_match"]["semantic"] == 0.0


def test_presets():
    eng, _ = engine(text=[h("a.py")], semantic=[h("b.py")], structural=[h("c.py")],
                    graph=[h("d.py")])
    assert eng.search("how does auth work", SearchOptions(preset="quick")).modalities == \
        ["semantic"]
    assert set(eng.search("how does auth work").modalities) == {"semantic", "text",
                                                                "structural"}
    assert set(eng.search("how does auth work",
                          SearchOptions(preset="thorough")).modalities) == \
        {"semantic", "text", "structural", "graph"}


def test_long_issue_text_is_not_an_exact_match():
    issue = ("Rule L060 could give a specific error message. At the moment rule L060 flags "
             "something like this: 'Use COALESCE instead of IFNULL or NVL.' and it would be "
             "nicer to name the function that was actually used")
    got = classify(issue)  # quoted words and a capitalised one inside prose are no target
    assert (got.intent, got.confidence, got.target) == ("find_similar", 0.70, None)


def test_exact_string_not_found_searches_its_words():
    eng, r = engine(text=[], semantic=[h("b.py", score=1.0)], structural=[])
    response = eng.search('"no such string anywhere"', SearchOptions(profile="seed"))
    assert response.intent == "understand_code"
    assert "not found verbatim" in response.rule
    # its words are a question about code, fused as one (no target, not the direct path)
    assert response.fusion_strategy == "rrf" and response.target is None
    assert {"semantic", "text"} <= set(response.modalities)
    assert [x.path for x in response.hits] == ["b.py"]


def test_forcing_the_intent_the_classifier_chose_changes_nothing():
    for question in ("how does auth work", "def load_config", "who calls load_config",
                     '"ECONNREFUSED"'):
        eng, _ = engine(text=[h("a.py")], semantic=[h("b.py")], structural=[h("c.py")])
        chosen = eng.search(question)
        forced = eng.search(question, SearchOptions(intent=chosen.intent))
        assert (forced.target, forced.modalities, forced.fusion_strategy) == \
            (chosen.target, chosen.modalities, chosen.fusion_strategy), question
        assert [x.path for x in forced.hits] == [x.path for x in chosen.hits], question
    # an intent that asks about one thing takes the whole text where the classifier found none
    eng, _ = engine(text=[h("a.py")], semantic=[h("b.py")], structural=[h("c.py")])
    assert eng.search("auth", SearchOptions(intent="find_references")).target == "auth"
    assert eng.search("def load_config",
                      SearchOptions(intent="understand_code")).target is None
