"""Task context: the declarations a task names come into the pack (when its settings ask for
them), and a pack stays within its budget."""
from __future__ import annotations

import pytest

from fourfold import Fourfold
from fourfold.context import ContextSettings, approx_tokens, declared_name, task_context
from tests.conftest import write_tree

# A web app whose settings defaults sit in a class attribute, far down a long class: the
# search finds the class's methods first, and they alone would fill the budget.
HANDLERS = "".join(f'''
    def handle_{name}(self, request):
        """Answer a {name} request with the app's config applied."""
        options = dict(self.config)
        options["{name}"] = request.args.get("{name}")
        response = self.make_response(request, options)
        response.headers["X-{name}"] = str(options["{name}"])
        return response
''' for name in ("login", "logout", "upload", "download", "search", "profile", "avatar",
                 "settings", "export", "import_data", "billing", "invoice"))

WEBAPP = {
    "webapp/app.py": f'''\
import os

from webapp.config import Config


class App:
    """The application: handlers, and the config they read."""
{HANDLERS}
    def make_response(self, request, options):
        return {{"request": request, "options": options}}

    # The defaults every new config starts from; a new option gets its default here.
    default_config = {{
        "DEBUG": False,
        "SECRET_KEY": None,
        "SESSION_COOKIE_NAME": "session",
        "MAX_CONTENT_LENGTH": None,
    }}

    def __init__(self, root):
        self.root = root
        self.config = Config(root, self.default_config)
''',
    "webapp/config.py": '''\
class Config(dict):
    """The settings of an app: the defaults, then what a file or the environment adds."""

    def __init__(self, root, defaults=None):
        super().__init__(defaults or {})
        self.root = root

    def from_mapping(self, mapping):
        for key, value in mapping.items():
            if key.isupper():
                self[key] = value
        return True

    def get_namespace(self, namespace):
        return {k[len(namespace):].lower(): v for k, v in self.items()
                if k.startswith(namespace)}
''',
    "README.md": "# webapp\n\nA small web framework.\n",
}

# A command struct with many fields: the field the task means is past what a pack sends of
# the struct itself.
FIELDS = "".join(f"\t// {name} is the {name.lower()} of the command.\n\t{name} string\n"
                 for name in ("Use", "Short", "Long", "Example", "Version", "Group", "Alias",
                              "Suggest", "Deprecated", "Annotation", "Prefix", "Suffix", "Banner",
                              "Footer", "Header", "Usage", "Template", "Separator", "Indent",
                              "Width", "Prompt", "Editor", "Pager", "Shell", "Locale", "Theme",
                              "Owner", "Origin", "License", "Homepage", "Repository", "Category",
                              "Stage", "Domain", "Region", "Zone", "Tenant", "Project", "Profile",
                              "Channel"))

CLI = {
    "cli/command.go": '''\
package cli

// Command is one command of a program, with its subcommands.
type Command struct {
''' + FIELDS + '''\
\t// Hidden defines, if this command is hidden and should NOT show up in the list of
\t// available commands.
\tHidden bool
\tcommands []*Command
}

// Commands returns the subcommands of c.
func (c *Command) Commands() []*Command {
\treturn c.commands
}
''',
    "cli/help.go": '''\
package cli

import "fmt"

// IsAvailableCommand tells whether a command is listed in the help of its parent.
func (c *Command) IsAvailableCommand() bool {
\treturn len(c.Use) > 0
}

// PrintHelp prints the help of a command: its usage and the commands it lists.
func PrintHelp(c *Command) {
\tfmt.Println(c.Use)
\tfor _, sub := range c.Commands() {
\t\tif sub.IsAvailableCommand() {
\t\t\tfmt.Println("  " + sub.Use + "  " + sub.Short)
\t\t}
\t}
}
''',
}


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """Each fixture repository, indexed once for the module."""
    opened = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FOURFOLD_CACHE_DIR", str(tmp_path_factory.mktemp("vector-cache")))
        for name, files in (("webapp", WEBAPP), ("cli", CLI)):
            ff = Fourfold(write_tree(tmp_path_factory.mktemp("context") / name, files))
            ff.index(workers=1)
            opened[name] = ff
    yield opened
    for ff in opened.values():
        ff.close()


WITH_DECLARATIONS = ContextSettings(config_points=1, config_after=1)


def spans_with(packed: dict, text: str) -> list[dict]:
    return [s for s in packed["spans"] if text in s["text"]]


def test_a_config_task_gets_the_defaults_definition_within_budget(indexed):
    ff = indexed["webapp"]
    packed = task_context(ff, "add a config option", settings=WITH_DECLARATIONS
                          ).pack(max_tokens=1500)
    [defaults] = spans_with(packed, "default_config = {")
    assert (defaults["path"], defaults["symbol"], defaults["reason"]) == (
        "webapp/app.py", "default_config", "declaration the task names")
    # the whole statement, with the comment above it
    assert defaults["text"].splitlines()[0].endswith("# The defaults every new config "
                                                      "starts from; a new option gets its "
                                                      "default here.")
    assert defaults["text"].splitlines()[-1].endswith("    }")
    assert packed["used_tokens"] <= 1500
    # the default holds it too; without the declarations the pack spends the same budget on
    # handlers and misses it
    assert spans_with(ff.task_context("add a config option").pack(max_tokens=1500),
                      "default_config = {")
    plain = task_context(ff, "add a config option", settings=ContextSettings(config_points=0))
    assert not spans_with(plain.pack(max_tokens=1500), "default_config = {")


def test_a_help_task_gets_the_field_it_names(indexed):
    packed = task_context(indexed["cli"], "hide a command from help",
                          settings=WITH_DECLARATIONS).pack(max_tokens=2000)
    [hidden] = spans_with(packed, "\tHidden bool")
    field = CLI["cli/command.go"].splitlines().index("\tHidden bool") + 1
    assert (hidden["path"], hidden["symbol"], hidden["reason"]) == (
        "cli/command.go", "Hidden", "declaration the task names")
    assert (hidden["start_line"], hidden["end_line"]) == (field - 2, field)  # with its comment
    assert packed["used_tokens"] <= 2000


@pytest.mark.parametrize("budget", [100, 150, 300, 500, 800, 1200, 2000, 4000, 8000])
@pytest.mark.parametrize("task", ["add a config option", "change how login handles the "
                                  "session cookie", "hide a command from help"])
def test_a_pack_never_exceeds_its_budget(indexed, task, budget):
    for ff in indexed.values():
        for settings in (None, WITH_DECLARATIONS):
            packed = task_context(ff, task, settings=settings).pack(max_tokens=budget)
            assert packed["spans"]
            assert packed["used_tokens"] <= budget
            assert sum(approx_tokens(span) for span in packed["spans"]) <= budget


@pytest.mark.parametrize("line, name", [
    ("DEBUG = False", "DEBUG"),
    ("    default_config: dict = {", "default_config"),
    ("export const DEFAULT_TIMEOUT = 30;", "DEFAULT_TIMEOUT"),
    ("\tverbose := flag.Bool(\"v\", false, \"talk more\")", "verbose"),
    ("\tHidden bool `json:\"hidden\"`", "Hidden"),
    ("    pub name: String,", "name"),
    ("    return value", None),
    ("import os", None),
    ("if x == 1:", None),
])
def test_declared_names(line, name):
    assert declared_name(line) == name


def test_a_span_inside_one_sent_in_part_is_sent_too(tmp_path):
    """A method inside a class: left out where the class went whole, sent where only the
    class's first lines went (its span once assumed the first 80 lines were sent)."""
    from fourfold.context import TaskContext

    body = "".join(f"    attribute_{n} = {n}\n" for n in range(30))
    root = write_tree(tmp_path / "repo", {"vault.py": (
        "class Vault:\n" + body + "\n\n    def rotate_credentials(self):\n"
        "        return 'rotated'\n")})
    ff = Fourfold(root)
    ff.index(embed=False)
    spans = [{"path": "vault.py", "start_line": 1, "end_line": 35, "symbol": "Vault"},
             {"path": "vault.py", "start_line": 34, "end_line": 35,
              "symbol": "Vault.rotate_credentials"}]
    context = TaskContext(ff, None, {}, spans)
    whole = context.pack()
    assert [s["symbol"] for s in whole["spans"]] == ["Vault"] and whole["next"] == 2
    cut = context.pack(max_span_lines=10)
    assert [s["symbol"] for s in cut["spans"]] == ["Vault", "Vault.rotate_credentials"]
    assert "return 'rotated'" in cut["spans"][1]["text"]
