"""A tool's arguments that do not fit its input schema, told to the model in one line.

The SDK checks the arguments against each tool's signature before the tool runs, and says
what failed as pydantic's multi-line dump, with a documentation URL (`1 validation error
for list_conversationsArguments\\npage\\n  Input should be…`). chatmem's server says it as
every other refusal: `page must be 1 or more, not 0`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, ExitStack, nullcontext
from typing import Any, NoReturn

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
)
from pydantic import ValidationError

_MUST = {
    "missing": "is required",
    "int_parsing": "must be a whole number", "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "string_type": "must be text", "list_type": "must be a list",
    "bool_parsing": "must be true or false", "bool_type": "must be true or false",
}
_BOUNDS = {"greater_than_equal": ("ge", "must be {} or more"),
           "less_than_equal": ("le", "must be {} or less"),
           "greater_than": ("gt", "must be more than {}"),
           "less_than": ("lt", "must be less than {}")}
_SHOWN_CHARACTERS = 40
"""How much of a refused value the line repeats: enough to recognise it."""


Arrival = Callable[[str, Mapping[str, Any], "Context[Any, Any] | None"],
                  AbstractContextManager[None]]
"""What a tool call is done inside from the moment it comes (`Memory.lined_up`)."""


class ToolServer(MCPServer[Any]):
    """The SDK's server, whose refused tool arguments read as one line, whose calls are
    each done inside its `arrival` (entered before anything waits, so in the order the
    calls came), and which over stdio answers every request read before stdin ended."""

    def __init__(self, *args: Any, arrival: Arrival | None = None,
                 log: Callable[[str], None] | None = None,
                 secrets: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._arrival = arrival
        self._log = log
        """The server's own log (its owner's stderr): a prompt that failed is one line there."""
        self._secrets = secrets
        """The settings' credentials (providers.secrets_of), masked in that line as in a
        plugin's words: a key read from `api_key_env` or the base URL is no environment's."""

    async def run_stdio_async(self) -> None:
        """Serve over stdio (chatmem.mcp.stdio.run_stdio), the end of stdin held back from
        the SDK until each request read is answered (AnswersOwed)."""
        from mcp.server.stdio import stdio_server

        from chatmem.mcp.stdio import AnswersOwed

        async with stdio_server() as (read_stream, write_stream):
            owed = AnswersOwed()
            await self._lowlevel_server.run(
                owed.reading(read_stream, write_stream), owed.writing(write_stream),
                self._lowlevel_server.create_initialization_options())

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None,
                         context: Context[Any, Any] | None = None
                         ) -> GetPromptResult | InputRequiredResult:
        """The SDK's, with a prompt asked for without its arguments (or one not served)
        refused as the client's invalid params, as a tool's are: the SDK raised a ValueError
        its dispatcher logged as a ~150-line traceback on stderr for the client's mistake."""
        try:
            return await super().get_prompt(name, arguments, context)
        except ValueError as e:
            # The SDK's own check re-raised (`from` it); a prompt that failed to render
            # carries its cause one step further.
            checked = e.__cause__
            if isinstance(checked, ValueError) and checked.__cause__ is None:
                raise MCPError(INVALID_PARAMS, f"prompt {name}: {checked}") from None
            failed = checked.__cause__ if checked is not None else None
            if failed is None or isinstance(failed, MCPError):
                raise
            self._failed(name, failed)

    def _failed(self, name: str, failed: BaseException) -> NoReturn:
        """A prompt that failed to render with an error chatmem does not know (a bug, a
        plugin's): one line of the server's log with where it was raised (the SDK's
        dispatcher logged ~100 lines of traceback), masked as a plugin's words are; the
        client is told its kind."""
        import traceback
        from pathlib import Path

        from chatmem.errors import one_line
        from chatmem.privacy.secrets import plugin_mask

        frames = traceback.extract_tb(failed.__traceback__)
        at = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
        if self._log is not None:
            said = f"prompt {name} failed: {one_line(failed)}{at}"
            self._log(plugin_mask(self._secrets).mask(said))
        raise MCPError(INTERNAL_ERROR, f"prompt {name} failed ({type(failed).__name__}); the "
                       "server's log says where") from None

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None
                        ) -> CallToolResult | InputRequiredResult:
        with ExitStack() as arrived:
            try:
                arrived.enter_context(self._arrival(name, arguments, context)
                                      if self._arrival else nullcontext())
            except ToolError as e:  # refused as it came (busy): worded as the tool's own
                raise ToolError(f"Error executing tool {name}: {e}") from None
            return await self._checked_call(name, arguments, context)

    async def _checked_call(self, name: str, arguments: dict[str, Any],
                            context: Context[Any, Any] | None
                            ) -> CallToolResult | InputRequiredResult:
        schema = next((t.input_schema for t in await self.list_tools() if t.name == name), {})
        unknown = unknown_arguments(schema, arguments)
        if unknown:
            raise ToolError(f"Error executing tool {name}: {unknown}")
        truths = truth_for_number(schema, arguments)
        if truths:
            raise ToolError(f"Error executing tool {name}: " + "; ".join(
                f"{key} must be a whole number, not {json.dumps(value)}" for key, value in truths))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as e:
            # A ToolError caused by a ValidationError is the SDK's own refusal of the
            # arguments; anything the tools raise reaches here already worded.
            refused = e.__cause__
            if isinstance(e, UnexpectedToolError) or not isinstance(refused, ValidationError):
                raise
            raise ToolError(f"Error executing tool {name}: {refusal(refused)}") from refused


def unknown_arguments(schema: dict[str, Any], arguments: Any) -> str:
    """The arguments `schema` does not name, and the ones it does, in one line; "" when
    there are none. pydantic drops them without a word, so `get_context` given `user` for
    `input` built a context for no input at all, and the model believed it had asked."""
    known = list(schema.get("properties", {}))
    unknown = [key for key in (arguments or {}) if key not in known]
    if not unknown:
        return ""
    takes = ", ".join(known) if known else "no arguments"
    return (f"unknown argument{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)} (it takes {takes})")


def truth_for_number(schema: dict[str, Any], arguments: Any) -> list[tuple[str, bool]]:
    """The arguments given true or false where `schema` asks a whole number and no yes or
    no: pydantic reads them as 1 and 0 (`forget`'s fact_id: true named fact 1)."""
    properties = schema.get("properties", {})

    def kinds(key: str) -> set[Any]:
        spec = properties.get(key, {})
        return {spec.get("type"), *(s.get("type") for s in spec.get("anyOf", []))}

    return [(key, value) for key, value in (arguments or {}).items()
            if isinstance(value, bool) and "integer" in kinds(key)
            and "boolean" not in kinds(key)]


def refusal(error: ValidationError) -> str:
    """Every argument `error` refuses, what it must be and what it was, in one line."""
    return "; ".join(_one(detail) for detail in error.errors())


def _one(detail: Any) -> str:
    location = detail["loc"]
    argument = str(location[0]) if location else "arguments"
    argument += "".join(f"[{part}]" for part in location[1:] if isinstance(part, int))
    kind = detail["type"]
    if kind in _BOUNDS:
        key, wording = _BOUNDS[kind]
        must = wording.format(detail.get("ctx", {}).get(key))
    else:
        message = str(detail["msg"]).replace("Input should", "must")
        must = _MUST.get(kind, message[:1].lower() + message[1:])
    if kind == "missing":
        return f"{argument} {must}"
    given = json.dumps(detail.get("input"), ensure_ascii=False)
    if len(given) > _SHOWN_CHARACTERS:
        given = given[:_SHOWN_CHARACTERS] + "…"
    return f"{argument} {must}, not {given}"
