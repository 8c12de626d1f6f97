"""The official SDK's Streamable HTTP app (``mcp==2.3.0``) around the benchmark's echo tool.

The low-level ``Server`` of ``echo_sdk.py`` (tools ``echo`` and ``cpu``), served by its
own ``streamable_http_app`` at ``/mcp``: sessions for the handshake revisions; a
2026-07-28 request (``MCP-Protocol-Version: 2026-07-28``) takes the SDK's own
single-exchange path whatever the mode. Factories: ``json_app`` answers a request with
``application/json``; ``sse_app`` is the SDK's default, an SSE stream per request (in
2026-07-28, JSON still when the handler answers at once, but from a task of its own);
``stateless_app`` is ``json_app`` in the SDK's stateless mode (no sessions: every
handshake-era POST is served by a fresh transport).
"""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel.server import Server

from peers.echo_sdk import call_tool, list_tools


def _server() -> Any:
    return Server("sdk-echo", version="1.0.0", on_call_tool=call_tool, on_list_tools=list_tools)


def json_app() -> Any:
    """Stateful, JSON responses."""
    return _server().streamable_http_app(json_response=True)


def sse_app() -> Any:
    """Stateful, SSE responses (the SDK's default)."""
    return _server().streamable_http_app()


def stateless_app() -> Any:
    """Stateless (no sessions), JSON responses."""
    return _server().streamable_http_app(json_response=True, stateless_http=True)
