"""The declarations the tools share: parameters several tools take, each typed, bounded and
described once, and the `tool` mark that lists a method as an MCP tool.

A tool is one method of tools.FourfoldService: its typed signature (these types and its
own Annotated ones) is the tool's input schema and its docstring the tool's description.
"""
from typing import Annotated, Callable, Literal

from pydantic import Field

from .paging import MAX_MAX_TOKENS, MAX_PAGE, MIN_MAX_TOKENS


def tool(read_only: bool = True) -> Callable:
    """Mark a method as an MCP tool (read_only=False: it changes the index)."""
    def mark(method: Callable) -> Callable:
        method.tool_read_only = read_only
        return method
    return mark


def declared(cls: type) -> dict[str, bool]:
    """The tools a class declares, name -> read-only, in declaration order."""
    return {name: member.tool_read_only for klass in reversed(cls.__mro__)
            for name, member in vars(klass).items() if hasattr(member, "tool_read_only")}


Repository = Annotated[str | None, Field(description="Repository name or root (default: all).")]
PathGlob = Annotated[str | None, Field(
    description="Only paths matching this glob, e.g. 'src/**/*.ts'.")]
Language = Annotated[str | None, Field(description="Only this language, e.g. 'python'.")]
FilePath = Annotated[str, Field(description="File path relative to the repository root.")]
Limit = Annotated[int, Field(ge=1, le=MAX_PAGE, description="Most results in one page.")]
Cursor = Annotated[str | None, Field(description="The previous page's `cursor`.")]
MaxTokens = Annotated[int, Field(ge=MIN_MAX_TOKENS, le=MAX_MAX_TOKENS,
                                 description="Token budget of one page.")]
Snippet = Annotated[int, Field(ge=0, le=40, description="Code lines per result (0: none).")]
Kind = Annotated[str | None, Field(
    description="Only this kind: function, method, class, struct, enum, type, constant ...")]

Preset = Annotated[Literal["quick", "default", "thorough"], Field(
    description="quick: semantic only; default: semantic+text+structural; thorough: all four.")]
Modalities = Annotated[list[Literal["semantic", "text", "structural", "graph"]] | None, Field(
    description="Override the modalities to run.")]
Weights = Annotated[dict[str, float] | None, Field(
    description='Override fusion weights, e.g. {"text": 0.7, "structural": 0.3}.')]
Intent = Annotated[Literal["find_definition", "find_references", "understand_code",
                           "find_similar", "impact_analysis", "exact_match"] | None, Field(
    description="Force the intent instead of classifying the query.")]
