"""The HTTP client against servers that misbehave on purpose: acknowledgements that never
come, batches nested or too long, endless bodies where nothing is read, replayed events,
an HTTP+SSE stream with no endpoint, compressed bodies that expand without end, and
tools listed for ever. Each test fails on the client as it was before its fix (they hang
on a guard, or count what a bounded client never does)."""

from __future__ import annotations

import gzip
import json
import logging
import tracemalloc
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from mcpspec.runtime import ProtocolViolation
from mcpspec.runtime.connection import Client, RequestError, RequestTimeout
from mcpspec.runtime.connection.http.client import (
    MAX_RECONNECTS,
    MAX_REMEMBERED_TOOLS,
    HttpClientStream,
)
from mcpspec.runtime.connection.http.client_tools import ToolHeaderMemory
from mcpspec.runtime.connection.http.decoding import ACCEPT_ENCODING, STEP, decoded_chunks
from mcpspec.runtime.connection.http.sse_decoder import SseDecoder
from mcpspec.runtime.session.mirrored_headers import param_headers
from tests.http_client_kit import (
    GUARD,
    LegacyServer,
    Scripted,
    Seen,
    initialize_result,
    result,
    serving,
    sse_message,
    tool_text,
)

pytestmark = pytest.mark.anyio
#: uvicorn serves on asyncio.
ANYIO_BACKENDS = ("asyncio",)


@asynccontextmanager
async def connected(scripted: Scripted, mode: str, **options: Any) -> AsyncIterator[Client]:
    """A client of ``mode`` connected by URL to ``scripted``, served."""
    async with (
        serving(scripted.app()) as base,
        Client.http(f"{base}/mcp", mode=mode, **options) as client,
    ):
        yield client


def never_answered() -> Response:
    """An SSE answer that stays open and says nothing."""

    async def stream() -> AsyncIterator[bytes]:
        yield b": open\n\n"
        await anyio.sleep_forever()

    return StreamingResponse(stream(), media_type="text/event-stream")


# -- acknowledgements that never come ----------------------------------------------------------


async def test_a_cancellation_the_server_does_not_acknowledge_holds_up_nothing() -> None:
    """The timed-out call's ``notifications/cancelled`` is posted by a task of the stream:
    neither the call's timeout nor the next call waits for its acknowledgement (which
    the server gives only once both are over)."""
    release = anyio.Event()

    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call" and seen.body["params"]["arguments"]["text"] == "A":
            return never_answered()
        if seen.rpc == "notifications/cancelled":
            await release.wait()
            return Response(status_code=202)
        return None

    scripted = Scripted(handle)
    async with connected(scripted, "2025-11-25") as client:
        with anyio.fail_after(GUARD):
            with pytest.raises(RequestTimeout):
                await client.call_tool("echo", {"text": "A"}, timeout=0.3)
            assert (await client.call_tool("echo", {"text": "B"})).text == "B"
        release.set()
    assert len(scripted.posted("notifications/cancelled")) == 1


async def test_an_acknowledgement_trickling_in_is_given_up_after_the_read_timeout(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A notification's answer sending a byte now and then (each under the read timeout)
    is bounded as a whole."""

    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call" and seen.body["params"]["arguments"]["text"] == "A":
            return never_answered()
        if seen.rpc == "notifications/cancelled":

            async def trickle() -> AsyncIterator[bytes]:
                while True:
                    yield b"x"
                    await anyio.sleep(0.2)

            return StreamingResponse(trickle(), status_code=400, media_type="text/plain")
        return None

    scripted = Scripted(handle)
    caplog.set_level(logging.WARNING, "mcpspec.connection")
    async with connected(scripted, "2025-11-25", timeout=1.0) as client:
        with anyio.fail_after(GUARD):
            with pytest.raises(RequestTimeout):
                await client.call_tool("echo", {"text": "A"}, timeout=0.1)
            while "did not acknowledge notifications/cancelled" not in caplog.text:
                await anyio.sleep(0.05)
            assert (await client.call_tool("echo", {"text": "next"})).text == "next"


async def test_an_http_sse_request_post_never_acknowledged_keeps_the_calls_timeout() -> None:
    release = anyio.Event()

    class Stuck(LegacyServer):
        async def message(self, request: Request) -> Response:
            message = json.loads(await request.body())
            if message.get("method") == "tools/call":
                self.posted.append(message)
                await release.wait()
                return Response(status_code=202)
            return await super().message(request)

    legacy = Stuck()
    async with (
        serving(legacy.app()) as base,
        Client.http(f"{base}/sse", mode="2024-11-05", timeout=None) as client,
    ):
        assert client.transport.transport == "sse"
        with anyio.fail_after(GUARD):
            with pytest.raises(RequestTimeout):
                await client.call_tool("echo", {"text": "x"}, timeout=0.3)
        release.set()


class CountingLegacy(LegacyServer):
    """An HTTP+SSE server counting the SSE streams opened; ``ack_after`` holds the 202
    of each ``tools/call`` POST (whose answer is already on the stream) until set."""

    def __init__(self) -> None:
        super().__init__()
        self.streams = 0
        self.ack_after: anyio.Event | None = None

    async def stream(self, request: Request) -> Response:
        self.streams += 1
        return await super().stream(request)

    async def message(self, request: Request) -> Response:
        answered = await super().message(request)
        if self.ack_after is not None and self.posted[-1].get("method") == "tools/call":
            await self.ack_after.wait()
        return answered


async def test_http_sse_opens_one_stream_only() -> None:
    """No standalone GET of Streamable HTTP: on an HTTP+SSE server it opens a second
    connection, left open for nothing."""
    legacy = CountingLegacy()
    async with (
        serving(legacy.app()) as base,
        Client.http(f"{base}/sse", mode="2024-11-05", transport="sse") as client,
    ):
        assert (await client.call_tool("echo", {"text": "x"})).text == "legacy x"
        assert legacy.streams == 1


async def test_an_http_sse_answer_before_its_posts_acknowledgement_is_its_only_answer() -> None:
    """The answer came on the stream; the POST's 202 comes after the read timeout: no
    error is made up for the request as well."""
    legacy = CountingLegacy()
    legacy.ack_after = anyio.Event()
    async with (
        serving(legacy.app()) as base,
        HttpClientStream(f"{base}/sse", transport="sse", timeout=0.3) as stream,
    ):
        opening = {"protocolVersion": "2024-11-05", "capabilities": {}}
        opening["clientInfo"] = {"name": "c", "version": "1"}
        await stream.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": opening}
            ).encode()
        )
        with anyio.fail_after(GUARD):
            assert json.loads(await stream.receive())["id"] == 1
        await stream.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        call = {"name": "echo", "arguments": {"text": "x"}}
        await stream.send(
            json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}).encode()
        )
        with anyio.fail_after(GUARD):
            assert "result" in json.loads(await stream.receive())
            while stream._link.posts:  # the POST's task gave up waiting for the 202
                await anyio.sleep(0.05)
        await stream.send(
            json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}).encode()
        )
        with anyio.fail_after(GUARD):
            following = json.loads(await stream.receive())
        legacy.ack_after.set()
    assert following["id"] == 3 and "result" in following


async def test_a_renewal_during_notifications_initialized_posts_it_once() -> None:
    minted = iter(["s1", "s2"])

    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "initialize":
            answer = result(seen.body, initialize_result("2025-11-25"))
            return JSONResponse(answer, headers={"Mcp-Session-Id": next(minted)})
        if seen.method == "POST" and seen.headers.get("mcp-session-id") == "s1":
            return Response(status_code=404)  # the session ended at once
        return None

    scripted = Scripted(handle)
    async with connected(scripted, "2025-11-25") as client:
        with anyio.fail_after(GUARD):
            assert (await client.call_tool("echo", {"text": "x"})).text == "x"
    sessions = [
        s.headers.get("mcp-session-id") for s in scripted.posted("notifications/initialized")
    ]
    assert sessions == ["s1", "s2"]


# -- batches -----------------------------------------------------------------------------------


async def test_a_batch_is_handed_to_the_session_whole() -> None:
    """A batch of 3,000 members answering a request is one message for the session: its
    batch limit refuses it once (one violation), and nothing is posted back for it."""
    violations: list[ProtocolViolation] = []

    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call":
            body = b"[" + b",".join([b"{}"] * 3000) + b"]"
            return Response(body, media_type="application/json")
        return None

    scripted = Scripted(handle)
    async with connected(scripted, "2025-11-25", on_violation=violations.append) as client:
        with anyio.fail_after(GUARD), pytest.raises(RequestError):
            await client.call_tool("echo", {"text": "x"})
        with anyio.fail_after(GUARD):
            while not violations:
                await anyio.sleep(0.01)
        await anyio.sleep(0.2)  # room for any more (there are none)
    assert len(violations) == 1
    assert len(scripted.seen) < 10  # not one error POSTed per member


async def test_an_answer_inside_a_nested_batch_is_not_taken() -> None:
    """Batches are read one level deep: the answer nested 900 deep is no answer."""
    violations: list[ProtocolViolation] = []

    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call":
            answer = json.dumps(tool_text(seen.body, "deep")).encode()
            return Response(b"[" * 900 + answer + b"]" * 900, media_type="application/json")
        return None

    scripted = Scripted(handle, version="2025-03-26")
    async with connected(scripted, "2025-03-26", on_violation=violations.append) as client:
        with anyio.fail_after(GUARD), pytest.raises(RequestError) as raised:
            await client.call_tool("echo", {"text": "x"})
    assert raised.value.error.code == -32000
    assert violations


async def test_a_batch_member_answers_the_request_posted() -> None:
    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call":
            log = {"jsonrpc": "2.0", "method": "notifications/message"}
            log["params"] = {"level": "info", "data": "first"}
            answer = [log, tool_text(seen.body, "in a batch")]
            return Response(json.dumps(answer), media_type="application/json")
        return None

    logs: list[Any] = []
    scripted = Scripted(handle, version="2025-03-26")
    async with connected(scripted, "2025-03-26", on_log=logs.append) as client:
        with anyio.fail_after(GUARD):
            assert (await client.call_tool("echo", {"text": "x"})).text == "in a batch"
    assert [log.data for log in logs] == ["first"]


# -- bodies nothing is read of -------------------------------------------------------------------


def endless_body(status: int = 200) -> Response:
    """A body that never ends (64 KiB every few milliseconds): read, it would hold up
    whoever reads it for ever."""

    async def body() -> AsyncIterator[bytes]:
        chunk = b"x" * 65536
        while True:
            yield chunk
            await anyio.sleep(0.005)

    return StreamingResponse(body(), status_code=status, media_type="text/plain")


class Counting(httpx.AsyncBaseTransport):
    """An HTTP transport counting the bytes of the bodies read, by request method."""

    def __init__(self) -> None:
        self._inner = httpx.AsyncHTTPTransport()
        self.read: dict[str, int] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        body = response.stream
        assert isinstance(body, httpx.AsyncByteStream)
        read = self.read
        read.setdefault(request.method, 0)

        class Counted(httpx.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for chunk in body:
                    read[request.method] += len(chunk)
                    yield chunk

            async def aclose(self) -> None:
                await body.aclose()

        response.stream = Counted()
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


async def test_the_answer_to_delete_is_not_read() -> None:
    async def handle(seen: Seen) -> Response | None:
        return endless_body() if seen.method == "DELETE" else None

    scripted = Scripted(handle)
    counting = Counting()
    async with serving(scripted.app()) as base, httpx.AsyncClient(transport=counting) as http:
        with anyio.fail_after(GUARD):
            async with Client.http(f"{base}/mcp", mode="2025-11-25", http_client=http) as client:
                assert (await client.call_tool("echo", {"text": "x"})).text == "x"
    assert counting.read["DELETE"] == 0


async def test_the_answer_to_a_renewed_sessions_initialized_is_not_read() -> None:
    minted = iter(["s1", "s2"])

    async def handle(seen: Seen) -> Response | None:
        session = seen.headers.get("mcp-session-id")
        if seen.rpc == "initialize":
            answer = result(seen.body, initialize_result("2025-11-25"))
            return JSONResponse(answer, headers={"Mcp-Session-Id": next(minted)})
        if seen.rpc == "notifications/initialized" and session == "s2":
            return endless_body()
        if seen.rpc == "tools/call" and session == "s1":
            return Response(status_code=404)
        return None

    scripted = Scripted(handle)
    async with connected(scripted, "2025-11-25") as client:
        with anyio.fail_after(GUARD):
            assert (await client.call_tool("echo", {"text": "x"})).text == "x"
        assert client.transport.session_id == "s2"


# -- resumed streams ---------------------------------------------------------------------------


async def test_a_resumed_stream_replaying_the_same_event_is_given_up() -> None:
    log = {"jsonrpc": "2.0", "method": "notifications/message"}
    log["params"] = {"level": "info", "data": "again"}

    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call":
            return Response(b"id: e1\nretry: 0\ndata:\n\n", media_type="text/event-stream")
        if seen.method == "GET" and seen.headers.get("last-event-id") == "e1":
            return Response(sse_message(log, "e1"), media_type="text/event-stream")
        return None

    logs: list[Any] = []
    scripted = Scripted(handle)
    async with connected(scripted, "2025-11-25", on_log=logs.append) as client:
        with anyio.fail_after(GUARD), pytest.raises(RequestError) as raised:
            await client.call_tool("echo", {"text": "x"})
    assert "broke" in raised.value.error.message
    resumes = [s for s in scripted.seen if s.method == "GET" and s.headers.get("last-event-id")]
    assert len(resumes) == MAX_RECONNECTS
    assert len(logs) == MAX_RECONNECTS


async def test_a_resumed_stream_bringing_new_events_goes_on() -> None:
    """The other side of the rule above: each resumption bringing a new event id is
    progress, however many there are."""
    log = {"jsonrpc": "2.0", "method": "notifications/message"}
    log["params"] = {"level": "info", "data": "step"}
    steps = MAX_RECONNECTS * 2

    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call":
            return Response(b"id: 0\nretry: 0\ndata:\n\n", media_type="text/event-stream")
        last = seen.headers.get("last-event-id")
        if seen.method == "GET" and last is not None:
            step = int(last) + 1
            call = next(s.body for s in scripted.seen if s.rpc == "tools/call")
            message = tool_text(call, "done") if step == steps else log
            return Response(sse_message(message, str(step)), media_type="text/event-stream")
        return None

    logs: list[Any] = []
    scripted = Scripted(handle)
    async with connected(scripted, "2025-11-25", on_log=logs.append) as client:
        with anyio.fail_after(GUARD):
            assert (await client.call_tool("echo", {"text": "x"})).text == "done"
    assert len(logs) == steps - 1


# -- opening HTTP+SSE --------------------------------------------------------------------------


async def test_open_timeout_bounds_waiting_for_the_endpoint_event() -> None:
    async def handle(seen: Seen) -> Response | None:
        if seen.method == "GET":
            return never_answered()
        return None

    scripted = Scripted(handle)
    async with serving(scripted.app()) as base:
        with anyio.move_on_after(GUARD) as guard:
            with pytest.raises(TimeoutError, match="no HTTP\\+SSE endpoint within"):
                async with Client.http(
                    f"{base}/mcp", mode="2024-11-05", transport="sse", open_timeout=0.5
                ):
                    pass
        assert not guard.cancelled_caught


# -- Content-Encoding --------------------------------------------------------------------------


class RawBody:
    """A response's raw body, as :func:`decoded_chunks` reads it."""

    def __init__(self, body: bytes, encoding: str, chunk: int = 1024, first: int = 1024) -> None:
        self.headers = httpx.Headers({"content-encoding": encoding})
        self._body = body
        self._chunk = chunk
        self._first = first

    async def aiter_raw(self) -> AsyncIterator[bytes]:
        yield self._body[: self._first]
        for start in range(self._first, len(self._body), self._chunk):
            yield self._body[start : start + self._chunk]


async def decoded(response: RawBody, limit: int | None = None) -> tuple[bytes, int]:
    """The body decoded (up to past ``limit``), and the largest chunk it came in."""
    body = bytearray()
    largest = 0
    async for chunk in decoded_chunks(response, error=httpx.DecodingError):
        largest = max(largest, len(chunk))
        body += chunk
        if limit is not None and len(body) > limit:
            break
    return bytes(body), largest


def raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


CODERS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "raw deflate": raw_deflate,
    "gzip, deflate": lambda data: zlib.compress(gzip.compress(data)),
    "gzip members": lambda data: gzip.compress(data[:1000]) + gzip.compress(data[1000:]),
}


@pytest.mark.parametrize("encoding", list(CODERS))
@pytest.mark.parametrize("first", [1, 2, 1024])
async def test_bodies_are_decoded(encoding: str, first: int) -> None:
    """Each coding, its first chunk of ``first`` bytes (a raw deflate body is told from
    a zlib-wrapped one by two bytes that may come apart)."""
    text = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"x": "y" * 300_000}}).encode()
    header = encoding.replace("raw ", "").replace(" members", "")
    response = RawBody(CODERS[encoding](text), header, first=first)
    body, largest = await decoded(response)
    assert body == text
    assert largest <= STEP


async def test_a_compression_bomb_is_inflated_only_as_far_as_it_is_read() -> None:
    bomb = gzip.compress(gzip.compress(bytes(256 * 1024 * 1024)))
    assert len(bomb) < 2048
    body, largest = await decoded(RawBody(bomb, "gzip, gzip"), limit=1024 * 1024)
    assert largest <= STEP
    assert len(body) <= 1024 * 1024 + STEP


@pytest.mark.parametrize(
    ("encoding", "reason"),
    [
        ("br", "not asked for"),
        ("gzip, gzip, gzip", "wrapped in 3"),
        ("gzip", "cannot be decoded"),
        ("cut gzip", "ends before its end"),
        ("cut deflate", "ends before its end"),
    ],
)
async def test_bodies_not_decodable_raise_the_librarys_error(encoding: str, reason: str) -> None:
    body = b"not compressed"
    if encoding.startswith("cut "):
        encoding = encoding.removeprefix("cut ")
        body = CODERS[encoding](b"x" * 1000)[:-9]
    with pytest.raises(httpx.DecodingError, match=reason):
        await decoded(RawBody(body, encoding))


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_an_empty_body_with_a_coding_is_empty(encoding: str) -> None:
    assert await decoded(RawBody(b"", encoding)) == (b"", 0)


async def test_the_client_asks_for_the_codings_it_decodes_and_reads_them() -> None:
    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call":
            text = seen.body["params"]["arguments"]["text"]
            body = gzip.compress(json.dumps(tool_text(seen.body, text)).encode())
            return Response(
                body, media_type="application/json", headers={"Content-Encoding": "gzip"}
            )
        return None

    scripted = Scripted(handle)
    async with serving(scripted.app()) as base:
        headers = {"Accept-Encoding": "br"}  # the library's header: dropped
        async with Client.http(f"{base}/mcp", mode="2025-11-25", headers=headers) as client:
            with anyio.fail_after(GUARD):
                assert (await client.call_tool("echo", {"text": "zipped"})).text == "zipped"
    assert {seen.headers["accept-encoding"] for seen in scripted.seen} == {ACCEPT_ENCODING}


async def test_an_answer_in_a_coding_not_asked_for_is_a_request_error() -> None:
    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call":
            return Response(
                b"??", media_type="application/json", headers={"Content-Encoding": "br"}
            )
        return None

    scripted = Scripted(handle)
    async with connected(scripted, "2025-11-25") as client:
        with anyio.fail_after(GUARD), pytest.raises(RequestError) as raised:
            await client.call_tool("echo", {"text": "x"})
    assert "'br' was not asked for" in raised.value.error.message


# -- remembered tool parameters ----------------------------------------------------------------


def test_remembered_tool_parameters_are_bounded() -> None:
    schema = {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    }
    annotated = param_headers(schema)
    memory = ToolHeaderMemory()
    memory.remember({"plain": ()})
    assert memory.params_of("plain") == ()
    for listing in range(3):
        names = range(listing * MAX_REMEMBERED_TOOLS, (listing + 1) * MAX_REMEMBERED_TOOLS)
        memory.remember({f"t{n}": annotated for n in names})
    assert memory.params_of("t0") == ()  # listed first: forgotten
    assert memory.params_of(f"t{3 * MAX_REMEMBERED_TOOLS - 1}") == annotated
    assert len(memory) == MAX_REMEMBERED_TOOLS
    memory.remember({f"t{2 * MAX_REMEMBERED_TOOLS}": ()})  # no longer annotated
    assert memory.params_of(f"t{2 * MAX_REMEMBERED_TOOLS}") == ()
    # The stream hands what it is told to its memory.
    stream = HttpClientStream("http://127.0.0.1:1/mcp")
    stream.remember_tool_params({"x": annotated})
    assert stream._tools.params_of("x") == annotated


# -- the SSE decoder ---------------------------------------------------------------------------


class ScanCounting(bytearray):
    """A buffer counting the bytes its ``find`` looks at."""

    scanned = 0

    def find(self, sub: Any, start: Any = 0, end: Any = None) -> int:
        stop = len(self) if end is None else end
        found = super().find(sub, start, stop)
        self.scanned += (found + 1 if found >= 0 else stop) - start
        return found


def test_a_byte_order_mark_at_the_start_is_skipped_wherever_the_chunk_ends() -> None:
    stream = b"\xef\xbb\xbfevent: endpoint\ndata: /m\n\n"
    for cut in range(len(stream) + 1):
        decoder = SseDecoder(1024)
        events = decoder.feed(stream[:cut]) + decoder.feed(stream[cut:])
        assert [(e.event, e.data) for e in events] == [("endpoint", b"/m")], cut
    # Only at the start: later, it is part of a field name.
    decoder = SseDecoder(1024)
    events = decoder.feed(b"data: a\n\n\xef\xbb\xbfdata: b\n\n")
    assert [e.data for e in events] == [b"a"]


def test_an_event_of_many_short_data_lines_holds_about_its_size() -> None:
    """An event's data lines are held in one buffer: 100,000 two-byte lines (300 KB)
    hold little more than their bytes, not an object each (about 4 MB)."""
    decoder = SseDecoder(4 * 1024 * 1024)
    lines = b"data: xy\n" * 100_000
    tracemalloc.start()
    try:
        for start in range(0, len(lines), 65536):
            assert decoder.feed(lines[start : start + 65536]) == []
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held < 1024 * 1024
    (event,) = decoder.feed(b"\n")
    assert event.data == b"\n".join([b"xy"] * 100_000)


@pytest.mark.parametrize("line_end", [b"\r", b"\n", b"\r\n"])
def test_a_chunk_of_many_lines_is_scanned_in_one_pass(line_end: bytes) -> None:
    """Each line end is searched for once (with CR alone, the search for an LF that
    never comes used to rescan the rest of the chunk at every line)."""
    decoder = SseDecoder(1024 * 1024)
    buffer = decoder._buffer = ScanCounting()
    chunk = (b"data: x" + line_end * 2) * 20_000
    events = decoder.feed(chunk)
    assert len(events) == 20_000
    assert {event.data for event in events} == {b"x"}
    assert buffer.scanned <= 3 * len(chunk)
