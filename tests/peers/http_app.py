"""An mcpspec ASGI app for tests that run it under uvicorn by import string (several
workers): one tool, ``pid``, answers the process id of the worker that ran it."""

from __future__ import annotations

import os

from mcpspec.runtime.connection import Server
from mcpspec.runtime.connection.http import http_app

server = Server("http-app-fixture", "1.0")


@server.tool()
async def pid() -> str:
    """The id of the worker process answering."""
    return str(os.getpid())


app = http_app(server)
