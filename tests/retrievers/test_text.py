"""The text modality: exactness against grep, regex, BM25 ranking, bad input."""
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fourfold import Fourfold
from fourfold.errors import QueryError
from fourfold.retrievers.text import regex_required
from fourfold.store.sqlite import MAX_TRIGRAMS, trigram_match
from fourfold.tokens import (RUN_TOKENS_MAX, module_stem, name_match, name_targets, name_words,
                             token_text, token_texts, tokens)

STDLIB = Path(sys.modules["json"].__file__).parent.parent


@pytest.fixture(scope="module")
def stdlib_corpus(tmp_path_factory):
    """A few hundred real files: some standard library packages, copied."""
    root = tmp_path_factory.mktemp("corpus")
    for package in ("json", "email", "http", "logging", "asyncio", "xml", "urllib"):
        shutil.copytree(STDLIB / package, root / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    ff = Fourfold(root)
    ff.index(workers=2)
    return root, ff


def grep_lines(root: Path, pattern: str, ignore_case: bool,
               whole_word: bool = False) -> set[tuple[str, int]]:
    cmd = ["grep", "-rnF", "--binary-files=without-match", "--exclude-dir=.fourfold"]
    if ignore_case:
        cmd.append("-i")
    if whole_word:
        cmd.append("-w")
    out = subprocess.run(cmd + ["--", pattern, "."], cwd=root, capture_output=True, text=True,
                         errors="replace").stdout
    found = set()
    for line in out.splitlines():
        path, number, _ = line.split(":", 2)
        found.add((path.removeprefix("./"), int(number)))
    return found


@pytest.mark.parametrize("pattern", ["def __init__", "self._", "Error", "import os", "http",
                                     "return None", "://", "utf-8", "ab", "x"])
@pytest.mark.parametrize("ignore_case", [False, True])
def test_literal_grep_equals_grep(stdlib_corpus, pattern, ignore_case):
    root, ff = stdlib_corpus
    ours = {(m.path, m.line) for m in ff.grep(pattern, case_sensitive=not ignore_case)}
    expected = grep_lines(root, pattern, ignore_case)
    assert expected, "the pattern must occur in the corpus for the test to mean anything"
    assert ours == expected


def test_regex_grep_matches_python_re(stdlib_corpus):
    import re
    root, ff = stdlib_corpus
    pattern = r"def (get|set)_\w+\(self"
    ours = {(m.path, m.line) for m in ff.grep(pattern, regex=True, case_sensitive=True)}
    expected = set()
    for path in root.rglob("*.py"):
        if ".fourfold" in path.parts:
            continue
        for number, line in enumerate(path.read_text(errors="replace").split("\n"), 1):
            if re.search(pattern, line):
                expected.add((path.relative_to(root).as_posix(), number))
    assert expected and ours == expected


def test_whole_word(stdlib_corpus):
    root, ff = stdlib_corpus
    words = {(m.path, m.line) for m in ff.grep("json", whole_word=True, case_sensitive=True)}
    expected = grep_lines(root, "json", ignore_case=False, whole_word=True)
    assert expected, "the word must occur in the corpus for the test to mean anything"
    assert words == expected
    plain = {(m.path, m.line) for m in ff.grep("json", case_sensitive=True)}
    assert words < plain  # some lines hold json only inside a longer word (_json, jsonify)


def test_required_literals_from_regex():
    assert regex_required("foo.*barbaz") == ("and", ["foo", "barbaz"])
    # a small alternation is spelt out with the literals around it
    assert regex_required("(hello|world)x") == ("or", ["hellox", "worldx"])
    assert regex_required(r"def (get|set)_\w+\(self") == \
        ("and", [("or", ["def get_", "def set_"]), "(self"])
    assert regex_required(r"\bu(8|16|32|64)\b") is None  # u8: too short for a trigram
    assert regex_required(r"\bu(8|16|32|64)\b", shortest=1) == \
        ("or", ["u16", "u32", "u64", "u8"])
    assert regex_required("u[xy]z") == ("or", ["uxz", "uyz"])
    assert regex_required("x(a|)yz") == ("or", ["xayz", "xyz"])
    # past SPELLINGS_MOST spellings the run so far ends and another begins
    assert regex_required("(a|b|c|d)(e|f|g|h)(i|j)kl") == ("or", ["ikl", "jkl"])
    assert regex_required("ab+c") is None
    assert regex_required(r"\w+") is None
    assert regex_required("(?:abc)?def") == "def"
    assert regex_required("[[:upper:]]oo") is None  # RE2's POSIX class, not literals


FROM_LITERALS = {
    "a.c": "int x;\nbar = foo_call();\n  bar2 = foo_call(1);\nworldx\nhellox\n",
    "b.c": "/* = foo */\nstatic int a(void);\nint b;\nstatic int c(void);\nhellox\n",
    "c.c": "barbaz\nfoo\nfoo barbaz\n x = f foo_call\n all(\n",  # the trigrams, not the literal
}


@pytest.mark.parametrize("pattern", [r"\w+ = foo_call\(", r"^static int \w+\(", "foo.*barbaz",
                                     "(hello|world)x", r"= foo_\w+"])
def test_a_regex_is_searched_from_the_first_line_holding_its_literals(make_tree, pattern):
    """A case-sensitive regex is looked for in a text from the first line holding a
    literal every match holds (the longest part of an "and", the earliest alternative of
    an "or"), and not at all in a text without it: the lines are still those Python's re
    finds, where a match begins before its literal or at an anchor."""
    ff = Fourfold(make_tree(FROM_LITERALS))
    ff.index(embed=False)
    expected = [(path, number) for path, text in sorted(FROM_LITERALS.items())
                for number, line in enumerate(text.split("\n"), 1) if re.search(pattern, line)]
    assert expected
    assert [(m.path, m.line) for m in ff.grep(pattern, regex=True, case_sensitive=True)] \
        == expected
    assert [(m.path, m.line) for m in ff.grep(pattern, regex=True, case_sensitive=True,
                                              limit=1)] == expected[:1]


def test_a_regex_as_written_is_looked_for_from_its_literals_first_line():
    from fourfold.retrievers.text import Finder

    _, _, first = Finder(r"\w+ = foo_call\(", True, True, False).compiled()
    assert first(b"int x;\nbar = foo_call();\n") == len(b"int x;\n")
    assert first(b"foo_call\n = foo\n") == -1  # the literal's trigrams, not the literal
    _, _, first = Finder(r"\bu(8|16)\b", True, True, False).compiled()
    assert first(b"a\nb\nx u16 u8\n") == len(b"a\nb\n")
    # where the literals may match in another case, the whole text is searched
    assert Finder(r"(?i)foo\d", True, True, False).compiled()[2] is None
    assert Finder(r"foo\d", True, False, False).compiled()[2] is None
    assert Finder(r"\w+", True, True, False).compiled()[2] is None  # no literal
    # each alternative would be read through a text that lacks it: from the start
    many = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota"]
    assert Finder(f"({'|'.join(many)})\\d", True, True, False).compiled()[2] is None
    assert Finder(f"({'|'.join(many[:8])})\\d", True, True, False).compiled()[2] is not None
    # unless they share a beginning or an end, which every matching line then holds
    for pattern in (r"[abcdefghi]_suffix\d", r"prefix_[abcdefghi]\d"):
        _, _, first = Finder(pattern, True, True, False).compiled()
        assert first(b"x\n_suffix prefix_\nq_suffix7\n") == len(b"x\n")
        assert first(b"suffix prefix\n") == -1


def test_random_regexes_find_the_same_lines_from_their_literals_as_from_the_start():
    """Where a regex is first looked for (Finder.compiled's `first`) never changes its
    lines: random regexes of literals, classes, groups, alternations (small ones spelt
    out), repetitions and anchors, as plain and as whole-word searches, over random texts."""
    from fourfold.retrievers.text import Finder, matching_lines

    rng = random.Random(11)
    atoms = ["a", "b", "ab", "ba", "x", "é", r"\w", r"\d", ".", "[ab]", "[xy]", "(a|b)",
             "(ab|x)", "(a|)", " ", r"\b", "^", "$", "(?:ba|é)", "((a|b)x|y(z|))",
             "(é|ab)(c|d)", "(?:ab){1,2}", "[abcxyé12 ]ab", "ba[abcxyé12 ]"]
    pieces = ["ab", "ba", "x", "é", "a", "b", "\n", " ", "xy", "1", "c"]
    looked_for = 0
    for _ in range(600):
        pattern = "".join(
            atom + ("" if atom in ("^", "$", r"\b", "(?:ab){1,2}")
                    else rng.choice(["", "", "+", "*", "?"]))
            for atom in rng.choices(atoms, k=rng.randrange(1, 6)))
        find, _, first = Finder(pattern, True, True, rng.random() < 0.3).compiled()
        looked_for += first is not None
        for _ in range(4):
            text = "".join(rng.choices(pieces, k=rng.randrange(0, 40))).encode()
            assert matching_lines(text, find, first) == matching_lines(text, find), pattern
    assert looked_for > 200  # most of them have a literal to look for first


def test_groups_nested_hundreds_deep_are_searched_and_looked_into_once(make_tree, monkeypatch):
    """Hostile regexes: alternations nested hundreds deep (whose literals' tree would be
    too deep to measure) are searched as written; a wide alternation at the bottom of
    hundreds of groups is spelt out once per group, not once per group above it."""
    import itertools

    import fourfold.retrievers.text as text

    ff = Fourfold(make_tree({"a.txt": "abc\nab\nx\n"}))
    ff.index(embed=False)
    deep = "a(?:b|" * 300 + "c" + ")" * 300
    assert [m.line for m in ff.grep(deep, regex=True, case_sensitive=True)] == [1, 2]
    calls = []
    spellings = text._spellings
    monkeypatch.setattr(text, "_spellings", lambda *a: calls.append(1) or spellings(*a))
    words = itertools.islice(itertools.product("abcdefghij", repeat=3), 750)
    wide = "(?:|" * 240 + "(?:" + "|".join(map("".join, words)) + ")" + ")" * 240
    assert regex_required(wide, 1) is None
    assert len(calls) < 10_000


def test_a_posix_class_in_a_regex_is_searched_as_re2_reads_it(index_on_each_store):
    _, ff = index_on_each_store({"a.py": "Foo = 1\n", "b.py": "foo = 2\n"})
    assert [m.path for m in ff.grep("[[:upper:]]oo", regex=True, case_sensitive=True)] == \
        ["a.py"]


def test_a_quoted_string_answers_with_a_span_inside_its_file(index_on_each_store):
    _, ff = index_on_each_store({
        "short.py": "def main():\n    raise ConnectionError('ECONNREFUSED')\n",
        "long.py": "".join(f"x{i} = {i}\n" for i in range(1, 10)) + "y = 'ECONNREFUSED'\n"
                   + "".join(f"z{i} = {i}\n" for i in range(1, 10)),
        "last.py": "a = 1\nb = 'ECONNREFUSED'\nc = 3\nd = 4"})  # no newline at its end
    spans = {h.path: (h.start_line, h.end_line)
             for h in ff.search('"ECONNREFUSED"', modalities=["text"]).hits}
    assert spans == {"short.py": (1, 2), "long.py": (8, 12), "last.py": (1, 4)}


def test_sqlite_trigram_expression():
    # trigram index without positions: each required literal is an AND of its trigrams
    assert trigram_match(("and", ["foo", "barbaz"])) == \
        '(("foo") AND ("bar" AND "arb" AND "rba" AND "baz"))'
    assert trigram_match(("or", ["hello", "world"])) == \
        '(("hel" AND "ell" AND "llo") OR ("wor" AND "orl" AND "rld"))'
    many = trigram_match("a_very_long_identifier_name_indeed")
    assert many.count(" AND ") == MAX_TRIGRAMS - 1 and many.startswith('("a_v"')
    assert many.endswith('"eed")')


def test_invalid_regex_and_empty_pattern_are_clear_errors(stdlib_corpus):
    _, ff = stdlib_corpus
    with pytest.raises(QueryError, match="invalid regular expression"):
        ff.grep("foo(", regex=True)
    with pytest.raises(QueryError, match="invalid regular expression"):
        ff.grep("(?<=a)b", regex=True)  # lookbehind: RE2 refuses, linear time guaranteed
    with pytest.raises(QueryError, match="empty"):
        ff.grep("")
    # checked as written: wrapped for whole words, "a)|(b" would read as a valid regex
    with pytest.raises(QueryError, match=r"invalid regular expression 'json\)\|\(load'"):
        ff.grep("json)|(load", regex=True, whole_word=True)
    for limit in (0, -1):  # a limit of no lines is a mistake, not an empty answer
        with pytest.raises(QueryError, match="whole number of at least 1"):
            ff.grep("json", limit=limit)


def test_ranked_search_prefers_identifier_and_path_matches(make_tree):
    root = make_tree({
        "config/parser.py": "def parse_config_file(path):\n    return load(path)\n",
        "util/strings.py": "def shout(text):\n    return text.upper()\n",
        "notes.md": "This mentions config once.\n",
    })
    ff = Fourfold(root)
    ff.index()
    response = ff.search("parse config file", modalities=("text",))
    assert response.hits[0].path == "config/parser.py"
    assert response.hits[0].symbol == "parse_config_file"


@pytest.mark.parametrize("path, name", [
    ("src/JsonArray.java", "JsonArray"), ("types.d.ts", "types"),
    ("axum/src/extract/mod.rs", "extract"), ("pkg/sub/__init__.py", "sub"),
    ("lua/lazy/init.lua", "lazy"), ("src/router/index.ts", "router"), ("index.js", "index"),
])
def test_module_stem_names_a_folder_by_its_index_file(path, name):
    assert module_stem(path) == name


@pytest.mark.parametrize("path, words, match", [
    ("lua/lazy/manage/lock.lua", {"lockfile", "pin"}, 1.0),       # a name word begins a query word
    ("lib/utils.js", {"utility", "function"}, 1.0),
    ("src/FieldNamingPolicy.java", {"field", "naming", "policy"}, 1.0),
    ("src/NamingPolicyTest.java", {"naming", "policy"}, 0.5 * 2 / 3),  # part of the name
    ("src/app.py", {"application"}, 0.0),                          # too short to be a prefix
    ("src/config.py", {"con"}, 0.0),                               # a query word is no prefix
])
def test_file_name_matches_query_words_whole_or_as_their_beginning(path, words, match):
    assert name_match(name_words(path), name_targets(words)) == pytest.approx(match)


def test_a_folders_index_file_answers_for_the_folders_name(make_tree):
    root = make_tree({
        "src/middleware/mod.rs": "pub fn from_fn() {}\npub fn map_request() {}\n",
        "src/routing/mod.rs": "pub fn route() {}\n// the middleware stack of a route\n",
        "src/extract/mod.rs": "pub trait FromRequest {}\n",
    })
    ff = Fourfold(root)
    ff.index(embed=False)
    hits = ff.search("how middleware layers are applied", modalities=("text",), direct=False).hits
    # the folder's file first, the file that only mentions the word after it
    assert [h.path for h in hits] == ["src/middleware/mod.rs", "src/routing/mod.rs"]
    modules = ff.search("extract", modalities=("structural",), limit=5).hits
    assert [(h.path, h.kind, h.symbol) for h in modules] == [("src/extract/mod.rs", "module",
                                                              None)]


def test_content_cache_stays_within_budget_and_never_keeps_a_vanished_file(make_tree):
    import sys

    from fourfold.retrievers.text import ContentCache
    from fourfold.store.base import StoredFile
    root = make_tree({f"m{i:02}.py": f"def f{i:02}():\n    return '{'x' * 3000}'\n"
                      for i in range(12)})
    ff = Fourfold(root)
    ff.index(embed=False)
    states = ff.store.file_states(ff.store.files()[0].repo_id)
    files = sorted(((f, states[f.path].hash) for f in ff.store.files()), key=lambda x: x[0].path)
    one = sys.getsizeof(ff.store.content(files[0][0].file_id))
    cache = ContentCache(ff.store, budget=9 * one)
    texts = cache.get(files)
    assert all(texts[f.file_id].startswith("def f") for f, _ in files)
    cached = [f.file_id for f, _ in files]
    assert cache._size <= cache.budget
    assert list(cache._texts) == cached[3:]  # the oldest three left
    as_bytes = cache.get(files[-1:], utf8=True)  # the bytes count too: one more goes
    assert as_bytes[files[-1][0].file_id].startswith(b"def f")
    assert cache._size <= cache.budget
    assert list(cache._texts) == cached[4:]
    ghost = StoredFile(999_999, files[0][0].repo_id, "gone.py", "python", 0)
    assert cache.get([(ghost, "h")]) == {999_999: ""} and 999_999 not in cache._texts


def test_content_cache_reads_the_form_asked_for_and_makes_the_other_from_it(make_tree,
                                                                           monkeypatch):
    """UTF-8 bytes are read as bytes (no text decoded to be encoded again), text as text;
    a file kept in one form is given in the other without reading the store again."""
    from fourfold.retrievers.text import ContentCache
    root = make_tree({"a.py": "naïve = 'ü'\n", "b.py": "plain = 1\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    states = ff.store.file_states(ff.store.files()[0].repo_id)
    a, b = sorted(((f, states[f.path].hash) for f in ff.store.files()), key=lambda x: x[0].path)
    reads = []

    def counted(name, read):
        def counted_read(ids):
            ids = list(ids)
            reads.append((name, sorted(ids)))
            return read(ids)
        return counted_read

    for method in ("contents", "utf8_contents"):
        monkeypatch.setattr(ff.store, method, counted(method, getattr(ff.store, method)))
    cache = ContentCache(ff.store)
    assert cache.get([a], utf8=True) == {a[0].file_id: "naïve = 'ü'\n".encode()}
    assert reads == [("utf8_contents", [a[0].file_id])]
    assert cache.get([a, b]) == {a[0].file_id: "naïve = 'ü'\n", b[0].file_id: "plain = 1\n"}
    assert reads[1] == ("contents", [b[0].file_id])  # (a store may read it as bytes inside)
    read_before = len(reads)
    assert cache.get([a, b], utf8=True)[b[0].file_id] == b"plain = 1\n"
    assert len(reads) == read_before
    assert cache._size == sum(cache._cost(entry) for entry in cache._texts.values())


def test_a_grep_through_many_files_keeps_only_its_first_texts(make_tree, monkeypatch):
    """A grep reads the next batch of texts while it searches this one, and keeps only its
    first files' texts: one through more files than the cache holds would replace them all."""
    import fourfold.retrievers.text as text
    monkeypatch.setattr(text, "GREP_READ_BATCH", 4)
    monkeypatch.setattr(text, "GREP_KEPT_FILES", 8)
    ff = Fourfold(make_tree({f"m{i:02}.py": f"a = {i}\nneedle = {i}\n" for i in range(30)}))
    ff.index(embed=False)
    assert [(m.path, m.line) for m in ff.grep("needle")] == [
        (f"m{i:02}.py", 2) for i in range(30)]
    kept = {f.path for f in ff.store.files() if f.file_id in ff.text._texts._texts}
    assert kept == {f"m{i:02}.py" for i in range(8)}


def test_a_grep_with_a_limit_keeps_only_its_first_texts(make_tree, monkeypatch):
    """A grep with a limit whose lines are rare reads on through every candidate file, a
    page at a time: it too keeps only its first files' texts."""
    import fourfold.retrievers.text as text
    monkeypatch.setattr(text, "GREP_LIST_PAGE", 4)
    monkeypatch.setattr(text, "GREP_LIMITED_READ", 2)
    monkeypatch.setattr(text, "GREP_KEPT_FILES", 8)
    # every file holds the trigrams of "rare needle", two of them the words
    ff = Fourfold(make_tree({f"m{i:02}.py": f"one needle, rare {i}\n"
                             + ("rare needle\n" if i in (3, 27) else "") for i in range(30)}))
    ff.index(embed=False)
    assert [(m.path, m.line) for m in ff.grep("rare needle", limit=5)] == [
        ("m03.py", 2), ("m27.py", 2)]
    kept = {f.path for f in ff.store.files() if f.file_id in ff.text._texts._texts}
    assert kept == {f"m{i:02}.py" for i in range(8)}


def test_a_grep_limit_reads_past_the_first_listed_files(make_tree):
    """With a limit, candidate files are listed a page at a time, each after the last
    path of the one before: the lines are those of a grep without a limit, cut, under a
    glob too."""
    files = {f"pkg{i % 3}/mod{i:03}.py": f"x = {i}\nvalue = 'needle {i}'\nneedle_{i} = 1\n"
             for i in range(600)}
    ff = Fourfold(make_tree(files))
    ff.index(workers=1)
    everything = [(m.path, m.line) for m in ff.grep("needle")]
    assert len(everything) == 1200
    for limit in (1, 100, 511, 513, 1199, 5000):
        assert [(m.path, m.line) for m in ff.grep("needle", limit=limit)] == everything[:limit]
    under = [(m.path, m.line) for m in ff.grep("needle", path_glob="pkg1/**")]
    assert len(under) == 400 and all(path.startswith("pkg1/") for path, _ in under)
    assert [(m.path, m.line) for m in ff.grep("needle", path_glob="pkg1/**", limit=390)] == \
        under[:390]


def test_a_grep_limit_sizes_its_pages_by_the_lines_found_and_loses_none(make_tree,
                                                                         monkeypatch):
    """Files that hold a literal's trigrams but not the literal come first, then files with
    one line each, then files with many: whatever the limit, the lines are those of a grep
    without one, cut; after the first page each page is sized by the lines the files read
    so far held, at least 4x the first page and at most 4x the last."""
    import fourfold.retrievers.text as text

    files = {f"a/{i:03}.py": "xneedlx = dlex\n" for i in range(300)}
    files.update({f"b/{i:03}.py": "x = 'needle'\n" for i in range(100)})
    files.update({f"c/{i:03}.py": "needle = 1\n" * 5 for i in range(300)})
    ff = Fourfold(make_tree(files))
    ff.index(workers=1, embed=False)
    everything = [(m.path, m.line) for m in ff.grep("needle", case_sensitive=True)]
    assert len(everything) == 1600
    pages: list[int] = []

    def record_pages(retriever) -> None:
        listed = retriever._candidates

        def candidates(*args):
            pages.append(args[-1])
            return listed(*args)

        monkeypatch.setattr(retriever, "_candidates", candidates)

    record_pages(ff.text)
    for limit in (1, 50, 150, 400, 1599, 5000):
        pages.clear()
        assert [(m.path, m.line) for m in ff.grep("needle", case_sensitive=True,
                                                  limit=limit)] == everything[:limit]
        assert pages[0] == text.GREP_LIST_PAGE
        assert all(4 * text.GREP_LIST_PAGE <= page <= 4 * before
                   for before, page in zip(pages, pages[1:])), pages
    pages.clear()
    ff.grep("needle", case_sensitive=True, limit=450)  # 64 + 256 files read: 1 + 100 lines
    assert pages[:3] == [64, 256, 1024]
    dense = Fourfold(make_tree({f"c/{i:03}.py": "needle = 1\n" * 5 for i in range(800)},
                               "dense"))
    dense.index(workers=1, embed=False)
    record_pages(dense.text)
    pages.clear()  # 5 lines a file: 64 files give 320, 256 more 1,280, so 420 more are asked
    assert len(dense.grep("needle", case_sensitive=True, limit=3000)) == 3000
    assert pages == [64, 256, 420]


def test_a_new_snapshot_splits_only_the_file_names_it_has_not_seen(make_tree, monkeypatch):
    import fourfold.store.snapshot as snapshot_module
    root = make_tree({"src/json_array.py": "x = 1\n", "src/http_client.py": "y = 2\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    first = ff.snapshots.current()
    assert first.file_name_words["src/json_array.py"] == ("json", "array")
    (root / "src" / "url_parser.py").write_text("z = 3\n")
    ff.index(embed=False)
    (root / "lib").mkdir()
    (root / "lib" / "url_parser.py").write_text("w = 4\n")  # the same name: split once
    ff.index(embed=False)
    split = []
    words = snapshot_module.stem_words
    monkeypatch.setattr(snapshot_module, "stem_words", lambda s: split.append(s) or words(s))
    second = ff.snapshots.current()
    assert second is not first
    assert second.file_name_words == {"lib/url_parser.py": ("url", "parser"),
                                      "src/http_client.py": ("http", "client"),
                                      "src/json_array.py": ("json", "array"),
                                      "src/url_parser.py": ("url", "parser")}
    assert split == ["url_parser"]


def test_regex_classes_know_ascii_as_the_readme_says(make_tree):
    ff = Fourfold(make_tree({"doc.rst": "基本单元是u64。\nplain u64 here\nxu64\n"}))
    ff.index(embed=False)
    lines = lambda pattern: [m.line for m in ff.grep(pattern, regex=True)]  # noqa: E731
    assert lines(r"\bu64\b") == [1, 2]  # 是 is no ASCII word character
    assert lines(r"[\pL\pN_]u64") == [1, 3]  # a letter of any script before it


FOLDED = ("Straße und STRASSE\n"
          "ÄPFEL, Äpfel und äpfel\n"
          "ſtatic int long-s\n"
          "STATIC INT x;\n"
          "a Kelvin sign: 3 K\n"
          "x.*[y] stays literal\n"
          "X.*[Y] too\n"
          "nothing here\n"
          "İnt x; ınt y\n"
          "a \\E and a \\Q, a tab\tand a dollar $\n")


@pytest.mark.parametrize("pattern", ["äpfel", "static int", "k", "x.*[y]", "straße", "ß", "int",
                                     "ı", "\\e and", "tab\tand a dollar $", "x" * 300])
def test_a_literal_in_any_case_finds_the_lines_python_folds_to_it(make_tree, pattern):
    """Any-case literals are found by RE2 on UTF-8 bytes: the same lines as Python's re
    with IGNORECASE on the text, letters outside ASCII included."""
    import re

    ff = Fourfold(make_tree({"notes.txt": FOLDED}))
    ff.index(embed=False)
    expected = [n for n, line in enumerate(FOLDED.split("\n")[:-1], 1)
                if re.search(re.escape(pattern), line, re.IGNORECASE)]
    assert expected or len(pattern) > 256
    assert [m.line for m in ff.grep(pattern)] == expected
    assert [m.line for m in ff.grep(pattern, limit=1)] == expected[:1]


@pytest.mark.parametrize("limit", [None, 10])
def test_a_search_that_ignores_case_inside_its_regex_finds_every_case(index_on_each_store,
                                                                      limit):
    """A case-sensitive grep lists candidate files by its literals as written (on the
    server: LIKE, not ILIKE), unless its regex turns case off: (?i) or (?i:...)."""
    _, ff = index_on_each_store({"a.py": "Alpha = 1\n", "b.py": "alpha = 2\n",
                                 "c.py": "ALPHA = 3\n"})

    def files(pattern: str, regex: bool, case_sensitive: bool = True) -> list[str]:
        return [m.path for m in ff.grep(pattern, regex=regex, case_sensitive=case_sensitive,
                                        limit=limit)]

    assert files("alpha", regex=False) == files("alpha", regex=True) == ["b.py"]
    assert files("ALPHA", regex=False) == ["c.py"]
    assert files("alpha", regex=False, case_sensitive=False) == ["a.py", "b.py", "c.py"]
    for pattern in ["(?i)alpha", "(?i:alpha)", "(?si)alpha", "(?i)alpha = [0-9]"]:
        assert files(pattern, regex=True) == ["a.py", "b.py", "c.py"], pattern


@pytest.mark.parametrize("limit", [None, 10])
def test_a_file_whose_only_match_has_a_dotted_or_dotless_i_is_a_candidate(
        index_on_each_store, limit):
    """Found whatever its case, `istanbul` matches İstanbul and ıstanbul as Python folds
    them; the trigram index keeps those letters apart, so the files were never read."""
    _, ff = index_on_each_store({"a.txt": "İSTANBUL\n", "b.txt": "ıstanbul\n",
                                 "c.txt": "Istanbul\n", "d.txt": "stanbul\n"})
    for pattern in ("istanbul", "ISTANBUL", "İstanbul"):
        assert [m.path for m in ff.grep(pattern, limit=limit)] == ["a.txt", "b.txt", "c.txt"]
    assert [m.path for m in ff.grep("Istanbul", case_sensitive=True)] == ["c.txt"]


@pytest.mark.parametrize("limit", [None, 10])
def test_letters_of_several_cases_are_found_in_any_case_on_each_store(index_on_each_store,
                                                                       limit):
    """The server's ILIKE folds by lower() alone: σ and ς, s and the long ſ, k and the
    Kelvin sign are one letter to grep but not to it, so their files were never read."""
    _, ff = index_on_each_store({"greek.txt": "λόγος\n", "long_s.txt": "ſoup of the day\n",
                                 "kelvin.txt": "300 \u212a\n", "none.txt": "nothing\n"})
    assert [m.path for m in ff.grep("ΛΌΓΟΣ", limit=limit)] == ["greek.txt"]
    assert [m.path for m in ff.grep("SOUP", limit=limit)] == ["long_s.txt"]
    assert [m.path for m in ff.grep("300 k", limit=limit)] == ["kelvin.txt"]


@pytest.mark.parametrize("limit", [None, 10])
def test_case_pairs_the_trigram_index_keeps_apart_are_found_in_any_case(index_on_each_store,
                                                                        limit):
    """SQLite's trigram index folds case by an older Unicode than the checks of the lines:
    Georgian Mtavruli and Cherokee small letters were one letter to grep -i (RE2, Python)
    but not to it, so their files were never read; literals and regexes, both stores."""
    _, ff = index_on_each_store({"georgian.txt": "ᲐᲑᲒ mtavruli\n",
                                 "cherokee.txt": "ᎠᎡᎢ cherokee\n",
                                 "latin.txt": "\ua7ab\u0282x latin\n", "none.txt": "nothing\n"})
    for pattern, path in (("აბგ", "georgian.txt"), ("ꭰꭱꭲ", "cherokee.txt"),
                          ("\u025c\ua7c5x", "latin.txt")):  # capital Ɜ, small ʂ asked as small ɜ, capital Ʂ
        for regex in (False, True):
            assert [m.path for m in ff.grep(pattern, regex=regex, limit=limit)] == [path], \
                (pattern, regex)
            assert ff.grep(pattern, regex=regex, case_sensitive=True, limit=limit) == []
        assert [m.path for m in ff.grep(f"(?i){pattern}", regex=True, case_sensitive=True,
                                        limit=limit)] == [path]
        assert [m.path for m in ff.grep(f"({pattern}|nomatch)", regex=True,
                                        limit=limit)] == [path]


def test_only_case_forms_the_trigram_index_keeps_apart_are_spelt_out():
    """Letters the trigram index folds (Greek, most Latin and Cyrillic) are asked once:
    each form of them would only lengthen the query."""
    from fourfold.retrievers.text import any_case

    assert any_case("λόγος") == "λόγος" and any_case("Größe") == "Größe"
    assert any_case("სახელი") != "სახელი"  # Georgian: its Mtavruli capitals are apart
    # П, Р and И once; the rounded ve and the tall and three-legged te are kept apart
    assert any_case("ПРИВЕТ") == ("and", ["ПРИ", ("or", ["РИВ", "РИᲀ"]),
                                          ("or", ["ИВЕ", "ИᲀЕ"]),
                                          ("or", ["ВЕТ", "ВЕᲄ", "ВЕᲅ", "ᲀЕТ", "ᲀЕᲄ", "ᲀЕᲅ"])])


@pytest.mark.parametrize("regex", [False, True])
def test_a_pattern_holding_a_nul_finds_nothing_and_is_no_error(index_on_each_store, regex):
    """No indexed text holds a NUL (a file with one is binary); FTS5 read one in its query
    as the end of the query and the grep failed as a damaged index."""
    _, ff = index_on_each_store({"a.py": "ab = 1\ndef f():\n    return ab\n"})
    for pattern in ("ab\x00", "(ab\x00)", "a\x00") if not regex else (
            r"ab\x00", r"(ab\x00)", r"ab\0", "ab\x00", r"a\x00b+"):
        for limit in (None, 5):
            assert ff.grep(pattern, regex=regex, limit=limit) == [], pattern
    if regex:
        assert [m.line for m in ff.grep(r"(ab\x00|def f)", regex=True)] == [2]
        assert [m.line for m in ff.grep(r"(ab\x00|def f)", regex=True, limit=5)] == [2]
    else:  # a literal with one is answered without reading a file
        ff.store.trigram_candidates = None
        assert ff.grep("a\x00") == []


WHOLE_WORD_EDGES = "x = 5;\nfoo(5;y)\n-a b\nb -a\nc-a\n(5;)\n"


@pytest.mark.parametrize("pattern, lines", [("5;", [1, 6]), ("-a", [3, 4]), ("(5;)", [6]),
                                            ("a", [3, 4, 5])])
def test_a_whole_word_regex_that_begins_or_ends_with_punctuation_is_grep_w(make_tree,
                                                                            pattern, lines):
    """-w with a regex: no word character just before or after the match, as grep -w and
    a literal whole-word search say (a \\b around it asked for a word character next to
    the punctuation instead)."""
    import re

    ff = Fourfold(make_tree({"a.c": WHOLE_WORD_EDGES}))
    ff.index(embed=False)
    assert [m.line for m in ff.grep(pattern, whole_word=True, case_sensitive=True)] == lines
    assert [m.line for m in ff.grep(re.escape(pattern), regex=True, whole_word=True,
                                    case_sensitive=True)] == lines


def test_a_whole_word_regex_with_a_quote_left_open_is_its_literal(make_tree):
    """RE2 reads all after an unclosed \\Q as literal text, the whole-word wrapping too:
    the quote is closed before it is wrapped, and the lines are those of the literal."""
    ff = Fourfold(make_tree({"a.txt": "foo\nfoox\nx foo y\nfoo*\n(a)\na|b\n"}))
    ff.index(embed=False)
    for literal in ("foo", "foo*", "(a)", "a|b"):
        lines = [m.line for m in ff.grep(literal, whole_word=True, case_sensitive=True)]
        assert lines
        for pattern in (rf"\Q{literal}", rf"\Q{literal}\E", rf"\Q{literal}\E\Q"):
            assert [m.line for m in ff.grep(pattern, regex=True, whole_word=True,
                                            case_sensitive=True)] == lines, pattern


def test_a_blank_path_glob_is_no_filter(make_tree):
    ff = Fourfold(make_tree({"a.py": "needle = 1\n", "b/c.py": "needle = 2\n"}))
    ff.index(embed=False)
    everywhere = [(m.path, m.line) for m in ff.grep("needle")]
    assert len(everywhere) == 2
    for glob in ("", " ", "\t"):
        for limit in (None, 5):
            assert [(m.path, m.line) for m in ff.grep("needle", path_glob=glob,
                                                      limit=limit)] == everywhere


@pytest.mark.parametrize("case_sensitive", [False, True])
def test_a_literal_utf8_cannot_carry_is_a_clear_error(make_tree, case_sensitive):
    ff = Fourfold(make_tree({"a.txt": "plain text\n"}))
    ff.index(embed=False)
    with pytest.raises(QueryError, match="not valid UTF-8"):
        ff.grep("te\ud800xt", case_sensitive=case_sensitive)


WORDS = ("foo bar\n"
         "foo_bar foobar barfoo\n"
         "éfoo föo FOO\n"
         "(foo) foo1 1foo\n"
         "x.foo.y Foo-Bar\n"
         "ﬀoo ǅfoo İfoo\n"
         "foo\n")


@pytest.mark.parametrize("pattern", ["foo", "Foo", "(foo)", "foo)", "bar"])
@pytest.mark.parametrize("case_sensitive", [True, False])
def test_whole_words_are_python_s_word_boundaries(make_tree, pattern, case_sensitive):
    """-w: no letter or digit of any script, nor an underscore, just before or after the
    match, as Python's (?<!\\w) and (?!\\w) say, in either case."""
    import re

    ff = Fourfold(make_tree({"words.txt": WORDS}))
    ff.index(embed=False)
    whole = re.compile(rf"(?<!\w){re.escape(pattern)}(?!\w)",
                       0 if case_sensitive else re.IGNORECASE)
    expected = [n for n, line in enumerate(WORDS.split("\n")[:-1], 1) if whole.search(line)]
    assert expected
    assert [m.line for m in ff.grep(pattern, whole_word=True,
                                    case_sensitive=case_sensitive)] == expected


@pytest.mark.parametrize("case_sensitive", [True, False])
def test_a_whole_word_inside_long_words_is_found_where_it_stands_alone(make_tree,
                                                                       case_sensitive):
    text = ("a" * 100_000 + " xa ax a_a\n") * 3 + "ǅa é a\n" + "a" * 100_000 + "\n"
    ff = Fourfold(make_tree({"long.txt": text}))
    ff.index(embed=False)
    assert [m.line for m in ff.grep("a", whole_word=True, case_sensitive=case_sensitive)] == [4]


def test_token_text_is_the_tokens_of_the_text_joined(monkeypatch):
    """The fast path (runs cut by C calls, each run's tokens remembered, unseen runs learned
    together) writes exactly what joining tokens() would: digits before letters,
    underscores, non-ASCII letters and punctuation inside and between words, random runs of
    the characters whose order decides the sub-words, a forgotten cache, real source."""
    import fourfold.tokens as token_module

    texts = ["parseConfigFile(path) -> HTTPServer.max_retries = 0x1F; 9abc a9b _9 __ _",
             "naïve_café größe日本語word wörd\tÜber-Fall", "", "  \n\t ", "_ __ ___",
             "_ a", "a _", "a __ b", "12_ab_cd 1_2 12 ABCdEF aBC ABc x1F",
             "x" * 5000, "λ=lambda: None  # ü", "a\x00b\x7fc\u2028d"]
    texts += (STDLIB / "json" / "decoder.py").read_text().split("\n\n")
    generator = random.Random(7)
    texts += [" ".join("".join(generator.choice("aAbBzZ09_1xX") for _ in range(
        generator.randint(1, 9))) for _ in range(generator.randint(1, 5))) for _ in range(3000)]
    for text in texts:
        assert token_text(text) == " ".join(tokens(text)), text[:40]
    token_module._RUN_TOKENS.clear()
    assert token_texts(texts) == [" ".join(tokens(text)) for text in texts]
    monkeypatch.setattr(token_module, "RUN_TOKENS_MAX", 3)
    texts = [f"{text} unseen{i}" for i, text in enumerate(texts)]  # each has a new run
    for text in texts:  # the remembered runs are forgotten when there are too many
        assert token_text(text) == " ".join(tokens(text)), text[:40]
    most_runs = max(len(set(re.findall(r"[A-Za-z0-9_]+", t))) for t in texts)
    assert len(token_module._RUN_TOKENS) <= 3 + most_runs
    assert token_texts(texts[:50]) == [" ".join(tokens(text)) for text in texts[:50]]
    assert RUN_TOKENS_MAX >= 10_000


def test_lines_found_in_utf8_bytes_are_those_found_in_the_decoded_text():
    """The byte path (stringzilla's newline counting and search) numbers and cuts lines as
    the str path does: random texts with CRLF, blank lines, non-ASCII letters and matches
    at either end, literals and regexes (one matching the empty string on every line; two
    looked for from the first line holding their literals)."""
    import random

    from fourfold.retrievers.text import Finder, matching_lines

    rng = random.Random(7)
    pieces = ["ab", "abab", "x", "é", "ßab", "\n", "\n", "\r\n", " ", "a", "b\n", "\n\n"]
    for round_ in range(400):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 60)))
        lines = text.split("\n")
        if text.endswith("\n") or not text:
            lines.pop()  # no line after the final newline
        for pattern, regex in (("ab", False), ("ba", False), ("é", False), (r"a+b", True),
                               (r"x*", True), (r"(ab|é)b", True), (r"\s*b(a|x)", True)):
            find, utf8, first = Finder(pattern, regex, True, False).compiled()
            assert utf8
            from_bytes = matching_lines(text.encode(), find, first)
            expected = [(number, line.rstrip("\r"))
                        for number, line in enumerate(lines, 1)
                        if re.search(pattern if regex else re.escape(pattern), line)]
            assert from_bytes == expected, (round_, text, pattern)
