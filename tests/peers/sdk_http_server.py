"""The SDK server of ``sdk_server.py`` over HTTP, for the interop tests of the mcpspec HTTP
client and checker: ``python sdk_http_server.py [--json] [--stateless] [--sse]
[--declare-logging]``.

It listens on 127.0.0.1, on a port the OS picks, and prints ``port N`` on stdout once
it accepts connections. Streamable HTTP at ``/mcp`` (``--json``: answers
as ``application/json``; ``--stateless``: no sessions), or with ``--sse`` the HTTP+SSE
transport of 2024-11-05 (``GET /sse``, ``POST /messages/``). ``--declare-logging``
makes it declare the logging capability its tools use (see ``sdk_server.py``).
"""

from __future__ import annotations

import argparse
import socket
import sys

import anyio
import uvicorn
from sdk_server import declare_logging, server


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--sse", action="store_true")
    parser.add_argument("--declare-logging", action="store_true")
    args = parser.parse_args()
    if args.declare_logging:
        declare_logging()
    if args.sse:
        app = server.sse_app()
    else:
        app = server.streamable_http_app(json_response=args.json, stateless_http=args.stateless)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    http = uvicorn.Server(config)

    async def announce() -> None:
        while not http.started:
            await anyio.sleep(0.01)
        print(f"port {sock.getsockname()[1]}", flush=True)

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(announce)
        await http.serve(sockets=[sock])
        task_group.cancel_scope.cancel()


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[attr-defined]
    anyio.run(main)
