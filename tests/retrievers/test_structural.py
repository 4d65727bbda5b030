"""The structural modality: definition lookup (exact, case, style variants, home files,
re-exports) and the names a question spells, on small indexed repositories."""
from __future__ import annotations

from fourfold import Fourfold
from fourfold.retrievers.structural import named_after
from fourfold.store.base import StoredSymbol


def test_definition_lookup_prefers_the_file_named_after_the_symbol(make_tree):
    partial = "namespace Pack {{ public static partial class Serializer {{ {body} }} }}\n"
    root = make_tree({
        "src/Json.cs": partial.format(body="public static string ToJson() => \"\";"),
        "src/Serializer.cs": partial.format(body="public static byte[] Serialize() => null;"),
        "lib/plug/adapters/test/conn.ex": "defmodule Plug.Adapters.Test.Conn do\nend\n",
        "lib/plug/conn.ex": "defmodule Plug.Conn do\n  defstruct [:host]\nend\n",
        "lib/plug/test.ex": "defmodule Plug.Test do\n  def conn(method), do: method\nend\n",
    })
    ff = Fourfold(root)
    ff.index(embed=False)
    found = ff.definitions("Serializer")
    assert [d["path"] for d in found] == ["src/Serializer.cs", "src/Json.cs"]
    conn = ff.definitions("Conn")  # a module is called by its last segment
    assert [(d["path"], d["match"]) for d in conn] == [
        ("lib/plug/conn.ex", "exact"), ("lib/plug/adapters/test/conn.ex", "exact"),
        ("lib/plug/test.ex", "case")]  # the function conn: same name, other case


def test_a_file_answers_its_own_name_after_the_definitions(make_tree):
    root = make_tree({
        "lib/application.js": "var app = exports = module.exports = {};\n"
                              "app.init = function init() { this.cache = {}; };\n",
        "lib/express.js": "function createApplication() { return {}; }\n",
        "lib/router.js": "function application() { return 1; }\n",
    })
    ff = Fourfold(root)
    ff.index(embed=False)
    hits = ff.search("application", modalities=("structural",), limit=5).hits
    # exact answers exist, so createApplication (a sub-word match) is left out
    assert [(h.path, h.kind) for h in hits] == [("lib/router.js", "function"),
                                                ("lib/application.js", "module")]
    # neither a function nor a module is a class
    assert ff.search("class application", modalities=("structural",)).hits == []


def test_home_file_of_a_dotted_module_and_of_a_partial_class():
    def sym(path, name):
        return StoredSymbol(1, 1, path, name, name, "class", 1, 2, "", "", None, 0, None)
    assert named_after(sym("lib/plug/conn.ex", "Plug.Conn")) is True
    assert named_after(sym("src/MessagePackSerializer.cs", "MessagePackSerializer")) is True
    assert named_after(sym("src/MessagePackSerializer.Json.cs",
                           "MessagePackSerializer")) is False
    assert named_after(sym("src/helpers.py", "Conn")) is False


def test_a_rust_pub_use_answers_for_a_name_defined_outside_the_tree(make_tree):
    root = make_tree({
        "src/extract/mod.rs": "pub use other_core::extract::{FromRef, FromRequest};\n"
                              "pub use self::path::Path;\nuse std::fmt;\n",
        "src/extract/path.rs": "pub struct Path(String);\n",
        "src/handler.rs": "use crate::extract::Path;\n"
                          "pub fn handle(p: Path) -> Path { Path::from(p) }\n",
    })
    ff = Fourfold(root)
    ff.index(embed=False)
    assert [(d["path"], d["kind"]) for d in ff.definitions("FromRequest")] == [
        ("src/extract/mod.rs", "reexport")]
    # a real definition comes before the re-export of it; a private `use` is no re-export
    assert [(d["path"], d["kind"]) for d in ff.definitions("Path")] == [
        ("src/extract/path.rs", "struct"), ("src/extract/mod.rs", "reexport")]
    assert ff.definitions("fmt") == []
    hits = ff.search("FromRequest", limit=3).hits
    assert [(h.path, h.start_line, h.symbol) for h in hits] == [
        ("src/extract/mod.rs", 1, "FromRequest")]
    # the re-export is not a definition the graph resolves to, nor does it own the line
    callers = ff.references("Path")["results"]
    assert [(r["path"], r["line"], r["symbol"], r["resolved"]) for r in callers] == [
        ("src/handler.rs", 2, "handle", True)]


def test_an_identifier_spelled_in_a_question_names_its_definition(make_tree):
    root = make_tree({
        "src/extract/mod.rs": "pub use other_core::extract::FromRequest;\n",
        "src/request.rs": "pub struct Request;\npub fn from_parts() {}\n"
                          "pub struct RequestParts;\npub struct RequestBody;\n",
    })
    ff = Fourfold(root)
    ff.index(embed=False)
    structural = ff.engine.retrievers["structural"]

    def named(text):
        return [s.name for s, _ in structural.named_by(text, None, None, 5)]
    # the identifier spelled comes first, the definitions sharing its sub-words after it
    assert named("how extractors implement FromRequest") == [
        "FromRequest", "Request", "RequestParts", "RequestBody"]
    assert named("how RequestParts and from_parts work") == [
        "RequestParts", "from_parts", "Request", "RequestBody"]
    # a long text naming many defined identifiers (an issue, a traceback) singles none out:
    # the re-export it spells first is not put first
    assert named("FromRequest fails in RequestParts after from_parts with RequestBody") == [
        "RequestParts", "RequestBody", "Request", "from_parts"]


def test_a_name_spelled_by_two_words_is_found_among_many_holding_one(make_tree, monkeypatch):
    """A big repository holds a common word in more names than are read: the names that
    hold two of the question's words are looked up on their own, so they still come."""
    from fourfold.retrievers import structural as module
    monkeypatch.setattr(module, "ONE_WORD_NAMES", 20)
    many = "".join(f"def task_helper_{i}():\n    pass\n" for i in range(60))
    root = make_tree({"a_tasks.py": many,
                      "z_sched.py": "def pick_next_task():\n    pass\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    found = ff.engine.retrievers["structural"].named_by(
        "how does the scheduler pick the next task", None, None, 5)
    assert found[0][0].name == "pick_next_task"
    assert len(found) == 5


def test_an_exact_definition_keeps_its_style_variants_and_drops_partial_names(make_tree):
    root = make_tree({
        "reader.py": "class JsonReader:\n    pass\n\n\ndef json_reader():\n    pass\n\n\n"
                     "def jsonreader():\n    pass\n\n\nclass JsonReaderFactory:\n    pass\n",
        "writer.py": "class JsonWriter:\n    pass\n",
    })
    ff = Fourfold(root)
    ff.index(embed=False)
    found = [(d["name"], d["match"]) for d in ff.definitions("JsonReader")]
    assert found == [("JsonReader", "exact"), ("jsonreader", "case"), ("json_reader", "style")]
    # without an exact definition, prefixes and sub-words still answer
    assert [(d["name"], d["match"]) for d in ff.definitions("JsonRead")] == [
        ("JsonReader", "prefix"), ("JsonReaderFactory", "prefix"), ("jsonreader", "prefix")]


def test_style_variants_without_separators_stay_beside_an_exact_definition(make_tree):
    root = make_tree({
        "a.py": "def get_opt():\n    pass\n",
        "b.py": "GET_OPT = 1\n\n\ndef getopt():\n    pass\n",
        "c.py": "def get_option():\n    pass\n",
    })
    ff = Fourfold(root)
    ff.index(embed=False)
    found = [(d["name"], d["match"]) for d in ff.definitions("get_opt")]
    assert found == [("get_opt", "exact"), ("GET_OPT", "case"), ("getopt", "style")]
