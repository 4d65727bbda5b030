"""The Python API end to end: each Fourfold method on one small indexed repository, with
the values it returns, and the errors a wrong call gets."""
from __future__ import annotations

import pytest

from fourfold import Fourfold
from fourfold.errors import FourfoldError, NotIndexedError, QueryError
from tests.conftest import write_tree

SHOP = {
    "shop/models.py": '''\
        """Shop models."""


        class Item:
            def price(self):
                return 10


        class Book(Item):
            def price(self):
                return discount(super().price())


        def discount(amount):
            """Ten percent off."""
            return amount * 0.9
        ''',
    "shop/cart.py": '''\
        from shop.models import Book, discount


        def total(items):
            return sum(item.price() for item in items)


        def checkout(items):
            return discount(total(items))
        ''',
    "README.md": "# Shop\n\nA tiny shop.\n",
    ".git/HEAD": "ref: refs/heads/main\n",
}


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    root = write_tree(tmp_path_factory.mktemp("api") / "shop-repo", SHOP)
    with pytest.MonkeyPatch.context() as patch:  # the vectors go to a cache of this module's
        patch.setenv("FOURFOLD_CACHE_DIR", str(tmp_path_factory.mktemp("vector-cache")))
        ff = Fourfold(root)
        summary = ff.index(workers=1)
    assert (summary.files, summary.added, summary.embedded, summary.skipped) == (3, 3, 10, {})
    yield ff
    ff.close()


# -- indexing ---------------------------------------------------------------------------------
def test_queries_before_indexing_say_how_to_index(make_tree):
    root = make_tree({"a.py": "def alpha():\n    return 1\n"})
    ff = Fourfold(root)
    assert (ff.is_indexed(), ff.repo_id(), ff.notes) == (False, None, [])
    message = f"{root} is not indexed yet; run `fourfold index {root}` first"
    for call in (lambda: ff.search("alpha"), lambda: ff.grep("alpha"),
                 lambda: ff.definitions("alpha"), lambda: ff.references("alpha"),
                 lambda: ff.map(), lambda: ff.outline("a.py")):
        with pytest.raises(NotIndexedError) as refused:
            call()
        assert str(refused.value) == message
    with pytest.raises(FourfoldError, match="no such folder"):
        Fourfold(root / "missing")


def test_ensure_indexed_indexes_once_and_index_is_incremental(make_tree):
    root = make_tree({"a.py": "def alpha():\n    return 1\n", "b.py": "B = 2\n"})
    ff = Fourfold(root)
    first = ff.ensure_indexed()
    assert (first.files, first.added, first.read) == (2, 2, 2)
    assert ff.ensure_indexed() is None  # already indexed: nothing done
    assert (ff.is_indexed(), ff.repo_id()) == (True, 1)
    again = ff.index(embed=False)
    assert (again.files, again.read, again.unchanged, again.changed) == (2, 0, 2, 0)
    generation = ff.generation()
    (root / "b.py").write_text("B = 3\n")
    changed = ff.index(embed=False)
    assert (changed.read, changed.changed) == (1, 1)
    assert ff.generation() != generation  # what the interfaces watch to drop their caches


# -- text and definitions ---------------------------------------------------------------------
def test_grep_lines_in_path_then_line_order(shop):
    assert [(m.path, m.line, m.text) for m in shop.grep("discount(")] == [
        ("shop/cart.py", 9, "    return discount(total(items))"),
        ("shop/models.py", 11, "        return discount(super().price())"),
        ("shop/models.py", 14, "def discount(amount):")]
    assert [(m.path, m.line) for m in shop.grep(r"def \w+\(self\)", regex=True)] == [
        ("shop/models.py", 5), ("shop/models.py", 10)]
    assert [m.line for m in shop.grep("discount", path_glob="shop/cart.py")] == [1, 9]
    assert shop.grep("Discount", case_sensitive=True) == []


def test_definitions_say_where_and_how_a_name_matched(shop):
    [found] = shop.definitions("discount")
    assert found == {"path": "shop/models.py", "start_line": 14, "end_line": 16,
                     "name": "discount", "qualname": "discount", "kind": "function",
                     "signature": "def discount(amount):", "doc": "Ten percent off.",
                     "language": "python", "match": "exact"}
    assert [(d["qualname"], d["match"]) for d in shop.definitions("price")] == [
        ("Item.price", "exact"), ("Book.price", "exact")]
    assert [d["qualname"] for d in shop.definitions("price", kind="class")] == []
    with pytest.raises(QueryError, match="empty name"):
        shop.definitions("  ")


def test_outline_nests_members_and_file_outline_gives_depths(shop):
    outline = shop.outline("shop/models.py")
    assert [(n["qualname"], n["kind"], n["start_line"], n["end_line"],
             [c["qualname"] for c in n["children"]]) for n in outline] == [
        ("Item", "class", 4, 6, ["Item.price"]), ("Book", "class", 9, 11, ["Book.price"]),
        ("discount", "function", 14, 16, [])]
    assert outline[1]["signature"] == "class Book(Item):"
    assert shop.outline(str(shop.root / "shop" / "models.py")) == outline  # absolute path
    with pytest.raises(FourfoldError, match="shop/nowhere.py is not in the index"):
        shop.outline("shop/nowhere.py")
    assert [(s["qualname"], s["depth"]) for s in shop.file_outline("shop/models.py")] == [
        ("Item", 0), ("Item.price", 1), ("Book", 0), ("Book.price", 1), ("discount", 0)]
    assert [s["qualname"] for s in shop.file_outline("shop/models.py", kind="method")] == [
        "Item.price", "Book.price"]
    assert shop.file_outline("shop/nowhere.py") is None


def test_file_text_is_the_file_as_indexed(shop):
    assert shop.file_text("README.md") == {"path": "README.md", "language": "markdown",
                                           "lines": ["# Shop", "", "A tiny shop."]}
    assert shop.file_text("shop/cart.py")["lines"][8] == "    return discount(total(items))"
    assert shop.file_text("nope.py") is None
    assert shop.located(str(shop.root / "shop" / "cart.py")) == (shop.repo_id(), "shop/cart.py")


# -- graph --------------------------------------------------------------------------------------
def test_references_callees_and_importers(shop):
    refs = shop.references("discount")
    assert (refs["total"], refs["offset"], refs["notes"]) == (2, 0, [])
    assert [(r["path"], r["line"], r["kind"], r["symbol"], r["resolved"])
            for r in refs["results"]] == [("shop/cart.py", 9, "call", "checkout", True),
                                          ("shop/models.py", 11, "call", "Book.price", True)]
    callees = shop.callees("checkout")
    assert [(r["path"], r["symbol"], r["kind"], r["start_line"], r["call_site"])
            for r in callees["results"]] == [
        ("shop/models.py", "discount", "function", 14, "shop/cart.py:9"),
        ("shop/cart.py", "total", "function", 4, "shop/cart.py:9")]
    importers = shop.importers("shop/models.py")
    assert importers["results"] == [{"path": "shop/cart.py", "line": 1, "name": "shop.models",
                                     "imports": "shop/models.py"}]
    page = shop.references("discount", limit=1, offset=1)
    assert page["total"] == 2 and [r["symbol"] for r in page["results"]] == ["Book.price"]


def test_related_takes_one_step_of_each_relation(shop):
    subclasses = shop.related("Item", "subclasses")
    assert subclasses["total"] == 1
    assert [(r["path"], r["symbol"], r["kind"]) for r in subclasses["results"]] == [
        ("shop/models.py", "Book", "inherit")]
    assert [r["symbol"] for r in shop.related("checkout", "callees")["results"]] == [
        "discount", "total"]
    assert [r["symbol"] for r in shop.related("discount", "callers", limit=1)["results"]] == [
        "checkout"]
    imports = shop.related("shop/cart.py", "imports")
    assert [(r["path"], r["line"]) for r in imports["results"]] == [("shop/models.py", 1)]
    assert shop.related("shop/models.py", "imports")["total"] == 0
    assert shop.related("shop/none.py", "imports")["notes"] == [
        "shop/none.py is not an indexed file"]
    with pytest.raises(QueryError, match="unknown relation 'parents'; use callers, callees, "
                                         "importers, imports, subclasses"):
        shop.related("Item", "parents")


def test_impact_pages_its_dependents_and_summarises_all(shop):
    first = shop.impact("discount", limit=1)
    assert [(r["path"], r["symbol"], r["distance"]) for r in first["results"]] == [
        ("shop/cart.py", "checkout", 1)]
    assert (first["total"], first["next_offset"]) == (2, 1)
    assert first["summary"] == {"dependents": 2, "files": 2, "by_distance": {"1": 2}}
    rest = shop.impact("discount", limit=1, offset=1)
    assert [r["symbol"] for r in rest["results"]] == ["Book.price"] and "next_offset" not in rest
    assert [(r["symbol"], r["distance"]) for r in shop.impact("total")["results"]] == [
        ("checkout", 1)]
    with pytest.raises(QueryError, match="limit must be a whole number of at least 1"):
        shop.impact("discount", limit=0)


def test_map_ranks_files_and_symbols_most_central_first(shop):
    repo_map = shop.map(limit=3)
    assert [(f["path"], f["language"]) for f in repo_map["files"]] == [
        ("shop/models.py", "python"), ("shop/cart.py", "python")]
    assert sum(f["rank"] for f in repo_map["files"]) == pytest.approx(2.0, abs=1e-5)
    assert [(s["symbol"], s["kind"], s["path"], s["start_line"])
            for s in repo_map["symbols"]] == [("Item", "class", "shop/models.py", 4),
                                              ("discount", "function", "shop/models.py", 14),
                                              ("total", "function", "shop/cart.py", 4)]
    ranks = [s["rank"] for s in repo_map["symbols"]]
    assert ranks[0] == ranks[1] > ranks[2] > 1.0


# -- search, similar code, task context ----------------------------------------------------
def test_search_answers_directly_or_by_fusion(shop):
    direct = shop.search("def discount")
    assert (direct.intent, direct.fusion_strategy, direct.modalities) == (
        "find_definition", "direct", ["structural"])
    assert [(h.path, h.start_line, h.symbol) for h in direct.hits] == [
        ("shop/models.py", 14, "discount")]
    response, notes = shop.search_with_fallback("where is the discount computed")
    assert (response.intent, notes, response.unavailable) == ("understand_code", [], {})
    assert [(h.path, h.symbol) for h in response.hits] == [
        ("shop/models.py", "discount"), ("shop/cart.py", None), ("README.md", None)]
    with pytest.raises(QueryError, match="unknown modality 'vector'"):
        shop.search_with_fallback("discount", modalities=("vector",))


def test_similar_code_comes_from_other_files(shop):
    hits = shop.similar("shop/cart.py:9")
    assert [(h.path, h.symbol) for h in hits] == [
        ("shop/models.py", "Item"), ("shop/models.py", "Item.price"),
        ("shop/models.py", "discount"), ("shop/models.py", "Book"),
        ("shop/models.py", "Book.price"), ("shop/models.py", None), ("README.md", None)]
    assert [(h.path, h.symbol) for h in shop.similar("shop/cart.py", limit=2)] == \
        [(h.path, h.symbol) for h in shop.similar("shop/cart.py:1", limit=2)]
    with pytest.raises(FourfoldError, match="nowhere.py is not in the index"):
        shop.similar("nowhere.py:3")


def test_task_context_packs_hits_and_their_graph_neighbours(shop):
    packed = shop.task_context("change how checkout applies the discount").pack(max_tokens=400)
    assert [(s["path"], s["symbol"], s["reason"]) for s in packed["spans"]] == [
        ("shop/models.py", "discount", "search result 1"),
        ("shop/cart.py", "checkout", "calls discount"),
        ("shop/models.py", "Book.price", "calls discount"),
        ("shop/cart.py", "total", "called by checkout"),
        ("README.md", None, "search result 3")]
    assert packed["spans"][1]["text"] == ("     8  def checkout(items):\n"
                                          "     9      return discount(total(items))")
    assert packed["used_tokens"] <= 400 and packed["next"] == 5
    small = shop.task_context("change how checkout applies the discount").pack(max_tokens=60)
    assert [s["symbol"] for s in small["spans"]] == ["discount"] and small["next"] == 1
    assert shop.estimate_tokens("x" * 40) == 11  # four characters a token, rounded up


# -- repositories and status --------------------------------------------------------------------
def test_status_repositories_and_modalities(shop):
    status = shop.status()
    assert status["index_dir"] == str(shop.root / ".fourfold") and status["index_bytes"] > 0
    [repo] = status["repositories"]
    assert {k: repo[k] for k in ("root", "name", "files", "chunks", "symbols", "languages")} == {
        "root": str(shop.root), "name": "shop-repo", "files": 3, "chunks": 10, "symbols": 7,
        "languages": {"python": 2, "markdown": 1}}
    assert status["modalities"] == {
        "text": "ready", "structural": "ready", "graph": "ready",
        "semantic": "ready (10/10 chunks embedded, model static-fit)"}
    assert shop.modality_status() == {"semantic": "ready", "text": "ready",
                                      "structural": "ready", "graph": "ready"}
    [listed] = shop.repositories()
    assert (listed["name"], listed["branch"], listed["files"]) == ("shop-repo", "main", 3)
    assert shop.repository("shop-repo") == shop.repository(str(shop.root)) == 1
    assert shop.repository(None) is None
    assert shop.repository_root() == (1, shop.root)
    with pytest.raises(QueryError, match="unknown repository 'other'; indexed: shop-repo"):
        shop.repository("other")


def test_definitions_rank_tests_and_vendored_code_below_source(make_tree):
    root = make_tree({
        "tests/test_cart.py": "def checkout():\n    return 'test'\n",
        "vendor/lib/cart.py": "def checkout():\n    return 'vendored'\n",
        "src/cart.py": "def checkout():\n    return 'real'\n",
    })
    ff = Fourfold(root)
    ff.index(embed=False)
    assert [d["path"] for d in ff.definitions("checkout")] == [
        "src/cart.py", "tests/test_cart.py", "vendor/lib/cart.py"]
    # the fused search weighs the flags once, in its ranking stage, tests below vendored code
    hits = ff.search("def checkout", modalities=("structural",)).hits
    assert [h.path for h in hits] == ["src/cart.py", "vendor/lib/cart.py", "tests/test_cart.py"]
    assert hits[1].factors == {"vendor": 0.5} and hits[2].factors == {"test": 0.25}
