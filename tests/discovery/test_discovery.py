"""Discovery: the walk (ignore files, size and binary limits, symlinks), language
detection and the flags a path or its content earns."""
import os

from fourfold.discovery.flags import GENERATED, MINIFIED, TEST, VENDOR, content_flags, path_flags
from fourfold.discovery.languages import detect_language
from fourfold.discovery.walk import BAD_NAME, walk, walk_paths


def paths(report):
    return sorted(f.path for f in report.files)


# ignore rules at every level: each file's own, the folder's, .fourfoldignore, git's exclude
IGNORE_RULES_TREE = {
    ".gitignore": "*.log\nbuild/\n",
    "app.py": "x = 1\n",
    "debug.log": "noise\n",
    "build/out.py": "y = 2\n",
    "pkg/.gitignore": "secret.py\n!keep.log\n",
    "pkg/secret.py": "s = 1\n",
    "pkg/keep.log": "kept\n",
    "pkg/mod.py": "m = 1\n",
    ".fourfoldignore": "docs/\n",
    "docs/readme.md": "# doc\n",
    ".git/info/exclude": "local_only.py\n",
    "local_only.py": "z = 1\n",
}


def test_gitignore_at_every_level_and_own_ignore_file(make_tree):
    root = make_tree(IGNORE_RULES_TREE)
    assert paths(walk(root)) == [".fourfoldignore", ".gitignore", "app.py", "pkg/.gitignore",
                                 "pkg/keep.log", "pkg/mod.py"]


def test_size_limit_and_binary_extension_are_skipped(make_tree):
    root = make_tree({"big.txt": "a" * 5000, "small.txt": "a", "logo.png": b"\x89PNG\r\n"})
    report = walk(root, max_file_bytes=1000)
    assert paths(report) == ["small.txt"]
    assert report.skipped["too large"] == 1 and report.skipped["binary"] == 1


def test_symlink_loop_and_symlink_out_of_root(make_tree, tmp_path):
    root = make_tree({"a/file.py": "x = 1\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.py").write_text("secret = 1\n")
    os.symlink(root / "a", root / "a" / "loop")
    os.symlink(outside, root / "escape")
    os.symlink(outside / "leak.py", root / "leak.py")
    report = walk(root)
    assert paths(report) == ["a/file.py"]
    assert report.skipped["symlink out of root"] == 2
    assert report.skipped["symlink loop"] == 1



def test_walk_paths_says_what_the_walk_says_of_each_changed_path(make_tree):
    files = {**IGNORE_RULES_TREE, "pkg/deep/er.py": "d = 1\n",
             ".git/HEAD": "ref: refs/heads/main\n", "image.png": "not really\n",
             "big.py": "b = 1\n" * 200}
    root = make_tree(files)

    def ignore_file(rel: str) -> bool:  # a changed one takes a whole walk
        return rel.rsplit("/", 1)[-1] in (".gitignore", ".fourfoldignore")

    asked = [str(root / rel) for rel in files
             if not rel.startswith(".git/") and not ignore_file(rel)]
    asked += [str(root / "gone.py"), str(root / "pkg/gone_folder"), str(root / ".git/HEAD")]
    changed = walk_paths(root, asked, max_file_bytes=1000)
    whole = walk(root, max_file_bytes=1000)
    assert paths(changed.report) == [p for p in paths(whole) if not ignore_file(p)]
    assert changed.gone == {"debug.log", "build/out.py", "pkg/secret.py", "local_only.py",
                            "docs/readme.md", "image.png", "big.py", "gone.py",
                            "pkg/gone_folder"}
    stamps = {f.path: f.stamp for f in whole.files}
    assert all(f.stamp == stamps[f.path] and f.abspath == str(root / f.path)
               for f in changed.report.files)


def test_walk_paths_leaves_to_a_walk_what_only_a_walk_can_tell(make_tree, tmp_path):
    root = make_tree({"a.py": "x = 1\n", "pkg/b.py": "y = 2\n", "pkg/.gitignore": "c.py\n"})
    outside = tmp_path / "elsewhere.py"
    outside.write_text("z = 3\n")
    os.symlink(root / "pkg", root / "linked")
    assert walk_paths(root, [str(root / "a.py")]) is not None
    assert walk_paths(root, [str(root / "pkg/.gitignore")]) is None  # the rules changed
    assert walk_paths(root, [str(root / "pkg")]) is None  # a folder appeared or moved in
    assert walk_paths(root, [str(root / "linked/b.py")]) is None  # through a symlink
    assert walk_paths(root, [str(outside)]) is None
    assert walk_paths(root, [str(root / f"f{i}.py") for i in range(1001)]) is None
    index = root / "pkg"  # changes inside the index folder are not the repository's
    quiet = walk_paths(root, [str(index / "b.py")], skip_dirs=(str(index),))
    assert quiet is not None and not quiet.report.files and not quiet.gone
    os.symlink(outside, root / "link.py")  # a file through a symlink: the walk decides
    assert walk_paths(root, [str(root / "link.py")]) is None
    bad = os.path.join(os.fsencode(root), b"bad\xff.py")  # never indexed: not UTF-8
    with open(bad, "wb") as handle:
        handle.write(b"x = 1\n")
    unnamed = walk_paths(root, [os.fsdecode(bad)])
    assert unnamed is not None and not unnamed.report.files and not unnamed.gone
    assert BAD_NAME in walk(root).skipped


def test_the_walk_lists_files_as_their_paths_sort(make_tree):
    # "a/b.c" < "a/b/c" < "a/b0": a folder's own order would put "b/" before "b.c"
    root = make_tree({"a/b/c.py": "", "a/b.c": "", "a/b0.py": "", "a/b-c/d.py": "",
                      "a/bc/e.py": "", "z.py": ""})
    listed = [f.path for f in walk(root).files]
    assert listed == sorted(listed) == ["a/b-c/d.py", "a/b.c", "a/b/c.py", "a/b0.py",
                                        "a/bc/e.py", "z.py"]


def test_language_detection():
    assert detect_language("main.go") == "go"
    assert detect_language("App.TSX") == "tsx"
    assert detect_language("script", b"#!/usr/bin/env python3\nprint(1)") == "python"
    assert detect_language("run", b"#!/bin/bash\necho") == "bash"
    assert detect_language("Makefile") == "make"
    assert detect_language("noext", b"hello") is None


def test_flags():
    assert path_flags("node_modules/x/index.js") == VENDOR
    assert path_flags("tests/test_api.py") == TEST
    assert path_flags("src/app.min.js") == MINIFIED
    assert path_flags("api/service_pb2.py") == GENERATED
    assert path_flags("src/app.py") == 0
    assert content_flags(b"// Code generated by protoc. DO NOT EDIT.\npackage x\n") == GENERATED
    assert content_flags(b"var a=1;" * 1000) == MINIFIED
    assert content_flags(b"def f():\n    return 1\n") == 0


def test_a_file_is_parsed_only_where_no_line_passes_the_bound():
    """parseable steps through a file a bound at a time: a line one byte too long is found
    wherever it is (first, last, after many short lines, with or without a final newline),
    and lines of exactly the bound pass, as a check of every line says."""
    import random

    from fourfold.discovery.read import MAX_LINE_BYTES, MAX_PARSE_BYTES, parseable

    def line(n: int) -> bytes:
        return b"x" * n

    at_bound, over = line(MAX_LINE_BYTES), line(MAX_LINE_BYTES + 1)
    assert parseable(b"") and parseable(at_bound) and not parseable(over)
    assert parseable(at_bound + b"\n" + at_bound + b"\n")
    assert not parseable(over + b"\nshort\n")
    assert not parseable(b"a\n" * 5000 + over)
    assert not parseable(b"a\n" * 5000 + over + b"\n" + b"b\n" * 10)
    assert parseable(b"a\n" * 5000 + at_bound)
    assert parseable(b"\n" + at_bound + b"\n\n" + at_bound)
    assert not parseable(b"x" * (MAX_PARSE_BYTES + 1))
    rnd = random.Random(3)
    for _ in range(300):
        lines = [line(rnd.choice([0, 1, rnd.randrange(MAX_LINE_BYTES // 2),
                                  MAX_LINE_BYTES - 1, MAX_LINE_BYTES, MAX_LINE_BYTES + 1]))
                 for _ in range(rnd.randrange(1, 12))]
        source = b"\n".join(lines) + rnd.choice([b"", b"\n"])
        assert parseable(source) == (max(map(len, source.split(b"\n"))) <= MAX_LINE_BYTES)
