"""The mcpspec ASGI app around the benchmark's echo tool.

The connection layer's ``Server`` of ``echo_mcpspec.py`` (tools ``echo`` and ``cpu``),
served by its HTTP app with its defaults (endpoint ``/mcp``). The same code serves the
checkout's mcpspec and that of an earlier revision (``bench/before_after.py``), whichever
this process imports: :func:`asgi_app` asks each for its app as it spells it.
"""

from __future__ import annotations

from typing import Any

from peers.echo_mcpspec import build as build_server


def asgi_app(server: Any) -> Any:
    """``server``'s ASGI app: ``mcpspec.runtime.connection.http.http_app(server)`` where
    the package has that function, else the method ``server.http_app()`` of earlier
    trees."""
    from mcpspec.runtime.connection import http

    factory = getattr(http, "http_app", None)
    return server.http_app() if factory is None else factory(server)


def available() -> bool:
    """Whether the mcpspec this process imports has an ASGI app, in either spelling."""
    try:
        from mcpspec.runtime.connection import Server, http
    except ImportError:
        return False
    return hasattr(http, "http_app") or hasattr(Server, "http_app")


def build() -> Any:
    """The app (a factory, as ``http_serve.py`` expects)."""
    return asgi_app(build_server())
