"""The sessions of the handshake eras (2025-03-26 to 2025-11-25) of the ASGI app, driven
in process (no sockets): where each answer goes when a batch member is cancelled or a
POST's stream breaks, GETs resuming a live stream, what a request's POST gets when its
session ends or it is cancelled (never 202), idle expiry of busy sessions, the GET
stream of an ended session, refused ``initialize``, and the status of GET/DELETE
without sessions, with a bad ``MCP-Protocol-Version`` or an unknown ``Last-Event-ID``.

:class:`Exchange` plays one HTTP request against the app; its :meth:`~Exchange.close`
is the client going away, after which the app's sends raise ``OSError`` (what the
ASGI spec asks of servers) or, with ``raise_on_closed=False``, vanish (uvicorn).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import anyio
import anyio.abc
import pytest

from mcpspec.runtime.connection import RequestContext, Server
from mcpspec.runtime.connection.http import event_store as event_store_module
from mcpspec.runtime.connection.http import handshake as handshake_module
from mcpspec.runtime.connection.http import http_app
from mcpspec.runtime.connection.http import sessions as sessions_module
from tests.http_app_kit import ACCEPT, build_server, request, sse_messages

pytestmark = pytest.mark.anyio

#: A hang guard for what the test itself causes (never a timed assertion).
GUARD = 5
JSON_TYPE = "application/json"


ANYIO_BACKENDS = ("asyncio",)


class Exchange:
    """One HTTP request to an ASGI app and the response it gets, in process."""

    def __init__(
        self,
        app: Any,
        method: str,
        headers: dict[str, str],
        body: Any = None,
        *,
        raise_on_closed: bool = True,
    ) -> None:
        self.app = app
        self.method = method
        self.headers = [(k.encode(), v.encode()) for k, v in headers.items()]
        self.body = b"" if body is None else json.dumps(body).encode()
        self.raise_on_closed = raise_on_closed
        self.status: int | None = None
        self.response_headers: dict[str, str] = {}
        self.chunks: list[bytes] = []
        #: The response's last body message came (``more_body`` false).
        self.complete = False
        self.closed = anyio.Event()
        self.finished = anyio.Event()
        self._updated = anyio.Event()
        self._body_sent = False

    async def receive(self) -> dict[str, Any]:
        if not self._body_sent:
            self._body_sent = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.closed.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        if self.closed.is_set():
            if self.raise_on_closed:
                raise OSError("the client went away")
            return
        if message["type"] == "http.response.start":
            assert self.status is None, "a second http.response.start"
            self.status = message["status"]
            self.response_headers = {k.decode(): v.decode() for k, v in message["headers"]}
        else:
            assert self.status is not None and not self.complete, "a body out of place"
            self.chunks.append(message.get("body", b""))
            self.complete = not message.get("more_body", False)
        self._updated.set()
        self._updated = anyio.Event()

    async def run(self) -> None:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": self.method,
            "scheme": "http",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "root_path": "",
            "query_string": b"",
            "headers": [(b"host", b"127.0.0.1:8000"), *self.headers],
            "client": ("127.0.0.1", 5555),
            "server": ("127.0.0.1", 8000),
        }
        try:
            await self.app(scope, self.receive, self.send)
        finally:
            self.finished.set()

    async def close(self) -> None:
        """The client goes away."""
        self.closed.set()

    async def wait_for(self, check: Callable[[Exchange], bool]) -> None:
        """Return once ``check`` holds for what arrived."""
        with anyio.fail_after(GUARD):
            while not check(self):
                await self._updated.wait()

    async def done(self) -> Exchange:
        """Return once the app returned from the request."""
        with anyio.fail_after(GUARD):
            await self.finished.wait()
        return self

    @property
    def text(self) -> str:
        return b"".join(self.chunks).decode()

    @property
    def content_type(self) -> str | None:
        return self.response_headers.get("content-type")

    def messages(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages of an SSE response."""
        return sse_messages(self.text)

    def event_ids(self) -> list[str]:
        return [line[4:] for line in self.text.splitlines() if line.startswith("id: ")]

    def json(self) -> Any:
        return json.loads(self.text)


def start(
    tg: anyio.abc.TaskGroup,
    app: Any,
    method: str,
    headers: dict[str, str],
    body: Any = None,
    **options: Any,
) -> Exchange:
    exchange = Exchange(app, method, headers, body, **options)
    tg.start_soon(exchange.run)
    return exchange


def initialize_body(version: str = "2025-11-25", request_id: Any = 1) -> dict[str, Any]:
    return request(
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
        request_id,
    )


async def open_session(
    tg: anyio.abc.TaskGroup, app: Any, version: str = "2025-11-25"
) -> dict[str, str]:
    """Initialize a session; the headers every later POST of it carries."""
    plain = {"accept": ACCEPT, "content-type": JSON_TYPE}
    opened = await start(tg, app, "POST", plain, initialize_body(version)).done()
    assert opened.status == 200, opened.text
    headers = {
        **plain,
        "mcp-protocol-version": version,
        "mcp-session-id": opened.response_headers["mcp-session-id"],
    }
    ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await start(tg, app, "POST", headers, ready).done()).status == 202
    return headers


def get_headers(headers: dict[str, str], **extra: str) -> dict[str, str]:
    return {**headers, "accept": "text/event-stream", **extra}


def call(name: str, request_id: int, progress: str | None = None, **arguments: Any) -> Any:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if progress is not None:
        params["_meta"] = {"progressToken": progress}
    return request("tools/call", params, request_id)


def cancel(request_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request_id, "reason": "user"},
    }


def kinds(messages: list[dict[str, Any]]) -> list[str]:
    """Each message's method, or ``response <id>``."""
    return [m.get("method") or f"response {m.get('id')}" for m in messages]


async def two_steps_streaming(
    tg: anyio.abc.TaskGroup, app: Any, headers: dict[str, str], **options: Any
) -> Exchange:
    """POST a call of ``two_steps`` (id 7, with a progress token); return once its
    first progress report arrived on the POST's stream."""
    post = start(tg, app, "POST", headers, call("two_steps", 7, progress="p"), **options)
    await post.wait_for(lambda e: len(e.messages()) == 1)
    return post


def resume(
    tg: anyio.abc.TaskGroup, app: Any, headers: dict[str, str], last_event_id: str
) -> Exchange:
    """A GET resuming a stream after ``last_event_id``."""
    return start(tg, app, "GET", get_headers(headers, **{"last-event-id": last_event_id}))


class Steps:
    """A tool ``two_steps`` that reports progress 1, waits for ``first``, reports
    progress 2 (then sets ``second_sent``), waits for ``second``, answers."""

    def __init__(self, server: Server) -> None:
        self.first = anyio.Event()
        self.second_sent = anyio.Event()
        self.second = anyio.Event()

        @server.tool()
        async def two_steps(ctx: RequestContext) -> str:
            """Two progress reports, each after the test's go."""
            await ctx.report_progress(1, 3)
            await self.first.wait()
            await ctx.report_progress(2, 3)
            self.second_sent.set()
            await self.second.wait()
            return "done"


def with_quiet_hold(server: Server) -> tuple[anyio.Event, anyio.Event]:
    """Add a tool ``quiet`` that sends nothing until released; (started, release)."""
    started, release = anyio.Event(), anyio.Event()

    @server.tool()
    async def quiet() -> str:
        """Wait for the test, silently."""
        started.set()
        await release.wait()
        return "released"

    return started, release


# -- where answers go --------------------------------------------------------------------------


async def test_a_batch_reply_goes_to_the_batch_post_when_a_sibling_is_cancelled() -> None:
    # The cancellation completes the batch, and the batch's reply is flushed from the
    # task of the notification's POST: it must still leave on the batch's POST.
    server, _ = build_server()
    started, _ = with_quiet_hold(server)
    app = http_app(server)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app, "2025-03-26")
        batch = start(tg, app, "POST", headers, [call("quiet", 1), call("echo", 2, text="b")])
        with anyio.fail_after(GUARD):
            await started.wait()
        cancelled = await start(tg, app, "POST", headers, cancel(1)).done()
        assert (cancelled.status, cancelled.text) == (202, "")
        await batch.done()
        assert batch.status == 200 and batch.content_type == JSON_TYPE
        assert batch.json() == [
            {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "b"}]}}
        ]
        tg.cancel_scope.cancel()


async def test_a_batch_whose_requests_are_all_cancelled_ends() -> None:
    server, _ = build_server()
    started, _ = with_quiet_hold(server)
    app = http_app(server)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app, "2025-03-26")
        batch = start(tg, app, "POST", headers, [call("quiet", 1)])
        with anyio.fail_after(GUARD):
            await started.wait()
        assert (await start(tg, app, "POST", headers, cancel(1)).done()).status == 202
        await batch.done()
        # Nothing answers a cancelled request, yet a request's POST is never 202.
        assert batch.status == 200 and batch.content_type == "text/event-stream"
        assert batch.complete and batch.messages() == []
        tg.cancel_scope.cancel()


async def test_what_a_broken_post_stream_still_sends_is_kept_for_its_resumption() -> None:
    # The POST's stream breaks (sends raise OSError); the handler goes on. The rest of
    # the stream, its response included, reaches the GET resuming it, and nothing
    # reaches the standalone stream, which must never carry a response.
    server, _ = build_server()
    steps = Steps(server)
    app = http_app(server)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        standalone = start(tg, app, "GET", get_headers(headers))
        await standalone.wait_for(lambda e: e.status is not None)
        post = await two_steps_streaming(tg, app, headers)
        last_seen = post.event_ids()[-1]
        await post.close()
        steps.first.set()
        with anyio.fail_after(GUARD):
            await steps.second_sent.wait()
        resumed = resume(tg, app, headers, last_seen)
        await resumed.wait_for(lambda e: len(e.messages()) == 1)
        steps.second.set()
        await resumed.wait_for(lambda e: e.complete)
        assert kinds(resumed.messages()) == ["notifications/progress", "response 7"]
        assert resumed.messages()[0]["params"]["progress"] == 2
        await server.notify_tools_changed()  # a marker: what was diverted comes first
        await standalone.wait_for(lambda e: len(e.messages()) >= 1)
        assert kinds(standalone.messages()) == ["notifications/tools/list_changed"]
        tg.cancel_scope.cancel()


async def test_a_response_is_never_diverted_to_the_standalone_stream() -> None:
    # Not resumable: nobody can get the rest of a broken stream. Its response is
    # dropped (its notifications may go to the standalone stream).
    server, _ = build_server()
    steps = Steps(server)
    app = http_app(server, resumable=False)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        standalone = start(tg, app, "GET", get_headers(headers))
        await standalone.wait_for(lambda e: e.status is not None)
        post = await two_steps_streaming(tg, app, headers)
        await post.close()
        steps.first.set()
        steps.second.set()
        await post.done()
        await server.notify_tools_changed()  # a marker: what was diverted comes first
        await standalone.wait_for(lambda e: len(e.messages()) >= 1)
        assert kinds(standalone.messages()) == ["notifications/tools/list_changed"]
        tg.cancel_scope.cancel()


async def test_a_request_answered_at_once_leaves_no_stream_and_one_that_waits_does() -> None:
    # The POST's channel (and the session's record of it, which ending the session
    # answers from) lasts as long as its handler runs: a handler that answers at once
    # leaves nothing in the session, one that waits is known to it until it ends.
    server, _ = build_server()
    started, release = with_quiet_hold(server)
    app = http_app(server)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        session = app.sessions.get(headers["mcp-session-id"])
        assert session is not None
        made: list[Any] = []
        original = session.note_channel

        def spy(channel: Any) -> None:
            made.append(channel)
            original(channel)

        session.note_channel = spy  # type: ignore[method-assign]
        quick = await start(tg, app, "POST", headers, call("echo", 8, text="q")).done()
        assert quick.status == 200 and quick.content_type == JSON_TYPE
        assert quick.json()["result"]["content"][0]["text"] == "q"
        assert len(made) == 1 and session.live == {}
        post = start(tg, app, "POST", headers, call("quiet", 9))
        with anyio.fail_after(GUARD):
            await started.wait()
        assert len(made) == 2 and list(session.live.values()) == made[1:]
        release.set()
        await post.done()
        assert post.json()["result"]["content"][0]["text"] == "released"
        assert session.live == {}
        tg.cancel_scope.cancel()


async def test_a_leftover_task_sends_on_the_standalone_stream_after_a_plain_answer() -> None:
    # Answered as JSON without a channel, the POST is over: a notification its
    # handler's leftover task sends later travels on the standalone stream.
    server, _ = build_server()
    later = anyio.Event()
    sent = anyio.Event()
    leftovers: set[Any] = set()

    @server.tool()
    async def leave_behind(ctx: RequestContext) -> str:
        """Answer at once; a task of its own notifies later."""

        async def notify_later() -> None:
            await later.wait()
            await ctx.log("info", "after the answer")
            sent.set()

        leftovers.add(asyncio.get_running_loop().create_task(notify_later()))
        return "answered"

    app = http_app(server)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        standalone = start(tg, app, "GET", get_headers(headers))
        await standalone.wait_for(lambda e: e.status is not None)
        post = await start(tg, app, "POST", headers, call("leave_behind", 5)).done()
        assert post.status == 200 and post.content_type == JSON_TYPE
        assert post.json()["result"]["content"][0]["text"] == "answered"
        later.set()
        with anyio.fail_after(GUARD):
            await sent.wait()
        await standalone.wait_for(lambda e: len(e.messages()) >= 1)
        assert kinds(standalone.messages()) == ["notifications/message"]
        assert standalone.messages()[0]["params"]["data"] == "after the answer"
        tg.cancel_scope.cancel()


async def test_a_request_reusing_the_id_of_one_in_flight_is_refused_on_its_own_post() -> None:
    # Two POSTs of one session carry requests with the same id: the second is refused,
    # on the second POST; the first still gets its own answer, on its own POST, though
    # the id that leads there is now the second's too.
    server, _ = build_server()
    started, release = with_quiet_hold(server)
    app = http_app(server)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        first = start(tg, app, "POST", headers, call("quiet", 9))
        with anyio.fail_after(GUARD):
            await started.wait()
        second = await start(tg, app, "POST", headers, call("echo", 9, text="x")).done()
        # The session refuses it without answering it (its id is the first's): the
        # POST is a bad request.
        assert second.status == 400 and second.content_type == JSON_TYPE
        assert second.json()["error"]["data"]["rule"] == "duplicate-request-id"
        release.set()
        await first.done()
        assert first.json()["result"]["content"][0]["text"] == "released"
        tg.cancel_scope.cancel()


async def test_progress_of_concurrent_requests_leaves_on_each_ones_post() -> None:
    server, _ = build_server()
    gates = {1: anyio.Event(), 2: anyio.Event()}

    @server.tool()
    async def report(ctx: RequestContext, which: int) -> str:
        """Report progress naming ``which``, wait for its gate, answer."""
        await ctx.report_progress(which, None, message=f"from {which}")
        await gates[which].wait()
        return f"done {which}"

    app = http_app(server)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        posts = {
            which: start(
                tg, app, "POST", headers, call("report", 10 + which, f"p{which}", which=which)
            )
            for which in (1, 2)
        }
        for post in posts.values():
            await post.wait_for(lambda e: len(e.messages()) == 1)
        for which in (2, 1):
            gates[which].set()
            await posts[which].done()
        for which, post in posts.items():
            messages = post.messages()
            assert kinds(messages) == ["notifications/progress", f"response {10 + which}"]
            assert messages[0]["params"]["message"] == f"from {which}"
        tg.cancel_scope.cancel()


# -- resuming a live stream -------------------------------------------------------------------


async def test_a_get_resuming_a_live_post_stream_ends_after_the_response() -> None:
    server, _ = build_server()
    steps = Steps(server)
    app = http_app(server)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        post = await two_steps_streaming(tg, app, headers, raise_on_closed=False)
        await post.close()
        resumed = resume(tg, app, headers, post.event_ids()[-1])
        await resumed.wait_for(lambda e: e.status is not None)
        steps.first.set()
        steps.second.set()
        await resumed.done()
        assert resumed.complete
        assert kinds(resumed.messages()) == ["notifications/progress", "response 7"]
        tg.cancel_scope.cancel()


async def test_events_sent_while_a_resume_replays_reach_the_resumed_stream() -> None:
    # The store's replay awaits (a shared store does I/O); the handler sends meanwhile.
    # That event is in neither the replay it read nor, unless the POST's writers wait,
    # the live part that follows.
    server, _ = build_server()
    steps = Steps(server)

    class SlowStore(event_store_module.MemoryEventStore):
        async def replay(
            self, session_id: str, last_event_id: str
        ) -> list[event_store_module.StoredEvent] | None:
            found = await super().replay(session_id, last_event_id)
            steps.first.set()  # the handler sends while the store's answer travels
            await anyio.wait_all_tasks_blocked()
            return found

    app = http_app(server, event_store=SlowStore())
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        post = await two_steps_streaming(tg, app, headers, raise_on_closed=False)
        await post.close()
        resumed = resume(tg, app, headers, post.event_ids()[-1])
        with anyio.fail_after(GUARD):
            await steps.second_sent.wait()
        steps.second.set()
        await resumed.done()
        messages = resumed.messages()
        assert kinds(messages) == ["notifications/progress", "response 7"]
        assert messages[0]["params"]["progress"] == 2
        tg.cancel_scope.cancel()


async def test_an_unknown_last_event_id_leaves_the_session_alive() -> None:
    # 404 would tell the client that its session is gone.
    server, _ = build_server()
    app = http_app(server)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        resumed = await resume(tg, app, headers, "nope.1").done()
        assert resumed.status == 400
        assert resumed.json()["error"]["message"] == "Unknown Last-Event-ID"
        after = await start(tg, app, "POST", headers, call("echo", 2, text="x")).done()
        assert after.status == 200 and after.json()["id"] == 2
        tg.cancel_scope.cancel()


# -- a request's POST is never 202 ------------------------------------------------------------


@pytest.mark.parametrize("ending", ["delete", "evict"])
async def test_a_request_whose_session_ends_is_answered_with_an_error(ending: str) -> None:
    server, _ = build_server()
    started, release = with_quiet_hold(server)
    app = http_app(server, max_sessions=1)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        post = start(tg, app, "POST", headers, call("quiet", 9))
        with anyio.fail_after(GUARD):
            await started.wait()
        if ending == "delete":
            assert (await start(tg, app, "DELETE", headers).done()).status == 200
        else:
            await open_session(tg, app)
        # Answered at once (its handler, in the POST's task, gets a short linger).
        await post.wait_for(lambda e: e.complete)
        assert post.status == 200 and post.content_type == JSON_TYPE
        answer = post.json()
        assert answer["id"] == 9 and answer["error"]["code"] == -32000
        release.set()  # else the ended session lingers for its handler
        tg.cancel_scope.cancel()


async def test_a_streamed_request_whose_session_ends_gets_its_error_on_the_stream() -> None:
    server, _ = build_server()
    steps = Steps(server)
    app = http_app(server)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        post = await two_steps_streaming(tg, app, headers)
        assert (await start(tg, app, "DELETE", headers).done()).status == 200
        await post.wait_for(lambda e: e.complete)
        messages = post.messages()
        assert kinds(messages) == ["notifications/progress", "response 7"]
        assert messages[1]["error"]["code"] == -32000
        steps.first.set()  # else the ended session lingers for its handler
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("json_response", [False, True])
async def test_a_cancelled_request_is_not_answered_202(json_response: bool) -> None:
    server, _ = build_server()
    started, _ = with_quiet_hold(server)
    app = http_app(server, json_response=json_response)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        post = start(tg, app, "POST", headers, call("quiet", 9))
        with anyio.fail_after(GUARD):
            await started.wait()
        assert (await start(tg, app, "POST", headers, cancel(9)).done()).status == 202
        await post.done()
        assert post.status == 200 and post.complete
        if json_response:
            # JSON only: a body must answer the request.
            assert post.content_type == JSON_TYPE
            assert post.json()["id"] == 9 and post.json()["error"]["code"] == -32800
        else:
            # A stream that ends with no response (a cancelled request gets none).
            assert post.content_type == "text/event-stream" and post.messages() == []
        tg.cancel_scope.cancel()


# -- session lifetime -------------------------------------------------------------------------


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


async def test_a_busy_session_does_not_expire(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    monkeypatch.setattr(sessions_module, "time", clock)
    monkeypatch.setattr(handshake_module, "time", clock, raising=False)
    server, _ = build_server()
    started, release = with_quiet_hold(server)
    app = http_app(server, session_idle_seconds=10)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        post = start(tg, app, "POST", headers, call("quiet", 9))
        with anyio.fail_after(GUARD):
            await started.wait()
        clock.now += 60  # the handler runs for longer than the idle limit
        ping = await start(tg, app, "POST", headers, request("ping", None, 10)).done()
        assert ping.status == 200 and ping.json()["id"] == 10
        clock.now += 60
        release.set()
        await post.done()
        assert post.json()["result"]["content"][0]["text"] == "released"
        # Idle from the end of the last POST, not from when it came.
        clock.now += 5
        after = await start(tg, app, "POST", headers, request("ping", None, 11)).done()
        assert after.status == 200
        clock.now += 11
        gone = await start(tg, app, "POST", headers, request("ping", None, 12)).done()
        assert gone.status == 404
        tg.cancel_scope.cancel()


async def test_the_get_stream_ends_with_its_session() -> None:
    server, _ = build_server()
    app = http_app(server, keepalive_seconds=60)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        stream = start(tg, app, "GET", get_headers(headers))
        await stream.wait_for(lambda e: e.status is not None)
        assert (await start(tg, app, "DELETE", headers).done()).status == 200
        await stream.done()  # at once, not after a keep-alive period
        assert stream.complete and stream.text == ""
        tg.cancel_scope.cancel()


async def test_a_refused_initialize_keeps_no_session() -> None:
    server, _ = build_server()
    app = http_app(server, max_sessions=2)
    plain = {"accept": ACCEPT, "content-type": JSON_TYPE}
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        missing_fields = request("initialize", {"protocolVersion": "2025-11-25"}, 1)
        for body in (missing_fields, missing_fields):
            refused = await start(tg, app, "POST", plain, body).done()
            assert refused.status == 200 and "error" in refused.json()
            assert "mcp-session-id" not in refused.response_headers
        assert len(app.sessions) == 1
        # The live session was not ended to make room.
        alive = await start(tg, app, "POST", headers, call("echo", 5, text="hi")).done()
        assert alive.status == 200 and alive.json()["id"] == 5
        tg.cancel_scope.cancel()


# -- statuses of GET and DELETE ---------------------------------------------------------------


async def test_without_sessions_get_and_delete_are_405() -> None:
    server, _ = build_server()
    app = http_app(server, sessions=False)
    headers = {"accept": "text/event-stream", "mcp-protocol-version": "2025-11-25"}
    async with app.running(), anyio.create_task_group() as tg:
        for method in ("GET", "DELETE"):
            refused = await start(tg, app, method, headers).done()
            assert refused.status == 405
            assert refused.response_headers["allow"] == "POST"


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_get_and_delete_refuse_an_unsupported_version(method: str) -> None:
    server, _ = build_server()
    app = http_app(server)
    async with app.running(), anyio.create_task_group() as tg:
        headers = await open_session(tg, app)
        bad = {**get_headers(headers), "mcp-protocol-version": "garbage"}
        refused = await start(tg, app, method, bad).done()
        assert refused.status == 400
        assert refused.json()["error"]["data"]["supported"]
        # The session is still there.
        assert len(app.sessions) == 1
        tg.cancel_scope.cancel()
