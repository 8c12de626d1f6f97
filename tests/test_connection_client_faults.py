"""Faults the Client survives or reports: answers that break the schema, error
responses, a stream that ends or a server process that exits or is killed mid-request
(every pending call raises ConnectionClosed at once), lines that are not JSON-RPC,
refused or stalled negotiation, endless pagination or input rounds, and the stdio
shutdown sequence (close stdin, then SIGTERM, then SIGKILL)."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpspec.runtime import Limits, ProtocolViolation, Rule
from mcpspec.runtime.connection import (
    ConnectionClosed,
    MessageStream,
    NegotiationRefused,
    NewlineFramedStream,
    RequestError,
    RequestTimeout,
    ResponseViolation,
    memory_byte_pipe,
    memory_pair,
)
from mcpspec.runtime.connection import client as client_module
from mcpspec.runtime.connection.client import (
    MAX_INPUT_ROUNDS,
    MAX_LISTED_PAGES,
    Client,
    InputRoundsExceeded,
    ListingTooLong,
    ServerRequestContext,
)
from mcpspec.runtime.connection.context import RequestContext
from mcpspec.runtime.connection.server import Server

from .connection_kit import closing_call

pytestmark = pytest.mark.anyio

FAULTY = Path(__file__).resolve().parent / "peers" / "client_faulty_server.py"
#: A hang guard for waits on events the test itself causes (never a timed assertion).
GUARD = 20
INITIALIZE_RESULT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "scripted", "version": "1"},
}

Reply = Callable[[dict[str, Any], MessageStream], Awaitable[None]]


ANYIO_BACKENDS = ("asyncio",)


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


async def scripted(
    stream: MessageStream, reply: Reply, opening: dict[str, Any] = INITIALIZE_RESULT
) -> None:
    """A server that answers ``initialize`` (with ``opening``) and gives every later
    request to ``reply``."""
    try:
        while True:
            message = json.loads(await stream.receive())
            if message.get("method") == "initialize":
                result = {"jsonrpc": "2.0", "id": message["id"], "result": opening}
                await stream.send(encode(result))
            elif "id" in message and "method" in message:
                await reply(message, stream)
    except ConnectionClosed:
        pass


async def echo_or(reply: Reply, message: dict[str, Any], stream: MessageStream) -> None:
    """Answer tool ``echo``; give other requests to ``reply``."""
    if message["params"].get("name") == "echo":
        text = message["params"]["arguments"]["text"]
        result = {"content": [{"type": "text", "text": text}]}
        await stream.send(encode({"jsonrpc": "2.0", "id": message["id"], "result": result}))
    else:
        await reply(message, stream)


# -- in memory ------------------------------------------------------------------------------


async def test_an_invalid_result_raises_the_violation_and_the_connection_goes_on() -> None:
    async def reply(message: dict[str, Any], stream: MessageStream) -> None:
        bad = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": "not a list"}}
        await stream.send(encode(bad))

    client_end, server_end = memory_pair()
    violations: list[ProtocolViolation] = []
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(scripted, server_end, lambda m, s: echo_or(reply, m, s))
        async with Client.over(
            client_end, mode="2025-11-25", on_violation=violations.append
        ) as client:
            with pytest.raises(ResponseViolation) as broken:
                await client.call_tool("bad")
            assert broken.value.violation.rule is Rule.INVALID_RESULT
            assert broken.value.violation.path == "$.result.content"
            assert (await client.call_tool("echo", {"text": "on"})).text == "on"
    assert [v.rule for v in violations] == [Rule.INVALID_RESULT]


@pytest.mark.parametrize(
    ("answer", "rule", "path"),
    [
        ({"jsonrpc": None, "result": {"content": []}}, Rule.INVALID_REQUEST, "$.jsonrpc"),
        # What a Python server writes for text holding a lone surrogate: not JSON.
        ({"result": {"content": [{"type": "text", "text": "\udc80"}]}}, Rule.PARSE_ERROR, "$"),
        ({}, Rule.INVALID_REQUEST, "$"),  # neither result nor error
    ],
)
async def test_an_unreadable_answer_raises_the_violation_and_the_connection_goes_on(
    answer: dict[str, Any], rule: Rule, path: str
) -> None:
    async def reply(message: dict[str, Any], stream: MessageStream) -> None:
        await stream.send(encode({"jsonrpc": "2.0", "id": message["id"], **answer}))

    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(scripted, server_end, lambda m, s: echo_or(reply, m, s))
        async with Client.over(client_end, mode="2025-11-25") as client:
            for _ in range(2):
                with anyio.fail_after(GUARD), pytest.raises(ResponseViolation) as broken:
                    await client.call_tool("bad")
                assert broken.value.violation.rule is rule
                assert broken.value.violation.path == path
            assert (await client.call_tool("echo", {"text": "on"})).text == "on"
            assert client.session.outstanding == frozenset()


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_an_unreadable_answer_to_the_opening_request_raises_negotiation_refused(
    mode: str,
) -> None:
    client_end, server_end = memory_pair()

    async def garble() -> None:
        message = json.loads(await server_end.receive())
        await server_end.send(encode({"jsonrpc": "1.0", "id": message["id"], "result": {}}))

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(garble)
        client = Client.over(client_end, mode=mode)
        with anyio.fail_after(GUARD), pytest.raises(NegotiationRefused) as refused:
            await client.__aenter__()
    assert refused.value.event.rule is Rule.INVALID_REQUEST
    assert "$.jsonrpc" in str(refused.value.event.error.data)
    assert client.closed


async def test_an_error_response_raises_request_error() -> None:
    async def reply(message: dict[str, Any], stream: MessageStream) -> None:
        error = {"code": -32000, "message": "busy", "data": {"retry": True}}
        await stream.send(encode({"jsonrpc": "2.0", "id": message["id"], "error": error}))

    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(scripted, server_end, reply)
        async with Client.over(client_end, mode="2025-11-25") as client:
            with pytest.raises(RequestError) as refused:
                await client.call_tool("anything")
    error = refused.value
    assert (error.code, error.message, error.data, error.method) == (
        -32000,
        "busy",
        {"retry": True},
        "tools/call",
    )


async def test_the_stream_ending_fails_every_pending_call_at_once() -> None:
    arrived: list[Any] = []

    async def reply(message: dict[str, Any], stream: MessageStream) -> None:
        arrived.append(message["id"])
        if len(arrived) == 3:
            await stream.aclose()  # the server goes away with three calls pending

    client_end, server_end = memory_pair()
    outcomes: list[BaseException] = []
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(scripted, server_end, reply)
        async with Client.over(client_end, mode="2025-11-25") as client:

            async def call() -> None:
                try:
                    await client.call_tool("wait")
                except ConnectionClosed as exc:
                    outcomes.append(exc)

            with anyio.fail_after(GUARD):
                async with anyio.create_task_group() as calls:
                    for _ in range(3):
                        calls.start_soon(call)
            assert client.closed
            with pytest.raises(ConnectionClosed):
                await client.call_tool("echo", {"text": "x"})
    assert len(outcomes) == 3


def _big_echo(size: int) -> Reply:
    """Answer ``echo`` with its text, anything else with a text of ``size`` bytes."""

    async def reply(message: dict[str, Any], stream: MessageStream) -> None:
        arguments = message["params"].get("arguments") or {}
        text = arguments.get("text") or "x" * size
        result = {"content": [{"type": "text", "text": text}]}
        await stream.send(encode({"jsonrpc": "2.0", "id": message["id"], "result": result}))

    return reply


async def test_an_answer_over_the_limits_ends_its_call_and_the_connection_goes_on() -> None:
    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(scripted, server_end, _big_echo(5000))
        limits = Limits(max_message_bytes=2048)
        async with Client.over(client_end, mode="2025-11-25", limits=limits) as client:
            with anyio.fail_after(GUARD):
                with pytest.raises(ResponseViolation, match="max_message_bytes=2048") as caught:
                    await client.call_tool("big")
            assert caught.value.violation.rule is Rule.LIMIT_EXCEEDED
            assert (await client.call_tool("echo", {"text": "small"})).text == "small"
            assert client.session.outstanding == frozenset()
        task_group.cancel_scope.cancel()


async def test_an_answer_over_the_streams_limit_ends_its_call_and_the_connection_goes_on() -> None:
    to_server, server_reads = memory_byte_pipe()
    server_writes, from_server = memory_byte_pipe()
    client_end = NewlineFramedStream(from_server, to_server, max_message_size=2048)
    server_end = NewlineFramedStream(server_reads, server_writes)
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(scripted, server_end, _big_echo(5000))
        async with Client.over(client_end, mode="2025-11-25") as client:
            with anyio.fail_after(GUARD):
                with pytest.raises(ResponseViolation, match="stream's limit of 2048"):
                    await client.call_tool("big")
            assert (await client.call_tool("echo", {"text": "small"})).text == "small"
        task_group.cancel_scope.cancel()


async def test_an_initialize_answer_over_the_limits_fails_negotiation() -> None:
    async def serve(stream: MessageStream) -> None:
        message = json.loads(await stream.receive())
        result = {**INITIALIZE_RESULT, "instructions": "i" * 5000}
        await stream.send(encode({"jsonrpc": "2.0", "id": message["id"], "result": result}))
        with contextlib.suppress(ConnectionClosed):
            await stream.receive()

    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(serve, server_end)
        limits = Limits(max_message_bytes=2048)
        with anyio.fail_after(GUARD), pytest.raises(NegotiationRefused) as refused:
            async with Client.over(client_end, mode="2025-11-25", limits=limits):
                pass
        assert refused.value.event.rule is Rule.LIMIT_EXCEEDED
        task_group.cancel_scope.cancel()


async def test_a_line_that_is_not_json_rpc_is_reported_and_the_connection_goes_on() -> None:
    to_server, server_reads = memory_byte_pipe()
    server_writes, from_server = memory_byte_pipe()
    client_end = NewlineFramedStream(from_server, to_server)
    server_end = NewlineFramedStream(server_reads, server_writes)
    violations: list[ProtocolViolation] = []

    async def serve() -> None:
        while True:
            try:
                message = json.loads(await server_end.receive())
            except ConnectionClosed:
                return
            if message.get("method") == "initialize":
                result = {"jsonrpc": "2.0", "id": message["id"], "result": INITIALIZE_RESULT}
                await server_end.send(encode(result))
            elif message.get("method") == "tools/call":
                await server_end.send(b"Traceback (most recent call last): not JSON-RPC")
                await server_end.send(b'{"jsonrpc": "2.0", "method": 5}')
                result = {"content": [{"type": "text", "text": "fine"}]}
                await server_end.send(
                    encode({"jsonrpc": "2.0", "id": message["id"], "result": result})
                )

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(serve)
        async with Client.over(
            client_end, mode="2025-11-25", on_violation=violations.append
        ) as client:
            assert (await client.call_tool("anything")).text == "fine"
    assert [v.rule for v in violations] == [Rule.PARSE_ERROR, Rule.INVALID_REQUEST]


async def test_a_refused_initialize_raises_negotiation_refused() -> None:
    client_end, server_end = memory_pair()

    async def refuse() -> None:
        message = json.loads(await server_end.receive())
        error = {"code": -32602, "message": "Unsupported protocol version"}
        await server_end.send(encode({"jsonrpc": "2.0", "id": message["id"], "error": error}))

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(refuse)
        client = Client.over(client_end, mode="legacy")
        with pytest.raises(NegotiationRefused) as refused:
            await client.__aenter__()
    assert refused.value.event.error.code == -32602
    assert client.closed


async def test_a_client_pinned_to_2026_is_refused_by_a_handshake_server() -> None:
    server = Server("old", revisions=["2025-11-25"])
    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(server.serve, server_end)
        with pytest.raises(NegotiationRefused) as refused:
            async with Client.over(client_end, mode="2026-07-28"):
                pass
    assert refused.value.event.rule is Rule.METHOD_NOT_FOUND


async def test_a_silent_server_times_negotiation_out() -> None:
    client_end, _server_end = memory_pair()
    with pytest.raises(TimeoutError):
        async with Client.over(client_end, mode="2025-11-25", open_timeout=0.01):
            pass


async def test_a_repeated_cursor_ends_pagination_with_a_violation() -> None:
    async def reply(message: dict[str, Any], stream: MessageStream) -> None:
        result = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}], "nextCursor": "c"}
        await stream.send(encode({"jsonrpc": "2.0", "id": message["id"], "result": result}))

    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(scripted, server_end, reply)
        async with Client.over(client_end, mode="2025-11-25") as client:
            with pytest.raises(ResponseViolation, match="repeated cursor 'c'"):
                await client.list_tools()
            pages = client.tool_pages()
            assert [t.name for t in (await anext(pages)).tools] == ["t"]
            await pages.aclose()  # stopping early is fine


async def test_a_fresh_cursor_on_every_page_ends_listing_after_the_page_limit() -> None:
    served: list[int] = []

    async def reply(message: dict[str, Any], stream: MessageStream) -> None:
        served.append(message["id"])
        page = len(served)
        result = {
            "tools": [{"name": f"t{page}", "inputSchema": {"type": "object"}}],
            "nextCursor": f"c{page}",
        }
        await stream.send(encode({"jsonrpc": "2.0", "id": message["id"], "result": result}))

    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(scripted, server_end, reply)
        async with Client.over(client_end, mode="2025-11-25") as client:
            with pytest.raises(ListingTooLong, match=f"more than {MAX_LISTED_PAGES} pages"):
                await client.list_tools()
            assert len(served) == MAX_LISTED_PAGES
            # Page by page, the caller decides (here: a limit of its own).
            with pytest.raises(ResponseViolation, match="more than 3 pages listing tools"):
                async for _ in client.tool_pages(max_pages=3):
                    pass
            assert len(served) == MAX_LISTED_PAGES + 3
        task_group.cancel_scope.cancel()


#: The member of each listing's result that holds its items.
LISTED = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
}


@pytest.mark.parametrize(
    "listing", ["list_tools", "list_resources", "list_resource_templates", "list_prompts"]
)
async def test_a_listing_timeout_bounds_the_whole_listing(listing: str) -> None:
    """A server minting a fresh cursor on every page, each page quick enough for the
    timeout: the timeout bounds the listing, not each page (1000 pages of 10 ms would
    run for 10 s and more)."""
    served: list[int] = []

    async def reply(message: dict[str, Any], stream: MessageStream) -> None:
        served.append(message["id"])
        await anyio.sleep(0.01)
        result = {LISTED[message["method"]]: [], "nextCursor": f"c{len(served)}"}
        await stream.send(encode({"jsonrpc": "2.0", "id": message["id"], "result": result}))

    listing_all = {"tools": {}, "resources": {}, "prompts": {}}
    opening = {**INITIALIZE_RESULT, "capabilities": listing_all}
    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(scripted, server_end, reply, opening)
        async with Client.over(client_end, mode="2025-11-25") as client:
            with anyio.fail_after(5), pytest.raises(RequestTimeout) as timed_out:
                await getattr(client, listing)(timeout=0.2)
            assert timed_out.value.timeout == 0.2
            assert 0 < len(served) < MAX_LISTED_PAGES
            assert client.session.outstanding == frozenset()
        task_group.cancel_scope.cancel()


async def test_a_listing_holds_a_bounded_number_of_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pages of large tools under fresh cursors: the listing ends once what it would
    hold passes the bound, with a typed error, instead of holding every page."""
    monkeypatch.setattr(client_module, "MAX_LISTED_BYTES", 10_000)
    served: list[int] = []

    async def reply(message: dict[str, Any], stream: MessageStream) -> None:
        served.append(message["id"])
        tool = {"name": f"t{len(served)}", "description": "x" * 3000}
        tool["inputSchema"] = {"type": "object"}
        result = {"tools": [tool], "nextCursor": f"c{len(served)}"}
        await stream.send(encode({"jsonrpc": "2.0", "id": message["id"], "result": result}))

    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(scripted, server_end, reply)
        async with Client.over(client_end, mode="2025-11-25") as client:
            with anyio.fail_after(GUARD), pytest.raises(ListingTooLong, match="10000 bytes"):
                await client.list_tools()
            assert len(served) == 4  # the fourth page passes 10,000 bytes
            # Read page by page, the caller holds what it keeps.
            pages = client.tool_pages()
            for _ in range(6):
                assert len((await anext(pages)).tools) == 1
            await pages.aclose()
        task_group.cancel_scope.cancel()


async def test_a_request_timeout_bounds_the_input_rounds_too() -> None:
    """A 2026-07-28 request whose server asks for input: the timeout bounds the whole
    call, the client's own handler answering included."""
    server = Server("curious")

    @server.handler("tools/call")
    async def call(request: Any, ctx: RequestContext) -> Any:
        await ctx.elicit(message="more?", requested_schema={"properties": {}})
        return {"content": []}

    async def answer(params: Any, ctx: ServerRequestContext) -> Any:
        await anyio.sleep_forever()

    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(server.serve, server_end)
        async with Client.over(client_end, mode="2026-07-28", elicitation=answer) as client:
            with anyio.fail_after(5), pytest.raises(RequestTimeout) as timed_out:
                await client.call_tool("ask", timeout=0.2)
            assert timed_out.value.timeout == 0.2
        task_group.cancel_scope.cancel()


async def test_endless_input_rounds_end() -> None:
    server = Server("curious")
    rounds: list[str] = []

    @server.handler("tools/call")
    async def call(request: Any, ctx: RequestContext) -> Any:
        while True:  # never satisfied
            await ctx.elicit(message="more?", requested_schema={"properties": {}})

    async def answer(params: Any, ctx: ServerRequestContext) -> Any:
        rounds.append(str(ctx.input_key))
        return {"action": "decline"}

    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(server.serve, server_end)
        async with Client.over(client_end, mode="2026-07-28", elicitation=answer) as client:
            with pytest.raises(InputRoundsExceeded):
                await client.call_tool("ask")
            assert client.session.outstanding == frozenset()
    assert len(rounds) == MAX_INPUT_ROUNDS


# -- a real server process ------------------------------------------------------------------------


def faulty(*behaviours: str, **options: Any) -> Client:
    options.setdefault("mode", "2025-11-25")
    options.setdefault("stderr", "capture")
    return Client.stdio(sys.executable, [str(FAULTY), *behaviours], **options)


@pytest.mark.parametrize("how", ["exits", "is killed"])
async def test_a_server_that_dies_mid_request_fails_every_pending_call(how: str) -> None:
    outcomes: list[BaseException] = []
    with anyio.fail_after(GUARD):
        async with faulty() as client:
            call = closing_call(client, outcomes)
            async with anyio.create_task_group() as calls:
                for _ in range(3):
                    calls.start_soon(call, "wait")
                await anyio.wait_all_tasks_blocked()
                if how == "exits":
                    calls.start_soon(call, "exit")
                else:
                    client.transport.process.kill()
            assert client.closed
    assert len(outcomes) == (4 if how == "exits" else 3)
    expected = 3 if how == "exits" else -signal.SIGKILL
    assert client.transport.returncode == expected


async def test_a_line_on_stdout_that_is_not_json_rpc_is_reported() -> None:
    violations: list[ProtocolViolation] = []
    with anyio.fail_after(GUARD):
        async with faulty(on_violation=violations.append) as client:
            assert (await client.call_tool("garbage")).text == "garbage"
            assert (await client.call_tool("echo", {"text": "on"})).text == "on"
    assert [v.rule for v in violations] == [Rule.PARSE_ERROR]


async def test_an_oversized_line_is_refused_and_the_connection_goes_on() -> None:
    violations: list[ProtocolViolation] = []
    logs: list[Any] = []
    with anyio.fail_after(GUARD):
        async with faulty(
            on_violation=violations.append, on_log=logs.append, max_message_size=1_000_000
        ) as client:
            assert (await client.call_tool("huge")).text == "huge"
            assert (await client.call_tool("echo", {"text": "on"})).text == "on"
    assert [v.rule for v in violations] == [Rule.LIMIT_EXCEEDED]
    assert "1000000" in violations[0].reason and logs == []


@pytest.mark.parametrize(
    ("behaviour", "returncode"),
    [(None, 0), ("stay", -signal.SIGTERM), ("stay-hard", -signal.SIGKILL)],
)
async def test_closing_closes_stdin_then_terminates_then_kills(
    behaviour: str | None, returncode: int
) -> None:
    behaviours = () if behaviour is None else (behaviour,)
    with anyio.fail_after(GUARD):
        async with faulty(*behaviours, grace=0.2, mode="auto") as client:
            assert client.revision == "2025-11-25"  # auto: -32601 to the probe, then initialize
            assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
    assert client.transport.returncode == returncode
    assert b"faulty server up" in client.transport.stderr


async def test_stderr_lines_can_go_to_a_callable() -> None:
    lines: list[bytes] = []
    with anyio.fail_after(GUARD):
        async with faulty(stderr=lines.append) as client:
            await client.call_tool("echo", {"text": "hi"})
    assert lines == [b"faulty server up"]


async def test_a_request_right_after_initialized_is_answered() -> None:
    client_end, server_end = memory_pair()
    answered: list[Any] = []
    done = anyio.Event()

    async def serve() -> None:
        while True:
            message = json.loads(await server_end.receive())
            if message.get("method") == "initialize":
                result = dict(INITIALIZE_RESULT, capabilities={})
                await server_end.send(
                    encode({"jsonrpc": "2.0", "id": message["id"], "result": result})
                )
            elif message.get("method") == "notifications/initialized":
                # Ask at once: the client may not have returned from negotiation yet.
                await server_end.send(
                    encode({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"})
                )
                answered.append(json.loads(await server_end.receive()))
                done.set()
                return

    async def roots(params: Any, ctx: ServerRequestContext) -> Any:
        assert params is None and ctx.request_id == "r1" and ctx.revision == "2025-11-25"
        return {"roots": [{"uri": "file:///r"}]}

    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(serve)
            async with Client.over(client_end, mode="2025-11-25", roots=roots):
                await done.wait()
    assert answered == [{"jsonrpc": "2.0", "id": "r1", "result": {"roots": [{"uri": "file:///r"}]}}]
