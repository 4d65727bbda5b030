"""Structural modality: definitions from the tree-sitter symbol table, found by name.

Ranking: exact name > qualified match > prefix > sub-word; first-party before
vendor/generated, source before tests (unless the query asks for tests); then the file named
after the symbol; then kind.
"""
from __future__ import annotations

import re
from functools import lru_cache

from ..model import FUNCTION_KINDS, REEXPORT, Hit
from ..query.filters import kinds_named
from ..store.base import Store, StoredFile, StoredSymbol, unfinished_note
from ..store.snapshot import Snapshots
from ..tokens import identifier_tokens, normalise_name, query_words, singular, sub_words
from ..query.model import Query
from .base import path_ok

# Types and modules answer a bare name more often than a variable of the same name.
KIND_PRIORITY = {"class": 0, "struct": 0, "interface": 0, "trait": 0, "enum": 0, "type": 1,
                 "module": 1, "namespace": 1, "function": 1, "method": 2, "impl": 2,
                 "macro": 2, "constant": 3, "variable": 4, "field": 5}
_SPLIT = re.compile(r"\.|::|#|->|/")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_SPELLED = 3
# Bounds on the names a sentence's words are looked up in: every pair of at most 12 words
# (66 pairs; a longer text is a pasted one), then names holding any one word.
MAX_PAIRED_WORDS = 12
PAIRED_NAMES = 5000
ONE_WORD_NAMES = 1000
# A name a pasted text mentions points somewhere only when few definitions share it
# ("get", "save" are defined everywhere).
MAX_DEFINITIONS_OF_MENTION = 3



def named_after(symbol: StoredSymbol) -> bool:
    """The file is named after the symbol (conn.ex for Plug.Conn, Engine.java for Engine):
    among equal definitions (partial classes, re-declarations) that file is the home one."""
    name = symbol.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]  # Foo.Json.cs is not Foo's home
    return normalise_name(name) == normalise_name(_SPLIT.split(symbol.name)[-1])


def match_tier(symbol: StoredSymbol, target: str) -> int | None:
    """0 exact, 1 qualified, 2 case-insensitive / style-insensitive, 3 prefix, 4 sub-word."""
    last = _SPLIT.split(target)[-1]
    qualified = last != target
    if qualified:
        wanted = _SPLIT.split(target.lower())
        have = _SPLIT.split(symbol.qualname.lower())
        if have[-len(wanted):] == wanted:
            return 0
        if symbol.name.lower() != last.lower():
            return None
        return 1 if symbol.qualname.lower().endswith(last.lower()) else None
    # A module keeps its dotted name whole (defmodule Plug.Conn, namespace App.Models); its
    # last segment is what people call it.
    name = _SPLIT.split(symbol.name)[-1]
    if name == target:
        return 0
    if name.lower() == target.lower():
        return 1
    if normalise_name(name) == normalise_name(target):
        return 2
    if symbol.name.lower().startswith(target.lower()):
        return 3
    wanted = set(identifier_tokens(target))
    have = set(identifier_tokens(symbol.name))
    if wanted and wanted <= have:
        return 4
    return None


def match_label(target: str, tier: int) -> str:
    """What a match tier means for this target: a bare name's tier 1 is a case-insensitive
    match, a qualified name's (Session.close) a match of its last part only."""
    if _SPLIT.split(target)[-1] != target:
        return ("exact", "qualified", "case", "prefix", "subword")[tier]
    return ("exact", "case", "style", "prefix", "subword")[tier]


@lru_cache(maxsize=200_000)
def _name_words(name: str) -> frozenset[str]:
    """The words of a symbol's name, singular: parseConfigFiles -> {parse, config, file}."""
    return frozenset(singular(w) for w in sub_words(name))


def _tier_at_most(symbol: StoredSymbol, target: str, tier: int) -> bool:
    found = match_tier(symbol, target)
    return found is not None and found <= tier


class StructuralRetriever:
    modality = "structural"

    def __init__(self, store: Store, snapshots: Snapshots):
        self.store = store
        self.snapshots = snapshots

    def ready(self) -> bool:
        return True

    def incomplete(self) -> str | None:
        return unfinished_note(self.store, self.snapshots.scope())

    def definitions(self, name: str, kind: str | None = None, repo_id: int | None = None,
                    path_glob: str | None = None, limit: int = 50,
                    exact_only_if_found: bool = True
                    ) -> list[tuple[StoredSymbol, int]]:
        """Definitions matching a name, best first, with their match tier."""
        last = _SPLIT.split(name)[-1]
        candidates = {s.symbol_id: s for s in self.store.symbols_named([name, last], repo_id)}
        allowed = kinds_named([kind]) if kind and kind != "import" else None

        def eligible(s: StoredSymbol) -> bool:
            return (not allowed or s.kind in allowed) and path_ok(s.path, path_glob)
        exact = exact_only_if_found and any(
            eligible(s) and _tier_at_most(s, name, 1) for s in candidates.values())
        if len(candidates) < limit:
            tokens = list(identifier_tokens(last)) or [last.lower()]
            # Once the name itself is defined only its style variants can still rank, so
            # ask for names with all of its words, not every name sharing one of them.
            more = (self.store.symbols_with_words(tokens[:-1] or tokens, normalise_name(last),
                                                  repo_id)
                    if exact else self.store.symbols_by_token(tokens + [last.lower()], repo_id))
            for s in more:
                candidates.setdefault(s.symbol_id, s)
        scored = []
        for s in candidates.values():
            if not eligible(s):
                continue
            tier = match_tier(s, name)
            if tier is None:
                continue
            scored.append((s, tier))
        if exact_only_if_found and any(tier <= 1 for _, tier in scored):
            # An exact or qualified definition exists: prefix and sub-word matches are noise.
            scored = [st for st in scored if st[1] <= 2]
        scored.sort(key=lambda st: (
            st[1], st[0].kind == REEXPORT, not named_after(st[0]),
            KIND_PRIORITY.get(st[0].kind, 3), st[0].qualname.count("."), len(st[0].path),
            st[0].path, st[0].start_line))
        return scored[:limit]

    def named_by(self, text: str, repo_id: int | None, path_glob: str | None, limit: int) -> list[tuple[StoredSymbol, float]]:
        """Definitions whose name the sentence spells out, word by word: "database dialect
        interface" -> DatabaseDialect. Full coverage of a longer name ranks first."""
        wanted = query_words(text)
        # Names holding two or more of the words are the few that rank first, and are found
        # whatever their number; a name holding one is read up to a bound (a big repository
        # holds a common word in tens of thousands of names, and their order is arbitrary).
        found = (self.store.symbols_with_two_words(wanted, repo_id, limit=PAIRED_NAMES)
                 if 2 <= len(wanted) <= MAX_PAIRED_WORDS else [])
        seen = {s.symbol_id for s in found}
        found += [s for s in self.store.symbols_by_token(wanted, repo_id, limit=ONE_WORD_NAMES)
                  if s.symbol_id not in seen]
        scored = []
        for s in found:
            if s.kind == REEXPORT or not path_ok(s.path, path_glob):
                continue  # a sentence describes what code does: re-exports do nothing
            words = _name_words(s.name)
            matched = len(words & wanted)
            if not matched:
                continue
            full = matched == len(words)
            score = matched * (1.0 if full else 0.5 * matched / len(words))
            scored.append((s, score))
        # a compound identifier written out in a question ("how extractors implement
        # FromRequest") names its definition, re-exports included, above any word match;
        # a long text naming many (an issue with its traceback) singles none of them out
        spelled = {w for w in _IDENTIFIER.findall(text) if len(identifier_tokens(w)) > 1}
        if 0 < len(spelled) <= MAX_SPELLED:
            named = [sym for sym in self.store.symbols_named(spelled, repo_id)
                     if sym.name in spelled and path_ok(sym.path, path_glob)]
            best = max((score for _, score in scored), default=0.0) + 1.0
            named_set = {sym.name for sym in named}
            scored = [st for st in scored if st[0].name not in named_set] + [
                (sym, best) for sym in named]
        scored.sort(key=lambda st: (-st[1], st[0].kind == REEXPORT, KIND_PRIORITY.get(st[0].kind, 3),
                                    st[0].qualname.count("."), st[0].path, st[0].start_line))
        return scored[:limit]

    def mentioned(self, query: Query, limit: int) -> list[Hit]:
        """The code a pasted text names exactly, in this order: the functions of its
        traceback's frames in indexed files (innermost first, as the error surfaced there),
        the files it names by path, then the definitions of the names it mentions (most
        repeated first), each name only when at most MAX_DEFINITIONS_OF_MENTION
        definitions share it; a dotted name (django.core.mail.message, QuerySet.filter)
        is looked up in the module it names when there is one."""
        snapshot = self.snapshots.current()
        filters = query.filters
        mentions = query.mentions
        hits: list[Hit] = []
        seen: set[tuple] = set()

        def add(hit: Hit) -> None:
            key = (hit.path, hit.symbol or hit.start_line)
            if key not in seen and path_ok(hit.path, filters.path_glob):
                seen.add(key)
                hits.append(hit)

        for frame in reversed(mentions.frames):
            path = snapshot.resolve_path(frame.path)
            if path is None:
                continue
            around = [d for d in snapshot.definitions(path) if d.kind in FUNCTION_KINDS
                      and d.start_line <= frame.line <= d.end_line
                      and (frame.function is None or d.name == frame.function)]
            inner = min(around, key=lambda d: d.end_line - d.start_line, default=None)
            add(Hit(path, inner.start_line, inner.end_line, 0.0, symbol=inner.qualname,
                    kind=inner.kind) if inner else Hit(path, frame.line, frame.line, 0.0))
        for written in mentions.paths:
            path = snapshot.resolve_path(written)
            if path is not None:
                add(Hit(path, 1, 1, 0.0, kind="module"))
        by_name: dict[str, list[StoredSymbol]] = {}  # every mentioned last name, one query
        for s in self.store.symbols_named({n.split(".")[-1] for n in mentions.names},
                                          filters.repo_id):
            by_name.setdefault(_SPLIT.split(s.name)[-1], []).append(s)
        for name in mentions.names:
            for symbol in self._definitions_named(name, snapshot, by_name):
                add(Hit(symbol.path, symbol.start_line, symbol.end_line, 0.0,
                        symbol=symbol.qualname, kind=symbol.kind))
        for rank, hit in enumerate(hits):
            hit.score = 1.0 / (1 + rank)
        return hits[:limit]

    @staticmethod
    def _definitions_named(name: str, snapshot, by_name: dict[str, list[StoredSymbol]]
                           ) -> list[StoredSymbol]:
        parts = name.split(".")
        for cut in range(len(parts) - 1, 0, -1):  # the longest prefix that is a module
            path = snapshot.modules.get(".".join(parts[:cut]))
            if path is not None:
                rest = parts[cut:]
                if not rest:
                    return []
                wanted = ".".join(rest)
                return [d for d in snapshot.definitions(path)
                        if d.qualname == wanted or d.qualname.endswith("." + wanted)][:1]
        found = [s for s in by_name.get(parts[-1], ()) if s.kind != REEXPORT]
        if len(parts) > 1:  # Owner.member: the member of that owner
            owner = parts[-2]
            found = [s for s in found if (s.parent or "").rsplit(".", 1)[-1] == owner]
        return found if 0 < len(found) <= MAX_DEFINITIONS_OF_MENTION else []

    def files_named(self, name: str, repo_id: int | None = None,
                    path_glob: str | None = None) -> list[StoredFile]:
        """Files whose name is `name` (application.js, Conn.java): in most languages a file
        is a module, so it answers a bare name as a definition does."""
        return [f for f in self.snapshots.current().module_stems.get(
                    normalise_name(_SPLIT.split(name)[-1]), ())
                if (repo_id is None or f.repo_id == repo_id)
                and path_ok(f.path, path_glob)]

    def search(self, query: Query, limit: int) -> list[Hit]:
        """Definitions of the question's target (or of the names its words spell), by raw
        relevance: match tier, then the definition's own standing. Whether a file is a
        test or vendored is the ranking stage's to weigh."""
        filters = query.filters
        if not query.target and query.mentions:
            return self.mentioned(query, limit)
        if not query.target:
            return [Hit(s.path, s.start_line, s.end_line, score, symbol=s.qualname, kind=s.kind)
                    for s, score in self.named_by(query.text, filters.repo_id, filters.path_glob,
                                                  limit)]
        hits = [Hit(s.path, s.start_line, s.end_line, 1.0 / (1 + tier), symbol=s.qualname,
                    kind=s.kind)
                for s, tier in self.definitions(query.target, query.kind, filters.repo_id,
                                                filters.path_glob, limit)]
        if query.kind in (None, "module"):  # after the definitions of the same name
            named = sorted(self.files_named(query.target, filters.repo_id, filters.path_glob),
                           key=lambda f: (len(f.path), f.path))
            hits += [Hit(f.path, 1, 1, 0.5, kind="module") for f in named]
        return hits[:limit]
