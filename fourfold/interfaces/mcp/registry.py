"""From declared tool methods to the MCP SDK's tools (imported only when a server is built).

The SDK derives each input schema from the method's signature; this module trims what an
agent does not need from it (titles, the `null` arm and null default of every optional
parameter, and numeric bounds: they are still enforced, and a value out of range is refused
with a message naming the bound), makes it refuse unknown properties, sends each answer as
one compact JSON text block (the text paging counts, `paging.to_json`; no structured copy of
the same payload, and so no output schema: the SDK would otherwise send the answer twice,
indented), and turns failures into one-line tool errors: an unknown argument names the
accepted ones, a bad value names the parameter, a FourfoldError keeps its message, and no
traceback is sent.
"""
import difflib
import inspect
import logging
from typing import Any, Callable

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools.base import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import PrivateAttr, ValidationError

from ...errors import FourfoldError
from ..caller import current_grant, grant_of_request
from .paging import cut, to_json
from .params import declared

log = logging.getLogger("fourfold.mcp")
# an error message names the argument it refuses: a huge one is not sent back whole
ERROR_CHARS = 1000

# destructive and idempotent hints mean something only when a tool writes (MCP spec); the
# open-world hint (false here) is left out: on every tool it cost list room and told an
# agent nothing the server's instructions do not
READ_ONLY = ToolAnnotations(read_only_hint=True)
WRITES_INDEX = ToolAnnotations(read_only_hint=False, destructive_hint=False,
                               idempotent_hint=True)


class DeclaredTool(Tool):
    """An SDK tool with a compact schema that refuses unknown arguments by name."""

    _on_answered: Callable[[], None] | None = PrivateAttr(default=None)

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False
                  ) -> Any:
        """Run the tool; failures become ToolErrors whose message the agent can act on."""
        accepted = list(self.parameters["properties"])
        unknown = [name for name in arguments if name not in accepted]
        if unknown:
            raise ToolError(unknown_arguments(self.name, unknown, accepted))
        caller = current_grant.set(grant_of_request(context))
        try:
            result = await super().run(arguments, context, convert_result=False)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(f"{self.name}: invalid arguments: {explain(cause)}") from None
            if isinstance(cause, FourfoldError):
                raise ToolError(f"{self.name}: {cut(str(cause), ERROR_CHARS)}") from None
            if cause is not None:
                log.error("tool %s failed", self.name, exc_info=cause)
                raise ToolError(f"internal error in {self.name}: {type(cause).__name__}: "
                                f"{cut(str(cause), ERROR_CHARS)}") from None
            raise
        finally:
            current_grant.reset(caller)
            if self._on_answered is not None:
                self._on_answered()
        if not convert_result:
            return result
        # the reply is exactly the text the budget counted: compact JSON, sent once
        return CallToolResult(content=[TextContent(type="text", text=to_json(result))])


def unknown_arguments(tool: str, unknown: list[str], accepted: list[str]) -> str:
    """The message for arguments a tool does not take."""
    hints = [f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name)
             for name in unknown for close in [difflib.get_close_matches(name, accepted, 1)]]
    return (f"{tool}: unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(hints)}; "
            f"{tool} accepts: {', '.join(accepted) or 'no arguments'}")


def explain(error: ValidationError) -> str:
    """A pydantic validation error as `parameter: problem` pairs."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                     for e in error.errors())


# keys of a schema node an agent can do without (the tool list is part of every session)
UNSENT = ("title", "minimum", "maximum")


def compact(schema: dict) -> dict:
    """An input schema without titles, bounds, null arms or null defaults, refusing unknown
    keys."""
    out = _trim(schema)
    out["additionalProperties"] = False
    return out


def _trim(node: Any, names: bool = False) -> Any:
    """Trim a schema node; `names`: node maps property names to schemas (keep every key)."""
    if isinstance(node, list):
        return [_trim(item) for item in node]
    if not isinstance(node, dict):
        return node
    if names:
        return {key: _trim(value) for key, value in node.items()}
    out = {key: _trim(value, names=key in ("properties", "$defs"))
           for key, value in node.items() if key not in UNSENT}
    arms = out.get("anyOf")
    if isinstance(arms, list) and len(arms) == 2 and {"type": "null"} in arms:
        out.pop("anyOf")
        out.update(next(arm for arm in arms if arm != {"type": "null"}))
    if "default" in out and out["default"] is None:
        del out["default"]
    return out


def declared_tools(service) -> list[Tool]:
    """One SDK tool per method the service's class declares with @tool, each telling the
    service when it has answered."""
    tools = []
    for name, read_only in declared(type(service)).items():
        method = getattr(service, name)
        tool = DeclaredTool.from_function(
            method, name=name, description=" ".join(inspect.getdoc(method).split()),
            annotations=READ_ONLY if read_only else WRITES_INDEX, structured_output=False)
        tool = tool.model_copy(update={"parameters": compact(tool.parameters)})
        tool._on_answered = service.answered
        tools.append(tool)
    return tools
