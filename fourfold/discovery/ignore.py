"""Ignore rules: the lines of an ignore file compiled with git's pattern semantics
(pathspec), RE2 where a pattern would backtrack. Its own module so that only a walk
imports pathspec (about 30 ms), not every process that searches an index."""
from __future__ import annotations

import re
from functools import cached_property, lru_cache

import pathspec
import re2
from pathspec.patterns.gitignore import GitIgnorePatternError
from pathspec.patterns.gitignore.spec import _DIR_MARK as DIR_MARK
from pathspec.util import CheckResult

SET_PATTERNS = 256  # ignore patterns compiled as one set: re2 refuses sets past a memory limit


def _valid_pattern(line: str) -> bool:
    try:
        pathspec.GitIgnoreSpec.from_lines([line], backend="simple")
        return True
    except GitIgnorePatternError:
        return False


def _compile(lines: list[str]) -> pathspec.GitIgnoreSpec:
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except Exception:  # the re2 backend cannot compile a set past its memory limit
        return pathspec.GitIgnoreSpec.from_lines(lines, backend="simple")


class _LongSpec:
    """An ignore file too long for one compiled set, as several. Exact: a path matched by
    patterns of two or more sets is decided by all the patterns in order, as git's rules
    order them (rarely needed), each pattern's regex run by RE2 (Python's re backtracks
    for minutes on a pattern such as `*a*a*a*...*c`)."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.parts = [_compile(lines[i:i + SET_PATTERNS])
                      for i in range(0, len(lines), SET_PATTERNS)]

    @cached_property
    def ordered(self) -> list[tuple[int, bool, object]]:
        """(index, include, regex) of each pattern that includes or excludes, in order."""
        spec = pathspec.GitIgnoreSpec.from_lines(self.lines, backend="simple")
        return [(index, pattern.include, _linear(pattern.regex))
                for index, pattern in enumerate(spec.patterns) if pattern.include is not None]

    def check_file(self, path: str) -> CheckResult:
        found = None
        for part in self.parts:
            verdict = part.check_file(path)
            if verdict.include is not None:
                if found is not None:
                    return self._in_order(path)
                found = verdict
        return verdict if found is None else found

    def _in_order(self, path: str) -> CheckResult:
        """git's verdict: the last pattern that matches decides, but a match by a folder
        pattern does not undo an exclusion by a file pattern before it."""
        include, decided, priority = None, None, 0
        for index, includes, regex in self.ordered:
            match = regex.search(path)  # as pathspec asks: `*/` is no anchored pattern
            if match is None:
                continue
            folder = bool(match.groupdict().get(DIR_MARK))
            if (includes and folder) or (1 if folder else 2) >= priority:
                include, decided, priority = includes, index, 1 if folder else 2
        return CheckResult(path, include, decided)


def _linear(regex: re.Pattern):
    """The same regex compiled by RE2 (linear time), or as it is where RE2 refuses it."""
    try:
        return re2.compile(regex.pattern)
    except Exception:  # google-re2 raises its own error type
        return regex


Spec = pathspec.GitIgnoreSpec | _LongSpec


def rules_of(lines: list[str]) -> Spec | None:
    """The rules of an ignore file's lines (None where it has none)."""
    return _compiled_spec(tuple(line for line in lines
                                if line.strip() and not line.lstrip().startswith("#")))


@lru_cache(maxsize=256)
def _compiled_spec(lines: tuple[str, ...]) -> Spec | None:
    """Kept by their lines: a watcher's run reads the ignore files above each changed path
    again (the Linux kernel's root .gitignore took 6 ms of a saved edit to compile)."""
    if not lines:
        return None
    try:
        return _compile(list(lines)) if len(lines) <= SET_PATTERNS else _LongSpec(list(lines))
    except GitIgnorePatternError:  # git skips a pattern it cannot read; so do we
        return _compiled_spec(tuple(line for line in lines if _valid_pattern(line)))
