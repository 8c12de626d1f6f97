"""Faults of the HTTP app found by a hostile client, kept as regression tests: a client
that hangs up while its response is written, a subscription on an app without
sessions, a long-lived listen request that would keep its whole decoded body."""

from __future__ import annotations

import gc
import logging
import tracemalloc
from typing import Any

import anyio
import msgspec
import pytest

from mcpspec.runtime.connection import Server
from mcpspec.runtime.connection.http import HttpApp, http_app

from .connection_kit import HANG_GUARD

pytestmark = pytest.mark.anyio

ACCEPT = "application/json, text/event-stream"
META_2026 = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Reply:
    def __init__(self) -> None:
        self.status: int | None = None
        self.body = b""


async def call(
    app: HttpApp,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes = b"",
    *,
    send_fails: bool = False,
    gone: anyio.Event | None = None,
    on_body: Any = None,
) -> Reply:
    """Call ``app`` as an ASGI server would; with ``send_fails``, every ``send``
    raises ``OSError`` (the client hung up), as the ASGI specification allows."""
    reply = Reply()
    sent = False
    gone = gone if gone is not None else anyio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if send_fails:
            raise OSError("the client hung up")
        if message["type"] == "http.response.start":
            reply.status = message["status"]
        else:
            reply.body += message.get("body", b"")
            if on_body is not None:
                await on_body(message.get("body", b""))

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": "",
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in {"host": "127.0.0.1", **headers}.items()],
    }
    with anyio.fail_after(HANG_GUARD):
        await app(scope, receive, send)
    return reply


def rpc(method: str, params: Any = None, request_id: int | None = 1) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if params is not None:
        message["params"] = params
    return msgspec.json.encode(message)


def echo_server(**options: Any) -> Server:
    server = Server("faults", "1.0", **options)

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text."""
        return text

    return server


HANDSHAKE = {
    "accept": ACCEPT,
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}


@pytest.mark.parametrize(
    "request_kind", ["tools/call", "notification", "not-found", "stateless", "refused"]
)
async def test_a_client_gone_while_its_response_is_written_is_routine(
    request_kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcpspec")
    app = http_app(echo_server(), sessions=False)
    if request_kind == "tools/call":
        body = rpc("tools/call", {"name": "echo", "arguments": {"text": "x"}})
        await call(app, "POST", "/mcp", HANDSHAKE, body, send_fails=True)
    elif request_kind == "notification":
        body = rpc("notifications/roots/list_changed", request_id=None)
        await call(app, "POST", "/mcp", HANDSHAKE, body, send_fails=True)
    elif request_kind == "not-found":
        await call(app, "GET", "/elsewhere", {}, send_fails=True)
    elif request_kind == "refused":
        await call(app, "PUT", "/mcp", HANDSHAKE, send_fails=True)
    else:
        body = rpc("tools/call", {"name": "echo", "arguments": {"text": "x"}, "_meta": META_2026})
        headers = {
            **HANDSHAKE,
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "echo",
        }
        await call(app, "POST", "/mcp", headers, body, send_fails=True)
    noted = [r for r in caplog.records if r.levelno > logging.DEBUG]
    assert noted == []


async def test_a_subscription_on_an_app_without_sessions_is_refused_plainly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="mcpspec")
    app = http_app(echo_server(subscribe=True), sessions=False)
    body = rpc("resources/subscribe", {"uri": "file:///a"}, 4)
    reply = await call(app, "POST", "/mcp", HANDSHAKE, body)
    answer = msgspec.json.decode(reply.body)
    assert answer["id"] == 4
    assert answer["error"]["code"] == -32601
    assert "sessions" in answer["error"]["data"]["reason"]
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_an_open_listen_request_keeps_a_small_multiple_of_its_size() -> None:
    """A 2026-07-28 ``subscriptions/listen`` stays open as long as its client likes: what
    it keeps meanwhile is bounded by its wire size, not by its decoded size (a ``_meta``
    of empty objects decodes to many times its bytes)."""
    server = Server("listen", "1", list_changed=True, capabilities={"tools": {"listChanged": True}})
    app = http_app(server)
    padding = b"[" + b"{}," * 1_000_000 + b"{}]"
    meta = msgspec.json.encode(META_2026)[:-1] + b',"padding":' + padding + b"}"
    body = (
        b'{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":'
        b'{"notifications":{"toolsListChanged":true},"_meta":' + meta + b"}}"
    )
    assert len(body) < app.max_body
    headers = {
        **HANDSHAKE,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "subscriptions/listen",
    }
    acknowledged = anyio.Event()
    gone = anyio.Event()
    held: list[int] = []

    async def on_body(chunk: bytes) -> None:
        if b"acknowledged" in chunk:
            acknowledged.set()

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(
                lambda: call(app, "POST", "/mcp", headers, body, gone=gone, on_body=on_body)
            )
            with anyio.fail_after(HANG_GUARD):
                await acknowledged.wait()
            gc.collect()
            held.append(tracemalloc.get_traced_memory()[0] - before)
            gone.set()
    finally:
        tracemalloc.stop()
    # Decoded and kept whole, it would be about 25 times the body.
    assert held[0] < 4 * len(body), (held[0], len(body))
