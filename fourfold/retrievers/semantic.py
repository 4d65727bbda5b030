"""Semantic modality: chunks by meaning. Binary codes (1 bit per dimension, centred by the
corpus mean) are searched by exact Hamming distance; the top candidates are rescored with
the int8 vectors. The code matrix is built once per index generation and kept in memory."""
from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from ..model import Hit
from ..semantic.binary import search as binary_search
from ..semantic.binary import to_codes
from ..semantic.embedder import Embedder, embed_query
from ..semantic.indexing import embedding_texts, load_vectors
from ..store.base import Store
from ..query.model import Query
from .base import path_ok

RESCORE_CANDIDATES = 100


class SemanticRetriever:
    modality = "semantic"

    def __init__(self, store: Store, embedder_factory,
                 scope: Callable[[], int | None] = lambda: None):
        """embedder_factory() -> Embedder, called on first use (loading a model takes time);
        scope() -> the repository searched (None: every one)."""
        self.store = store
        self.scope = scope
        self._factory = embedder_factory
        self._embedder: Embedder | None = None
        self._lock = threading.Lock()
        self._state: tuple | None = None  # (generation, ids, int8, codes, mean)

    @property
    def embedder(self) -> Embedder:
        with self._lock:
            if self._embedder is None:
                self._embedder = self._factory()
            return self._embedder

    def progress(self) -> tuple[int, int]:
        return self.store.vector_progress(self.embedder.name)

    def ready(self) -> bool:
        return self.store.vector_count(self.embedder.name) > 0

    def _matrix(self):
        repo_id = self.scope()
        generation = (self.store.generation(), self.store.vector_count(self.embedder.name),
                      repo_id)
        with self._lock:
            if self._state is None or self._state[0] != generation:
                ids, int8, scales = load_vectors(self.store, self._embedder.name, repo_id)
                if len(ids):
                    approx = int8.astype(np.float32) * scales[:, None]  # the unit vectors
                    mean = approx.mean(axis=0)  # sign bits are taken after centring
                    codes = to_codes(approx, mean)
                else:
                    mean, codes = None, np.zeros((0, 0), dtype=np.uint8)
                self._state = (generation, ids, int8, codes, mean)
            return self._state[1:]

    def nearest(self, vector: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """(chunk id, cosine) of the chunks nearest a query vector."""
        ids, int8, codes, mean = self._matrix()
        if not len(ids):
            return []
        idx, scores = binary_search(vector, codes, int8, mean, k=limit,
                                    rescore_n=max(RESCORE_CANDIDATES, limit))
        return [(int(ids[i]), float(s)) for i, s in zip(idx, scores)]

    def similar(self, chunk_id: int, limit: int) -> list[Hit]:
        """Chunks in other files nearest one indexed chunk. The origin's own file is left out:
        its chunks share the path the embedded text starts with, so they would crowd the list."""
        ids, int8, _codes, _mean = self._matrix()
        rows = np.flatnonzero(ids == chunk_id)
        if len(rows):
            vector = int8[rows[0]].astype(np.float32)
            vector /= max(float(np.linalg.norm(vector)), 1e-9)
        else:  # not embedded yet: embed its text now
            vector = self.embedder.embed([embedding_texts(self.store, [chunk_id])[chunk_id]])[0]
        (origin,) = self.store.chunks([chunk_id])
        ranked = self.nearest(vector, limit + 50)
        chunks = {c.chunk_id: c for c in self.store.chunks([cid for cid, _ in ranked])}
        hits = []
        for cid, score in ranked:
            c = chunks.get(cid)
            if c is None or c.path == origin.path:
                continue
            hits.append(Hit(c.path, c.start_line, c.end_line, score, symbol=c.symbol,
                            kind=c.kind))
        return hits[:limit]

    def search(self, query: Query, limit: int) -> list[Hit]:
        vector = embed_query(self.embedder, query.text)
        ranked = self.nearest(vector, limit * 2 if query.filters.path_glob else limit)
        chunks = {c.chunk_id: c for c in self.store.chunks([cid for cid, _ in ranked])}
        hits = []
        for cid, score in ranked:
            c = chunks.get(cid)
            if c is not None and path_ok(c.path, query.filters.path_glob):
                hits.append(Hit(c.path, c.start_line, c.end_line, score, symbol=c.symbol,
                                kind=c.kind))
        return hits[:limit]
