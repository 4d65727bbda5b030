"""fourfold: local-first code search blending text, structural, graph and semantic retrieval.

The exports load on first use, so that `fourfold --version` loads none of the engine."""
from __future__ import annotations

__all__ = ["Fourfold", "FourfoldError", "SearchOptions", "SearchResponse"]
__version__ = "0.1.0"

_HOMES = {"Fourfold": ".api", "FourfoldError": ".errors", "SearchOptions": ".routing.options",
          "SearchResponse": ".routing.options"}


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'fourfold' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_HOMES[name], __name__), name)
    globals()[name] = value
    return value
