"""Serving over HTTP in tests: an ASGI app under uvicorn in this process, or a server
script in a subprocess, each on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
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
