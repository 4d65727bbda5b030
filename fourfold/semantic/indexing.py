"""The embedding phase of indexing: embed every chunk that has no vector yet.

Runs after text, structure and graph are committed, so those answer while this works.
Vectors are keyed by the chunk's content hash, both in the index and in a shared cache
(one SQLite file per user), so a second checkout, a branch switch or a re-index never
embeds the same chunk twice.
"""
from __future__ import annotations

import os
import sqlite3
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from ..store.base import FileRecord, Store, codes_allowance_setting
from .embedding_text import chunk_text_for_embedding

if TYPE_CHECKING:  # numpy is loaded where vectors are made or read: a run that embeds
    # nothing and copies its twin's codes loads none
    import numpy as np

    from .embedder import Embedder

EMBED_BATCH = 256
DEEP_BATCH = 32  # the deep pass's batches: about a second each, then it may be given up
CODE_BLOCK = 8192  # vectors read at a time for codes (8 MiB of float32 at 256 dimensions)
# Chunks may get codes against the mean the codes were taken with (add_codes) until they
# pass this share of those coded then; then all are taken anew. Query and chunks are
# centred by the same held mean either way, so answers stay consistent meanwhile; a 16th
# of the Linux kernel's chunks replaced moves its mean by 2 % of its length and flips 0.3 %
# of a code's bits (docs/benchmarks.md), while taking every code anew costs half a minute.
CODES_RETAKE_SHARE = 1 / 16


def shared_cache_path() -> Path:
    base = os.environ.get("FOURFOLD_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "fourfold")
    return Path(base) / "vectors.sqlite"


class VectorCache:
    """(model, chunk hash) -> int8 vector, shared by every index of this user."""

    def __init__(self, path: Path | None = None):
        self.path = path or shared_cache_path()
        self._local = threading.local()

    def _conn(self) -> sqlite3.Connection | None:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")  # a cache: no fsync per batch
                conn.execute("CREATE TABLE IF NOT EXISTS vectors(model TEXT, hash TEXT, "
                             "vec BLOB, scale REAL, PRIMARY KEY(model, hash))")
            except (OSError, sqlite3.Error):
                return None  # the cache is an optimisation: without it, just embed
            self._local.conn = conn
        return conn

    def get(self, model: str, hashes: list[str]) -> dict[str, tuple[bytes, float]]:
        conn = self._conn()
        if conn is None or not hashes:
            return {}
        out = {}
        for start in range(0, len(hashes), 500):
            part = hashes[start:start + 500]
            rows = conn.execute(
                f"SELECT hash, vec, scale FROM vectors WHERE model=? AND hash IN "
                f"({','.join('?' * len(part))})", [model, *part]).fetchall()
            out.update({h: (v, s) for h, v, s in rows})
        return out

    def put(self, model: str, rows: list[tuple[str, bytes, float]]) -> None:
        conn = self._conn()
        if conn is None:
            return
        try:
            with conn:
                conn.executemany("INSERT OR REPLACE INTO vectors VALUES(?,?,?,?)",
                                 [(model, h, v, s) for h, v, s in rows])
        except sqlite3.Error:
            pass


def _texts_of_file(path: str, text: str, symbols: list, spans: list[tuple]) -> list[str]:
    """The embedder's text of each (symbol, start line, end line) span of one file."""
    lines = text.split("\n")
    # by start line, as the store lists a file's symbols: the last of a repeated name wins
    by_name = {s.qualname: s for s in sorted(symbols, key=lambda s: s.start_line)}
    out = []
    for symbol, start, end in spans:
        sym = by_name.get(symbol) if symbol else None
        out.append(chunk_text_for_embedding(path, symbol, sym.signature if sym else None,
                                            sym.doc if sym else None,
                                            "\n".join(lines[start - 1:end])))
    return out


def embedding_texts(store: Store, chunk_ids: list[int]) -> dict[int, str]:
    """The text the embedder reads for each chunk: path, symbol, signature, doc, body."""
    # a chunk of a document several branches hold comes once per file: its text is one
    chunks = list({c.chunk_id: c for c in store.chunks(chunk_ids)}.values())
    by_file: dict[int, list] = {}
    for c in chunks:
        by_file.setdefault(c.file_id, []).append(c)
    texts: dict[int, str] = {}
    for file_id, file_chunks in by_file.items():
        texts.update(zip((c.chunk_id for c in file_chunks), _texts_of_file(
            file_chunks[0].path, store.content(file_id), store.symbols_of_file(file_id),
            [(c.symbol, c.start_line, c.end_line) for c in file_chunks])))
    return texts


def embed_records(records: list[FileRecord], embedder: Embedder) -> None:
    """Embed freshly parsed files' chunks into each `record.vectors`, from the text
    embedding_texts() gives them once stored (parser processes do this while the indexing
    process writes). The files are embedded together: one batch sums faster than many."""
    texts = [text for record in records for text in _texts_of_file(
        record.path, record.text, record.symbols,
        [(c.symbol, c.start_line, c.end_line) for c in record.chunks])]
    if not texts:
        return
    from .binary import to_int8

    quantized, scales = to_int8(embedder.embed(texts))
    row = 0
    for record in records:
        record.vectors = [(h, quantized[row + i].tobytes(), float(scales[row + i]))
                          for i, h in enumerate(record.chunk_hashes)]
        row += len(record.chunk_hashes)


class Deferred:
    """A model known by the name its vectors are stored under, loaded (`load()`) at its
    first embedding: most index runs after the first find every chunk's vector stored or
    cached, and loading the model is most of what such a run would cost."""

    def __init__(self, name: str, load: Callable[[], Embedder]):
        self.name = name
        self._load = load

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._load().embed(texts)


def embed_pending(store: Store, embedder: Embedder, cache: VectorCache | None = None,
                  progress: Callable[[str, int, int], None] | None = None,
                  within: Sequence[int] | None = None, repo_id: int | None = None,
                  total: int | None = None, interrupted: threading.Event | None = None,
                  stage: str = "embed", batch: int = EMBED_BATCH) -> int:
    """Embed every chunk without a vector for this model (of `within`, chunk ids, if
    given; of repository `repo_id`, whose `total` chunks progress counts against, if
    given); returns how many were embedded. Stops between batches once `interrupted` is
    set (what is embedded is kept). `stage`: what progress calls the work; `batch`: chunks
    embedded at a time."""
    cache = cache or VectorCache()
    if repo_id is not None:
        done, total = 0, total or 0
    else:
        done, total = (store.vector_progress(embedder.name) if within is None
                       else (0, len(within)))
        if done == total:  # nothing to look for chunk by chunk
            return 0
    embedded = 0
    last_id = 0
    while not (interrupted is not None and interrupted.is_set()):
        pending = store.chunks_missing_vectors(embedder.name, batch, after=last_id,
                                               within=within, repo_id=repo_id)
        if not pending:
            break
        last_id = pending[-1][0]
        cached = cache.get(embedder.name, list({h for _, h in pending}))
        rows = [(h, *cached[h]) for _, h in pending if h in cached]
        todo = list({h: (cid, h) for cid, h in pending if h not in cached}.values())
        if todo:
            from .binary import to_int8

            texts = embedding_texts(store, [cid for cid, _ in todo])
            vectors = embedder.embed([texts.get(cid, "") for cid, _ in todo])
            quantized, scales = to_int8(vectors)
            fresh = [(h, quantized[i].tobytes(), float(scales[i]))
                     for i, (_, h) in enumerate(todo)]
            cache.put(embedder.name, fresh)
            rows += fresh
            embedded += len(todo)
        store.put_vectors(embedder.name, rows)
        done += len(pending)
        if progress:
            progress(stage, min(done, total), total)
    return embedded


def refresh_codes(store: Store, model: str, repo_id: int) -> int:
    """Take a repository's binary codes anew from its vectors: the sign bits after centring
    by the repository's mean vector (the mean moves as its code changes, so all of them are
    retaken together), and let the next CODES_RETAKE_SHARE of them be coded against that
    mean. Returns how many chunks have a code."""
    # The vectors are read once, a block at a time, and kept in a temporary file while
    # their mean is summed; the codes are made from there. The kernel's 1.47 million
    # vectors take 0.4 GB as int8, 1.5 GB as float32, and 7 s to read from the index.
    import numpy as np

    from .binary import from_int8, to_codes

    count, total, blocks = 0, 0.0, []
    with tempfile.TemporaryFile(prefix="fourfold-vectors-") as spill:
        for ids, rows, scales in store.vector_blocks(model, repo_id, CODE_BLOCK):
            int8, approx = from_int8(rows, scales)
            total = total + approx.sum(axis=0, dtype=np.float64)
            count += len(ids)
            blocks.append(int8.shape)
            spill.write(np.asarray(ids, dtype=np.int64).tobytes())
            spill.write(np.asarray(scales, dtype=np.float32).tobytes())
            spill.write(int8.tobytes())
        if not count:
            store.set_setting(codes_allowance_setting(repo_id, model), 0)
            return 0
        mean = (total / count).astype(np.float32)
        spill.seek(0)

        def codes() -> Iterator[tuple[int, bytes]]:
            for rows, dim in blocks:
                ids = np.frombuffer(spill.read(8 * rows), dtype=np.int64).tolist()
                scales = np.frombuffer(spill.read(4 * rows), dtype=np.float32)
                int8 = np.frombuffer(spill.read(rows * dim), dtype=np.int8).reshape(rows, dim)
                yield from zip(ids, (code.tobytes() for code in to_codes(
                    int8.astype(np.float32) * scales[:, None], mean)))

        store.put_codes(repo_id, model, mean.tobytes(), codes())
    store.set_setting(codes_allowance_setting(repo_id, model), int(count * CODES_RETAKE_SHARE))
    return count


def add_codes(store: Store, model: str, repo_id: int, chunk_ids: Sequence[int],
              removed: int = 0) -> bool:
    """Give these chunks binary codes against the mean the repository's codes were taken
    with: a few changed files need not move every code. These chunks and the `removed`
    ones (of deleted files) count against the allowance refresh_codes left. False where
    there is no mean yet."""
    import numpy as np

    from .binary import from_int8, to_codes

    mean = store.code_mean(repo_id, model)
    if mean is None:
        return False
    key = codes_allowance_setting(repo_id, model)
    store.set_setting(key, store.setting(key, 0) - len(chunk_ids) - removed)
    found = store.vectors_of(model, chunk_ids)
    if found:
        ids = sorted(found)
        _, approx = from_int8([found[i][0] for i in ids], [found[i][1] for i in ids])
        codes = to_codes(approx, np.frombuffer(mean, dtype=np.float32))
        store.add_codes(repo_id, model, ids, [row.tobytes() for row in codes])
    return True
