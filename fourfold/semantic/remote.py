"""Optional remote embedding providers: Voyage AI and any OpenAI-compatible endpoint.

Off by default and never required; chosen with ``--embedder voyage[:MODEL]`` or
``--embedder openai[:MODEL]``. Their float vectors go through the same path as the bundled
models (int8 vectors, sign bits after centring, Hamming search, int8 rescoring), and are
cached by chunk content like any other model, so a repository is embedded once.

Configuration, by environment:

* Voyage: ``VOYAGE_API_KEY`` (required); model defaults to ``voyage-code-3``;
  ``FOURFOLD_VOYAGE_URL`` overrides the endpoint (default https://api.voyageai.com/v1).
  Documents and queries are sent with Voyage's ``input_type`` "document" / "query".
* OpenAI-compatible (OpenAI, a local Ollama, vLLM, llama.cpp server ...):
  ``FOURFOLD_OPENAI_BASE_URL`` (default http://localhost:11434/v1, Ollama's),
  ``FOURFOLD_OPENAI_MODEL`` or the ``openai:MODEL`` suffix (required),
  ``FOURFOLD_OPENAI_API_KEY`` (sent as a bearer token when set). ``OPENAI_API_KEY`` is used
  only when the endpoint is api.openai.com, so an OpenAI key never goes to another host.

Rate limits and server errors (HTTP 429, 5xx) are retried with backoff, honouring
``Retry-After``; a query gets a short timeout, so a hung endpoint cannot stall searches.

Only the standard library talks HTTP here; a network failure or a bad answer raises
:class:`EmbedderUnavailable` with the provider's message, so the caller keeps the other
modalities running.
"""
from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request

import numpy as np

from .embedder import EmbedderUnavailable, _l2_normalize

VOYAGE_DEFAULT_MODEL = "voyage-code-3"
VOYAGE_DEFAULT_URL = "https://api.voyageai.com/v1"
OPENAI_DEFAULT_URL = "http://localhost:11434/v1"
REQUEST_BATCH = 64
TIMEOUT_S = 60.0  # a batch of documents
QUERY_TIMEOUT_S = 5.0  # one query, on the search path
RETRIES = 3
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class RemoteEmbedder:
    """POST {base_url}/embeddings with {"model", "input": [...]} and read data[i].embedding."""

    def __init__(self, provider: str, model: str, base_url: str, api_key: str | None = None,
                 *, document_extra: dict | None = None, query_extra: dict | None = None,
                 batch_size: int = REQUEST_BATCH, timeout: float = TIMEOUT_S):
        self.provider = provider
        self.model = model
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._document_extra = document_extra or {}
        self._query_extra = query_extra or {}
        self.batch_size = batch_size
        self.timeout = timeout
        # The model name keys stored vectors: a different endpoint serving a model of the
        # same name may not give the same vectors, so the host is part of it.
        host = urllib.parse.urlparse(self.base_url).netloc or self.base_url
        self.name = f"{provider}:{model}@{host}"
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def _post(self, texts: list[str], extra: dict, timeout: float) -> np.ndarray:
        body = json.dumps({"model": self.model, "input": texts, **extra}).encode()
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(f"{self.base_url}/embeddings", data=body,
                                         headers=headers, method="POST")
        for attempt in range(RETRIES + 1):
            try:
                with urllib.request.urlopen(request, timeout=timeout) as response:
                    answer = json.load(response)
                break
            except urllib.error.HTTPError as exc:
                if exc.code in RETRY_STATUS and attempt < RETRIES:
                    time.sleep(_retry_after(exc.headers.get("Retry-After"), attempt))
                    continue
                detail = exc.read()[:300].decode("utf-8", "replace")
                raise EmbedderUnavailable(
                    f"{self.provider} embeddings at {self.base_url} answered HTTP "
                    f"{exc.code}: {detail}") from exc
            except (urllib.error.URLError, http.client.HTTPException, OSError,
                    TimeoutError) as exc:
                raise EmbedderUnavailable(
                    f"{self.provider} embeddings at {self.base_url} unreachable: {exc}") from exc
            except ValueError as exc:
                raise EmbedderUnavailable(
                    f"{self.provider} embeddings at {self.base_url} sent invalid JSON") from exc
        try:
            rows = sorted(answer["data"], key=lambda row: row.get("index", 0))
            vectors = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbedderUnavailable(
                f"{self.provider} embeddings at {self.base_url}: unexpected answer "
                f"{str(answer)[:200]}") from exc
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise EmbedderUnavailable(
                f"{self.provider} embeddings at {self.base_url}: asked for {len(texts)} "
                f"vectors, got {len(vectors)}")
        return vectors

    def _embed(self, texts: list[str], extra: dict, timeout: float) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        parts = [self._post([t or " " for t in texts[i:i + self.batch_size]], extra, timeout)
                 for i in range(0, len(texts), self.batch_size)]
        vectors = np.concatenate(parts)
        if self._dim is not None and vectors.shape[1] != self._dim:
            raise EmbedderUnavailable(
                f"{self.name} changed dimension from {self._dim} to {vectors.shape[1]}")
        self._dim = int(vectors.shape[1])
        return _l2_normalize(vectors)

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts, self._document_extra, self.timeout)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], self._query_extra, QUERY_TIMEOUT_S)[0]


def _retry_after(header: str | None, attempt: int) -> float:
    """Seconds to wait before retrying: the server's Retry-After, else 1, 2, 4 s (at most 30)."""
    try:
        return min(float(header), 30.0) if header else float(2 ** attempt)
    except ValueError:
        return float(2 ** attempt)


def voyage_embedder(model: str | None = None) -> RemoteEmbedder:
    key = os.environ.get("VOYAGE_API_KEY")
    if not key:
        raise EmbedderUnavailable("the voyage embedder needs VOYAGE_API_KEY in the environment")
    return RemoteEmbedder("voyage", model or VOYAGE_DEFAULT_MODEL,
                          os.environ.get("FOURFOLD_VOYAGE_URL") or VOYAGE_DEFAULT_URL, key,
                          document_extra={"input_type": "document"},
                          query_extra={"input_type": "query"})


def openai_embedder(model: str | None = None) -> RemoteEmbedder:
    model = model or os.environ.get("FOURFOLD_OPENAI_MODEL")
    if not model:
        raise EmbedderUnavailable(
            "the openai embedder needs a model: --embedder openai:MODEL or "
            "FOURFOLD_OPENAI_MODEL (e.g. nomic-embed-text on Ollama)")
    base_url = os.environ.get("FOURFOLD_OPENAI_BASE_URL") or OPENAI_DEFAULT_URL
    key = os.environ.get("FOURFOLD_OPENAI_API_KEY")
    if key is None and urllib.parse.urlparse(base_url).hostname == "api.openai.com":
        key = os.environ.get("OPENAI_API_KEY")
    return RemoteEmbedder("openai", model, base_url, key)


PROVIDERS = {"voyage": voyage_embedder, "openai": openai_embedder}
