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


# A parameter whose name and type say enough carries no description: the tool list is sent
# to the agent in every session, and the shared parameters are explained once, in the
# server's instructions (server.INSTRUCTIONS).
Repository = str | None
PathGlob = str | None
Language = str | None
FilePath = str
Limit = Annotated[int, Field(ge=1, le=MAX_PAGE)]
Cursor = str | None
MaxTokens = Annotated[int, Field(ge=MIN_MAX_TOKENS, le=MAX_MAX_TOKENS)]
Snippet = Annotated[int, Field(ge=0, le=40)]
Granularity = Annotated[Literal["file", "span", "function"] | None, Field(
    description="A hit is a file's best span, every span, or a function or method; "
                "default: every call site for references/impact, else one per file")]
Kind = Annotated[str | None, Field(description="e.g. function, method, class, interface")]

Preset = Literal["quick", "default", "thorough"]
Modalities = list[Literal["semantic", "text", "structural", "graph"]] | None
Weights = Annotated[dict[str, float] | None, Field(description='e.g. {"text": 0.7}')]
Intent = Literal["find_definition", "find_references", "understand_code", "find_similar",
                 "impact_analysis", "exact_match"] | None
