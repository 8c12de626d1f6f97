"""What a handler sends names the request it is about: the peer hands each message to
its stream with the request it relates to (``related_request_id``), which a stream of
Streamable HTTP routes by; a response relates to nothing more than the id it answers,
and a task the handler left behind, once the request was answered, sends about no
request."""

from __future__ import annotations

import asyncio
import json
from functools import partial
from typing import Any

import anyio
import pytest

from mcpspec.runtime import ClientSession
from mcpspec.runtime.connection import (
    MemoryMessageStream,
    Peer,
    RequestContext,
    Server,
    memory_pair,
)
from mcpspec.runtime.envelope import RequestId
from mcpspec.runtime.session.events import RequestReceived
from tests.connection_kit import HANG_GUARD, call_tool

pytestmark = pytest.mark.anyio
#: A leftover task is made with asyncio's own create_task, outside every task group.
ANYIO_BACKENDS = ("asyncio",)


class RecordingStream:
    """A server's end of a memory pair that notes what each message it sends relates
    to."""

    def __init__(self, inner: MemoryMessageStream) -> None:
        self.inner = inner
        #: Each message sent (decoded) with its ``related_request_id``.
        self.sent: list[tuple[dict[str, Any], RequestId | None]] = []

    async def receive(self) -> bytes:
        return await self.inner.receive()

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        self.sent.append((json.loads(data), related_request_id))
        await self.inner.send(data, related_request_id=related_request_id)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def related_of(self, method: str) -> list[RequestId | None]:
        """What each message of ``method`` sent was said to relate to."""
        return [related for message, related in self.sent if message.get("method") == method]


def build_server(later: anyio.Event, sent_later: anyio.Event) -> Server:
    """``work``: progress, a log message and a question to the client, then an answer;
    a task it leaves behind logs once ``later`` is set."""
    server = Server("related", "1", logging=True)
    kept: list[Any] = []

    @server.tool()
    async def work(ctx: RequestContext) -> str:
        """Send everything a handler may send about its request."""
        await ctx.report_progress(1, 2)
        await ctx.log("info", "working")
        answer = await ctx.elicit(
            message="Name?", requested_schema={"properties": {"name": {"type": "string"}}}
        )

        async def leftover() -> None:
            await later.wait()
            await ctx.log("info", "after the answer")
            sent_later.set()

        # Deliberately outside any task group: a task that outlives its request.
        kept.append(asyncio.get_running_loop().create_task(leftover()))
        return str(answer.content["name"])

    return server


async def test_a_handlers_messages_relate_to_its_request_and_its_leftovers_to_none() -> None:
    later, sent_later = anyio.Event(), anyio.Event()
    server = build_server(later, sent_later)
    server_end, client_end = memory_pair()
    recording = RecordingStream(server_end)

    async def on_request(event: RequestReceived) -> Any:
        return session.types.ElicitResult(action="accept", content={"name": "Ada"})

    session = ClientSession(mode="2025-11-25", capabilities={"elicitation": {}})
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(partial(server.serve, recording))
            async with Peer(session, client_end, request_handler=on_request) as client:
                await client.open()
                request = call_tool(client, "work", progressToken="p")
                result = await client.request(request)
                assert result.content[0].text == "Ada"
                later.set()
                await sent_later.wait()
    call_id = request.id
    assert recording.related_of("notifications/progress") == [call_id]
    # The log of the handler, then the leftover's, once the request was answered.
    assert recording.related_of("notifications/message") == [call_id, None]
    assert recording.related_of("elicitation/create") == [call_id]
    answers = [related for message, related in recording.sent if message.get("id") == call_id]
    assert answers == [None]  # a response is about the id it answers, nothing more
