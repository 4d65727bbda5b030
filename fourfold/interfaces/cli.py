"""Command line: index, watch, search, grep, files, def, outline, similar, map, refs,
callees, importers, impact, status, token, remove, shard.

Human output by default, --json for machines. Exit code 0: results; 1: none; 2: error.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import time
from pathlib import Path

from ..api import (COORDINATOR, GRANULARITIES, GREP_TIME_BUDGET, INDEX_DIR_NAME, MODALITIES,
                   MOST_FILE_BYTES, PRESETS, PROFILES, RANKINGS, Fourfold, SearchOptions,
                   find_index_root, holds_index, parse_weights)
from .. import __version__
from ..errors import FourfoldError

EXIT_RESULTS, EXIT_EMPTY, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 128 + signal.SIGINT  # as a shell reports a command Ctrl-C stopped
MAX_WORKERS = 256  # parser processes: past this, a typo (`--workers 1000`) forks a crowd
# Control characters a repository's names and lines may hold (a newline forging another
# result line, a terminal's escape sequences), shown as escapes; a tab stays a tab.
SHOWN_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7f, *range(0x80, 0xa0)]
                  if c != 0x09}
# line and paragraph separators: a reader that splits lines as Python does would see a new
# line (a file name holding one could forge a result line)
SHOWN_CONTROLS.update({0x2028: "\\u2028", 0x2029: "\\u2029"})
_CONTROLS = re.compile("[" + "".join(re.escape(chr(c)) for c in SHOWN_CONTROLS) + "]")


def _shown(text: str) -> str:
    """The text with its control characters escaped; translated only where it holds one
    (translate looks up every character: most of a big grep's printing)."""
    return text.translate(SHOWN_CONTROLS) if _CONTROLS.search(text) else text


def _say(*parts, **kw) -> None:
    """print() for what a person reads: each part with its control characters escaped."""
    print(*(_shown(str(part)) for part in parts), **kw)


def bounded_int(low: int, high: int | None = None):
    """An argparse type: a whole number from `low` to `high` (None: no upper bound)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            bounds = f"of at least {low:,}" if high is None else f"from {low:,} to {high:,}"
            raise argparse.ArgumentTypeError(f"must be a whole number {bounds}, not {text!r}")
        return value
    return parse


limit_arg = bounded_int(1)  # --limit: each command checks its own upper bound


def seconds_arg(text: str) -> float:
    """A number of seconds: finite, at least 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds of at least 0, "
                                         f"not {text!r}")
    return value


class ProgressBar:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self.last = 0.0

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled or total < 50:
            return
        now = time.monotonic()
        if done != total and now - self.last < 0.1:
            return
        self.last = now
        width = 30
        filled = int(width * done / max(total, 1))
        sys.stderr.write(f"\r{phase:<8} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done == total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _open(args, root: str | Path | None = None) -> Fourfold:
    ff = Fourfold(root or args.path, index_dir=args.index_dir,
                  max_file_bytes=getattr(args, "max_file_bytes", None),
                  embedder=getattr(args, "embedder", "default"),
                  rebuild=getattr(args, "rebuild", False), store_url=args.store,
                  repository=_one_repository(args))
    for note in ff.notes:
        print(f"fourfold: {note}", file=sys.stderr)
    return ff


ALL_REPOSITORIES = "*"


def _one_repository(args) -> str | None:
    """The one repository a command serves; several (or *) only `search` asks at once."""
    names = args.repository or []
    if len(names) == 1 and names[0] != ALL_REPOSITORIES:
        return names[0]
    if names and args.func is not cmd_search:
        raise FourfoldError(f"`fourfold {args.command}` answers from one repository; name "
                            "one --repository (only search asks several at once)")
    return None


def _several_repositories(args) -> list[str] | None:
    """The repositories a search asks when it asks more than one: their names, or None
    for every repository (--repository '*'); False-y when it asks one."""
    names = args.repository or []
    if ALL_REPOSITORIES in names:
        return []
    return names if len(names) > 1 else None


def _root_of(file: str) -> Path:
    """The indexed folder a file belongs to: the nearest one above it with an index; a
    file under none is an error (indexing the current folder instead could index a home
    folder)."""
    root = find_index_root(Path(file).resolve().parent)
    if root is None:
        raise FourfoldError(f"{file} is under no indexed folder: index its folder first, or "
                            "give the folder as PATH")
    return root


def _ensure(ff: Fourfold, args) -> None:
    summary = ff.ensure_indexed(ProgressBar(not args.json))
    if summary and not args.json:
        print(f"indexed {summary.files} files in {summary.seconds:.2f}s", file=sys.stderr)
    note = ff.first_index_note() if args.func is not cmd_search else None  # search says so
    if note:
        print(f"fourfold: {note}", file=sys.stderr)


def _emit(args, payload, human) -> int:
    """Print JSON or human text; the exit code says whether anything was found."""
    if args.json:
        print(json.dumps(payload, ensure_ascii=False, indent=None))
    else:
        human()
    return EXIT_RESULTS if payload.get("total", len(payload.get("results", []))) else EXIT_EMPTY


def _human_size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def cmd_index(args) -> int:
    ff = _open(args)
    summary = ff.index(ProgressBar(not args.json), workers=args.workers,
                       embed=not args.no_embed, wait_s=args.wait, verify=args.verify)
    payload = summary.to_dict()
    payload["total"] = summary.files
    if args.deep:
        started = time.perf_counter()
        payload["deep_embedded"] = ff.deepen(ProgressBar(not args.json), wait_s=args.wait)
        deep_seconds = time.perf_counter() - started

    def human() -> None:
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(summary.skipped.items()))
        _say(f"{summary.files} files ({_human_size(summary.bytes)}), {summary.read} read, in "
              f"{summary.seconds:.2f}s: {summary.added} added, {summary.changed} changed, "
              f"{summary.deleted} deleted, {summary.unchanged} unchanged"
              + (f"; {summary.shared} files shared with a branch already indexed"
                 if summary.shared else "")
              + (f"; {summary.reused} parses taken from the same content already indexed"
                 if summary.reused else "")
              + (f"; {summary.unparsed} kept for text search only (the parser gave up "
                 "at its time limit)" if summary.unparsed else "")
              + (f"; skipped {skipped}" if skipped else ""))
        if summary.damaged:
            _say(f"the word index's files {', '.join(summary.damaged)} were missing or "
                 "damaged: it was made again from the database")
        if summary.embedded_while_parsing:
            _say(f"embedded {summary.embedded} chunks ({summary.embedded_while_parsing} while "
                  f"parsing, then {summary.embed_seconds:.2f}s)")
        elif summary.embedded:
            _say(f"embedded {summary.embedded} chunks in {summary.embed_seconds:.2f}s")
        if args.deep:
            _say(f"deep pass: embedded {payload['deep_embedded']} chunks with "
                  f"{ff.deep_embedder_name} in {deep_seconds:.2f}s")
        _say(f"index: {ff.location}" + (f" (repository {ff.repository_name})"
                                          if ff.store_url else ""))
    _emit(args, payload, human)
    return EXIT_RESULTS


def cmd_watch(args) -> int:
    ff = _open(args)
    runs = 0

    def report(summary) -> None:
        nonlocal runs
        runs += 1
        if args.json:
            print(json.dumps(summary.to_dict()), flush=True)
        elif runs == 1 or summary.added or summary.changed or summary.deleted:
            embedded = f", embedded {summary.embedded} chunks" if summary.embedded else ""
            among = ("changed paths" if summary.changed_paths is not None
                     else f"{summary.files} files")
            later = "; the graph catches up next" if summary.graph_behind else ""
            _say(f"{time.strftime('%H:%M:%S')}  {summary.added} added, {summary.changed} "
                  f"changed, {summary.deleted} deleted of {among} in "
                  f"{summary.seconds:.2f}s{embedded}{later}", flush=True)

    if not args.json:
        print(f"watching {ff.root} (index {ff.location}); Ctrl-C stops", file=sys.stderr)
    ff.watch(report, embed=not args.no_embed, debounce_ms=args.debounce_ms, deep=args.deep)
    return EXIT_RESULTS


def _print_hit(hit) -> None:
    symbol = f"  {hit.symbol}" if hit.symbol else ""
    where = f"{hit.repository}:{hit.path}" if hit.repository else hit.path
    _say(f"{where}:{hit.start_line}-{hit.end_line}{symbol}  ({hit.score:.4f})")
    for line_no, text in hit.lines[:3]:
        _say(f"    {line_no:>5}: {text[:200]}")


def cmd_search(args) -> int:
    if args.batch:
        if args.query and args.path == ".":
            args.path = args.query  # `search --batch FILE PATH`: the one positional is PATH
        if _several_repositories(args) is not None:
            raise FourfoldError("--batch asks one repository: name at most one --repository")
        return _batch(_open(args), args)
    ff = _open(args)
    several = _several_repositories(args)
    if several is None:
        _ensure(ff, args)
        response = ff.search(args.query, _search_options(args))
    else:
        response = ff.search_repositories(args.query, several or None, _search_options(args))
    payload = response.to_dict()

    def human() -> None:
        _say(f"# intent {response.intent} ({response.confidence:.2f}, {response.rule}); "
              f"{response.fusion_strategy} over {', '.join(response.modalities) or 'nothing'}"
              + (f"; unavailable: {', '.join(response.unavailable)}" if response.unavailable
                 else ""))
        if response.repositories_searched:
            _say(f"# searched {', '.join(response.repositories_searched)}"
                  + (f"; skipped {', '.join(response.repositories_skipped)}"
                     if response.repositories_skipped else ""))
        for name, why in response.repositories_unavailable.items():
            _say(f"# not searched: {name} ({why})")
        if args.explain:
            _print_explanation(response)
        for hit in response.hits:
            _print_hit(hit)
            if args.explain:
                _print_hit_explanation(hit)
        if not response.hits:
            _say("no results")
    return _emit(args, payload, human)


def _print_explanation(response) -> None:
    """Why the answer looks as it does: the routing, the weights and what each step cost."""
    target = f"; target {response.target!r}" if response.target else ""
    k = f"; k {response.rrf_k:g}" if response.rrf_k is not None else ""
    weights = ", ".join(f"{m} {w:g}" for m, w in response.weights.items())
    model = (f"; semantic model {response.semantic_model}" if response.semantic_model
             else "")
    _say(f"# weights {weights or '-'}{k}{target}{model}")
    for modality, why in response.unavailable.items():
        _say(f"# {modality} did not answer: {why}")
    timings = ", ".join(f"{m} {ms:.1f} ms" for m, ms in response.timings_ms.items())
    _say(f"# timings {timings}")


def _print_hit_explanation(hit) -> None:
    votes = ", ".join(f"{m} #{hit.ranks[m]} +{share:.4f}" if m in hit.ranks
                      else f"{m} +{share:.4f}" for m, share in hit.contributions.items())
    parts = [votes or "no votes"]
    if hit.factors:
        parts.append(", ".join(f"{name} ×{f:.2f}" for name, f in hit.factors.items()))
    if hit.file_support:
        parts.append(f"file support +{hit.file_support:.4f}")
    if hit.definition_support:
        parts.append(f"definition support +{hit.definition_support:.4f}")
    if hit.named:
        parts.append("named in the question: placed after the first answers")
    if hit.uses_mentioned:
        parts.append(f"uses {hit.uses_mentioned} names the text mentions: placed after the "
                     "first answers")
    if hit.learned:
        moved = ", ".join(f"{name} {v:+.2f}" for name, v in hit.learned.items()
                          if name != "score")
        parts.append(f"learned {hit.learned['score']:+.2f} ({moved})")
    _say(f"    = {' · '.join(parts)}")


def _search_options(args) -> SearchOptions:
    return SearchOptions(
        preset=args.preset, modalities=tuple(args.modality) if args.modality else None,
        weights=parse_weights(args.weights) if args.weights else None, intent=args.intent,
        rrf_k=args.rrf_k, profile=args.profile, limit=args.limit, granularity=args.granularity,
        ranking=args.ranking,
        direct=not args.no_direct, boost=not args.no_boost, path_glob=args.glob,
        languages=tuple(args.language or ()), kinds=tuple(args.kind or ()),
        exclude_tests=args.no_tests)


def _batch(ff: Fourfold, args) -> int:
    """One JSON line per query, paths relative to the indexed folder; index and models once."""
    _ensure(ff, args)
    options = _search_options(args)
    try:
        # bytes: a line that is no UTF-8 is answered as an error, not the end of the batch
        source = sys.stdin.buffer if args.batch == "-" else open(args.batch, "rb")
    except OSError as exc:
        raise FourfoldError(f"cannot read the batch file {args.batch}: "
                            f"{exc.strerror or exc}") from None
    answered = 0
    with source:
        for number, raw in enumerate(source, 1):
            line = raw.decode("utf-8", "surrogateescape")
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError:
                item = None
            if not isinstance(item, dict) or not isinstance(item.get("query"), str):
                # a bad line is answered as one, and the rest of the batch goes on
                print(json.dumps({"id": item.get("id") if isinstance(item, dict) else None,
                                  "error": f"line {number} is not a JSON object with a "
                                           "\"query\" string", "results": []}), flush=True)
                continue
            try:
                response = ff.search(item["query"], options)
                out = {"id": item.get("id"), "intent": response.intent,
                       "fusion_strategy": response.fusion_strategy,
                       "modalities": response.modalities,
                       "latency_ms": round(response.timings_ms.get("total", 0.0), 3),
                       "results": [{"path": h.path, "start_line": h.start_line,
                                    "end_line": h.end_line, "score": round(h.score, 6),
                                    "symbol": h.symbol} for h in response.hits]}
                answered += bool(response.hits)
            except FourfoldError as exc:
                out = {"id": item.get("id"), "error": str(exc), "results": []}
            print(json.dumps(out), flush=True)  # ASCII: an id may hold a lone surrogate
    return EXIT_RESULTS if answered else EXIT_EMPTY


GREP_PRINTED_AT_ONCE = 4096  # lines written in one call (print() a line was a third of it)


def cmd_grep(args) -> int:
    ff = _open(args)
    _ensure(ff, args)
    # one more than the limit: whether more lines match than are shown
    found = ff.grep(args.pattern, regex=args.regex, case_sensitive=not args.ignore_case,
                    whole_word=args.word, path_glob=args.glob,
                    limit=args.limit and args.limit + 1, time_budget=args.time_budget)
    more = args.limit is not None and len(found) > args.limit
    matches = found[:args.limit]
    # rows (a dict a line) only where they are shown: a common pattern has 100,000s of lines
    rows = ff.with_context(matches, args.context) if args.json or args.context else []
    payload = {"total": len(matches), "total_is_lower_bound": more, "partial": found.partial,
               "results": rows}

    def human() -> None:
        if not args.context:
            for start in range(0, len(matches), GREP_PRINTED_AT_ONCE):
                lines = [f"{_shown(m.path)}:{m.line}:{_shown(m.text)}\n"
                         for m in matches[start:start + GREP_PRINTED_AT_ONCE]]
                try:
                    sys.stdout.write("".join(lines))
                except UnicodeEncodeError:  # an output that cannot carry a character:
                    for line in lines:      # the lines before it are printed, as print did
                        sys.stdout.write(line)
            return
        matched = {(m.path, m.line) for m in matches}
        last: tuple[str, int] | None = None  # the last line printed, as grep -C prints
        for row in rows:
            for c in [*row["before"], {"line": row["line"], "text": row["text"]},
                      *row["after"]]:
                if last and last[0] == row["path"] and c["line"] <= last[1]:
                    continue
                if last and (last[0] != row["path"] or c["line"] > last[1] + 1):
                    _say("--")
                mark = ":" if (row["path"], c["line"]) in matched else "-"
                _say(f"{row['path']}{mark}{c['line']}{mark}{c['text']}")
                last = (row["path"], c["line"])
    code = _emit(args, payload, human)
    if more:
        print(f"fourfold: the first {args.limit} matching lines; more match (raise --limit)",
              file=sys.stderr)
    if found.partial:
        print(f"fourfold: partial: the scan stopped after {args.time_budget:g} s with files "
              "left unread; narrow the pattern or --glob, or raise --time-budget",
              file=sys.stderr)
    return code


def cmd_files(args) -> int:
    ff = _open(args)
    _ensure(ff, args)
    found = ff.list_files(args.glob, args.name, args.language or (), ff.repo_id())
    payload = {"total": len(found), "results": found}

    def human() -> None:
        for f in found:
            _say(f"{f['path']}  {f['language'] or '-'}  {_human_size(f['size'])}")
    return _emit(args, payload, human)


def cmd_status(args) -> int:
    index_dir = Path(args.index_dir or Path(args.path) / INDEX_DIR_NAME)
    if args.store is None and Path(args.path).is_dir() and not holds_index(index_dir):
        # opening it would make an index, and call its empty modalities ready
        return _emit(args, {"index_dir": str(index_dir.resolve()), "index_bytes": 0,
                            "repositories": [], "modalities": {}, "total": 0},
                     lambda: _say(f"no index at {index_dir.resolve()}: run `fourfold index "
                                  f"{args.path}`"))
    ff = _open(args)
    status = ff.status()
    status["total"] = len(status["repositories"])

    def human() -> None:
        _say(f"index {status['index_dir']} ({_human_size(status['index_bytes'])})"
              + (f"; a read replica, {status['replica_behind_s']:.1f} s behind its primary"
                 if "replica_behind_s" in status else ""))
        if not status["repositories"]:
            _say("nothing indexed yet: run `fourfold index PATH`")
        for r in status["repositories"]:
            when = (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["indexed_at"]))
                    if r["indexed_at"] else "never (interrupted)")
            langs = ", ".join(f"{k} {v}" for k, v in list(r["languages"].items())[:8])
            where = f" on shard {r['shard']}" if r.get("shard") else ""
            if r.get("removing"):
                _say(f"{r['name']} ({r['root']}, id {r['id']}){where}: being taken out of the "
                      f"index (a `fourfold remove` was interrupted): run `fourfold remove "
                      f"{r['name']}` again, with this index's --index-dir or --store")
                continue
            if r.get("unreachable"):
                _say(f"{r['name']} ({r['root']}, id {r['id']}){where}: {r['unreachable']}; "
                      f"indexed {when}")
                continue
            _say(f"{r['name']} ({r['root']}, id {r['id']}){where}: {r['files']} files, "
                  f"{_human_size(r['bytes'])}, {r['symbols']} symbols, {r['chunks']} chunks; "
                  f"indexed {when}")
            _say(f"  languages: {langs}")
        for name, state in status.get("modalities", {}).items():
            _say(f"{name}: {state}")
    return _emit(args, status, human)


def cmd_token(args) -> int:
    """`fourfold token create|list|revoke`: the access tokens of a shared server."""
    granted, args.repository = args.repository, None  # here: the repositories granted
    if args.action == "list" and args.name and args.path == ".":
        args.path = args.name  # `token list PATH`: the one positional is PATH
    ff = _open(args)
    if args.action == "create":
        if not args.name:
            raise FourfoldError("give the new token a NAME")
        secret = ff.create_token(args.name, args.scope, granted)
        payload = {"name": args.name, "scope": args.scope, "repositories": granted,
                   "token": secret, "total": 1}

        def human() -> None:
            _say(secret)
            print(f"fourfold: token {args.name!r} ({args.scope}, "
                  f"{', '.join(granted) if granted else 'every repository'}); it is shown "
                  "only now: keep it in a secret store", file=sys.stderr)
    elif args.action == "revoke":
        if not args.name:
            raise FourfoldError("give the NAME of the token to revoke")
        ff.revoke_token(args.name)
        payload = {"name": args.name, "revoked": True, "total": 1}

        def human() -> None:
            _say(f"revoked {args.name}")
    else:
        tokens = ff.tokens()
        payload = {"total": len(tokens), "results": tokens}

        def human() -> None:
            for t in tokens:
                state = (f"revoked {time.strftime('%Y-%m-%d %H:%M', time.localtime(t['revoked_at']))}"
                         if t["revoked_at"] else "active")
                _say(f"{t['name']}  {t['scope']}  "
                      f"{', '.join(t['repositories']) if t['repositories'] else 'all'}  {state}")
    _emit(args, payload, human)
    return EXIT_RESULTS


def cmd_remove(args) -> int:
    """`fourfold remove REPOSITORY...`: take repositories out of a shared index."""
    if args.store:  # with --index-dir too: refused, as by every command
        ff = Fourfold(None, store_url=args.store, index_dir=args.index_dir)
    elif args.index_dir:
        if not holds_index(args.index_dir):
            raise FourfoldError(f"{args.index_dir} holds no index")
        ff = Fourfold(args.path, index_dir=args.index_dir)
    else:
        if not Path(args.path).is_dir():
            raise FourfoldError(f"{args.path}: no such folder")
        root = find_index_root(Path(args.path).resolve())
        if root is None:
            raise FourfoldError(f"no index at or above {args.path}; name one with "
                                "--index-dir or --store")
        ff = Fourfold(root)
    removed = ff.remove_repositories(args.names, wait_s=args.wait, dry_run=args.dry_run)
    payload = {"total": len(removed), "results": removed, "dry_run": args.dry_run}

    def human() -> None:
        for r in removed:
            _say(f"{'would remove' if args.dry_run else 'removed'} {r['name']} ({r['root']}, "
                  f"id {r['id']}): {r['files']} files, {_human_size(r['bytes'])}")
            if r["granted_to"]:
                _say(f"  its name stays granted to the tokens {', '.join(r['granted_to'])} "
                      "(a repository indexed under it again is theirs to see; `fourfold "
                      "token revoke NAME` refuses a token)")
    _emit(args, payload, human)
    return EXIT_RESULTS


def cmd_shard(args) -> int:
    """`fourfold shard add|place|list`: the PostgreSQL servers a server store spreads its
    repositories over."""
    if not args.store:
        raise FourfoldError("shards belong to a PostgreSQL store: give --store URL (or set "
                            "FOURFOLD_STORE)")
    ff = Fourfold(None, store_url=args.store)
    if args.action in ("add", "place") and not (args.first and args.second):
        raise FourfoldError("fourfold shard add NAME URL, or fourfold shard place "
                            f"REPOSITORY SHARD (or {COORDINATOR})")
    if args.action == "add":
        ff.add_shard(args.first, args.second)
        payload = {"name": args.first, "added": True, "total": 1}

        def human() -> None:
            _say(f"added shard {args.first}; place repositories on it with "
                  f"`fourfold shard place REPOSITORY {args.first}`")
    elif args.action == "place":
        moved = ff.place_repository(args.first, args.second)
        payload = {"repository": args.first, "shard": args.second, "rows_moved": moved,
                   "total": 1}

        def human() -> None:
            _say(f"{args.first} is on {args.second} ({moved} rows moved)")
    else:
        shards = ff.shards()
        payload = {"total": len(shards), "results": shards}

        def human() -> None:
            if not shards:
                _say("no shards: every repository is on the store's own server")
            for shard in shards:
                state = (f"does not answer: {shard['unreachable']}" if shard["unreachable"]
                         else "answers")
                _say(f"{shard['name']}  {shard['location']}  {state}  "
                      f"{', '.join(shard['repositories']) or '(no repositories)'}")
    _emit(args, payload, human)
    return EXIT_RESULTS


def cmd_def(args) -> int:
    ff = _open(args)
    _ensure(ff, args)
    if args.name is None:
        if not args.kind:
            raise FourfoldError("give a NAME, or --kind to list every definition of a kind")
        found = ff.symbols(args.kind, path_glob=args.glob, repo_id=ff.repo_id())[:args.limit]
    else:
        found = ff.definitions(args.name, kind=args.kind, limit=args.limit, path_glob=args.glob)
    payload = {"total": len(found), "results": found}

    def human() -> None:
        for d in found:
            _say(f"{d['path']}:{d['start_line']}-{d['end_line']}  {d['kind']} {d['qualname']}")
            if d["signature"]:
                _say(f"    {d['signature'][:200]}")
    return _emit(args, payload, human)


def cmd_outline(args) -> int:
    ff = _open(args, args.path or _root_of(args.file))
    _ensure(ff, args)
    tree = ff.outline(args.file)
    payload = {"total": len(tree), "file": args.file, "results": tree}

    def human() -> None:
        def show(nodes, depth):
            for n in nodes:
                _say(f"{'  ' * depth}{n['kind']} {n['name']}  "
                      f"[{n['start_line']}-{n['end_line']}]")
                show(n["children"], depth + 1)
        show(tree, 0)
    return _emit(args, payload, human)


def cmd_map(args) -> int:
    ff = _open(args)
    _ensure(ff, args)
    repo_map = ff.map(limit=args.limit, repo_id=ff.repo_id())
    payload = {"total": len(repo_map["files"]) + len(repo_map["symbols"]), **repo_map}

    def human() -> None:
        _say("# most central files (PageRank, 1.0 = average)")
        for f in repo_map["files"]:
            _say(f"{f['rank']:8.2f}  {f['path']}")
        _say("# most central symbols")
        for s in repo_map["symbols"]:
            _say(f"{s['rank']:8.2f}  {s['path']}:{s['start_line']}  {s['kind']} {s['symbol']}")
    return _emit(args, payload, human)


def cmd_similar(args) -> int:
    location = args.location
    ff = _open(args, args.path or _root_of(location.rpartition(":")[0] or location))
    _ensure(ff, args)
    hits = ff.similar(location, limit=args.limit)
    payload = {"total": len(hits), "results": [h.to_dict() for h in hits]}

    def human() -> None:
        for hit in hits:
            _print_hit(hit)
    return _emit(args, payload, human)


def _graph_command(args) -> int:
    ff = _open(args)
    _ensure(ff, args)
    result = getattr(ff, args.graph_query)(**{k: getattr(args, k) for k in args.graph_args})
    payload = result

    def human() -> None:
        for note in result.get("notes", []):
            _say(f"# {note}")
        for r in result["results"]:
            where = f"{r['path']}:{r.get('line') or r.get('start_line')}"
            extra = f"  (distance {r['distance']})" if "distance" in r else ""
            _say(f"{where}  {r.get('symbol') or ''}{extra}")
        offset = getattr(args, "offset", 0) or 0
        if offset + len(result["results"]) < result.get("total", 0):
            _say(f"# {len(result['results'])} of {result['total']} shown; next page: "
                  f"--offset {offset + len(result['results'])}")
        elif not result["results"] and result.get("total", 0):
            _say(f"# none past --offset {offset}: there are {result['total']}")
    return _emit(args, payload, human)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fourfold", description="Local-first code search: one question, four retrievers.")
    parser.add_argument("--version", action="version", version=f"fourfold {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    parser.set_defaults(commands=sub.choices)
    from .mcp.server import add_subcommands  # `fourfold mcp` (stdio) and `fourfold serve` (HTTP)

    add_subcommands(sub)

    def where(p: argparse.ArgumentParser) -> None:
        """Which index, and which repository in it."""
        p.add_argument("--index-dir", help="where the index lives (default PATH/.fourfold)")
        p.add_argument("--store", default=os.environ.get("FOURFOLD_STORE") or None,
                       metavar="URL",
                       help="a shared index on a PostgreSQL server, postgresql://USER@HOST:PORT/DB "
                            "(default: $FOURFOLD_STORE, else the embedded index beside PATH)")
        p.add_argument("--repository", metavar="NAME", action="append",
                       help="the repository's name in the index (default: PATH's folder name), "
                            "e.g. acme/api@main; search takes several, or '*' for all")

    def common(p: argparse.ArgumentParser, path: bool = True) -> None:
        if path:
            p.add_argument("path", nargs="?", default=".", help="folder to index/search")
        where(p)
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("--embedder", default="default",
                       help="embedding model: static (default, fast), minilm (transformer), "
                            "voyage[:MODEL] or openai[:MODEL] (remote, opt-in)")

    p = sub.add_parser("index", help="index a folder (incremental)")
    common(p)
    p.add_argument("--no-embed", action="store_true",
                   help="skip the semantic phase (text, structure and graph only)")
    p.add_argument("--max-file-bytes", type=bounded_int(1, MOST_FILE_BYTES),
                   help="skip files larger than this (remembered for later runs; default 2 MiB)")
    p.add_argument("--workers", type=bounded_int(1, MAX_WORKERS),
                   help="parser processes (default: all cores)")
    p.add_argument("--verify", action="store_true",
                   help="read every file again, even those whose size and times are "
                   "unchanged, and check the word index's checksums (made again if damaged)")
    p.add_argument("--rebuild", action="store_true",
                   help="discard the index database (a damaged one too) and index from scratch")
    p.add_argument("--wait", type=seconds_arg, default=0.0, metavar="SECONDS",
                   help="while another indexer updates this index, wait up to this long "
                        "for it instead of stopping at once")
    p.add_argument("--deep", action="store_true",
                   help="then the deep pass: embed the chunks with the transformer (minilm; "
                        "about 50 chunks/s on two cores), which then answers semantic "
                        "questions (servers and watchers keep it going in the background)")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("watch", help="index, then re-index whenever files change (Ctrl-C stops)")
    common(p)
    p.add_argument("--no-embed", action="store_true",
                   help="skip the semantic phase (text, structure and graph only)")
    p.add_argument("--debounce-ms", type=bounded_int(0, 60_000), default=400,
                   help="changes within this window are indexed together")
    p.add_argument("--deep", action="store_true",
                   help="run the deep pass while nothing changes (it runs anyway where one "
                        "has run before)")
    p.set_defaults(func=cmd_watch)

    p = sub.add_parser("search", help="ask anything; fourfold routes and fuses")
    p.add_argument("query", nargs="?", default="")
    common(p)
    p.add_argument("--limit", type=limit_arg, default=10)
    p.add_argument("--preset", choices=sorted(PRESETS), default="default")
    p.add_argument("--modality", action="append", choices=MODALITIES,
                   help="run only these modalities (repeatable)")
    p.add_argument("--weights", help="explicit weights, e.g. semantic=0.5,text=0.3")
    p.add_argument("--intent", help="force an intent")
    p.add_argument("--rrf-k", type=float, help="the k of reciprocal rank fusion")
    p.add_argument("--profile", choices=sorted(PROFILES), default="tuned",
                   help="weight profile: tuned (default, chosen on development data) or seed "
                        "(hand-set)")
    p.add_argument("--granularity", choices=GRANULARITIES,
                   help="what one hit is: the best span of a file, every span, or every "
                        "function or method (several per file); default by intent: every "
                        "call site for who-calls and impact questions, one per file otherwise")
    p.add_argument("--ranking", choices=RANKINGS, default="learned",
                   help="learned (default): a pasted issue or traceback is re-ranked by the "
                        "learned model; fused: fusion and priors only")
    p.add_argument("--no-direct", action="store_true", help="always fuse")
    p.add_argument("--no-boost", action="store_true", help="no centrality boost")
    p.add_argument("--glob", help="only paths matching this glob")
    p.add_argument("--language", action="append",
                   help="only files in this language (repeatable): python, typescript, go ...")
    p.add_argument("--kind", action="append",
                   help="only code in definitions of this kind (repeatable): class, function, "
                        "method ...")
    p.add_argument("--no-tests", action="store_true", help="leave test files out")
    p.add_argument("--explain", action="store_true",
                   help="also print the weights, timings, and for each hit the rank and share "
                        "of every modality that voted for it and the priors applied")
    p.add_argument("--batch", help="JSONL file of {id, query} ('-' for stdin); one JSON line out "
                                   "per query")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("grep", help="exact text search, one line per hit")
    p.add_argument("pattern")
    common(p)
    p.add_argument("--regex", "-e", action="store_true", help="pattern is an RE2 regex")
    p.add_argument("-i", "--ignore-case", action="store_true", default=None)
    p.add_argument("--case-sensitive", "-s", dest="ignore_case", action="store_false")
    p.add_argument("-w", "--word", action="store_true", help="whole words only")
    p.add_argument("--glob", help="only paths matching this glob")
    p.add_argument("--limit", type=limit_arg)
    p.add_argument("-C", "--context", type=int, default=0, metavar="N",
                   help="also print N lines (0-10) before and after each match")
    p.add_argument("--time-budget", type=seconds_arg, default=GREP_TIME_BUDGET,
                   metavar="SECONDS",
                   help="stop scanning files after this long and print the lines found, "
                        f"marked partial (default {GREP_TIME_BUDGET:g})")
    p.set_defaults(func=cmd_grep)

    p = sub.add_parser("files", help="the indexed files, or those whose name contains --name")
    common(p)
    p.add_argument("--glob", help="only paths matching this glob")
    p.add_argument("--name", help="only files whose name contains this (any case)")
    p.add_argument("--language", action="append",
                   help="only files in this language (repeatable): python, typescript, go ...")
    p.set_defaults(func=cmd_files)

    p = sub.add_parser("status", help="what is indexed, when, how big")
    common(p)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("token", help="create, list or revoke the access tokens of a server",
                       description="Access tokens for `fourfold serve`: each grants read (or "
                                   "write) on the --repository names given (default: all).")
    p.add_argument("action", choices=("create", "list", "revoke"))
    p.add_argument("name", nargs="?", help="the token's name (create, revoke)")
    p.add_argument("path", nargs="?", default=".", help="indexed folder (embedded index)")
    where(p)
    p.add_argument("--scope", choices=("read", "write"), default="read")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_token)

    p = sub.add_parser("remove", help="take repositories out of a shared index",
                       description="Take each REPOSITORY (a name, root or id, as `status` "
                                   "shows them) out of the index with everything only it "
                                   "holds. On a --store server, branches of a repository "
                                   "go before it (name them together).")
    p.add_argument("names", nargs="+", metavar="REPOSITORY")
    p.add_argument("--path", default=".",
                   help="a folder whose index to use (default: the nearest indexed folder "
                        "at or above the current one)")
    p.add_argument("--index-dir", help="the embedded index to remove them from")
    p.add_argument("--store", default=os.environ.get("FOURFOLD_STORE") or None, metavar="URL",
                   help="the PostgreSQL store to remove them from (default: $FOURFOLD_STORE)")
    p.add_argument("--wait", type=seconds_arg, default=0.0, metavar="SECONDS",
                   help="while an indexer updates one of them, wait up to this long for it")
    p.add_argument("--dry-run", action="store_true",
                   help="check and say what would be removed; remove nothing")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_remove)

    p = sub.add_parser("shard", help="spread a PostgreSQL store over several servers",
                       description="Shards of a PostgreSQL store (--store): `add NAME URL` "
                                   "adds an empty database as a shard; `place REPOSITORY "
                                   f"SHARD` moves a repository there ({COORDINATOR}: back to "
                                   "the store's own server); `list` shows each shard, where "
                                   "it is, what it holds and whether it answers.")
    p.add_argument("action", choices=("add", "place", "list"))
    p.add_argument("first", nargs="?", metavar="NAME|REPOSITORY")
    p.add_argument("second", nargs="?", metavar="URL|SHARD")
    p.add_argument("--store", default=os.environ.get("FOURFOLD_STORE") or None, metavar="URL",
                   help="the PostgreSQL store (default: $FOURFOLD_STORE)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_shard)

    p = sub.add_parser("def", help="where is NAME defined (no NAME: every --kind definition)")
    p.add_argument("name", nargs="?", default=None,
                   help="the symbol; leave it (and PATH) out with --kind to list every "
                        "definition of that kind")
    common(p)
    p.add_argument("--kind", help="function, class, method, struct, interface ...")
    p.add_argument("--glob", help="only paths matching this glob")
    p.add_argument("--limit", type=limit_arg, default=20)
    p.set_defaults(func=cmd_def)

    p = sub.add_parser("outline", help="the symbols of one file, nested")
    p.add_argument("file")
    p.add_argument("path", nargs="?", default=None,
                   help="indexed folder (default: the nearest indexed folder above FILE)")
    where(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_outline)

    p = sub.add_parser("map", help="the most central files and symbols of the repository")
    common(p)
    p.add_argument("--limit", type=limit_arg, default=20)
    p.set_defaults(func=cmd_map)

    p = sub.add_parser("similar", help="code similar to the chunk at FILE:LINE")
    p.add_argument("location", metavar="FILE:LINE")
    p.add_argument("path", nargs="?", default=None,
                   help="indexed folder (default: the nearest indexed folder above FILE)")
    where(p)
    p.add_argument("--json", action="store_true")
    p.add_argument("--embedder", default="default")
    p.add_argument("--limit", type=limit_arg, default=10)
    p.set_defaults(func=cmd_similar)

    graph_verbs = {
        "refs": ("references", "callers and other references of NAME"),
        "callees": ("callees", "what NAME calls"),
        "importers": ("importers", "files importing FILE_OR_MODULE"),
        "impact": ("impact", "transitive dependents of NAME (blast radius)"),
    }
    for verb, (method, help_text) in graph_verbs.items():
        p = sub.add_parser(verb, help=help_text)
        p.add_argument("name")
        common(p)
        p.add_argument("--limit", type=limit_arg, default=50)
        p.add_argument("--offset", type=int, default=0)
        graph_args = ["name", "limit", "offset"]
        if verb == "impact":
            p.add_argument("--depth", type=int, default=3)
            graph_args.append("depth")
        p.set_defaults(func=_graph_command, graph_query=method, graph_args=graph_args)
    return parser


def parse_arguments(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Options and positionals in any order (`search QUERY --explain PATH`): argparse alone
    binds optional positionals at their first chance, so the command's own parser reads its
    arguments intermixed."""
    commands = parser.get_default("commands")
    for i, token in enumerate(argv):
        if token in commands:
            rest = argv[i + 1:]
            # after `--` everything is positional (`grep -- --verbose`), which Python
            # 3.11's intermixed parsing mishandles
            parse = (commands[token].parse_args if "--" in rest
                     else commands[token].parse_intermixed_args)
            args = parse(rest)
            args.command = token
            return args
        if not token.startswith("-"):
            break
    return parser.parse_args(argv)


class Terminated(BaseException):
    """SIGTERM: stop like Ctrl-C does, through every `finally`, with one line, no traceback."""


def _terminated(signum, frame) -> None:
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(build_parser(), sys.argv[1:] if argv is None else list(argv))
    if getattr(args, "command", None) == "grep" and args.ignore_case is None:
        args.ignore_case = True  # literal search is case-insensitive unless asked otherwise
    signal.signal(signal.SIGTERM, _terminated)
    try:
        return args.func(args)
    except Terminated:
        print("fourfold: terminated; the index keeps its last complete batch", file=sys.stderr)
        return 128 + signal.SIGTERM
    except FourfoldError as exc:
        # a message may quote a path that is not UTF-8: its odd bytes are shown escaped
        message = f"fourfold: {exc}".encode("utf-8", "backslashreplace").decode("utf-8")
        print(message, file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("fourfold: interrupted; the index keeps its last complete batch", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_RESULTS
    except Exception as exc:  # a defect: one line, the traceback where asked for
        if os.environ.get("FOURFOLD_DEBUG"):
            raise
        print(f"fourfold: internal error ({type(exc).__name__}: {exc}); run again with "
              "FOURFOLD_DEBUG=1 for the traceback, and report it", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
