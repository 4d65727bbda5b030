"""Indexing: discovery -> parsing (both cores) -> store, incrementally.

A re-index reads only files whose size or mtime changed (and writes only those whose
content hash changed). Each batch is one transaction, so a crash or Ctrl-C leaves every
file either at its old or its new version and the index usable; readers keep working (WAL).
"""
from __future__ import annotations

import gc
import hashlib
import multiprocessing
import os
import secrets
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, AbstractSet, Callable, Iterable, Iterator

from .collector import collector_paused
from .discovery.flags import content_flags, path_flags
from .discovery.languages import detect_language
from .discovery.read import decode, parseable, read_bytes
from .discovery.walk import DEFAULT_MAX_FILE_BYTES, UNREADABLE_FILE, FoundFile, walk, walk_paths
from .errors import FourfoldError
from .parsing import ParseTooSlow, parse_file, parser_fingerprint
from .model import Chunk
from .store.base import (EdgeColumns, FileRecord, FileStamp, Store, codes_owed_setting,
                         compress_references, encode_references, graph_behind_setting,
                         graph_resolved_by_setting, graph_version_setting, unfinished_setting)
from .tokens import chunk_body, token_texts
from .workers import quiet_worker

if TYPE_CHECKING:
    from .graph.inputs import GraphFacts
    from .semantic.embedder import Embedder
    from .graph.forked import Forked

# Files per write, and their source bytes at most (a file past it goes alone): each write
# commits, and each commit writes the text indexes' new segments, which merge later; at
# 8 files a write, commits took a fifth of the kernel's writing (docs/benchmarks.md,
# "The kernel's 24 %")
BATCH_FILES = 64
BATCH_BYTES = 1024 * 1024
SHARED_BATCH_FILES = 1000  # files per write of those whose document the store holds (a row each)
PARALLEL_BYTES = 256 * 1024  # below this much changed source, parsing in-process is faster
PENDING_BYTES = 4 * 1024 * 1024  # source of parsed files held back while more arrive
ANSWERING_EVERY_S = 5.0  # a first index is marked answerable this often as it is written
VECTOR_BATCH = 4096  # vectors the parser processes made, written at once
CHUNKS_AHEAD = 4  # chunks of files a parser worker may have parsed before they are written
# A parsed file takes many times its size in memory (symbols, chunks, tokens, vectors): the
# files parsed ahead of the writer are bounded in bytes too, and so is a chunk of them.
CHUNK_BYTES = 512 * 1024
AHEAD_BYTES = 4 * 1024 * 1024
HELD_READ_FILES = 256  # files whose document the store holds read at a time, one batch ahead
POOL_STOP_S = 5.0  # how long the parser pool may take to stop before its workers are killed
MERGE_AFTER_FILES = 1000  # files written by a run before the store merges its text indexes

Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass
class IndexSummary:
    root: str
    files: int = 0
    added: int = 0
    changed: int = 0
    deleted: int = 0
    deleted_chunks: int = 0  # of a watcher's run: the deleted files' chunks
    unchanged: int = 0
    read: int = 0
    reused: int = 0  # read, not parsed: the index held a parse of the same content
    # kept for text search only: the parser took longer than its time limit (parsed again
    # once the content changes, or with `index --rebuild`)
    unparsed: int = 0
    shared: int = 0  # written as a file only: the index held its document (another branch)
    bytes: int = 0
    seconds: float = 0.0  # the whole run, the embedding after parsing included
    embedded: int = 0
    embedded_while_parsing: int = 0  # of those, embedded by the parser processes
    embed_seconds: float = 0.0  # the embedding after parsing: missing vectors, then codes
    skipped: dict[str, int] = field(default_factory=dict)
    # a run over the paths a watcher reported: those of them it indexed; None: the whole tree
    changed_paths: list[str] | None = None
    graph_behind: bool = False  # the graph was left for later (see catch_up_graph)
    # names this run where the binary codes of the chunks it writes are owed (codes_owed_setting)
    run: int = field(default_factory=lambda: secrets.randbelow(2 ** 31 - 1) + 1)
    took_over: int = 0  # the run whose codes-owed mark this run took over (0: none)
    # the repository holding the same documents whose graph this run copied (graph.copied):
    # its binary codes are copied too where they are of the very same chunks
    twin: int | None = None
    # a verifying run: the word index's files found missing or damaged (it was made again)
    damaged: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """Every field, but those of watch runs where they do not apply."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__
               if k not in ("run", "took_over", "twin")}
        if self.changed_paths is None:
            del out["changed_paths"], out["deleted_chunks"]
        if not self.graph_behind:
            del out["graph_behind"]
        if not self.damaged:
            del out["damaged"]
        return out


def chunk_hash(path: str, symbol: str | None, body: str) -> str:
    """Cache key of a chunk's embedding: same path, symbol and text embed the same."""
    return hashlib.blake2b(f"{path}\0{symbol or ''}\0{body}".encode("utf-8", "replace"),
                           digest_size=16).hexdigest()


def read_file(found: FoundFile, references: bool = True,
              parsed_elsewhere: AbstractSet[tuple[str, str | None]] = frozenset(),
              held: AbstractSet[tuple[str, str]] = frozenset()) -> FileRecord | tuple[str, str]:
    """Read, classify and parse one file; (path, reason) when it is skipped. A file too big
    or too minified to parse in bounded memory is kept for text search only. A file whose
    (path, content hash) is `held` comes back marked, without its text: the store has its
    document (another branch). One whose (content hash, language) is in `parsed_elsewhere`
    is not parsed: it comes back marked, for its parse to be taken from the store (a copy)."""
    read = _read_unparsed(found)
    if isinstance(read, str):
        return found.path, read
    record, source = read
    language = record.language
    if (found.path, record.hash) in held:
        record.document_held, record.text = True, ""
        return record
    if not parseable(source):
        return record
    if (record.hash, language) in parsed_elsewhere:
        record.parsed_elsewhere = True
        return record
    try:
        parsed = parse_file(source, language, references)
    except RecursionError:
        return found.path, "too deeply nested to parse"
    except ParseTooSlow:
        record.unparsed = True  # for text search only, as a file too big to parse
        return record
    _fill(record, parsed.symbols, parsed.chunks,
          compress_references(encode_references(parsed.references)))
    return record


def _read_unparsed(found: FoundFile) -> tuple[FileRecord, bytes] | str:
    """A file's record before any parse, with its source bytes; why it is skipped where it
    is."""
    read = read_bytes(found)
    if isinstance(read, str):
        return read
    data, st = read
    decoded = decode(data)
    if decoded is None:
        return "binary"
    text, source = decoded
    name = found.path.rsplit("/", 1)[-1]
    language = detect_language(name, source[:256])
    flags = path_flags(found.path) | content_flags(source)
    return FileRecord(
        path=found.path, stamp=FileStamp(len(data), st.st_mtime_ns, st.st_ctime_ns, st.st_ino),
        hash=hashlib.blake2b(data, digest_size=16).hexdigest(), language=language,
        flags=flags, text=text), source


def _read_held(found: list[FoundFile], held: AbstractSet[tuple[str, str]],
               rest: list[FoundFile]) -> Iterator[FileRecord | tuple[str, str]]:
    """The records of the files whose path and content the store holds, and of those
    skipped, read here: a read and a hash cost less than a round trip to a parser process,
    which is kept for the files to parse (put in `rest`, in order). A thread reads the next
    files while the caller writes these."""
    paths = {path for path, _ in held}
    maybe = [(n, f) for n, f in enumerate(found) if f.path in paths]
    others = [(n, f) for n, f in enumerate(found) if f.path not in paths]

    def read(batch: list[tuple[int, FoundFile]]) -> list:
        """Each file's result, None for one to parse; no text is kept."""
        out: list[tuple[int, FileRecord | tuple[str, str] | None]] = []
        for n, f in batch:
            unparsed = _read_unparsed(f)
            if isinstance(unparsed, str):
                out.append((n, (f.path, unparsed)))
            elif (f.path, unparsed[0].hash) in held:
                record = unparsed[0]
                record.document_held, record.text = True, ""
                out.append((n, record))
            else:
                out.append((n, None))
        return out

    def taken(batch: list) -> Iterator[FileRecord | tuple[str, str]]:
        for n, result in batch:
            if result is None:
                others.append((n, found[n]))  # to parse: read again then
            else:
                yield result

    with ThreadPoolExecutor(1, thread_name_prefix="fourfold-read") as reader:
        ahead = None
        for start in range(0, len(maybe), HELD_READ_FILES):
            following = reader.submit(read, maybe[start:start + HELD_READ_FILES])
            if ahead is not None:
                yield from taken(ahead.result())
            ahead = following
        if ahead is not None:
            yield from taken(ahead.result())
    rest += [f for _, f in sorted(others, key=lambda item: item[0])]


def _fill(record: FileRecord, symbols: list, chunks: list[Chunk], references: bytes) -> None:
    """A record's parse, with each chunk's BM25 tokens and embedding key."""
    lines = record.text.split("\n")
    bodies = [chunk_body(lines, c.start_line, c.end_line) for c in chunks]
    record.symbols, record.chunks, record.references = symbols, chunks, references
    record.chunk_tokens = token_texts(bodies)
    record.chunk_hashes = [chunk_hash(record.path, c.symbol, b) for c, b in zip(chunks, bodies)]


def _parse_from_store(store: Store, record: FileRecord, parser: str, found: FoundFile,
                      references: bool) -> tuple[FileRecord | tuple[str, str], bool]:
    """A record marked parsed_elsewhere, with the parse the store holds of its content, and
    True; or the file parsed here, and False, if that content left the store meanwhile."""
    parse = store.parse_of(record.hash, record.language, parser)
    if parse is None:
        return read_file(found, references=references), False
    symbols, spans, references = parse
    lines = record.text.split("\n")
    _fill(record, symbols, [Chunk(start, end, chunk_body(lines, start, end), symbol, kind)
                            for start, end, symbol, kind in spans], references)
    record.parsed_elsewhere = False
    return record, True


def _on_pool(found: list[FoundFile], workers: int) -> bool:
    return workers > 1 and len(found) > 1 and sum(f.size for f in found) >= PARALLEL_BYTES


# a pool worker's, set as it starts
_worker_parsed_elsewhere: AbstractSet[tuple[str, str | None]] = frozenset()
_worker_held: AbstractSet[tuple[str, str]] = frozenset()
_worker_embedder: "Embedder | None" = None


def _start_worker(parsed_elsewhere: AbstractSet[tuple[str, str | None]],
                  held: AbstractSet[tuple[str, str]], embedder: "Embedder | None" = None) -> None:
    global _worker_parsed_elsewhere, _worker_held, _worker_embedder
    quiet_worker()
    # The parent pauses its collector for its own long-lived objects; a parser's garbage
    # has cycles, which would pile up for the whole run. What the worker inherited is
    # frozen, so collections neither scan it nor copy its pages.
    gc.freeze()
    gc.enable()
    _worker_parsed_elsewhere, _worker_held = parsed_elsewhere, held
    _worker_embedder = embedder


def _read_files(found: list[FoundFile], references: bool) -> list[FileRecord | tuple[str, str]]:
    records = [read_file(f, references=references, parsed_elsewhere=_worker_parsed_elsewhere,
                         held=_worker_held) for f in found]
    if _worker_embedder is not None:
        from .semantic.indexing import embed_records

        embed_records([r for r in records if isinstance(r, FileRecord)], _worker_embedder)
    return records


def _parse_all(found: list[FoundFile], workers: int, references: bool,
               parsed_elsewhere: AbstractSet[tuple[str, str | None]] = frozenset(),
               held: AbstractSet[tuple[str, str]] = frozenset(),
               embedder: "Embedder | None" = None
               ) -> Iterator[tuple[FileRecord | tuple[str, str], bool]]:
    """Each file's result, in order (where the files are enough for the pool, those the
    store holds as they are first, read here), and whether the next one has already
    arrived (a caller writes when nothing is waiting, or when it holds too much). On the
    pool, `embedder` embeds each parsed file's chunks there."""
    if held and _on_pool(found, workers):
        rest: list[FoundFile] = []
        for record in _read_held(found, held, rest):
            yield record, False
        found = rest
    if not _on_pool(found, workers):
        for f in found:
            yield read_file(f, references=references, parsed_elsewhere=parsed_elsewhere,
                            held=held), False
        return
    ctx = multiprocessing.get_context("fork")
    workers = min(workers, len(found))
    # Small chunks keep both workers busy to the end when a few files are huge.
    chunks = _chunks(found, max(1, min(8, len(found) // (workers * 16))), CHUNK_BYTES)
    read = partial(_read_files, references=references)
    # a forked worker inherits the sets: initargs are not pickled under fork
    pool = ctx.Pool(workers, initializer=_start_worker,
                    initargs=(parsed_elsewhere, held, embedder))
    try:
        # A few chunks a worker, and a few megabytes, are parsed ahead of the writer: when
        # writing is the slower side, results would otherwise pile up in memory.
        in_flight: deque = deque()  # (result, source bytes)
        waiting = iter(chunks)
        ahead = 0

        def top_up() -> None:
            nonlocal ahead
            while len(in_flight) < workers or (len(in_flight) < workers * CHUNKS_AHEAD
                                               and ahead < AHEAD_BYTES):
                chunk = next(waiting, None)
                if chunk is None:
                    return
                size = sum(f.size for f in chunk)
                in_flight.append((pool.apply_async(read, (chunk,)), size))
                ahead += size

        top_up()
        while in_flight:
            result, size = in_flight.popleft()
            chunk = result.get()
            ahead -= size
            top_up()
            arrived = bool(in_flight) and in_flight[0][0].ready()
            for i, record in enumerate(chunk):
                yield record, arrived or i < len(chunk) - 1
    finally:
        _stop_pool(pool)


def _chunks(found: list[FoundFile], files: int, max_bytes: int) -> list[list[FoundFile]]:
    """`found` in order, in chunks of at most `files` files and, but for a file bigger
    than that alone, `max_bytes` bytes."""
    chunks: list[list[FoundFile]] = []
    chunk: list[FoundFile] = []
    size = 0
    for f in found:
        if chunk and (len(chunk) == files or size + f.size > max_bytes):
            chunks.append(chunk)
            chunk, size = [], 0
        chunk.append(f)
        size += f.size
    if chunk:
        chunks.append(chunk)
    return chunks


def _stop_pool(pool) -> None:
    """Pool.terminate can wait for ever when the run stops while a worker is sending a
    result (a signal, an error): it waits on the queues' locks and pipes. It gets a few
    seconds in a thread of its own; then the workers are killed, which ends the wait or
    leaves it to that thread alone."""
    stopper = threading.Thread(target=pool.terminate, name="fourfold-pool-stop", daemon=True)
    stopper.start()
    stopper.join(POOL_STOP_S)
    if stopper.is_alive():
        for process in pool._pool:  # the pool's worker processes (no public accessor)
            process.kill()
        stopper.join(POOL_STOP_S)


def _batch_size(records: list[FileRecord]) -> int:
    """How many of the pending records the next write takes: up to BATCH_FILES, and files
    until their source reaches BATCH_BYTES (the one reaching it included)."""
    taken = size = 0
    while taken < min(len(records), BATCH_FILES) and size < BATCH_BYTES:
        size += records[taken].size
        taken += 1
    return taken


@contextmanager
def _registered(store: Store, root: str, name: str) -> Iterator[int]:
    """The repository's id, its row written before the run begins and committed on its
    own: a new branch of a family placed on a shard is moved there at once, and the
    partitions that takes are locked for that moment, not for the whole run."""
    yield store.ensure_repo(root, name)


def _start_resolving(store: Store, repo_id: int, facts: "GraphFacts", gone: set[str],
                     others: bool) -> "Forked | None":
    """Resolve the graph in a forked child: the files just parsed (in `facts`) and, if
    there may be `others`, what the store holds of the rest."""
    from .graph.build import start_resolving, stored_facts
    if others:
        stored_facts(store, repo_id, facts, skip=facts.files.keys() | gone)
    store.release_memory()
    return start_resolving(facts)


def catch_up_graph(store: Store, repo_id: int) -> bool:
    """Resolve, in this one process, the graph that runs with `graph_later` left behind;
    False if it was not behind. The caller holds the index lock. Answers see the new graph
    as after an index run."""
    from .graph.patch import update_graph
    with collector_paused():
        if not store.setting(graph_behind_setting(repo_id), 0):
            return False
        update_graph(store, repo_id, parallel=False)
        store.set_setting(graph_behind_setting(repo_id), 0)
        store.mark_indexed(repo_id, time.time(), store.parser_of(repo_id) or "")
    return True


def _graph_taken(store: Store, repo_id: int, summary: IndexSummary) -> bool:
    """Give the repository a graph without resolving every file: its own patched to its
    files; or, where every file written is a document the store held, the graph of a
    repository holding these very files copied (summary.twin); or, where some were, that
    of the repository most like it patched to the files that differ (another snapshot).
    False where none can be. A repository without a graph of its own (a fresh checkout)
    tries the copy first, which loads no numpy."""
    from .graph.copied import copy_graph

    def copied() -> bool:
        if 0 < summary.shared == summary.added + summary.changed:
            summary.twin = copy_graph(store, repo_id)
        return summary.twin is not None

    fresh = not store.setting(graph_version_setting(repo_id), 0)
    if fresh and copied():
        return True
    from .graph.patch import patch_graph  # numpy: loaded only when needed
    from .graph.seeded import seed_graph

    return (patch_graph(store, repo_id) or (not fresh and copied())
            or bool(summary.shared and seed_graph(store, repo_id)))


def _owe_codes(store: Store, repo_id: int, summary: IndexSummary, writes: bool) -> None:
    """Under the index lock: name this run in the codes-owed mark where it writes chunks,
    or where another run's name is there. That run stopped before its codes, or takes them
    now (after its lock) and will not clear a mark that is no longer its own: this run
    then owes its codes too, unless it took them meanwhile (codes_owed_setting)."""
    owed = store.setting(codes_owed_setting(repo_id), 0)
    if owed not in (0, summary.run):
        summary.took_over = owed
    if owed != summary.run and (writes or owed):
        store.set_setting(codes_owed_setting(repo_id), summary.run)


def index_repository(store: Store, root: str | os.PathLike, lock: AbstractContextManager,
                     name: str | None = None, skip_dirs: tuple[str, ...] = (),
                     max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
                     workers: int | None = None, progress: Progress | None = None,
                     build_graph: bool = True, verify: bool = False,
                     embedder: "Callable[[int], Embedder | None] | None" = None,
                     changed: Iterable[str] | None = None,
                     graph_later: bool = False,
                     after_files: Callable[[IndexSummary], None] | None = None) -> IndexSummary:
    """Bring the index of one repository (`name`, by default the folder's name) up to date
    with its files on disk, holding `lock` (one indexer per repository) throughout.
    `embedder`: gives a model cheap enough for the parser processes (or None), which then
    embed what they parse while this process writes; asked only where the files to read
    are enough for the pool, with the bytes of source each process is to read.

    `changed`: absolute paths a watcher saw change; only they are looked at, unless only a
    walk of the whole tree can tell what they mean (see walk_paths). `graph_later`: leave
    the graph to catch_up_graph (and the store's tidying to Store.tidy), so that the files
    answer as soon as they are written.
    `after_files`: work that needs the files but not the graph, short enough not to hold
    the graph back (a cheap model's embedding), called with the summary: on the other core
    while a forked child resolves the graph, or else once the run is over.

    `skip_dirs`: folders not to read (an index folder inside the repository);
    `build_graph=False` leaves references and the graph out (to measure what they cost);
    `verify=True` reads every file (only those whose content changed are written) and
    checks the word index's files, making it again where one is damaged."""
    root_path = Path(root).resolve()
    if not root_path.is_dir():
        raise FourfoldError(f"{root} is not a folder")
    summary = IndexSummary(root=str(root_path))
    workers = workers or os.cpu_count() or 1
    with lock, _registered(store, str(root_path), name or root_path.name) as repo_id, \
            store.indexing_run(tidy=not graph_later), collector_paused():
        started = time.perf_counter()  # the run's time, not the wait for another indexer
        if verify:
            summary.damaged = store.verify_text_index()
        # what the files were read with; without references is another reading
        parser = parser_fingerprint() if build_graph else "without references " + parser_fingerprint()
        before = store.parser_of(repo_id)
        scoped = (walk_paths(root_path, changed, max_file_bytes, skip_dirs)
                  if changed is not None and before == parser and not verify else None)
        if scoped is not None:
            report = scoped.report
            known = store.file_states(repo_id, [f.path for f in report.files] + sorted(scoped.gone))
            summary.changed_paths = [f.path for f in report.files]
        else:
            report = walk(root_path, max_file_bytes=max_file_bytes, skip_dirs=skip_dirs)
            known = store.file_states(repo_id)
        summary.skipped = dict(report.skipped)
        on_disk = {f.path for f in report.files}
        deleted = [p for p in known if p not in on_disk and not report.holds_unread(p)]
        reparse = bool(known) and before != parser
        to_read = [f for f in report.files
                   if verify or reparse or f.path not in known or known[f.path].stamp != f.stamp]
        summary.files = len(report.files)
        # A repository never indexed to the end answers from what is written so far: it is
        # marked indexed every few seconds, and says it is unfinished until this run ends.
        unfinished = scoped is None and (
            bool(store.setting(unfinished_setting(repo_id), 0))
            or not any(r.repo_id == repo_id and r.indexed_at for r in store.repos(counts=False)))
        if unfinished:
            store.set_setting(unfinished_setting(repo_id), len(report.files))
        answerable_at = time.monotonic() + ANSWERING_EVERY_S
        summary.bytes = sum(f.size for f in report.files)
        summary.unchanged = len(report.files) - len(to_read)
        summary.deleted = len(deleted)
        if scoped is not None:  # a watcher's run: what goes with the files is counted
            summary.deleted_chunks = sum(len(store.chunks_of_file(known[p].file_id))
                                         for p in deleted)
        summary.read = len(to_read)

        records: list[FileRecord] = []
        pending_bytes = 0
        touched: list[tuple[str, FileStamp]] = []
        skipped_paths: list[str] = []
        gone = set(deleted)  # no longer in the index once this run is over
        # Where the files are enough for the pool, what the graph reads of each parsed file
        # is kept: resolution (in a forked child) then reads only the other files back
        # from the store.
        graph_facts = None
        if build_graph and not graph_later and _on_pool(to_read, workers):
            from .graph.inputs import GraphFacts
            graph_facts = GraphFacts()
        done = 0

        owing = False

        def owe_codes() -> None:
            """Before the first write that changes chunks: their codes are owed until taken."""
            nonlocal owing
            if not owing:
                _owe_codes(store, repo_id, summary, writes=True)
            owing = True

        def flush() -> None:
            """Write the next batch of pending records, and the pending deletions."""
            nonlocal records, pending_bytes, touched, skipped_paths, deleted, answerable_at
            taken = _batch_size(records)
            batch, records = records[:taken], records[taken:]
            if batch or deleted or skipped_paths:
                owe_codes()
            if batch or touched or deleted or skipped_paths:
                store.write_batch(repo_id, batch, deleted + skipped_paths, touched)
            pending_bytes -= sum(r.size for r in batch)
            touched, skipped_paths, deleted = [], [], []
            if unfinished and time.monotonic() > answerable_at:
                store.mark_indexed(repo_id, time.time(), parser)
                answerable_at = time.monotonic() + ANSWERING_EVERY_S

        shared: list[FileRecord] = []  # written first, in big batches: a file row each

        def write_shared() -> None:
            nonlocal shared
            owe_codes()
            store.write_batch(repo_id, shared, [], [])
            shared = []

        # What the store holds already, for a copy or another branch (a few changed files
        # are parsed sooner than these sets are read from a big index).
        look_up = bool(to_read) and (scoped is None or _on_pool(to_read, workers))
        held = store.held_documents(repo_id, parser) if look_up else set()
        parsed_elsewhere = store.parsed_contents(parser) if look_up else set()
        found_by_path = {f.path: f for f in to_read}
        vectors: list[tuple[str, bytes, float]] = []
        parsers_embedder = (
            embedder(sum(f.size for f in to_read) // min(workers, len(to_read)))
            if embedder is not None and _on_pool(to_read, workers) else None)

        def write_vectors() -> None:
            nonlocal vectors
            store.stage_vectors(parsers_embedder.name, vectors)
            summary.embedded += len(vectors)
            summary.embedded_while_parsing += len(vectors)
            vectors = []

        for result, waiting in _parse_all(to_read, workers, build_graph, parsed_elsewhere,
                                          held, parsers_embedder):
            done += 1
            if isinstance(result, FileRecord) and result.parsed_elsewhere:
                old = known.get(result.path)
                if reparse or old is None or old.hash != result.hash:  # to be written
                    result, reused = _parse_from_store(store, result, parser,
                                                       found_by_path[result.path], build_graph)
                    summary.reused += reused
            if isinstance(result, FileRecord):  # a record read again here is one too
                result.parser = parser
            if isinstance(result, tuple):
                path, reason = result
                summary.skipped[reason] = summary.skipped.get(reason, 0) + 1
                # one that cannot be read now keeps what the index read of it before
                if reason != UNREADABLE_FILE or path not in known:
                    gone.add(path)
                    if path in known:
                        skipped_paths.append(path)  # was indexed, no longer indexable
            else:
                old = known.get(result.path)
                if old is not None and old.hash == result.hash and not reparse:
                    touched.append((result.path, result.stamp))
                    summary.unchanged += 1
                else:
                    if old is None:
                        summary.added += 1
                    else:
                        summary.changed += 1
                    summary.unparsed += result.unparsed
                    if result.document_held:
                        shared.append(result)
                        summary.shared += 1
                    else:
                        records.append(result)
                        pending_bytes += result.size
                        vectors += result.vectors
                        result.vectors = []
                        if graph_facts is not None:
                            graph_facts.add(result.path, result.language, result.symbols,
                                            result.references, result.text)
            if len(shared) >= SHARED_BATCH_FILES:
                write_shared()
            if len(vectors) >= VECTOR_BATCH:
                write_vectors()
            # Results that have already arrived are taken first, up to a bound on memory.
            if (len(records) >= BATCH_FILES or pending_bytes >= BATCH_BYTES) \
                    and (not waiting or pending_bytes >= PENDING_BYTES):
                flush()
            if progress:
                progress("parse", done, len(to_read))
        # a file that became binary or unreadable leaves the index as a deleted one does
        files_changed = bool(summary.added or summary.changed or reparse
                             or any(path in known for path in gone))
        if shared:
            write_shared()
        if vectors:
            write_vectors()
        # Everything parsed is written before the graph is worked on.
        backlog = len(records)
        while records or touched or deleted or skipped_paths:
            flush()
            if progress:
                progress("write", backlog - len(records), backlog)
        if not owing:  # another run's mark is this run's too
            _owe_codes(store, repo_id, summary, writes=False)
        merge = summary.added + summary.changed - summary.shared >= MERGE_AFTER_FILES
        if unfinished:
            store.set_setting(unfinished_setting(repo_id), 0)
        behind = build_graph and bool(store.setting(graph_behind_setting(repo_id), 0))
        resolve = build_graph and (files_changed or behind)
        if resolve and graph_later:
            store.set_setting(graph_behind_setting(repo_id), 1)
            summary.graph_behind = True
            resolve = False
        resolving = None
        if resolve:
            # The files answer while the graph is resolved (a big repository's takes
            # minutes); marked behind, it is resolved by the next run if this one stops.
            store.set_setting(graph_behind_setting(repo_id), 1)
            store.mark_indexed(repo_id, time.time(), parser)
            if _graph_taken(store, repo_id, summary):
                store.set_setting(graph_behind_setting(repo_id), 0)
                resolve = False
            elif graph_facts is not None:  # resolved in a forked child, whose memory goes
                # back to the system when it ends. The store holds files the parse did not
                # keep: a run over changed paths knows only those, others were shared or
                # are unchanged.
                others = (scoped is not None or bool(summary.shared)
                          or any(path not in graph_facts.files and path not in gone
                                 for path in known))
                resolving = _start_resolving(store, repo_id, graph_facts, gone, others)
        beside = resolving is not None and after_files is not None
        if beside:
            try:
                store.put_staged_vectors()
                # merged on the other core while the child resolves, and before the
                # embedding, which a user may interrupt
                if merge:
                    store.merge_text_indexes()
                after_files(summary)
            except BaseException:
                resolving.close(wait=False)
                raise
            from .graph.build import release_freed_memory
            store.release_memory()  # given back before the child's graph is at its largest
            release_freed_memory()
        elif merge:
            store.merge_text_indexes()
        if resolve:
            from .graph.build import rebuild_graph, store_graph  # numpy: when needed
            graph = resolving.result() if resolving is not None else None
            if graph is not None:
                store_graph(store, repo_id, graph)
            else:  # parsed here, or the child died
                rebuild_graph(store, repo_id, parallel=workers > 1)
            store.set_setting(graph_behind_setting(repo_id), 0)
        elif files_changed and not build_graph:
            # files were written without references: no edge may point into them
            store.set_setting(graph_resolved_by_setting(repo_id), 0)
            store.replace_graph(repo_id, EdgeColumns(), {}, {})
        store.mark_indexed(repo_id, time.time(), parser)
    if after_files is not None and not beside:  # as answers see the run's files
        after_files(summary)
    summary.seconds = time.perf_counter() - started
    return summary
