"""The HTTP side of ``mcpspec check`` against the project's own ASGI app (uvicorn in this
process): the link and the HTTP probes give a clean bill in every revision, the link
speaks each era (session and version headers, mirrored headers, SSE answers, raw bytes,
the HTTP+SSE fallback), and small broken apps (a middleware around ours, one defect
each) are caught by exactly the check meant for each, at the right place."""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import pytest

from mcpspec import REVISIONS
from mcpspec.check.findings import Finding, Outcome, RevisionReport
from mcpspec.check.http import HttpLink, HttpTarget
from mcpspec.check.http_probes import HTTP_CHECKS, check_http
from mcpspec.check.link import Received
from mcpspec.runtime.connection import RequestContext, Server
from mcpspec.runtime.connection.http import http_app
from mcpspec.runtime.connection.http.decoding import ACCEPT_ENCODING
from tests.http_kit import serve_app

pytestmark = pytest.mark.anyio

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

HANDSHAKE = [r for r in REVISIONS if r < "2026-07-28"]
STATELESS = "2026-07-28"
#: Bound on any one wait of a test: only a hang reaches it.
GUARD = 20.0


#: uvicorn runs on asyncio.
ANYIO_BACKENDS = ("asyncio",)


@dataclass(frozen=True)
class Options:
    timeout: float = 5.0


def build_server() -> Server:
    server = Server("check-http", "1.0", list_changed=True)

    @server.tool()
    async def steps(count: int, ctx: RequestContext) -> str:
        """Report progress ``count`` times, then answer."""
        for step in range(count):
            await ctx.report_progress(step + 1, count)
        return f"{count} steps"

    return server


@asynccontextmanager
async def served(app: Any, path: str = "/mcp") -> AsyncIterator[HttpTarget]:
    async with serve_app(app) as base:
        yield HttpTarget(base + path, timeout=5.0)


def problems(report: RevisionReport) -> list[Finding]:
    return [f for f in report.findings if f.problem]


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode()


def request(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def initialize(revision: str, request_id: int = 1) -> bytes:
    return encode(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "initialize",
            "params": {
                "protocolVersion": revision,
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        }
    )


INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


def meta(revision: str = STATELESS) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": revision,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }


async def next_message(link: HttpLink) -> tuple[dict[str, Any], str]:
    with anyio.fail_after(GUARD):
        received = await link.receive()
    assert isinstance(received, Received)
    return json.loads(received.data), received.where


async def answer_of(link: HttpLink, request_id: int) -> tuple[dict[str, Any], list[str]]:
    """Read up to the response to ``request_id``; it and where each message was found."""
    places = []
    while True:
        message, where = await next_message(link)
        places.append(where)
        if message.get("id") == request_id and "method" not in message:
            return message, places


async def open_session(link: HttpLink, revision: str) -> None:
    await link.send(initialize(revision))
    answer, _ = await answer_of(link, 1)
    assert answer["result"]["protocolVersion"] == revision
    await link.send(INITIALIZED)


# -- middlewares: one defect each --------------------------------------------------------------


def rewrite_status(app: App, old: int, new: int) -> App:
    """Answer ``new`` wherever ``app`` answers ``old``."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        async def rewrite(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == old:
                message = {**message, "status": new}
            await send(message)

        await app(scope, receive, rewrite)

    return wrapped


def lend_session(app: App) -> App:
    """Give a request without ``Mcp-Session-Id`` the last session the app minted (so
    the app never sees one missing)."""
    minted: list[bytes] = []

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = list(scope["headers"])
            if minted and not any(name == b"mcp-session-id" for name, _ in headers):
                scope = {**scope, "headers": [*headers, (b"mcp-session-id", minted[-1])]}

        async def remember(message: Message) -> None:
            if message["type"] == "http.response.start":
                for name, value in message.get("headers", []):
                    if name.lower() == b"mcp-session-id":
                        minted.append(value)
            await send(message)

        await app(scope, receive, remember)

    return wrapped


def drop_request_header(app: App, name: bytes, value: bytes) -> App:
    """Hide the request header ``name: value`` from the app."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            kept = [(k, v) for k, v in scope["headers"] if (k.lower(), v) != (name, value)]
            scope = {**scope, "headers": kept}
        await app(scope, receive, send)

    return wrapped


def spoil_session_id(app: App) -> App:
    """Send every minted session id with a space in it."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        async def spoil(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {
                    **message,
                    "headers": [
                        (k, b"bad id" if k.lower() == b"mcp-session-id" else v)
                        for k, v in message.get("headers", [])
                    ],
                }
            await send(message)

        await app(scope, receive, spoil)

    return wrapped


def trickle_accepted(app: App) -> App:
    """Answer 202 with a body that trickles in, a byte every 50 ms, for 10 s."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        accepted = False

        async def trickle(message: Message) -> None:
            nonlocal accepted
            if message["type"] == "http.response.start":
                accepted = message["status"] == 202
                if accepted:  # no Content-Length: the body is sent chunked
                    headers = message.get("headers", [])
                    headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
                    message = {**message, "headers": headers}
            elif accepted and not message.get("more_body"):
                for _ in range(200):
                    await send({"type": "http.response.body", "body": b" ", "more_body": True})
                    await anyio.sleep(0.05)
            await send(message)

        await app(scope, receive, trickle)

    return wrapped


def record_headers(app: App, seen: list[dict[str, str]]) -> App:
    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            seen.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
        await app(scope, receive, send)

    return wrapped


def gzip_answers(app: App, coding: str = "gzip") -> App:
    """Send every answer's body compressed with ``coding`` (``gzip``; any other name is
    sent as it is, with the body left plain: a coding the client did not ask for)."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        start: Message = {}
        body = bytearray()

        async def collect(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            body.extend(message.get("body", b""))
            if message.get("more_body"):
                return
            data = gzip.compress(bytes(body)) if coding == "gzip" and body else bytes(body)
            headers = [
                (k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"
            ]
            headers += [(b"content-length", str(len(data)).encode())]
            if body:
                headers += [(b"content-encoding", coding.encode())]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": data})

        await app(scope, receive, collect)

    return wrapped


# -- clean bills -------------------------------------------------------------------------------


async def test_probes_give_our_app_a_clean_bill_in_every_revision() -> None:
    async with served(http_app(build_server())) as target:
        for revision in REVISIONS:
            report = RevisionReport(revision, accepted=True)
            await check_http(target, revision, report, Options())
            assert problems(report) == [], revision
            outcomes = {f.check: f.outcome for f in report.findings}
            assert outcomes["http.status"] is Outcome.PASSED, revision
            assert outcomes["http.session"] is Outcome.PASSED, revision
            assert outcomes["http.headers"] is Outcome.PASSED, revision
            assert len(report.findings) == len(HTTP_CHECKS)
    passed = {f.check: f.why for f in report.findings}
    assert "GET got 405" in passed["http.status"]
    assert "unknown method got 404 with -32601" in passed["http.status"]


async def test_probes_say_what_passed_in_a_handshake_revision() -> None:
    async with served(http_app(build_server())) as target:
        report = RevisionReport("2025-11-25", accepted=True)
        await check_http(target, "2025-11-25", report, Options())
    why = {f.check: f.why for f in report.findings}
    assert "a request without Mcp-Session-Id got 400" in why["http.session"]
    assert "an unknown Mcp-Session-Id got 404" in why["http.session"]
    assert "an unsupported MCP-Protocol-Version got 400" in why["http.status"]
    assert "then the ended session 404" in why["http.status"]


async def test_link_speaks_every_handshake_revision_cleanly() -> None:
    async with served(http_app(build_server())) as target:
        for revision in HANDSHAKE:
            report = RevisionReport(revision)
            async with target.connect(report) as link:
                await open_session(link, revision)
                assert link.transport == "http"
                assert link.session_id is not None
                assert link.protocol_version == revision
                call = {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {
                        "name": "steps",
                        "arguments": {"count": 2},
                        "_meta": {"progressToken": "p"},
                    },
                }
                await link.send(encode(call))
                answer, places = await answer_of(link, 2)
                assert answer["result"]["content"][0]["text"] == "2 steps"
                # Progress first, on the request's own SSE stream, in order.
                assert places == ["POST 3 event 1", "POST 3 event 2", "POST 3 event 3"]
                # Bytes that are not JSON go out as they are; the server's parse error
                # comes back.
                await link.send(b"{not json")
                message, where = await next_message(link)
                assert message["error"]["code"] == -32700
                assert where == "POST 4 response"
            assert report.findings == [], revision


@pytest.mark.parametrize("json_response", [False, True])
async def test_link_reads_compressed_answers_and_asks_for_what_it_reads(
    json_response: bool,
) -> None:
    seen: list[dict[str, str]] = []
    app = record_headers(gzip_answers(http_app(build_server(), json_response=json_response)), seen)
    report = RevisionReport("2025-11-25")
    async with served(app) as target, target.connect(report) as link:
        await open_session(link, "2025-11-25")
        await link.send(
            encode(request(2, "tools/call", {"name": "steps", "arguments": {"count": 1}}))
        )
        answer, _ = await answer_of(link, 2)
        assert answer["result"]["content"][0]["text"] == "1 steps"
    assert {headers["accept-encoding"] for headers in seen} == {ACCEPT_ENCODING}


async def test_an_answer_in_a_coding_not_asked_for_ends_the_link_not_the_run() -> None:
    app = gzip_answers(http_app(build_server(), json_response=True), coding="br")
    report = RevisionReport("2025-11-25")
    async with served(app) as target, target.connect(report) as link:
        await link.send(initialize("2025-11-25"))
        with anyio.fail_after(GUARD):
            received = await link.receive()
    assert not isinstance(received, Received)


async def test_link_reads_the_standalone_get_stream() -> None:
    server = build_server()
    report = RevisionReport("2025-11-25")
    async with served(http_app(server)) as target, target.connect(report) as link:
        await open_session(link, "2025-11-25")
        await link.send(encode(request(2, "ping", {})))
        await answer_of(link, 2)
        # Sent outside any request's handler: it travels on the GET stream.
        await server.notify_tools_changed()
        message, where = await next_message(link)
    assert message["method"] == "notifications/tools/list_changed"
    assert where == "GET stream event 1"
    assert report.findings == []


async def test_an_event_over_the_limit_is_dropped_and_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("mcpspec.check.http.MAX_MESSAGE", 90)
    report = RevisionReport("2025-11-25")
    async with served(http_app(build_server())) as target, target.connect(report) as link:
        await open_session(link, "2025-11-25")
        params = {"name": "steps", "arguments": {"count": 1}, "_meta": {"progressToken": "p"}}
        await link.send(encode(request(2, "tools/call", params)))
        # The progress notification (over 90 bytes) is dropped; the answer fits.
        answer, places = await answer_of(link, 2)
        assert answer["result"]["content"][0]["text"] == "1 steps"
        assert places == ["POST 3 event 2"]
    [found] = problems(report)
    assert (found.check, found.where) == ("wire.message", "POST 3 event 1")
    assert "over the checker's limit of 90 bytes" in found.why


async def test_link_speaks_2026_with_mirrored_headers() -> None:
    server = Server("mirror", "1.0")
    region = {"type": "string", "x-mcp-header": "Region"}
    tools = [
        {
            "name": "query",
            "inputSchema": {"type": "object", "properties": {"region": region}},
        }
    ]

    @server.handler("tools/list")
    async def list_tools(request: Any, ctx: RequestContext) -> Any:
        return {"tools": tools, "ttlMs": 0, "cacheScope": "private"}

    @server.handler("tools/call")
    async def call(request: Any, ctx: RequestContext) -> Any:
        return {"content": [{"type": "text", "text": request.params.arguments["region"]}]}

    seen: list[dict[str, str]] = []
    report = RevisionReport(STATELESS)
    async with (
        served(record_headers(http_app(server), seen)) as target,
        target.connect(report) as link,
    ):
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}}
        await link.send(encode(listing))
        answer, _ = await answer_of(link, 1)
        assert answer["result"]["tools"][0]["name"] == "query"
        arguments = {"region": "eu-west"}
        params = {"name": "query", "arguments": arguments, "_meta": meta()}
        await link.send(
            encode({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
        )
        answer, places = await answer_of(link, 2)
        assert answer["result"]["content"][0]["text"] == "eu-west"
        assert places == ["POST 2 response"]
        assert link.session_id is None
    posted = seen[-1]
    assert posted["mcp-protocol-version"] == STATELESS
    assert posted["mcp-method"] == "tools/call"
    assert posted["mcp-name"] == "query"
    assert posted["mcp-param-region"] == "eu-west"
    assert "mcp-session-id" not in posted
    assert report.findings == []


async def test_link_cancels_a_2026_request_by_closing_its_stream() -> None:
    server = Server("hold", "1.0")
    cancelled = anyio.Event()

    @server.tool()
    async def hold(ctx: RequestContext) -> str:
        """Report progress, then wait until cancelled."""
        await ctx.report_progress(1, 2)
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    seen: list[dict[str, str]] = []
    report = RevisionReport(STATELESS)
    async with (
        served(record_headers(http_app(server), seen)) as target,
        target.connect(report) as link,
    ):
        params = {"name": "hold", "arguments": {}, "_meta": {**meta(), "progressToken": "t"}}
        await link.send(
            encode({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        )
        message, where = await next_message(link)
        assert message["method"] == "notifications/progress"
        assert where == "POST 1 event 1"
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 1},
        }
        await link.send(encode(cancel))
        with anyio.fail_after(GUARD):
            await cancelled.wait()
    assert len(seen) == 1  # the cancellation is not posted
    assert report.findings == []


async def test_link_falls_back_to_http_sse_for_2024_11_05() -> None:
    app = http_app(build_server(), legacy_sse=True)
    report = RevisionReport("2024-11-05")
    # The SSE URL takes no POST (405): the link looks for the endpoint event there.
    async with served(app, "/sse") as target, target.connect(report) as link:
        await link.send(initialize("2024-11-05"))
        answer, places = await answer_of(link, 1)
        assert link.transport == "sse"
        assert answer["result"]["protocolVersion"] == "2024-11-05"
        assert places == ["SSE stream event 1"]
        await link.send(INITIALIZED)
        await link.send(encode({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        answer, _ = await answer_of(link, 2)
        assert answer["result"] == {}
    assert report.findings == []


def never_answer_posts_to(app: App, path: str) -> App:
    """Never answer a POST to ``path`` (the client's timeout ends it)."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == path:
            await anyio.sleep_forever()
        await app(scope, receive, send)

    return wrapped


async def test_link_ends_when_the_http_sse_message_endpoint_never_answers() -> None:
    app = never_answer_posts_to(http_app(build_server(), legacy_sse=True), "/messages")
    report = RevisionReport("2024-11-05")
    async with serve_app(app) as base:
        target = HttpTarget(base + "/sse", timeout=1.0)
        async with target.connect(report) as link:
            await link.send(initialize("2024-11-05"))
            with anyio.fail_after(GUARD):
                assert await link.receive() is None  # ended, not a traceback
            assert "no answer in 1 s" in link.closed_reason


async def test_closing_a_session_does_not_read_the_answer_to_delete() -> None:
    sent = [0]

    async def endless_delete(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "DELETE":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            for _ in range(10_000):  # 640 MiB, a chunk at a time, until the client goes
                sent[0] += 1
                await send({"type": "http.response.body", "body": b"x" * 65536, "more_body": True})
                await anyio.sleep(0)
            await send({"type": "http.response.body", "body": b""})
            return
        await inner(scope, receive, send)

    inner = http_app(build_server())
    report = RevisionReport("2025-11-25")
    async with serve_app(endless_delete) as base:
        target = HttpTarget(base + "/mcp", timeout=1.0)
        async with target.connect(report) as link:
            await open_session(link, "2025-11-25")
        # Read, the body would have gone on for the whole second of the timeout.
        assert sent[0] < 200


@pytest.mark.parametrize("revision", ["2024-11-05", STATELESS])
async def test_link_ends_when_its_opening_request_is_refused_without_an_answer(
    revision: str,
) -> None:
    report = RevisionReport(revision)
    if revision == STATELESS:
        opening = encode(request(1, "server/discover", {"_meta": meta()}))
    else:
        opening = initialize(revision)
    # Nothing is served there (404, no body), and no HTTP+SSE endpoint either.
    async with (
        served(http_app(build_server()), "/elsewhere") as target,
        target.connect(report) as link,
    ):
        await link.send(opening)
        with anyio.fail_after(GUARD):
            assert await link.receive() is None
        assert "was refused with HTTP 404" in link.closed_reason
    assert report.findings == []


async def test_probes_skip_2026_on_a_server_without_it() -> None:
    app = http_app(build_server(), revisions=tuple(HANDSHAKE))
    report = RevisionReport(STATELESS, accepted=True)
    async with served(app) as target:
        await check_http(target, STATELESS, report, Options())
    assert {f.check for f in report.findings} == set(HTTP_CHECKS)
    assert all(f.outcome is Outcome.SKIPPED for f in report.findings)
    assert "server/discover of 2026-07-28 was not answered with a result" in report.findings[0].why


async def test_probes_skip_a_revision_the_server_did_not_accept() -> None:
    target = HttpTarget("http://127.0.0.1:9/mcp")  # never contacted
    report = RevisionReport("2025-06-18", accepted=False)
    await check_http(target, "2025-06-18", report, Options())
    assert {f.check for f in report.findings} == set(HTTP_CHECKS)
    assert all(f.outcome is Outcome.SKIPPED for f in report.findings)


def test_target_takes_http_urls_only() -> None:
    with pytest.raises(ValueError, match="not an http"):
        HttpTarget("ftp://example.com/mcp")
    target = HttpTarget("http://127.0.0.1:1/x/mcp", {"Authorization": "Bearer t", "Accept": "x"})
    assert target.path == "/x/mcp"
    assert target.headers == {"Authorization": "Bearer t"}  # the link writes Accept itself
    assert target.stderr == ""


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:99999/mcp", "http://127.0.0.1:abc/mcp", "http://[::1/mcp"]
)
def test_a_url_with_a_bad_port_is_a_usage_error(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from mcpspec.cli import main

    with pytest.raises(ValueError, match="not a usable URL"):
        HttpTarget(url)
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "--timeout", "1", url])
    assert exit_info.value.code == 2
    assert "not a usable URL" in capsys.readouterr().err


# -- broken apps: each defect found by exactly its check ---------------------------------------


async def test_a_notification_answered_200_is_an_http_status_failure() -> None:
    app = rewrite_status(http_app(build_server()), 202, 200)
    probe_report = RevisionReport("2025-11-25", accepted=True)
    link_report = RevisionReport("2025-11-25")
    async with served(app) as target:
        await check_http(target, "2025-11-25", probe_report, Options())
        async with target.connect(link_report) as link:
            await open_session(link, "2025-11-25")
            await link.send(encode({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
            await answer_of(link, 2)
    for report in (probe_report, link_report):
        [found] = problems(report)
        assert (found.check, found.outcome, found.where) == (
            "http.status",
            Outcome.FAILED,
            "POST /mcp",
        )
        assert "notifications/initialized was answered 200" in found.why
        assert "202 Accepted with no body" in found.why
        assert "2025-11-25 transports" in found.why


async def test_an_accepted_notification_whose_body_never_ends_is_given_up() -> None:
    report = RevisionReport("2025-11-25")
    async with serve_app(trickle_accepted(http_app(build_server()))) as base:
        target = HttpTarget(base + "/mcp", timeout=1.0)
        async with target.connect(report) as link:
            with anyio.fail_after(5):  # the trickle lasts 10 s
                await open_session(link, "2025-11-25")
            await link.send(encode({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
            await answer_of(link, 2)
    [found] = problems(report)
    assert (found.check, found.where) == ("http.status", "POST /mcp")
    assert "notifications/initialized was answered 202 with a body that did not end in 1 s" in (
        found.why
    )


async def test_requests_without_a_session_id_accepted_is_an_http_session_warning() -> None:
    app = lend_session(http_app(build_server()))
    report = RevisionReport("2025-06-18", accepted=True)
    async with served(app) as target:
        await check_http(target, "2025-06-18", report, Options())
    [found] = problems(report)
    assert (found.check, found.outcome, found.where) == (
        "http.session",
        Outcome.WARNING,
        "POST /mcp",
    )
    assert "without the Mcp-Session-Id" in found.why and "400" in found.why


async def test_an_unsupported_version_header_accepted_is_an_http_status_failure() -> None:
    app = drop_request_header(http_app(build_server()), b"mcp-protocol-version", b"1999-01-01")
    report = RevisionReport("2025-11-25", accepted=True)
    async with served(app) as target:
        await check_http(target, "2025-11-25", report, Options())
    [found] = problems(report)
    assert (found.check, found.where) == ("http.status", "POST /mcp")
    assert "MCP-Protocol-Version: 1999-01-01" in found.why


async def test_2026_unknown_method_without_404_is_an_http_status_failure() -> None:
    app = rewrite_status(http_app(build_server()), 404, 200)
    probe_report = RevisionReport(STATELESS, accepted=True)
    link_report = RevisionReport(STATELESS)
    async with served(app) as target:
        await check_http(target, STATELESS, probe_report, Options())
        async with target.connect(link_report) as link:
            unknown = {"jsonrpc": "2.0", "id": 1, "method": "no/such", "params": {"_meta": meta()}}
            await link.send(encode(unknown))
            answer, _ = await answer_of(link, 1)
            assert answer["error"]["code"] == -32601
    [found] = problems(probe_report)
    assert (found.check, found.where) == ("http.status", "POST /mcp")
    assert "unknown method was answered 200 with JSON-RPC error -32601" in found.why
    [found] = problems(link_report)
    assert (found.check, found.where) == ("http.status", "POST /mcp")
    assert "-32601 error answering no/such came with HTTP 200" in found.why
    assert "with 404" in found.why


async def test_a_session_id_that_is_not_visible_ascii_is_an_http_headers_failure() -> None:
    app = spoil_session_id(http_app(build_server()))
    report = RevisionReport("2025-11-25")
    async with served(app) as target, target.connect(report) as link:
        await link.send(initialize("2025-11-25"))
        await answer_of(link, 1)
        assert link.session_id is None  # not sent back
    [found] = problems(report)
    assert (found.check, found.where) == ("http.headers", "POST /mcp")
    assert "visible ASCII" in found.why


def test_a_probe_answer_shows_a_huge_error_code_clipped() -> None:
    from mcpspec.check.http_probes import _Exchange

    code = '"' + "9" * 1_000_000 + '"'
    answer = _Exchange(
        200, "application/json", httpx.Headers(), [b'{"error":{"code":%s}}' % code.encode()]
    )
    assert answer.shown().startswith("200 with JSON-RPC error")
    assert len(answer.shown()) < 2000


async def test_a_probe_keeps_the_first_message_and_responses_of_a_long_stream() -> None:
    from mcpspec.check.http_probes import _KEPT_MESSAGES, _Exchange, _Probes

    note = b'data: {"jsonrpc":"2.0","method":"notifications/message","params":{}}\n\n'
    answer = b'data: {"jsonrpc":"2.0","id":7,"result":{}}\n\n'
    stream = httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=note * 10_000 + answer
    )
    exchange = _Exchange(200, "text/event-stream", stream.headers)
    await _Probes._read(None, stream, exchange, 7)  # type: ignore[arg-type]
    assert len(exchange.messages) == 2 <= _KEPT_MESSAGES
    assert b'"id":7' in exchange.messages[1]
