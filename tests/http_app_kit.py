"""Driving the HTTP app in tests, in process (ASGI calls, no server): a demo server, the
headers each era asks for, requests and their answers read back, and JSON values to fuzz
with."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
from hypothesis import strategies as st

from mcpspec.runtime.connection import RequestContext, Server
from mcpspec.runtime.connection.http import HttpApp, http_app
from tests.http_kit import serve_app

ACCEPT = "application/json, text/event-stream"
STATELESS = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def build_server() -> tuple[Server, dict[str, Any]]:
    server = Server("app-test", "1.0", list_changed=True)
    seen: dict[str, Any] = {"cancelled": anyio.Event(), "release": anyio.Event()}

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text."""
        return text

    @server.tool()
    async def steps(count: int, ctx: RequestContext) -> str:
        """Report progress ``count`` times, then answer."""
        for step in range(count):
            await ctx.report_progress(step + 1, count)
        return f"{count} steps"

    @server.tool()
    async def hold(ctx: RequestContext) -> str:
        """Report progress once, then wait for the test to release it."""
        await ctx.report_progress(1, 2)
        try:
            await seen["release"].wait()
        except anyio.get_cancelled_exc_class():
            seen["cancelled"].set()
            raise
        return "released"

    @server.tool()
    async def touch() -> str:
        """Announce that the tool list changed."""
        await server.notify_tools_changed()
        return "touched"

    return server, seen


def request(
    method: str, params: dict[str, Any] | None = None, request_id: int = 1
) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def stateless_call(name: str, arguments: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    return request(
        "tools/call", {"name": name, "arguments": arguments, "_meta": dict(META)}, request_id
    )


def stateless_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {"accept": ACCEPT, "mcp-protocol-version": STATELESS, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    return headers


def sse_messages(text: str) -> list[dict[str, Any]]:
    """The JSON messages of an SSE body (events with empty data skipped)."""
    out = []
    for block in text.split("\n\n"):
        data = [line[5:].strip() for line in block.splitlines() if line.startswith("data:")]
        if data and data[0]:
            out.append(json.loads("\n".join(data)))
    return out


@asynccontextmanager
async def app_client(
    server: Server | None = None, **settings: Any
) -> AsyncIterator[httpx.AsyncClient]:
    if server is None:
        server, _ = build_server()
    async with (
        serve_app(http_app(server, **settings)) as base,
        httpx.AsyncClient(base_url=base, timeout=30) as client,
    ):
        yield client


async def initialize(client: httpx.AsyncClient, version: str = "2025-11-25") -> dict[str, str]:
    """Open a session; the headers every later request of it carries."""
    response = await client.post(
        "/mcp",
        json=request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        ),
        headers={"accept": ACCEPT},
    )
    assert response.status_code == 200
    assert response.json()["result"]["protocolVersion"] == version
    headers = {"accept": ACCEPT, "mcp-protocol-version": version}
    session_id = response.headers.get("mcp-session-id")
    if session_id is not None:
        headers["mcp-session-id"] = session_id
    done = await client.post(
        "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
    )
    assert done.status_code == 202 and done.content == b""
    return headers


OnChunk = Callable[[bytes], Awaitable[None]]


class Reply:
    """What the app sent for one request."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.chunks: list[bytes] = []
        self.complete = False

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    def json(self) -> Any:
        return json.loads(self.body)

    def messages(self) -> list[dict[str, Any]]:
        return sse_messages(self.body.decode())


async def drive(
    app: HttpApp,
    method: str,
    path: str,
    headers: dict[str, str],
    chunks: list[bytes],
    *,
    query: bytes = b"",
    gone: anyio.Event | None = None,
    truncated: bool = False,
    stalled: bool = False,
    on_chunk: OnChunk | None = None,
) -> Reply:
    """Call ``app`` with one request as an ASGI server would: the body in ``chunks``
    (``truncated``: the client hangs up before its end; ``stalled``: it says more is
    coming and sends nothing more), then ``http.disconnect`` once ``gone`` is set.
    ``on_chunk`` sees each body chunk sent, and may hold the send (a client that stops
    reading)."""
    reply = Reply()
    pending = list(chunks)
    gone = gone if gone is not None else anyio.Event()

    async def receive() -> dict[str, Any]:
        if pending:
            chunk = pending.pop(0)
            more = bool(pending) or truncated or stalled
            return {"type": "http.request", "body": chunk, "more_body": more}
        if not truncated:
            await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        assert not reply.complete, f"a message after the response ended: {message}"
        if message["type"] == "http.response.start":
            reply.status = message["status"]
            reply.headers = {k.decode(): v.decode() for k, v in message["headers"]}
            return
        chunk = message.get("body", b"")
        reply.chunks.append(chunk)
        reply.complete = not message.get("more_body", False)
        if on_chunk is not None:
            await on_chunk(chunk)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query,
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    await app(scope, receive, send)
    return reply


def modern(method: str, name: str | None = None) -> dict[str, str]:
    """The headers of a 2026-07-28 POST."""
    return {
        **stateless_headers(method, name),
        "host": "127.0.0.1:8000",
        "content-type": "application/json",
    }


def encode(message: Any) -> bytes:
    return json.dumps(message).encode()


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
