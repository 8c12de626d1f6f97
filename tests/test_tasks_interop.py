"""Tasks (2025-11-25) against a real peer that implements them: the mcpspec client
drives ``@modelcontextprotocol/server-everything``'s task tools over stdio and
Streamable HTTP. ``simulate-research-query`` runs as a task of the server (its
ambiguous query goes ``input_required`` and asks through ``tasks/result``);
``trigger-sampling-request-async`` and ``trigger-elicitation-request-async`` ask the
client to run sampling and elicitation as tasks of its own, which the server polls."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpspec.runtime.connection import Client, RequestError
from mcpspec.runtime.connection.client import ServerRequestContext
from mcpspec.runtime.connection.tasks import RELATED_TASK

from .interop_kit import EVERYTHING, GUARD, NODE, Seen, everything, needs_everything

pytestmark = [pytest.mark.interop, pytest.mark.anyio, needs_everything]

ANYIO_BACKENDS = ("asyncio",)  # the peer is the subject here, not the event loop


class TaskSeen(Seen):
    """The client's handlers, slow enough that the server sees its tasks working."""

    def __init__(self) -> None:
        super().__init__()
        self.elicited: list[Any] = []

    async def elicit(self, params: Any, ctx: ServerRequestContext) -> Any:
        self.elicited.append(params.meta)
        self.asked.append((ctx.method, ctx.revision))
        return {
            "action": "accept",
            "content": {"interpretation": "technical", "name": "Ada", "color": "blue"},
        }

    async def sample(self, params: Any, ctx: ServerRequestContext) -> Any:
        await anyio.sleep(1.2)
        return await super().sample(params, ctx)


@asynccontextmanager
async def connected(transport: str, seen: TaskSeen) -> AsyncIterator[Client]:
    assert NODE is not None and EVERYTHING is not None
    options = seen.options("2025-11-25", tasks=True)
    if transport == "stdio":
        entry = str(Path(EVERYTHING) / "dist" / "index.js")
        async with Client.stdio(NODE, [entry, "stdio"], stderr="discard", **options) as client:
            yield client
    else:
        async with (
            everything("streamableHttp") as base,
            Client.http(f"{base}/mcp", **options) as client,
        ):
            yield client


@pytest.mark.parametrize("transport", ["stdio", "streamable-http"])
async def test_server_everything_tasks(transport: str) -> None:
    seen = TaskSeen()
    with anyio.fail_after(GUARD):
        async with connected(transport, seen) as client:
            assert client.capabilities.tasks is not None
            tools = {tool.name: tool for tool in await client.list_tools()}
            research = tools["simulate-research-query"]
            assert research.execution.task_support in ("optional", "required")
            # A plain research query: working, then completed, polled at its interval.
            handle = await client.call_tool(
                "simulate-research-query", {"topic": "tides"}, task=True
            )
            assert handle.task.status == "working"
            final = await handle.wait(timeout=GUARD)
            assert final.status == "completed"
            report = await handle.result()
            assert "Research Report: tides" in report.text
            assert report.result.meta[RELATED_TASK] == {"taskId": handle.task_id}
            assert handle.task_id in {task.task_id for task in await client.list_tasks()}
            # Cancelling a task that ended is refused (-32602).
            with pytest.raises(RequestError) as ended:
                await handle.cancel()
            assert ended.value.code == -32602
            # An ambiguous one asks the user through tasks/result, then completes.
            ambiguous = await client.call_tool(
                "simulate-research-query", {"topic": "python", "ambiguous": True}, task=True
            )
            clarified = await ambiguous.result(timeout=GUARD)
            assert "Clarification**: technical" in clarified.text
            assert seen.elicited[-1][RELATED_TASK] == {"taskId": ambiguous.task_id}
            # Cancelling while it runs.
            running = await client.call_tool(
                "simulate-research-query", {"topic": "storms"}, task=True
            )
            cancelled = await running.cancel()
            assert cancelled.status == "cancelled"
            assert (await running.status()).status == "cancelled"
            # The server asks the client to sample as a task, and polls it.
            sampled = await client.call_tool(
                "trigger-sampling-request-async", {"prompt": "hi"}, timeout=GUARD
            )
            assert "[COMPLETED]" in sampled.text and "sampled!" in sampled.text
            assert "Poll 1: working" in sampled.text
            elicited = await client.call_tool(
                "trigger-elicitation-request-async", {}, timeout=GUARD
            )
            assert "[COMPLETED]" in elicited.text, elicited.text
    assert seen.violations == []
