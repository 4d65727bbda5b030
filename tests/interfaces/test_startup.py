"""A fast start: the command line loads only what a command needs."""
from __future__ import annotations

import json
import os
import subprocess
import sys

HEAVY = ("numpy", "scipy", "onnxruntime", "mcp", "tokenizers")


def test_version_loads_no_heavy_module():
    code = ("import sys\nfrom fourfold.interfaces.cli import main\n"
            "try:\n    main(['--version'])\nexcept SystemExit as exit:\n    assert exit.code == 0\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    version, loaded = result.stdout.strip().splitlines()
    assert version.startswith("fourfold ") and loaded == "[]"


def test_the_command_answers_version_without_loading_the_engine():
    code = ("import sys\nfrom fourfold.interfaces.entry import main\n"
            "assert main(['--version']) == 0\n"
            "print(sorted(m for m in sys.modules if m.startswith('fourfold')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60)
    version, loaded = result.stdout.strip().splitlines()
    assert version == "fourfold 0.1.0"
    assert loaded == "['fourfold', 'fourfold.interfaces', 'fourfold.interfaces.entry']"


def test_the_command_hands_everything_else_to_the_command_line(make_tree, capsys):
    from fourfold.interfaces.entry import main
    root = make_tree({"a.py": "VALUE = 'START_MARKER'\n"})
    assert main(["grep", "START_MARKER", str(root)]) == 0
    assert "a.py:1" in capsys.readouterr().out


def _command_loads(argv: list[str], modules: tuple[str, ...]) -> tuple[str, str]:
    """The command line run with `argv` in a new interpreter: "EXIT_CODE [the `modules` it
    loaded]", and its standard error."""
    code = ("import sys\nfrom fourfold.interfaces.cli import main\n"
            f"code = main({argv!r})\n"
            f"print(code, sorted(m for m in {modules!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    return (result.stdout.strip().splitlines() or [""])[-1], result.stderr


def test_grep_on_an_indexed_folder_loads_no_scipy_or_models(make_tree):
    from fourfold import Fourfold
    root = make_tree({"a.py": "VALUE = 'START_MARKER'\n"})
    Fourfold(root).index(embed=False)
    loaded, errors = _command_loads(["grep", "START_MARKER", str(root)], HEAVY)
    assert loaded == "0 []", errors


def test_an_index_run_loads_no_search_module(make_tree):
    """`fourfold index` reads no retriever, search engine, ranking stage or navigation: a
    fresh checkout's run is a fifth of a second, and they were about 20 ms of it."""
    root = make_tree({"a.py": "def handler():\n    return helper()\n",
                      "b.py": "def helper():\n    return 1\n"})
    search = ("fourfold.routing.engine", "fourfold.retrievers.text",
              "fourfold.retrievers.structural", "fourfold.retrievers.graph",
              "fourfold.retrievers.semantic", "fourfold.navigation", "fourfold.ranking.priors",
              "fourfold.ranking.learned")
    loaded, errors = _command_loads(["index", str(root), "--no-embed"], search)
    assert loaded == "0 []", errors


def test_a_search_of_an_indexed_folder_compiles_no_ignore_rules(make_tree):
    """Only a walk reads ignore files: a search process does not load pathspec (~30 ms)."""
    from fourfold import Fourfold
    root = make_tree({"a.py": "def handler():\n    return 'START_MARKER'\n",
                      ".gitignore": "*.log\n"})
    Fourfold(root).index(embed=False)
    loaded, errors = _command_loads(["search", "where is the handler", str(root)],
                                    ("pathspec",))
    assert loaded == "0 []", errors


def test_mcp_server_answers_text_and_symbols_without_heavy_modules(make_tree):
    """The MCP server's SDK, its start and a first text or symbol answer need no numpy,
    scipy or model (the embedder is left out: it starts in the background, after the
    index run at start that waits for the first answer)."""
    from fourfold import Fourfold
    root = make_tree({"a.py": "def handler():\n    return 'START_MARKER'\n"})
    Fourfold(root).index(embed=False)
    code = ("import sys\nfrom fourfold.interfaces.mcp.server import build_server\n"
            "from fourfold.interfaces.mcp.tools import FourfoldService\n"
            f"service = FourfoldService({str(root)!r}, watch=False, embed=False)\n"
            "build_server(service)\n"
            "service.start()\n"
            "assert service.text_pattern_search('START_MARKER')['total'] == 1\n"
            "assert service.find_symbol('handler')['total'] == 1\n"
            "assert service.get_file('a.py')['returned'] == 2\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules and m != 'mcp'))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.stdout.strip().splitlines()[-1:] == ["[]"], result.stderr


def test_a_question_embeds_without_scipy(make_tree):
    """A search embeds its question with numpy alone (a fresh text: nothing cached)."""
    from fourfold import Fourfold
    root = make_tree({"a.py": "def retry_with_backoff(call):\n    return call()\n"})
    Fourfold(root).index()
    loaded, errors = _command_loads(["search", "how are failed calls retried", str(root),
                                     "--modality", "semantic"], ("numpy", "scipy"))
    assert loaded == "0 ['numpy']", errors


def test_a_fresh_checkout_loads_no_model_or_scipy(make_tree, tmp_path):
    """A second copy of an indexed tree (a clone, a worktree) finds every chunk's vector
    stored, and its twin's graph and binary codes to copy: the model and numpy are loaded
    only to embed, to rank and to make codes, which such a run does not do. A
    clone with an index of its own finds every vector in the cache. No run of a small
    tree loads scipy."""
    files = {"a.py": "def handler():\n    return helper()\n",
             "b.py": "def helper():\n    return 'START_MARKER'\n"}
    code = ("import json, sys\nfrom fourfold import Fourfold\n"
            "summary = Fourfold(sys.argv[1], index_dir=sys.argv[2]).index()\n"
            f"print(json.dumps([summary.shared, summary.embedded, "
            f"sorted(m for m in {HEAVY!r} if m in sys.modules)]))")

    def index(root, index_dir=tmp_path / "index"):  # a vector cache of its own
        result = subprocess.run([sys.executable, "-c", code, str(root), str(index_dir)],
                                capture_output=True, text=True, timeout=120,
                                env={**os.environ, "FOURFOLD_CACHE_DIR": str(tmp_path / "cache")})
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.strip().splitlines()[-1])

    shared, embedded, loaded = index(make_tree(files))
    # the first: embedded; its graph ranked by numpy alone, its two chunks summed so too
    assert (shared, embedded) == (0, 2) and "tokenizers" in loaded and "scipy" not in loaded
    shared, embedded, loaded = index(make_tree(files, name="checkout"))
    assert (shared, embedded, loaded) == (2, 0, [])
    # a clone with an index of its own: parsed again, every vector from the cache
    shared, embedded, loaded = index(make_tree(files, name="clone"), tmp_path / "own")
    assert (shared, embedded) == (0, 0) and "tokenizers" not in loaded
    changed = make_tree({**files, "b.py": "def helper():\n    return 'OTHER'\n"}, name="next")
    shared, embedded, loaded = index(changed)  # a changed chunk: the model is loaded for it
    assert (shared, embedded) == (1, 1) and "tokenizers" in loaded and "scipy" not in loaded
