"""Walk a folder or git work tree and list the files worth indexing.

Honours .gitignore at every level, .git/info/exclude and .fourfoldignore (git's own
pattern semantics via pathspec), never follows a symlink out of the root or into a loop,
and records why a file was skipped so `status` can tell.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

IGNORE_FILES = (".gitignore", ".fourfoldignore")
ALWAYS_SKIPPED_DIRS = {".git", ".hg", ".svn", ".fourfold"}
DEFAULT_MAX_FILE_BYTES = 2 * 1024 * 1024
# Known binary formats are skipped without reading them (others are caught by a NUL sniff).
BINARY_EXTENSIONS = frozenset("""
.pyc .pyo .so .dylib .dll .exe .o .a .lib .obj .class .jar .war .whl .egg .zip .gz .tgz .bz2
.xz .7z .rar .tar .png .jpg .jpeg .gif .bmp .ico .webp .tiff .psd .pdf .mp3 .mp4 .wav .ogg
.flac .avi .mov .mkv .webm .ttf .otf .woff .woff2 .eot .bin .dat .db .sqlite .sqlite3 .npy
.npz .pkl .pickle .parquet .onnx .pt .pth .h5 .wasm .dmg .iso .deb .rpm
""".split())


@dataclass(slots=True)
class FoundFile:
    path: str  # relative to the root, '/'-separated
    abspath: str
    size: int
    mtime_ns: int


@dataclass
class WalkReport:
    files: list[FoundFile] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def _read_patterns(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def _spec(lines: list[str]) -> pathspec.PathSpec | None:
    lines = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


def walk(root: str | os.PathLike, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
         skip_dirs: tuple[str, ...] = ()) -> WalkReport:
    """List indexable files under root (sorted), honouring ignore files at every level."""
    root_path = Path(root).resolve()
    report = WalkReport()
    skip_real = {os.path.realpath(d) for d in skip_dirs}
    root_specs: list[tuple[str, pathspec.PathSpec]] = []
    exclude = _spec(_read_patterns(root_path / ".git" / "info" / "exclude"))
    if exclude:
        root_specs.append(("", exclude))
    visited: set[tuple[int, int]] = set()

    def ignored(rel: str, is_dir: bool, specs: list[tuple[str, pathspec.PathSpec]]) -> bool:
        result = False
        for base, spec in specs:
            sub = rel[len(base) + 1:] if base else rel
            candidate = sub + "/" if is_dir else sub
            verdict = spec.check_file(candidate)
            if verdict.include is not None:
                result = verdict.include
        return result

    def visit(dir_abs: str, dir_rel: str, specs: list[tuple[str, pathspec.PathSpec]]) -> None:
        try:
            st = os.stat(dir_abs)
        except OSError:
            report.skip("unreadable directory")
            return
        key = (st.st_dev, st.st_ino)
        if key in visited:
            report.skip("symlink loop")
            return
        visited.add(key)
        local = list(specs)
        for name in IGNORE_FILES:
            spec = _spec(_read_patterns(Path(dir_abs) / name))
            if spec:
                local.append((dir_rel, spec))
        try:
            entries = sorted(os.scandir(dir_abs), key=lambda e: e.name)
        except OSError:
            report.skip("unreadable directory")
            return
        for entry in entries:
            rel = f"{dir_rel}/{entry.name}" if dir_rel else entry.name
            try:
                is_link = entry.is_symlink()
                st = entry.stat(follow_symlinks=True)
            except OSError:
                report.skip("broken symlink" if entry.is_symlink() else "unreadable file")
                continue
            if is_link:
                target = os.path.realpath(entry.path)
                if target != str(root_path) and not target.startswith(str(root_path) + os.sep):
                    report.skip("symlink out of root")
                    continue
            if stat.S_ISDIR(st.st_mode):
                if entry.name in ALWAYS_SKIPPED_DIRS or os.path.realpath(entry.path) in skip_real:
                    continue
                if ignored(rel, True, local):
                    report.skip("ignored")
                    continue
                visit(entry.path, rel, local)
            elif stat.S_ISREG(st.st_mode):
                if ignored(rel, False, local):
                    report.skip("ignored")
                elif os.path.splitext(entry.name)[1].lower() in BINARY_EXTENSIONS:
                    report.skip("binary")
                elif st.st_size > max_file_bytes:
                    report.skip("too large")
                else:
                    report.files.append(FoundFile(rel, entry.path, st.st_size, st.st_mtime_ns))
            else:
                report.skip("not a regular file")

    visit(str(root_path), "", root_specs)
    return report
