"""A request to the HTTP app leaves no reference cycle behind.

Objects in a cycle outlive their request until the garbage collector finds them: memory
grows between collections, and each collection walks the whole heap of the server. So
every object a request makes must be freed by reference counting alone, in each era.
Counted, not timed: with the collector off, a batch of requests, then what a collection
finds (nothing).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from mcpspec.runtime.connection.http import HttpApp, http_app
from tests.http_app_kit import ACCEPT, build_server, drive, encode, modern, request, stateless_call

pytestmark = pytest.mark.anyio
#: uvicorn runs on asyncio.
ANYIO_BACKENDS = ("asyncio",)

#: Requests in each measured batch (after a warm-up batch of as many).
BATCH = 50
HANDSHAKE = "2025-11-25"
SSE = "text/event-stream"


@pytest.fixture
def collector_off() -> Iterator[None]:
    """The collector off for the test (back to how it was after)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


async def _open_session(app: HttpApp) -> dict[str, str]:
    """Initialize a session; the headers of its later requests."""
    params = {
        "protocolVersion": HANDSHAKE,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    base = {"host": "127.0.0.1:8000", "content-type": "application/json", "accept": ACCEPT}
    reply = await drive(app, "POST", "/mcp", base, [encode(request("initialize", params))])
    assert reply.status == 200, reply.body
    headers = {
        **base,
        "mcp-session-id": reply.headers["mcp-session-id"],
        "mcp-protocol-version": HANDSHAKE,
    }
    initialized = encode({"jsonrpc": "2.0", "method": "notifications/initialized"})
    done = await drive(app, "POST", "/mcp", headers, [initialized])
    assert done.status == 202
    return headers


#: The calls measured: a plain answer, progress first (an SSE stream unless the
#: settings answer JSON only), and an error (an unknown tool).
CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "echo": ("echo", {"text": "hi"}),
    "progress": ("steps", {"count": 2}),
    "error": ("missing", {}),
}


async def _calls(
    app: HttpApp, headers: dict[str, str], stateless: bool, call: str, first_id: int
) -> None:
    """``BATCH`` calls of one kind, each answered."""
    name, arguments = CALLS[call]
    for request_id in range(first_id, first_id + BATCH):
        if stateless:
            body = stateless_call(name, arguments, request_id)
        else:
            params = {"name": name, "arguments": arguments}
            body = request("tools/call", params, request_id)
        if call == "progress":
            body["params"].setdefault("_meta", {})["progressToken"] = request_id
        reply = await drive(app, "POST", "/mcp", {**headers, "mcp-name": name}, [encode(body)])
        assert reply.status in (200, 404)
        answers = reply.messages() if reply.headers["content-type"] == SSE else [reply.json()]
        assert answers[-1]["id"] == request_id


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("json_response", [True, False])
@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_requests_leave_nothing_for_the_garbage_collector(
    era: str, json_response: bool, call: str, collector_off: None
) -> None:
    server, _ = build_server()
    app = http_app(server, json_response=json_response)
    async with app.running():
        stateless = era == "stateless"
        headers = modern("tools/call") if stateless else await _open_session(app)
        await _calls(app, headers, stateless, call, 1)  # warm-up: pools, caches
        gc.collect()
        await _calls(app, headers, stateless, call, 1 + BATCH)
        found = gc.collect()
    # A 2026-07-28 POST's watch for its client going away ends in a scope of its own,
    # not by cancelling its task (which would leave a cycle per POST).
    assert found == 0
