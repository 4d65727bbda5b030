"""Path safety: an agent's path or glob names something inside the indexed root, or is refused.

Refused: `..`, absolute paths elsewhere, `~`, NUL, what percent-decoding would turn into
one of those (an agent may pass a URL-encoded path through; a real name holding escapes,
even `%2e%2e`, is taken as it is), symlinks that resolve out of the root, and the index
folder itself.
"""
import os
import re
from pathlib import Path
from urllib.parse import unquote

from ...errors import FourfoldError


class PathRefused(FourfoldError):
    """A path argument that would leave the indexed root."""


_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
_SEPARATORS = re.compile(r"[\\/]+")


def _encodable(text: str) -> bool:
    """Whether the text is UTF-8 encodable: no path holds a lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _outside(path: str) -> bool:
    """Whether a path or glob names something outside the root."""
    return ("\x00" in path or ".." in _SEPARATORS.split(path)
            or path.startswith(("/", "\\", "~")) or bool(_DRIVE.match(path)))


def _escapes_when_decoded(path: str) -> bool:
    """Whether percent-decoding the path, once or again (double encoding), would make it
    leave the root. Each escape decodes to one character whatever its byte (what leaves
    the root is ASCII), so no name fails to decode; each round shortens the path."""
    while True:
        decoded = unquote(path, encoding="latin-1")
        if decoded == path:
            return False
        if _outside(decoded):
            return True
        path = decoded


def check_glob(glob: str | None) -> str | None:
    """A path glob (matched against indexed paths), refused if it points outside."""
    if glob is None or glob == "":
        return None
    if not _encodable(glob):
        raise PathRefused("path_glob is not valid Unicode text (a lone surrogate)")
    if "\x00" in glob or _escapes_when_decoded(glob):
        raise PathRefused(f"path_glob {glob!r} is percent-encoded to leave the repository; "
                          "give a plain glob relative to the repository root")
    if _outside(glob):
        raise PathRefused(f"path_glob {glob!r} points outside the repository: give a glob "
                          "relative to the repository root, such as 'src/**/*.py'")
    return glob


def check_path(raw: str) -> str:
    """The checks that need no repository: the path, stripped, or PathRefused."""
    if not isinstance(raw, str) or not raw.strip():
        raise PathRefused("empty path: give a path relative to the repository root")
    path = raw.strip()
    if "\x00" in path:
        raise PathRefused("path contains a NUL character")
    if not _encodable(path):
        raise PathRefused("path is not valid Unicode text (a lone surrogate)")
    if ".." in _SEPARATORS.split(path):
        raise PathRefused(f"{raw!r}: '..' is not allowed; paths are relative to the "
                          "repository root and stay inside it")
    return path


def inside_root(raw: str, root: Path, index_dir: Path | None) -> str:
    """An agent's path (relative to `root`, or absolute inside it) as stored in the index:
    relative, with forward slashes. `index_dir`: the embedded index's folder (None: the
    index is on a server)."""
    path = check_path(raw)
    # a real name holding escapes is read as written (it cannot leave the root: the checks
    # below hold); only a name that does not exist is taken for an encoded path
    if _escapes_when_decoded(path) and not os.path.lexists(root / path):
        raise PathRefused(f"{raw!r}: percent-encoded, it leaves the repository; give a "
                          "plain path relative to the repository root")
    if path.startswith("~"):
        raise PathRefused(f"{raw!r} is outside the indexed repository {root}")
    if path.startswith(("/", "\\")) or _DRIVE.match(path):
        try:
            rel = Path(path).relative_to(root)
        except ValueError:
            raise PathRefused(f"{raw!r} is outside the indexed repository {root}") from None
    elif "\\" in path and not os.path.lexists(root / path):
        rel = Path(path.replace("\\", "/"))  # an agent's Windows separators
    else:
        rel = Path(path)
    try:
        real = (root / rel).resolve()
    except (OSError, RuntimeError):
        raise PathRefused(f"{raw!r} cannot be resolved (symlink loop?)") from None
    try:
        real.relative_to(root)
    except ValueError:
        raise PathRefused(f"{raw!r} resolves outside the indexed repository (a symlink "
                          "pointing out of the root); refused") from None
    if index_dir is not None and (real == index_dir or index_dir in real.parents):
        raise PathRefused(f"{raw!r} is inside the index folder, not the source")
    rel_text = "/".join(p for p in rel.as_posix().split("/") if p not in ("", "."))
    if not rel_text:
        raise PathRefused("give a file path, not the repository root")
    return rel_text
