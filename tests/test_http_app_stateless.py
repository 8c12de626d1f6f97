"""The ASGI app driven in process (no network), where a test needs a client that
misbehaves at a precise moment: 2026-07-28 listeners that stop reading, listen
streams under ``json_response``, bodies that are invalid under correct mirrored
headers, and the 2024-11-05 HTTP+SSE endpoints (clients gone mid-body, failing token
verifiers, the settings' revisions, clients that stop reading)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import pytest

from mcpspec.runtime.connection import ConnectionClosed, RequestContext, Server
from mcpspec.runtime.connection.handling import Handling
from mcpspec.runtime.connection.http import HttpApp, HttpSettings, http_app, legacy, stateless
from mcpspec.runtime.session import mirrored_headers
from tests.http_app_kit import (
    META,
    OnChunk,
    Reply,
    build_server,
    drive,
    encode,
    modern,
    request,
    sse_messages,
    stateless_call,
)

pytestmark = pytest.mark.anyio
#: uvicorn runs on asyncio.
ANYIO_BACKENDS = ("asyncio",)

#: Bounds a wait that only a hang (the bug under test) reaches.
GUARD = 5.0


def listen_body(request_id: str, kinds: tuple[str, ...] = ("tools",)) -> bytes:
    """A ``subscriptions/listen`` for the list changes of ``kinds``."""
    wanted = {f"{kind}ListChanged": True for kind in kinds}
    params = {"notifications": wanted, "_meta": dict(META)}
    return encode(request("subscriptions/listen", params, request_id))  # type: ignore[arg-type]


async def touch(app: HttpApp, request_id: int, kind: str | None = None) -> None:
    """Call the tool that announces a list change (``touch``, or ``announce`` of
    ``kind``); it must be answered."""
    name, arguments = ("touch", {}) if kind is None else ("announce", {"kind": kind})
    with anyio.fail_after(GUARD):
        reply = await drive(
            app,
            "POST",
            "/mcp",
            modern("tools/call", name),
            [encode(stateless_call(name, arguments, request_id))],
        )
    assert reply.status == 200
    assert reply.json()["result"]["content"][0]["text"] == (kind or "touched")


#: Three different changes: a client that takes none of them has two waiting (one
#: more is held in its send), over a buffer of one.
KINDS = ("tools", "prompts", "resources")


def announcing_server() -> Server:
    """A server that announces list changes of tools, prompts and resources."""
    changed = {"listChanged": True}
    server = Server(
        "changes",
        "1",
        list_changed=True,
        capabilities={"tools": changed, "prompts": changed, "resources": changed},
    )

    @server.tool()
    async def announce(kind: str) -> str:
        """Announce that the list of ``kind`` changed."""
        notify = {
            "tools": server.notify_tools_changed,
            "prompts": server.notify_prompts_changed,
            "resources": server.notify_resources_changed,
        }
        await notify[kind]()
        return kind

    return server


# -- the client going away ----------------------------------------------------------------------


async def test_a_silent_handler_is_cancelled_when_its_client_goes() -> None:
    """Closing the connection cancels the request, also when its handler waits without
    having written anything (no failed write tells of the client: only the watch)."""
    server = Server("gone", "1")
    seen = {"waiting": anyio.Event(), "cancelled": anyio.Event()}

    @server.tool()
    async def quiet() -> str:
        """Wait silently until cancelled."""
        seen["waiting"].set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            seen["cancelled"].set()
            raise
        return "never"

    app = http_app(server, json_response=True)
    gone = anyio.Event()
    replies: list[Reply] = []

    async def call() -> None:
        body = encode(stateless_call("quiet", {}))
        replies.append(
            await drive(app, "POST", "/mcp", modern("tools/call", "quiet"), [body], gone=gone)
        )

    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(call)
            await seen["waiting"].wait()
            gone.set()
            await seen["cancelled"].wait()
    assert len(replies) == 1  # the request ended with its handler


async def test_a_handler_runs_in_the_posts_own_task() -> None:
    """The handler of a POST's request runs in the POST's task: the only task a request
    answered at once makes is the watch for its client going away."""
    server, _ = build_server()
    app = http_app(server, json_response=True)
    body = encode(stateless_call("echo", {"text": "hi"}))
    headers = modern("tools/call", "echo")
    await drive(app, "POST", "/mcp", headers, [body])  # the pooled connection is made
    loop = asyncio.get_running_loop()
    made: list[object] = []
    default = loop.get_task_factory()

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
        made.append(coro)
        if default is not None:
            return default(loop, coro, **kwargs)
        return asyncio.Task(coro, loop=loop, **kwargs)

    loop.set_task_factory(counting)
    try:
        reply = await drive(app, "POST", "/mcp", headers, [body])
    finally:
        loop.set_task_factory(default)
    assert reply.status == 200 and "hi" in reply.body.decode()
    assert len(made) == 1


async def test_a_leftover_task_never_writes_on_a_later_post_of_its_pooled_connection() -> None:
    # A handler answers and leaves a task behind; the next POST, with the same id and
    # progress token, takes over the pooled connection. The leftover's progress is
    # about no request any more: it finds no stream, and nothing of it reaches the
    # other POST's response.
    server, _ = build_server()
    later, held, release = anyio.Event(), anyio.Event(), anyio.Event()
    outcome: list[BaseException | None] = []
    leftovers: set[Any] = set()

    @server.tool()
    async def leave_behind(ctx: RequestContext) -> str:
        """Answer at once; a task of its own reports progress later."""

        async def report_later() -> None:
            await later.wait()
            try:
                await ctx.report_progress(1, 2, message="leftover")
                outcome.append(None)
            except Exception as exc:
                outcome.append(exc)

        leftovers.add(asyncio.get_running_loop().create_task(report_later()))
        return "answered"

    @server.tool()
    async def hold(ctx: RequestContext) -> str:
        """Wait for the test."""
        held.set()
        await release.wait()
        return "held"

    app = http_app(server)

    def progress_call(name: str) -> bytes:
        body = stateless_call(name, {}, 1)
        body["params"]["_meta"]["progressToken"] = "p"
        return encode(body)

    first = await drive(
        app, "POST", "/mcp", modern("tools/call", "leave_behind"), [progress_call("leave_behind")]
    )
    assert first.json()["result"]["content"][0]["text"] == "answered"
    replies: list[Reply] = []

    async def second() -> None:
        headers = modern("tools/call", "hold")
        replies.append(await drive(app, "POST", "/mcp", headers, [progress_call("hold")]))

    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(second)
            await held.wait()
            later.set()
            while not outcome:
                await anyio.sleep(0.01)
            release.set()
    assert isinstance(outcome[0], ConnectionClosed)
    [reply] = replies
    assert reply.headers["content-type"] == "application/json"
    assert reply.json()["result"]["content"][0]["text"] == "held"


# -- subscriptions/listen ------------------------------------------------------------------------


async def test_a_listener_that_stops_reading_is_dropped_and_never_waited_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stateless, "DROP_GRACE", 0.0)
    server = announcing_server()
    app = http_app(server, max_queued_messages=1)
    acknowledged = {"stalled": anyio.Event(), "healthy": anyio.Event()}
    healthy_changes: list[bytes] = []
    received = anyio.Event()

    async def stalled(chunk: bytes) -> None:
        if b"acknowledged" in chunk:
            acknowledged["stalled"].set()
        else:
            await anyio.sleep_forever()  # the client stopped reading

    async def healthy(chunk: bytes) -> None:
        nonlocal received
        if b"acknowledged" in chunk:
            acknowledged["healthy"].set()
        elif b"list_changed" in chunk:
            healthy_changes.append(chunk)
            received.set()
            received = anyio.Event()

    leave = anyio.Event()
    stalled_ended = anyio.Event()

    async def listener(request_id: str, on_chunk: OnChunk) -> None:
        await drive(
            app,
            "POST",
            "/mcp",
            modern("subscriptions/listen"),
            [listen_body(request_id, KINDS)],
            gone=leave,
            on_chunk=on_chunk,
        )
        if request_id == "stalled":
            stalled_ended.set()

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(listener, "stalled", stalled)
        task_group.start_soon(listener, "healthy", healthy)
        with anyio.fail_after(GUARD):
            await acknowledged["stalled"].wait()
            await acknowledged["healthy"].wait()
        for request_id, kind in enumerate(KINDS):
            arrived = received
            await touch(app, request_id, kind)  # answered although a listener is stuck
            with anyio.fail_after(GUARD):
                await arrived.wait()
        with anyio.fail_after(GUARD):
            await stalled_ended.wait()  # dropped: its request ended
        feeds = [c.feed for c in server._connections if c.feed is not None]
        assert len(feeds) == 1 and not feeds[0].dropped  # only the healthy one is left
        leave.set()
    assert len(healthy_changes) == len(KINDS)


class Listener:
    """One ``subscriptions/listen`` request (id ``L``), driven in a task by :meth:`run`:
    ``acknowledged`` and ``changed`` are set when its stream brings the acknowledgement
    and a change; ``leave`` makes its client go away; ``reply`` is its response."""

    def __init__(self, app: HttpApp, token: str | None = None) -> None:
        self.app = app
        self.acknowledged, self.changed, self.leave = anyio.Event(), anyio.Event(), anyio.Event()
        self.reply: Any = None
        self.headers = modern("subscriptions/listen")
        if token is not None:
            self.headers["authorization"] = f"Bearer {token}"

    async def _on_chunk(self, chunk: bytes) -> None:
        if b"acknowledged" in chunk:
            self.acknowledged.set()
        elif b"list_changed" in chunk:
            self.changed.set()

    async def run(self) -> None:
        self.reply = await drive(
            self.app,
            "POST",
            "/mcp",
            self.headers,
            [listen_body("L")],
            gone=self.leave,
            on_chunk=self._on_chunk,
        )


async def test_a_burst_of_the_same_change_takes_one_place_in_a_listener_queue() -> None:
    server, _ = build_server()
    app = http_app(server, max_queued_messages=1)
    listener = Listener(app)
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(listener.run)
        with anyio.fail_after(GUARD):
            await listener.acknowledged.wait()
        (connection,) = server._connections
        assert connection.feed is not None
        for _ in range(5):  # without a turn for the listener in between
            await server.notify_tools_changed()
        assert not connection.feed.dropped
        with anyio.fail_after(GUARD):
            await listener.changed.wait()
        listener.leave.set()
    methods = [m["method"] for m in listener.reply.messages()]
    assert methods == [
        "notifications/subscriptions/acknowledged",
        "notifications/tools/list_changed",
    ]


async def test_past_max_sessions_listeners_the_oldest_stream_ends() -> None:
    server, _ = build_server()
    app = http_app(server, max_sessions=2)
    listeners = [Listener(app) for _ in range(3)]
    ended = [anyio.Event() for _ in listeners]

    async def run(index: int) -> None:
        await listeners[index].run()
        ended[index].set()

    async with anyio.create_task_group() as task_group:
        for index, listener in enumerate(listeners):
            task_group.start_soon(run, index)
            with anyio.fail_after(GUARD):
                await listener.acknowledged.wait()
        with anyio.fail_after(GUARD):
            await ended[0].wait()  # its client never left: the server ended it
        assert not ended[1].is_set() and not ended[2].is_set()
        assert len([c for c in server._connections if c.feed is not None]) == 2
        await touch(app, 2)
        with anyio.fail_after(GUARD):
            await listeners[1].changed.wait()
            await listeners[2].changed.wait()
        for listener in listeners[1:]:
            listener.leave.set()
    assert not listeners[0].changed.is_set()


async def test_listen_streams_count_per_principal_and_evict_only_ones_own() -> None:
    from mcpspec.runtime.connection.http import AuthSettings, Principal

    principals = {name: Principal(name, "app", issuer="https://as.example") for name in "abc"}
    auth = AuthSettings(
        "http://127.0.0.1:8000/mcp",
        ("https://as.example",),
        principals.get,
        max_total_sessions=4,
    )
    server, _ = build_server()
    app = http_app(server, HttpSettings(max_sessions=2, auth=auth))
    listeners = [Listener(app, token) for token in ("a", "a", "b", "b", "a")]
    ended = [anyio.Event() for _ in listeners]

    async def run(index: int) -> None:
        await listeners[index].run()
        ended[index].set()

    async with anyio.create_task_group() as task_group:
        for index, listener in enumerate(listeners):
            task_group.start_soon(run, index)
            with anyio.fail_after(GUARD):
                await listener.acknowledged.wait()
        # a's third stream ended a's oldest, never one of b's.
        with anyio.fail_after(GUARD):
            await ended[0].wait()
        assert not any(e.is_set() for e in ended[1:])
        # Full of a's and b's streams: c is refused, and nobody's stream ends for it.
        newcomer = Listener(app, "c")
        with anyio.fail_after(GUARD):
            await newcomer.run()
        assert newcomer.reply.status == 503
        assert not any(e.is_set() for e in ended[1:])
        await server.notify_tools_changed()
        with anyio.fail_after(GUARD):
            for listener in listeners[1:]:
                await listener.changed.wait()
        for listener in listeners[1:]:
            listener.leave.set()
    assert not listeners[0].changed.is_set()


async def test_a_large_json_answer_to_a_client_that_stops_reading_is_given_up() -> None:
    """An answer over what an ASGI server buffers waits on the client to read it: past
    stall_seconds the request is over (a smaller one is written without a timer)."""
    server, _ = build_server()
    app = http_app(server, json_response=True, stall_seconds=0.2)
    leave = anyio.Event()

    async def stalled(chunk: bytes) -> None:
        await leave.wait()  # the client stopped reading

    body = encode(stateless_call("echo", {"text": "x" * (1024 * 1024)}))
    headers = modern("tools/call", "echo")
    with anyio.fail_after(GUARD):
        reply = await drive(app, "POST", "/mcp", headers, [body], on_chunk=stalled)
    leave.set()
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"


async def test_listen_under_json_response_is_an_sse_stream() -> None:
    server, _ = build_server()
    app = http_app(server, json_response=True)
    listener = Listener(app)
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(listener.run)
        with anyio.fail_after(GUARD):
            await listener.acknowledged.wait()
        await touch(app, 2)
        with anyio.fail_after(GUARD):
            await listener.changed.wait()
        listener.leave.set()
    reply = listener.reply
    assert reply.status == 200
    assert reply.headers["content-type"] == "text/event-stream"
    methods = [m["method"] for m in reply.messages()]
    assert methods == [
        "notifications/subscriptions/acknowledged",
        "notifications/tools/list_changed",
    ]
    # Other requests are still answered with JSON only.
    body = stateless_call("steps", {"count": 2})
    body["params"]["_meta"]["progressToken"] = "p"
    reply = await drive(app, "POST", "/mcp", modern("tools/call", "steps"), [encode(body)])
    assert reply.headers["content-type"] == "application/json"
    assert reply.json()["result"]["content"][0]["text"] == "2 steps"


# -- invalid bodies under correct headers --------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "shape"),
    [
        ([1, 2], "params is an array"),
        ({"name": "echo", "arguments": {"text": "x"}, "_meta": 7}, "_meta is a number"),
    ],
)
async def test_an_invalid_body_is_refused_for_itself_not_as_a_header_mismatch(
    params: Any, shape: str
) -> None:
    server, _ = build_server()
    body = encode({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params})
    reply = await drive(http_app(server), "POST", "/mcp", modern("tools/call", "echo"), [body])
    assert reply.status == 400, shape
    answer = reply.json()
    assert answer["error"]["code"] in (-32600, -32602), shape
    assert answer["id"] == 5


async def test_mcp_param_headers_follow_the_tools_schema_as_it_is_now() -> None:
    server, _ = build_server()
    app = http_app(server)
    body = encode(stateless_call("echo", {"text": "hi"}))

    async def status(**params: str) -> int:
        headers = modern("tools/call", "echo")
        headers.update({f"mcp-param-{name}": value for name, value in params.items()})
        reply = await drive(app, "POST", "/mcp", headers, [body])
        assert reply.status is not None
        return reply.status

    assert await status() == 200  # no annotation yet: nothing to mirror
    # Edited in place after the tool was called: the edit counts.
    server.tools["echo"].input_schema["properties"]["text"]["x-mcp-header"] = "Text"
    assert await status() == 400
    assert await status(text="hi") == 200
    assert await status(text="other") == 400
    # A schema assigned whole counts too.
    schema = json.loads(json.dumps(server.tools["echo"].input_schema))
    del schema["properties"]["text"]["x-mcp-header"]
    server.tools["echo"].input_schema = schema
    assert await status() == 200
    # Annotations that break a rule: a client sends no header for the tool.
    schema["properties"]["text"]["x-mcp-header"] = "Bad Name"
    server.tools["echo"].input_schema = schema
    assert server.tools["echo"].param_headers == ()
    assert await status() == 200


def test_check_headers_leaves_an_unreadable_body_to_the_caller() -> None:
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"}
    unreadable = encode({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": []})
    with pytest.raises(mirrored_headers.MirrorError):
        mirrored_headers.check_headers(headers, unreadable)
    # header_mismatch reports it, as before.
    assert mirrored_headers.header_mismatch(headers, unreadable) is not None
    readable = encode(request("tools/list", {"_meta": dict(META)}))
    assert mirrored_headers.check_headers(headers, readable) is None
    wrong = {**headers, "mcp-method": "prompts/list"}
    assert "Mcp-Method" in (mirrored_headers.check_headers(wrong, readable) or "")


# -- HTTP+SSE (2024-11-05) ------------------------------------------------------------------------

SSE_HEADERS = {"host": "127.0.0.1:8000", "accept": "text/event-stream"}
MESSAGE_HEADERS = {"host": "127.0.0.1:8000", "content-type": "application/json"}


class LegacyClient:
    """A client of the HTTP+SSE endpoints: its GET stream runs in ``task_group``."""

    def __init__(self, app: HttpApp, on_chunk: OnChunk | None = None) -> None:
        self.app = app
        self.gone = anyio.Event()
        self.ended = anyio.Event()
        self.session_id = ""
        self.messages: list[dict[str, Any]] = []
        self.arrived = anyio.Event()
        self._connected = anyio.Event()
        self._on_chunk = on_chunk

    async def open(self, task_group: anyio.abc.TaskGroup) -> None:
        """Open the stream and learn the session id from its endpoint event."""

        async def stream() -> None:
            await drive(
                self.app, "GET", "/sse", SSE_HEADERS, [b""], gone=self.gone, on_chunk=self._read
            )
            self.ended.set()

        task_group.start_soon(stream)
        with anyio.fail_after(GUARD):
            await self._connected.wait()

    async def _read(self, chunk: bytes) -> None:
        text = chunk.decode()
        if text.startswith("event: endpoint"):
            data = text.split("data:", 1)[1].strip()
            self.session_id = data.split("session_id=", 1)[1]
            self._connected.set()
            return
        found = sse_messages(text)
        if found:
            self.messages.extend(found)
            self.arrived.set()
            self.arrived = anyio.Event()
        if self._on_chunk is not None:
            await self._on_chunk(chunk)

    async def post(self, message: Any, *, truncated: bool = False, stalled: bool = False) -> Reply:
        data = encode(message)
        chunks = [data[: len(data) // 2]] if truncated or stalled else [data]
        return await drive(
            self.app,
            "POST",
            "/messages",
            MESSAGE_HEADERS,
            chunks,
            query=f"session_id={self.session_id}".encode(),
            truncated=truncated,
            stalled=stalled,
        )

    async def next_message(self) -> dict[str, Any]:
        with anyio.fail_after(GUARD):
            while not self.messages:
                await self.arrived.wait()
        return self.messages.pop(0)

    async def initialize(self, version: str) -> dict[str, Any]:
        """Initialize; the result the server answered with."""
        params = {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        assert (await self.post(request("initialize", params))).status == 202
        answer = await self.next_message()
        notice = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await self.post(notice)).status == 202
        # Messages are read in order: once the ping is answered, the session is ready.
        assert (await self.post(request("ping", None, 2))).status == 202
        assert (await self.next_message())["id"] == 2
        result: dict[str, Any] = answer["result"]
        return result


async def test_a_client_gone_mid_body_on_the_message_endpoint_is_routine() -> None:
    server, _ = build_server()
    app = http_app(server, legacy_sse=True)
    async with anyio.create_task_group() as task_group:
        client = LegacyClient(app)
        await client.open(task_group)
        reply = await client.post(request("tools/list"), truncated=True)  # must not raise
        assert reply.status is None  # nothing to answer: the client is gone
        client.gone.set()


async def test_an_oversized_body_on_the_message_endpoint_closes_the_connection() -> None:
    server, _ = build_server()
    app = http_app(server, legacy_sse=True, max_body_bytes=512)
    async with anyio.create_task_group() as task_group:
        client = LegacyClient(app)
        await client.open(task_group)
        reply = await client.post(request("tools/list", {"pad": "x" * 1024}))
        assert reply.status == 413
        assert reply.headers["connection"] == "close"  # the rest is not read
        client.gone.set()


async def test_a_failing_token_verifier_on_the_legacy_endpoints_is_a_500() -> None:
    def verify(token: str) -> bool:
        raise RuntimeError("the verifier is down")

    server, _ = build_server()
    app = http_app(server, legacy_sse=True, verify_token=verify)
    auth = {"authorization": "Bearer t"}
    for method, path, headers in (
        ("GET", "/sse", SSE_HEADERS),
        ("POST", "/messages", MESSAGE_HEADERS),
    ):
        reply = await drive(app, method, path, {**headers, **auth}, [b""])
        assert reply.status == 500, path
        assert reply.json()["error"]["code"] == -32603


async def test_the_legacy_endpoints_serve_only_the_settings_revisions() -> None:
    server, _ = build_server()
    app = http_app(server, legacy_sse=True, revisions=("2025-11-25",))
    async with anyio.create_task_group() as task_group:
        client = LegacyClient(app)
        await client.open(task_group)
        result = await client.initialize("2024-11-05")
        assert result["protocolVersion"] == "2025-11-25"
        client.gone.set()


def test_legacy_sse_needs_a_handshake_revision() -> None:
    server, _ = build_server()
    with pytest.raises(ValueError, match="legacy_sse"):
        HttpApp(server, HttpSettings(legacy_sse=True, revisions=("2026-07-28",)))


async def test_a_legacy_client_that_stops_reading_is_dropped_and_never_waited_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(legacy, "DROP_GRACE", 0.0)
    server = announcing_server()
    app = http_app(server, legacy_sse=True, max_queued_messages=1)
    stop_reading = False

    async def stall(chunk: bytes) -> None:
        if stop_reading:
            await anyio.sleep_forever()  # the client stopped reading

    async with anyio.create_task_group() as task_group:
        client = LegacyClient(app, stall)
        await client.open(task_group)
        await client.initialize("2024-11-05")
        stop_reading = True
        for request_id, kind in enumerate(KINDS):
            await touch(app, request_id, kind)  # answered although the client is stuck
        with anyio.fail_after(GUARD):
            await client.ended.wait()  # dropped: its stream ended
        assert not server._connections
        client.gone.set()


async def test_posts_beyond_max_bytes_in_flight_are_refused_until_room_is_made() -> None:
    """The app holds at most ``max_bytes_in_flight`` bytes of POST bodies at once (a
    request decodes to many times its size and its handler holds it): one beyond gets
    503 with Retry-After, and room comes back once the held request is answered."""
    server, seen = build_server()
    held = encode(stateless_call("hold", {"pad": "x" * 1000}))
    small = encode(stateless_call("echo", {"text": "hi"}, request_id=3))
    echo = encode(stateless_call("echo", {"text": "x" * 600}, request_id=2))
    limit = len(held) + len(small)
    app = http_app(server, max_bytes_in_flight=limit)
    async with anyio.create_task_group() as task_group:
        first: list[Reply] = []

        async def hold() -> None:
            headers = modern("tools/call", "hold")
            first.append(await drive(app, "POST", "/mcp", headers, [held]))

        task_group.start_soon(hold)
        with anyio.fail_after(GUARD):
            while not app._bytes_in_flight:  # the hold request is being handled
                await anyio.sleep(0.01)
        refused = await drive(app, "POST", "/mcp", modern("tools/call", "echo"), [echo])
        assert refused.status == 503 and refused.headers["retry-after"] == "1"
        assert f"max_bytes_in_flight={limit}" in refused.json()["error"]["message"]
        taken = await drive(app, "POST", "/mcp", modern("tools/call", "echo"), [small])
        assert taken.status == 200  # a small one still fits beside it
        seen["release"].set()
    assert first[0].status == 200 and app._bytes_in_flight == 0
    again = await drive(app, "POST", "/mcp", modern("tools/call", "echo"), [echo])
    assert again.status == 200 and again.messages() == [] and "x" * 600 in again.body.decode()


async def test_a_body_announced_and_not_sent_is_408_within_stall_seconds() -> None:
    """A client announcing a body it never sends (its first part, then nothing) was
    waited for with no bound; it now gets 408 after ``stall_seconds``, and the
    connection is closed, on the Streamable HTTP and the HTTP+SSE endpoints alike."""
    server, _ = build_server()
    app = http_app(server, legacy_sse=True, stall_seconds=0.2)
    body = encode(stateless_call("echo", {"text": "hi"}))
    headers = {**modern("tools/call", "echo"), "content-length": str(len(body))}
    with anyio.fail_after(GUARD):
        reply = await drive(app, "POST", "/mcp", headers, [body[:10]], stalled=True)
    assert reply.status == 408 and reply.headers["connection"] == "close"
    assert "did not arrive within 0.2 s" in reply.json()["error"]["message"]
    async with anyio.create_task_group() as task_group:
        client = LegacyClient(app)
        await client.open(task_group)
        with anyio.fail_after(GUARD):
            reply = await client.post(request("tools/list"), stalled=True)
        assert reply.status == 408 and reply.headers["connection"] == "close"
        client.gone.set()


async def test_the_disconnect_watch_ends_by_itself_once_the_response_is_complete() -> None:
    """An ASGI server answers a pending receive with http.disconnect once the response
    is complete (uvicorn at once): the watch of a 2026-07-28 POST then ends by itself,
    not cancelled; a server that stays silent gets it cancelled, and a client gone
    before the answer cancels the request."""
    complete = anyio.Event()

    async def receive_like_uvicorn() -> dict[str, Any]:
        await complete.wait()
        return {"type": "http.disconnect"}

    async def receive_silent() -> dict[str, Any]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    for receive, expect_cancelled in ((receive_like_uvicorn, False), (receive_silent, True)):
        complete = anyio.Event()
        handling = Handling()
        watch = stateless._ClientWatch(receive, handling)
        with anyio.fail_after(GUARD):
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(watch.run)
                await anyio.sleep(0)
                complete.set()  # the answer's last byte was sent
                await watch.stop(response_complete=True)
        assert watch._scope.cancel_called is expect_cancelled
    # A client gone while the request runs cancels it.
    handling = Handling()
    watch = stateless._ClientWatch(lambda: _disconnect(), handling)
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(watch.run)
        with anyio.fail_after(GUARD):
            while not watch.ended:
                await anyio.sleep(0)
    assert handling.cancel_called


async def _disconnect() -> dict[str, Any]:
    return {"type": "http.disconnect"}
