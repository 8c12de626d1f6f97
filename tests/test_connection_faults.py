"""Faults a hostile or unlucky peer found in the connection layer, each kept as a
regression test: handlers that ignore their cancellation, a handler's failure, an answer
that cannot be encoded, a request waiting on a client whose input ended."""

from __future__ import annotations

import gc
import logging
import tracemalloc
from functools import partial
from typing import Any

import anyio
import msgspec
import pytest

from mcpspec.runtime import ClientSession
from mcpspec.runtime.connection import (
    ConnectionClosed,
    NewlineFramedStream,
    Peer,
    RequestContext,
    RequestError,
    Server,
    memory_byte_pipe,
    memory_pair,
)
from mcpspec.runtime.session.kept import Kept

from .connection_kit import HANG_GUARD, call_tool

pytestmark = pytest.mark.anyio

META_2026 = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def line(message: dict[str, Any]) -> bytes:
    return msgspec.json.encode(message) + b"\n"


class StdioPeer:
    """The client's side of a server served over newline-framed byte pipes, as stdio
    is: raw lines written, answers read by id."""

    def __init__(self) -> None:
        self.stdin, server_in = memory_byte_pipe()
        server_out, self.stdout = memory_byte_pipe()
        self.server_stream = NewlineFramedStream(server_in, server_out)
        self._buffer = b""

    async def write(self, data: bytes) -> None:
        await self.stdin.send(data)

    async def read(self) -> dict[str, Any]:
        while b"\n" not in self._buffer:
            self._buffer += await self.stdout.receive()
        message, _, self._buffer = self._buffer.partition(b"\n")
        decoded: dict[str, Any] = msgspec.json.decode(message)
        return decoded

    async def answers(self, ids: set[Any]) -> dict[Any, dict[str, Any]]:
        """Read until every id in ``ids`` is answered; the answers by id."""
        found: dict[Any, dict[str, Any]] = {}
        while not ids <= found.keys():
            message = await self.read()
            if "method" not in message:
                found[message.get("id")] = message
        return found


# -- handlers in structured concurrency --------------------------------------------------------


@pytest.mark.parametrize("ignores", ["catches-and-waits-again", "shields-itself"])
async def test_a_handler_that_ignores_cancellation_cannot_outlive_its_connection(
    ignores: str,
) -> None:
    server = Server()
    started = anyio.Event()
    seen: list[str] = []

    @server.handler("tools/call")
    async def stubborn(request: Any, ctx: RequestContext) -> Any:
        started.set()
        # A scope of its own around its first wait: the request's cancellation must
        # still reach every wait after it.
        with anyio.move_on_after(3600):
            if ignores == "shields-itself":
                with anyio.CancelScope(shield=True):
                    await anyio.sleep(0.2)
                seen.append("shield over")
            else:
                try:
                    await anyio.sleep(3600)
                except anyio.get_cancelled_exc_class():
                    seen.append("ignored")
            await anyio.sleep(3600)
        seen.append("after")
        return {"content": []}

    server_end, client_end = memory_pair()
    served = anyio.Event()

    async def serve() -> None:
        await server.serve(server_end, linger=0)
        served.set()

    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(serve)
            async with Peer(ClientSession(mode="2025-11-25"), client_end) as peer:
                await peer.open()
                request = call_tool(peer, "stubborn")

                async def call() -> None:
                    with pytest.raises(ConnectionClosed):
                        await peer.request(request)

                task_group.start_soon(call)
                await started.wait()
            # The client is gone: the connection ends, and its handler with it.
            with anyio.fail_after(5):
                await served.wait()
    assert seen == ["shield over" if ignores == "shields-itself" else "ignored"]


async def test_a_handler_exception_ends_up_in_one_place(caplog: pytest.LogCaptureFixture) -> None:
    server = Server()

    @server.handler("tools/call")
    async def failing(request: Any, ctx: RequestContext) -> Any:
        if request.params.name == "late":
            await anyio.sleep(0.01)  # fails after a wait, not in its first step
        raise LookupError("what the peer must not see")

    caplog.set_level(logging.DEBUG, logger="mcpspec")
    errors: list[RequestError] = []
    server_end, client_end = memory_pair()
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(server.serve, server_end)
            async with Peer(ClientSession(mode="2025-11-25"), client_end) as peer:
                await peer.open()
                for name in ("early", "late"):
                    with pytest.raises(RequestError) as raised:
                        await peer.request(call_tool(peer, name))
                    errors.append(raised.value)
                # The connection goes on.
                await peer.request(peer.session.types.PingRequest(id=peer.next_id()))
    for error in errors:
        assert error.error.code == -32603
        assert error.error.data == {"exception": "LookupError"}
        assert "what the peer must not see" not in str(error.error)
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in failures] == [
        "the handler of tools/call (id 2) failed",
        "the handler of tools/call (id 3) failed",
    ]
    assert all(r.exc_info is not None and r.exc_info[0] is LookupError for r in failures)


# -- faults of a hostile peer ----------------------------------------------------------------


async def test_a_ping_before_negotiation_then_a_2026_request_in_one_write() -> None:
    """The 2026-07-28 request fixes the session's model before the ping's handler runs:
    answering the ping must not end the connection, and both are answered."""
    server = Server()
    client = StdioPeer()
    served = anyio.Event()

    async def serve() -> None:
        await server.serve(client.server_stream, linger=1)
        served.set()

    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(serve)
            await client.write(
                line({"jsonrpc": "2.0", "id": "p", "method": "ping"})
                + line(
                    {
                        "jsonrpc": "2.0",
                        "id": 7,
                        "method": "tools/list",
                        "params": {"_meta": META_2026},
                    }
                )
            )
            answers = await client.answers({"p", 7})
            # Still serving: a third request is answered too.
            await client.write(
                line(
                    {
                        "jsonrpc": "2.0",
                        "id": 8,
                        "method": "tools/list",
                        "params": {"_meta": META_2026},
                    }
                )
            )
            assert 8 in await client.answers({8})
            assert not served.is_set()
            await client.stdin.aclose()
            await served.wait()
    assert answers["p"]["result"] == {}  # answered in the terms it was read in
    assert "result" in answers[7] or "error" in answers[7]


async def test_a_request_waiting_on_the_client_is_answered_when_stdin_closes() -> None:
    """The README's promise: a request still running when stdin closes is answered
    -32603 (here its handler waits on an elicitation that can no longer be answered)."""
    server = Server()

    @server.handler("tools/call")
    async def asks(request: Any, ctx: RequestContext) -> Any:
        await ctx.elicit(message="name?", requested_schema={"type": "object", "properties": {}})
        return {"content": []}

    client = StdioPeer()
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(lambda: server.serve(client.server_stream, linger=0.5))
            await client.write(
                line(
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "initialize",
                        "params": {
                            "protocolVersion": "2025-11-25",
                            "capabilities": {"elicitation": {}},
                            "clientInfo": {"name": "t", "version": "1"},
                        },
                    }
                )
            )
            await client.answers({1})
            await client.write(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            await client.write(
                line(
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "tools/call",
                        "params": {"name": "asks", "arguments": {}},
                    }
                )
            )
            while (await client.read()).get("method") != "elicitation/create":
                pass
            await client.stdin.aclose()  # stdin closes: the elicitation is never answered
            answer = (await client.answers({2}))[2]
    assert answer["error"]["code"] == -32603
    assert "connection ended" in answer["error"]["data"]["reason"]


# -- what a session keeps of the client ---------------------------------------------------------

#: Client capabilities of about 60 KB of JSON, nearly all of it ``{}``: many times that in
#: Python objects once decoded.
DENSE_CAPABILITIES = {"experimental": {"x": {"y": [{}] * 20_000}}}


def initialize(capabilities: dict[str, Any]) -> bytes:
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": capabilities,
        "clientInfo": {"name": "t", "version": "1"},
    }
    return line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}) + line(
        {"jsonrpc": "2.0", "method": "notifications/initialized"}
    )


async def held_by_a_session(capabilities: dict[str, Any]) -> int:
    """The memory a stdio server's connection still holds once a client declared
    ``capabilities`` and was answered (traced, after a collection)."""
    server = Server()
    client = StdioPeer()
    data = initialize(capabilities)
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            gc.collect()
            tracemalloc.start()
            try:
                before = tracemalloc.get_traced_memory()[0]
                task_group.start_soon(partial(server.serve, client.server_stream, linger=1))
                await client.write(data)
                await client.answers({0})
                await client.write(line({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
                await client.answers({1})  # initialized was read before the ping
                del data
                gc.collect()
                held = tracemalloc.get_traced_memory()[0] - before
            finally:
                tracemalloc.stop()
            await client.stdin.aclose()
    return held


async def test_a_session_keeps_what_the_client_declared_within_a_small_multiple_of_it() -> None:
    """The connection kept the ``SessionReady`` event, and with it the client's
    capabilities decoded, for as long as it lasted: about 25x their size."""
    size = len(msgspec.json.encode(DENSE_CAPABILITIES))
    extra = await held_by_a_session(DENSE_CAPABILITIES) - await held_by_a_session({})
    assert extra < 4 * size


async def test_a_request_decodes_nothing_the_client_declared_unless_its_handler_asks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every request's context read the client's capabilities and info from the session,
    which decodes large ones anew on each read: a request of a few bytes cost the decoding
    of the whole initialize. Now only a handler that asks pays for it."""
    reads: list[int] = []
    decode = Kept.get
    monkeypatch.setattr(Kept, "get", lambda kept: reads.append(1) or decode(kept))
    server = Server()
    seen: list[Any] = []

    @server.handler("tools/list")
    async def listing(request: Any, ctx: RequestContext) -> Any:
        return ctx.types.ListToolsResult(tools=[])

    @server.handler("prompts/list")
    async def prompts(request: Any, ctx: RequestContext) -> Any:
        seen.append(ctx.client_capabilities.experimental)
        return ctx.types.ListPromptsResult(prompts=[])

    client = StdioPeer()
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(partial(server.serve, client.server_stream, linger=1))
            await client.write(initialize(DENSE_CAPABILITIES))
            await client.answers({0})
            reads.clear()
            for n in range(1, 6):
                await client.write(line({"jsonrpc": "2.0", "id": n, "method": "tools/list"}))
            assert all("result" in a for a in (await client.answers({1, 2, 3, 4, 5})).values())
            assert reads == []
            await client.write(line({"jsonrpc": "2.0", "id": 6, "method": "prompts/list"}))
            assert "result" in (await client.answers({6}))[6]
            assert reads and seen == [DENSE_CAPABILITIES["experimental"]]
            await client.stdin.aclose()
