"""The official SDK's high-level server (``mcp==2.3.0``) around the benchmark's echo tool.

``mcp.server.mcpserver.MCPServer`` (FastMCP's successor), the tools declared with its
``@mcp.tool()`` decorator as its users write them: ``echo`` answers ``message``, ``cpu``
the CPU seconds this process has used. Served by its own ``streamable_http_app`` at
``/mcp`` with JSON responses (``json_response=True``, as the low-level ``SDK`` row and
the mcpspec app answer a request answered at once): sessions for the handshake revisions,
the SDK's single-exchange path for a 2026-07-28 request.
"""

from __future__ import annotations

import time
from typing import Any

from mcp.server.mcpserver import MCPServer


def server() -> MCPServer[Any]:
    """The decorated server."""
    # Its log at WARNING, as uvicorn's: at INFO it logs every session it opens.
    mcp: MCPServer[Any] = MCPServer("sdk-mcpserver-echo", version="1.0.0", log_level="WARNING")

    @mcp.tool()
    async def echo(message: str) -> str:
        """Echo a message back unchanged."""
        return message

    @mcp.tool()
    async def cpu() -> str:
        """The CPU seconds the server process has used."""
        return repr(time.process_time())

    return mcp


def json_app() -> Any:
    """Stateful, JSON responses (a factory, as ``http_serve.py`` expects)."""
    return server().streamable_http_app(json_response=True)
