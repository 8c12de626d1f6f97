"""The floor of the HTTP benchmark: an ASGI app that parses the JSON body and answers.

No MCP: every POST body is parsed with orjson; a request (it has an ``id``) is answered
``200`` with a JSON-RPC result, a ``CallToolResult`` whose one text block holds
``params.arguments.message`` (an empty result when there is none); anything else is
answered ``202``. What uvicorn, one JSON parse and one JSON dump cost, and nothing more.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_JSON_HEADERS = [(b"content-type", b"application/json")]


async def lifespan(receive: Receive, send: Send) -> None:
    """Answer the ASGI server's lifespan messages, until shutdown."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def echo_app(scope: Scope, receive: Receive, send: Send) -> None:
    """The ASGI app."""
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    request = orjson.loads(body)
    if "id" not in request:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    arguments = (request.get("params") or {}).get("arguments")
    result: dict[str, Any] = {}
    if arguments is not None:
        result = {"content": [{"type": "text", "text": arguments.get("message", "")}]}
    payload = orjson.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result})
    headers = [*_JSON_HEADERS, (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def build() -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """The app (a factory, as ``http_serve.py`` expects)."""
    return echo_app


#: The environment variable naming the microseconds of work of :func:`busy`'s app (a
#: factory takes no arguments).
BUSY_VARIABLE = "MCPSPEC_BENCH_BUSY_US"


def busy() -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    """The app spending ``$MCPSPEC_BENCH_BUSY_US`` microseconds of CPU on each request
    before answering it: what an app doing that much work per request can reach here."""
    seconds = float(os.environ.get(BUSY_VARIABLE, "0")) / 1e6
    clock = time.perf_counter

    async def busy_app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            deadline = clock() + seconds
            while clock() < deadline:
                pass
        await echo_app(scope, receive, send)

    return busy_app
