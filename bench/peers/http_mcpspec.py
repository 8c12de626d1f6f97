"""The mcpspec ASGI app around the benchmark's echo tool.

The connection layer's ``Server`` of ``echo_mcpspec.py`` (tools ``echo`` and ``cpu``),
served by ``http_app(server)`` with its defaults (endpoint ``/mcp``).
"""

from __future__ import annotations

from typing import Any

from mcpspec.runtime.connection.http import http_app
from peers.echo_mcpspec import build as build_server


def build() -> Any:
    """The app (a factory, as ``http_serve.py`` expects)."""
    return http_app(build_server())
