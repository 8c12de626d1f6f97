"""The handshake revisions (2024-11-05 ... 2025-11-25): initialize first, only ping
before its response, notifications/initialized, the server's quiet period, version
negotiation, and one codec per negotiated revision."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

import mcpspec
from mcpspec.runtime import (
    ClientSession,
    ErrorObject,
    ErrorReceived,
    ErrorResponse,
    NegotiationError,
    NegotiationFailed,
    NotificationReceived,
    Outgoing,
    Phase,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    ResultResponse,
    Rule,
    ServerSession,
    SessionClosed,
    SessionReady,
    StateError,
)
from mcpspec.runtime.session.state import GATES, TRANSITIONS, Lifecycle, Role, Trigger

from .session_kit import CLIENT_CAPS, HANDSHAKE, SERVER_CAPS, connect, only, wire


def _started(revision: str, **server: Any) -> tuple[ClientSession, ServerSession, RequestReceived]:
    server_session = ServerSession(capabilities=SERVER_CAPS, **server)
    client = ClientSession(mode=revision, capabilities=CLIENT_CAPS)
    request = only(server_session.receive(client.start()), RequestReceived)
    return client, server_session, request


def _note(method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return wire(message)


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_initialize_comes_first(revision: str) -> None:
    server = ServerSession(capabilities=SERVER_CAPS)
    early = only(
        server.receive(wire({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})), ProtocolViolation
    )
    assert early.rule is Rule.NOT_INITIALIZED and early.error.code == -32600
    assert early.response is not None and early.response.id == 1
    server.send(early.response)
    # ping is allowed before initialize, and answered.
    only(server.receive(wire({"jsonrpc": "2.0", "id": 2, "method": "ping"})), RequestReceived)
    assert json.loads(server.send(ResultResponse(id=2, result={})))["id"] == 2
    note = only(server.receive(_note("notifications/roots/list_changed")), ProtocolViolation)
    assert note.rule is Rule.NOT_INITIALIZED and note.response is None
    client = ClientSession(mode=revision)
    with pytest.raises(StateError) as info:
        client.send(client.types.ListToolsRequest(id=1))
    assert info.value.rule is Rule.NOT_INITIALIZED


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_before_the_initialize_response_only_ping(revision: str) -> None:
    client, server, _request = _started(revision)
    t = client.types
    with pytest.raises(StateError):
        client.send(t.ListToolsRequest(id=10))
    ping = client.send(t.PingRequest(id=11))
    only(server.receive(ping), RequestReceived)
    violation = only(
        server.receive(wire({"jsonrpc": "2.0", "id": 12, "method": "tools/list"})),
        ProtocolViolation,
    )
    assert violation.rule is Rule.NOT_INITIALIZED and violation.response is not None
    # The client accepts ping and logging from the server meanwhile, nothing else.
    only(client.receive(wire({"jsonrpc": "2.0", "id": 90, "method": "ping"})), RequestReceived)
    log = _note("notifications/message", {"level": "info", "data": "starting"})
    only(client.receive(log), NotificationReceived)
    roots = only(
        client.receive(wire({"jsonrpc": "2.0", "id": 91, "method": "roots/list"})),
        ProtocolViolation,
    )
    assert roots.rule is Rule.NOT_INITIALIZED and roots.response is not None
    changed = only(client.receive(_note("notifications/tools/list_changed")), ProtocolViolation)
    assert changed.rule is Rule.NOT_INITIALIZED


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_client_sends_initialized_after_the_result(revision: str) -> None:
    client, server, request = _started(revision)
    early = only(server.receive(_note("notifications/initialized")), ProtocolViolation)
    assert early.rule is Rule.NOT_INITIALIZED  # before the initialize result
    events = client.receive(server.answer(request.request_id, server.initialize_result()))
    assert [type(e) for e in events] == [ResponseReceived, Outgoing, SessionReady]
    outgoing = events[1]
    assert isinstance(outgoing, Outgoing)
    assert json.loads(outgoing.data) == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert client.phase is Phase.READY
    with pytest.raises(StateError) as info:
        client.send(client.types.InitializedNotification())
    assert info.value.rule is Rule.ALREADY_INITIALIZED
    server_events = server.receive(outgoing.data)
    ready = only(server_events, SessionReady)
    assert (ready.revision, ready.model) == (revision, "handshake")
    assert ready.peer_info.name == "mcpspec"
    again = only(server.receive(outgoing.data), ProtocolViolation)
    assert again.rule is Rule.ALREADY_INITIALIZED


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_server_sends_only_ping_and_logging_until_initialized(revision: str) -> None:
    _client, server, request = _started(revision)
    t = server.types
    server.answer(request.request_id, server.initialize_result())
    assert server.phase is Phase.INITIALIZED
    with pytest.raises(StateError):
        server.send(t.ListRootsRequest(id=1))
    with pytest.raises(StateError):
        server.send(t.ToolListChangedNotification())
    server.send(t.PingRequest(id=2))
    server.send(
        t.LoggingMessageNotification(
            params=t.LoggingMessageNotificationParams(level="info", data="x")
        )
    )
    server.receive(_note("notifications/initialized"))
    assert server.phase is Phase.READY
    server.send(t.ListRootsRequest(id=3))
    server.send(t.ToolListChangedNotification())


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_second_initialize_is_refused(revision: str) -> None:
    client, server = connect(revision)
    init = {
        "jsonrpc": "2.0",
        "id": 99,
        "method": "initialize",
        "params": {
            "protocolVersion": revision,
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
    }
    violation = only(server.receive(wire(init)), ProtocolViolation)
    assert violation.rule is Rule.ALREADY_INITIALIZED and violation.response is not None
    with pytest.raises(StateError):
        client.send(
            client.types.InitializeRequest(
                id=5,
                params=client.types.InitializeRequestParams(
                    protocol_version=revision,
                    capabilities=client.types.ClientCapabilities(),
                    client_info=client.types.Implementation(name="c", version="1"),
                ),
            )
        )


# -- version negotiation -------------------------------------------------------------------------

#: (server accepts, client offers, server answers)
NEGOTIATION = [
    *[(None, r, r) for r in HANDSHAKE],
    (("2024-11-05", "2025-03-26"), "2025-11-25", "2025-03-26"),
    (("2024-11-05",), "2025-06-18", "2024-11-05"),
    (("2025-06-18", "2025-11-25", "2026-07-28"), "2024-11-05", "2025-11-25"),
]


@pytest.mark.parametrize(("accepts", "offered", "answered"), NEGOTIATION)
def test_server_answers_requested_else_latest(accepts: Any, offered: str, answered: str) -> None:
    server = ServerSession(accepts)
    client = ClientSession(mode="legacy")  # accepts every handshake revision
    init = mcpspec_init(offered)
    request = only(server.receive(client.send(init)), RequestReceived)
    result = server.initialize_result()
    assert result.protocol_version == answered
    # The request was typed by the negotiated revision's codec.
    assert type(request.request).__module__ == mcpspec.module_name(answered)
    events = client.receive(server.answer(1, result))
    ready = only(events, SessionReady)
    assert ready.revision == answered == client.revision == server.types.REVISION
    assert answered == client.types.REVISION


def mcpspec_init(offered: str) -> Any:
    module = __import__(mcpspec.module_name(offered), fromlist=["x"])
    return module.InitializeRequest(
        id=1,
        params=module.InitializeRequestParams(
            protocol_version=offered,
            capabilities=module.ClientCapabilities(),
            client_info=module.Implementation(name="c", version="1"),
        ),
    )


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_server_must_answer_the_negotiated_version(revision: str) -> None:
    _client, server, request = _started(revision)
    result = server.initialize_result()
    other = "2024-11-05" if revision != "2024-11-05" else "2025-03-26"
    wrong = type(result)(
        protocol_version=other, capabilities=result.capabilities, server_info=result.server_info
    )
    with pytest.raises(NegotiationError) as info:
        server.answer(request.request_id, wrong)
    assert info.value.rule is Rule.UNSUPPORTED_VERSION
    assert request.request_id in server.unanswered


@pytest.mark.parametrize("offered", HANDSHAKE)
def test_client_refusing_the_answer_fails_and_closes(offered: str) -> None:
    older = next(r for r in HANDSHAKE if r != offered)
    server = ServerSession([older])
    client = ClientSession(mode=offered)  # pinned: accepts only `offered`
    request = only(server.receive(client.start()), RequestReceived)
    events = client.receive(server.answer(request.request_id, server.initialize_result()))
    failed = only(events, NegotiationFailed)
    assert failed.rule is Rule.UNSUPPORTED_VERSION and failed.answered == (older,)
    assert failed.offered == offered and failed.error.code == -32022
    assert failed.error.data == {"supported": [offered], "requested": offered}
    assert client.phase is Phase.CLOSED
    with pytest.raises(SessionClosed):
        client.send(client.types.PingRequest(id=5))
    assert (
        only(
            client.receive(wire({"jsonrpc": "2.0", "method": "notifications/message"})),
            ProtocolViolation,
        ).rule
        is Rule.SESSION_CLOSED
    )


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_refused_initialize_lets_the_client_retry(revision: str) -> None:
    client, server, request = _started(revision)
    refusal = server.send(
        ErrorResponse(id=request.request_id, error=ErrorObject(code=-32602, message="no"))
    )
    assert server.phase is Phase.IDLE
    events = client.receive(refusal)
    assert only(events, ErrorReceived).error.code == -32602
    assert only(events, NegotiationFailed).error.code == -32602
    retry = ClientSession(mode=revision)
    only(server.receive(retry.start()), RequestReceived)
    assert server.phase is Phase.INITIALIZING


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_a_second_initialize_refused_before_the_first_is_answered_leaves_it_be(
    revision: str,
) -> None:
    client, server, request = _started(revision)
    again = mcpspec_init(revision)
    again.id = 2
    violation = only(server.receive(wire(msgspec.to_builtins(again))), ProtocolViolation)
    assert violation.rule is Rule.ALREADY_INITIALIZED and violation.response is not None
    server.send(violation.response)
    assert server.phase is Phase.INITIALIZING
    answer = server.answer(request.request_id, server.initialize_result())
    ready = only(client.receive(answer), SessionReady)
    assert ready.revision == revision


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_messages_decode_with_the_negotiated_codec(revision: str) -> None:
    client, server = connect(revision)
    events = server.receive(client.send(client.types.PingRequest(id=client.next_id())))
    assert type(only(events, RequestReceived).request).__module__ == mcpspec.module_name(revision)
    # A method of a later revision is unknown in an earlier one.
    elicit = wire(
        {
            "jsonrpc": "2.0",
            "id": 70,
            "method": "elicitation/create",
            "params": {"message": "m", "requestedSchema": {"type": "object", "properties": {}}},
        }
    )
    verdict = client.receive(elicit)
    if revision < "2025-06-18":
        assert only(verdict, ProtocolViolation).rule is Rule.METHOD_NOT_FOUND
    else:
        assert type(only(verdict, RequestReceived).request).__module__ == mcpspec.module_name(
            revision
        )


def test_lifecycle_table_refuses_unlisted_moves() -> None:
    life = Lifecycle(Role.CLIENT)
    assert not life.can(Trigger.RECEIVE_INITIALIZE)
    with pytest.raises(ValueError, match="client cannot receive initialize in phase idle"):
        life.fire(Trigger.RECEIVE_INITIALIZE)
    assert life.fire(Trigger.SEND_INITIALIZE) is Phase.INITIALIZING
    assert life.send_gate.requests == frozenset({"ping"})
    # Every phase a role can be in has both gates.
    for role in Role:
        reachable = {Phase.IDLE, Phase.READY} | {
            target for (r, _, _), target in TRANSITIONS.items() if r is role
        }
        for phase in reachable:
            assert (role, phase, "send") in GATES and (role, phase, "receive") in GATES
    assert (Role.SERVER, Phase.PROBING, "send") not in GATES  # servers never probe
