"""The app's defences with its default settings, under uvicorn, seen by a raw HTTP
client: DNS rebinding (``Host``, ``Origin``), configured hosts and origins, bearer
tokens, bodies over the limit sent fast and slowly, clients that vanish in the middle
of an SSE response (cancellation in 2026-07-28, not in 2025-11-25), and session ids
that cannot be guessed."""

from __future__ import annotations

import asyncio
import itertools
import string
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
import pytest

from mcpspec.runtime.connection import RequestContext, Server
from mcpspec.runtime.connection.http import HttpSettings, http_app, security
from tests.http_kit import (
    ACCEPT_BOTH,
    GUARD,
    JSON,
    REVISION,
    SETTLE,
    STATELESS,
    STATELESS_META,
    Watched,
    call_tool,
    initialize,
    rpc,
    serving,
)

pytestmark = pytest.mark.anyio
#: uvicorn serves on asyncio.
ANYIO_BACKENDS = ("asyncio",)

BASE_HEADERS = {"content-type": JSON, "accept": ACCEPT_BOTH}


class Probe:
    """What the tools of the server under test went through."""

    def __init__(self) -> None:
        self.started = 0
        self.cancelled = 0
        self.finished = 0
        self.gate = anyio.Event()
        self.changed = anyio.Event()

    def bump(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def until(self, predicate: Any) -> None:
        """Wait (bounded) until ``predicate()`` holds."""
        with anyio.fail_after(GUARD):
            while not predicate():
                await self.changed.wait()


def probed_server(probe: Probe) -> Server:
    """``echo``, and ``slow``: reports progress, then waits for the probe's gate (or
    forever), noting whether it was cancelled or finished."""
    server = Server("http-security-fixture", "1.0")

    @server.tool()
    async def echo(message: str) -> str:
        return message

    @server.tool()
    async def slow(ctx: RequestContext) -> str:
        probe.started += 1
        probe.bump()
        await ctx.report_progress(1, 2, "started")
        try:
            await probe.gate.wait()
        except anyio.get_cancelled_exc_class():
            probe.cancelled += 1
            probe.bump()
            raise
        probe.finished += 1
        probe.bump()
        return "finished"

    return server


@asynccontextmanager
async def served(
    settings: HttpSettings | None = None, probe: Probe | None = None
) -> AsyncIterator[tuple[httpx.AsyncClient, Watched]]:
    server = probed_server(probe if probe is not None else Probe())
    watched = Watched(http_app(server, settings))
    async with serving(watched) as base, httpx.AsyncClient(base_url=base, timeout=GUARD) as client:
        yield client, watched


async def open_session(client: httpx.AsyncClient) -> dict[str, str]:
    """A 2025-11-25 session: the headers of its later POSTs."""
    response = await client.post("/mcp", json=initialize(), headers=BASE_HEADERS)
    assert response.status_code == 200, response.text
    headers = {
        **BASE_HEADERS,
        "mcp-session-id": response.headers["mcp-session-id"],
        "mcp-protocol-version": REVISION,
    }
    initialized = await client.post(
        "/mcp", json=rpc(None, "notifications/initialized"), headers=headers
    )
    assert initialized.status_code == 202
    return headers


def stateless_call(request_id: int | str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 ``tools/call`` (asking for progress)."""
    meta = {**STATELESS_META, "progressToken": f"progress-{request_id}"}
    return rpc(request_id, "tools/call", {"name": name, "arguments": arguments, "_meta": meta})


def stateless_headers(tool: str) -> dict[str, str]:
    return {
        **BASE_HEADERS,
        "mcp-protocol-version": STATELESS,
        "mcp-method": "tools/call",
        "mcp-name": tool,
    }


async def settled_tasks(baseline: int) -> int:
    """The number of asyncio tasks once it is back to ``baseline`` (a bounded wait
    loop: the server ends a request's tasks after the test saw its effect)."""
    with anyio.move_on_after(SETTLE):
        while len(asyncio.all_tasks()) > baseline:
            await anyio.sleep(0.01)
    return len(asyncio.all_tasks())


# -- DNS rebinding --------------------------------------------------------------------------


async def test_host_not_loopback_is_refused() -> None:
    async with served() as (client, watched):
        headers = await open_session(client)
        for host in ("evil.example", "evil.example:80", "localhost.evil.example", "10.0.0.1"):
            post = await client.post(
                "/mcp", json=initialize(), headers={**BASE_HEADERS, "host": host}
            )
            assert post.status_code == 421, (host, post.text)
            assert "result" not in post.json()
            get = await client.get("/mcp", headers={**headers, "host": host})
            assert get.status_code == 421, host
            delete = await client.delete("/mcp", headers={**headers, "host": host})
            assert delete.status_code == 421, host
        # The session was not ended by the refused DELETE.
        ping = await client.post("/mcp", json=rpc(1, "ping"), headers=headers)
        assert ping.status_code == 200
        assert watched.escaped == []


async def test_loopback_hosts_are_served() -> None:
    async with served() as (client, _):
        for host in ("localhost", "localhost:9", "127.0.0.1:1234", "[::1]:8000", "LOCALHOST"):
            response = await client.post(
                "/mcp", json=initialize(), headers={**BASE_HEADERS, "host": host}
            )
            assert response.status_code == 200, host


async def test_origin_of_another_site_is_403() -> None:
    async with served() as (client, _):
        headers = await open_session(client)
        for origin in (
            "https://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example",
            "http://evil.example:8000",
            "null",
            "file://",
        ):
            post = await client.post(
                "/mcp", json=initialize(), headers={**BASE_HEADERS, "origin": origin}
            )
            assert post.status_code == 403, (origin, post.text)
            call = await client.post(
                "/mcp",
                json=call_tool(1, "echo", {"message": "m"}),
                headers={**headers, "origin": origin},
            )
            assert call.status_code == 403, origin
            get = await client.get("/mcp", headers={**headers, "origin": origin})
            assert get.status_code == 403, origin


async def test_loopback_origins_are_accepted() -> None:
    async with served() as (client, _):
        for origin in (
            "http://localhost:5173",
            "http://127.0.0.1:8080",
            "https://[::1]:1",
            "http://localhost",
        ):
            response = await client.post(
                "/mcp", json=initialize(), headers={**BASE_HEADERS, "origin": origin}
            )
            assert response.status_code == 200, origin


async def test_configured_hosts_and_origins_replace_loopback() -> None:
    settings = HttpSettings(
        allowed_hosts=frozenset({"mcp.example.com"}),
        allowed_origins=frozenset({"https://app.example.com"}),
    )
    async with served(settings) as (client, _):

        async def status(**extra: str) -> int:
            headers = {**BASE_HEADERS, **extra}
            return (await client.post("/mcp", json=initialize(), headers=headers)).status_code

        assert await status(host="mcp.example.com") == 200
        assert await status(host="mcp.example.com:443") == 200
        assert await status(host="localhost") == 421
        assert await status(host="other.example.com") == 421
        host = "mcp.example.com"
        assert await status(host=host, origin="https://app.example.com") == 200
        assert await status(host=host, origin="http://localhost:3000") == 403
        assert await status(host=host, origin="https://app.example.com.evil.example") == 403
        assert await status(host=host, origin="http://app.example.com") == 403


async def test_wildcards_open_hosts_and_origins() -> None:
    settings = HttpSettings(allowed_hosts=frozenset({"*"}), allowed_origins=frozenset({"*"}))
    async with served(settings) as (client, _):
        headers = {**BASE_HEADERS, "host": "anything.example", "origin": "https://any.example"}
        response = await client.post("/mcp", json=initialize(), headers=headers)
        assert response.status_code == 200


# -- bearer tokens --------------------------------------------------------------------------


async def test_bearer_missing_or_invalid_is_401() -> None:
    metadata = "https://mcp.example.com/.well-known/oauth-protected-resource"
    settings = HttpSettings(verify_token=lambda token: token == "good", resource_metadata=metadata)
    async with served(settings) as (client, watched):
        good = {**BASE_HEADERS, "authorization": "Bearer good"}
        response = await client.post("/mcp", json=initialize(), headers=good)
        assert response.status_code == 200
        session = {
            **good,
            "mcp-session-id": response.headers["mcp-session-id"],
            "mcp-protocol-version": REVISION,
        }
        for authorization, invalid in ((None, False), ("Bearer bad", True), ("Token good", False)):
            for method, body in (
                ("POST", initialize()),
                ("POST", rpc(1, "ping")),
                ("GET", None),
                ("DELETE", None),
            ):
                headers = {k: v for k, v in session.items() if k != "authorization"}
                if authorization is not None:
                    headers["authorization"] = authorization
                if method == "GET":
                    headers["accept"] = "text/event-stream"
                response = await client.request(method, "/mcp", json=body, headers=headers)
                assert response.status_code == 401, (authorization, method, response.text)
                challenge = response.headers["www-authenticate"]
                assert challenge.startswith("Bearer")
                assert f'resource_metadata="{metadata}"' in challenge
                assert ('error="invalid_token"' in challenge) == invalid
        # The refused DELETEs did not end the session.
        assert (await client.post("/mcp", json=rpc(2, "ping"), headers=session)).status_code == 200
        assert watched.escaped == []


# -- bodies over the limit -----------------------------------------------------------------

LIMIT = 4096
PIECE = 16384
#: What the client would send in all: far more than the limit.
PIECES = 512


@dataclass
class Upload:
    """What a client streaming a large body saw."""

    head: bytes = b""
    sent: int = 0
    sent_when_answered: int = -1
    exhausted: bool = False
    ended_by_server: bool = False


async def upload(base: str, *, chunked: bool) -> Upload:
    """POST ``PIECES`` pieces of ``PIECE`` bytes with pauses between them over a raw
    connection, reading at the same time: how far the client got when the answer came,
    and whether the server ended the connection before the body was all sent."""
    host, port = base.removeprefix("http://").rsplit(":", 1)
    total = PIECE * PIECES
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {total}"
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: {JSON}\r\n"
        f"Accept: {ACCEPT_BOTH}\r\n{framing}\r\n\r\n"
    ).encode()
    piece = b"%x\r\n" % PIECE + b" " * PIECE + b"\r\n" if chunked else b" " * PIECE
    seen = Upload()
    answered = anyio.Event()
    over = anyio.Event()
    stream = await anyio.connect_tcp(host, int(port))

    async def write() -> None:
        try:
            await stream.send(head)
            for _ in range(PIECES):
                await stream.send(piece)
                seen.sent += PIECE
                await anyio.sleep(0.001)  # a slow client: pieces arrive one by one
            if chunked:
                await stream.send(b"0\r\n\r\n")
            seen.exhausted = True
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            seen.ended_by_server = True
        over.set()

    async def read() -> None:
        try:
            while True:
                seen.head += await stream.receive()
                if b"\r\n" in seen.head and not answered.is_set():
                    seen.sent_when_answered = seen.sent
                    answered.set()
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            seen.ended_by_server = True
            over.set()

    with anyio.fail_after(GUARD * 3):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(write)
            task_group.start_soon(read)
            await answered.wait()
            await over.wait()
            task_group.cancel_scope.cancel()
    await stream.aclose()
    return seen


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_body_over_the_limit_is_refused_before_it_is_read(chunked: bool) -> None:
    async with served(HttpSettings(max_body_bytes=LIMIT)) as (client, watched):
        seen = await upload(str(client.base_url).rstrip("/"), chunked=chunked)
        assert seen.head.startswith(b"HTTP/1.1 413"), seen.head[:100]
        # The answer came while the client was still sending ...
        assert 0 <= seen.sent_when_answered < PIECE * PIECES
        # ... the app held little of the body ...
        assert watched.body_bytes_read <= LIMIT + 4 * PIECE
        # ... and the server did not go on taking it in (it ended the connection).
        assert not seen.exhausted, f"the server read all {seen.sent} bytes"
        assert seen.ended_by_server
        # The app serves the next client.
        response = await client.post("/mcp", json=initialize(), headers=BASE_HEADERS)
        assert response.status_code == 200
        assert watched.escaped == []


async def test_body_at_the_limit_is_served() -> None:
    async with served(HttpSettings(max_body_bytes=LIMIT)) as (client, _):
        headers = await open_session(client)
        body = call_tool(1, "echo", {"message": ""})
        room = LIMIT - len(httpx.Request("POST", "/", json=body).content)
        body["params"]["arguments"]["message"] = "x" * room
        exact = httpx.Request("POST", "/", json=body).content
        assert len(exact) == LIMIT
        response = await client.post("/mcp", content=exact, headers=headers)
        assert response.status_code == 200
        over = await client.post("/mcp", content=exact + b" ", headers=headers)
        assert over.status_code == 413


# -- clients that vanish mid-stream ----------------------------------------------------------


async def read_until_progress(lines: AsyncIterator[str]) -> str | None:
    """Read SSE lines up to the first message event's data; the id of that event."""
    event_id = None
    async for line in lines:
        if line.startswith("id:"):
            event_id = line[3:].strip()
        if line.startswith("data:") and line[5:].strip():
            assert "notifications/progress" in line
            return event_id
    raise AssertionError("the stream ended before the progress notification")


async def test_stateless_client_closing_the_stream_cancels_the_handler() -> None:
    probe = Probe()
    async with served(probe=probe) as (client, watched):
        warm = await client.post(
            "/mcp",
            json=stateless_call(0, "echo", {"message": "m"}),
            headers=stateless_headers("echo"),
        )
        assert warm.status_code == 200, warm.text
        baseline = len(asyncio.all_tasks())
        with anyio.fail_after(GUARD):
            async with client.stream(
                "POST",
                "/mcp",
                json=stateless_call(1, "slow", {}),
                headers=stateless_headers("slow"),
            ) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                await read_until_progress(response.aiter_lines())
        # The stream is closed: the handler is cancelled, nothing is left behind.
        await probe.until(lambda: probe.cancelled == 1)
        assert probe.finished == 0
        assert await settled_tasks(baseline) <= baseline
        assert watched.escaped == []
        # The endpoint goes on serving.
        again = await client.post(
            "/mcp",
            json=stateless_call(2, "echo", {"message": "again"}),
            headers=stateless_headers("echo"),
        )
        assert again.json()["result"]["content"][0]["text"] == "again"


async def test_handshake_disconnect_is_not_cancellation() -> None:
    """2025-11-25: the client's stream breaking does not cancel the request; the client
    resumes the stream (``GET`` with ``Last-Event-ID``) and gets the result."""
    probe = Probe()
    async with served(probe=probe) as (client, watched):
        headers = await open_session(client)
        body = call_tool(2, "slow", {})
        body["params"]["_meta"] = {"progressToken": "p"}
        with anyio.fail_after(GUARD):
            async with client.stream("POST", "/mcp", json=body, headers=headers) as response:
                assert response.headers["content-type"].startswith("text/event-stream")
                last_event_id = await read_until_progress(response.aiter_lines())
        assert last_event_id is not None
        # A request on the same session after the break is served meanwhile.
        ping = await client.post("/mcp", json=rpc(3, "ping"), headers=headers)
        assert ping.status_code == 200
        assert probe.cancelled == 0
        probe.gate.set()
        await probe.until(lambda: probe.finished == 1)
        resume = {**headers, "accept": "text/event-stream", "last-event-id": last_event_id}
        with anyio.fail_after(GUARD):
            async with client.stream("GET", "/mcp", headers=resume) as resumed:
                assert resumed.status_code == 200
                answer = None
                async for line in resumed.aiter_lines():
                    if line.startswith("data:") and '"result"' in line:
                        answer = line[5:].strip()
                        break
        assert answer is not None and '"finished"' in answer and '"id":2' in answer
        assert probe.cancelled == 0
        assert watched.escaped == []


async def test_handshake_cancelled_notification_cancels_and_frees_the_request() -> None:
    """2025-11-25: ``notifications/cancelled`` cancels the handler of a request whose
    client went away; nothing of that request stays behind."""
    probe = Probe()
    async with served(probe=probe) as (client, watched):
        headers = await open_session(client)
        warm = await client.post(
            "/mcp", json=call_tool(1, "echo", {"message": "m"}), headers=headers
        )
        assert warm.status_code == 200
        baseline = len(asyncio.all_tasks())
        body = call_tool(2, "slow", {})
        body["params"]["_meta"] = {"progressToken": "p"}
        with anyio.fail_after(GUARD):
            async with client.stream("POST", "/mcp", json=body, headers=headers) as response:
                await read_until_progress(response.aiter_lines())
        assert probe.cancelled == 0
        cancel = rpc(None, "notifications/cancelled", {"requestId": 2, "reason": "user"})
        accepted = await client.post("/mcp", json=cancel, headers=headers)
        assert accepted.status_code == 202
        await probe.until(lambda: probe.cancelled == 1)
        assert probe.finished == 0
        assert await settled_tasks(baseline) <= baseline, "the cancelled request's tasks linger"
        assert watched.escaped == []


async def test_handshake_cancelled_notification_ends_an_open_stream() -> None:
    """2025-11-25: a request cancelled while its client still reads its stream gets no
    response; the stream ends rather than staying open for ever."""
    probe = Probe()
    async with served(probe=probe) as (client, _):
        headers = await open_session(client)
        body = call_tool(2, "slow", {})
        body["params"]["_meta"] = {"progressToken": "p"}
        async with client.stream("POST", "/mcp", json=body, headers=headers) as response:
            lines = response.aiter_lines()
            await read_until_progress(lines)
            cancel = rpc(None, "notifications/cancelled", {"requestId": 2})
            assert (await client.post("/mcp", json=cancel, headers=headers)).status_code == 202
            await probe.until(lambda: probe.cancelled == 1)
            rest: list[str] = []
            with anyio.move_on_after(SETTLE) as guard:
                rest.extend([line async for line in lines])
            assert not guard.cancelled_caught, "the stream of a cancelled request stays open"
            assert not any('"id":2' in line for line in rest)


# -- session ids ------------------------------------------------------------------------------

VISIBLE_ASCII = frozenset(chr(c) for c in range(0x21, 0x7F))
#: The characters of URL-safe base64: 6 bits each.
BASE64URL = frozenset(string.ascii_letters + string.digits + "-_")


def longest_shared_prefix(texts: list[str]) -> int:
    """The length of the longest prefix two of ``texts`` share."""
    ordered = sorted(texts)
    longest = 0
    for a, b in itertools.pairwise(ordered):
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        longest = max(longest, n)
    return longest


async def test_session_ids_cannot_be_guessed() -> None:
    async with served() as (client, watched):
        ids = []
        for _ in range(200):
            response = await client.post("/mcp", json=initialize(), headers=BASE_HEADERS)
            assert response.status_code == 200
            ids.append(response.headers["mcp-session-id"])
        assert len(set(ids)) == len(ids)
        for session_id in ids:
            assert set(session_id) <= VISIBLE_ASCII, session_id
            # >= 128 bits: at least 22 characters of 6 bits each.
            assert set(session_id) <= BASE64URL and len(session_id) >= 22, session_id
        # No structure (a counter, a timestamp): no two ids share a long prefix or
        # suffix (sorted, the longest shared prefix is between neighbours).
        assert longest_shared_prefix(ids) < 6
        assert longest_shared_prefix([i[::-1] for i in ids]) < 6
        # Every character position varies.
        assert all(len({i[n] for i in ids}) > 16 for n in range(22))
        assert watched.escaped == []


async def test_deleted_session_is_404_and_never_reissued() -> None:
    async with served() as (client, _):
        headers = await open_session(client)
        ended = headers["mcp-session-id"]
        assert (await client.delete("/mcp", headers=headers)).status_code == 200
        for method, body in (("POST", rpc(1, "ping")), ("GET", None), ("DELETE", None)):
            extra = {"accept": "text/event-stream"} if method == "GET" else {}
            response = await client.request(method, "/mcp", json=body, headers={**headers, **extra})
            assert response.status_code == 404, (method, response.text)
        minted = set()
        for _ in range(100):
            response = await client.post("/mcp", json=initialize(), headers=BASE_HEADERS)
            minted.add(response.headers["mcp-session-id"])
        assert ended not in minted


async def test_unknown_session_is_404() -> None:
    async with served() as (client, _):
        headers = await open_session(client)
        for session_id in ("guess", headers["mcp-session-id"][::-1], "0" * 43):
            guessed = {**headers, "mcp-session-id": session_id}
            post = await client.post("/mcp", json=rpc(1, "ping"), headers=guessed)
            assert post.status_code == 404, session_id
            get = await client.get("/mcp", headers={**guessed, "accept": "text/event-stream"})
            assert get.status_code == 404
            delete = await client.delete("/mcp", headers=guessed)
            assert delete.status_code == 404
        # The real session is untouched by the guesses.
        assert (await client.post("/mcp", json=rpc(2, "ping"), headers=headers)).status_code == 200


JSON_AND_SSE = ("application/json", "text/event-stream")


@pytest.mark.parametrize(
    "accept",
    [
        "application/json, text/event-stream",
        "application/json;q=0.5, text/event-stream;q=0.1",
        "*/*",
        "application/*, text/*",
        "text/event-stream, application/json; charset=utf-8; q=1",
        "*/*;q=0.1, application/json",
    ],
)
def test_accept_listing_both_types_with_a_weight_is_taken(accept: str) -> None:
    assert security.check_accept({"accept": accept}, *JSON_AND_SSE) is None


@pytest.mark.parametrize(
    "accept",
    [
        "application/json;q=0, text/event-stream",
        "application/json, text/event-stream;q=0.000",
        "*/*, application/json;q=0",  # the more specific range decides
        "application/*;q=0, text/event-stream, */*",
        "application/json;q=none, text/event-stream",  # no weight: the range is left out
        "text/event-stream",
        "",
    ],
)
def test_accept_refusing_a_type_with_q_0_is_406(accept: str) -> None:
    """RFC 9110: a weight of 0 means "not acceptable"."""
    refusal = security.check_accept({"accept": accept}, *JSON_AND_SSE)
    assert refusal is not None and refusal.status == 406
