"""Helpers of the connection tests: a server and a hand-driven client peer connected in
memory, and requests of the negotiated revision."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio

from mcpspec.runtime import ClientSession
from mcpspec.runtime.connection import (
    Client,
    ConnectionClosed,
    NotificationHandler,
    Peer,
    RequestHandler,
    Server,
    memory_pair,
)

REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
#: Generous bound on a whole test: only a hang reaches it (never a measure of speed).
HANG_GUARD = 30


@asynccontextmanager
async def connected(
    server: Server,
    mode: str,
    *,
    capabilities: Any = None,
    request_handler: RequestHandler | None = None,
    notification_handler: NotificationHandler | None = None,
    linger: float = 5.0,
) -> AsyncIterator[Peer[ClientSession]]:
    """A client peer (a ``ClientSession`` in ``mode``) negotiated with ``server`` over
    an in-memory pair; leaving closes the client's end, which ends the server's."""
    server_end, client_end = memory_pair()
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(partial(server.serve, server_end, linger=linger))
            session = ClientSession(mode=mode, capabilities=capabilities)  # type: ignore[arg-type]
            async with Peer(
                session,
                client_end,
                request_handler=request_handler,
                notification_handler=notification_handler,
            ) as peer:
                await peer.open()
                yield peer


def call_tool(peer: Peer[ClientSession], name: str, arguments: Any = None, **meta: Any) -> Any:
    """A ``tools/call`` request of the peer's revision (``meta`` goes to ``_meta``)."""
    t = peer.session.types
    params = t.CallToolRequestParams(name=name, arguments=arguments or {})
    if meta:
        params = t.CallToolRequestParams(name=name, arguments=arguments or {}, meta=meta)
    return t.CallToolRequest(id=peer.next_id(), params=params)


def list_tools(peer: Peer[ClientSession]) -> Any:
    """A ``tools/list`` request of the peer's revision."""
    return peer.session.types.ListToolsRequest(id=peer.next_id())


def closing_call(client: Client, outcomes: list[BaseException]) -> Callable[[str], Awaitable[None]]:
    """A call of the tool it is given that records the ``ConnectionClosed`` it ends in
    (for tests of a server that goes away mid-request)."""

    async def call(name: str) -> None:
        try:
            await client.call_tool(name)
        except ConnectionClosed as exc:
            outcomes.append(exc)

    return call


def text_of(result: Any) -> str:
    """The text of a result's first content block."""
    return str(result.content[0].text)
