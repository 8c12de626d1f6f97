"""Helpers of the tests of declared resources, prompts and completers: a typed client
connected in memory to a server, in one revision; where the four first programs are and
what their clients print."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from mcpspec.runtime.connection import Client, Server, memory_pair

REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
#: Generous bound on a whole test: only a hang reaches it (never a measure of speed).
HANG_GUARD = 30


@asynccontextmanager
async def client_of(server: Server, revision: str, **options: Any) -> AsyncIterator[Client]:
    """A :class:`Client` speaking ``revision`` to ``server`` in memory (the server
    serves until the client closes)."""
    client_end, server_end = memory_pair()
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(functools.partial(server.serve, server_end, linger=0))
            async with Client.over(client_end, mode=revision, **options) as client:
                yield client


#: The four first programs (``tests/programs/``, shown in the README).
PROGRAMS = Path(__file__).parent / "programs"
#: What each of their clients prints: the tool's sum, both resources, the prompt's text.
PROGRAMS_OUTPUT = "42\ndebug=false\nHello, Ada!\nPlease review this code:\n\nx = 1\n"
