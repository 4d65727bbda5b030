"""One filter stage: path globs, languages, kinds and tests are honoured by every modality
(text, structural, graph, semantic) on a repository in three languages, and an unknown
language or kind is refused with a clear message."""
from __future__ import annotations

import json

import pytest

from fourfold import Fourfold
from fourfold.errors import QueryError
from fourfold.interfaces.cli import main
from fourfold.query.filters import Filters, kinds_named, languages_named
from tests.conftest import write_tree

FILES = {
    "py/app/service.py": '''\
        class UserService:
            """Stores users."""

            def save_user(self, user):
                return persist_user(user)


        def persist_user(user):
            return user
        ''',
    "py/app/api.py": '''\
        from app.service import UserService


        def register_user(user):
            return UserService().save_user(user)
        ''',
    "py/tests/test_service.py": '''\
        from app.service import UserService


        def test_save_user():
            assert UserService().save_user("ann") == "ann"
        ''',
    "ts/src/userService.ts": '''\
        export class UserService {
          saveUser(user: string): string {
            return persistUser(user);
          }
        }

        export function persistUser(user: string): string {
          return user;
        }

        export function registerUser(user: string): string {
          return new UserService().saveUser(user);
        }
        ''',
    "go/user/service.go": '''\
        package user

        type UserService struct{}

        func (s *UserService) SaveUser(user string) string {
        \treturn PersistUser(user)
        }

        func PersistUser(user string) string {
        \treturn user
        }

        func RegisterUser(user string) string {
        \ts := &UserService{}
        \treturn s.SaveUser(user)
        }
        ''',
}
LANGUAGE_OF = {".py": "python", ".ts": "typescript", ".go": "go"}
MODALITIES = ("text", "structural", "semantic", "graph")
# per modality, a question it answers on this repository
QUESTIONS = {"text": "save user persist user", "structural": "UserService",
             "semantic": "save a user in the user service", "graph": "who calls persist_user"}


@pytest.fixture(scope="module")
def ff(tmp_path_factory):
    from tests.conftest import write_tree
    root = write_tree(tmp_path_factory.mktemp("filters") / "repo", FILES)
    index = Fourfold(root)
    index.index()
    return index


def search(ff, modality, question=None, **filters):
    return ff.search(question or QUESTIONS[modality], modalities=(modality,), limit=50,
                     **filters).hits


def language(path: str) -> str:
    return LANGUAGE_OF[path[path.rfind("."):]]


def found(hits) -> list[tuple[str, str | None]]:
    return [(h.path, h.symbol) for h in hits]


EVERY_FILE = set(FILES)
USER_SERVICES = {("py/app/service.py", "UserService"), ("ts/src/userService.ts", "UserService"),
                 ("go/user/service.go", "UserService")}
SAVE_METHODS = {("py/app/service.py", "UserService.save_user"),
                ("ts/src/userService.ts", "UserService.saveUser"),
                ("go/user/service.go", "UserService.SaveUser")}


@pytest.mark.parametrize("modality", MODALITIES)
def test_every_modality_answers_unfiltered(ff, modality):
    # what every filter test below narrows: each modality answers from more than one place
    expected = {"text": EVERY_FILE, "semantic": EVERY_FILE,
                "structural": {path for path, _ in USER_SERVICES},
                "graph": {"py/app/service.py"}}[modality]  # save_user calls persist_user
    hits = search(ff, modality)
    assert {h.path for h in hits} == expected and len(hits) == len(expected)


@pytest.mark.parametrize("modality, question, glob", [
    ("text", None, "py/app/*"), ("structural", "save_user", "go/*"), ("semantic", None, "ts/*"),
    ("graph", "who calls save_user", "py/tests/*")])
def test_path_glob_is_honoured(ff, modality, question, glob):
    prefix = glob.rstrip("*")
    everything = found(search(ff, modality, question))
    assert any(not path.startswith(prefix) for path, _ in everything)  # the glob has work to do
    inside = found(search(ff, modality, question, path_glob=glob))
    # exactly the unfiltered answers under the glob, in the same order
    assert inside == [(path, symbol) for path, symbol in everything if path.startswith(prefix)]
    assert len(inside) == {"text": 2, "structural": 1, "semantic": 1, "graph": 1}[modality]


@pytest.mark.parametrize("modality", MODALITIES)
@pytest.mark.parametrize("wanted", ["python", "typescript", "go"])
def test_language_is_honoured(ff, modality, wanted):
    everything = found(search(ff, modality))
    hits = found(search(ff, modality, languages=(wanted,)))
    # exactly the unfiltered answers in that language, in the same order
    assert hits == [(path, symbol) for path, symbol in everything if language(path) == wanted]
    # the graph question names a Python function: only Python code calls it
    assert bool(hits) is (modality != "graph" or wanted == "python"), hits


@pytest.mark.parametrize("modality", ["text", "structural", "semantic"])
def test_kind_is_honoured_and_method_is_only_methods(ff, modality):
    methods = search(ff, modality, "save_user" if modality == "structural" else None,
                     kinds=("method",))
    assert set(found(methods)) == SAVE_METHODS and len(methods) == 3
    kinds = {ff.snapshots.current().symbol_kind(h.path, h.symbol) or h.kind for h in methods}
    assert kinds == {"method"}
    classes = search(ff, modality, kinds=("class",))  # the class family: a Go struct too
    assert set(found(classes)) == USER_SERVICES and len(classes) == 3


@pytest.mark.parametrize("modality, question", [
    ("text", "save user"), ("structural", "test_save_user"), ("semantic", "test saving a user"),
    ("graph", "who calls save_user")])
def test_tests_can_be_left_out(ff, modality, question):
    everything = found(search(ff, modality, question))
    assert ("py/tests/test_service.py", "test_save_user") in everything
    kept = found(search(ff, modality, question, exclude_tests=True))
    assert set(kept) == {hit for hit in everything if not hit[0].startswith("py/tests/")}
    assert len(kept) == len(everything) - 1


def test_definitions_kind_method_is_exact(ff):
    methods = ff.definitions("save_user", kind="method")
    assert {(d["path"], d["qualname"]) for d in methods} == SAVE_METHODS
    assert {d["kind"] for d in methods} == {"method"}
    assert ff.definitions("persist_user", kind="method") == []
    functions = ff.definitions("persist_user", kind="function")
    assert [(d["path"], d["qualname"], d["kind"]) for d in functions] == [
        ("py/app/service.py", "persist_user", "function"),
        ("go/user/service.go", "PersistUser", "function"),
        ("ts/src/userService.ts", "persistUser", "function")]


@pytest.mark.parametrize("bad, message", [
    ({"languages": ("cobol",)}, "unknown language 'cobol'"),
    ({"kinds": ("methd",)}, "did you mean method"),
])
def test_unknown_filter_values_are_refused(ff, bad, message):
    with pytest.raises(QueryError, match=message):
        ff.search("save user", **bad)


def test_language_names_and_kind_families():
    assert languages_named(["TS"]) == {"typescript", "tsx"}
    assert languages_named(["py", "go"]) == {"python", "go"}
    assert kinds_named(["method"]) == {"method"}
    assert kinds_named(["class"]) == {"class", "enum", "interface", "struct", "trait", "type"}
    assert Filters.of(path_glob="  ").path_glob is None


def test_cli_filters_in_any_order(ff, capsys):
    root = str(ff.root)
    assert main(["search", "save user", "--language", "go", root, "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert [(r["path"], r["symbol"]) for r in results] == [("go/user/service.go",
                                                             "UserService.SaveUser")]
    assert main(["search", "save user", root, "--language", "cobol"]) == 2
    assert "unknown language 'cobol'" in capsys.readouterr().err
    assert main(["search", "UserService", "--explain", root, "--kind", "method"]) == 0
    answers = [line.split()[:2] for line in capsys.readouterr().out.splitlines()
               if line and not line.startswith(("#", " "))]
    assert {(path.split(":")[0], symbol) for path, symbol in answers} == SAVE_METHODS
    assert main(["def", "parse", "--kind", "methd", root]) == 2
    assert "did you mean method" in capsys.readouterr().err


def test_case_insensitive_bare_name_is_labelled_case(ff):
    matches = {(d["path"], d["name"], d["match"]) for d in ff.definitions("userservice")}
    assert matches == {(path, name, "case") for path, name in USER_SERVICES}


@pytest.fixture(scope="module")
def service(ff):
    from fourfold.interfaces.mcp.tools import FourfoldService
    svc = FourfoldService(ff.root, watch=False, embed=False).start(block=True)
    yield svc
    svc.close()


@pytest.mark.parametrize("tool, args, allowed", [
    ("intelligent_search", {"query": "save user", "language": "go"}, (".go",)),
    ("semantic_search", {"query": "save a user", "language": "typescript"}, (".ts",)),
    ("intelligent_search", {"query": "save user", "path_glob": "py/app/*"}, ("py/app/",)),
    ("text_pattern_search", {"pattern": "user", "path_glob": "ts/*"}, ("ts/",)),
    ("find_symbol", {"name": "save_user", "path_glob": "go/*"}, ("go/",)),
    ("structural_search", {"name": "save_user", "path_glob": "py/*"}, ("py/",)),
])
def test_every_mcp_tool_honours_its_filters(service, tool, args, allowed):
    results = getattr(service, tool)(**args)["results"]
    assert results
    for r in results:
        assert r["path"].endswith(allowed) or r["path"].startswith(allowed), (tool, r["path"])


def test_mcp_kind_method_is_only_methods(service):
    found = service.find_symbol("save_user", kind="method")["results"]
    assert {r["path"] for r in found} == {"py/app/service.py", "ts/src/userService.ts",
                                          "go/user/service.go"}
    assert service.find_symbol("persist_user", kind="method")["results"] == []


@pytest.mark.parametrize("tool, args, message", [
    ("intelligent_search", {"query": "save user", "language": "cobol"}, "unknown language"),
    ("semantic_search", {"query": "save user", "language": "klingon"}, "unknown language"),
    ("find_symbol", {"name": "save_user", "kind": "methd"}, "did you mean method"),
])
def test_mcp_refuses_unknown_filter_values(service, tool, args, message):
    with pytest.raises(QueryError, match=message):
        getattr(service, tool)(**args)


@pytest.mark.parametrize("modality", ["text", "semantic"])
def test_a_glob_that_nothing_matches_asks_no_deeper_than_the_bound(make_tree, monkeypatch,
                                                                   modality):
    from fourfold.retrievers import semantic, text

    module = text if modality == "text" else semantic
    monkeypatch.setattr(module, "GLOB_POOL_MOST", 700)
    files = {f"m{i}.py": f"def render_{i}(widget):\n    return widget.render({i})\n"
             for i in range(250)}  # more chunks than one deepening: a second is asked for
    ff = Fourfold(make_tree(files))
    ff.index()
    asked = []
    store_method = "bm25_chunks" if modality == "text" else "nearest_codes"
    real = getattr(type(ff.store), store_method)

    def counting(self, *args, **kwargs):
        asked.append(args[1] if modality == "text" else args[3])
        return real(self, *args, **kwargs)
    monkeypatch.setattr(type(ff.store), store_method, counting)
    assert not ff.search("render the widget", modalities=(modality,),
                         path_glob="nowhere/*").hits
    assert asked and max(asked) <= 700


@pytest.mark.parametrize("modality", ["text", "semantic"])
def test_a_narrow_glob_finds_what_lies_below_the_first_answers(make_tree, modality):
    """Ranked chunks are filtered by the glob after the search: a folder whose chunks rank
    below the first few dozen of the repository got no answer at all."""
    files = {f"decoy/d{i}.py": f"def render_widget_{i}(widget):\n"
                               f"    '''Render the widget and its widget children.'''\n"
                               f"    return widget.render(widget.children, {i})\n"
             for i in range(400)}
    files["special/odd.py"] = ("def tidy_up(items):\n    '''Sort the items, then render "
                               "them once.'''\n    return sorted(items)\n")
    ff = Fourfold(make_tree(files))
    ff.index()
    everywhere = ff.search("render the widget", modalities=(modality,), limit=10).hits
    assert all(h.path.startswith("decoy/") for h in everywhere)
    inside = ff.search("render the widget", modalities=(modality,), limit=10,
                       path_glob="special/*").hits
    assert [h.path for h in inside] == ["special/odd.py"]


def _many_files(seed: int) -> dict[str, str]:
    words = ["parse", "render", "cache", "widget", "token", "stream", "queue", "route"]
    return {f"m{seed}{i:03d}.py": "".join(
        f"def {words[(i + j) % 8]}_{words[(i * 3 + j) % 8]}_{i}_{j}(x):\n"
        f"    '''{words[(i + j) % 8]} the {words[(i * 5 + j) % 8]} of x.'''\n"
        f"    return {words[(i * 7 + j) % 8]}(x, {i})\n\n\n" for j in range(3))
            for i in range(200)}


def test_the_first_answers_do_not_depend_on_how_many_are_asked_for(make_tree, tmp_path):
    """Each modality was asked for three times the limit, so the first 10 of 100 answers
    differed from the 10 asked for alone (and an agent's page from the command line's).
    Answers past the first come from deeper lists: never a file twice, and scored below
    the first, so that several repositories' answers merge in the same order."""
    ff = Fourfold(make_tree(_many_files(1)))
    ff.index()
    for question in ("how is a widget rendered from the cache", "parse the token stream"):
        for granularity in ("file", "span", "function"):
            hits = ff.search(question, limit=100, granularity=granularity).hits
            most = [(h.path, h.start_line) for h in hits]
            assert len(most) == 100 and len(set(most)) == 100
            scores = [h.score for h in hits]  # best first, those from deeper lists too
            assert scores == sorted(scores, reverse=True)
            if granularity == "file":
                assert len({path for path, _ in most}) == 100
            for limit in (5, 10, 20, 50):
                some = [(h.path, h.start_line) for h in
                        ff.search(question, limit=limit, granularity=granularity).hits]
                assert some == most[:limit], (question, granularity, limit)
    shared = tmp_path / "shared-index"
    for seed in (2, 3):
        root = write_tree(tmp_path / f"r{seed}", _many_files(seed))
        Fourfold(root, repository=f"acme/r{seed}", index_dir=shared).index()
    both = Fourfold(tmp_path / "r3", repository="acme/r3", index_dir=shared)
    most = [(h.repository, h.path) for h in
            both.search_repositories("parse the token stream", limit=100).hits]
    assert len(set(most)) == 100 and {repository for repository, _ in most} == {
        "acme/r2", "acme/r3"}
    for limit in (10, 30):
        assert [(h.repository, h.path) for h in both.search_repositories(
            "parse the token stream", limit=limit).hits] == most[:limit], limit
