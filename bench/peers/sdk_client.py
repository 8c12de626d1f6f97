"""The benchmark's driver of the official Python SDK's client (``mcp==2.3.0``).

:func:`connect` launches a stdio server command through the SDK's own
``StdioServerParameters`` and ``mcp.Client``, negotiates ``revision`` (``mode="legacy"``
for a handshake revision, the revision itself for 2026-07-28, as an SDK user pins it)
and yields a caller: ``await call("echo", "hi")`` calls the server's tool ``echo`` with
``{"message": "hi"}`` and returns the text of the answer.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

#: Calls a tool with a message and returns the text of the answer.
Call = Callable[[str, str], Awaitable[str]]


@asynccontextmanager
async def connect(command: str, args: Sequence[str], revision: str) -> AsyncIterator[Call]:
    """An SDK client of the stdio server ``command args``, in ``revision``."""
    # The SDK passes a server a few variables of its own choosing; Python's own (such as
    # PYTHONPATH) are added, so that a server finds what it imports whichever client
    # launched it.
    python_env = {k: v for k, v in os.environ.items() if k.startswith("PYTHON")}
    params = StdioServerParameters(command=command, args=list(args), env=python_env)
    mode: Any = revision if revision >= "2026-07-28" else "legacy"
    async with Client(params, mode=mode) as client:
        if client.protocol_version != revision:
            raise RuntimeError(f"the SDK client negotiated {client.protocol_version}")

        async def call(tool: str, message: str) -> str:
            result = await client.call_tool(tool, {"message": message})
            text: str = result.content[0].text  # type: ignore[union-attr]
            return text

        yield call
