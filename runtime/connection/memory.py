"""A server served in this process, over an in-memory message stream: what
``Client.in_memory`` speaks to (tests, notebooks), in any revision, with no subprocess
and no socket."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from .transport import MessageStream, memory_pair

if TYPE_CHECKING:
    from .server import Server

__all__ = ["serve_in_memory"]


@asynccontextmanager
async def serve_in_memory(server: Server, *, linger: float = 5.0) -> AsyncIterator[MessageStream]:
    """Serve ``server`` over an in-memory pair for the block's duration (its lifespan
    entered, unless it is already): the client's end of the pair. Leaving closes that
    end, which ends the server's connection; what still runs there is cancelled."""
    client_end, server_end = memory_pair()
    async with server.running(), server.connect(server_end, linger=linger):
        try:
            yield client_end
        finally:
            await client_end.aclose()
