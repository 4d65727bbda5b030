"""Reading one file of an untrusted repository.

A file can change between the walk and the read: it is opened once, without following a
symlink, its descriptor checked to be a regular file at the real path the walk found (so a
symlink swapped in for the file or for a folder above it reads nothing outside the root),
and at most as many bytes are read as that descriptor's size, within the walk's limit.
Text follows grep's rule (a NUL anywhere makes a file binary), except that UTF-16 and
UTF-32 files are decoded by their byte-order mark.
"""
from __future__ import annotations

import codecs
import errno
import os
import stat

from .walk import UNREADABLE_FILE, FoundFile

SWAPPED = "changed to a symlink during indexing"
# Even kept for text search only, a file costs about ten times its size while it is indexed
# (its text as Python holds it, up to four bytes a character, and the store's copies), so
# a larger one is skipped whatever the size cap, which keeps one file within ~300 MB.
MAX_TEXT_BYTES = 16 * 1024 * 1024
TOO_LARGE = f"too large to index (over {MAX_TEXT_BYTES >> 20} MB)"
# Longer files, or files with a longer line (minified), are stored for text search only:
# parsing costs up to ~135 bytes of memory per byte of dense source (tree, matches, symbols).
MAX_PARSE_BYTES = 1536 * 1024
MAX_LINE_BYTES = 20_000
# UTF-32 first: its little-endian mark begins with UTF-16's.
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
         (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
         (codecs.BOM_UTF16_BE, "utf-16-be"))
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def read_bytes(found: FoundFile) -> tuple[bytes, os.stat_result] | str:
    """The file's bytes and the status of what was read, or why it is skipped."""
    try:
        fd = os.open(found.abspath, _OPEN_FLAGS)  # O_NONBLOCK: a FIFO swapped in cannot block
    except FileNotFoundError:
        return "deleted during indexing"
    except OSError as error:
        return SWAPPED if error.errno == errno.ELOOP else UNREADABLE_FILE
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        if _reached(fd, found.abspath) != found.abspath:
            return SWAPPED
        if st.st_size > found.max_bytes:
            return "too large"
        if st.st_size > MAX_TEXT_BYTES:
            return TOO_LARGE
        with open(fd, "rb", buffering=0, closefd=False) as handle:
            return handle.read(st.st_size), st
    except OSError:
        return UNREADABLE_FILE
    finally:
        os.close(fd)


def _reached(fd: int, path: str) -> str:
    """The path the kernel reached for an open file: not the walk's real path when a folder
    on the way was swapped for a symlink. Without /proc (a chroot, a sandbox), the path
    resolved again, and the same file only if it is the one open."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except FileNotFoundError:
        real = os.path.realpath(path)
        opened, there = os.fstat(fd), os.stat(real)
        return real if (opened.st_dev, opened.st_ino) == (there.st_dev, there.st_ino) else ""


def decode(data: bytes) -> tuple[str, bytes] | None:
    """The text of a file and its UTF-8 bytes (`data` itself when it is plain UTF-8), or
    None for a binary file."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            text = str(memoryview(data)[len(bom):], encoding, "replace")
            return None if "\0" in text else (text, text.encode("utf-8"))
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8"), data
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
        return text, text.encode("utf-8")


def parseable(source: bytes) -> bool:
    """Whether parsing the file stays within bounded memory: not too long, no huge line."""
    if len(source) > MAX_PARSE_BYTES:
        return False
    # From each line start, the last newline within a line's bound: every line ending
    # before it is within the bound too, so the next one to check starts after it (a
    # step a bound long, not a line: a file of short lines costs a few calls)
    start = 0
    while len(source) - start > MAX_LINE_BYTES:
        end = source.rfind(b"\n", start, start + MAX_LINE_BYTES + 1)
        if end == -1:
            return False
        start = end + 1
    return True
