"""Load on one app under uvicorn, on loopback, bounded in count and time: many clients
at once, each with several ``tools/call`` in flight, in both eras (2025-11-25 with a
session per client; 2026-07-28 stateless, with the mirrored headers and the ``_meta``
every request carries). Every call carries a unique payload: each response must reach
the caller that sent its request, none lost, none duplicated; afterwards the app holds
nothing more than before (sessions, connections, stored events, tasks).

The size is ``CLIENTS`` clients of ``CALLS`` calls each: 50 x 20 by default (part of
``nox -s tests``); ``MCPSPEC_HTTP_LOAD_CALLS=1000`` runs the full 50 x 1,000.
"""

from __future__ import annotations

import asyncio
import collections
import os
import secrets
from typing import Any

import anyio
import httpx
import pytest

from mcpspec.runtime.connection import Server
from mcpspec.runtime.connection.http import HttpApp, MemoryEventStore, http_app
from tests.http_kit import (
    ACCEPT_BOTH,
    JSON,
    REVISION,
    STATELESS,
    STATELESS_META,
    Watched,
    call_tool,
    initialize,
    rpc,
    serving,
)

pytestmark = pytest.mark.anyio
#: uvicorn serves on asyncio.
ANYIO_BACKENDS = ("asyncio",)

CLIENTS = 50
CALLS = int(os.environ.get("MCPSPEC_HTTP_LOAD_CALLS", "20"))
#: Calls each client keeps in flight at once (each on a connection of its own), so
#: that the responses of one session's concurrent POSTs can be confused.
IN_FLIGHT = 4
#: A hang guard for the whole run, generous: only a hang reaches it.
RUN_GUARD = 600
BASE_HEADERS = {"content-type": JSON, "accept": ACCEPT_BOTH}


def echo_server() -> Server:
    server = Server("http-load-fixture", "1.0")

    @server.tool()
    async def echo(message: str) -> str:
        return message

    return server


class Ledger:
    """Every payload sent and every payload received, by the caller."""

    def __init__(self) -> None:
        self.sent: set[str] = set()
        self.received: collections.Counter[str] = collections.Counter()
        self.misrouted: list[tuple[str, Any]] = []

    def check(self, payload: str, request_id: str, response: httpx.Response) -> None:
        """The response of the call that sent ``payload`` as request ``request_id``."""
        if response.status_code != 200:
            self.misrouted.append((payload, f"{response.status_code}: {response.text[:200]}"))
            return
        answer = response.json()
        texts = [block.get("text") for block in answer.get("result", {}).get("content", [])]
        if answer.get("id") != request_id or texts != [payload]:
            self.misrouted.append((payload, answer))
            return
        self.received[payload] += 1

    def assert_complete(self) -> None:
        assert self.misrouted == [], self.misrouted[:5]
        assert len(self.sent) == CLIENTS * CALLS
        assert set(self.received) == self.sent, "responses lost"
        duplicated = [p for p, n in self.received.items() if n != 1]
        assert duplicated == [], duplicated[:5]


async def run_clients(client_fn: Any) -> None:
    """``client_fn(n)`` for every client, all at once."""
    with anyio.fail_after(RUN_GUARD):
        async with anyio.create_task_group() as task_group:
            for n in range(CLIENTS):
                task_group.start_soon(client_fn, n)


async def calls_of(
    n: int,
    http: httpx.AsyncClient,
    headers_of: Any,
    body_of: Any,
    ledger: Ledger,
) -> None:
    """Client ``n``'s ``CALLS`` calls, ``IN_FLIGHT`` at a time, each with a unique
    payload and request id."""
    numbers = iter(range(CALLS))

    async def worker() -> None:
        for k in numbers:
            payload = f"client-{n}-call-{k}-{secrets.token_hex(8)}"
            request_id = f"{n}.{k}"
            ledger.sent.add(payload)
            response = await http.post(
                "/mcp", json=body_of(request_id, payload), headers=headers_of(payload)
            )
            ledger.check(payload, request_id, response)

    async with anyio.create_task_group() as task_group:
        for _ in range(IN_FLIGHT):
            task_group.start_soon(worker)


def assert_app_empty(app: HttpApp, server: Server) -> None:
    """Nothing of the clients is kept: no session, no connection, no stored event."""
    assert len(app.sessions) == 0
    assert server._connections == set()
    store = app.event_store
    if isinstance(store, MemoryEventStore):
        assert store._events == {} and store._counters == {}


async def settle_tasks(baseline: int) -> int:
    """The number of asyncio tasks, once back to ``baseline`` (bounded wait loop)."""
    with anyio.move_on_after(10):
        while len(asyncio.all_tasks()) > baseline:
            await anyio.sleep(0.01)
    return len(asyncio.all_tasks())


def limits() -> httpx.Limits:
    return httpx.Limits(max_connections=IN_FLIGHT, max_keepalive_connections=IN_FLIGHT)


async def test_handshake_era_sessions_under_load() -> None:
    server = echo_server()
    app = http_app(server)
    watched = Watched(app)
    ledger = Ledger()
    async with serving(watched) as base:
        baseline = len(asyncio.all_tasks())

        async def client(n: int) -> None:
            async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits()) as http:
                opened = await http.post("/mcp", json=initialize(f"init-{n}"), headers=BASE_HEADERS)
                assert opened.status_code == 200, opened.text
                session = {
                    **BASE_HEADERS,
                    "mcp-session-id": opened.headers["mcp-session-id"],
                    "mcp-protocol-version": REVISION,
                }
                initialized = rpc(None, "notifications/initialized")
                assert (
                    await http.post("/mcp", json=initialized, headers=session)
                ).status_code == 202
                await calls_of(
                    n,
                    http,
                    lambda payload: session,
                    lambda request_id, payload: call_tool(request_id, "echo", {"message": payload}),
                    ledger,
                )
                assert (await http.delete("/mcp", headers=session)).status_code == 200

        await run_clients(client)
        ledger.assert_complete()
        assert app.sessions.minted == CLIENTS
        assert await settle_tasks(baseline) <= baseline
        assert_app_empty(app, server)
        assert watched.escaped == []


async def test_stateless_era_under_load() -> None:
    server = echo_server()
    app = http_app(server)
    watched = Watched(app)
    ledger = Ledger()
    headers = {
        **BASE_HEADERS,
        "mcp-protocol-version": STATELESS,
        "mcp-method": "tools/call",
        "mcp-name": "echo",
    }

    def body_of(request_id: str, payload: str) -> dict[str, Any]:
        params = {"name": "echo", "arguments": {"message": payload}, "_meta": STATELESS_META}
        return rpc(request_id, "tools/call", params)

    async with serving(watched) as base:
        baseline = len(asyncio.all_tasks())

        async def client(n: int) -> None:
            async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits()) as http:
                await calls_of(n, http, lambda payload: headers, body_of, ledger)

        await run_clients(client)
        ledger.assert_complete()
        # Stateless: no session was ever made.
        assert app.sessions.minted == 0
        assert await settle_tasks(baseline) <= baseline
        assert_app_empty(app, server)
        assert watched.escaped == []
