"""The async Client against the async Server, in memory: negotiation in every mode,
every convenience method, many requests in flight, progress, logging, cancellation and
timeouts on the wire, and server-to-client requests answered by one handler in every
revision (requests on the connection, or the 2026-07-28 InputRequiredResult loop)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import msgspec
import pytest

import mcpspec
from mcpspec.runtime import RequestReceived, RevisionError, ServerSession
from mcpspec.runtime.connection import (
    ConnectionClosed,
    Peer,
    Question,
    RequestError,
    RequestTimeout,
    ResponseViolation,
    memory_pair,
)
from mcpspec.runtime.connection import client as client_module
from mcpspec.runtime.connection.client import (
    Client,
    ServerRequestContext,
    ToolResult,
    prompt_ref,
    resource_ref,
)
from mcpspec.runtime.connection.server import Server
from tests.connection_kit import Probe, demo_server

REVISIONS = mcpspec.REVISIONS
HANDSHAKE = tuple(r for r in REVISIONS if r < "2026-07-28")
#: Revisions with elicitation.
ELICITING = tuple(r for r in REVISIONS if r >= "2025-06-18")
#: Every revision and mode a client can be given.
MODES = ("auto", "legacy", *REVISIONS)
EXPECTED = {"auto": "2026-07-28", "legacy": "2025-11-25", **{r: r for r in REVISIONS}}
#: A hang guard for waits on events the test itself causes (never a timed assertion).
GUARD = 20
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
demo_info = {"name": "demo", "version": "1.0"}

pytestmark = pytest.mark.anyio


ANYIO_BACKENDS = ("asyncio",)


@asynccontextmanager
async def connected(server: Server, **options: Any) -> AsyncIterator[Client]:
    """A client connected to ``server`` in memory (the server serves until the client
    closes)."""
    client_end, server_end = memory_pair()
    async with anyio.create_task_group() as task_group:
        # linger=0: what still runs on the server when the client leaves is cancelled.
        task_group.start_soon(functools.partial(server.serve, server_end, linger=0))
        async with Client.over(client_end, **options) as client:
            yield client


async def answer_elicitation(params: Any, ctx: ServerRequestContext) -> Any:
    """One handler for every revision: a mapping in wire form."""
    return {"action": "accept", "content": {"name": f"Ada ({ctx.revision})"}}


async def answer_sampling(params: Any, ctx: ServerRequestContext) -> Any:
    """A typed result of the negotiated revision."""
    t = ctx.types
    text = params.messages[0].content.text
    return t.CreateMessageResult(
        role="assistant", model="m", content=t.TextContent(text=f"echo {text}")
    )


async def answer_roots(params: Any, ctx: ServerRequestContext) -> Any:
    """A result of another revision than the negotiated one (converted)."""
    from mcpspec import v2024_11_05 as old

    return old.ListRootsResult(roots=[old.Root(uri="file:///a"), old.Root(uri="file:///b")])


# -- negotiation ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_negotiates_in_every_mode(mode: str) -> None:
    async with connected(demo_server(Probe()), mode=mode) as client:
        assert client.revision == EXPECTED[mode] == client.types.REVISION
        assert client.model == ("stateless" if EXPECTED[mode] == "2026-07-28" else "handshake")
        assert client.server_info.name == "demo" and client.instructions == "be nice"
        assert client.capabilities.tools is not msgspec.UNSET
        assert not client.closed
    assert client.closed


async def test_auto_falls_back_to_initialize_with_a_handshake_server() -> None:
    async with connected(demo_server(Probe(), revisions=list(HANDSHAKE)), mode="auto") as client:
        assert (client.revision, client.model) == ("2025-11-25", "handshake")


async def test_client_capabilities_follow_the_handlers() -> None:
    async with connected(
        demo_server(Probe()), mode="2025-11-25", elicitation=answer_elicitation
    ) as client:
        assert client.session.capabilities == {"elicitation": {}}
    async with connected(demo_server(Probe()), mode="2025-11-25", capabilities={}) as client:
        assert client.session.capabilities == {}


async def test_a_closed_or_unopened_client_refuses_requests() -> None:
    client = Client.over(memory_pair()[0])
    with pytest.raises(ConnectionClosed):
        await client.ping()
    with pytest.raises(ConnectionClosed):
        assert client.revision


# -- what a client asks ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28"])
async def test_lists_every_page(mode: str) -> None:
    async with connected(demo_server(Probe(), page_size=3), mode=mode) as client:
        tools = await client.list_tools()
        assert [t.name for t in tools][:3] == ["echo", "add", "slow"] and len(tools) == 10
        pages = [page async for page in client.tool_pages()]
        assert [len(p.tools) for p in pages] == [3, 3, 3, 1]
        assert [p.tools[0].name async for p in client.tool_pages("9")] == ["log"]
        assert [r.uri for r in await client.list_resources()] == ["test://a"]
        assert [r.uri for r in await client.list_resources()] == ["test://a"]
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates] == ["test://{x}"]
        assert [p.name for p in await client.list_prompts()] == ["greet"]


@pytest.mark.parametrize("mode", MODES)
async def test_calls_reads_gets_completes(mode: str) -> None:
    async with connected(demo_server(Probe()), mode=mode) as client:
        echo = await client.call_tool("echo", {"text": "hi"})
        assert isinstance(echo, ToolResult)
        assert (echo.text, echo.is_error, echo.structured) == ("hi", False, None)
        # 2026-07-28 results name the server in _meta; earlier ones carry none here.
        assert echo.meta == ({} if client.model == "handshake" else {SERVER_INFO: demo_info})
        assert echo.result.is_error is msgspec.UNSET  # the wire stays exact
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert added.text == "5"
        structured = {"sum": 5} if client.revision >= "2025-06-18" else None
        assert added.structured == structured
        failed = await client.call_tool("fail")
        assert failed.is_error and failed.text == "no" and "is_error=True" in repr(failed)
        with pytest.raises(RequestError) as refused:
            await client.call_tool("nothing")
        assert refused.value.code == -32602 and refused.value.method == "tools/call"
        read = await client.read_resource("test://a")
        assert read.contents[0].text == "text of test://a"
        prompt = await client.get_prompt("greet", {"who": "Ada"})
        assert prompt.messages[0].content.text == "greet Ada"
        done = await client.complete(prompt_ref("greet"), "name", "al")
        assert (done.values, done.total, done.has_more) == (["alice", "albert"], 2, False)
        done = await client.complete(resource_ref("test://{x}"), "x", "b")
        assert done.values == ["bob"] and "bob" in repr(done)


@pytest.mark.parametrize("mode", [*HANDSHAKE, "2026-07-28"])
async def test_ping_where_the_revision_has_it(mode: str) -> None:
    async with connected(demo_server(Probe()), mode=mode) as client:
        if client.model == "handshake":
            await client.ping()
        else:
            with pytest.raises(RevisionError, match="no PingRequest"):
                await client.ping()


async def test_request_takes_any_typed_request() -> None:
    async with connected(demo_server(Probe()), mode="2025-06-18") as client:
        t = client.types
        request = t.CallToolRequest(
            id=client.next_id(), params=t.CallToolRequestParams(name="echo", arguments={"text": 1})
        )
        with pytest.raises(ResponseViolation) as broken:  # the server answered text=1
            await client.request(request)
        assert broken.value.violation.path == "$.result.content[0].text"
        request = t.CallToolRequest(
            id=client.next_id(),
            params=t.CallToolRequestParams(name="echo", arguments={"text": "x"}),
        )
        result = await client.request(request)
        assert isinstance(result, t.CallToolResult) and result.content[0].text == "x"


# -- many requests, progress, cancellation ------------------------------------------------------


@pytest.mark.parametrize("mode", ["2025-11-25", "2026-07-28"])
async def test_many_requests_in_flight(mode: str) -> None:
    probe = Probe()
    results: dict[int, str] = {}
    count = 16

    async with connected(demo_server(probe), mode=mode) as client:

        async def call(n: int) -> None:
            results[n] = (await client.call_tool("crowd", {"n": n, "of": count})).text

        with anyio.fail_after(GUARD):
            async with anyio.create_task_group() as task_group:
                for n in range(count):
                    task_group.start_soon(call, n)
    # Every call waited until all had arrived: they were in flight together.
    assert results == {n: str(n) for n in range(count)}


@pytest.mark.parametrize("mode", ["2024-11-05", "2025-11-25", "2026-07-28"])
async def test_progress_reaches_the_callback(mode: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    async with connected(demo_server(Probe()), mode=mode) as client:
        result = await client.call_tool(
            "slow", {"steps": 3}, progress=lambda p: seen.append((p.progress, p.total, p.message))
        )
    assert result.text == "done"
    messages = [None] * 3 if mode == "2024-11-05" else ["step 1", "step 2", "step 3"]
    assert seen == [(1, 3, messages[0]), (2, 3, messages[1]), (3, 3, messages[2])]


@pytest.mark.parametrize("mode", ["2025-03-26", "2026-07-28"])
async def test_a_timeout_cancels_the_request_on_the_wire(mode: str) -> None:
    probe = Probe()
    async with connected(demo_server(probe), mode=mode) as client:
        with pytest.raises(RequestTimeout) as timed_out:
            await client.call_tool("wait", timeout=0.01)
        assert timed_out.value.method == "tools/call"
        with anyio.fail_after(GUARD):
            await probe.cancelled.wait()  # the server's handler was cancelled
        assert (await client.call_tool("echo", {"text": "on"})).text == "on"
        assert client.session.outstanding == frozenset()


@pytest.mark.parametrize("mode", ["2025-11-25", "2026-07-28"])
async def test_a_cancelled_caller_cancels_the_request_on_the_wire(mode: str) -> None:
    probe = Probe()
    async with connected(demo_server(probe), mode=mode) as client:
        async with anyio.create_task_group() as task_group:

            async def call() -> None:
                await client.call_tool("wait")

            task_group.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            task_group.cancel_scope.cancel()
        with anyio.fail_after(GUARD):
            await probe.cancelled.wait()
        assert (await client.call_tool("echo", {"text": "on"})).text == "on"


async def test_closing_the_client_ends_pending_calls() -> None:
    errors: list[BaseException] = []
    async with connected(demo_server(Probe()), mode="2025-11-25") as client:

        async def call() -> None:
            try:
                await client.call_tool("wait")
            except ConnectionClosed as exc:
                errors.append(exc)

        async with anyio.create_task_group() as task_group:
            for _ in range(3):
                task_group.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            await client.aclose()
    assert len(errors) == 3 and client.closed
    with pytest.raises(ConnectionClosed):
        await client.call_tool("echo", {"text": "x"})


# -- server-to-client requests, one handler for every revision -------------------------------------


@pytest.mark.parametrize("mode", ELICITING)
async def test_elicitation_in_every_revision(mode: str) -> None:
    async with connected(demo_server(Probe()), mode=mode, elicitation=answer_elicitation) as client:
        result = await client.call_tool("ask")
    assert result.text == f"accept {{'name': 'Ada ({mode})'}}"


@pytest.mark.parametrize("mode", [*HANDSHAKE, "2026-07-28"])
async def test_sampling_and_roots_in_every_revision(mode: str) -> None:
    async with connected(
        demo_server(Probe()), mode=mode, sampling=answer_sampling, roots=answer_roots
    ) as client:
        assert (await client.call_tool("sample")).text == "echo hi"
        assert (await client.call_tool("roots")).text == "file:///a,file:///b"


@pytest.mark.parametrize("mode", ELICITING)
async def test_questions_asked_together_are_answered_together(mode: str) -> None:
    probe = Probe()
    in_flight: set[str] = set()
    keys: list[str | None] = []
    everyone = anyio.Event()

    def together(answer: Any) -> Any:
        async def handler(params: Any, ctx: ServerRequestContext) -> Any:
            keys.append(ctx.input_key)
            if ctx.input_key is None:
                # Up to 2025-11-25 the three are requests in flight at once: each
                # handler waits for the other two.
                in_flight.add(ctx.method)
                if len(in_flight) == 3:
                    everyone.set()
                await everyone.wait()
            return await answer(params, ctx)

        return handler

    with anyio.fail_after(GUARD):
        async with connected(
            demo_server(probe),
            mode=mode,
            elicitation=together(answer_elicitation),
            sampling=together(answer_sampling),
            roots=together(answer_roots),
        ) as client:
            result = await client.call_tool("ask_all")
    assert result.text == f"Ada ({mode}); echo hi; 2"
    if mode == "2026-07-28":
        # One InputRequiredResult carried the three questions: the handler ran twice.
        assert probe.runs == 2
        assert sorted(keys, key=str) == ["greeting", "name", "roots"]
    else:
        assert probe.runs == 1 and keys == [None, None, None]


async def test_the_first_failing_question_cancels_the_others() -> None:
    cancelled = anyio.Event()

    async def hangs(params: Any, ctx: ServerRequestContext) -> Any:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()

    async def refuses(params: Any, ctx: ServerRequestContext) -> Any:
        await anyio.wait_all_tasks_blocked()
        raise RequestError.of(-32000, "no model here")

    with anyio.fail_after(GUARD):
        async with connected(
            demo_server(Probe()),
            mode="2025-11-25",
            elicitation=hangs,
            sampling=refuses,
            roots=answer_roots,
        ) as client:
            with pytest.raises(RequestError) as failed:
                await client.call_tool("ask_all")
            await cancelled.wait()  # the server cancelled the elicitation on the wire
            assert (await client.call_tool("echo", {"text": "on"})).text == "on"
    assert failed.value.message == "no model here"


async def test_questions_asked_together_need_each_capability_in_2026_07_28() -> None:
    async with connected(
        demo_server(Probe()), mode="2026-07-28", elicitation=answer_elicitation, roots=answer_roots
    ) as client:
        with pytest.raises(RequestError) as failed:
            await client.call_tool("ask_all")
    assert failed.value.code == -32021
    assert failed.value.data == {"requiredCapabilities": {"sampling": {}}}


def test_a_question_is_checked_where_it_is_made() -> None:
    with pytest.raises(TypeError, match="message and requested_schema"):
        Question.elicit()
    question = Question.elicit(message="Why?", key="why")
    assert question == Question(
        "elicitation/create",
        {"message": "Why?", "requestedSchema": {"type": "object", "properties": {}}},
        "why",
    )
    assert Question.roots() == Question("roots/list")


async def test_a_request_without_its_handler_is_refused() -> None:
    async with connected(demo_server(Probe()), mode="2025-11-25", capabilities={}) as client:
        with pytest.raises(RequestError) as failed:  # the server could not ask
            await client.call_tool("ask")
        assert failed.value.code == -32603
    async with connected(
        demo_server(Probe()), mode="2025-11-25", capabilities={"elicitation": {}}
    ) as client:
        with pytest.raises(RequestError) as failed:  # the client answered -32601
            await client.call_tool("ask")
        assert failed.value.code == -32601


async def test_a_failing_handler_answers_an_error_and_the_connection_goes_on() -> None:
    async def broken(params: Any, ctx: ServerRequestContext) -> Any:
        raise RuntimeError("no")

    async with connected(demo_server(Probe()), mode="2025-11-25", elicitation=broken) as client:
        with pytest.raises(RequestError):
            await client.call_tool("ask")
        assert (await client.call_tool("echo", {"text": "on"})).text == "on"


# -- logging and subscriptions ---------------------------------------------------------------


@pytest.mark.parametrize("mode", ["2024-11-05", "2025-11-25", "2026-07-28"])
async def test_log_messages_reach_the_callback(mode: str) -> None:
    logs: list[Any] = []
    async with connected(demo_server(Probe()), mode=mode, on_log=logs.append) as client:
        await client.set_logging_level("info")
        await client.call_tool("log")
        with pytest.raises(ValueError, match="not a logging level"):
            await client.set_logging_level("loud")
    assert [(m.level, m.logger, m.data) for m in logs] == [
        ("info", "demo", {"level": "info"}),
        ("error", "demo", {"level": "error"}),
    ]


async def test_subscribe_and_unsubscribe() -> None:
    async with connected(demo_server(Probe()), mode="2025-11-25") as client:
        await client.subscribe("test://a")
        await client.unsubscribe("test://a")
    async with connected(demo_server(Probe()), mode="2026-07-28") as client:
        with pytest.raises(RevisionError):
            await client.subscribe("test://a")
    async with connected(demo_server(Probe()), mode="2025-11-25") as client:
        with pytest.raises(RevisionError, match="subscriptions/listen"):
            client.listen(tools=True)


@pytest.mark.parametrize("anyio_backend", ["trio"])
@pytest.mark.parametrize("mode", ["auto", "2025-11-25"])
async def test_trio_backend_works_too(mode: str) -> None:
    probe = Probe()
    async with connected(demo_server(probe), mode=mode, elicitation=answer_elicitation) as client:
        assert (await client.call_tool("echo", {"text": "trio"})).text == "trio"
        assert (await client.call_tool("ask")).text.startswith("accept")
        with pytest.raises(RequestTimeout):
            await client.call_tool("wait", timeout=0.01)
        await probe.cancelled.wait()


# -- subscriptions/listen (2026-07-28), against a session-level server ---------------------------


@asynccontextmanager
async def listening_server(
    *, refuse: bool = False, end: bool = False, silent: bool = False, repeat: int = 1
) -> AsyncIterator[Client]:
    """A 2026-07-28 server on the sans-IO session and the connection core, whose
    ``subscriptions/listen`` acknowledges, sends a tools/list_changed (``repeat`` times)
    and one resources/updated per subscribed URI, then waits to be cancelled (``end``:
    cancels the stream itself; ``refuse``: answers -32602 instead; ``silent``: never
    acknowledges)."""
    session = ServerSession(["2026-07-28"], capabilities={"tools": {"listChanged": True}})
    client_end, server_end = memory_pair()
    peer: Peer[ServerSession]

    async def handle(event: RequestReceived) -> Any:
        t = session.types
        if event.method == "server/discover":
            return session.discover_result()
        if refuse:
            raise RequestError.invalid_params("no subscriptions here")
        if silent:
            await anyio.sleep_forever()
        wanted = event.request.params.notifications
        meta = {"io.modelcontextprotocol/subscriptionId": event.request_id}
        await peer.notify(
            t.SubscriptionsAcknowledgedNotification(
                params=t.SubscriptionsAcknowledgedNotificationParams(
                    meta=meta, notifications=wanted
                )
            )
        )
        for _ in range(repeat):
            changed = t.ToolListChangedNotification(params=t.NotificationParams(meta=meta))
            await peer.notify(changed)
        for uri in wanted.resource_subscriptions or []:
            params = t.ResourceUpdatedNotificationParams(meta=meta, uri=uri)
            await peer.notify(t.ResourceUpdatedNotification(params=params))
        if end:
            params = t.CancelledNotificationParams(request_id=event.request_id, reason="bye")
            await peer.notify(t.CancelledNotification(params=params))
        await anyio.sleep_forever()

    peer = Peer(session, server_end, request_handler=handle, linger=0)
    async with peer, Client.over(client_end, mode="auto") as client:
        yield client


async def test_listen_is_an_async_iterator_of_notifications() -> None:
    async with listening_server() as client:
        assert client.revision == "2026-07-28"
        async with client.listen(tools=True, resource_uris=["test://a", "test://b"]) as feed:
            assert isinstance(feed.request_id, int)
            changes = []
            async for note in feed:
                changes.append((note.method, getattr(note.params, "uri", None)))
                if len(changes) == 3:
                    break
        assert changes == [
            ("notifications/tools/list_changed", None),
            ("notifications/resources/updated", "test://a"),
            ("notifications/resources/updated", "test://b"),
        ]
        # Leaving cancelled the listen request on the wire; the connection goes on.
        assert client.session.outstanding == frozenset()
        async with client.listen(tools=True) as feed:
            assert (await anext(feed)).method == "notifications/tools/list_changed"


async def test_a_listen_the_server_ends_ends_the_iteration() -> None:
    async with listening_server(end=True) as client:
        with anyio.fail_after(GUARD):
            async with client.listen(tools=True) as feed:
                changes = [note.method async for note in feed]
        assert changes == ["notifications/tools/list_changed"]
        assert client.session.outstanding == frozenset()
        async with client.listen(tools=True) as feed:  # the connection goes on
            assert [note.method async for note in feed] == ["notifications/tools/list_changed"]


async def test_a_listen_holds_each_change_once_and_a_bounded_number_unread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client_module, "MAX_QUEUED_CHANGES", 3)
    uris = [f"test://{name}" for name in "abcde"]
    async with listening_server(repeat=3) as client:
        async with client.listen(tools=True, resource_uris=uris) as feed:
            with anyio.fail_after(GUARD):
                while feed.dropped < 3:  # c, d and e find the queue full
                    await anyio.sleep(0.01)
                changes = [
                    (note.method, getattr(note.params, "uri", None))
                    for note in [await anext(feed) for _ in range(3)]
                ]
        # The three list changes were one change; then a and b.
        assert changes == [
            ("notifications/tools/list_changed", None),
            ("notifications/resources/updated", "test://a"),
            ("notifications/resources/updated", "test://b"),
        ]


async def test_a_listen_cancelled_before_its_acknowledgement_leaves_cleanly() -> None:
    async with listening_server(silent=True) as client:
        with pytest.raises(TimeoutError):
            with anyio.fail_after(0.1):
                async with client.listen(tools=True):
                    pass
        # The request was cancelled on the wire; the connection goes on.
        with anyio.fail_after(GUARD):
            while client.session.outstanding:
                await anyio.sleep(0.01)
        assert client.revision == "2026-07-28"


async def test_a_refused_listen_raises_on_entry() -> None:
    async with listening_server(refuse=True) as client:
        with pytest.raises(RequestError) as refused:
            async with client.listen(tools=True):
                pass
        assert refused.value.code == -32602
