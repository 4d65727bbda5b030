"""Semantic modality: embedders, chunk text, binary codes with Hamming search and rescoring."""
from .binary import fit_mean, hamming_distances, hamming_topk, search, to_codes, to_int8
from .embedder import (DEFAULT_MODEL, Embedder, EmbedderUnavailable, OnnxEmbedder,
                       StaticEmbedder, load_embedder)
from .embedding_text import chunk_text_for_embedding, split_identifier

__all__ = [
    "DEFAULT_MODEL", "Embedder", "EmbedderUnavailable", "OnnxEmbedder", "StaticEmbedder",
    "load_embedder", "fit_mean", "to_codes", "to_int8", "hamming_distances", "hamming_topk",
    "search", "chunk_text_for_embedding", "split_identifier",
]
