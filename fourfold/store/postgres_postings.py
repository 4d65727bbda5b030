"""The server's word indexes kept as lists, not rows: BM25's postings of chunks by stemmed
term (chunk_postings) and symbols by the words of their names (symbol_postings).

A row holds, for one repository (a family's home), one word and one block, the ids of the
block's chunks or symbols that hold the word (for chunks, each one's weighted count of the
term and its length too), as packed big-endian arrays: the byte order of PostgreSQL's
int8send, float4send and int4send, so that SQL can make them too. A question reads a few
rows per word (one per block) and works on the arrays here; a row per (chunk, term) made
the kernel's index 15 GB, and a search read ~100,000 scattered rows.

A block is what an indexing run wrote together, up to BLOCK_CHUNKS chunks; posting_blocks
keeps each block's range of ids (chunks and symbols are numbered from one sequence) and how
many of its entries (chunks and symbols) are left. Each document's words are kept with it
(document_terms), so BM25's term counts are taken away without reading the postings. A
deleted document's chunks and symbols are marked dead (dead_entries, with their words) and
left in the lists, where a search finds them nowhere else; once there are more than
DEAD_ENTRIES_KEPT (or a watcher's catch-up tidies), the rows of their words in their blocks
are rewritten without them. The blocks that one-file runs leave are merged once there are
more than SMALL_BLOCKS_KEPT.
"""
from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import psycopg

BLOCK_CHUNKS = 50_000  # chunks held before they are written as a block
SMALL_BLOCK_ENTRIES = BLOCK_CHUNKS // 8
SMALL_BLOCKS_KEPT = 8  # more small blocks than this in a repository are merged into one
WORDS_A_STATEMENT = 2_000  # rows of so many words read at once when entries are removed

IDS, WEIGHTS, LENGTHS = np.dtype(">i8"), np.dtype(">f4"), np.dtype(">i4")  # as stored


@dataclass(frozen=True)
class WordLists:
    """A table of lists: its word column, and its arrays (ids first) with their types."""
    table: str
    word: str
    arrays: tuple[str, ...]
    stored: tuple[np.dtype, ...]

    def copy(self, cur: psycopg.Cursor, rows: Iterable[tuple]) -> None:
        """COPY rows (repo_id, word, block, *arrays) in binary: the arrays go as they are
        (text COPY would send each byte as two hex digits)."""
        with cur.copy(f"COPY {self.table}(repo_id, {self.word}, block, "
                      f"{', '.join(self.arrays)}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["bigint", "text", "bigint", *["bytea"] * len(self.arrays)])
            for row in rows:
                copy.write_row(row)


CHUNK_LISTS = WordLists("chunk_postings", "term", ("chunk_ids", "weights", "lengths"),
                        (IDS, WEIGHTS, LENGTHS))
SYMBOL_LISTS = WordLists("symbol_postings", "token", ("symbol_ids",), (IDS,))
_NATIVE = {IDS: ("q", np.int64), WEIGHTS: ("f", np.float32), LENGTHS: ("i", np.int32)}


@dataclass(slots=True)
class WeighedChunks:
    """BM25's terms of a batch of chunks, as entries sorted by chunk, then term: each
    entry's chunk (its place in the batch), term (a place in `terms`) and column-weighted
    count. A chunk's entries are entry_chunk's run [bounds[i], bounds[i + 1]); its length
    counts its tokens in all three columns, those too long to keep as terms included."""
    terms: list[str]
    entry_chunk: np.ndarray
    entry_term: np.ndarray
    entry_weight: np.ndarray
    lengths: np.ndarray
    bounds: np.ndarray


class _HeldLists:
    """One table's new entries, held compactly: per entry and word, the word's number and
    the entry's values."""

    def __init__(self, lists: WordLists) -> None:
        self.lists = lists
        self.vocabulary: dict[str, int] = {}
        self.words = array("i")
        self.values = [array(_NATIVE[dtype][0]) for dtype in lists.stored]
        self.entries = 0

    def add(self, words: Collection[str], values: Sequence[int | float]) -> None:
        """One entry: its words, and its values (one per array)."""
        if not words:
            return
        vocabulary = self.vocabulary
        self.words.extend(vocabulary.setdefault(word, len(vocabulary)) for word in words)
        for column, value in zip(self.values, values):
            column.extend([value] * len(words))
        self.entries += 1

    def add_entries(self, words: Sequence[str], numbers: np.ndarray,
                    columns: Sequence[np.ndarray], entries: int) -> None:
        """Entries given as arrays: each one's word (a place in `words`) and values."""
        vocabulary = self.vocabulary
        held = np.fromiter((vocabulary.setdefault(word, len(vocabulary)) for word in words),
                           np.int32, len(words))
        self.words.frombytes(held[numbers].tobytes())
        for column, values, dtype in zip(self.values, columns, self.lists.stored):
            column.frombytes(np.asarray(values, _NATIVE[dtype][1]).tobytes())
        self.entries += entries

    def ids(self) -> np.ndarray:
        return np.frombuffer(self.values[0], np.int64)

    def drop(self, dead: np.ndarray) -> np.ndarray:
        """Forget these entries; returns those of them held."""
        gone = np.isin(self.ids(), dead)
        if not gone.any():
            return np.empty(0, np.int64)
        keep = ~gone
        dropped = np.unique(self.ids()[gone])
        self.entries -= len(dropped)
        self.words = array("i", np.frombuffer(self.words, np.int32)[keep].tobytes())
        self.values = [array(column.typecode, np.frombuffer(
            column, _NATIVE[dtype][1])[keep].tobytes())
            for column, dtype in zip(self.values, self.lists.stored)]
        return dropped

    def rows(self, repo_id: int, block: int) -> Iterable[tuple]:
        """One row per word, its entries sorted by id."""
        words = np.frombuffer(self.words, np.int32)
        order = np.lexsort((self.ids(), words))
        words = words[order]
        columns = [np.frombuffer(column, _NATIVE[dtype][1])[order].astype(dtype)
                   for column, dtype in zip(self.values, self.lists.stored)]
        names = list(self.vocabulary)
        bounds = np.flatnonzero(np.diff(words)) + 1
        for start, end in zip([0, *bounds.tolist()], [*bounds.tolist(), len(words)]):
            yield (repo_id, names[words[start]], block,
                   *(column[start:end].tobytes() for column in columns))


class HeldPostings:
    """The postings of a repository's new chunks and symbols, held until they are written
    as one block."""

    def __init__(self) -> None:
        self.chunks, self.symbols = _HeldLists(CHUNK_LISTS), _HeldLists(SYMBOL_LISTS)

    def add_chunks(self, chunk_ids: np.ndarray, weighed: WeighedChunks) -> None:
        """A batch's chunks (their ids, in the batch's order) with their weighed terms."""
        self.chunks.add_entries(
            weighed.terms, weighed.entry_term,
            (chunk_ids[weighed.entry_chunk], weighed.entry_weight,
             weighed.lengths[weighed.entry_chunk]),
            int(np.count_nonzero(np.diff(weighed.bounds))))

    def add_symbol(self, symbol_id: int, tokens: Collection[str]) -> None:
        self.symbols.add(tokens, (symbol_id,))

    def drop(self, dead: Collection[int]) -> set[int]:
        """Forget the entries (chunks or symbols) deleted before they were written; returns
        those of them that were held."""
        dead = np.fromiter(dead, np.int64, len(dead))
        return set(self.chunks.drop(dead).tolist()) | set(self.symbols.drop(dead).tolist())

    def write(self, cur: psycopg.Cursor, repo_id: int) -> None:
        """Write what is held as one block (nothing if nothing is held)."""
        held = [lists for lists in (self.chunks, self.symbols) if lists.entries]
        if held:
            ids = np.concatenate([lists.ids() for lists in held])
            block = int(ids.min())
            for lists in held:
                lists.lists.copy(cur, lists.rows(repo_id, block))
            cur.execute("INSERT INTO posting_blocks VALUES(%s, %s, %s, %s)",
                        (repo_id, block, int(ids.max()), sum(h.entries for h in held)))
        self.__init__()


# -- each document's words ---------------------------------------------------------------
@dataclass
class DocumentWords:
    """What document_terms keeps of a document: its chunks' terms (a line of terms per
    chunk: terms are words, holding no space or newline) and its symbols' tokens (any
    text: kept as an array, with how many each symbol has)."""
    chunk_ids: list[int]
    chunk_terms: list[Iterable[str]]
    symbol_ids: list[int]
    symbol_tokens: list[Collection[str]]

    def row(self, repo_id: int, document_id: int) -> tuple:
        return (repo_id, document_id, np.array(self.chunk_ids, IDS).tobytes(),
                "\n".join(" ".join(terms) for terms in self.chunk_terms),
                np.array(self.symbol_ids, IDS).tobytes(),
                [token for tokens in self.symbol_tokens for token in tokens],
                np.array([len(tokens) for tokens in self.symbol_tokens], LENGTHS).tobytes())


DOCUMENT_WORDS = "chunk_ids, terms, symbol_ids, symbol_tokens, token_counts"


def entry_words(rows: Iterable[tuple]) -> tuple[dict[int, list[str]], dict[int, list[str]]]:
    """(chunk id -> its terms, symbol id -> its tokens) from document_terms rows
    (DOCUMENT_WORDS)."""
    chunks: dict[int, list[str]] = {}
    symbols: dict[int, list[str]] = {}
    for chunk_ids, terms, symbol_ids, tokens, counts in rows:
        chunks.update(zip(np.frombuffer(chunk_ids, IDS).tolist(),
                          (line.split() for line in terms.split("\n"))))
        ends = np.cumsum(np.frombuffer(counts, LENGTHS)).tolist()
        symbols.update(zip(np.frombuffer(symbol_ids, IDS).tolist(),
                           (tokens[end - n:end] for end, n in zip(
                               ends, np.frombuffer(counts, LENGTHS).tolist()))))
    return chunks, symbols


def documents_term_counts(cur: psycopg.Cursor, repo_id: int, documents: list[int]) -> Counter:
    """How many of these documents' chunks hold each term (counted by the server: a
    branch of a big repository holds millions)."""
    return Counter(dict(cur.execute(
        "SELECT term, count(*) FROM document_terms d, unnest(string_to_array(translate("
        "d.terms, E'\\n', ' '), ' ')) AS term WHERE d.repo_id = %s AND d.document_id = "
        "ANY(%s) AND term <> '' GROUP BY term", (repo_id, documents)).fetchall()))


# -- removing entries -------------------------------------------------------------------------
DEAD_ENTRIES_KEPT = 20_000  # deleted entries left in their lists, read as absent


def bury(cur: psycopg.Cursor, repo_id: int, dead_chunks: Mapping[int, list[str]],
         dead_symbols: Mapping[int, list[str]]) -> None:
    """Mark deleted chunks and symbols (id -> its words) dead, leaving them in their blocks'
    lists: a question's hits are looked up, and a dead one is found nowhere. Rewriting the
    lists at once cost an edited file about a second on the kernel (a big block's list of
    each of its words); take_out_dead does it for many at a time."""
    rows = [(repo_id, entry, symbol, list(words))
            for entries, symbol in ((dead_chunks, False), (dead_symbols, True))
            for entry, words in entries.items()]
    if rows:
        with cur.copy("COPY dead_entries(repo_id, id, symbol, words) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def take_out_dead(cur: psycopg.Cursor, repo_id: int, kept: int | None = None) -> None:
    """Take the dead entries out of the lists once there are more than `kept` (by default
    DEAD_ENTRIES_KEPT), or more than are left alive (a repository mostly deleted)."""
    kept = DEAD_ENTRIES_KEPT if kept is None else kept
    dead, listed = cur.execute(
        "SELECT (SELECT count(*) FROM dead_entries WHERE repo_id = %(r)s), (SELECT "
        "coalesce(sum(entries), 0) FROM posting_blocks WHERE repo_id = %(r)s)",
        {"r": repo_id}).fetchone()
    if not dead or (dead <= kept and dead <= listed - dead):
        return
    chunks: dict[int, list[str]] = {}
    symbols: dict[int, list[str]] = {}
    for entry, symbol, words in cur.execute(
            "DELETE FROM dead_entries WHERE repo_id = %s RETURNING id, symbol, words",
            (repo_id,)).fetchall():
        (symbols if symbol else chunks)[entry] = words
    remove_entries(cur, repo_id, chunks, symbols)


def remove_entries(cur: psycopg.Cursor, repo_id: int, dead_chunks: Mapping[int, list[str]],
                   dead_symbols: Mapping[int, list[str]]) -> None:
    """Take deleted chunks and symbols (id -> its words) out of the repository's written
    blocks: in each block whose range holds some of them, each row of one of those
    entries' words is rewritten without them, or deleted when none is left."""
    dead = np.fromiter([*dead_chunks, *dead_symbols], np.int64)
    if not len(dead):
        return
    dead.sort()
    ranges = cur.execute(
        "SELECT block, last FROM posting_blocks WHERE repo_id = %s AND block <= %s AND "
        "last >= %s", (repo_id, int(dead[-1]), int(dead[0]))).fetchall()
    gone_from: dict[int, set[int]] = {}  # block -> its dead entries
    for block, last in ranges:
        # only the words of the entries this block may hold (ranges of merged blocks may
        # overlap others: the rows say which they hold)
        inside = dead[np.searchsorted(dead, block):np.searchsorted(dead, last, "right")]
        if not len(inside):
            continue
        for lists, entries in ((CHUNK_LISTS, dead_chunks), (SYMBOL_LISTS, dead_symbols)):
            words = sorted({word for entry in inside.tolist() if entry in entries
                            for word in entries[entry]})
            for start in range(0, len(words), WORDS_A_STATEMENT):
                _rewrite(cur, lists, repo_id, block, words[start:start + WORDS_A_STATEMENT],
                         inside, gone_from)
    if gone_from:
        cur.execute("UPDATE posting_blocks b SET entries = b.entries - g.n FROM unnest("
                    "%s::bigint[], %s::integer[]) AS g(block, n) WHERE b.repo_id = %s AND "
                    "b.block = g.block", (list(gone_from), [len(e) for e in gone_from.values()],
                                          repo_id))
        cur.execute("DELETE FROM posting_blocks WHERE repo_id = %s AND entries <= 0",
                    (repo_id,))


def _rewrite(cur: psycopg.Cursor, lists: WordLists, repo_id: int, block: int,
             words: list[str], dead: np.ndarray, gone_from: dict[int, set[int]]) -> None:
    """Rewrite the rows of these words in this block without the dead entries."""
    arrays = ", ".join(lists.arrays)
    changed, emptied = [], []
    for word, *values in cur.execute(
            f"SELECT {lists.word}, {arrays} FROM {lists.table} WHERE repo_id = %s AND "
            f"block = %s AND {lists.word} = ANY(%s)", (repo_id, block, words)).fetchall():
        ids = np.frombuffer(values[0], IDS)
        gone = np.isin(ids, dead)
        if not gone.any():
            continue
        gone_from.setdefault(block, set()).update(ids[gone].tolist())
        keep = ~gone
        if not keep.any():
            emptied.append(word)
            continue
        changed.append((word, *(np.frombuffer(value, dtype)[keep].tobytes()
                                for value, dtype in zip(values, lists.stored))))
    if emptied:
        cur.execute(f"DELETE FROM {lists.table} WHERE repo_id = %s AND block = %s AND "
                    f"{lists.word} = ANY(%s)", (repo_id, block, emptied))
    if changed:
        columns = list(zip(*changed))
        assigned = ", ".join(f"{name} = c.{name}" for name in lists.arrays)
        typed = ", ".join(["%s::bytea[]"] * len(lists.arrays))
        cur.execute(f"UPDATE {lists.table} p SET {assigned} FROM unnest(%s::text[], "
                    f"{typed}) AS c(word, {arrays}) WHERE p.repo_id = %s AND p.block = %s "
                    f"AND p.{lists.word} = c.word", (*map(list, columns), repo_id, block))


def merge_small_blocks(cur: psycopg.Cursor, repo_id: int, kept: int | None = None) -> None:
    """Merge the repository's small blocks into one when there are more than `kept` (by
    default SMALL_BLOCKS_KEPT): a question reads a row per block of each of its words."""
    kept = SMALL_BLOCKS_KEPT if kept is None else kept
    small = cur.execute("SELECT block, last, entries FROM posting_blocks WHERE repo_id = %s "
                        "AND entries < %s", (repo_id, SMALL_BLOCK_ENTRIES)).fetchall()
    if len(small) <= kept:
        return
    blocks = [block for block, _, _ in small]
    block = min(blocks)
    # the dead entries of these blocks are left out of the merged lists
    dead = np.array([row[0] for row in cur.execute(
        "SELECT id FROM dead_entries WHERE repo_id = %s", (repo_id,))], np.int64)
    left_out: set[int] = set()
    for lists in (CHUNK_LISTS, SYMBOL_LISTS):
        merged: dict[str, list[list[bytes]]] = {}
        for word, *values in cur.execute(
                f"DELETE FROM {lists.table} WHERE repo_id = %s AND block = ANY(%s) "
                f"RETURNING {lists.word}, {', '.join(lists.arrays)}",
                (repo_id, blocks)).fetchall():
            merged.setdefault(word, []).append(values)
        lists.copy(cur, _merged_rows(lists, repo_id, block, merged, dead, left_out))
    if left_out:
        cur.execute("DELETE FROM dead_entries WHERE repo_id = %s AND id = ANY(%s)",
                    (repo_id, sorted(left_out)))
    cur.execute("DELETE FROM posting_blocks WHERE repo_id = %s AND block = ANY(%s)",
                (repo_id, blocks))
    entries = sum(entries for _, _, entries in small) - len(left_out)
    if entries > 0:
        cur.execute("INSERT INTO posting_blocks VALUES(%s, %s, %s, %s)",
                    (repo_id, block, max(last for _, last, _ in small), entries))


def _merged_rows(lists: WordLists, repo_id: int, block: int,
                 merged: Mapping[str, list[list[bytes]]], dead: np.ndarray,
                 left_out: set[int]) -> Iterable[tuple]:
    """The merged row of each word, without the dead entries (added to `left_out`)."""
    for word, parts in merged.items():
        columns = [np.concatenate([np.frombuffer(part[i], dtype) for part in parts])
                   for i, dtype in enumerate(lists.stored)]
        gone = np.isin(columns[0], dead)
        if gone.any():
            left_out.update(columns[0][gone].tolist())
            columns = [column[~gone] for column in columns]
            if not len(columns[0]):
                continue
        order = np.argsort(columns[0], kind="stable")
        # (concatenating gives the machine's byte order)
        yield (repo_id, word, block, *(column[order].astype(dtype).tobytes()
                                       for column, dtype in zip(columns, lists.stored)))


# -- reading ---------------------------------------------------------------------------------
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
    chunk_ids, where = np.unique(np.concatenate(all_ids), return_inverse=True)
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


def symbols_with(rows: Iterable[tuple[str, bytes]], at_least: int = 1) -> np.ndarray:
    """The ids of the symbols in rows (token, symbol_ids) of at least `at_least` of the
    tokens (a symbol holds each of its tokens once), sorted."""
    arrays = [np.frombuffer(ids, IDS).astype(np.int64) for _, ids in rows]
    if not arrays:
        return np.empty(0, np.int64)
    ids, counts = np.unique(np.concatenate(arrays), return_counts=True)
    return ids[counts >= at_least]
