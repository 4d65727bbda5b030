"""The embedded store's BM25 index of chunks: a Tantivy index in a folder beside the database.

FTS5 scores every chunk that holds any word of a question, which on a big repository takes
most of a search's time; Tantivy keeps each term's postings in blocks with their best
score and skips the blocks that cannot reach the top (block-max WAND). The database stays
the record: Tantivy holds, per chunk, its id, its document's id and its tokens weighted by
where they occur, and can always be made again from the database.

Consistency without a transaction across both: each write batch commits the database first,
marking the chunk index unsynced in the same transaction, then hands its changes to the
Tantivy writer; a commit of the writer clears the mark. A writer finding the mark set, or a
folder that does not carry the database's token (a new or discarded database, a folder
shipped with a repository), rebuilds the index from the database.
"""
from __future__ import annotations

import json
import os
import secrets
import struct
import threading
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import tantivy

from ..errors import FourfoldError, IndexWriteError, ModalityUnavailable
from .base import BM25_COLUMN_WEIGHTS
from .index_dir import CHUNK_INDEX_BESIDE, UnsafeIndexDir, check_folder, remove_entry

TOKEN_NAME = "fourfold-token"  # the database's token for this folder, written by fourfold
WRITER_HEAP_BYTES = 64 * 1024 * 1024
MAX_TOKEN_BYTES = 255  # a longer "word" (an encoded blob) is no term anyone searches for
# the files of a segment of this schema, each ending with Tantivy's footer
SEGMENT_PARTS = ("fast", "fieldnorm", "idx", "pos", "store", "term")
FOOTER_TAIL = struct.Struct("<II")  # the footer's payload length, then its magic number
FOOTER_MAGIC = 1337
FOOTER_MOST = 1 << 16  # a footer's payload is a short JSON text; a longer one is damage
CHECKSUM_BLOCK = 1 << 20

# FTS5's column weights become repetitions: a token in the path counts thrice, in the
# symbol's name five times, as the PostgreSQL store weighs the same counts.
_REPEATS = tuple(int(w) for w in BM25_COLUMN_WEIGHTS)


def weighted_text(path_tokens: str, symbol_tokens: str, body_tokens: str) -> str:
    """What Tantivy indexes of a chunk: its path's, symbol's and body's tokens (token_text),
    each repeated by its weight."""
    parts = ([path_tokens] * _REPEATS[0] + [symbol_tokens] * _REPEATS[1]
             + [body_tokens] * _REPEATS[2])
    return " ".join(p for p in parts if p)


def _analyzer() -> tantivy.TextAnalyzer:
    # Tokens arrive split and lower-cased (fourfold.tokens); only stems are made here.
    return (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace())
            .filter(tantivy.Filter.remove_long(MAX_TOKEN_BYTES))
            .filter(tantivy.Filter.stemmer("english")).build())


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("chunk", stored=False, indexed=False, fast=True)
    builder.add_integer_field("document", stored=False, indexed=True, fast=False)
    builder.add_text_field("text", stored=False, tokenizer_name="code", index_option="freq")
    return builder.build()


def _engine_failure(exc: BaseException) -> bool:
    """Tantivy's own errors: ValueErrors (a full disk, an unwritable or damaged file), and
    Rust panics, which pyo3 raises as PanicException, a BaseException (damaged postings)."""
    return isinstance(exc, ValueError) or type(exc).__name__ == "PanicException"


class ChunkIndex:
    """One folder's Tantivy index. Readers reload it when its meta file changes (another
    process may be the writer); the writer exists only while an indexing run holds the
    index folder's lock."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._schema = _schema()
        self._analyzer = _analyzer()
        self._index: tantivy.Index | None = None
        self._seen: tuple | None = None  # the meta file's stat when last loaded
        self._writer: tantivy.IndexWriter | None = None
        self._pending = False  # changes handed to the writer and not committed yet
        self._lock = threading.Lock()

    # -- reading --------------------------------------------------------------------------
    def search(self, terms: Sequence[str], limit: int,
               documents: Sequence[int] | None = None) -> list[tuple[int, float]] | None:
        """(chunk id, BM25 score) of the best `limit` chunks holding any of the terms (of
        these documents only, unless None); None where the folder holds no index (being
        made, or missing)."""
        stems = dict.fromkeys(s for t in terms for s in self._analyzer.analyze(t))
        if not stems or limit <= 0:
            return []
        searcher = self._searcher()
        if searcher is None:
            return None
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "text", s))
             for s in stems])
        if documents is not None:  # scores unchanged: the filter adds 0
            query = tantivy.Query.boolean_query([
                (tantivy.Occur.Must, query),
                (tantivy.Occur.Must, tantivy.Query.const_score_query(
                    tantivy.Query.term_set_query(self._schema, "document", list(documents)),
                    0.0))])
        try:
            hits = searcher.search(query, limit, count=False).hits
            ids = searcher.fast_field_values("chunk", [address for _, address in hits])
        except BaseException as exc:
            if not _engine_failure(exc):
                raise
            raise ModalityUnavailable(  # the other modalities still answer
                f"the text index in {self.folder} cannot be read ({exc}): it may be damaged; "
                "`fourfold index --verify` checks it and makes it again") from None
        return [(chunk_id, score) for (score, _), chunk_id in zip(hits, ids)]

    def chunk_count(self) -> int:
        """How many chunks the committed index holds (deleted ones not counted)."""
        searcher = self._searcher()
        return searcher.num_docs if searcher is not None else 0

    def carries(self, token: str) -> bool:
        """Whether the folder holds an index (its meta file) made with `token`: cheap, no
        index is opened."""
        try:
            os.stat(self.folder / "meta.json")
            return self._written_token() == token
        except OSError:
            return False

    def _written_token(self) -> str:
        """The token in the folder's token file (OSError where there is none)."""
        with open(self.folder / TOKEN_NAME, "rb", opener=_no_follow) as handle:
            return handle.read(200).decode("ascii", "replace")

    def _searcher(self) -> tantivy.Searcher | None:
        try:
            st = os.stat(self.folder / "meta.json")
        except FileNotFoundError:
            return None
        seen = (st.st_ino, st.st_mtime_ns, st.st_size)
        with self._lock:
            if self._index is None or seen != self._seen:
                # A writer in another process may remove the files of segments it merged
                # between our reading the meta file and opening them: one retry.
                for attempt in (1, 2):
                    try:
                        self._load()
                        break
                    except BaseException as exc:
                        if not _engine_failure(exc):
                            raise
                        if attempt == 2:
                            raise FourfoldError(
                                f"the text index in {self.folder} cannot be read ({exc}); "
                                "`fourfold index` makes it again") from None
                self._seen = seen
            return self._index.searcher()

    def _load(self) -> None:
        if self._index is None:
            self._index = self._prepared(tantivy.Index.open(str(self.folder)))
        else:
            self._index.reload()

    def _prepared(self, index: tantivy.Index) -> tantivy.Index:
        index.register_tokenizer("code", self._analyzer)
        index.config_reader(reload_policy="Manual")  # reloaded when the meta file changes
        return index

    # -- writing (under the index folder's lock) -----------------------------------------
    def token(self) -> str | None:
        """The token written into the folder by the last rebuild, if the folder is sound
        and its index opens."""
        try:
            self._check_folder()
            token = self._written_token()
            with self._lock:
                self._load()
            return token
        except (FileNotFoundError, NotADirectoryError, UnsafeIndexDir, ValueError):
            return None

    def _check_folder(self) -> None:
        """Ours and with nothing to write through: no symlink, no foreign owner."""
        check_folder(self.folder)
        with os.scandir(self.folder) as entries:
            for entry in entries:
                if not entry.is_file(follow_symlinks=False):
                    raise UnsafeIndexDir(f"refusing {entry.path}: it is not a plain file")

    def recreate(self) -> str:
        """Empty the folder (whatever was there) and start an index; returns its new token."""
        self.close()
        remove_entry(self.folder)
        os.mkdir(self.folder, 0o755)
        token = secrets.token_hex(16)
        index = self._prepared(tantivy.Index(self._schema, path=str(self.folder)))
        with open(self.folder / TOKEN_NAME, "x", encoding="ascii") as handle:
            handle.write(token)
        with self._lock:
            self._index, self._seen = index, None
        return token

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Tantivy's failures to write as the store's: the database keeps the record, and
        the next run that can write makes the index agree with it again."""
        try:
            yield
        except BaseException as exc:
            if not _engine_failure(exc):
                raise
            raise IndexWriteError(
                f"cannot write the text index in {self.folder} ({exc}); what was written "
                "before stays searchable; free some space (or make the folder writable) and "
                "index again") from None

    def remade_aside(self, rows: Iterable[tuple[int, int, str]]) -> str:
        """A new index of these (chunk id, document id, weighted text) rows, written in a
        folder beside this one and put in its place once complete, so that readers answer
        from the old one meanwhile (they read the new one at their next search, its meta
        file being another). Returns its token."""
        self.close()
        aside, old = (self.folder.with_name(self.folder.name + suffix)
                      for suffix in CHUNK_INDEX_BESIDE)
        made = ChunkIndex(aside)
        token = made.recreate()
        made.add(rows)
        made.commit()
        made.close()
        remove_entry(old)
        os.rename(self.folder, old)
        os.rename(aside, self.folder)
        remove_entry(old)
        with self._lock:
            self._index, self._seen = None, None
        return token

    def _the_writer(self) -> tantivy.IndexWriter:
        if self._writer is None:
            self._check_folder()
            with self._lock, self._writing():
                if self._index is None:
                    self._load()
                index = self._index
                self._writer = index.writer(WRITER_HEAP_BYTES, 1)
        return self._writer

    def delete_documents(self, document_ids: Iterable[int]) -> None:
        writer = self._the_writer()
        with self._writing():
            for document_id in document_ids:
                writer.delete_documents_by_term("document", document_id)
                self._pending = True

    def add(self, rows: Iterable[tuple[int, int, str]]) -> None:
        """(chunk id, document id, weighted text) rows."""
        writer = self._the_writer()
        with self._writing():
            for chunk_id, document_id, text in rows:
                writer.add_document(tantivy.Document(chunk=chunk_id, document=document_id,
                                                     text=text))
                self._pending = True

    def commit(self) -> None:
        """Publish what the writer holds."""
        if self._writer is not None and self._pending:
            with self._writing():
                self._writer.commit()
            self._pending = False

    def close(self) -> None:
        """Let the writer finish its merges and go (what was not committed is dropped)."""
        writer, pending = self._writer, self._pending
        self._writer, self._pending = None, False
        if writer is not None:
            if pending:
                writer.rollback()
            writer.wait_merging_threads()

    def damaged_files(self) -> list[str]:
        """The files of the index's segments (those its meta file lists) that are missing
        or fail the checksum Tantivy wrote at their end: damage it reads without complaint
        would change ranked answers unnoticed. [] where the folder holds no index."""
        try:
            with open(self.folder / "meta.json", "rb", opener=_no_follow) as handle:
                segments = [s["segment_id"].replace("-", "")
                            for s in json.loads(handle.read())["segments"]]
            names = set(os.listdir(self.folder))
        except FileNotFoundError:
            return []
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return ["meta.json"]
        damaged = []
        for segment in segments:
            parts = sorted(n for n in names if n.startswith(segment + "."))
            damaged += [f"{segment}.{part}" for part in SEGMENT_PARTS
                        if f"{segment}.{part}" not in parts]
            damaged += [name for name in parts if not _checksum_holds(self.folder / name)]
        return sorted(damaged)

    def size_bytes(self) -> int:
        try:
            return sum(e.stat(follow_symlinks=False).st_size for e in os.scandir(self.folder)
                       if e.is_file(follow_symlinks=False))
        except FileNotFoundError:
            return 0


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)


def _checksum_holds(path: Path) -> bool:
    """Whether a segment file's bytes match the CRC-32 in its footer (a JSON payload, its
    length and a magic number, each length and number 4 bytes little-endian)."""
    try:
        with open(path, "rb", opener=_no_follow) as handle:
            size = os.fstat(handle.fileno()).st_size
            if size < FOOTER_TAIL.size:
                return False
            handle.seek(size - FOOTER_TAIL.size)
            length, magic = FOOTER_TAIL.unpack(handle.read(FOOTER_TAIL.size))
            body = size - FOOTER_TAIL.size - length
            if magic != FOOTER_MAGIC or body < 0 or length > FOOTER_MOST:
                return False
            handle.seek(body)
            expected = json.loads(handle.read(length))["crc"]
            handle.seek(0)
            crc, left = 0, body
            while left:
                block = handle.read(min(left, CHECKSUM_BLOCK))
                if not block:
                    return False
                crc, left = zlib.crc32(block, crc), left - len(block)
            return crc == expected
    except (OSError, ValueError, KeyError, TypeError):
        return False
