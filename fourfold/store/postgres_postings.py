"""The server's BM25 index: a repository's postings of each term kept as lists, not rows.

A row of chunk_postings holds, for one repository (a family's home), one term and one
block, the ids of the block's chunks that hold the term, each one's weighted count of it
and its length, as packed big-endian arrays (the byte order of PostgreSQL's int8send,
float4send and int4send, so that SQL can make them too). A question reads a few rows per term
(one per block) and scores them here; a row per (chunk, term) made the kernel's index 15
GB and a search read ~100,000 scattered rows. A block is what one indexing run wrote, up
to BLOCK_CHUNKS chunks; posting_blocks keeps each block's range of chunk ids and how many
of its chunks are still there.

Each document's chunks' terms are kept with it (document_terms: one line of terms per
chunk), so deleting a document rewrites only the rows of its terms in the blocks that
hold its chunks, and BM25's term counts are taken away without reading the postings.
The blocks that one-file runs leave are merged once there are more than SMALL_BLOCKS_KEPT.
"""
from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Collection, Iterable, Mapping

import numpy as np
import psycopg

BLOCK_CHUNKS = 50_000  # chunks held before they are written as a block
SMALL_BLOCK_CHUNKS = BLOCK_CHUNKS // 8
SMALL_BLOCKS_KEPT = 8  # more small blocks than this in a repository are merged into one
TERMS_A_STATEMENT = 2_000  # rows of so many terms read at once when chunks are removed

IDS, WEIGHTS, LENGTHS = np.dtype(">i8"), np.dtype(">f4"), np.dtype(">i4")  # as stored
_POSTING_COLUMNS = "repo_id, term, block, chunk_ids, weights, lengths"
_POSTING_TYPES = ["bigint", "text", "bigint", "bytea", "bytea", "bytea"]


class HeldPostings:
    """The postings of a repository's new chunks, held (compactly) until they are written
    as one block."""

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self.terms, self.ids = array("i"), array("q")
        self.weights, self.lengths = array("f"), array("i")
        self.chunks = 0  # chunks with at least one term

    def add(self, chunk_id: int, weights: Mapping[str, float], length: int) -> None:
        if not weights:
            return
        vocabulary = self.vocabulary
        self.terms.extend(vocabulary.setdefault(term, len(vocabulary)) for term in weights)
        self.weights.extend(weights.values())
        count = len(weights)
        self.ids.extend([chunk_id] * count)
        self.lengths.extend([length] * count)
        self.chunks += 1

    def drop(self, chunk_ids: Collection[int]) -> None:
        """Forget the postings of chunks deleted before they were written."""
        if not self.ids:
            return
        ids = np.frombuffer(self.ids, np.int64)
        gone = np.isin(ids, np.fromiter(chunk_ids, np.int64, len(chunk_ids)))
        if not gone.any():
            return
        keep = ~gone
        self.chunks -= len(np.unique(ids[gone]))
        self.terms = array("i", np.frombuffer(self.terms, np.int32)[keep].tobytes())
        self.ids = array("q", ids[keep].tobytes())
        self.weights = array("f", np.frombuffer(self.weights, np.float32)[keep].tobytes())
        self.lengths = array("i", np.frombuffer(self.lengths, np.int32)[keep].tobytes())

    def rows(self, repo_id: int, block: int) -> Iterable[tuple]:
        """One row per term, its postings sorted by chunk id."""
        terms = np.frombuffer(self.terms, np.int32)
        ids = np.frombuffer(self.ids, np.int64)
        order = np.lexsort((ids, terms))
        terms, ids = terms[order], ids[order].astype(IDS)
        weights = np.frombuffer(self.weights, np.float32)[order].astype(WEIGHTS)
        lengths = np.frombuffer(self.lengths, np.int32)[order].astype(LENGTHS)
        names = list(self.vocabulary)
        bounds = np.flatnonzero(np.diff(terms)) + 1
        for start, end in zip([0, *bounds.tolist()], [*bounds.tolist(), len(terms)]):
            yield (repo_id, names[terms[start]], block, ids[start:end].tobytes(),
                   weights[start:end].tobytes(), lengths[start:end].tobytes())

    def write(self, cur: psycopg.Cursor, repo_id: int) -> None:
        """Write what is held as one block (nothing if nothing is held)."""
        if self.chunks:
            ids = np.frombuffer(self.ids, np.int64)
            block, last = int(ids.min()), int(ids.max())
            _copy_postings(cur, self.rows(repo_id, block))
            cur.execute("INSERT INTO posting_blocks VALUES(%s, %s, %s, %s)",
                        (repo_id, block, last, self.chunks))
        self.__init__()


def _copy_postings(cur: psycopg.Cursor, rows: Iterable[tuple]) -> None:
    # binary: the arrays go as they are (text COPY would send each byte as two hex digits)
    with cur.copy(f"COPY chunk_postings({_POSTING_COLUMNS}) FROM STDIN (FORMAT BINARY)"
                  ) as copy:
        copy.set_types(_POSTING_TYPES)
        for row in rows:
            copy.write_row(row)


# -- each document's terms ---------------------------------------------------------------
def packed_ids(ids: Iterable[int]) -> bytes:
    return np.fromiter(ids, IDS).tobytes()


def term_lines(chunk_terms: Iterable[Iterable[str]]) -> str:
    """A document's chunks' terms as document_terms keeps them: a line per chunk (terms
    are words: they hold no space or newline)."""
    return "\n".join(" ".join(terms) for terms in chunk_terms)


def chunk_terms(rows: Iterable[tuple[bytes, str]]) -> dict[int, list[str]]:
    """chunk id -> its terms, from document_terms rows (chunk_ids, terms)."""
    found: dict[int, list[str]] = {}
    for ids, lines in rows:
        found.update(zip(np.frombuffer(ids, IDS).tolist(),
                         (line.split() for line in lines.split("\n"))))
    return found


def documents_term_counts(cur: psycopg.Cursor, repo_id: int, documents: list[int]) -> Counter:
    """How many of these documents' chunks hold each term (counted by the server: a
    branch of a big repository holds millions)."""
    return Counter(dict(cur.execute(
        "SELECT term, count(*) FROM document_terms d, unnest(string_to_array(translate("
        "d.terms, E'\\n', ' '), ' ')) AS term WHERE d.repo_id = %s AND d.document_id = "
        "ANY(%s) AND term <> '' GROUP BY term", (repo_id, documents)).fetchall()))


# -- removing chunks -------------------------------------------------------------------------
def remove_chunks(cur: psycopg.Cursor, repo_id: int, dead: Mapping[int, list[str]]) -> None:
    """Take deleted chunks (id -> its terms) out of the repository's written blocks: each
    row of one of their terms in a block whose range holds one of them is rewritten
    without them, or deleted when none is left."""
    if not dead:
        return
    dead_ids = np.fromiter(dead, np.int64, len(dead))
    blocks = [row[0] for row in cur.execute(
        "SELECT block FROM posting_blocks WHERE repo_id = %s AND block <= %s AND last >= %s",
        (repo_id, int(dead_ids.max()), int(dead_ids.min())))]
    if not blocks:
        return
    terms = sorted({term for terms in dead.values() for term in terms})
    gone_from: dict[int, set[int]] = {}  # block -> its dead chunks
    for start in range(0, len(terms), TERMS_A_STATEMENT):
        changed, emptied = [], []
        for term, block, ids, weights, lengths in cur.execute(
                "SELECT term, block, chunk_ids, weights, lengths FROM chunk_postings WHERE "
                "repo_id = %s AND block = ANY(%s) AND term = ANY(%s)",
                (repo_id, blocks, terms[start:start + TERMS_A_STATEMENT])).fetchall():
            ids = np.frombuffer(ids, IDS)
            gone = np.isin(ids, dead_ids)
            if not gone.any():
                continue
            gone_from.setdefault(block, set()).update(ids[gone].tolist())
            keep = ~gone
            if not keep.any():
                emptied.append((term, block))
                continue
            changed.append((term, block, ids[keep].tobytes(),
                            np.frombuffer(weights, WEIGHTS)[keep].tobytes(),
                            np.frombuffer(lengths, LENGTHS)[keep].tobytes()))
        if emptied:
            cur.execute("DELETE FROM chunk_postings p USING unnest(%s::text[], %s::bigint[]) "
                        "AS e(term, block) WHERE p.repo_id = %s AND p.term = e.term AND "
                        "p.block = e.block", ([t for t, _ in emptied], [b for _, b in emptied],
                                              repo_id))
        if changed:
            columns = list(zip(*changed))
            cur.execute("UPDATE chunk_postings p SET chunk_ids = c.ids, weights = c.weights, "
                        "lengths = c.lengths FROM unnest(%s::text[], %s::bigint[], "
                        "%s::bytea[], %s::bytea[], %s::bytea[]) AS c(term, block, ids, "
                        "weights, lengths) WHERE p.repo_id = %s AND p.term = c.term AND "
                        "p.block = c.block", (*map(list, columns), repo_id))
    if gone_from:
        cur.execute("UPDATE posting_blocks b SET chunks = b.chunks - g.n FROM unnest("
                    "%s::bigint[], %s::integer[]) AS g(block, n) WHERE b.repo_id = %s AND "
                    "b.block = g.block", (list(gone_from), [len(c) for c in gone_from.values()],
                                          repo_id))
        cur.execute("DELETE FROM posting_blocks WHERE repo_id = %s AND chunks <= 0",
                    (repo_id,))


def merge_small_blocks(cur: psycopg.Cursor, repo_id: int) -> None:
    """Merge the repository's small blocks into one when there are more than
    SMALL_BLOCKS_KEPT: a question reads a row per block of each of its terms."""
    small = cur.execute("SELECT block, last, chunks FROM posting_blocks WHERE repo_id = %s "
                        "AND chunks < %s", (repo_id, SMALL_BLOCK_CHUNKS)).fetchall()
    if len(small) <= SMALL_BLOCKS_KEPT:
        return
    blocks = [block for block, _, _ in small]
    merged: dict[str, list[tuple[bytes, bytes, bytes]]] = {}
    for term, *arrays in cur.execute(
            "DELETE FROM chunk_postings WHERE repo_id = %s AND block = ANY(%s) "
            "RETURNING term, chunk_ids, weights, lengths", (repo_id, blocks)).fetchall():
        merged.setdefault(term, []).append(arrays)
    cur.execute("DELETE FROM posting_blocks WHERE repo_id = %s AND block = ANY(%s)",
                (repo_id, blocks))
    block = min(blocks)

    def rows() -> Iterable[tuple]:
        for term, parts in merged.items():
            ids = np.concatenate([np.frombuffer(p[0], IDS) for p in parts])
            order = np.argsort(ids, kind="stable")
            weights = np.concatenate([np.frombuffer(p[1], WEIGHTS) for p in parts])
            lengths = np.concatenate([np.frombuffer(p[2], LENGTHS) for p in parts])
            # (concatenating gives the machine's byte order)
            yield (repo_id, term, block, ids[order].astype(IDS).tobytes(),
                   weights[order].astype(WEIGHTS).tobytes(),
                   lengths[order].astype(LENGTHS).tobytes())

    _copy_postings(cur, rows())
    cur.execute("INSERT INTO posting_blocks VALUES(%s, %s, %s, %s)",
                (repo_id, block, max(last for _, last, _ in small),
                 sum(chunks for _, _, chunks in small)))


# -- scoring -------------------------------------------------------------------------------
def bm25_scores(rows: Iterable[tuple[str, bytes, bytes, bytes]], idf: Mapping[str, float],
                k1: float, b: float, average_length: float) -> tuple[np.ndarray, np.ndarray]:
    """(chunk ids, scores) of every chunk in the posting rows (term, chunk_ids, weights,
    lengths): the sum over its terms of idf * w (k1 + 1) / (w + k1 (1 - b + b D / avgdl))."""
    all_ids, all_parts = [], []
    for term, ids, weights, lengths in rows:
        w = np.frombuffer(weights, WEIGHTS).astype(np.float64)
        length = np.frombuffer(lengths, LENGTHS).astype(np.float64)
        all_ids.append(np.frombuffer(ids, IDS).astype(np.int64))
        all_parts.append(idf[term] * ((w * (k1 + 1.0)) /
                                      (w + k1 * (1.0 - b + b * length / average_length))))
    if not all_ids:
        return np.empty(0, np.int64), np.empty(0)
    ids = np.concatenate(all_ids)
    chunk_ids, where = np.unique(ids, return_inverse=True)
    return chunk_ids, np.bincount(where, weights=np.concatenate(all_parts),
                                  minlength=len(chunk_ids))


def best_first(chunk_ids: np.ndarray, scores: np.ndarray, count: int) -> list[tuple[int, float]]:
    """The `count` best (chunk id, score), by score and then by id, as SQL's ORDER BY
    score DESC, chunk_id would give them."""
    if count < len(scores):
        floor = np.partition(scores, len(scores) - count)[len(scores) - count]
        keep = scores >= floor
        chunk_ids, scores = chunk_ids[keep], scores[keep]
    order = np.lexsort((chunk_ids, -scores))[:count]
    return list(zip(chunk_ids[order].tolist(), scores[order].tolist()))
