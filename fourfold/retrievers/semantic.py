"""Semantic modality: chunks by meaning. The store finds the chunks whose binary codes (1 bit
per dimension, centred by the repository's mean vector) are nearest the question's by
exact Hamming distance (in memory, where the process holds the repository's codes; a server
holds them up to a budget and searches a bigger repository's in the database); those
candidates are rescored here with their int8 vectors."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import cached_property

import numpy as np

from ..model import Hit
from ..semantic.binary import search as binary_search
from ..semantic.binary import from_int8, to_codes
from ..semantic.embedder import Embedder, embed_query
from ..semantic.indexing import embedding_texts
from ..errors import ModalityUnavailable
from ..store.base import Store, deep_codes_setting
from ..query.model import Query
from .base import inside_glob, path_ok

RESCORE_CANDIDATES = 100
# nearest chunks a search under a narrow glob asks for at most (each one's vector is read
# to rescore it)
GLOB_POOL_MOST = 8192

log = logging.getLogger(__name__)


class SemanticHits(list):
    """Hits in order, and the name of the model that found them (`model`)."""

    def __init__(self, items=(), model: str | None = None):
        super().__init__(items)
        self.model = model


class SemanticRetriever:
    modality = "semantic"

    def __init__(self, store: Store, embedder_factory,
                 scope: Callable[[], int | None] = lambda: None,
                 deep_factory: Callable[[], Embedder] | None = None,
                 deep_name: Callable[[], str | None] = lambda: None):
        """embedder_factory() -> Embedder, called on first use (loading a model takes time);
        scope() -> the repository searched (None: every one). The deep pass's model
        (deep_factory(), its vectors stored as deep_name()) answers instead where the
        repository has its codes: it is loaded only then."""
        self.store = store
        self.scope = scope
        self._factory = embedder_factory
        self._deep_factory = deep_factory
        self._deep_name = deep_name
        self._embedder: Embedder | None = None
        self._deep: Embedder | None = None
        self._deep_failed: str | None = None  # why the deep model could not be loaded
        self._lock = threading.Lock()

    @property
    def embedder(self) -> Embedder:
        """The model every chunk is embedded with while indexing."""
        with self._lock:
            if self._embedder is None:
                self._embedder = self._factory()
            return self._embedder

    @property
    def deep_embedder(self) -> Embedder | None:
        """The deep pass's model for questions (None where there is none, it is the indexing
        model, or it cannot be loaded here: the indexing model answers then)."""
        if self._deep_factory is None or self.deep_model() is None:
            return None
        with self._lock:
            if self._deep is None and self._deep_failed is None:
                try:
                    self._deep = self._deep_factory()
                except ModalityUnavailable as exc:
                    self._deep_failed = str(exc)
                    log.warning("the deep pass's model cannot be loaded (%s); the indexing "
                                "model answers", exc)
            return self._deep

    @property
    def deep_failure(self) -> str | None:
        """Why the deep pass's model could not be loaded here, once it failed."""
        return self._deep_failed

    @cached_property
    def _deep_model(self) -> str | None:
        name = self._deep_name()
        return None if name is None or name == self.embedder.name else name

    def deep_model(self) -> str | None:
        """The name the deep pass's vectors are stored under, None where there is no deep
        pass (or its model is the one every chunk is embedded with anyway)."""
        return self._deep_model

    def is_deep_model(self, name: str) -> bool:
        """Whether vectors stored as `name` are the deep pass's model's, whichever model
        indexed the chunks (an index embedded with it while indexing has the same vectors)."""
        return name == self._deep_name()

    def answering(self, repo_id: int | None) -> Embedder:
        """The model that answers for a repository: the deep pass's while it has coded
        every chunk of the repository, else the indexing model."""
        deep = self.deep_model()
        if deep is not None and repo_id is not None and \
                self.store.setting(deep_codes_setting(repo_id, deep), 0):
            return self.deep_embedder or self.embedder
        return self.embedder

    def answers_deep(self) -> bool:
        """Whether the deep pass's model answers for the repository searched."""
        return self.is_deep_model(self.answering(self.scope()).name)

    def progress(self) -> tuple[int, int]:
        return self.store.vector_progress(self.embedder.name)

    def ready(self) -> bool:
        repo_id = self.scope()
        return repo_id is not None and self.store.code_mean(
            repo_id, self.answering(repo_id).name) is not None

    def incomplete(self) -> str | None:
        return None  # what is not embedded yet: progress()

    def nearest(self, vector: np.ndarray, limit: int, model: str) -> list[tuple[int, float]]:
        """(chunk id, cosine) of the chunks nearest a query vector of this model."""
        repo_id = self.scope()
        mean = self.store.code_mean(repo_id, model) if repo_id is not None else None
        if mean is None:
            return []
        mean = np.frombuffer(mean, dtype=np.float32)
        code = to_codes(np.asarray(vector, dtype=np.float32), mean)[0].tobytes()
        candidates = sorted(self.store.nearest_codes(repo_id, model, code,
                                                     max(RESCORE_CANDIDATES, limit)))
        vectors = self.store.vectors_of(model, candidates)
        ids = [cid for cid in candidates if cid in vectors]
        if not ids:
            return []
        int8, approx = from_int8([vectors[cid][0] for cid in ids],
                                 [vectors[cid][1] for cid in ids])
        # the candidates in chunk id order, as the whole repository's codes are ranked: the
        # same Hamming ties, the same rescoring
        codes = to_codes(approx, mean)
        idx, scores = binary_search(vector, codes, int8, mean, k=limit, rescore_n=len(ids))
        return [(ids[i], float(s)) for i, s in zip(idx, scores)]

    def similar(self, chunk_id: int, limit: int) -> list[Hit]:
        """Chunks in other files nearest one indexed chunk. The origin's own file is left out:
        its chunks share the path the embedded text starts with, so they would crowd the list."""
        model = self.answering(self.scope())
        stored = self.store.vectors_of(model.name, [chunk_id]).get(chunk_id)
        if stored is not None:
            vector = np.frombuffer(stored[0], dtype=np.int8).astype(np.float32)
            vector /= max(float(np.linalg.norm(vector)), 1e-9)
        else:  # not embedded yet: embed its text now
            vector = model.embed([embedding_texts(self.store, [chunk_id])[chunk_id]])[0]
        origin = self.store.chunks([chunk_id], self.scope())[0]
        ranked = self.nearest(vector, limit + 50, model.name)
        chunks = {c.chunk_id: c for c in self.store.chunks([cid for cid, _ in ranked],
                                                           self.scope())}
        hits = []
        for cid, score in ranked:
            c = chunks.get(cid)
            if c is None or c.path == origin.path:
                continue
            hits.append(Hit(c.path, c.start_line, c.end_line, score, symbol=c.symbol,
                            kind=c.kind))
        return hits[:limit]

    def search(self, query: Query, limit: int) -> list[Hit]:
        model = self.answering(self.scope())
        vector = embed_query(model, query.text)
        glob = query.filters.path_glob

        def nearest(want: int) -> tuple[int, list[Hit]]:
            ranked = self.nearest(vector, want, model.name)
            chunks = {c.chunk_id: c for c in self.store.chunks([cid for cid, _ in ranked],
                                                               self.scope())}
            kept = []
            for cid, score in ranked:
                c = chunks.get(cid)
                if c is not None and path_ok(c.path, glob):
                    kept.append(Hit(c.path, c.start_line, c.end_line, score, symbol=c.symbol,
                                    kind=c.kind))
            return len(ranked), kept
        hits = inside_glob(nearest, glob, limit * 2 if glob else limit, limit, GLOB_POOL_MOST)
        return SemanticHits(hits[:limit], model=model.name)
