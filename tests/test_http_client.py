"""The HTTP client (``Client.http``, ``HttpClientStream``) against scripted HTTP servers and
against this project's own ASGI app, served by uvicorn in this process on a port the OS
picks: the headers each era requires, session expiry, error bodies that are not JSON-RPC,
the ``server/discover`` probe refused with id null, resuming a response stream with
``Last-Event-ID``, hostile and oversized answers, the standalone ``GET`` stream, the
fallback to HTTP+SSE, ``DELETE`` on close, and 2026-07-28 cancellation by closing the
response stream, ``x-mcp-header`` tools and ``subscriptions/listen``."""

from __future__ import annotations

import inspect
import json
import logging
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import httpx2
import msgspec
import pytest
from starlette.responses import JSONResponse, Response, StreamingResponse

from mcpspec.runtime import ProtocolViolation, Rule
from mcpspec.runtime.connection import (
    Client,
    ConnectionClosed,
    MessageStream,
    NegotiationRefused,
    RequestError,
    RequestTimeout,
    ResponseViolation,
    Server,
    Tool,
)
from mcpspec.runtime.connection.context import RequestContext
from mcpspec.runtime.connection.http import http_app
from mcpspec.runtime.connection.http.client import HttpClientStream
from mcpspec.runtime.connection.http.client_legacy import LegacySseTransport
from mcpspec.runtime.connection.http.client_link import ClientLink, HttpClientTransport
from mcpspec.runtime.connection.http.client_stateless import StatelessHttpTransport
from mcpspec.runtime.connection.http.client_streamable import StreamableHttpTransport
from mcpspec.runtime.connection.http.client_tools import ToolHeaderMemory
from mcpspec.runtime.connection.http.sse_decoder import SseDecoder, SseEvent
from tests.connection_kit import Probe, demo_server
from tests.http_client_kit import (
    GUARD,
    Handler,
    LegacyServer,
    Scripted,
    Seen,
    breaking_stream,
    error,
    initialize_result,
    result,
    serving,
    sse,
    sse_message,
    tool_text,
)

pytestmark = pytest.mark.anyio

HANDSHAKE = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODES = ("auto", "legacy", "2026-07-28", *HANDSHAKE)
EXPECTED = {"auto": "2026-07-28", "legacy": "2025-11-25", **{m: m for m in MODES[2:]}}


#: uvicorn serves on asyncio.
ANYIO_BACKENDS = ("asyncio",)


# -- a scripted server ------------------------------------------------------------------------


# -- headers, sessions, DELETE --------------------------------------------------------------


async def test_headers_of_each_message_and_delete_on_close() -> None:
    scripted = Scripted()
    async with serving(scripted.app()) as base:
        client = Client.http(
            f"{base}/mcp",
            mode="2025-11-25",
            headers={"Authorization": "Bearer t", "Accept": "text/html", "Mcp-Session-Id": "x"},
        )
        async with client:
            assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
            stream = client.transport
            assert isinstance(stream, HttpClientStream)
            assert stream.session_id == "s1" and stream.transport == "streamable"
        with anyio.fail_after(GUARD):
            await scripted.deleted.wait()
    (initialize,) = scripted.posted("initialize")
    assert initialize.headers["accept"] == "application/json, text/event-stream"
    assert initialize.headers["content-type"] == "application/json"
    assert initialize.headers["authorization"] == "Bearer t"
    assert "mcp-session-id" not in initialize.headers
    assert "mcp-protocol-version" not in initialize.headers
    for later in (*scripted.posted("notifications/initialized"), *scripted.posted("tools/call")):
        assert later.headers["mcp-session-id"] == "s1"
        assert later.headers["mcp-protocol-version"] == "2025-11-25"
        assert later.headers["accept"] == "application/json, text/event-stream"
    (delete,) = [s for s in scripted.seen if s.method == "DELETE"]
    assert delete.headers["mcp-session-id"] == "s1"


async def test_no_protocol_version_header_before_2025_06_18() -> None:
    scripted = Scripted(version="2025-03-26")
    async with (
        serving(scripted.app()) as base,
        Client.http(f"{base}/mcp", mode="2025-03-26") as client,
    ):
        await client.call_tool("echo", {"text": "x"})
    (call,) = scripted.posted("tools/call")
    assert "mcp-protocol-version" not in call.headers
    assert call.headers["mcp-session-id"] == "s1"


def initialize_answered(version: str, session_id: str) -> Handler:
    """A scripted handler that answers ``initialize`` with ``version`` and mints
    ``session_id``."""

    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "initialize":
            answer = result(seen.body, initialize_result(version))
            return JSONResponse(answer, headers={"Mcp-Session-Id": session_id})
        return None

    return handle


async def test_an_invalid_session_id_is_not_sent_back() -> None:
    scripted = Scripted(initialize_answered("2025-11-25", "has space"))
    async with (
        serving(scripted.app()) as base,
        Client.http(f"{base}/mcp", mode="2025-11-25") as client,
    ):
        await client.call_tool("echo", {"text": "x"})
        assert client.transport.session_id is None
    assert all("mcp-session-id" not in s.headers for s in scripted.seen)
    assert not [s for s in scripted.seen if s.method == "DELETE"]


async def test_a_session_the_server_ends_is_renewed() -> None:
    minted = iter(["s1", "s2"])
    live: set[str] = set()

    async def handle(seen: Seen) -> Response | None:
        session = seen.headers.get("mcp-session-id")
        if seen.rpc == "initialize":
            session = next(minted)
            live.add(session)
            answer = result(seen.body, initialize_result("2025-11-25"))
            return JSONResponse(answer, headers={"Mcp-Session-Id": session})
        if seen.method == "POST" and session not in live:
            return Response(status_code=404)
        if seen.rpc == "tools/call" and seen.body["params"]["arguments"]["text"] == "end":
            live.discard(session)  # the server ends the session, then answers 404
            return Response(status_code=404)
        return None

    scripted = Scripted(handle)
    async with serving(scripted.app()) as base:
        async with Client.http(f"{base}/mcp", mode="2025-11-25") as client:
            assert (await client.call_tool("echo", {"text": "a"})).text == "a"
            with pytest.raises(RequestError):
                # Posted in the new session too, where this text ends it again.
                await client.call_tool("echo", {"text": "end"})
        assert client.closed
    first, second = scripted.posted("initialize")
    assert "mcp-session-id" not in second.headers
    assert second.body["params"] == first.body["params"]
    assert [s.headers["mcp-session-id"] for s in scripted.posted("notifications/initialized")] == [
        "s1",
        "s2",
    ]
    calls = [
        (s.headers["mcp-session-id"], s.body["params"]["arguments"]["text"])
        for s in scripted.posted("tools/call")
    ]
    assert calls == [("s1", "a"), ("s1", "end"), ("s2", "end")]


@pytest.mark.parametrize("media", ["application/json", "text/event-stream"])
async def test_a_request_goes_on_in_the_renewed_session(media: str) -> None:
    minted = iter(["s1", "s2"])

    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "initialize":
            answer = result(seen.body, initialize_result("2025-11-25"))
            headers = {"Mcp-Session-Id": next(minted)}
            if media == "application/json":
                return JSONResponse(answer, headers=headers)
            note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {}}
            body = sse("id: p\ndata:\n\n", sse_message(note), sse_message(answer))
            return Response(body, media_type=media, headers=headers)
        if seen.rpc == "tools/call" and seen.headers.get("mcp-session-id") == "s1":
            return Response(status_code=404)  # s1 ended after initialization
        return None

    scripted = Scripted(handle)
    async with serving(scripted.app()) as base:
        async with Client.http(f"{base}/mcp", mode="2025-11-25") as client:
            assert (await client.call_tool("echo", {"text": "x"})).text == "x"
            assert client.transport.session_id == "s2"
            assert (await client.call_tool("echo", {"text": "y"})).text == "y"
        with anyio.fail_after(GUARD):
            await scripted.deleted.wait()
    (delete,) = [s for s in scripted.seen if s.method == "DELETE"]
    assert delete.headers["mcp-session-id"] == "s2"


@pytest.mark.parametrize("renew", [True, False])
async def test_a_session_that_stays_gone_expires(renew: bool) -> None:
    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call":
            return Response(status_code=404)
        return None

    scripted = Scripted(handle)
    async with (
        serving(scripted.app()) as base,
        Client.http(f"{base}/mcp", mode="2025-11-25", renew_sessions=renew) as client,
    ):
        with pytest.raises(RequestError) as raised:
            await client.call_tool("echo", {"text": "x"})
        assert raised.value.error.message.startswith("Session expired")
        assert raised.value.error.data == {"status": 404}
        assert client.transport.session_expired
        with pytest.raises(ConnectionClosed):
            await client.call_tool("echo", {"text": "y"})
    assert not [s for s in scripted.seen if s.method == "DELETE"]
    assert len(scripted.posted("tools/call")) == (2 if renew else 1)
    assert len(scripted.posted("initialize")) == (2 if renew else 1)


# -- error answers ----------------------------------------------------------------------------


async def test_an_error_status_without_json_rpc_fails_the_request() -> None:
    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call" and seen.body["params"]["arguments"]["text"] == "x":
            page = "<html>" + "boom " * 1000 + "</html>"
            return Response(page, status_code=502, media_type="text/html")
        return None

    async with (
        serving(Scripted(handle).app()) as base,
        Client.http(f"{base}/mcp", mode="2025-11-25") as client,
    ):
        with pytest.raises(RequestError) as raised:
            await client.call_tool("echo", {"text": "x"})
        error_object = raised.value.error
        assert error_object.code == -32000
        assert error_object.message == "HTTP 502 Bad Gateway"
        assert error_object.data["status"] == 502
        assert error_object.data["body"].startswith("<html>boom")
        assert len(error_object.data["body"]) <= 512
        # The connection goes on.
        assert (await client.call_tool("echo", {"text": "ok"})).text == "ok"


async def test_an_error_status_with_json_rpc_is_that_error() -> None:
    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call":
            answer = {"jsonrpc": "2.0", "error": {"code": -32602, "message": "bad name"}}
            return JSONResponse(answer, status_code=400)
        return None

    async with (
        serving(Scripted(handle).app()) as base,
        Client.http(f"{base}/mcp", mode="2025-11-25") as client,
    ):
        with pytest.raises(RequestError) as raised:
            await client.call_tool("echo", {"text": "x"})
        assert raised.value.error.code == -32602
        assert raised.value.error.message == "bad name"


@pytest.mark.parametrize("media", ["application/json", "text/event-stream"])
async def test_an_error_with_id_null_in_a_200_answer_is_that_error(media: str) -> None:
    # The server could not read the id of the one request the POST carried: its error
    # is the call's, rather than a made-up "no answer" and a stray id-null error.
    async def handle(seen: Seen) -> Response | None:
        if seen.rpc != "tools/call" or seen.body["params"]["arguments"]["text"] != "x":
            return None
        answer = error(None, -32700, "Parse error")
        if media == "application/json":
            return JSONResponse(answer)
        return Response(sse(sse_message(answer)), media_type=media)

    violations: list[ProtocolViolation] = []
    async with (
        serving(Scripted(handle).app()) as base,
        Client.http(f"{base}/mcp", mode="2025-11-25", on_violation=violations.append) as client,
    ):
        with anyio.fail_after(GUARD), pytest.raises(RequestError) as raised:
            await client.call_tool("echo", {"text": "x"})
        assert (raised.value.error.code, raised.value.error.message) == (-32700, "Parse error")
        assert (await client.call_tool("echo", {"text": "ok"})).text == "ok"
    assert violations == []


async def test_the_probe_refused_with_id_null_falls_back_to_initialize() -> None:
    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "server/discover":
            refusal = error(None, -32000, "Server not initialized")
            return JSONResponse(refusal, status_code=400)
        return None

    scripted = Scripted(handle)
    async with (
        serving(scripted.app()) as base,
        Client.http(f"{base}/mcp", open_timeout=GUARD) as client,
    ):
        assert client.revision == "2025-11-25"
        assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
    posts = [s.rpc for s in scripted.seen if s.method == "POST"]
    assert posts[:3] == ["server/discover", "initialize", "notifications/initialized"]
    (probe,) = scripted.posted("server/discover")
    assert probe.headers["mcp-protocol-version"] == "2026-07-28"
    assert probe.headers["mcp-method"] == "server/discover"
    (initialize,) = scripted.posted("initialize")
    assert "mcp-protocol-version" not in initialize.headers
    assert "mcp-method" not in initialize.headers
    (call,) = scripted.posted("tools/call")
    assert call.headers["mcp-protocol-version"] == "2025-11-25"
    assert "mcp-method" not in call.headers


async def test_the_probe_refused_with_an_empty_404_falls_back_to_initialize() -> None:
    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "server/discover":
            return Response(status_code=404)
        return None

    async with (
        serving(Scripted(handle).app()) as base,
        Client.http(f"{base}/mcp", open_timeout=GUARD) as client,
    ):
        assert client.revision == "2025-11-25"


async def test_a_transport_failure_fails_negotiation_instead_of_hanging() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there
    with pytest.raises(NegotiationRefused) as raised:
        async with Client.http(f"http://127.0.0.1:{port}/mcp", mode="legacy"):
            pass
    assert "HTTP request failed" in str(raised.value)


# -- SSE answers ------------------------------------------------------------------------------


async def test_a_response_stream_cut_short_resumes_with_last_event_id() -> None:
    # The connection breaks mid-stream (the server, or the worker behind a balancer,
    # died): the events read are kept, and the rest comes from the resumed stream.
    async def cut_short(first: bytes) -> AsyncIterator[bytes]:
        yield first
        raise RuntimeError("the worker died")

    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call":
            token = seen.body["params"]["_meta"]["progressToken"]
            progress = {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 1, "total": 2},
            }
            first = sse_message(progress, "w1-1.1").encode()
            return StreamingResponse(cut_short(first), media_type="text/event-stream")
        if seen.method == "GET" and seen.headers.get("last-event-id") == "w1-1.1":
            (call,) = scripted.posted("tools/call")
            body = sse_message(tool_text(call.body, "resumed elsewhere"), "w1-1.2")
            return Response(body.encode(), media_type="text/event-stream")
        return None

    scripted = Scripted(handle)
    async with (
        serving(scripted.app()) as base,
        Client.http(f"{base}/mcp", mode="2025-11-25") as client,
    ):
        seen: list[Any] = []
        answer = await client.call_tool("echo", {"text": "x"}, progress=seen.append)
        assert answer.text == "resumed elsewhere"
        assert [event.progress for event in seen] == [1]


async def test_an_sse_answer_with_notifications_first() -> None:
    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call":
            token = seen.body["params"]["_meta"]["progressToken"]
            progress = {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 1, "total": 2},
            }
            body = sse(
                ": keep-alive\n\n",
                sse_message(progress),
                sse_message(tool_text(seen.body, "streamed")),
            )
            return Response(body, media_type="text/event-stream")
        return None

    async with (
        serving(Scripted(handle).app()) as base,
        Client.http(f"{base}/mcp", mode="2025-11-25") as client,
    ):
        seen: list[Any] = []
        answer = await client.call_tool("echo", {"text": "x"}, progress=seen.append)
        assert answer.text == "streamed"
        assert [event.progress for event in seen] == [1]


async def test_a_broken_response_stream_resumes_with_last_event_id() -> None:
    scripted = breaking_stream()
    async with (
        serving(scripted.app()) as base,
        Client.http(f"{base}/mcp", mode="2025-11-25") as client,
    ):
        assert (await client.call_tool("echo", {"text": "x"})).text == "resumed"
    (resumed,) = [s for s in scripted.seen if s.headers.get("last-event-id") == "e1"]
    assert resumed.method == "GET"
    assert resumed.headers["accept"] == "text/event-stream"
    assert resumed.headers["mcp-session-id"] == "s1"


async def test_a_stream_that_ends_unanswered_without_event_ids_fails_the_request() -> None:
    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call":
            return Response(sse(": nothing\n\n"), media_type="text/event-stream")
        return None

    async with (
        serving(Scripted(handle).app()) as base,
        Client.http(f"{base}/mcp", mode="2025-11-25") as client,
    ):
        with pytest.raises(RequestError) as raised:
            await client.call_tool("echo", {"text": "x"})
        assert raised.value.error.message == "the response stream ended without an answer"


@pytest.mark.parametrize("media", ["application/json", "text/event-stream"])
async def test_an_answer_that_is_not_json_ends_its_call_once(media: str) -> None:
    # What a Python server's json writes for text holding a lone surrogate: not JSON,
    # but the answer all the same; the call ends with it, and nothing else is made up.
    async def handle(seen: Seen) -> Response | None:
        if seen.rpc != "tools/call" or seen.body["params"]["arguments"]["text"] != "bad":
            return None
        answer = json.dumps(tool_text(seen.body, "\udc80"))
        body = answer if media == "application/json" else f"event: message\ndata: {answer}\n\n"
        return Response(body.encode(), media_type=media)

    violations: list[ProtocolViolation] = []
    async with (
        serving(Scripted(handle).app()) as base,
        Client.http(f"{base}/mcp", mode="2025-11-25", on_violation=violations.append) as client,
    ):
        with pytest.raises(ResponseViolation) as raised:
            await client.call_tool("echo", {"text": "bad"})
        assert raised.value.violation.rule is Rule.PARSE_ERROR
        assert (await client.call_tool("echo", {"text": "ok"})).text == "ok"
    assert [v.rule for v in violations] == [Rule.PARSE_ERROR]


async def test_an_answer_whose_id_is_true_answers_nothing() -> None:
    # true equals 1 in Python, but it is no request id: the probe (id 1) is not answered
    # by it, so the client makes up its error and falls back to initialize.
    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "server/discover":
            assert seen.body["id"] == 1
            return JSONResponse({"jsonrpc": "2.0", "id": True, "result": {}})
        return None

    violations: list[ProtocolViolation] = []
    with anyio.fail_after(20):  # a hang guard, never a timed assertion
        async with (
            serving(Scripted(handle).app()) as base,
            Client.http(f"{base}/mcp", mode="auto", on_violation=violations.append) as client,
        ):
            assert client.revision == "2025-11-25"
            assert (await client.call_tool("echo", {"text": "ok"})).text == "ok"
    assert [(v.rule, v.path) for v in violations] == [(Rule.INVALID_REQUEST, "$.id")]


async def test_oversized_answers_fail_their_request_and_the_connection_goes_on() -> None:
    async def handle(seen: Seen) -> Response | None:
        if seen.rpc != "tools/call":
            return None
        text = seen.body["params"]["arguments"]["text"]
        if text == "json":
            return JSONResponse(tool_text(seen.body, "x" * 5000))
        if text == "event":
            big = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"x": "y" * 5000}}
            body = sse(sse_message(big), sse_message(tool_text(seen.body, "after")))
            return Response(body, media_type="text/event-stream")
        if text == "line":
            # A line that never ends.
            return Response(b"data: " + b"z" * 100_000, media_type="text/event-stream")
        return None

    async with serving(Scripted(handle).app()) as base:
        client = Client.http(f"{base}/mcp", mode="2025-11-25", max_message_size=1000)
        async with client:
            with pytest.raises(RequestError) as raised:
                await client.call_tool("echo", {"text": "json"})
            assert "over the limit of 1000" in raised.value.error.message
            assert (await client.call_tool("echo", {"text": "event"})).text == "after"
            with pytest.raises(RequestError) as raised:
                await client.call_tool("echo", {"text": "line"})
            assert "over the limit" in raised.value.error.message
            assert (await client.call_tool("echo", {"text": "fine"})).text == "fine"


async def test_the_standalone_get_stream_brings_server_notifications() -> None:
    got = anyio.Event()
    notes: list[Any] = []

    async def handle(seen: Seen) -> Response | None:
        if seen.method == "GET":
            changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}

            async def events() -> AsyncIterator[bytes]:
                yield sse_message(changed, "g1").encode()
                await anyio.sleep_forever()

            return StreamingResponse(events(), media_type="text/event-stream")
        return None

    def on_notification(note: Any) -> None:
        notes.append(note)
        got.set()

    scripted = Scripted(handle)
    async with serving(scripted.app()) as base:
        client = Client.http(f"{base}/mcp", mode="2025-11-25", on_notification=on_notification)
        async with client:
            with anyio.fail_after(GUARD):
                await got.wait()
    assert notes[0].method == "notifications/tools/list_changed"
    (listen,) = [s for s in scripted.seen if s.method == "GET"]
    assert listen.headers["accept"] == "text/event-stream"
    assert listen.headers["mcp-session-id"] == "s1"
    assert "last-event-id" not in listen.headers


async def test_the_standalone_get_stream_is_open_before_the_first_request() -> None:
    # A server may answer a request on the standalone stream once that stream is open
    # (the conformance suite's sse-retry scenario does): so the client opens it before
    # it goes on, even when the server is slow to answer the GET.
    order: list[str] = []

    async def handle(seen: Seen) -> Response | None:
        if seen.method == "GET":
            await anyio.sleep(0.3)

            async def events() -> AsyncIterator[bytes]:
                yield b": open\n\n"
                await anyio.sleep_forever()

            order.append("GET answered")
            return StreamingResponse(events(), media_type="text/event-stream")
        if seen.rpc == "tools/call":
            order.append("tools/call")
        return None

    await echo_through(Scripted(handle), "x")
    assert order == ["GET answered", "tools/call"]


async def test_a_get_never_answered_holds_the_client_back_only_a_while(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mcpspec.runtime.connection.http import client_streamable

    monkeypatch.setattr(client_streamable, "STANDALONE_WAIT", 0.2)

    async def handle(seen: Seen) -> Response | None:
        if seen.method == "GET":
            await anyio.sleep_forever()
        return None

    scripted = Scripted(handle)
    assert await echo_through(scripted, "still here") == "still here"
    assert [s.method for s in scripted.seen].count("GET") == 1


async def echo_through(scripted: Scripted, text: str) -> str:
    """Connect to ``scripted`` (2025-11-25) and call its ``echo`` tool once."""
    async with (
        serving(scripted.app()) as base,
        Client.http(f"{base}/mcp", mode="2025-11-25") as client,
    ):
        with anyio.fail_after(GUARD):
            answer = await client.call_tool("echo", {"text": text})
    echoed: str = answer.content[0].text
    return echoed


async def test_the_standalone_get_stream_reconnects_with_last_event_id() -> None:
    got = anyio.Event()
    notes: list[Any] = []

    async def handle(seen: Seen) -> Response | None:
        if seen.method != "GET":
            return None
        if "last-event-id" not in seen.headers:
            # One event, a retry of 1 ms, and the connection closes.
            first = {"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}
            body = sse(sse_message(first, "g1"), "retry: 1\n\n")
            return Response(body, media_type="text/event-stream")
        second = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}

        async def events() -> AsyncIterator[bytes]:
            yield sse_message(second, "g2").encode()
            await anyio.sleep_forever()

        return StreamingResponse(events(), media_type="text/event-stream")

    def on_notification(note: Any) -> None:
        notes.append(note.method)
        if len(notes) == 2:
            got.set()

    scripted = Scripted(handle)
    async with serving(scripted.app()) as base:
        client = Client.http(f"{base}/mcp", mode="2025-11-25", on_notification=on_notification)
        async with client:
            with anyio.fail_after(GUARD):
                await got.wait()
    assert notes == ["notifications/prompts/list_changed", "notifications/tools/list_changed"]
    first, second = [s for s in scripted.seen if s.method == "GET"]
    assert "last-event-id" not in first.headers
    assert second.headers["last-event-id"] == "g1"


# -- HTTP+SSE (2024-11-05) --------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/mcp", "/sse"])
@pytest.mark.parametrize("mode", ["auto", "legacy", "2024-11-05"])
async def test_fallback_to_http_sse(path: str, mode: str) -> None:
    legacy = LegacyServer()
    async with (
        serving(legacy.app()) as base,
        Client.http(base + path, mode=mode, open_timeout=GUARD) as client,
    ):
        assert client.revision == "2024-11-05"
        assert client.transport.transport == "sse"
        assert (await client.call_tool("echo", {"text": "x"})).text == "legacy x"
    assert [m.get("method") for m in legacy.posted][-3:] == [
        "initialize",
        "notifications/initialized",
        "tools/call",
    ]


async def test_forced_sse_transport() -> None:
    legacy = LegacyServer()
    async with (
        serving(legacy.app()) as base,
        Client.http(f"{base}/sse", mode="legacy", transport="sse") as client,
    ):
        assert client.transport.transport == "sse"
        assert (await client.call_tool("echo", {"text": "y"})).text == "legacy y"
    assert legacy.posted[0]["method"] == "initialize"  # no probe, no Streamable POST


async def test_an_endpoint_of_another_origin_is_refused() -> None:
    legacy = LegacyServer(endpoint="http://elsewhere.invalid/messages")
    async with serving(legacy.app()) as base:
        with pytest.raises(ConnectionClosed, match="not of the origin"):
            async with Client.http(f"{base}/sse", mode="legacy", transport="sse"):
                pass
        with pytest.raises(NegotiationRefused):
            async with Client.http(f"{base}/sse", mode="legacy"):
                pass
    assert legacy.posted == []


async def test_no_fallback_with_the_streamable_transport_forced() -> None:
    legacy = LegacyServer()
    async with serving(legacy.app()) as base:
        with pytest.raises(NegotiationRefused, match="HTTP 405"):
            async with Client.http(f"{base}/sse", mode="legacy", transport="streamable"):
                pass
    assert legacy.posted == []


# -- against this project's ASGI app ----------------------------------------------------------


@asynccontextmanager
async def app_serving(
    server: Server, refuse: Callable[[dict[str, str]], bool] | None = None
) -> AsyncIterator[tuple[str, list[dict[str, str]]]]:
    """``http_app(server)`` served, and the headers of each POST it gets; a POST whose
    headers ``refuse`` says yes to is answered 400 -32020 (as a validating gateway
    would) instead."""
    app = http_app(server)
    posts: list[dict[str, str]] = []

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            posts.append(headers)
            if refuse is not None and refuse(headers):
                body = json.dumps(error(None, -32020, "Header mismatch")).encode()
                content = [(b"content-type", b"application/json")]
                await send({"type": "http.response.start", "status": 400, "headers": content})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    async with serving(recording) as base:
        yield f"{base}/mcp", posts


@pytest.mark.parametrize("library", ["httpx", "httpx2"])
@pytest.mark.parametrize("mode", MODES)
async def test_against_the_app(mode: str, library: str) -> None:
    # On httpx2 too: the client given an httpx2.AsyncClient (http_client=).
    probe = Probe()
    server = demo_server(probe)
    answers: list[Any] = []

    async def elicit(params: Any, ctx: Any) -> Any:
        answers.append(params.message)
        return {"action": "accept", "content": {"name": "Ada"}}

    logs: list[Any] = []
    given = httpx2.AsyncClient() if library == "httpx2" else None
    async with app_serving(server) as (url, posts):
        client = Client.http(
            url, mode=mode, elicitation=elicit, on_log=logs.append, http_client=given
        )
        async with client:
            assert client.revision == EXPECTED[mode]
            assert len(await client.list_tools()) == 10
            assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
            steps: list[Any] = []
            await client.call_tool("slow", {"steps": 3}, progress=steps.append)
            assert [step.progress for step in steps] == [1, 2, 3]
            await client.set_logging_level("debug")
            await client.call_tool("log")
            assert [entry.level for entry in logs] == ["debug", "info", "error"]
            if mode not in ("2024-11-05", "2025-03-26"):
                asked = await client.call_tool("ask")
                assert asked.text.startswith("accept")
                assert answers == ["Your name?"]
            assert (await client.read_resource("test://a")).contents[0].text == "text of test://a"
            if client.model == "handshake":
                assert client.transport.session_id is not None
    if given is not None:  # every POST went out through the caller's client, left open
        assert not given.is_closed
        assert posts and all(h["user-agent"].startswith("python-httpx2/") for h in posts)
        await given.aclose()


async def test_cancelling_over_http_in_2026_closes_the_response_stream() -> None:
    started = anyio.Event()
    cancelled = anyio.Event()
    server = Server("cancel", "1.0")

    @server.handler("tools/call")
    async def call(request: Any, ctx: RequestContext) -> Any:
        if request.params.name != "wait":
            return {"content": [{"type": "text", "text": "still here"}]}
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    async with app_serving(server) as (url, posts), Client.http(url, mode="2026-07-28") as client:
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(client.call_tool, "wait")
            with anyio.fail_after(GUARD):
                await started.wait()
            task_group.cancel_scope.cancel()
        with anyio.fail_after(GUARD):
            await cancelled.wait()
        # The connection goes on.
        assert (await client.call_tool("other")).text == "still here"
    methods = [p.get("mcp-method") for p in posts]
    assert "notifications/cancelled" not in methods
    assert methods.count("tools/call") == 2


async def test_cancelling_in_2025_posts_notifications_cancelled() -> None:
    started = anyio.Event()
    cancelled = anyio.Event()
    server = Server("cancel", "1.0")

    @server.handler("tools/call")
    async def call(request: Any, ctx: RequestContext) -> Any:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    async with app_serving(server) as (url, posts), Client.http(url, mode="2025-11-25") as client:
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(client.call_tool, "wait")
            with anyio.fail_after(GUARD):
                await started.wait()
            task_group.cancel_scope.cancel()
        with anyio.fail_after(GUARD):
            await cancelled.wait()
    # The cancellation is a POST of its own, in the session.
    assert len(posts) == 4  # initialize, notifications/initialized, tools/call, cancelled
    assert all(p.get("mcp-session-id") for p in posts[1:])


def annotated_tools() -> list[dict[str, Any]]:
    region = {"type": "string", "x-mcp-header": "Region"}
    return [
        {
            "name": "query",
            "inputSchema": {
                "type": "object",
                "properties": {"region": region, "sql": {"type": "string"}},
            },
        },
        {
            "name": "broken",
            "inputSchema": {
                "type": "object",
                "properties": {"n": {"type": "number", "x-mcp-header": "N"}},
            },
        },
    ]


async def test_x_mcp_header_tools_in_2026(caplog: pytest.LogCaptureFixture) -> None:
    server = Server("mirror", "1.0")

    @server.handler("tools/list")
    async def list_tools(request: Any, ctx: RequestContext) -> Any:
        return {"tools": annotated_tools(), "ttlMs": 0, "cacheScope": "private"}

    @server.handler("tools/call")
    async def call(request: Any, ctx: RequestContext) -> Any:
        region = request.params.arguments["region"]
        return {"content": [{"type": "text", "text": region}]}

    async with app_serving(server) as (url, posts), Client.http(url, mode="2026-07-28") as client:
        with caplog.at_level(logging.WARNING, logger="mcpspec.connection"):
            tools = await client.list_tools()
        assert [tool.name for tool in tools] == ["query"]
        assert "'broken'" in caplog.text
        answer = await client.call_tool("query", {"region": "eu-west 1", "sql": "x"})
        assert answer.text == "eu-west 1"
    (posted,) = [p for p in posts if p.get("mcp-method") == "tools/call"]
    assert posted["mcp-name"] == "query"
    assert posted["mcp-param-region"] == "eu-west 1"
    assert posted["mcp-protocol-version"] == "2026-07-28"


async def test_a_header_mismatch_relists_the_tools_and_retries() -> None:
    server = Server("mirror", "1.0")

    @server.tool()
    async def query(region: str) -> str:
        return f"in {region}"

    async def annotated(region: str) -> str:
        return f"annotated {region}"

    renewed = Tool.from_function(annotated, name="query")
    renewed.input_schema["properties"]["region"]["x-mcp-header"] = "Region"

    def refuse(headers: dict[str, str]) -> bool:
        return headers.get("mcp-method") == "tools/call" and "mcp-param-region" not in headers

    async with (
        app_serving(server, refuse) as (url, posts),
        Client.http(url, mode="2026-07-28") as client,
    ):
        (listed,) = await client.list_tools()
        assert "x-mcp-header" not in str(msgspec.to_builtins(listed.input_schema))
        # The tool gains an annotation the client has not seen.
        server.add_tool(renewed)
        assert (await client.call_tool("query", {"region": "eu"})).text == "annotated eu"
    methods = [(p.get("mcp-method"), p.get("mcp-param-region")) for p in posts]
    assert methods[-3:] == [("tools/call", None), ("tools/list", None), ("tools/call", "eu")]


async def test_handshake_revisions_keep_every_tool() -> None:
    server = Server("mirror", "1.0")

    @server.handler("tools/list")
    async def list_tools(request: Any, ctx: RequestContext) -> Any:
        return {"tools": annotated_tools()}

    async with app_serving(server) as (url, _), Client.http(url, mode="2025-11-25") as client:
        assert len(await client.list_tools()) == 2


def test_one_class_per_http_transport_and_a_selector_that_posts_nothing() -> None:
    """Each transport is a class of its own module with what a connection needs of a
    message stream; the selector (``HttpClientStream``) makes no HTTP exchange itself."""
    from mcpspec.runtime.connection.http import client as selector

    transports = (StreamableHttpTransport, StatelessHttpTransport, LegacySseTransport)
    assert len({cls.__module__ for cls in transports}) == len(transports)
    for cls in transports:
        for name in ("send", "receive", "aclose", "send_message"):
            assert inspect.iscoroutinefunction(getattr(cls, name)), (cls, name)
        assert cls.__doc__ and cls._completes_sends
    source = inspect.getsource(selector)
    assert "open_exchange(" not in source and ".stream(" not in source


@pytest.mark.parametrize("era", ["2024-11-05", "2025-11-25", "2026-07-28"])
async def test_each_transport_is_a_message_stream_of_its_own(era: str) -> None:
    """Each transport class, alone on a link of its own, carries a whole conversation of
    its era (the selector only picks among them)."""
    server = demo_server(Probe())
    app = http_app(server, legacy_sse=True)
    async with serving(app) as base:
        link = ClientLink(
            f"{base}/mcp",
            headers=None,
            auth=None,
            timeout=GUARD,
            http_client=None,
            max_message_size=1 << 20,
            queue_size=16,
        )
        stream: HttpClientTransport
        if era == "2026-07-28":
            stream = StatelessHttpTransport(link, ToolHeaderMemory())
        elif era == "2025-11-25":
            stream = StreamableHttpTransport(link)
        else:
            stream = LegacySseTransport(link)

        @asynccontextmanager
        async def connect() -> AsyncIterator[MessageStream]:
            await link.open()
            try:
                if isinstance(stream, LegacySseTransport):
                    await stream.open(GUARD)
                yield stream
            finally:
                await stream.aclose()
                await link.close()

        async with Client(connect, mode=era) as client:
            assert client.revision == era
            assert (await client.call_tool("echo", {"text": "alone"})).text == "alone"
            if isinstance(stream, StreamableHttpTransport):
                assert stream.session_id is not None
                assert stream.protocol_version == era
            if isinstance(stream, LegacySseTransport):
                assert stream.endpoint is not None and "/messages" in stream.endpoint
                assert stream.protocol_version == era
        assert link.closed


async def test_listen_over_http_in_2026() -> None:
    server = demo_server(Probe())
    server.list_changed = True
    async with app_serving(server) as (url, _), Client.http(url, mode="2026-07-28") as client:
        async with client.listen(tools=True) as changes:
            await server.notify_tools_changed()
            with anyio.fail_after(GUARD):
                note = await changes.__anext__()
            assert note.method == "notifications/tools/list_changed"
        # The connection goes on after the listen stream is closed.
        assert (await client.call_tool("echo", {"text": "after"})).text == "after"


async def test_server_notifications_reach_a_handshake_client_over_get() -> None:
    server = demo_server(Probe())
    server.list_changed = True
    got = anyio.Event()
    async with app_serving(server) as (url, _):
        client = Client.http(url, mode="2025-11-25", on_notification=lambda note: got.set())
        async with client:
            await client.call_tool("echo", {"text": "x"})
            await server.notify_tools_changed()
            with anyio.fail_after(GUARD):
                await got.wait()


# -- the SSE decoder --------------------------------------------------------------------------


def test_decoder_follows_the_event_stream_rules() -> None:
    decoder = SseDecoder(100)
    events = decoder.feed(b"id: 1\ndata:\n\n: ping\r\nevent: endpoint\r\ndata: /m\r")
    assert events == []  # the priming event has no data; the last line may go on
    assert decoder.last_event_id == "1"
    events = decoder.feed(b"\n\r\ndata: a\ndata:b\n\nretry: 1500\nid: x\x00y\nretry: no\n")
    assert events == [SseEvent("endpoint", b"/m", 2), SseEvent("message", b"a\nb", 3)]
    assert decoder.retry == 1.5
    assert decoder.last_event_id == "1"  # an id with NUL is ignored
    assert decoder.feed(b"data: end\r") == []
    assert decoder.feed(b"\r") == [SseEvent("message", b"end", 3)]


def test_decoder_drops_oversized_lines_and_events_as_they_stream() -> None:
    decoder = SseDecoder(100)
    for _ in range(1000):
        assert decoder.feed(b"data: " + b"x" * 997) == []
        assert len(decoder._buffer) <= 1000
    assert decoder.feed(b"\n\ndata: ok\n\n") == [
        SseEvent("message", None, 1_003_000),
        SseEvent("message", b"ok", 2),
    ]
    many = SseDecoder(100)
    assert many.feed(b"data: " + b"y" * 60 + b"\ndata: " + b"y" * 60 + b"\n\ndata: ok\n\n") == [
        SseEvent("message", None, 121),
        SseEvent("message", b"ok", 2),
    ]


async def test_a_forged_library_header_is_dropped() -> None:
    stream = HttpClientStream(
        "http://127.0.0.1:1/mcp",
        headers={"MCP-Protocol-Version": "1999", "mcp-param-x": "y", "X-Trace": "1"},
    )
    assert stream._link.headers == {"X-Trace": "1"}
    with pytest.raises(ValueError):
        HttpClientStream("http://127.0.0.1:1/mcp", transport="carrier-pigeon")  # type: ignore[arg-type]
    stream = HttpClientStream("http://127.0.0.1:1/mcp", timeout=httpx.Timeout(2.0))
    assert stream._link.stream_timeout.read is None


# -- what a hostile server sends never escapes as anything but the library's errors -----------

#: JSON nested past msgspec's depth limit (it raises RecursionError), well under any size limit.
DEEP = b"[" * 5000 + b"]" * 5000


def standalone_stream(*events: bytes) -> Handler:
    """A scripted handler whose standalone ``GET`` stream sends ``events`` and stays open."""

    async def handle(seen: Seen) -> Response | None:
        if seen.method != "GET":
            return None

        async def stream() -> AsyncIterator[bytes]:
            for event in events:
                yield event
            await anyio.sleep_forever()

        return StreamingResponse(stream(), media_type="text/event-stream")

    return handle


async def test_nesting_too_deep_on_the_standalone_stream_ends_nothing() -> None:
    got = anyio.Event()
    changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    deep = b"data: " + DEEP + b"\n\n"
    scripted = Scripted(standalone_stream(deep, sse_message(changed).encode()))
    async with serving(scripted.app()) as base:
        client = Client.http(f"{base}/mcp", mode="2025-11-25", on_notification=lambda n: got.set())
        async with client:
            with anyio.fail_after(GUARD):
                await got.wait()  # the message after the deep one still arrives
            assert (await client.call_tool("echo", {"text": "on"})).text == "on"


async def test_nesting_too_deep_on_the_http_sse_stream_ends_nothing() -> None:
    legacy = LegacyServer()
    async with (
        serving(legacy.app()) as base,
        Client.http(f"{base}/sse", mode="legacy", transport="sse") as client,
    ):
        await legacy.send.send(b"event: message\ndata: " + DEEP + b"\n\n")
        assert (await client.call_tool("echo", {"text": "z"})).text == "legacy z"


async def test_an_event_id_of_any_text_is_resumed_with_its_utf8_bytes() -> None:
    got = anyio.Event()

    async def handle(seen: Seen) -> Response | None:
        if seen.method != "GET":
            return None
        if "last-event-id" not in seen.headers:
            return Response("id: é1\nretry: 1\ndata:\n\n", media_type="text/event-stream")
        got.set()
        return Response(status_code=405)

    scripted = Scripted(handle)
    async with serving(scripted.app()) as base, Client.http(f"{base}/mcp", mode="2025-11-25"):
        with anyio.fail_after(GUARD):
            await got.wait()
    resumed = [s for s in scripted.seen if s.method == "GET"][-1]
    # The server reads header bytes as latin-1: back to the bytes, they are UTF-8.
    assert resumed.headers["last-event-id"].encode("latin-1").decode("utf-8") == "é1"


async def test_a_protocol_version_no_header_can_carry_fails_negotiation_cleanly() -> None:
    scripted = Scripted(initialize_answered("2025-11-25é", "s1"))
    async with serving(scripted.app()) as base:
        with pytest.raises(NegotiationRefused, match="2025-11-25é"):
            async with Client.http(f"{base}/mcp", mode="legacy"):
                pass
    (delete,) = [s for s in scripted.seen if s.method == "DELETE"]
    assert delete.headers["mcp-session-id"] == "s1"
    assert "mcp-protocol-version" not in delete.headers


async def test_an_endpoint_no_request_can_reach_is_refused() -> None:
    legacy = LegacyServer(endpoint="/messages?session_id=a\x01b")
    async with serving(legacy.app()) as base:
        with pytest.raises(ConnectionClosed, match="not a URI"):
            async with Client.http(f"{base}/sse", mode="legacy", transport="sse"):
                pass


async def test_a_renewed_session_gets_its_own_standalone_stream() -> None:
    minted = iter(["s1", "s2"])
    ended: set[str] = set()
    got = anyio.Event()
    changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}

    async def handle(seen: Seen) -> Response | None:
        session = seen.headers.get("mcp-session-id")
        if seen.rpc == "initialize":
            answer = result(seen.body, initialize_result("2025-11-25"))
            return JSONResponse(answer, headers={"Mcp-Session-Id": next(minted)})
        if session in ended:
            return Response(status_code=404)
        if seen.method == "GET":
            # s1's stream stays open though the server forgets s1 (a restart behind a
            # proxy): only the renewed session's stream carries what comes next.
            first = () if session == "s1" else (sse_message(changed).encode(),)
            return await standalone_stream(*first)(seen)
        if seen.rpc == "tools/call" and session == "s1":
            ended.add("s1")
            return Response(status_code=404)
        return None

    scripted = Scripted(handle)
    async with serving(scripted.app()) as base:
        client = Client.http(f"{base}/mcp", mode="2025-11-25", on_notification=lambda n: got.set())
        async with client:
            assert (await client.call_tool("echo", {"text": "restart"})).text == "restart"
            with anyio.fail_after(GUARD):
                await got.wait()
            assert client.transport.session_id == "s2"
    gets = [s.headers.get("mcp-session-id") for s in scripted.seen if s.method == "GET"]
    assert gets == ["s1", "s2"]


async def test_a_renewal_cut_short_by_its_callers_timeout_is_done_again_later() -> None:
    minted = iter(["s1", "s2", "s3"])
    stall = anyio.Event()

    async def handle(seen: Seen) -> Response | None:
        session = seen.headers.get("mcp-session-id")
        if seen.rpc == "initialize":
            new = next(minted)
            if new == "s2":
                await stall.wait()  # the renewal's initialize outlives the caller
            answer = result(seen.body, initialize_result("2025-11-25"))
            return JSONResponse(answer, headers={"Mcp-Session-Id": new})
        text = seen.body["params"]["arguments"]["text"] if seen.rpc == "tools/call" else None
        if session == "s1" and text not in (None, "first"):
            return Response(status_code=404)
        return None

    scripted = Scripted(handle)
    async with (
        serving(scripted.app()) as base,
        Client.http(f"{base}/mcp", mode="2025-11-25") as client,
    ):
        assert (await client.call_tool("echo", {"text": "first"})).text == "first"
        with pytest.raises(RequestTimeout):
            await client.call_tool("echo", {"text": "cut"}, timeout=0.3)
        stall.set()
        with anyio.fail_after(GUARD):
            assert (await client.call_tool("echo", {"text": "later"})).text == "later"
        assert client.transport.session_id == "s3"
        assert not client.closed


async def test_a_json_answer_whose_body_stalls_fails_after_the_read_timeout() -> None:
    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call" and seen.body["params"]["arguments"]["text"] == "x":

            async def body() -> AsyncIterator[bytes]:
                yield b'{"jsonrpc": "2.0", '
                await anyio.sleep_forever()

            return StreamingResponse(
                body(), media_type="application/json", headers={"content-length": "200"}
            )
        return None

    scripted = Scripted(handle)
    async with (
        serving(scripted.app()) as base,
        Client.http(f"{base}/mcp", mode="2025-11-25", timeout=0.5) as client,
    ):
        with anyio.fail_after(GUARD), pytest.raises(RequestError, match="stalled"):
            await client.call_tool("echo", {"text": "x"})
        assert (await client.call_tool("echo", {"text": "on"})).text == "on"


async def test_a_redirect_is_named_not_followed() -> None:
    async def handle(seen: Seen) -> Response | None:
        if seen.path == "/mcp":
            return Response(status_code=307, headers={"location": "/mcp/"})
        return None

    scripted = Scripted(handle)
    async with serving(scripted.app()) as base:
        with pytest.raises(NegotiationRefused, match="307 redirects to '/mcp/'"):
            async with Client.http(f"{base}/mcp", mode="2025-11-25"):
                pass
        async with Client.http(f"{base}/mcp/", mode="2025-11-25") as client:
            assert (await client.call_tool("echo", {"text": "there"})).text == "there"
