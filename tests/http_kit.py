"""Serving over HTTP in tests: an ASGI app under uvicorn in this process, or a server
script in a subprocess, each on a free loopback port; and what the tests of the served
app send it and watch (``serving``, ``Watched``, ``rpc``, ``initialize``, ``call_tool``,
the 2026-07-28 ``STATELESS_META``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

#: Generous bound on a server coming up: only a hang reaches it.
START_GUARD = 30.0


def free_port() -> int:
    """A loopback port free at the time of asking."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_listening(port: int, process: subprocess.Popen[bytes] | None = None) -> None:
    """Return once something accepts connections on ``port`` (fail if ``process``
    exits first)."""
    with anyio.fail_after(START_GUARD):
        while True:
            if process is not None and process.poll() is not None:
                raise RuntimeError(f"the server exited with {process.returncode}")
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
                continue
            await stream.aclose()
            return


@asynccontextmanager
async def http_server(args: Sequence[str], *, path: str = "/mcp") -> AsyncIterator[str]:
    """Run ``python ARGS --http PORT`` and yield its endpoint's URL; terminate it
    after."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, *args, "--http", str(port)],
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        await wait_listening(port, process)
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@asynccontextmanager
async def serve_app(app: Any, **config: Any) -> AsyncIterator[str]:
    """Serve the ASGI ``app`` with uvicorn in this process (asyncio only), on a free
    loopback port; yield ``http://127.0.0.1:PORT``. The server stops after."""
    import uvicorn

    port = free_port()
    settings = {"log_level": "warning", "lifespan": "on", "timeout_graceful_shutdown": 1, **config}
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, **settings))
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(server.serve)
        await wait_listening(port)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True


#: A hang guard for waits on things the test itself causes (never a timed assertion).
GUARD = 20
#: How long uvicorn lets requests still open run when a test ends: a request the app
#: never ends must not hang the suite (the test has failed by then).
SHUTDOWN_GRACE = 3
#: How long the app gets to do what the test waits for once nothing else stands in
#: its way (a bound on a wait that should take milliseconds, not a timed assertion).
SETTLE = 5
REVISION = "2025-11-25"
JSON = "application/json"
ACCEPT_BOTH = "application/json, text/event-stream"


@dataclass
class Watched:
    """An ASGI wrapper around the app under test that records what a client cannot
    see: exceptions escaping the app, the statuses the app itself sent, and the body
    bytes it pulled through ``receive``."""

    app: Any
    escaped: list[BaseException] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    body_bytes_read: int = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def counting_receive() -> Any:
            message = await receive()
            if message.get("type") == "http.request":
                self.body_bytes_read += len(message.get("body", b""))
            return message

        async def recording_send(message: Any) -> None:
            if message.get("type") == "http.response.start":
                self.statuses.append(int(message["status"]))
            await send(message)

        try:
            await self.app(scope, counting_receive, recording_send)
        except Exception as exc:
            self.escaped.append(exc)
            raise


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """``app`` under uvicorn in this process; yields its base URL."""
    async with serve_app(app, timeout_graceful_shutdown=SHUTDOWN_GRACE) as base:
        yield base


def rpc(request_id: int | str | None, method: str, params: Any = None) -> dict[str, Any]:
    """A JSON-RPC request (or a notification when ``request_id`` is ``None``)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if params is not None:
        message["params"] = params
    return message


def initialize(request_id: int | str = 0, version: str = REVISION) -> dict[str, Any]:
    """An ``initialize`` request asking for ``version``."""
    return rpc(
        request_id,
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw-http-test", "version": "1"},
        },
    )


def call_tool(request_id: int | str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A ``tools/call`` request."""
    return rpc(request_id, "tools/call", {"name": name, "arguments": arguments})


STATELESS = "2026-07-28"
#: The ``_meta`` every 2026-07-28 request carries.
STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-http-test", "version": "1"},
}
