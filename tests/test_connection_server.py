"""The Server and the peer core, in memory, on asyncio and trio: handlers, -32601,
-32603 without losing the connection, concurrency, cancellation by the client,
timeouts, progress, logging, elicitation in every model, and the stream ending."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcpspec.runtime import ClientSession, ProgressReceived, RequestReceived
from mcpspec.runtime.connection import (
    NotificationHandler,
    Peer,
    RequestError,
    RequestTimeout,
    Server,
    memory_pair,
)

from .connection_kit import (
    HANG_GUARD,
    REVISIONS,
    Fixture,
    call_tool,
    connected,
    list_tools,
    text_of,
)

pytestmark = pytest.mark.anyio

HANDSHAKE = REVISIONS[:-1]


async def answer_elicitation(event: RequestReceived, session: ClientSession) -> Any:
    """What a client answers to ``elicitation/create``: the field asked for, filled."""
    assert event.method == "elicitation/create"
    [field] = event.request.params.requested_schema.properties
    return session.types.ElicitResult(action="accept", content={field: field.upper()})


@pytest.mark.parametrize("revision", REVISIONS)
async def test_handlers_answer_in_every_revision(revision: str) -> None:
    fixture = Fixture()
    async with connected(fixture.server, revision) as client:
        assert client.ready is not None and client.ready.revision == revision
        assert client.session.peer_info.name == "fixture"
        caps = client.session.peer_capabilities
        assert caps is not None and set(caps) == {"tools", "logging"}
        tools = await client.request(list_tools(client))
        assert [tool.name for tool in tools.tools] == ["echo"]
        result = await client.request(call_tool(client, "echo", {"message": "hi"}))
        assert isinstance(result, client.session.types.CallToolResult)
        assert text_of(result) == "hi"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_negotiation_modes(mode: str) -> None:
    fixture = Fixture()
    async with connected(fixture.server, mode) as client:
        expected = "2026-07-28" if mode == "auto" else "2025-11-25"
        assert client.session.revision == expected
        assert text_of(await client.request(call_tool(client, "echo", {"message": 1}))) == "1"


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
async def test_a_method_without_handler_answers_32601(revision: str) -> None:
    fixture = Fixture(capabilities={"tools": {}, "prompts": {}})
    async with connected(fixture.server, revision) as client:
        t = client.session.types
        request = t.ListPromptsRequest(id=client.next_id(), params=t.PaginatedRequestParams())
        with pytest.raises(RequestError) as caught:
            await client.request(request)
        assert caught.value.code == -32601
        assert caught.value.method == "prompts/list"
        assert text_of(await client.request(call_tool(client, "echo", {"message": "on"}))) == "on"


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-11-25", "2026-07-28"])
async def test_failing_handlers_answer_errors_and_the_connection_goes_on(revision: str) -> None:
    fixture = Fixture()
    async with connected(fixture.server, revision) as client:
        with pytest.raises(RequestError) as caught:
            await client.request(call_tool(client, "fail"))
        assert caught.value.code == -32603
        assert caught.value.data == {"exception": "RuntimeError"}  # not the message
        with pytest.raises(RequestError) as caught:
            await client.request(call_tool(client, "refuse"))
        assert (caught.value.code, caught.value.message) == (-32000, "refused")
        assert caught.value.data == {"why": "on purpose"}
        with pytest.raises(RequestError) as caught:
            await client.request(call_tool(client, "wrong_result"))
        assert caught.value.code == -32603
        assert text_of(await client.request(call_tool(client, "echo", {"message": "on"}))) == "on"


@pytest.mark.parametrize("revision", ["2025-06-18", "2026-07-28"])
async def test_requests_run_concurrently(revision: str) -> None:
    fixture = Fixture()
    texts: list[str] = []
    async with connected(fixture.server, revision) as client:

        async def call(name: str) -> None:
            texts.append(text_of(await client.request(call_tool(client, name))))

        # "first" waits for "second": handled one at a time, they would never end.
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(call, "first")
            task_group.start_soon(call, "second")
    assert sorted(texts) == ["first", "second"]


@pytest.mark.parametrize("revision", ["2025-03-26", "2025-11-25", "2026-07-28"])
async def test_a_cancelled_caller_cancels_the_handler(revision: str) -> None:
    fixture = Fixture()
    async with connected(fixture.server, revision) as client:
        outcome: list[str] = []
        scopes: list[anyio.CancelScope] = []

        async def call() -> None:
            with anyio.CancelScope() as scope:
                scopes.append(scope)
                await client.request(call_tool(client, "slow"))
            outcome.append("cancelled" if scope.cancelled_caught else "answered")

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(call)
            await fixture.started.wait()
            scopes[0].cancel()
        await fixture.cancelled.wait()  # the server's handler saw the cancellation
        assert outcome == ["cancelled"]
        assert client.session.outstanding == frozenset()
        assert text_of(await client.request(call_tool(client, "echo", {"message": "on"}))) == "on"


async def test_a_timeout_cancels_the_request_on_the_wire() -> None:
    fixture = Fixture()
    async with connected(fixture.server, "2025-11-25") as client:
        with pytest.raises(RequestTimeout) as caught:
            await client.request(call_tool(client, "slow"), timeout=0.05)
        assert isinstance(caught.value, TimeoutError)
        assert caught.value.method == "tools/call"
        await fixture.cancelled.wait()
        assert text_of(await client.request(call_tool(client, "echo", {"message": "on"}))) == "on"


@pytest.mark.parametrize("revision", REVISIONS)
async def test_progress_reaches_the_callback(revision: str) -> None:
    fixture = Fixture()
    updates: list[ProgressReceived] = []
    async with connected(fixture.server, revision) as client:
        request = call_tool(client, "progress")
        result = await client.request(request, progress=updates.append)
    assert text_of(result) == "done"
    assert [(u.progress, u.total) for u in updates] == [(1, 3), (2, 3), (3, 3)]
    assert {u.request_id for u in updates} == {request.id}
    messages = [u.message for u in updates]
    assert messages == ([None] * 3 if revision == "2024-11-05" else ["step 1", "step 2", "step 3"])


async def test_progress_only_when_asked() -> None:
    fixture = Fixture()
    async with connected(fixture.server, "2025-11-25") as client:
        assert text_of(await client.request(call_tool(client, "progress"))) == "done"


def _collector(into: list[str]) -> NotificationHandler:
    def collect(event: Any) -> None:
        if event.method == "notifications/message":
            into.append(event.notification.params.level)

    return collect


async def test_logging_follows_set_level_in_a_handshake_revision() -> None:
    fixture = Fixture()
    levels: list[str] = []
    async with connected(fixture.server, "2025-06-18", notification_handler=_collector(levels)) as (
        client
    ):
        await client.request(call_tool(client, "log"))
        assert levels == ["debug", "info", "error"]
        t = client.session.types
        await client.request(
            t.SetLevelRequest(id=client.next_id(), params=t.SetLevelRequestParams(level="error"))
        )
        await client.request(call_tool(client, "log"))
        assert levels == ["debug", "info", "error", "error"]


async def test_logging_follows_the_request_log_level_in_2026_07_28() -> None:
    fixture = Fixture()
    levels: list[str] = []
    async with connected(fixture.server, "2026-07-28", notification_handler=_collector(levels)) as (
        client
    ):
        await client.request(call_tool(client, "log"))
        assert levels == []  # no request asked for log messages
        meta = {"io.modelcontextprotocol/logLevel": "info"}
        await client.request(call_tool(client, "log", **meta))
        assert levels == ["info", "error"]


async def test_without_logging_the_server_declares_no_logging() -> None:
    fixture = Fixture(logging=False)
    async with connected(fixture.server, "2025-11-25") as client:
        assert set(client.session.peer_capabilities or {}) == {"tools"}


@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
async def test_elicitation_is_a_request_in_a_handshake_revision(revision: str) -> None:
    fixture = Fixture()
    asked: list[str] = []

    async def on_request(event: RequestReceived) -> Any:
        asked.append(event.method)
        return await answer_elicitation(event, client.session)

    async with connected(
        fixture.server, revision, capabilities={"elicitation": {}}, request_handler=on_request
    ) as client:
        arguments = {"questions": ["name", "city"]}
        result = await client.request(call_tool(client, "ask", arguments))
    assert text_of(result) == "NAME CITY"
    assert asked == ["elicitation/create", "elicitation/create"]


async def test_elicitation_round_trips_through_input_required_in_2026_07_28() -> None:
    fixture = Fixture()
    async with connected(fixture.server, "2026-07-28", capabilities={"elicitation": {}}) as (
        client
    ):
        session = client.session
        response = await client.request_response(
            call_tool(client, "ask", {"questions": ["name", "city"]})
        )
        rounds: list[list[str]] = []
        while response.input_required:
            requests = response.result.input_requests
            rounds.append([request.method for request in requests.values()])
            answers = {}
            for key, request in requests.items():
                [field] = request.params.requested_schema.properties
                answers[key] = session.types.ElicitResult(
                    action="accept", content={field: field.upper()}
                )
            response = await client.request_response(session.retry_with_input(response, answers))
    assert rounds == [["elicitation/create"], ["elicitation/create"]]
    assert text_of(response.result) == "NAME CITY"


async def test_a_handler_names_its_questions_in_2026_07_28() -> None:
    fixture = Fixture()
    async with connected(fixture.server, "2026-07-28", capabilities={"elicitation": {}}) as (
        client
    ):
        session = client.session
        arguments = {"questions": ["name", "city"], "keyed": True}
        response = await client.request_response(call_tool(client, "ask", arguments))
        keys: list[str] = []
        while response.input_required:
            [(key, request)] = response.result.input_requests.items()
            keys.append(key)
            [field] = request.params.requested_schema.properties
            answer = session.types.ElicitResult(action="accept", content={field: field.upper()})
            response = await client.request_response(
                session.retry_with_input(response, {key: answer})
            )
    assert keys == ["name", "city"]
    assert text_of(response.result) == "NAME CITY"


async def test_a_tampered_request_state_is_refused() -> None:
    fixture = Fixture()
    async with connected(fixture.server, "2026-07-28", capabilities={"elicitation": {}}) as (
        client
    ):
        first = await client.request_response(call_tool(client, "ask"))
        assert first.input_required
        t = client.session.types
        params = t.CallToolRequestParams(name="ask", arguments={}, request_state="not-state")
        with pytest.raises(RequestError) as caught:
            await client.request(t.CallToolRequest(id=client.next_id(), params=params))
        assert caught.value.code == -32602


async def test_elicitation_needs_the_client_capability_in_2026_07_28() -> None:
    fixture = Fixture()
    async with connected(fixture.server, "2026-07-28", capabilities={}) as client:
        with pytest.raises(RequestError) as caught:
            await client.request(call_tool(client, "ask"))
        assert caught.value.code == -32021
        assert caught.value.data == {"requiredCapabilities": {"elicitation": {}}}


@pytest.mark.parametrize("revision", HANDSHAKE)
async def test_ping_is_answered(revision: str) -> None:
    fixture = Fixture()
    async with connected(fixture.server, revision) as client:
        t = client.session.types
        result = await client.request(t.PingRequest(id=client.next_id()))
        assert result == {}


async def test_the_server_handles_many_connections_at_once() -> None:
    fixture = Fixture()
    async with (
        connected(fixture.server, "2025-11-25") as one,
        connected(fixture.server, "2026-07-28") as two,
    ):
        assert text_of(await one.request(call_tool(one, "echo", {"message": 1}))) == "1"
        assert text_of(await two.request(call_tool(two, "echo", {"message": 2}))) == "2"


async def test_the_stream_ending_mid_request_ends_serve_and_cancels_the_handler() -> None:
    fixture = Fixture()
    server_end, client_end = memory_pair()
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(lambda: fixture.server.serve(server_end, linger=0))
            session = ClientSession(mode="2026-07-28")
            t = session.types
            request = t.CallToolRequest(
                id=session.next_id(), params=t.CallToolRequestParams(name="slow")
            )
            await client_end.send(session.send(request))
            await fixture.started.wait()
            await client_end.aclose()
        # serve returned (the task group ended) and the handler was cancelled
        assert fixture.cancelled.is_set()


async def test_connect_puts_the_server_on_a_stream() -> None:
    server = Server(list_changed=True)

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text."""
        return text

    changed: list[str] = []
    server_end, client_end = memory_pair()
    with anyio.fail_after(HANG_GUARD):
        async with server.connect(server_end) as connection:
            client = ClientSession(mode="2025-11-25")
            async with Peer(
                client, client_end, notification_handler=lambda event: changed.append(event.method)
            ) as peer:
                await peer.open()
                result = await peer.request(call_tool(peer, "echo", {"text": "hi"}))
                assert text_of(result) == "hi"
                assert connection.session.revision == "2025-11-25"
                assert connection.peer.session is connection.session
                # Announced changes reach the connection while it runs.
                await server.notify_tools_changed()
                await peer.request(client.types.PingRequest(id=peer.next_id()))
            await connection.wait_closed()
        await server.notify_tools_changed()  # left: it no longer takes them
    assert changed == ["notifications/tools/list_changed"]


def test_handler_registration_is_checked() -> None:
    server = Server()
    with pytest.raises(ValueError, match="answers initialize itself"):
        server.add_handler("initialize", Fixture.list_tools)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a client request"):
        server.add_handler("tools/cal", Fixture.list_tools)  # type: ignore[arg-type]
    assert server.capabilities == {"logging": {}}
    assert server.handled == frozenset()


def answer_client_request(session: ClientSession, method: str, request: Any) -> Any:
    """What a client answers to ``roots/list`` and ``sampling/createMessage``."""
    t = session.types
    if method == "roots/list":
        return t.ListRootsResult(roots=[t.Root(uri="file:///projects/demo")])
    assert method == "sampling/createMessage" and request.params.max_tokens == 5
    return t.CreateMessageResult(
        role="assistant", content=t.TextContent(text="4"), model="test-model"
    )


@pytest.mark.parametrize(("tool", "text"), [("roots", "file:///projects/demo"), ("sample", "4")])
async def test_roots_and_sampling_are_requests_in_a_handshake_revision(
    tool: str, text: str
) -> None:
    fixture = Fixture()

    async def on_request(event: RequestReceived) -> Any:
        return answer_client_request(client.session, event.method, event.request)

    caps = {"roots": {}, "sampling": {}}
    async with connected(
        fixture.server, "2025-06-18", capabilities=caps, request_handler=on_request
    ) as client:
        assert text_of(await client.request(call_tool(client, tool))) == text


@pytest.mark.parametrize(("tool", "text"), [("roots", "file:///projects/demo"), ("sample", "4")])
async def test_roots_and_sampling_round_trip_in_2026_07_28(tool: str, text: str) -> None:
    fixture = Fixture()
    caps = {"roots": {}, "sampling": {}}
    async with connected(fixture.server, "2026-07-28", capabilities=caps) as client:
        session = client.session
        response = await client.request_response(call_tool(client, tool))
        assert response.input_required
        answers = {
            key: answer_client_request(session, request.method, request)
            for key, request in response.result.input_requests.items()
        }
        final = await client.request(session.retry_with_input(response, answers))
    assert text_of(final) == text


async def test_client_notifications_reach_their_handler() -> None:
    fixture = Fixture()
    async with connected(fixture.server, "2025-11-25", capabilities={"roots": {}}) as client:
        t = client.session.types
        await client.notify(t.RootsListChangedNotification())
        await fixture.roots_changed.wait()


async def test_a_handler_sends_notifications_on_the_connection() -> None:
    fixture = Fixture(capabilities={"tools": {"listChanged": True}})
    methods: list[str] = []
    async with connected(
        fixture.server, "2025-11-25", notification_handler=lambda e: methods.append(e.method)
    ) as client:
        await client.request(call_tool(client, "changed"))
    assert methods == ["notifications/tools/list_changed"]
