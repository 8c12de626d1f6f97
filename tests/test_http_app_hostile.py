"""The ASGI app against hostile clients, beyond the security defaults: bodies nested
past the decoder's depth, headers repeated or huge, clients that stop reading while
their streams stay open (other sessions and new clients are still served), and the
streams and queues such clients would grow."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from httpx import ASGITransport, AsyncClient

from mcpspec.runtime.connection import RequestContext, Server
from mcpspec.runtime.connection.http import asgi, http_app, legacy
from mcpspec.runtime.connection.http.legacy import LegacyStream
from tests.http_app_kit import ACCEPT, META, app_client, initialize, request, stateless_headers
from tests.http_kit import serve_app

pytestmark = pytest.mark.anyio
#: uvicorn runs on asyncio.
ANYIO_BACKENDS = ("asyncio",)

#: Arrays nested far past msgspec's depth limit: its decoders raise RecursionError.
DEEP = "[" * 50_000 + "]" * 50_000


#: A ``tools/call`` whose params are :data:`DEEP`: not an object, and too deep to read.
DEEP_CALL = json.dumps(request("tools/call", {})).replace("{}", DEEP).encode()


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_a_body_nested_too_deep_is_a_parse_error_not_a_500(era: str) -> None:
    async with app_client() as client:
        if era == "2026-07-28":
            headers = stateless_headers("tools/call", "echo")
        else:
            headers = await initialize(client)
        headers["content-type"] = "application/json"
        response = await client.post("/mcp", content=DEEP_CALL, headers=headers)
        assert response.status_code == 400
        assert response.json()["error"]["code"] == -32700
        # and the app goes on
        call = request("tools/call", {"name": "echo", "arguments": {"text": "ok"}}, 2)
        if era == "2026-07-28":
            call["params"]["_meta"] = dict(META)
        again = await client.post("/mcp", json=call, headers=headers)
        assert again.status_code == 200
        assert "ok" in again.text


def test_a_header_given_many_times_keeps_every_value_in_order() -> None:
    repeats = [(b"X-Repeated", str(n).encode()) for n in range(50_000)]
    headers = asgi.header_map({"headers": [(b"host", b"h"), *repeats, (b"x-repeated", b"end")]})
    assert headers["host"] == "h"
    values = headers["x-repeated"].split(", ")
    assert values == [str(n) for n in range(50_000)] + ["end"]


def test_long_header_names_are_not_kept_in_the_table_of_names() -> None:
    long_name = b"X-" + b"n" * 10_000
    headers = asgi.header_map({"headers": [(long_name, b"v"), (b"X-Short", b"s")]})
    assert headers == {long_name.decode().lower(): "v", "x-short": "s"}
    assert long_name not in asgi._NAMES
    assert b"X-Short" in asgi._NAMES
    assert max(len(name) for name in asgi._NAMES) <= asgi._NAME_KEPT_BYTES


async def test_long_host_and_media_headers_passing_their_checks_are_not_remembered() -> None:
    server = Server("hostile", "1.0")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    app: Any = http_app(server)
    origin = "http://localhost:" + "9" * 100_000  # a loopback origin: it passes
    accept = ACCEPT + ", " + "text/plain;q=0.1, " * 10_000
    async with AsyncClient(transport=ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        headers = {
            **stateless_headers("tools/call", "echo"),
            "origin": origin,
            "accept": accept,
            "content-type": "application/json",
        }
        call = request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
        call["params"]["_meta"] = dict(META)
        response = await client.post("/mcp", json=call, headers=headers)
        assert response.status_code == 200, response.text
        short = {**headers, "origin": "http://localhost:1", "accept": ACCEPT}
        response = await client.post("/mcp", json=call, headers=short)
        assert response.status_code == 200
    assert app._passed_hosts == {("127.0.0.1", "http://localhost:1")}
    assert app._passed_media == {("application/json", ACCEPT)}


# -- clients that stop reading -----------------------------------------------------------------

#: Bound on any wait of these tests: only a hang reaches it.
GUARD = 10.0


def flooding_server() -> tuple[Server, dict[str, Any]]:
    """``flood``: progress with 64 KiB messages until cancelled (it fills the buffers of
    a client that does not read); ``touch``: announce a change of the tool list."""
    server = Server("hostile", "1.0", list_changed=True)
    seen: dict[str, Any] = {"cancelled": anyio.Event()}

    @server.tool()
    async def flood(ctx: RequestContext) -> str:
        try:
            for step in range(1_000_000):
                await ctx.report_progress(step + 1, None, message="x" * 65536)
        except anyio.get_cancelled_exc_class():
            seen["cancelled"].set()
            raise
        return "flooded"

    @server.tool()
    async def touch() -> str:
        await server.notify_tools_changed()
        return "touched"

    return server, seen


@asynccontextmanager
async def stalled_post(
    base: str, headers: dict[str, str], message: dict[str, Any]
) -> AsyncIterator[None]:
    """POST ``message`` on a raw connection, read the start of the answer, then read
    nothing more (the connection stays open until the block ends)."""
    host, port = base.removeprefix("http://").split(":")
    body = json.dumps(message).encode()
    lines = {
        **headers,
        "host": f"{host}:{port}",
        "content-type": "application/json",
        "content-length": str(len(body)),
    }
    head = "POST /mcp HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in lines.items())
    loop = asyncio.get_running_loop()
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await loop.sock_connect(sock, (host, int(port)))
        await loop.sock_sendall(sock, head.encode() + b"\r\n" + body)
        assert (await loop.sock_recv(sock, 100)).startswith(b"HTTP/1.1 200")
        await anyio.sleep(0.5)  # the server's writes fill the buffers, then wait
        yield


def flood_call(request_id: int, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params = {"name": "flood", "arguments": {}, "_meta": {**(meta or {}), "progressToken": "p"}}
    return request("tools/call", params, request_id)


async def test_a_session_whose_client_stopped_reading_does_not_hold_up_another() -> None:
    server, _ = flooding_server()
    async with (
        serve_app(http_app(server)) as base,
        AsyncClient(base_url=base, timeout=GUARD) as client,
    ):
        stalled = await initialize(client)
        async with stalled_post(base, stalled, flood_call(2)):
            other = await initialize(client)
            # The change goes to every session: the stalled one's is queued, not waited on.
            call = request("tools/call", {"name": "touch", "arguments": {}}, 3)
            with anyio.fail_after(GUARD):
                response = await client.post("/mcp", json=call, headers=other)
            assert response.status_code == 200 and "touched" in response.text


async def test_evicting_a_session_whose_client_stopped_reading_does_not_hold_up_initialize() -> (
    None
):
    server, _ = flooding_server()
    async with (
        serve_app(http_app(server, max_sessions=1)) as base,
        AsyncClient(base_url=base, timeout=GUARD) as client,
    ):
        stalled = await initialize(client)
        async with stalled_post(base, stalled, flood_call(2)):
            with anyio.fail_after(GUARD):
                await initialize(client)  # evicts the stalled session


async def test_a_stateless_request_whose_client_stopped_reading_is_cancelled() -> None:
    server, seen = flooding_server()
    async with serve_app(http_app(server, stall_seconds=0.5)) as base:
        headers = stateless_headers("tools/call", "flood")
        async with stalled_post(base, headers, flood_call(1, dict(META))):
            with anyio.fail_after(GUARD):
                await seen["cancelled"].wait()


# -- the HTTP+SSE inbox ------------------------------------------------------------------------


async def test_the_http_sse_inbox_is_bounded_in_bytes_as_well_as_messages() -> None:
    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    stream = LegacyStream(send, keepalive=GUARD)
    big = b"x" * (4 * 1024 * 1024)
    taken = 0
    while stream.deliver(big):
        taken += 1
    assert taken * len(big) <= legacy._INBOX_BYTES < legacy._INBOX * len(big)
    assert await stream.receive() == big
    assert stream.deliver(big)  # room again
    for _ in range(taken):
        await stream.receive()
    assert stream.deliver(b"y" * (legacy._INBOX_BYTES + 1))  # one of any size, when empty
    assert not stream.deliver(b"{}")
