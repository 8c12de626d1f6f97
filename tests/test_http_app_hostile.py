"""The ASGI app against hostile clients, beyond the security defaults: bodies nested
past the decoder's depth, headers repeated or huge, clients that stop reading while
their streams stay open (other sessions and new clients are still served), and the
streams and queues such clients would grow."""

from __future__ import annotations

import json
from typing import Any

import pytest
from httpx import ASGITransport, AsyncClient

from mcpspec.runtime.connection import Server
from mcpspec.runtime.connection.http import asgi
from tests.test_http_app import (
    ACCEPT,
    META,
    anyio_backend,  # noqa: F401 - a fixture
    app_client,
    initialize,
    request,
    stateless_headers,
)

pytestmark = pytest.mark.anyio

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

    app: Any = server.http_app()
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
