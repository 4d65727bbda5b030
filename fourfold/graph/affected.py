"""Which files' edges a change of some files' definitions, imports, bases or bindings can
change: those that name a name whose meaning changed (fourfold.graph.patch resolves them
again, and keeps every other file's edges).

Resolution looks every name up by what it is called (fourfold.graph.calls): a file's
definitions by name, what its imports bind and re-export, the bases a class names, the
types its bindings give a variable, an attribute or a function's result. So a changed file
changes where a name leads only for the names it defines, re-exports, or gives a type or
base, before or after the change (`changed_names`); and through those, for the names whose
type or base is written with one of them (`closure`: a function returning such a type, a
class deriving from such a class). A file none of whose references spells one of those
names resolves as before. Where that reasoning does not hold (a wildcard import or a module
declared, changed; another language; a changed go.mod), None says: resolve whole.
"""
from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Container, Iterable

import re2

from ..model import Reference
from .calls import SELF_NAMES, SUPER_NAMES, split_binding
from .facts import TYPE_KINDS, FileFacts, parent_name
from .imports import DECLARATION, WILDCARD, parse_import
from .languages import LANGUAGES
from .languages.go import module_roots
from .languages.javascript import EXTENSIONS as JS_EXTENSIONS

_WORD = re.compile(r"\w+")
_MODULE_PARTS = re.compile(r"::|[./:\\]")
# words a binding's receiver is written with (`self.x`), never a name it gives a meaning to
_RECEIVERS = SELF_NAMES | SUPER_NAMES | {"return"}
# files whose presence decides where other files' paths lead (a package, a folder's index,
# a Rust crate's or module's root): adding or taking one away is resolved whole
PATH_RULE_STEMS = frozenset({"__init__", "index", "mod", "main", "lib"})


class _Unnamed(Exception):
    """A name of no word characters (`$`, an operator): no search of words finds it."""


def _words(text: str | None) -> set[str]:
    return set(_WORD.findall(text)) if text else set()


def _names(text: str | None) -> set[str]:
    """The words of a name given a meaning; _Unnamed where it has none."""
    words = _words(text)
    if text and not words:
        raise _Unnamed(text)
    return words


def changed_names(before: FileFacts, now: FileFacts, extra_same: bool) -> set[str] | None:
    """The names whose meaning one file's change (its facts less calls and type uses,
    before and now) can change anywhere; None where it cannot be told by name."""
    if before.language != now.language or not extra_same:
        return None
    try:
        return _changed_names(before, now)
    except _Unnamed:
        return None


def _changed_names(before: FileFacts, now: FileFacts) -> set[str] | None:
    names: set[str] = set()
    defined_before, defined_now = defaultdict(list), defaultdict(list)
    for symbols, defined in ((before.symbols, defined_before), (now.symbols, defined_now)):
        for s in symbols:
            defined[s.name].append((s.qualname, s.kind, s.parent))
    # a name defined otherwise (added, removed, moved, of another kind, or in another order
    # among its namesakes: lookups take the first)
    changed = set()  # the qualified names of definitions defined otherwise
    for name in defined_before.keys() | defined_now.keys():
        if defined_before.get(name) != defined_now.get(name):
            names |= _names(name)
            changed.update(q for q, _, _ in (*defined_before.get(name, ()),
                                             *defined_now.get(name, ())))
    # and the definitions inside them: a lookup reads what they are nested in
    symbols = (*before.symbols, *now.symbols)
    while True:
        inside = {s.qualname for s in symbols if s.parent in changed} - changed
        if not inside:
            break
        changed |= inside
        names.update(w for s in symbols if s.qualname in inside for w in _names(s.name))
    others = Counter((r.kind, r.name, r.source) for r in before.references)
    others.subtract((r.kind, r.name, r.source) for r in now.references)
    functions = _functions(before) | _functions(now)
    for (kind, name, source), count in others.items():
        if count == 0:
            continue
        ref = Reference(kind, name, 0, source)
        if kind == "import":
            found = _imported(ref)
            if found is None:
                return None
            names |= found
        elif kind == "inherit":  # the class's members are looked up through its bases
            names |= _names(parent_name(source))
        elif kind == "bind":
            given, local = _typed(ref, functions)
            # a variable of the function's own: its result may be that variable's value
            names |= given if local is None else _names(parent_name(source))
        elif kind == "package":  # its definitions are now another package's
            names |= _names(_MODULE_PARTS.split(name)[-1])
            names.update(w for s in (*before.symbols, *now.symbols) for w in _names(s.name))
        else:
            return None
    return names


def module_names(path: str, language: str, extra: dict[str, str], folders: Container[str]
                 ) -> set[str] | None:
    """The names a file added or taken away is imported by: its own (`mod`, `./mod`,
    `"mod.h"`) and its folder's (a package, `index.ts`, `mod.rs`, `__init__.py`; a Go
    module's root folder by the module path its go.mod names; `extra`: the extra files'
    texts by path); None for a file whose presence decides where other paths lead: one of
    PATH_RULE_STEMS, or one named as a folder beside it (`pkg/sub.py` beside `pkg/sub/`),
    which the folder's files reach by `.`, `..` or `super` alone (`folders`: every folder
    of the repository's files), or whose stem has no words to search by. A file of no
    language with import rules (a template, a text) is reached only by its whole name: no
    import adds its extension or names its folder (a C include, a relative path spelled
    out)."""
    folder, _, name = path.rpartition("/")
    if language not in LANGUAGES and not name.endswith(JS_EXTENSIONS):
        return {name}
    stem = name.lstrip(".").partition(".")[0]  # `.bashrc`, `.config.js`: by their words
    if (not _words(stem) or stem in PATH_RULE_STEMS
            or f"{folder}/{stem}".lstrip("/") in folders):
        return None
    names = _words(stem) | _words(folder.rpartition("/")[2])
    for module, root in module_roots(extra):
        if root == folder:
            names |= _words(module.rsplit("/", 1)[-1])
    # a module named in CamelCase is looked for in snake_case (Elixir's `Acme.HttpClient`
    # in `acme/http_client.ex`)
    return names | {"".join(part.capitalize() for part in word.split("_")) for word in names}


def _functions(facts: FileFacts) -> set[str]:
    """The qualified names of the file's definitions that are not types: a binding inside
    one is a variable of its own."""
    return {s.qualname for s in facts.symbols if s.kind not in TYPE_KINDS}


def _imported(ref: Reference) -> set[str] | None:
    """The names an import gives a meaning to in the file (where another file can take
    them from it); None for one whose reach is not a set of names."""
    imp = parse_import(ref)
    if imp.kind in (WILDCARD, DECLARATION) or "*" in imp.module:
        return None
    return _names(imp.alias) | _names(imp.name) | _words(_MODULE_PARTS.split(imp.module)[-1])


def _typed(ref: Reference, functions: set[str]) -> tuple[set[str], str | None]:
    """What a binding types: (the names other files can see typed by it, None) for a
    function's result, an attribute, a variable of a module or class; (its name, the
    function) for a function's own variable, which only that function reads."""
    parsed = split_binding(ref.name)
    var = parsed[0] if parsed else ref.name
    if var == "return":
        return _names(parent_name(ref.source)), None
    if "." in var:  # `self.x = ...`: an attribute of the class
        return _names(var.rsplit(".", 1)[-1]), None
    if ref.source is not None and ref.source in functions:
        return {var}, ref.source
    return _names(var) - _RECEIVERS, None


def closure(names: set[str], files: Iterable[FileFacts]) -> set[str] | None:
    """`names` and every name given a type or base written with one of them, until no more
    come: the meaning of those changes with theirs. A function's own variables carry it
    only to that function's result. None where such a name has no words to search by."""
    try:
        return _closure(names, files)
    except _Unnamed:
        return None


def _closure(names: set[str], files: Iterable[FileFacts]) -> set[str]:
    # what a binding, base or alias reads, what it gives a meaning to (None: a name of no
    # words, _Unnamed should it be reached), the function whose own variable it is, the
    # function it is read in
    rules: list[tuple[set[str], set[str] | None, tuple | None, tuple | None]] = []
    for n, facts in enumerate(files):
        functions = None
        for ref in facts.references:
            if ref.kind == "bind":
                parsed = split_binding(ref.name)
                if parsed is None:
                    continue
                if functions is None:
                    functions = _functions(facts)
                given, local = _or_unnamed(_typed, ref, functions) or (None, None)
                written = _words(parsed[2])
                # a variable or result read in a function: the function's own variables too
                scope = (n, ref.source) if ref.source in functions else None
                rules.append((written, given, (n, local) if local else None, scope))
            elif ref.kind == "inherit":
                rules.append((_words(ref.name), _or_unnamed(_names, parent_name(ref.source)),
                              None, None))
            elif ref.kind == "import":  # a name imported under an alias is re-exported so
                imp = parse_import(ref)
                if imp.alias:
                    rules.append((_words(imp.name), _or_unnamed(_names, imp.alias), None,
                                  None))
    readers: dict[str, list[int]] = defaultdict(list)  # a word -> the rules reading it
    for i, (written, _, _, _) in enumerate(rules):
        for word in written:
            readers[word].append(i)
    out = set(names)
    locals_: dict[tuple, set[str]] = defaultdict(set)  # (file, function) -> its variables
    # a word whose meaning changed, and the function whose own variable it is (None: a
    # name any file reads)
    pending: list[tuple[str, tuple | None]] = [(word, None) for word in out]
    while pending:
        word, owner = pending.pop()
        for i in readers.get(word, ()):
            _, given, local, scope = rules[i]
            if owner is not None and scope != owner:
                continue
            if given is None:
                raise _Unnamed("a name of no words reached")
            into = locals_[local] if local else out
            new = given - into
            if new:
                into |= new
                pending += [(w, local) for w in new]
    return out


def _or_unnamed(names_of, *args):
    """names_of(*args), None where a name has no words."""
    try:
        return names_of(*args)
    except _Unnamed:
        return None


def naming(names: set[str]):
    """A search for any of the names (words) in a file's references as the store keeps them
    (JSON text, which escapes what is not ASCII): a file that spells none of them as a word
    of its own cannot name one."""
    spelled = sorted({json.dumps(n)[1:-1] for n in names if n})
    words = [re.escape(s) for s in spelled if not s[0].isdigit()]
    # a name that is a number (a module `4.2.3.txt`, a tuple's field `self.0`) is not one
    # where a comma follows: a line number ([kind, name, line, source]), in every file
    numbers = [re.escape(s) for s in spelled if s[0].isdigit()]
    options = re2.Options()
    options.max_mem = 256 << 20  # a large change names thousands of names
    return re2.compile("|".join(
        f"(?:^|\\W)(?:{'|'.join(found)})(?:{after}|$)"
        for found, after in ((words, "\\W"), (numbers, "[^\\w,]")) if found) or "[^\\s\\S]",
        options)
