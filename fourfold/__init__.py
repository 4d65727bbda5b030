"""fourfold: local-first code search blending text, structural, graph and semantic retrieval."""
from .api import Fourfold
from .errors import FourfoldError
from .routing.engine import SearchOptions, SearchResponse

__all__ = ["Fourfold", "FourfoldError", "SearchOptions", "SearchResponse"]
__version__ = "0.1.0"
