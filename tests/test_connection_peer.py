"""The peer core against hand-written wire traffic: lines that are not JSON-RPC, lines
over the limit, answers that break the schema, error responses, and the connection
closing under requests in flight."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import msgspec
import pytest

from mcpspec.runtime import ClientSession, ProtocolViolation, RequestReceived, Rule, ServerSession
from mcpspec.runtime.connection import (
    ConnectionClosed,
    MemoryMessageStream,
    NegotiationRefused,
    NewlineFramedStream,
    Peer,
    RequestError,
    RequestTimeout,
    ResponseViolation,
    Server,
    memory_byte_pipe,
    memory_pair,
)

from .connection_kit import HANG_GUARD, Fixture

pytestmark = pytest.mark.anyio


class RawClient:
    """The client end of a framed byte connection to a server, written and read by
    hand: raw lines, and a ``ClientSession`` to make and read messages."""

    def __init__(self, revision: str) -> None:
        self.session = ClientSession(mode=revision)  # type: ignore[arg-type]
        to_server, self.server_in = memory_byte_pipe()
        self.server_out, from_server = memory_byte_pipe()
        self.writer = to_server
        self.lines = NewlineFramedStream(from_server, to_server)

    async def write(self, line: bytes) -> None:
        await self.writer.send(line + b"\n")

    async def read(self) -> dict[str, Any]:
        message: dict[str, Any] = msgspec.json.decode(await self.lines.receive())
        return message

    async def handshake(self) -> None:
        await self.write(self.session.start())
        events = self.session.receive(await self.lines.receive())
        for event in events:
            data = getattr(event, "data", None)
            if data is not None:
                await self.write(data)
        assert self.session.revision is not None

    async def call(self, name: str) -> dict[str, Any]:
        t = self.session.types
        request = t.CallToolRequest(
            id=self.session.next_id(), params=t.CallToolRequestParams(name=name, arguments={})
        )
        await self.write(self.session.send(request))
        return await self.read()


@asynccontextmanager
async def serving_raw(revision: str, *, max_message_size: int) -> AsyncIterator[RawClient]:
    fixture = Fixture()
    raw = RawClient(revision)
    stream = NewlineFramedStream(
        raw.server_in, raw.server_out, max_message_size=max_message_size, read_size=256
    )
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(fixture.server.serve, stream)
            yield raw
            await raw.writer.aclose()


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
async def test_an_oversized_line_is_refused_and_the_connection_goes_on(revision: str) -> None:
    async with serving_raw(revision, max_message_size=2000) as raw:
        await raw.write(b'{"jsonrpc": "2.0", "id": 99, "method": "ping", "pad": "' + b"x" * 50_000)
        refusal = await raw.read()
        assert refusal["id"] is None and refusal["error"]["code"] == -32600
        assert refusal["error"]["data"]["limit"] == 2000
        await raw.handshake()
        answer = await raw.call("echo")
        assert answer["result"]["content"][0]["text"] == "None"


@pytest.mark.parametrize("revision", ["2025-06-18", "2026-07-28"])
async def test_lines_that_are_not_json_rpc_are_answered_and_the_connection_goes_on(
    revision: str,
) -> None:
    async with serving_raw(revision, max_message_size=10_000) as raw:
        await raw.handshake()
        await raw.write(b"hello, this is not JSON")
        assert (await raw.read())["error"]["code"] == -32700
        await raw.write(b'{"jsonrpc": "2.0", "id": 5}')
        refusal = await raw.read()
        assert (refusal["id"], refusal["error"]["code"]) == (5, -32600)
        await raw.write(b"[1, 2")
        assert (await raw.read())["error"]["code"] == -32700
        answer = await raw.call("echo")
        assert "result" in answer


class RawServer:
    """The server end of an in-memory connection, written by hand."""

    def __init__(self, stream: MemoryMessageStream) -> None:
        self.stream = stream

    async def next_request(self) -> dict[str, Any]:
        message: dict[str, Any] = msgspec.json.decode(await self.stream.receive())
        return message

    async def send(self, message: dict[str, Any]) -> None:
        await self.stream.send(msgspec.json.encode(message))


@asynccontextmanager
async def stateless_client(
    violations: list[ProtocolViolation] | None = None,
) -> AsyncIterator[tuple[Peer[ClientSession], RawServer]]:
    """A client pinned to 2026-07-28 (it may send at once) and a hand-written server."""
    client_end, server_end = memory_pair()
    session = ClientSession(mode="2026-07-28")
    handler = violations.append if violations is not None else None
    with anyio.fail_after(HANG_GUARD):
        async with Peer(session, client_end, violation_handler=handler) as peer:
            yield peer, RawServer(server_end)


def tools_list(peer: Peer[ClientSession]) -> Any:
    t = peer.session.types
    return t.ListToolsRequest(id=peer.next_id(), params=t.PaginatedRequestParams())


async def _outcome(peer: Peer[ClientSession], request: Any, into: list[Any]) -> None:
    try:
        into.append(await peer.request(request))
    except Exception as exc:
        into.append(exc)


async def test_an_answer_that_breaks_the_schema_raises_a_violation() -> None:
    violations: list[ProtocolViolation] = []
    async with stateless_client(violations) as (client, server):
        outcomes: list[Any] = []
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(_outcome, client, tools_list(client), outcomes)
            request = await server.next_request()
            await server.send({"jsonrpc": "2.0", "id": request["id"], "result": {"tools": 5}})
        [error] = outcomes
        assert isinstance(error, ResponseViolation)
        assert error.violation.rule is Rule.INVALID_RESULT
        assert error.request_id == request["id"]
        assert [v.rule for v in violations] == [Rule.INVALID_RESULT]


async def test_an_unreadable_answer_ends_its_request() -> None:
    async with stateless_client([]) as (client, server):
        outcomes: list[Any] = []
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(_outcome, client, tools_list(client), outcomes)
            request = await server.next_request()
            await server.send({"jsonrpc": "2.0", "id": request["id"], "result": 5})
        [error] = outcomes
        assert isinstance(error, ResponseViolation)


async def test_an_error_response_raises_request_error() -> None:
    async with stateless_client() as (client, server):
        outcomes: list[Any] = []
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(_outcome, client, tools_list(client), outcomes)
            request = await server.next_request()
            error = {"code": -32001, "message": "nope", "data": [1]}
            await server.send({"jsonrpc": "2.0", "id": request["id"], "error": error})
        [raised] = outcomes
        assert isinstance(raised, RequestError)
        assert (raised.code, raised.message, raised.data) == (-32001, "nope", [1])
        assert (raised.request_id, raised.method) == (request["id"], "tools/list")


async def test_the_connection_closing_fails_every_pending_request_at_once() -> None:
    async with stateless_client() as (client, server):
        outcomes: list[Any] = []
        async with anyio.create_task_group() as task_group:
            for _ in range(3):
                task_group.start_soon(_outcome, client, tools_list(client), outcomes)
            for _ in range(3):
                await server.next_request()
            await server.stream.aclose()
        assert len(outcomes) == 3
        assert all(isinstance(o, ConnectionClosed) for o in outcomes)
        with pytest.raises(ConnectionClosed):
            await client.request(tools_list(client))
        assert client.closed


async def test_leaving_the_peer_fails_requests_still_waiting() -> None:
    outcomes: list[Any] = []
    client_end, server_end = memory_pair()
    with anyio.fail_after(HANG_GUARD):
        async with (
            anyio.create_task_group() as task_group,
            Peer(ClientSession(mode="2026-07-28"), client_end) as client,
        ):
            task_group.start_soon(_outcome, client, tools_list(client), outcomes)
            await RawServer(server_end).next_request()
    assert len(outcomes) == 1 and isinstance(outcomes[0], ConnectionClosed)


async def test_a_cancelled_request_is_cancelled_on_the_wire() -> None:
    async with stateless_client() as (client, server):
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(_outcome, client, tools_list(client), [])
                request = await server.next_request()
                scope.cancel()
        cancelled = await server.next_request()
        assert cancelled["method"] == "notifications/cancelled"
        assert cancelled["params"]["requestId"] == request["id"]
        # The late answer is ignored; the next request is answered as usual.
        await server.send({"jsonrpc": "2.0", "id": request["id"], "result": {"tools": []}})
        outcomes: list[Any] = []
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(_outcome, client, tools_list(client), outcomes)
            again = await server.next_request()
            result = {"tools": [], "ttlMs": 0, "cacheScope": "private", "resultType": "complete"}
            await server.send({"jsonrpc": "2.0", "id": again["id"], "result": result})
        assert outcomes[0].tools == []


async def test_open_raises_negotiation_refused_when_no_revision_fits() -> None:
    server = Server(revisions=["2026-07-28"])
    server_end, client_end = memory_pair()
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(server.serve, server_end)
            async with Peer(ClientSession(mode="2025-11-25"), client_end) as client:
                with pytest.raises(NegotiationRefused) as caught:
                    await client.open()
                assert caught.value.event.error.code == -32601
                assert client.ready is None


async def test_open_raises_connection_closed_when_the_stream_ends_first() -> None:
    client_end, server_end = memory_pair()
    outcome: list[BaseException] = []
    with anyio.fail_after(HANG_GUARD):
        async with Peer(ClientSession(mode="2025-11-25"), client_end) as client:

            async def opening() -> None:
                try:
                    await client.open()
                except ConnectionClosed as exc:
                    outcome.append(exc)

            async with anyio.create_task_group() as task_group:
                task_group.start_soon(opening)
                await RawServer(server_end).next_request()  # initialize, never answered
                await server_end.aclose()
            await client.wait_closed()
            assert client.closed and client.ready is None
    assert len(outcome) == 1


@asynccontextmanager
async def stateless_server_peer(
    handler: Callable[[RequestReceived], Awaitable[Any]] | None = None,
) -> AsyncIterator[tuple[Peer[ServerSession], ClientSession, MemoryMessageStream]]:
    """A 2026-07-28 server peer whose handler (by default) answers every request at
    once, the client session that writes its requests, and the client's end of the
    stream."""

    async def answer(event: RequestReceived) -> Any:
        return session.types.CallToolResult(content=[])

    session = ServerSession(capabilities={"tools": {}})
    server_end, client_end = memory_pair()
    with anyio.fail_after(HANG_GUARD):
        async with Peer(session, server_end, request_handler=handler or answer) as peer:
            yield peer, ClientSession(mode="2026-07-28"), client_end


def _tool_call(client: ClientSession) -> bytes:
    t = client.types
    request = t.CallToolRequest(
        id=client.next_id(), params=t.CallToolRequestParams(name="echo", arguments={})
    )
    return client.send(request)


async def test_feed_request_hands_back_an_answer_that_is_the_next_write() -> None:
    async with stateless_server_peer() as (peer, client, _):
        data = _tool_call(client)
        events, answer = await peer.feed_request(data)
        assert [type(e).__name__ for e in events][-1] == "RequestReceived"
        assert answer is not None and answer.error_code is None
        [event] = client.receive(answer.data)  # the caller writes it: nothing else did
        assert type(event).__name__ == "ResponseReceived"
        assert client.outstanding == frozenset()


def _empty_result() -> Any:
    return ClientSession(mode="2026-07-28").types.CallToolResult(content=[])


@pytest.mark.parametrize("when", ["first-step", "after-a-wait"])
@pytest.mark.parametrize(
    ("raised", "code", "data"),
    [
        (RequestError.method_not_found("tools/call"), -32601, {"method": "tools/call"}),
        (LookupError("a secret"), -32603, {"exception": "LookupError"}),
    ],
    ids=["request-error", "bug"],
)
async def test_feed_request_hands_back_the_error_a_handler_raises(
    when: str, raised: Exception, code: int, data: Any
) -> None:
    async def handler(event: RequestReceived) -> Any:
        if when == "after-a-wait":
            await anyio.sleep(0)
        raise raised

    async with stateless_server_peer(handler) as (peer, client, _):
        _, answer = await peer.feed_request(_tool_call(client))
        assert answer is not None and answer.error_code == code
        error = msgspec.json.decode(answer.data)["error"]
        assert error["code"] == code and error.get("data") == data
        assert peer.handlers_running == 0  # the handler is no longer tracked


class _Ready:
    """An awaitable that is no coroutine, ready with ``value``."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Generator[Any, None, Any]:
        return self.value
        yield  # a generator: awaiting it returns at once


async def test_feed_request_takes_a_handler_returning_any_awaitable() -> None:
    def handler(event: RequestReceived) -> Awaitable[Any]:
        return _Ready(_empty_result())  # awaited by a coroutine of the peer's

    async with stateless_server_peer(handler) as (peer, client, _):
        _, answer = await peer.feed_request(_tool_call(client))
        assert answer is not None and answer.error_code is None
        assert msgspec.json.decode(answer.data)["result"]["content"] == []


async def test_feed_request_hands_back_nothing_for_a_request_cancelled_while_it_waits() -> None:
    started = anyio.Event()
    reached: list[str] = []

    async def handler(event: RequestReceived) -> Any:
        started.set()
        await anyio.sleep(30)
        reached.append("after the wait")
        return _empty_result()

    async with stateless_server_peer(handler) as (peer, client, client_end):
        data = _tool_call(client)
        outcome: list[Any] = []

        async def feed() -> None:
            outcome.append(await peer.feed_request(data))

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(feed)
            await started.wait()
            handling = peer.handling_of(msgspec.json.decode(data)["id"])
            assert handling is not None
            handling.cancel()
        [(_, answer)] = outcome
        assert answer is None and reached == []
        assert peer.handlers_running == 0
        with anyio.move_on_after(0.05) as nothing_written:
            await client_end.receive()
        assert nothing_written.cancel_called


async def test_feed_request_writes_the_answer_itself_while_another_write_is_under_way() -> None:
    async with stateless_server_peer() as (peer, client, client_end):
        data = _tool_call(client)
        outcome: list[Any] = []

        async def feed() -> None:
            outcome.append(await peer.feed_request(data))

        # Another write holds the stream while the request is fed.
        async with anyio.create_task_group() as task_group, peer._write_lock:
            task_group.start_soon(feed)
            await anyio.wait_all_tasks_blocked()
            assert outcome == []  # the handler's answer waits for the stream
        [(_, answer)] = outcome
        assert answer is None  # written in turn, not handed back
        [event] = client.receive(await client_end.receive())
        assert type(event).__name__ == "ResponseReceived"


class _StalledStream:
    """A stream whose peer stops reading once the handshake is over: writes wait
    forever (the other end of ``inner`` answers the handshake)."""

    #: Its writes need no shield of the peer's (a shielded write that never ends
    #: could not be torn down at the end of the test).
    _completes_sends = True

    def __init__(self, inner: MemoryMessageStream) -> None:
        self.inner = inner
        self.stalled = False

    async def receive(self) -> bytes:
        return await self.inner.receive()

    async def send(self, data: bytes, *, related_request_id: int | str | None = None) -> None:
        if self.stalled:
            await anyio.sleep_forever()
        await self.inner.send(data)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_a_timeout_bounds_a_request_that_cannot_be_written() -> None:
    client_end, server_end = memory_pair()
    stream = _StalledStream(client_end)
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(Server("s").serve, server_end)
            async with Peer(ClientSession(mode="2025-11-25"), stream) as peer:
                await peer.open()
                stream.stalled = True
                t = peer.session.types
                # The first write waits on the peer, and holds the connection's writes.
                task_group.start_soon(peer.request, t.PingRequest(id=peer.next_id()))
                await anyio.wait_all_tasks_blocked()
                started = anyio.current_time()
                with pytest.raises(RequestTimeout):
                    await peer.request(t.PingRequest(id=peer.next_id()), timeout=0.05)
                # Its own timeout, not the hang guard, ended the wait.
                assert anyio.current_time() - started < HANG_GUARD / 2
                task_group.cancel_scope.cancel()


class _StalledShieldedStream(_StalledStream):
    """As :class:`_StalledStream`, for a stream that may cut a write short: the peer
    shields each of its writes."""

    _completes_sends = False

    async def send(self, data: bytes, *, related_request_id: int | str | None = None) -> None:
        if self.stalled:
            await anyio.sleep(HANG_GUARD)  # for ever, as far as the test goes
        await self.inner.send(data)


async def test_closing_the_peer_ends_a_shielded_write_that_never_returns() -> None:
    client_end, server_end = memory_pair()
    stream = _StalledShieldedStream(client_end)
    outcome: list[BaseException] = []

    async def ping(peer: Peer[ClientSession]) -> None:
        try:
            await peer.request(peer.session.types.PingRequest(id=peer.next_id()))
        except ConnectionClosed as exc:
            outcome.append(exc)

    with anyio.fail_after(2 * HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(Server("s").serve, server_end)
            async with Peer(ClientSession(mode="2025-11-25"), stream) as peer:
                await peer.open()
                stream.stalled = True
                task_group.start_soon(ping, peer)
                await anyio.wait_all_tasks_blocked()
                started = anyio.current_time()
            await anyio.wait_all_tasks_blocked()
            # The close ended the write, not the stall's end.
            assert anyio.current_time() - started < HANG_GUARD / 2
            assert len(outcome) == 1
            task_group.cancel_scope.cancel()
