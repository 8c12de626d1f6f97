"""The benchmark's mcpspec stdio echo server: one ``echo`` tool on the connection
layer's :class:`~mcpspec.runtime.connection.Server`.

Run: ``python echo_mcpspec.py`` (serves stdin and stdout until stdin closes). A call of
``echo`` answers a ``CallToolResult`` with one text block holding ``arguments.message``;
``cpu`` answers the CPU seconds this process has used (``time.process_time()``), so the
benchmark can tell the server's share of a round trip.
"""

from __future__ import annotations

import time
from typing import Any

from mcpspec.runtime.connection import RequestContext, Server

#: The one tool, as ``tools/list`` lists it (wire form).
ECHO_TOOL: dict[str, Any] = {
    "name": "echo",
    "description": "Echo a message back unchanged.",
    "inputSchema": {
        "type": "object",
        "properties": {"message": {"type": "string"}},
        "required": ["message"],
    },
}
CPU_TOOL: dict[str, Any] = {
    "name": "cpu",
    "description": "The CPU seconds the server process has used.",
    "inputSchema": {"type": "object"},
}


def build() -> Server:
    """The echo server."""
    server = Server("mcpspec-echo", "1.0.0")

    @server.handler("tools/list")
    async def list_tools(request: Any, ctx: RequestContext) -> Any:
        return {"tools": [ECHO_TOOL, CPU_TOOL]}

    @server.handler("tools/call")
    async def call_tool(request: Any, ctx: RequestContext) -> Any:
        # Built as the negotiated revision's own Struct: the server sends it as it is.
        types = ctx.types
        if request.params.name == "cpu":
            text = repr(time.process_time())
        else:
            arguments = request.params.arguments or {}
            text = str(arguments.get("message", ""))
        return types.CallToolResult(content=[types.TextContent(text=text)])

    return server


if __name__ == "__main__":
    build().run()
