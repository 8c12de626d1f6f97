"""The benchmark's SDK stdio echo server: one ``echo`` tool on the official Python SDK's
low-level ``Server`` (``mcp==2.3.0``), served by its ``stdio_server``.

Run: ``python echo_sdk.py`` (serves stdin and stdout until stdin closes). The low-level
server is the SDK's fastest: no argument model, no output schema to check. Tool ``cpu``
answers the CPU seconds this process has used, as ``echo_mcpspec.py`` does.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

ECHO_TOOL = types.Tool(
    name="echo",
    description="Echo a message back unchanged.",
    input_schema={
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    },
)

CPU_TOOL = types.Tool(
    name="cpu",
    description="The CPU seconds the server process has used.",
    input_schema={"type": "object"},
)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    """Answer ``arguments.message`` (``echo``) or the CPU seconds used (``cpu``)."""
    if params.name == "cpu":
        text = repr(time.process_time())
    else:
        text = str((params.arguments or {}).get("message", ""))
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    """The tools."""
    return types.ListToolsResult(tools=[ECHO_TOOL, CPU_TOOL])


async def serve() -> None:
    """Serve stdin and stdout until stdin closes."""
    server: Any = Server(
        "sdk-echo", version="1.0.0", on_call_tool=call_tool, on_list_tools=list_tools
    )
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve)
