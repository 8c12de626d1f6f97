"""Helpers of the interop tests, which drive real MCP peers in subprocesses: where the
peers are (and the marks that skip a test, saying why, when one is absent), what reached
the mcpspec client's callbacks (``Seen``), and servers started over HTTP for the length of
a test (``sdk_server``, ``everything``)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from mcpspec.runtime import ProtocolViolation
from mcpspec.runtime.connection import Client, RequestTimeout
from mcpspec.runtime.connection.client import ServerRequestContext
from tests.http_kit import free_port

PEERS = Path(__file__).resolve().parent / "peers"
SDK_HTTP_SERVER = PEERS / "sdk_http_server.py"
NODE = os.environ.get("MCPSPEC_NODE")
EVERYTHING = os.environ.get("MCPSPEC_SERVER_EVERYTHING")
#: A hang guard for one whole scenario (never a timed assertion).
GUARD = 60
#: Seconds a server has to exit after SIGTERM before it is killed.
STOP_GRACE = 3
#: Whether the official Python SDK is installed (`nox -s interop` installs it).
SDK_INSTALLED = importlib.util.find_spec("mcp") is not None
needs_sdk = pytest.mark.skipif(
    not SDK_INSTALLED,
    reason="the official Python SDK (mcp==2.3.0) is missing: run `nox -s interop`",
)
needs_http_sdk = pytest.mark.skipif(
    importlib.util.find_spec("mcp") is None or importlib.util.find_spec("uvicorn") is None,
    reason="the official Python SDK (mcp==2.3.0) or uvicorn is missing: run `nox -s interop`",
)
needs_everything = pytest.mark.skipif(
    not (NODE and EVERYTHING),
    reason="MCPSPEC_NODE and MCPSPEC_SERVER_EVERYTHING are not set: run `nox -s interop`",
)


class Seen:
    """What reached the client's callbacks and handlers."""

    def __init__(self) -> None:
        self.logs: list[Any] = []
        self.notifications: list[Any] = []
        self.violations: list[ProtocolViolation] = []
        #: The server's requests, as (method, revision) in the order they came.
        self.asked: list[tuple[str, str]] = []

    @property
    def methods(self) -> set[str]:
        """The methods of the server's requests."""
        return {method for method, _ in self.asked}

    async def elicit(self, params: Any, ctx: ServerRequestContext) -> Any:
        self.asked.append((ctx.method, ctx.revision))
        return {"action": "accept", "content": {"name": "Ada", "check": True, "integer": 7}}

    async def sample(self, params: Any, ctx: ServerRequestContext) -> Any:
        self.asked.append((ctx.method, ctx.revision))
        t = ctx.types
        return t.CreateMessageResult(
            role="assistant", model="stub-model", content=t.TextContent(text="sampled!")
        )

    async def roots(self, params: Any, ctx: ServerRequestContext) -> Any:
        self.asked.append((ctx.method, ctx.revision))
        return {"roots": [{"uri": "file:///interop", "name": "interop"}]}

    def options(self, mode: str, **transport: Any) -> dict[str, Any]:
        """The client's options in ``mode``, with these callbacks and handlers, and the
        ``transport``'s own options."""
        return {
            "mode": mode,
            "elicitation": self.elicit,
            "sampling": self.sample,
            "roots": self.roots,
            "on_log": self.logs.append,
            "on_notification": self.notifications.append,
            "on_violation": self.violations.append,
            **transport,
        }


async def cancel_then_go_on(client: Client, tool: str, arguments: dict[str, Any]) -> None:
    """A call that times out is cancelled on the wire; the connection goes on."""
    with pytest.raises(RequestTimeout):
        await client.call_tool(tool, arguments, timeout=0.2)
    assert client.session.outstanding == frozenset()


async def _drain(stream: anyio.abc.ByteReceiveStream) -> None:
    """Read a server's log to its end (a full pipe would stop the server)."""
    try:
        async for _ in stream:
            pass
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass


@asynccontextmanager
async def launched(
    command: list[str], env: dict[str, str] | None, ready: bytes
) -> AsyncIterator[bytes]:
    """Start a server; yield the line of its output that holds ``ready`` (once it is
    there); stop the server on exit."""
    process = await anyio.open_process(command, stderr=subprocess.STDOUT, env=env)
    assert process.stdout is not None
    try:
        async with anyio.create_task_group() as task_group:
            buffered = b""
            with anyio.fail_after(GUARD):
                while ready not in buffered or not buffered.endswith(b"\n"):
                    buffered += await process.stdout.receive()
            line = next(x for x in buffered.splitlines() if ready in x)
            task_group.start_soon(_drain, process.stdout)
            try:
                yield line
            finally:
                task_group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            # A server with connections still open may linger after SIGTERM.
            process.terminate()
            with anyio.move_on_after(STOP_GRACE):
                await process.wait()
            if process.returncode is None:
                process.kill()
            await process.aclose()


@asynccontextmanager
async def sdk_server(*flags: str) -> AsyncIterator[str]:
    """The SDK server over HTTP with ``flags``; yields its base URL."""
    command = [sys.executable, str(SDK_HTTP_SERVER), *flags]
    async with launched(command, None, b"port ") as line:
        yield f"http://127.0.0.1:{int(line.split(b'port ')[1])}"


@asynccontextmanager
async def everything(kind: str) -> AsyncIterator[str]:
    """server-everything serving ``kind`` (``streamableHttp`` or ``sse``); yields its
    base URL."""
    assert NODE is not None and EVERYTHING is not None
    port = free_port()
    entry = str(Path(EVERYTHING) / "dist" / "index.js")
    env = {**os.environ, "PORT": str(port)}
    async with launched([NODE, entry, kind], env, str(port).encode()):
        yield f"http://127.0.0.1:{port}"
