"""Plain data records shared by every stage of the pipeline.

Lines are 1-based and inclusive everywhere.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

# The kind of a name a file makes public but defines elsewhere (Rust `pub use`): it answers
# "where is X" when the definition lies outside the indexed tree, but is not a definition the
# graph resolves calls to, and it ranks after real definitions.
REEXPORT = "reexport"
# The kinds of definition that hold code which runs: a span inside one belongs to it.
FUNCTION_KINDS = frozenset({"function", "method", "macro"})


@dataclass(slots=True)
class Symbol:
    """A definition found by the structural parser."""

    name: str
    qualname: str  # "Class.method", "module.func", "Type::fn"
    kind: str  # function, method, class, struct, enum, interface, trait, module, type, constant,
    # ... or REEXPORT
    start_line: int
    end_line: int
    signature: str = ""
    doc: str = ""
    parent: str | None = None  # qualname of the enclosing symbol

    def __reduce__(self):
        return Symbol, (self.name, self.qualname, self.kind, self.start_line, self.end_line,
                        self.signature, self.doc, self.parent)


@dataclass(slots=True)
class Chunk:
    """A span of a file that retrievers return and the embedder reads."""

    start_line: int
    end_line: int
    text: str
    symbol: str | None = None  # qualname of the symbol the chunk belongs to
    kind: str = "window"  # "symbol", "header", "window", "text"

    def __reduce__(self):
        return Chunk, (self.start_line, self.end_line, self.text, self.symbol, self.kind)


@dataclass(slots=True)
class Reference:
    """A use of a name found by the parser; the graph resolves it to a definition."""

    kind: str  # "call", "import", "inherit", "ref"
    name: str  # the called / imported / inherited name as written ("os.path", "self.save", "./util")
    line: int
    source: str | None = None  # qualname of the enclosing symbol, None at module level


@dataclass(slots=True)
class ParseResult:
    symbols: list[Symbol] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)


@dataclass(slots=True)
class Hit:
    """One ranked result: a span of a file."""

    path: str
    start_line: int
    end_line: int
    score: float
    symbol: str | None = None
    kind: str | None = None
    lines: list[tuple[int, str]] = field(default_factory=list)  # (line number, text) to show
    repository: str | None = None  # named when an answer spans repositories
    contributions: dict[str, float] = field(default_factory=dict)  # modality -> fused share
    ranks: dict[str, int] = field(default_factory=dict)  # modality -> 1-based rank in its list
    factors: dict[str, float] = field(default_factory=dict)  # prior -> multiplier (not 1.0)
    file_support: float = 0.0  # added for the file's other hits (granularity.with_file_support)
    definition_support: float = 0.0  # for the definition's other hits (granularity.by_function)
    # the learned ranking's score and the features that moved it most (ranking/learned.py)
    learned: dict[str, float] = field(default_factory=dict)
    # the feature values the learned ranking scored, until it explains the hit as an answer
    learned_row: Sequence[float] | None = field(default=None, repr=False, compare=False)
    # a definition the question names, placed after the first function answers (granularity.py)
    named: bool = False
    # how many names a pasted text mentions the definition uses, where that placed it
    # after the first function answers (granularity.py)
    uses_mentioned: int = 0

    def to_dict(self) -> dict:
        out = {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "score": round(self.score, 6),
            "symbol": self.symbol,
        }
        if self.kind:
            out["kind"] = self.kind
        if self.repository:
            out["repository"] = self.repository
        if self.lines:
            out["lines"] = [{"line": n, "text": t} for n, t in self.lines]
        if self.contributions:
            out["contributions"] = {k: round(v, 6) for k, v in self.contributions.items()}
        if self.ranks:
            out["ranks"] = dict(self.ranks)
        if self.factors:
            out["factors"] = {k: round(v, 4) for k, v in self.factors.items()}
        if self.file_support:
            out["file_support"] = round(self.file_support, 6)
        if self.definition_support:
            out["definition_support"] = round(self.definition_support, 6)
        if self.learned:
            out["learned"] = {k: round(v, 4) for k, v in self.learned.items()}
        if self.named:
            out["named"] = True
        if self.uses_mentioned:
            out["uses_mentioned"] = self.uses_mentioned
        return out
