"""Who calls X, asked in words: every calling function, several to a file, each showing the
lines of its calls."""
from __future__ import annotations

from fourfold import Fourfold

FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": "def parse_flags(args):\n    return list(args)\n",
    "pkg/cli.py": ("from pkg.core import parse_flags\n"       # 1
                   "\n"                                       # 2
                   "\n"                                       # 3
                   "def run(argv):\n"                         # 4
                   "    first = parse_flags(argv)\n"          # 5
                   "    rest = parse_flags(argv[1:])\n"       # 6
                   "    return first, rest\n"                 # 7
                   "\n"                                       # 8
                   "\n"                                       # 9
                   "def main():\n"                            # 10
                   "    return parse_flags([])\n"),           # 11
    "pkg/other.py": ("from pkg.core import parse_flags\n"
                     "\n"
                     "\n"
                     "def go():\n"
                     "    return parse_flags(['x'])\n"),
}


def test_who_calls_lists_every_caller_with_its_call_lines(make_tree):
    ff = Fourfold(make_tree(FILES))
    ff.index(embed=False)
    response = ff.search("who calls parse_flags")
    assert response.intent == "find_references"
    callers = {(h.path, h.symbol): h.lines for h in response.hits}
    assert callers == {
        ("pkg/cli.py", "run"): [(5, "    first = parse_flags(argv)"),
                                (6, "    rest = parse_flags(argv[1:])")],
        ("pkg/cli.py", "main"): [(11, "    return parse_flags([])")],
        ("pkg/other.py", "go"): [(5, "    return parse_flags(['x'])")]}
    one_per_file = ff.search("who calls parse_flags", granularity="file")
    assert sorted(h.path for h in one_per_file.hits) == ["pkg/cli.py", "pkg/other.py"]
    ff.close()
