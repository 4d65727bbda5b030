"""The index folder on disk, made safe against what a cloned repository may ship.

A repository is untrusted: it can ship `.fourfold` as a symlink, or a real `.fourfold`
holding symlinks named like our files (writing through them would create or truncate files
outside the repository), or a prepared database whose rows would be served as the
repository's code. So inside the repository no component of the index folder's path may be
a symlink, the folder must belong to the user, our own file names inside it are never
followed, and a database is trusted only when it records this very folder (its path and
inode, which a shipped copy cannot know) as the one it was built in.
"""
from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import FourfoldError, IndexBusyError, IndexWriteError

DB_NAME = "index.sqlite"
LOCK_NAME = "index.lock"
READERS_NAME = "readers.lock"  # held shared by each process that has the database open
CHUNK_INDEX_NAME = "chunk-index"  # the BM25 index's folder (store/chunk_index.py)
# beside it: one being made to take its place, and the one it replaced
CHUNK_INDEX_BESIDE = (".next", ".old")
IGNORE_NAME = ".gitignore"
# the database and the files SQLite keeps beside it
DB_FILES = (DB_NAME, DB_NAME + "-wal", DB_NAME + "-shm", DB_NAME + "-journal")
OWN_FILES = (*DB_FILES, LOCK_NAME, READERS_NAME, IGNORE_NAME)


class UnsafeIndexDir(FourfoldError):
    """The index folder (or a file in it) is not one fourfold may write through."""


def check_folder(path: Path) -> os.stat_result:
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeIndexDir(
            f"refusing {path}: it is a symlink (a repository can ship one to make the index "
            "be written elsewhere); remove it, or keep the index elsewhere with --index-dir")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeIndexDir(f"refusing {path}: it is not a folder; remove it, or keep the "
                             "index elsewhere with --index-dir")
    if st.st_uid != os.geteuid():
        raise UnsafeIndexDir(f"refusing {path}: it belongs to another user (uid "
                             f"{st.st_uid}); remove it, or use --index-dir")
    return st


def prepare_index_dir(index_dir: Path, root: Path) -> None:
    """Create the index folder if needed, refusing symlinks on its way below `root`, and
    clear our own file names of anything that is not a plain file. An index folder that
    is the repository's folder, or holds it, is refused: its files would be indexed, and
    its `.gitignore` would hide the repository from git."""
    if index_dir == root or index_dir in root.parents:
        raise FourfoldError(f"the index folder {index_dir} holds the repository {root}: "
                            "give --index-dir a folder of its own (by default the index "
                            "is kept in the repository's .fourfold)")
    try:
        inside = index_dir.relative_to(root)
    except ValueError:
        inside = None
    try:
        if inside is None:  # a folder the user named: theirs to lay out as they like
            index_dir.mkdir(parents=True, exist_ok=True)
        else:
            folder = root
            for part in inside.parts:
                folder = folder / part
                try:
                    os.mkdir(folder, 0o755)
                except FileExistsError:
                    pass
                check_folder(folder)
        for name in OWN_FILES:
            path = index_dir / name
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                os.unlink(path)  # removes the link only, never what it points to
            elif not stat.S_ISREG(st.st_mode):
                raise UnsafeIndexDir(f"refusing {path}: it is not a plain file; remove it")
        _write_new(index_dir / IGNORE_NAME, b"# fourfold index: not source\n*\n")
    except UnsafeIndexDir:
        raise
    except OSError as exc:
        raise FourfoldError(f"cannot create index folder {index_dir}: "
                            f"{exc.strerror or exc}") from exc


def _write_new(path: Path, data: bytes) -> None:
    """Create a file that does not exist yet; never through a symlink."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644)
    except FileExistsError:
        return
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def open_private(path: Path) -> int:
    """A read-write descriptor of one of our files, created if missing, never followed
    through a symlink (a repository could plant one to make us truncate its target)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeIndexDir(f"refusing {path}: it is a symlink; remove it") from None
        raise FourfoldError(f"cannot open {path}: {exc.strerror or exc}") from exc


class Readers:
    """This process's shared hold on an index folder while it has the database open: the
    database is not deleted under it (a process left on a deleted database answers from it,
    and a watcher writes into it, until it is started again)."""

    def __init__(self, index_dir: Path):
        try:
            self._fd: int | None = open_private(index_dir / READERS_NAME)
        except UnsafeIndexDir:
            raise
        except FourfoldError:  # a folder this user may only read: it deletes nothing either
            self._fd = None
            return
        fcntl.flock(self._fd, fcntl.LOCK_SH)  # waits while a rebuild deletes the database

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@contextmanager
def no_readers(index_dir: Path) -> Iterator[None]:
    """Held while the database is deleted; IndexBusyError while another process (or
    another Fourfold of this one) has it open."""
    fd = open_private(index_dir / READERS_NAME)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise IndexBusyError(
                f"the index in {index_dir} is open in another process (a server, a watcher "
                "or an MCP server) or by another Fourfold object of this one: stop or close "
                "it, then rebuild") from None
        yield
    finally:
        os.close(fd)


def identity(index_dir: Path) -> str:
    """What a database records to show it was built in this folder: the folder's real path
    and inode. A copy shipped inside a repository lands in a folder with another inode."""
    return f"{index_dir.resolve()}\0{os.stat(index_dir).st_ino}"


def remove_database(index_dir: Path) -> None:
    """Delete the database, SQLite's files beside it and the chunk index (to start an empty
    index)."""
    for name in (*DB_FILES, CHUNK_INDEX_NAME,
                 *(CHUNK_INDEX_NAME + suffix for suffix in CHUNK_INDEX_BESIDE)):
        remove_entry(index_dir / name)


def remove_entry(path: Path) -> None:
    """Remove a file, a link (never what it points to) or a folder with all it holds, if
    there is one."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path)  # removes links inside, never what they point to
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise FourfoldError(f"cannot remove {path}: {exc.strerror or exc}") from exc


def indexer_at_work(index_dir: Path) -> int | None:
    """The process id of the indexer holding the index folder's lock, as it wrote it there
    (or, where it could not write it, a full disk, as the system lists the lock's holder);
    None when none is alive (read, never locked: taking the lock even for a moment could
    turn away an indexer starting then)."""
    try:
        descriptor = os.open(index_dir / LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as lock:
        written = lock.read(64).split()
        inode = os.fstat(lock.fileno()).st_ino
    holders = _lock_holders()
    if len(written) != 2 or written[0] != b"pid" or not written[1].isdigit():
        return holders.get(inode) if holders else None
    pid = int(written[1])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None  # it ended without unlocking (killed): no indexer at work
    except PermissionError:
        pass  # alive, another user's
    if holders is not None and inode not in holders:
        return None  # a killed indexer's pid, since given to another process
    return pid


def _lock_holders() -> dict[int, int | None] | None:
    """inode -> process id of the files some process holds a lock on, as Linux lists them
    in /proc/locks ("1: FLOCK  ADVISORY  WRITE 1799 fe:00:2147122 0 EOF"; any kind of
    lock: NFS, for one, lists a flock as a POSIX lock); None where the system does not say."""
    try:
        with open("/proc/locks", "rb") as locks:
            listed = locks.read()
    except OSError:
        return None
    holders: dict[int, int | None] = {}
    for line in listed.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[5].count(b":") == 2:  # "->" lines (waiters) differ
            inode = fields[5].rsplit(b":", 1)[1]
            if inode.isdigit():  # an open file description's lock lists no process (-1)
                holders.setdefault(int(inode), int(fields[4]) if fields[4].isdigit() else None)
    return holders


class IndexLock:
    """One writer per index: a second indexer waits up to `wait_s` for the first to finish,
    then gets a clear refusal, never a corrupt index."""

    POLL_S = 0.25

    def __init__(self, index_dir: Path, wait_s: float = 0.0):
        self.path = index_dir / LOCK_NAME
        self.wait_s = wait_s
        self.handle = None

    def __enter__(self) -> "IndexLock":
        try:
            self.handle = os.fdopen(open_private(self.path), "r+")
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                raise
            raise IndexWriteError(f"cannot write the index at {self.path.parent}: "
                                  f"{exc.strerror}; free some space and index again") from None
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(self.POLL_S)
                    continue
                self.handle.seek(0)
                holder = self.handle.read().strip() or "another process"
                self.handle.close()
                raise IndexBusyError(f"another fourfold indexer ({holder}) is updating "
                                     f"{self.path.parent}; try again when it finishes") from None
        self.handle.seek(0)
        self.handle.truncate()
        try:  # who holds the lock, for others to read; unbuffered, so nothing is left to flush
            os.write(self.handle.fileno(), f"pid {os.getpid()}".encode())
        except OSError:  # a full disk: the lock holds without it, and the run says what failed
            pass
        return self

    def __exit__(self, *exc) -> None:
        self.handle.seek(0)
        self.handle.truncate()
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()
