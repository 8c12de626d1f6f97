"""The mcpspec Client driving the mcpspec Server over stdio, each side its own process
(tests/peers/mcpspec_server.py): negotiation in each mode, logging, progress, a caller
that gives up (the server's handler is cancelled), elicitation, change notifications, a
server whose print goes to stderr, and a server that dies mid-request."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpspec.runtime import ProtocolViolation
from mcpspec.runtime.connection.client import Client, ServerRequestContext, prompt_ref

from .connection_kit import closing_call

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).resolve().parent / "peers" / "mcpspec_server.py"
#: A hang guard for one whole scenario (never a timed assertion).
GUARD = 30


ANYIO_BACKENDS = ("asyncio",)


async def elicit(params: Any, ctx: ServerRequestContext) -> Any:
    return {"action": "accept", "content": {"name": "Ada"}}


@pytest.mark.parametrize(
    ("mode", "backend", "revision"),
    [
        ("auto", "asyncio", "2026-07-28"),
        ("legacy", "trio", "2025-11-25"),
        ("2025-03-26", "asyncio", "2025-03-26"),
    ],
)
async def test_mcpspec_client_and_server_over_stdio(mode: str, backend: str, revision: str) -> None:
    logs: list[Any] = []
    notes: list[Any] = []
    violations: list[ProtocolViolation] = []
    updated = anyio.Event()

    def note(notification: Any) -> None:
        notes.append(notification.method)
        if notification.method == "notifications/resources/updated":
            updated.set()

    with anyio.fail_after(GUARD):
        async with Client.stdio(
            sys.executable,
            [str(SERVER), "--backend", backend],
            mode=mode,
            stderr="capture",
            elicitation=elicit,
            on_log=logs.append,
            on_notification=note,
            on_violation=violations.append,
        ) as client:
            assert client.revision == revision
            await client.set_logging_level("info")
            assert (await client.call_tool("echo", {"message": "hi"})).text == "hi"
            assert [m.data for m in logs] == [{"echo": "hi"}]
            assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"
            assert (await client.read_resource("test://static")).contents[0].text == "static text"
            assert (await client.get_prompt("greet", {"name": "Ada"})).messages[0].content.text
            completed = await client.complete(prompt_ref("greet"), "name", "A")
            assert completed.values == ["Ada", "Alan"]
            # progress, then the caller gives up: the server's handler is cancelled
            steps: list[float] = []
            progressed = anyio.Event()

            def on_progress(event: Any) -> None:
                steps.append(event.progress)
                progressed.set()

            async with anyio.create_task_group() as caller:
                caller.start_soon(lambda: client.call_tool("slow", progress=on_progress))
                await progressed.wait()
                caller.cancel_scope.cancel()
            assert steps == [1]
            assert (await client.call_tool("cancelled")).text == "1"
            if revision >= "2025-06-18":
                assert (await client.call_tool("ask")).text == "Hello, Ada!"
            assert (await client.call_tool("noisy")).text == "quiet"
            if client.model == "stateless":
                async with client.listen(resource_uris=["test://static"]) as feed:
                    assert (await client.call_tool("touch")).text == "touched"
                    async for change in feed:
                        if change.method == "notifications/resources/updated":
                            break
            else:
                await client.subscribe("test://static")
                assert (await client.call_tool("touch")).text == "touched"
                await updated.wait()
    assert violations == []
    assert client.transport.returncode == 0
    assert b"noise from print" in client.transport.stderr


async def test_a_dying_mcpspec_server_fails_pending_calls() -> None:
    outcomes: list[BaseException] = []
    with anyio.fail_after(GUARD):
        async with Client.stdio(sys.executable, [str(SERVER)], stderr="discard") as client:
            call = closing_call(client, outcomes)
            async with anyio.create_task_group() as calls:
                calls.start_soon(call, "slow")
                calls.start_soon(call, "slow")
                await anyio.wait_all_tasks_blocked()
                calls.start_soon(call, "exit")
    assert len(outcomes) == 3 and client.transport.returncode == 3
