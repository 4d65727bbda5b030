"""What one hit is: the best span of a file, every span, or every function and method."""
from __future__ import annotations

import time
from dataclasses import replace

import pytest

from fourfold import Fourfold
from fourfold.errors import QueryError
from fourfold.model import Hit
from fourfold.store.base import StoredSymbol
from fourfold.ranking import granularity
from fourfold.ranking.granularity import (by_function, enclosing_definition, names_used,
                                          with_definitions_using)
from tests.conftest import write_tree

VALIDATORS = (
    "import re\n"                                                   # 1
    "\n"                                                            # 2
    "SCHEMES = ['http', 'https']  # url schemes a validator accepts\n"  # 3
    "\n"                                                            # 4
    "\n"                                                            # 5
    "class UrlValidator:\n"                                         # 6
    "    # the url pattern: scheme, user and password, host\n"     # 7
    "    pattern = re.compile(r'^(?:[a-z]+)://(?:\\S+@)?\\S+$')\n"  # 8
    "\n"                                                            # 9
    "    def __call__(self, url):\n"                                # 10
    "        if not self.pattern.match(url):\n"                     # 11
    "            raise ValueError('invalid url')\n"                 # 12
    "        return url\n"                                          # 13
    "\n"                                                            # 14
    "    def scheme_of(self, url):\n"                               # 15
    "        # the url scheme, checked against the validator's list\n"  # 16
    "        return url.split('://')[0]\n"                          # 17
    "\n"                                                            # 18
    "\n"                                                            # 19
    "def validate_email(address):\n"                                # 20
    "    # an email address is not a url\n"                         # 21
    "    return '@' in address\n")                                  # 22

FILES = {
    "app/validators.py": VALIDATORS,
    "app/views.py": ("from app.validators import UrlValidator\n\n\n"
                     "def check_url(url):\n"
                     "    # validate the url a user posted\n"
                     "    return UrlValidator()(url)\n"),
}


@pytest.fixture(scope="module")
def ff(tmp_path_factory):
    ff = Fourfold(write_tree(tmp_path_factory.mktemp("granularity"), FILES))
    ff.index(embed=False)
    yield ff
    ff.close()


def test_file_granularity_gives_one_hit_per_file(ff):
    hits = ff.search("url validator scheme user password", granularity="file",
                     modalities=("text",)).hits
    assert sorted(h.path for h in hits) == ["app/validators.py", "app/views.py"]


def test_function_granularity_names_each_definition_the_spans_lie_in(ff):
    hits = ff.search("url validator scheme user password", granularity="function",
                     modalities=("text",), limit=20).hits
    units = {(h.path, h.symbol): (h.start_line, h.end_line, h.kind) for h in hits}
    # several definitions of one file, each with its own span and kind
    assert units[("app/validators.py", "UrlValidator.scheme_of")] == (15, 17, "method")
    assert units[("app/views.py", "check_url")] == (4, 6, "function")
    # no definition is listed twice, and every hit with a symbol spans that definition
    keys = [(h.path, h.symbol, h.start_line) for h in hits]
    assert len(keys) == len(set(keys))
    for h in hits:
        assert all(h.start_line <= n <= h.end_line for n, _ in h.lines)


def test_a_span_in_a_class_body_answers_with_the_class(ff):
    definitions = ff.snapshots.current().definitions("app/validators.py")
    in_body = Hit("app/validators.py", 7, 8, 1.0)
    assert enclosing_definition(in_body, definitions).qualname == "UrlValidator"
    module_level = Hit("app/validators.py", 3, 3, 0.5)
    assert enclosing_definition(module_level, definitions) is None
    in_method = Hit("app/validators.py", 11, 12, 0.8)
    spanning = Hit("app/validators.py", 9, 17, 0.4)  # a window over two methods
    out = by_function([in_body, in_method, module_level, spanning],
                      lambda path: definitions)
    assert [(h.symbol, h.start_line, h.end_line) for h in out] == [
        ("UrlValidator", 6, 17), ("UrlValidator.__call__", 10, 13), (None, 3, 3)]
    # the window's score went to the method it overlaps most, as support
    assert out[1].score == pytest.approx(0.8 + 0.25 * 0.4)


def test_a_kind_filter_chooses_the_unit_and_explain_shows_the_support(ff):
    """A whole class found by its name answers with the method it overlaps most (on
    localization-train that method is more often the one to change than the class is), but
    a question for classes only (`--kind class`) gets the class, not one of its methods."""
    definitions = ff.snapshots.current().definitions("app/validators.py")
    whole_class = Hit("app/validators.py", 6, 17, 1.0, symbol="UrlValidator", kind="class")
    in_method = Hit("app/validators.py", 11, 12, 0.5)
    out = by_function([whole_class, in_method], lambda path: definitions)
    assert [(h.symbol, h.kind) for h in out] == [("UrlValidator.__call__", "method")]
    classes = by_function([whole_class, in_method], lambda path: definitions,
                          kinds=frozenset({"class"}))
    assert [(h.symbol, h.kind) for h in classes] == [("UrlValidator", "class")]
    assert classes[0].score == pytest.approx(1.0 + 0.25 * 0.5)
    assert classes[0].definition_support == pytest.approx(0.25 * 0.5)
    assert classes[0].to_dict()["definition_support"] == pytest.approx(0.125)
    found = ff.search("class UrlValidator", granularity="function", kinds=("class",)).hits
    assert [(h.symbol, h.kind) for h in found[:1]] == [("UrlValidator", "class")]
    assert all(h.kind == "class" for h in found if h.symbol)


def test_definitions_the_question_names_follow_the_first_answers(ff, monkeypatch):
    monkeypatch.setattr(granularity, "NAMED_AFTER", 1)
    definitions = {path: ff.snapshots.current().definitions(path) for path in FILES}
    hits = [Hit("app/validators.py", 11, 12, 0.9),  # in UrlValidator.__call__
            Hit("app/views.py", 5, 6, 0.5),  # in check_url
            Hit("app/validators.py", 21, 22, 0.2)]  # in validate_email
    # scheme_of had no span; validate_email had the last; names of other files, dunders
    # and words no definition has change nothing
    # a variable (SCHEMES) is no function answer
    named = frozenset({"scheme_of", "validate_email", "__call__", "url", "Parser", "SCHEMES"})
    out = by_function(hits, definitions.__getitem__, named=named)
    assert [h.symbol for h in out] == ["UrlValidator.__call__", "UrlValidator.scheme_of",
                                       "validate_email", "check_url"]
    # a question asking for methods only gets no function raised, nor answered: a span in
    # one stays a span
    assert [h.symbol for h in by_function(hits, definitions.__getitem__, named=named,
                                          kinds=frozenset({"method"}))] == [
        "UrlValidator.__call__", "UrlValidator.scheme_of", None, None]
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)
    assert (out[1].start_line, out[1].end_line, out[1].kind) == (15, 17, "method")
    # nothing named: the order is the spans' own
    assert [h.symbol for h in by_function(hits, definitions.__getitem__)] == [
        "UrlValidator.__call__", "check_url", "validate_email"]


def test_a_search_places_the_definition_its_question_names(ff, monkeypatch):
    question = ("an email address is no url, validate_email says, the scheme of a url "
                "validator; see check_url")

    def symbols() -> list[str]:
        hits = ff.search(question, granularity="function", modalities=("text",)).hits
        return [h.symbol for h in hits[:3]]

    monkeypatch.setattr(granularity, "NAMED_AFTER", 1)
    monkeypatch.setattr(granularity, "NAMED_FILES", 0)  # the stage off: by words alone
    assert symbols() == ["validate_email", "UrlValidator.__call__", "UrlValidator.scheme_of"]
    monkeypatch.setattr(granularity, "NAMED_FILES", 2)
    assert symbols() == ["validate_email", "check_url", "UrlValidator.__call__"]
    hits = ff.search(question, granularity="function", modalities=("text",)).hits
    assert [h.named for h in hits[:3]] == [False, True, False]
    assert hits[1].to_dict()["named"] is True and "named" not in hits[0].to_dict()


def test_functions_using_the_names_a_text_mentions_follow_the_first_answers(ff, monkeypatch):
    monkeypatch.setattr(granularity, "USING_AFTER", 1)
    monkeypatch.setattr(granularity, "USING_AT_LEAST", 2)
    snapshot = ff.snapshots.current()
    hits = [Hit("app/validators.py", 11, 12, 0.9),  # in UrlValidator.__call__
            Hit("app/views.py", 5, 6, 0.5),  # in check_url
            Hit("app/validators.py", 21, 22, 0.2)]  # in validate_email
    ranked = by_function(hits, snapshot.definitions)

    def uses_of(mentioned):
        return lambda path: names_used(snapshot.definitions(path), snapshot.text(path),
                                       frozenset(mentioned))

    def using(mentioned, kinds=frozenset()) -> list[tuple[str, int]]:
        out = with_definitions_using(list(ranked), snapshot.definitions, uses_of(mentioned),
                                     frozenset(kinds))
        return [(h.symbol, h.uses_mentioned) for h in out]

    assert names_used(snapshot.definitions("app/validators.py"),
                      snapshot.text("app/validators.py"), frozenset({"url", "split"})) == {
        ("UrlValidator.__call__", 10): 1, ("UrlValidator.scheme_of", 15): 2,
        ("validate_email", 20): 1}

    # scheme_of, with no span, uses url and split; the others one name each at most
    assert using({"url", "split", "ValueError"}) == [
        ("UrlValidator.__call__", 0), ("UrlValidator.scheme_of", 2), ("check_url", 0),
        ("validate_email", 0)]
    # an answer further down moves up, once; the most names first
    assert using({"url", "split", "scheme", "address"}) == [
        ("UrlValidator.__call__", 0), ("UrlValidator.scheme_of", 3), ("validate_email", 2),
        ("check_url", 0)]
    monkeypatch.setattr(granularity, "USING_MOST", 1)
    assert [s for s, _ in using({"url", "split", "scheme", "address"})] == [
        "UrlValidator.__call__", "UrlValidator.scheme_of", "check_url", "validate_email"]
    monkeypatch.setattr(granularity, "USING_FILES", 1)  # validators.py only
    assert using({"url", "UrlValidator"}) == [(h.symbol, 0) for h in ranked]  # check_url
    # nothing mentioned, too few names, a question that asks for classes: as ranked
    for mentioned, kinds in (((), ()), ({"url"}, ()), ({"url", "split"}, {"class"})):
        assert using(mentioned, kinds) == [(h.symbol, 0) for h in ranked]
    # a definition placed for being named stays where it was
    named = [ranked[0], *(replace(h, named=True) for h in ranked[1:])]
    moved = with_definitions_using(named, snapshot.definitions,
                                   uses_of({"url", "address", "UrlValidator"}))
    assert [h.symbol for h in moved] == [h.symbol for h in ranked]


def test_names_used_counts_lines_as_symbols_do_and_reads_a_file_once():
    def symbol(name: str, start: int, end: int, kind: str = "function") -> StoredSymbol:
        return StoredSymbol(0, 0, "a.py", name, name, kind, start, end, "", "", None, 0, None)

    # a form feed and a line separator are no line ends to the parser
    text = ("x = 1\n\x0c\n# \u2028 here\n"
            "def first():\n    return alpha_name + beta_name\n"
            "def second():\n    return alpha_name2\n")
    assert names_used([symbol("first", 4, 5), symbol("second", 6, 7),
                       symbol("Holder", 1, 7, "class")], text,
                      frozenset({"alpha_name", "beta_name"})) == {("first", 4): 2}
    # 6,000 nested functions (1.5 MB): each function's lines tokenised apart took minutes
    n = 6000
    nested = "\n".join([f"function f{i}() {{ alpha_name(); beta_name; // " + "x" * 100
                        for i in range(n)] + ["}"] * n)
    started = time.perf_counter()
    used = names_used([symbol(f"f{i}", i + 1, 2 * n - i) for i in range(n)], nested,
                      frozenset({"alpha_name", "beta_name", "gamma"}))
    assert time.perf_counter() - started < 2.0
    assert len(used) == n and set(used.values()) == {2}


def test_a_search_places_the_functions_using_what_an_issue_mentions_where_the_deep_model_answers(
        tmp_path, monkeypatch):
    from fourfold.api import DEEP_EMBEDDER
    from fourfold.semantic.embedder import DEFAULT_MODEL

    monkeypatch.setenv("FOURFOLD_CACHE_DIR", str(tmp_path / "vector-cache"))
    root = write_tree(tmp_path / "repo", FILES)
    Fourfold(root).index()
    Fourfold(root).deepen()
    issue = ("An email address such as someone@example.org is taken for a valid address "
             "by validate_email even when the user typed a url; the address check should "
             "not accept it, and the result of url.split() is not checked either")
    monkeypatch.setattr(granularity, "USING_AFTER", 1)
    for deep_embedder, placed in ((DEEP_EMBEDDER, True), (None, False)):
        response = Fourfold(root, deep_embedder=deep_embedder).search(
            issue, granularity="function")
        hits = response.hits
        assert response.semantic_model == ("minilm" if placed else DEFAULT_MODEL)
        assert hits[0].symbol != "UrlValidator.scheme_of" and not hits[0].uses_mentioned
        # scheme_of uses url and split; on the static model's answers nothing is placed
        assert (hits[1].symbol, hits[1].uses_mentioned) == (
            ("UrlValidator.scheme_of", 2) if placed else (hits[1].symbol, 0))
        assert all(not h.uses_mentioned for h in hits[2 if placed else 0:])
        assert ("uses_mentioned" in hits[1].to_dict()) == placed


def test_an_unknown_granularity_is_a_clear_error(ff):
    with pytest.raises(QueryError, match="unknown granularity 'line'"):
        ff.search("url", granularity="line")
