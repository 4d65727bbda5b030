"""Walk a folder or git work tree and list the files worth indexing.

Honours .gitignore at every level, .git/info/exclude and .fourfoldignore (git's own
pattern semantics via pathspec), never follows a symlink (what one inside the root points
at is listed under its own path, where the walk lists that path), and records why a file
was skipped so `status` can tell.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, AbstractSet, Iterable

from ..store.base import FileStamp

if TYPE_CHECKING:
    from .ignore import Spec

IGNORE_FILES = (".gitignore", ".fourfoldignore")
ALWAYS_SKIPPED_DIRS = {".git", ".hg", ".svn", ".fourfold"}
DEFAULT_MAX_FILE_BYTES = 2 * 1024 * 1024
# Known binary formats are skipped without reading them (others are caught by a NUL scan).
BINARY_EXTENSIONS = frozenset("""
.pyc .pyo .so .dylib .dll .exe .o .a .lib .obj .class .jar .war .whl .egg .zip .gz .tgz .bz2
.xz .7z .rar .tar .png .jpg .jpeg .gif .bmp .ico .webp .tiff .psd .pdf .mp3 .mp4 .wav .ogg
.flac .avi .mov .mkv .webm .ttf .otf .woff .woff2 .eot .bin .dat .db .sqlite .sqlite3 .npy
.npz .pkl .pickle .parquet .onnx .pt .pth .h5 .wasm .dmg .iso .deb .rpm
""".split())
BAD_NAME = "name not valid UTF-8"
LINKED_FOLDER = "symlinked folder (indexed under its real path)"
UNREADABLE_FILE = "unreadable file"
UNREADABLE_FOLDER = "unreadable directory"
LINKED_FILE = "symlinked file (indexed under its real path)"
LINKED_TO_UNINDEXED = "symlink to what is not indexed (ignored, or inside .git)"


# A longer path is no one's source file, and a database index entry (a server's btree)
# holds at most ~2.7 kB.
MAX_PATH_BYTES = 1024
LONG_PATH = f"path over {MAX_PATH_BYTES} bytes"

@dataclass(slots=True)
class FoundFile:
    path: str  # relative to the root, '/'-separated
    abspath: str  # the real path: no symlink in it, so a reader can tell one swapped in
    stamp: FileStamp
    max_bytes: int = DEFAULT_MAX_FILE_BYTES  # the size limit, enforced again on what is read

    @property
    def size(self) -> int:
        return self.stamp.size


@dataclass
class WalkReport:
    files: list[FoundFile] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count
    # files and folders that could not be read now (permissions, too many open files, an
    # I/O error): what the index holds of them is kept, not taken out as deleted
    unreadable: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)  # the real paths of the folders walked

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def cannot_read(self, rel: str, reason: str) -> None:
        self.skip(reason)
        self.unreadable.append(rel)

    def holds_unread(self, path: str) -> bool:
        """Whether `path` is, or lies in, something that could not be read."""
        return any(not rel or path == rel or path.startswith(rel + "/")
                   for rel in self.unreadable)


MAX_IGNORE_FILE_BYTES = 1 << 20


def _read_patterns(path: Path) -> list[str]:
    """An ignore file's lines; none where it is no regular file of at most
    MAX_IGNORE_FILE_BYTES (a shipped FIFO would block the walk, a link to /dev/zero fill
    the memory) or a symlink (to a file outside the repository)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return []
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_IGNORE_FILE_BYTES:
            return []
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_IGNORE_FILE_BYTES + 1)
    except OSError:
        return []
    finally:
        os.close(fd)
    return data.decode("utf-8", errors="replace").splitlines()


def _within(path: str, base: str) -> bool:
    return path == base or path.startswith(base + os.sep)


def _ignored(rel: str, is_dir: bool, specs: list[tuple[str, Spec]]) -> bool:
    """Whether the rules of `specs` ((folder, rules) from the root down) ignore `rel`."""
    result = False
    for base, spec in specs:
        sub = rel[len(base) + 1:] if base else rel
        candidate = sub + "/" if is_dir else sub
        verdict = spec.check_file(candidate)
        if verdict.include is not None:
            result = verdict.include
    return result


def _root_rules(root_path: Path) -> list[tuple[str, Spec]]:
    """The rules every path of the tree is checked by: .git/info/exclude."""
    from .ignore import rules_of  # pathspec: only a walk needs it

    exclude = rules_of(_read_patterns(root_path / ".git" / "info" / "exclude"))
    return [("", exclude)] if exclude else []


def _with_ignore_files(rules: list[tuple[str, Spec]], folder_abs: str, folder_rel: str,
                       names: AbstractSet[str] | None = None) -> list[tuple[str, Spec]]:
    """The rules a folder's entries are checked by: those above, then its own files'.
    `names`: the folder's entries where they are listed already; only the ignore files
    among them are opened (most folders have none, and failing to open them is dear)."""
    from .ignore import rules_of  # pathspec: only a walk needs it

    local = list(rules)
    for name in IGNORE_FILES:
        if names is not None and name not in names:
            continue
        spec = rules_of(_read_patterns(Path(folder_abs) / name))
        if spec:
            local.append((folder_rel, spec))
    return local


def _found(rel: str, path: str, st: os.stat_result, max_file_bytes: int) -> FoundFile:
    return FoundFile(rel, path, FileStamp(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino),
                     max_file_bytes)


def _skip_reason(rel: str, name: str, size: int, max_file_bytes: int) -> str | None:
    """Why a regular file that no ignore rule covers is not indexed, if it is not."""
    if os.path.splitext(name)[1].lower() in BINARY_EXTENSIONS:
        return "binary"
    if size > max_file_bytes:
        return "too large"
    if len(rel.encode()) > MAX_PATH_BYTES:
        return LONG_PATH
    return None


def walk(root: str | os.PathLike, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
         skip_dirs: tuple[str, ...] = ()) -> WalkReport:
    """List indexable files under root (sorted), honouring ignore files at every level."""
    root_path = Path(root).resolve()
    root_real = str(root_path)
    report = WalkReport()
    skip_real = {os.path.realpath(d) for d in skip_dirs}
    visited: set[tuple[int, int]] = set()
    # Symlinks inside the root, counted once the walk knows what it indexes: folders as
    # (the link's folder, the target's real path, the link's relative path), files as the
    # target's real path
    linked: list[tuple[str, str, str]] = []
    linked_files: list[str] = []

    def visit(dir_abs: str, dir_rel: str, specs: list[tuple[str, Spec]]) -> None:
        """Walk a folder by its real path, `dir_abs`, listing its files under `dir_rel`."""
        if len(dir_rel.encode()) > MAX_PATH_BYTES:  # nor a recursion as deep as the tree
            report.skip(LONG_PATH)
            return
        try:
            st = os.stat(dir_abs)
        except OSError:
            report.cannot_read(dir_rel, UNREADABLE_FOLDER)
            return
        key = (st.st_dev, st.st_ino)
        if key in visited:
            report.skip("symlink loop")
            return
        visited.add(key)
        try:
            entries = sorted(os.scandir(dir_abs), key=lambda e: e.name)
        except OSError:
            report.cannot_read(dir_rel, UNREADABLE_FOLDER)
            return
        report.folders.append(dir_abs)
        local = _with_ignore_files(specs, dir_abs, dir_rel, {e.name for e in entries})
        for entry in entries:
            try:
                entry.name.encode("utf-8")
            except UnicodeEncodeError:  # the store, and most tools, can only name it in UTF-8
                report.skip(BAD_NAME)
                continue
            rel = f"{dir_rel}/{entry.name}" if dir_rel else entry.name
            try:
                is_link = entry.is_symlink()
                st = entry.stat(follow_symlinks=True)
            except OSError:
                if entry.is_symlink():
                    report.skip("broken symlink")
                else:
                    report.cannot_read(rel, UNREADABLE_FILE)
                continue
            real = os.path.realpath(entry.path) if is_link else entry.path
            if is_link and not _within(real, root_real):
                report.skip("symlink out of root")
                continue
            if stat.S_ISDIR(st.st_mode):
                if entry.name in ALWAYS_SKIPPED_DIRS or real in skip_real:
                    continue
                if _ignored(rel, True, local):
                    report.skip("ignored")
                elif is_link:
                    linked.append((dir_abs, real, rel))
                else:
                    visit(real, rel, local)
            elif stat.S_ISREG(st.st_mode):
                reason = ("ignored" if _ignored(rel, False, local)
                          else _skip_reason(rel, entry.name, st.st_size, max_file_bytes))
                if reason:
                    report.skip(reason)
                elif is_link:
                    linked_files.append(real)
                else:
                    report.files.append(_found(rel, real, st, max_file_bytes))
            else:
                report.skip("not a regular file")

    visit(root_real, "", _root_rules(root_path))
    # A symlink is never followed: what it points at is indexed under its own path where
    # the walk indexes it, and not at all where it does not (ignored, inside .git): a shipped
    # link to .git/config, to an ignored .env or to an ignored folder of secrets is not read.
    for parent, target, rel in linked:
        if _within(parent, target):
            report.skip("symlink loop")
        else:
            try:
                st = os.stat(target)
                walked = (st.st_dev, st.st_ino) in visited
            except OSError:
                walked = False
            report.skip(LINKED_FOLDER if walked else LINKED_TO_UNINDEXED)
    listed = {f.abspath for f in report.files}
    for real in linked_files:
        report.skip(LINKED_FILE if real in listed else LINKED_TO_UNINDEXED)
    # By path as strings sort (the walk's order puts "a/b/c" before "a/b.c"): the store
    # lists files so, and a new index numbers its documents in this order, which lets a
    # limited grep read the trigram index in that order and stop early.
    report.files.sort(key=lambda f: f.path)
    return report


MAX_CHANGED_PATHS = 1000  # past this many changed paths, one walk of the tree is as quick


@dataclass
class ChangedFiles:
    """What a walk would say of some changed paths only: `report` lists the indexable
    files among them; `gone` the others (deleted, ignored, no longer indexable), each of
    which may have been a folder."""

    report: WalkReport
    gone: set[str]


def walk_paths(root: str | os.PathLike, paths: Iterable[str],
               max_file_bytes: int = DEFAULT_MAX_FILE_BYTES, skip_dirs: tuple[str, ...] = ()
               ) -> ChangedFiles | None:
    """The walk's verdict on just these absolute paths (a watcher's report of what changed),
    by the same ignore rules and limits. None where only a whole walk can tell: an ignore
    file changed, a folder appeared, a symlink is on the way, a path lies outside the root."""
    root_path = Path(root).resolve()
    root_real = str(root_path)
    paths = set(paths)
    if len(paths) > MAX_CHANGED_PATHS:
        return None
    skip_real = [os.path.realpath(d) for d in skip_dirs]
    # per folder: the rules its entries are checked by; False: ignored or gone; None: a link
    folders: dict[str, list[tuple[str, Spec]] | bool | None] = {}

    def rules_in(folder: str) -> list[tuple[str, Spec]] | bool | None:
        if folder in folders:
            return folders[folder]
        rules: list[tuple[str, Spec]] | bool | None
        if folder == "":
            rules = _root_rules(root_path)
        else:
            rules = rules_in(folder.rsplit("/", 1)[0] if "/" in folder else "")
            if isinstance(rules, list):
                try:
                    st = os.lstat(os.path.join(root_real, folder))
                except OSError:
                    st = None
                if st is not None and stat.S_ISLNK(st.st_mode):
                    # through a link out of the root: nothing the walk reads (a caller's
                    # watcher may follow links); else only a whole walk can tell
                    outside = not _within(os.path.realpath(os.path.join(root_real, folder)),
                                          root_real)
                    rules = False if outside else None
                elif st is None or not stat.S_ISDIR(st.st_mode) or _ignored(folder, True, rules):
                    rules = False
        if isinstance(rules, list):
            rules = _with_ignore_files(rules, os.path.join(root_real, folder), folder)
        folders[folder] = rules
        return rules

    changed = ChangedFiles(WalkReport(), set())
    for path in sorted(paths):
        absolute = os.path.abspath(path)
        if not _within(absolute, root_real) or absolute == root_real:
            return None
        if any(_within(absolute, d) for d in skip_real):
            continue
        rel = os.path.relpath(absolute, root_real).replace(os.sep, "/")
        parts = rel.split("/")
        if rel == ".git/info/exclude" or parts[-1] in IGNORE_FILES:
            return None
        if ALWAYS_SKIPPED_DIRS & set(parts[:-1]):
            continue
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:  # never indexed
            continue
        rules = rules_in("/".join(parts[:-1]))
        if rules is None:
            return None
        try:
            st = os.lstat(absolute)
        except OSError:
            changed.gone.add(rel)
            continue
        if stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode):
            return None
        reason = ("ignored" if rules is False or _ignored(rel, False, rules)
                  else "not a regular file" if not stat.S_ISREG(st.st_mode)
                  else _skip_reason(rel, parts[-1], st.st_size, max_file_bytes))
        if reason:
            changed.report.skip(reason)
            changed.gone.add(rel)
        else:
            changed.report.files.append(_found(rel, absolute, st, max_file_bytes))
    return changed
