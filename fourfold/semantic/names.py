"""The embedding models known by name, checked without loading one (nor numpy): a misspelt
--embedder is refused before any work, not found out after an index run."""
from __future__ import annotations

from ..errors import QueryError

# Fast enough to embed while indexing; "minilm" is the transformer. The static model's
# vectors are stored as "static-fit" (the fitted model; it reads compound identifiers with
# their words); vectors of the earlier "static-words" model are never mixed with them.
DEFAULT_MODEL = "static-fit"
ALIASES = {"default": DEFAULT_MODEL, "minilm": "minilm", "minilm-int8": "minilm",
           "all-minilm-l6-v2": "minilm", "static": DEFAULT_MODEL,
           "minilm-static": DEFAULT_MODEL, "static-fit": DEFAULT_MODEL,
           "static-words": DEFAULT_MODEL}
REMOTE_PROVIDERS = ("voyage", "openai")  # named as PROVIDER[:MODEL]


def embeds_while_parsing(name: str) -> bool:
    """Whether the model is cheap enough for the parser processes to embed what they parse
    (the static model; a transformer or a remote provider embeds after parsing)."""
    return not is_remote(name) and ALIASES.get(name.lower()) == DEFAULT_MODEL


def is_remote(name: str) -> bool:
    return name.partition(":")[0].lower() in REMOTE_PROVIDERS


def unknown_model(name: str) -> str:
    return (f"unknown embedding model {name!r}; known: {', '.join(sorted(ALIASES))}, "
            + ", ".join(f"{p}[:MODEL]" for p in REMOTE_PROVIDERS))


def check_model_name(name: str) -> None:
    """QueryError unless `name` is a bundled model's or a remote provider's."""
    if not is_remote(name) and name.lower() not in ALIASES:
        raise QueryError(unknown_model(name))
