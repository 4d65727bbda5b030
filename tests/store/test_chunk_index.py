"""The embedded store's BM25 index (a Tantivy folder beside the database): kept in step
with the database across processes, runs that stop midway and indexes of several
repositories."""
from __future__ import annotations

import os

import pytest

from fourfold.errors import FourfoldError
from fourfold.store.sqlite import SQLiteStore
from tests.store.records import alpha_record, corpus_records, python_record


@pytest.fixture
def db(tmp_path):
    return tmp_path / "index.sqlite"


def _paths(store: SQLiteStore, terms: list[str], limit: int = 10, repo_id=None) -> list[str]:
    return [chunk.path for chunk, _ in store.bm25_chunks(terms, limit, repo_id)]


def test_a_run_stopped_between_the_database_and_the_chunk_index_is_rebuilt(db):
    store = SQLiteStore(db)
    repo = store.ensure_repo("/src/proj", "proj")
    run = store.indexing_run()
    run.__enter__()
    store.write_batch(repo, corpus_records(), [], [])  # committed to the database only
    store._chunk_index.close()  # the process dies: what the writer held is lost
    store.close()

    reopened = SQLiteStore(db)
    assert reopened._query("SELECT value FROM meta WHERE key='chunk_index'") == [("",)]
    assert _paths(reopened, ["parse", "config"]) == []  # not searchable yet
    with reopened.indexing_run():  # the next run finds the mark and rebuilds
        pass
    found = _paths(reopened, ["parse", "config"])
    assert found and found[0].startswith("config/")
    assert reopened._query("SELECT value FROM meta WHERE key='chunk_index'") == \
        [(reopened._chunk_index.token(),)]
    reopened.close()


def test_a_reader_sees_what_another_process_committed(db):
    reader, writer = SQLiteStore(db), SQLiteStore(db)  # two connections, two Tantivy handles
    assert _paths(reader, ["alpha"]) == []
    repo = writer.ensure_repo("/src/proj", "proj")
    with writer.indexing_run():
        writer.write_batch(repo, [alpha_record()], [], [])
        assert _paths(reader, ["alpha"]) == []  # not committed while the run goes on
    assert _paths(reader, ["alpha"]) == ["pkg/a.py"]
    with writer.indexing_run():
        writer.write_batch(repo, [], ["pkg/a.py"], [])
    assert _paths(reader, ["alpha"]) == []
    reader.close()
    writer.close()


def test_a_repository_is_answered_from_its_own_chunks_when_others_rank_higher(db):
    store = SQLiteStore(db)
    busy, quiet = store.ensure_repo("/src/busy", "busy"), store.ensure_repo("/src/quiet", "quiet")
    strong = "def widget_{i}():\n    return widget_frame(widget_size, widget_{i})\n"
    store.write_batch(busy, [python_record(f"w{i}.py", strong.format(i=i)) for i in range(60)],
                      [], [])
    store.write_batch(quiet, [python_record("q.py", "def other():\n    return widget\n")],
                      [], [])
    assert "q.py" not in _paths(store, ["widget"], 5)  # across both: the busy ones first
    assert _paths(store, ["widget"], 5, quiet) == ["q.py"]
    assert len(_paths(store, ["widget"], 5, busy)) == 5
    store.close()


def test_a_schema_change_starts_the_chunk_index_anew(db):
    store = SQLiteStore(db)
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [alpha_record()], [], [])
    token = store._chunk_index.token()
    store._conn().execute("UPDATE meta SET value='1' WHERE key='schema_version'")
    store.close()
    rebuilt = SQLiteStore(db)  # an older layout: dropped, to be indexed again
    with rebuilt.indexing_run():
        pass
    assert rebuilt._chunk_index.token() not in (None, token)
    assert _paths(rebuilt, ["alpha"]) == []
    rebuilt.close()


def test_a_chunk_index_that_does_not_open_is_reported_then_made_again(db):
    store = SQLiteStore(db)
    repo = store.ensure_repo("/src/proj", "proj")
    store.write_batch(repo, [alpha_record()], [], [])
    store.close()
    folder = db.parent / "chunk-index"
    (folder / "meta.json").write_text("{not json")
    reader = SQLiteStore(db)
    with pytest.raises(FourfoldError, match=r"text index in .* cannot be read .*"
                                            r"`fourfold index` makes it again"):
        reader.bm25_chunks(["alpha"], 5)
    with reader.indexing_run():
        pass
    assert _paths(reader, ["alpha"]) == ["pkg/a.py"]
    reader.close()


def test_a_write_the_engine_refuses_is_an_index_write_error_and_the_next_run_repairs(
        db, monkeypatch):
    """Tantivy's failures to write (a full disk, an unwritable folder: ValueErrors) are
    the store's IndexWriteError, saying what stays; the next run makes the index agree with
    the database again."""
    import tantivy

    from fourfold.errors import IndexWriteError

    store = SQLiteStore(db)
    repo = store.ensure_repo("/src/proj", "proj")

    def full(self):
        raise ValueError("Internal error: 'No space left on device (os error 28)'")

    monkeypatch.setattr(tantivy.IndexWriter, "commit", full)
    with pytest.raises(IndexWriteError, match="No space left.*stays searchable"):
        with store.indexing_run():
            store.write_batch(repo, corpus_records(), [], [])
    monkeypatch.undo()
    store.close()
    reopened = SQLiteStore(db)
    with reopened.indexing_run():
        pass
    found = _paths(reopened, ["parse", "config"])
    assert found and found[0].startswith("config/")
    reopened.close()


def test_a_panic_of_the_engine_reading_damaged_postings_is_the_text_modality_unavailable(
        db, monkeypatch):
    """A damaged posting list can make Tantivy panic, which pyo3 raises as a BaseException
    (PanicException): the text modality says it cannot answer, and why, while the others
    go on; an interrupt is still an interrupt."""
    import tantivy

    from fourfold.errors import ModalityUnavailable

    class PanicException(BaseException):  # pyo3's, as it reaches Python
        pass

    store = SQLiteStore(db)
    repo = store.ensure_repo("/src/proj", "proj")
    with store.indexing_run():
        store.write_batch(repo, corpus_records(), [], [])
    assert _paths(store, ["parse", "config"])

    def panics(*args, **kwargs):
        raise PanicException("index out of bounds: the len is 80 but the index is 80")

    monkeypatch.setattr(tantivy.Searcher, "search", panics)
    with pytest.raises(ModalityUnavailable, match="out of bounds.*--verify"):
        _paths(store, ["parse", "config"])

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(tantivy.Searcher, "search", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _paths(store, ["parse", "config"])
    store.close()


def test_after_many_chunks_are_deleted_bm25_scores_are_those_of_a_fresh_index(make_tree,
                                                                              tmp_path):
    """Tantivy counts deleted chunks in its BM25 statistics until a merge drops them: once
    the chunks deleted since the index was made pass a share of those it holds, it is made
    again, and the scores equal a fresh index's; below that share it is kept."""
    from fourfold import Fourfold
    from fourfold.store import sqlite

    files = {f"pkg/m{i}.py": f"def add_item_{i}(buffer):\n    return buffer_init({i})\n"
             f"\n\ndef other_{i}(x):\n    return x * {i}\n" for i in range(20)}
    files["pkg/__init__.py"] = "from .m0 import add_item_0\n\n\ndef buffer_init(n):\n    return n\n"
    root = make_tree(files)
    ff = Fourfold(root, index_dir=tmp_path / "incremental")
    ff.index(embed=False)
    token = ff.store._chunk_index.token()
    (root / "pkg/m0.py").write_text(files["pkg/m0.py"].replace("add_item", "put_item"))
    ff.index(embed=False)  # a few deleted: kept
    assert ff.store._chunk_index.token() == token
    for i in range(1, 9):
        (root / f"pkg/m{i}.py").write_text(files[f"pkg/m{i}.py"].replace("add_item", "put_item"))
    reader = Fourfold(root, index_dir=tmp_path / "incremental")  # as another process
    seen_while_made = []
    rows = ff.store._chunk_rows

    def rows_read_meanwhile():
        for number, row in enumerate(rows()):
            if number == 5:  # the new index is half made: readers use the old one
                seen_while_made.append(len(reader.store.bm25_chunks(["other"], 100)))
            yield row

    ff.store._chunk_rows = rows_read_meanwhile
    outside = tmp_path / "outside"  # links planted where the new index is made, and the old kept
    outside.mkdir()
    (outside / "keep.txt").write_text("kept")
    for suffix in (".next", ".old"):
        (tmp_path / "incremental" / f"chunk-index{suffix}").symlink_to(outside)
    ff.index(embed=False)
    assert [p.name for p in outside.iterdir()] == ["keep.txt"]
    assert seen_while_made == [20]
    assert ff.store._chunk_index.token() != token  # made again
    assert len(reader.store.bm25_chunks(["other"], 100)) == 20  # the new one, read anew
    assert not any(p.name.startswith("chunk-index.") for p in (tmp_path / "incremental").iterdir())
    reader.close()
    assert int(ff.store._meta(sqlite.CHUNK_INDEX_DELETED) or 0) == 0
    fresh = Fourfold(root, index_dir=tmp_path / "fresh")
    fresh.index(embed=False)
    for terms in (["buffer", "init"], ["put", "item"], ["add", "item"], ["other"]):
        ours = sorted((c.path, c.start_line, round(s, 6))
                      for c, s in ff.store.bm25_chunks(terms, 100))
        theirs = sorted((c.path, c.start_line, round(s, 6))
                        for c, s in fresh.store.bm25_chunks(terms, 100))
        assert ours and ours == theirs, terms  # every chunk holding them (ties by chunk id)
    ff.close()
    fresh.close()


def test_a_word_index_left_behind_by_a_stopped_run_is_said_and_mended_by_the_next_question(
        make_tree, tmp_path):
    """A run stopped between a batch's database commit and the word index's leaves the
    database's mark ''; with no indexer at work that is a fault, which the text answers
    name and the next question's ensure_indexed mends. While the word index is being made
    again (its folder holds no index yet), ranked text answers say they are unavailable,
    rather than that nothing matches."""
    import shutil

    from fourfold import Fourfold
    from fourfold.errors import ModalityUnavailable

    root = make_tree({"config.py": "def parse_config(path):\n    return load(path)\n"})
    ff = Fourfold(root, index_dir=tmp_path / "index")
    ff.index(embed=False)
    assert ff.store.text_index_fault() is None
    ff.store._put_meta("chunk_index", "")  # as a run that stopped between the two commits
    ff.close()
    ff = Fourfold(root, index_dir=tmp_path / "index")  # the next process
    assert "missed the last writes" in ff.store.text_index_fault()
    assert "missed the last writes" in ff.first_index_note()
    assert ff.ensure_indexed() is not None
    assert ff.store.text_index_fault() is None
    assert [h.path for h in ff.search("parse config", modalities=("text",)).hits] == \
        ["config.py"]
    ff.close()

    shutil.rmtree(tmp_path / "index" / "chunk-index")  # as while it is made again
    reader = Fourfold(root, index_dir=tmp_path / "index")
    with pytest.raises(ModalityUnavailable, match="word index .* being made again"):
        reader.store.bm25_chunks(["parse", "config"], 5)
    response = reader.search("parse config", modalities=("text",))
    assert "being made again" in response.unavailable["text"]
    reader.close()


def test_several_repositories_are_searched_while_the_word_index_is_missing(make_tree,
                                                                         tmp_path):
    """Choosing which repositories to search asks the word index for evidence: while it is
    missing (being made again) the choice goes by nothing, as for a question of no words,
    and the search answers from the other modalities."""
    import shutil

    from fourfold import Fourfold

    index = {"index_dir": tmp_path / "index"}
    first_root = make_tree({"config.py": "def parse_config(path):\n    return path\n"},
                           "first")
    first = Fourfold(first_root, **index)
    first.index(embed=False)
    second = Fourfold(make_tree({"other.py": "def parse_other(x):\n    return x\n"},
                                "second"), **index)
    second.index(embed=False)
    second.close()
    first.close()
    shutil.rmtree(tmp_path / "index" / "chunk-index")
    reader = Fourfold(first_root, **index)
    response = reader.search_repositories("parse_config", None)
    assert [h.path for h in response.hits][:1] == ["config.py"]
    reader.close()


def test_index_verify_finds_damaged_or_missing_word_index_files_and_makes_it_again(
        make_tree, tmp_path):
    """Tantivy reads a flipped byte of a segment without complaint (answers change
    unnoticed): `index --verify` checks each file of its segments against the checksum
    written at its end, and makes the word index again where one is damaged or missing."""
    import os
    import subprocess
    import sys

    from fourfold import Fourfold

    files = {f"pkg/m{i}.py": f"def add_item_{i}(buffer):\n    return buffer_init({i})\n"
             for i in range(12)}
    root = make_tree(files)
    ff = Fourfold(root, index_dir=tmp_path / "index")
    ff.index(embed=False)
    (root / "pkg/m0.py").write_text(files["pkg/m0.py"].replace("add_item", "put_item"))
    ff.index(embed=False)  # a segment with deleted chunks, and its deletions' file
    folder = tmp_path / "index" / "chunk-index"
    assert any(name.endswith(".del") for name in os.listdir(folder))
    fresh = Fourfold(root, index_dir=tmp_path / "fresh")
    fresh.index(embed=False)
    # as a fresh index answers (the old one still counts the deleted chunks in its scores)
    before = sorted((c.path, round(s, 6)) for c, s in fresh.store.bm25_chunks(["item"], 100))
    fresh.close()
    assert ff.index(embed=False, verify=True).damaged == []  # sound: kept
    token = ff.store._chunk_index.token()
    assert token is not None

    largest = max((n for n in os.listdir(folder) if n.endswith(".idx")),
                  key=lambda n: os.path.getsize(folder / n))
    data = bytearray((folder / largest).read_bytes())
    data[len(data) // 3] ^= 0x20
    (folder / largest).write_bytes(bytes(data))
    summary = ff.index(embed=False, verify=True)
    assert summary.damaged == [largest] and summary.to_dict()["damaged"] == [largest]
    assert ff.store._chunk_index.token() not in (None, token)
    assert ff.store._chunk_index.damaged_files() == []
    assert sorted((c.path, round(s, 6)) for c, s in ff.store.bm25_chunks(["item"], 100)) == before

    # a missing part the engine opens without (others fail to open, and are made again)
    positions = next(n for n in os.listdir(folder) if n.endswith(".pos"))
    os.remove(folder / positions)
    ff.close()
    run = subprocess.run([sys.executable, "-m", "fourfold.interfaces.cli", "index", str(root),
                          "--index-dir", str(tmp_path / "index"), "--verify", "--no-embed"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert f"the word index's files {positions} were missing or damaged" in run.stdout
    again = Fourfold(root, index_dir=tmp_path / "index")
    assert again.store._chunk_index.damaged_files() == []
    assert sorted((c.path, round(s, 6)) for c, s in again.store.bm25_chunks(["item"], 100)) \
        == before
    assert "damaged" not in again.index(embed=False).to_dict()
    again.close()


def test_a_watchers_run_leaves_the_word_index_made_again_to_the_catch_up(make_tree, tmp_path):
    """Making the word index again after many deletions takes minutes on a big repository:
    a watcher's run (graph_later) leaves it to the catch-up that follows, so the saved
    edit answers at once; the catch-up makes it, and its scores are a fresh index's."""
    from fourfold import Fourfold

    files = {f"pkg/m{i}.py": f"def add_item_{i}(buffer):\n    return buffer_init({i})\n"
             f"\n\ndef other_{i}(x):\n    return x * {i}\n" for i in range(20)}
    root = make_tree(files)
    ff = Fourfold(root, index_dir=tmp_path / "index")
    ff.index(embed=False)
    token = ff.store._chunk_index.token()
    for i in range(10):
        (root / f"pkg/m{i}.py").write_text(files[f"pkg/m{i}.py"].replace("add_item", "put_item"))
        ff.index(changed=[str(root / f"pkg/m{i}.py")], graph_later=True, embed=False)
        assert [m.path for m in ff.grep(f"put_item_{i}(")] == [f"pkg/m{i}.py"]
    assert ff.store._chunk_index.token() == token  # past the share, and kept meanwhile
    assert ff.behind()["graph"]
    assert ff.catch_up()
    assert ff.store._chunk_index.token() not in (None, token)
    fresh = Fourfold(root, index_dir=tmp_path / "fresh")
    fresh.index(embed=False)
    for terms in (["put", "item"], ["add", "item"], ["other"]):
        assert sorted((c.path, round(s, 6)) for c, s in ff.store.bm25_chunks(terms, 100)) == \
            sorted((c.path, round(s, 6)) for c, s in fresh.store.bm25_chunks(terms, 100))
    fresh.close()
    ff.close()


def test_a_word_index_made_again_by_the_catch_up_child_is_the_watchers_too(make_tree,
                                                                           tmp_path):
    """The catch-up makes the word index again in a child process: the watcher's process,
    which kept the old index's token, took the new one for the old at its next edit and
    wrote the old token back, so the word index was 'not this database's' from then on."""
    from fourfold import Fourfold

    files = {f"m{i}.py": f"def handler_{i}(x):\n    return x + {i}\n" for i in range(100)}
    root = make_tree(files)
    ff = Fourfold(root, index_dir=tmp_path / "index")
    ff.index(embed=False)
    token = ff.store._chunk_index.token()
    gone = [str(root / f"m{i}.py") for i in range(40)]
    for path in gone:
        os.remove(path)
    ff.index(changed=gone, graph_later=True, embed=False)
    assert ff.catch_up()
    made = ff.store._meta("chunk_index")
    assert made not in (None, "", token)  # made again, by the catch-up
    (root / "m50.py").write_text("def handler_50(x):\n    return widget_total(x)\n")
    ff.index(changed=[str(root / "m50.py")], graph_later=True, embed=False)
    assert ff.store.text_index_fault() is None
    assert ff.store._meta("chunk_index") == ff.store._chunk_index.token() == made
    assert [c.path for c, _ in ff.store.bm25_chunks(["widget", "total"], 5)] == ["m50.py"]
    other = Fourfold(root, index_dir=tmp_path / "index")
    assert other.store.text_index_fault() is None
    other.close()
    ff.close()


def test_a_segment_file_checks_against_the_footer_tantivy_wrote(tmp_path):
    """Body, then a JSON footer with the body's CRC-32, its length and the magic number:
    a flipped byte anywhere, a footer claiming gigabytes, a cut file or no footer fail."""
    import json
    import struct
    import zlib

    from fourfold.store.chunk_index import _checksum_holds

    body = bytes(range(256)) * 40
    footer = json.dumps({"version": {"major": 0}, "crc": zlib.crc32(body)}).encode()
    good = body + footer + struct.pack("<II", len(footer), 1337)
    cases = {"good": good, "flipped": good[:100] + b"\x00" + good[101:],
             "huge footer": body + footer + struct.pack("<II", 0xFFFFFFF0, 1337),
             "cut": good[:-3], "no footer": body, "empty": b""}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
    assert {name: _checksum_holds(tmp_path / name) for name in cases} == {
        "good": True, "flipped": False, "huge footer": False, "cut": False,
        "no footer": False, "empty": False}


def test_verify_reads_no_link_planted_for_a_segment_file_nor_an_odd_name(make_tree, tmp_path):
    """A segment file swapped for a link to a file outside (a copy of the real one, so
    its checksum would hold if read through) counts as damaged and is not followed; a file
    whose name is not UTF-8 beside the segments is not taken for one of them."""
    import shutil

    from fourfold import Fourfold

    root = make_tree({f"m{i}.py": f"def handler_{i}(x):\n    return x + {i}\n"
                      for i in range(12)})
    ff = Fourfold(root, index_dir=tmp_path / "index")
    ff.index(embed=False)
    folder = tmp_path / "index" / "chunk-index"
    os.close(os.open(os.fsencode(folder) + b"/\xff\xfe.idx", os.O_CREAT | os.O_WRONLY))
    assert ff.store._chunk_index.damaged_files() == []
    store_file = next(n for n in os.listdir(folder) if n.endswith(".store"))
    outside = tmp_path / "outside.store"
    shutil.copy(folder / store_file, outside)
    kept = outside.read_bytes()
    os.remove(folder / store_file)
    (folder / store_file).symlink_to(outside)
    assert ff.store._chunk_index.damaged_files() == [store_file]
    assert ff.index(embed=False, verify=True).damaged == [store_file]
    assert outside.read_bytes() == kept and not (folder / store_file).is_symlink()
    assert ff.store._chunk_index.damaged_files() == []
    ff.close()
