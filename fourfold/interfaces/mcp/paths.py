"""Path safety: an agent's path or glob names something inside the indexed root, or is refused.

Refused: `..`, absolute paths elsewhere, `~`, NUL, percent-encoded dots, slashes and
backslashes (an agent may pass a URL-encoded path through), symlinks that resolve out of
the root, and the index folder itself.
"""
import re
from pathlib import Path

from ...errors import FourfoldError


class PathRefused(FourfoldError):
    """A path argument that would leave the indexed root."""


_ENCODED = re.compile(r"%(?:2e|2f|5c|00|25)", re.IGNORECASE)
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
_SEPARATORS = re.compile(r"[\\/]+")


def _encodable(text: str) -> bool:
    """Whether the text is UTF-8 encodable: no path holds a lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_glob(glob: str | None) -> str | None:
    """A path glob (matched against indexed paths), refused if it points outside."""
    if glob is None or glob == "":
        return None
    if not _encodable(glob):
        raise PathRefused("path_glob is not valid Unicode text (a lone surrogate)")
    if "\x00" in glob or _ENCODED.search(glob):
        raise PathRefused(f"path_glob {glob!r} contains encoded or NUL characters; "
                          "give a plain glob relative to the repository root")
    if ".." in _SEPARATORS.split(glob) or glob.startswith(("/", "\\", "~")) \
            or _DRIVE.match(glob):
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
    if _ENCODED.search(path):
        raise PathRefused(f"{raw!r}: percent-encoded dots, slashes or backslashes are not "
                          "accepted; give a plain path relative to the repository root")
    if ".." in _SEPARATORS.split(path):
        raise PathRefused(f"{raw!r}: '..' is not allowed; paths are relative to the "
                          "repository root and stay inside it")
    return path


def inside_root(raw: str, root: Path, index_dir: Path | None) -> str:
    """An agent's path (relative to `root`, or absolute inside it) as stored in the index:
    relative, with forward slashes. `index_dir`: the embedded index's folder (None: the
    index is on a server)."""
    path = check_path(raw)
    if path.startswith("~"):
        raise PathRefused(f"{raw!r} is outside the indexed repository {root}")
    if path.startswith(("/", "\\")) or _DRIVE.match(path):
        try:
            rel = Path(path).relative_to(root)
        except ValueError:
            raise PathRefused(f"{raw!r} is outside the indexed repository {root}") from None
    else:
        rel = Path(path.replace("\\", "/"))
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
