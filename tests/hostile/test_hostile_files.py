"""A repository is untrusted input: files swapped while indexing runs, names that are not
UTF-8, huge ignore files, huge minified files, NUL bytes and other encodings, symlinked
folders."""
import json
import os
import subprocess
import sys
import threading

import pytest

from fourfold import Fourfold
from fourfold.discovery.read import SWAPPED
from fourfold.discovery.walk import BAD_NAME, LINKED_FILE, LINKED_FOLDER, LINKED_TO_UNINDEXED, walk
from fourfold.indexer import read_file
from fourfold.interfaces.cli import main

SECRET = "OUTSIDE_SECRET_MARKER = 1\n"


def paths(report):
    return sorted(f.path for f in report.files)


def found(report, path):
    return next(f for f in report.files if f.path == path)


# -- case 5: a file or folder swapped for a symlink between the walk and the read -------------

def test_file_swapped_for_a_symlink_after_the_walk_is_not_read(make_tree, tmp_path):
    root = make_tree({"swap.py": "x = 1\n"})
    secret = tmp_path / "secret.py"
    secret.write_text(SECRET)
    report = walk(root)
    os.unlink(root / "swap.py")
    os.symlink(secret, root / "swap.py")
    assert read_file(found(report, "swap.py")) == ("swap.py", SWAPPED)


@pytest.mark.parametrize("proc", [True, False])
def test_folder_swapped_for_a_symlink_after_the_walk_is_not_read(make_tree, tmp_path,
                                                                 monkeypatch, proc):
    """With /proc or without it (a chroot, a sandbox: the path is then resolved again)."""
    if not proc:
        real_readlink = os.readlink

        def no_proc(path, *args, **kwargs):
            if str(path).startswith("/proc/"):
                raise FileNotFoundError(2, "No such file or directory", str(path))
            return real_readlink(path, *args, **kwargs)
        monkeypatch.setattr(os, "readlink", no_proc)
    root = make_tree({"pkg/a.py": "a = 1\n", "pkg/b.py": "b = 1\n", "c.py": "c = 1\n"})
    report = walk(root)
    assert read_file(found(report, "c.py")).text == "c = 1\n"
    # pkg now links to another folder with a file of the same name ...
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "a.py").write_text(SECRET)
    os.rename(root / "pkg", tmp_path / "moved")
    os.symlink(elsewhere, root / "pkg")
    assert read_file(found(report, "pkg/a.py")) == ("pkg/a.py", SWAPPED)
    # ... or to the very folder the walk saw, moved out of the repository
    os.unlink(root / "pkg")
    os.symlink(tmp_path / "moved", root / "pkg")
    assert read_file(found(report, "pkg/b.py")) == ("pkg/b.py", SWAPPED)


def test_fifo_swapped_in_after_the_walk_does_not_block(make_tree):
    root = make_tree({"pipe.py": "x = 1\n"})
    report = walk(root)
    os.unlink(root / "pipe.py")
    os.mkfifo(root / "pipe.py")
    results = []
    reader = threading.Thread(target=lambda: results.append(read_file(found(report, "pipe.py"))),
                              daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert results == [("pipe.py", "not a regular file")]


def test_swap_while_indexing_stores_nothing_from_outside(make_tree, tmp_path, monkeypatch):
    from fourfold import indexer
    root = make_tree({"swap.py": "x = 1\n", "keep.py": "def kept():\n    pass\n",
                      "real.py": "def through_link():\n    pass\n"})
    os.symlink(root / "real.py", root / "link.py")  # indexed once, under its real path
    secret = tmp_path / "secret.py"
    secret.write_text(SECRET)
    real = indexer.read_file

    def swap_first(found, **options):
        if found.path == "swap.py":
            os.unlink(found.abspath)
            os.symlink(secret, found.abspath)
        return real(found, **options)
    monkeypatch.setattr(indexer, "read_file", swap_first)
    ff = Fourfold(root)
    summary = ff.index(workers=1, embed=False)
    assert summary.skipped.get(SWAPPED) == 1
    assert not ff.grep("OUTSIDE_SECRET_MARKER")
    assert ff.definitions("kept")[0]["path"] == "keep.py"
    assert [d["path"] for d in ff.definitions("through_link")] == ["real.py"]


# -- case 6: file and folder names that are not valid UTF-8 ----------------------------------

def _bad_names(root):
    broot = os.fsencode(root)
    fd = os.open(os.path.join(broot, b"bad\xff.py"), os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"def in_bad_file():\n    pass\n")
    os.close(fd)
    os.mkdir(os.path.join(broot, b"dir\xfe"))
    with open(os.path.join(broot, b"dir\xfe", b"inner.py"), "wb") as handle:
        handle.write(b"def in_bad_folder():\n    pass\n")


def test_names_not_utf8_are_skipped_and_the_rest_indexed(make_tree):
    root = make_tree({"good.py": "def good_function():\n    pass\n"})
    _bad_names(root)
    ff = Fourfold(root)
    summary = ff.index(embed=False)
    assert summary.files == 1 and summary.skipped.get(BAD_NAME) == 2
    assert ff.definitions("good_function")[0]["path"] == "good.py"
    assert not ff.definitions("in_bad_file") and not ff.definitions("in_bad_folder")


def test_names_not_utf8_do_not_stop_the_cli(make_tree, capsys):
    root = make_tree({"good.py": "GOOD_FILE_MARKER = 1\n"})
    _bad_names(root)
    assert main(["index", str(root), "--no-embed", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["files"] == 1 and summary["skipped"][BAD_NAME] == 2
    assert [m.path for m in Fourfold(root).grep("GOOD_FILE_MARKER")] == ["good.py"]


# -- case 7: huge ignore files ---------------------------------------------------------------

def test_gitignore_of_thousands_of_patterns_applies(make_tree):
    lines = []
    for i in range(1250):  # distinct patterns of every kind: globs, negations, **, folders
        lines += [f"dir{i}/file*.log", f"!dir{i}/file{i}.log", f"**/gen{i}", f"build{i}/"]
    files = {".gitignore": "\n".join(lines) + "\n", "keep.py": "k = 1\n",
             "dir7/file1.log": "ignored\n", "dir7/file7.log": "negated back\n",
             "deep/er/gen900": "ignored\n", "build1249/out.py": "ignored\n",
             "build1250/out.py": "not ignored\n"}
    root = make_tree(files)
    report = walk(root)
    assert paths(report) == [".gitignore", "build1250/out.py", "dir7/file7.log", "keep.py"]
    assert report.skipped["ignored"] == 3


def test_long_ignore_file_decides_as_one(make_tree, monkeypatch):
    from fourfold.discovery import ignore
    # x/y.txt stays ignored though the later !x/ matches it through its folder (git's rule,
    # and pathspec's); deciding set by set, the last set's verdict would bring it back
    root = make_tree({".gitignore": "x/y.txt\n!x/\n*.log\n!keep.log\n",
                      "x/y.txt": "", "x/z.txt": "", "a.log": "", "keep.log": ""})
    expected = [".gitignore", "keep.log", "x/z.txt"]
    assert paths(walk(root)) == expected
    monkeypatch.setattr(ignore, "SET_PATTERNS", 1)
    ignore._compiled_spec.cache_clear()  # compiled again, as sets of one pattern
    assert paths(walk(root)) == expected
    assert isinstance(ignore.rules_of((root / ".gitignore").read_text().splitlines()),
                      ignore._LongSpec)
    ignore._compiled_spec.cache_clear()  # the sets of one pattern are not left to others


def test_a_long_ignore_file_with_a_pathological_pattern_decides_quickly(make_tree):
    """A path matched by patterns of two sets was decided with Python's re, which
    backtracks for minutes on `*a*a*...*c` against a long name."""
    lines = (["aaaa*"] + [f"f{i}.log" for i in range(300)]
             + ["!aaaa*", "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*c"])
    name = "a" * 60 + ".py"
    root = make_tree({".gitignore": "\n".join(lines) + "\n", name: "x = 1\n",
                      "f7.log": "ignored\n", "a" * 22 + "c": "ignored by the last\n"})
    # in a process of its own: a regex that backtracks holds the interpreter's lock
    listed = subprocess.run(
        [sys.executable, "-c", "import sys; from fourfold.discovery.walk import walk; "
         "print('\\n'.join(f.path for f in walk(sys.argv[1]).files))", str(root)],
        capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert listed == [".gitignore", name]  # excluded, then included again by !aaaa*


def test_a_long_ignore_file_decides_unanchored_folder_patterns_as_git_does(make_tree):
    """`*/` ignores every folder; decided pattern by pattern, it was matched from the
    path's start only and so never, and docs/ (ignored, then negated) came back."""
    lines = ["docs/", "!docs/"] + [f"gen{i}.tmp" for i in range(300)] + ["*/"]
    root = make_tree({".gitignore": "\n".join(lines) + "\n", "src/a.py": "a = 1\n",
                      "docs/b.md": "b\n", "top.py": "t = 1\n"})
    assert paths(walk(root)) == [".gitignore", "top.py"]  # as `git ls-files -o` lists


def test_invalid_ignore_pattern_is_skipped_like_git(make_tree):
    root = make_tree({".gitignore": "!\n*.log\n\\\n", "a.py": "a = 1\n", "b.log": "b\n"})
    assert paths(walk(root)) == [".gitignore", "a.py"]


# -- case 11: bounded memory for one huge file ----------------------------------------------

PEAK_SCRIPT = """
import json, resource, sys
from fourfold import Fourfold
ff = Fourfold(sys.argv[1], max_file_bytes=64 * 1024 * 1024)
summary = ff.index(embed=False, workers=1)
# this process's own high-water mark: getrusage's for itself also holds that of the process
# it was forked from before exec (the test runner)
with open("/proc/self/status") as status:
    own = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
peak = max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) // 1024
print(json.dumps({"peak_mb": peak, "files": summary.files,
                  "end": [m.path for m in ff.grep("LAST_FUNCTION_MARKER")],
                  "parsed": sorted({d["path"] for d in ff.definitions("a1", limit=5)})}))
"""


def test_huge_minified_and_long_lined_files_index_in_bounded_memory(make_tree):
    unit = "var a1=function(b){return b+1};"
    long_line = unit * (19_000 // len(unit)) + "\n"  # just under the line limit: parsed
    root = make_tree({"bundle.js": unit * (10 * 1024 * 1024 // len(unit))
                      + "var LAST_FUNCTION_MARKER=1;",
                      "long.js": long_line * (1400 * 1024 // len(long_line))})
    run = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, str(root)], capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["files"] == 2
    assert result["end"] == ["bundle.js"]  # the minified file is still searchable
    assert result["parsed"] == ["long.js"]
    assert result["peak_mb"] <= 300


def test_file_over_the_text_bound_or_grown_past_the_cap_is_skipped(make_tree, monkeypatch):
    from fourfold.discovery import read
    root = make_tree({"big.txt": "x" * 5000, "grows.txt": "small\n"})
    monkeypatch.setattr(read, "MAX_TEXT_BYTES", 4000)
    report = walk(root, max_file_bytes=10_000)
    assert read_file(found(report, "big.txt")) == ("big.txt", read.TOO_LARGE)
    (root / "grows.txt").write_text("y" * 20_000)  # after the walk, past its cap
    assert read_file(found(report, "grows.txt")) == ("grows.txt", "too large")


def test_minified_file_is_kept_for_text_search_only(make_tree):
    line = "function f(a){return a}" * 1000  # 23,000 characters on one line
    root = make_tree({"min.js": line + "\n", "ok.js": "function normal(a) {\n  return a\n}\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    assert not ff.definitions("f")
    assert ff.definitions("normal")[0]["path"] == "ok.js"
    assert [m.path for m in ff.grep("return a}function")] == ["min.js"]


# -- case 13: NUL bytes, UTF-16 and UTF-32 ---------------------------------------------------

def test_nul_anywhere_makes_a_file_binary(make_tree):
    late = b"# padding line\n" * 700 + b"\0\nAFTER_NUL_MARKER = 1\n"  # NUL past 8 KB
    root = make_tree({"late.py": late, "text.py": "TEXT_MARKER = 1\n"})
    ff = Fourfold(root)
    summary = ff.index(embed=False)
    assert summary.skipped.get("binary") == 1 and summary.files == 2
    assert not ff.store.file_by_path("late.py")
    assert [m.path for m in ff.grep("TEXT_MARKER")] == ["text.py"]


def test_text_is_decoded_by_its_byte_order_mark(make_tree):
    source = "def {}_function():\n    return 'caf\u00e9 {}'\n"
    encodings = {"utf16le": "utf-16-le", "utf16be": "utf-16-be", "utf32le": "utf-32-le",
                 "utf32be": "utf-32-be", "utf8bom": "utf-8"}
    root = make_tree({f"{name}.py": "\ufeff".encode(enc) + source.format(name, name).encode(enc)
                      for name, enc in encodings.items()})
    ff = Fourfold(root)
    summary = ff.index(embed=False)
    assert summary.files == 5 and not summary.skipped
    for name in encodings:
        assert ff.definitions(f"{name}_function")[0]["path"] == f"{name}.py"
        hits = ff.grep(f"caf\u00e9 {name}")
        assert [(m.path, m.line) for m in hits] == [(f"{name}.py", 2)]
        first = ff.grep(f"def {name}_function")[0]
        assert first.line == 1 and first.text.startswith("def ")  # no BOM left in the text


# -- case 15b: symlinked folders -------------------------------------------------------------

def test_symlinked_folder_sorting_first_does_not_hide_the_real_one(make_tree):
    root = make_tree({"z_real/mod.py": "def real_dir_function():\n    pass\n"})
    os.symlink(root / "z_real", root / "a_link")
    os.symlink("z_real", root / "zz_link")
    report = walk(root)
    assert paths(report) == ["z_real/mod.py"]
    assert report.skipped == {LINKED_FOLDER: 2}
    ff = Fourfold(root)
    ff.index(embed=False)
    assert [d["path"] for d in ff.definitions("real_dir_function")] == ["z_real/mod.py"]


def test_a_symlinked_folder_into_an_ignored_folder_is_not_followed(make_tree):
    """Walked through the link, an ignored folder's files were indexed under the link's
    path: a shipped `conf -> secrets/` put the secrets git ignores in the index."""
    root = make_tree({".gitignore": "build/\nsecrets/\n",
                      "build/gen/x.py": "def generated():\n    pass\n",
                      "secrets/prod.env": "API_KEY=HUNTER2\n",
                      ".git/info/exclude": "hidden/\n", "hidden/h.py": "def hidden():\n    pass\n"})
    os.symlink(root / "build" / "gen", root / "gen_link")
    os.symlink("secrets", root / "conf")
    os.symlink(root / "hidden", root / "visible")
    os.symlink(root / ".git", root / "git_link")
    report = walk(root)
    assert paths(report) == [".gitignore"]
    assert report.skipped[LINKED_TO_UNINDEXED] == 4
    ff = Fourfold(root)
    ff.index(embed=False)
    assert not ff.grep("HUNTER2") and not ff.definitions("generated")
    assert not ff.definitions("hidden")


def test_symlink_loops_still_end(make_tree):
    root = make_tree({"a/b/file.py": "x = 1\n"})
    os.symlink(root / "a", root / "a" / "b" / "up")
    os.symlink(root, root / "a" / "root")
    report = walk(root)
    assert paths(report) == ["a/b/file.py"]
    assert report.skipped == {"symlink loop": 2}


def test_a_symlinked_file_into_git_or_to_an_ignored_file_is_not_read(make_tree):
    """A shipped link to .git/config (a remote URL with its token) or to an ignored .env
    put the secret in the index, and so in every grep and a shared server's database."""
    root = make_tree({".git/config": '[remote "o"]\n\turl = https://u:GHP_SECRET@host/x\n',
                      ".env": "SECRET_ENV=hunter2\n", ".gitignore": ".env\nbuild/\n",
                      "build/out.txt": "BUILT_SECRET = 1\n", "a.py": "x = 1\n",
                      "docs/real.md": "REAL_DOC = 1\n"})
    os.symlink(".git/config", root / "notes.txt")
    os.symlink(".env", root / "env.txt")
    os.symlink("build/out.txt", root / "out_link.txt")
    os.symlink("docs/real.md", root / "readme_link.md")  # indexed under its real path
    report = walk(root)
    assert paths(report) == [".gitignore", "a.py", "docs/real.md"]
    assert report.skipped[LINKED_TO_UNINDEXED] == 3 and report.skipped[LINKED_FILE] == 1
    ff = Fourfold(root)
    ff.index(embed=False)
    for secret in ("GHP_SECRET", "hunter2", "BUILT_SECRET"):
        assert not ff.grep(secret), secret
    assert [m.path for m in ff.grep("REAL_DOC")] == ["docs/real.md"]  # under its own path


def test_an_ignore_file_that_is_a_fifo_a_device_or_a_link_is_not_read(make_tree, tmp_path):
    """A FIFO named .gitignore blocked the walk for ever; a link to /dev/zero read until
    the memory ran out; a link out of the repository read a file there. Git does not
    follow a .gitignore that is a symlink either."""
    outside = tmp_path / "outside-ignore"
    outside.write_text("a.py\n")
    root = make_tree({"a.py": "x = 1\n", "sub/b.py": "y = 2\n", "deep/c.py": "z = 3\n"})
    os.mkfifo(root / "sub" / ".gitignore")
    os.symlink("/dev/zero", root / ".fourfoldignore")
    os.symlink(outside, root / ".gitignore")
    (root / "deep" / ".gitignore").write_text("c.py\n")  # a regular one still applies
    done = []
    walker = threading.Thread(target=lambda: done.append(walk(root)), daemon=True)
    walker.start()
    walker.join(20)
    assert done, "the walk blocked on the FIFO"
    assert paths(done[0]) == ["a.py", "deep/.gitignore", "sub/b.py"]


def test_a_folder_tree_deeper_than_a_path_may_be_long_is_cut_there(make_tree, monkeypatch):
    root = make_tree({"top.py": "x = 1\n"})
    monkeypatch.chdir(root)
    for _ in range(1200):  # 2,400 bytes of path: git can hold it, the recursion could not
        os.mkdir("a")
        os.chdir("a")
    with open("deep.py", "w") as deep:
        deep.write("y = 2\n")
    monkeypatch.chdir(root)
    try:
        report = walk(root)
        assert paths(report) == ["top.py"] and report.skipped == {"path over 1024 bytes": 1}
        ff = Fourfold(root)
        assert ff.index(embed=False).files == 1
    finally:  # taken down here: a tree this deep is past pytest's own clean-up (recursive)
        for _ in range(1200):
            os.chdir("a")
        os.remove("deep.py")
        for _ in range(1200):
            os.chdir("..")
            os.rmdir("a")
        monkeypatch.chdir(root)


def test_a_file_the_parser_takes_too_long_over_is_kept_for_text_search(make_tree, monkeypatch):
    """677 bytes of TSX kept tree-sitter busy for minutes, and a signal could not stop it:
    a parse now ends at its time limit and the file answers text searches only."""
    from fourfold import parsing

    body = "".join(f"def helper_{n}(a):\n    return a + {n}\n\n" for n in range(500))
    root = make_tree({"slow.py": "def slow_to_parse():\n    return 'SLOW_MARKER'\n\n" + body})
    monkeypatch.setattr(parsing, "PARSE_TIME_LIMIT_S", 0.0)  # every parse is over it
    ff = Fourfold(root)
    summary = ff.index(embed=False, workers=1)
    assert summary.files == 1 and not summary.skipped and summary.unparsed == 1
    assert [m.path for m in ff.grep("SLOW_MARKER")] == ["slow.py"]
    assert not ff.definitions("slow_to_parse")
    monkeypatch.setattr(parsing, "PARSE_TIME_LIMIT_S", 5.0)
    with open(root / "slow.py", "a") as slow:  # read again once its content changes
        slow.write("# edited\n")
    again = ff.index(embed=False, workers=1)
    assert again.changed == 1 and again.unparsed == 0
    assert ff.definitions("slow_to_parse")[0]["path"] == "slow.py"


def test_control_characters_in_names_and_lines_are_shown_escaped(make_tree, capsys):
    """A file name holding a newline forged another grep result line; one holding a
    terminal's escape sequences reached the terminal."""
    root = make_tree({"ok.py": "TOKEN_X = 1\n"})
    (root / "evil.py\nfake.py:99:TOKEN_X = injected").write_text("TOKEN_X = 2\n")
    (root / "esc\x1b[31mRED\x1b]0;pwned\x07.py").write_text("TOKEN_X = 3\x1b[2J\n")
    assert main(["index", str(root), "--no-embed"]) == 0
    capsys.readouterr()
    assert main(["grep", "TOKEN_X", str(root)]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 3 and "\x1b" not in out and "\x07" not in out
    assert "evil.py\\x0afake.py:99:TOKEN_X = injected:1:TOKEN_X = 2" in out
    assert "esc\\x1b[31mRED\\x1b]0;pwned\\x07.py:1:TOKEN_X = 3\\x1b[2J" in out
    assert main(["grep", "TOKEN_X", str(root), "--json"]) == 0  # JSON keeps them as they are
    paths = sorted(row["path"] for row in json.loads(capsys.readouterr().out)["results"])
    assert paths[1] == "evil.py\nfake.py:99:TOKEN_X = injected"


def test_a_file_or_folder_that_cannot_be_read_now_keeps_what_the_index_holds(make_tree,
                                                                          monkeypatch):
    """Any failure to read (permissions, too many open files, no /proc in a sandbox) took
    the file out of an existing index as if it were deleted, and the run said nothing.
    The failures are the operating system's errors, raised for two paths (as root, a
    permission is never refused)."""
    root = make_tree({"a.py": "KEEP_MARK = 1\n", "locked/b.py": "LOCKED_MARK = 2\n",
                      "c.py": "GONE_MARK = 3\n"})
    ff = Fourfold(root)
    ff.index(embed=False)
    (root / "c.py").unlink()
    real_open, real_scandir = os.open, os.scandir

    def refusing_open(path, *args, **kwargs):
        if str(path) == str(root / "a.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    def refusing_scandir(path="."):
        if str(path) == str(root / "locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "open", refusing_open)
    monkeypatch.setattr(os, "scandir", refusing_scandir)
    summary = ff.index(embed=False, workers=1, verify=True)
    monkeypatch.undo()
    assert summary.skipped == {"unreadable file": 1, "unreadable directory": 1}
    assert summary.deleted == 1
    assert [m.path for m in ff.grep("KEEP_MARK")] == ["a.py"]
    assert [m.path for m in ff.grep("LOCKED_MARK")] == ["locked/b.py"]
    assert not ff.grep("GONE_MARK")  # a file deleted is taken out as before
    assert ff.index(embed=False).files == 2  # readable again: nothing lost
