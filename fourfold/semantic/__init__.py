"""Semantic modality: embedders (embedder, remote; their names in names), chunk text
(embedding_text), binary codes with Hamming search and rescoring (binary), and the
indexing of vectors and codes (indexing). Nothing is imported here: checking a model's
name must not load numpy."""
