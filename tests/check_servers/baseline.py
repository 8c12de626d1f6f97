"""The well-behaved server the broken fixtures start from: ``mcpspec check`` must give it
a clean bill in every revision.

Built on the library's own connection-layer :class:`Server` (every revision, logging
declared), it offers a little of everything the checker looks at:

* tools: ``echo`` (text; logs it at level ``info``, as far as the client asked for
  log messages), ``add`` (an ``outputSchema`` and ``structuredContent`` from
  2025-06-18 on, where they exist), ``count`` (reports progress 1, 2, ... ``steps`` when
  the call carries a ``progressToken``); every argument is optional, so a call with no
  arguments works;
* resources: five of them, listed two to a page (``nextCursor`` is the offset of the next
  page), each readable; a resource template;
* prompts: ``summary`` (only optional arguments) and ``greet`` (a required ``name``).
"""

from __future__ import annotations

from typing import Any, Final

from mcpspec.runtime.connection import RequestContext, RequestError, Server

__all__ = ["PAGE_SIZE", "RESOURCES", "build_server"]

#: Resources per page of ``resources/list``: small, so that a list has several pages.
PAGE_SIZE: Final = 2
#: The resources, by URI: their text.
RESOURCES: Final[dict[str, str]] = {
    f"fixture://notes/{n}": f"Note number {n}." for n in range(1, 6)
}
#: The first revision whose tools have ``outputSchema`` and ``structuredContent``.
_STRUCTURED_SINCE: Final = "2025-06-18"

_SUM_SCHEMA: Final = {
    "type": "object",
    "properties": {"sum": {"type": "integer"}},
    "required": ["sum"],
}


def _tools(revision: str) -> list[dict[str, Any]]:
    add: dict[str, Any] = {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        },
    }
    if revision >= _STRUCTURED_SINCE:
        add["outputSchema"] = _SUM_SCHEMA
    return [
        {
            "name": "echo",
            "description": "Echo a text.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        },
        add,
        {
            "name": "count",
            "description": "Count to steps, reporting progress at each step.",
            "inputSchema": {
                "type": "object",
                "properties": {"steps": {"type": "integer", "minimum": 1, "maximum": 10}},
            },
        },
    ]


def _text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def _int(arguments: dict[str, Any], name: str, default: int) -> int:
    value = arguments.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise RequestError.invalid_params(f"{name} must be an integer")
    return value


def _page(params: Any) -> int:
    """The offset a ``resources/list`` cursor names (0 without one)."""
    cursor = getattr(params, "cursor", None)
    if not isinstance(cursor, str):
        return 0
    if not cursor.isdigit() or int(cursor) >= len(RESOURCES):
        raise RequestError.invalid_params(f"unknown cursor {cursor[:40]!r}")
    return int(cursor)


def build_server() -> Server:
    """The baseline server (no defect)."""
    server = Server("check-fixture", "1.0.0", instructions="A fixture for mcpspec check.")

    @server.handler("tools/list")
    async def list_tools(request: Any, ctx: RequestContext) -> Any:
        return {"tools": _tools(ctx.revision)}

    @server.handler("tools/call")
    async def call_tool(request: Any, ctx: RequestContext) -> Any:
        name = request.params.name
        arguments = request.params.arguments
        arguments = arguments if isinstance(arguments, dict) else {}
        if name == "echo":
            text = str(arguments.get("text", ""))
            await ctx.log("info", {"echo": text}, logger="fixture")
            return {"content": [_text(text)]}
        if name == "add":
            total = _int(arguments, "a", 0) + _int(arguments, "b", 0)
            result: dict[str, Any] = {"content": [_text(str(total))]}
            if ctx.revision >= _STRUCTURED_SINCE:
                result["structuredContent"] = {"sum": total}
            return result
        if name == "count":
            steps = min(max(_int(arguments, "steps", 3), 1), 10)
            for step in range(1, steps + 1):
                await ctx.report_progress(step, steps, f"step {step}")
            return {"content": [_text(f"counted to {steps}")]}
        raise RequestError.invalid_params(f"unknown tool {name[:40]!r}")

    @server.handler("resources/list")
    async def list_resources(request: Any, ctx: RequestContext) -> Any:
        start = _page(request.params)
        uris = list(RESOURCES)[start : start + PAGE_SIZE]
        page: dict[str, Any] = {
            "resources": [
                {"uri": uri, "name": uri.rsplit("/", 1)[1], "mimeType": "text/plain"}
                for uri in uris
            ]
        }
        if start + PAGE_SIZE < len(RESOURCES):
            page["nextCursor"] = str(start + PAGE_SIZE)
        return page

    @server.handler("resources/templates/list")
    async def list_templates(request: Any, ctx: RequestContext) -> Any:
        template = {
            "uriTemplate": "fixture://notes/{number}",
            "name": "note",
            "mimeType": "text/plain",
        }
        return {"resourceTemplates": [template]}

    @server.handler("resources/read")
    async def read_resource(request: Any, ctx: RequestContext) -> Any:
        uri = request.params.uri
        text = RESOURCES.get(uri)
        if text is None:
            raise RequestError.invalid_params(f"no resource {uri[:80]!r}")
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}]}

    @server.handler("prompts/list")
    async def list_prompts(request: Any, ctx: RequestContext) -> Any:
        return {
            "prompts": [
                {
                    "name": "summary",
                    "description": "Summarise the notes.",
                    "arguments": [{"name": "style", "required": False}],
                },
                {
                    "name": "greet",
                    "description": "Greet someone.",
                    "arguments": [{"name": "name", "required": True}],
                },
            ]
        }

    @server.handler("prompts/get")
    async def get_prompt(request: Any, ctx: RequestContext) -> Any:
        params = request.params
        arguments = params.arguments if isinstance(params.arguments, dict) else {}
        if params.name == "summary":
            style = arguments.get("style", "short")
            text = f"Summarise the notes in a {style} style."
        elif params.name == "greet":
            if "name" not in arguments:
                raise RequestError.invalid_params("greet needs a name")
            text = f"Greet {arguments['name']}."
        else:
            raise RequestError.invalid_params(f"unknown prompt {params.name[:40]!r}")
        return {"messages": [{"role": "user", "content": _text(text)}]}

    return server
