"""One filter stage: path globs, languages, kinds and tests are honoured by every modality
(text, structural, graph, semantic) on a repository in three languages, and an unknown
language or kind is refused with a clear message."""
from __future__ import annotations

import pytest

from fourfold import Fourfold
from fourfold.errors import QueryError
from fourfold.interfaces.cli import main
from fourfold.query.filters import Filters, kinds_named, languages_named

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


@pytest.mark.parametrize("modality", MODALITIES)
def test_every_modality_answers_unfiltered(ff, modality):
    assert search(ff, modality), f"{modality} found nothing: the filter tests would prove nothing"


@pytest.mark.parametrize("modality, question, glob", [
    ("text", None, "py/app/*"), ("structural", "save_user", "go/*"), ("semantic", None, "ts/*"),
    ("graph", "who calls save_user", "py/tests/*")])
def test_path_glob_is_honoured(ff, modality, question, glob):
    prefix = glob.rstrip("*")
    everything = search(ff, modality, question)
    assert any(not h.path.startswith(prefix) for h in everything)  # the glob has work to do
    inside = search(ff, modality, question, path_glob=glob)
    assert inside and all(h.path.startswith(prefix) for h in inside)


@pytest.mark.parametrize("modality", MODALITIES)
@pytest.mark.parametrize("wanted", ["python", "typescript", "go"])
def test_language_is_honoured(ff, modality, wanted):
    hits = search(ff, modality, languages=(wanted,))
    assert all(language(h.path) == wanted for h in hits)
    if modality != "graph" or wanted == "python":  # the graph question names a Python function
        assert hits, f"{modality} lost every {wanted} hit"


@pytest.mark.parametrize("modality", ["text", "structural", "semantic"])
def test_kind_is_honoured_and_method_is_only_methods(ff, modality):
    methods = search(ff, modality, "save_user" if modality == "structural" else None,
                     kinds=("method",))
    assert methods
    kinds = {ff.snapshots.current().symbol_kind(h.path, h.symbol) or h.kind for h in methods}
    assert kinds == {"method"}
    classes = search(ff, modality, kinds=("class",))
    assert {h.symbol.split(".")[-1] for h in classes if h.symbol} <= {"UserService"}


@pytest.mark.parametrize("modality, question", [
    ("text", "save user"), ("structural", "test_save_user"), ("semantic", "test saving a user"),
    ("graph", "who calls save_user")])
def test_tests_can_be_left_out(ff, modality, question):
    assert any("tests/" in h.path for h in search(ff, modality, question))
    assert not any("tests/" in h.path for h in search(ff, modality, question, exclude_tests=True))


def test_definitions_kind_method_is_exact(ff):
    assert {d["kind"] for d in ff.definitions("save_user", kind="method")} == {"method"}
    assert ff.definitions("persist_user", kind="method") == []
    assert {d["kind"] for d in ff.definitions("persist_user", kind="function")} == {"function"}


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
    assert "struct" in kinds_named(["class"])
    assert Filters.of(path_glob="  ").path_glob is None


def test_cli_filters_in_any_order(ff, capsys):
    root = str(ff.root)
    assert main(["search", "save user", "--language", "go", root, "--json"]) == 0
    out = capsys.readouterr().out
    assert "go/user/service.go" in out and ".py" not in out
    assert main(["search", "save user", root, "--language", "cobol"]) == 2
    assert "unknown language 'cobol'" in capsys.readouterr().err
    assert main(["search", "UserService", "--explain", root, "--kind", "method"]) == 0
    assert main(["def", "parse", "--kind", "methd", root]) == 2


def test_case_insensitive_bare_name_is_labelled_case(ff):
    found = {d["path"]: d["match"] for d in ff.definitions("userservice")}
    assert set(found.values()) == {"case"}
