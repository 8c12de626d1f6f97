"""JSON-RPC 2.0 envelope rules, through the sessions, in every revision.

Each case feeds one wire message to a ready session and checks the rule the
``ProtocolViolation`` names, its JSON-RPC error code, whether it is answered and with
which id, and that the answer goes out through ``send``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from mcpspec.runtime import (
    ErrorCode,
    ErrorObject,
    ErrorReceived,
    ErrorResponse,
    NotificationReceived,
    Outgoing,
    ProtocolViolation,
    RequestCancelled,
    RequestIdError,
    RequestReceived,
    ResponseReceived,
    ResultResponse,
    RevisionError,
    Rule,
    ServerSession,
    StateError,
)

from .session_kit import HANDSHAKE, REVISIONS, connect, meta_for, only, tools_call, wire

Builder = Callable[[Any], bytes]


def _req(request_id: Any, method: str, params: dict[str, Any] | None, meta: Any) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None or meta is not None:
        message["params"] = dict(params or {})
        if meta is not None:
            message["params"]["_meta"] = meta
    return wire(message)


#: (case, wire builder taking the 2026-07-28 _meta or None, rule, code, answered, answer id)
SERVER_CASES: list[tuple[str, Builder, Rule, int, bool, Any]] = [
    (
        "not-json",
        lambda m: b'{"jsonrpc": "2.0", "id": 1, "method": ',
        Rule.PARSE_ERROR,
        -32700,
        True,
        None,
    ),
    ("not-utf8-json", lambda m: b"\xff\xfe", Rule.PARSE_ERROR, -32700, True, None),
    (
        "jsonrpc-missing",
        lambda m: wire({"id": 7, "method": "tools/list"}),
        Rule.INVALID_REQUEST,
        -32600,
        True,
        7,
    ),
    (
        "jsonrpc-1.0",
        lambda m: wire({"jsonrpc": "1.0", "id": 7, "method": "tools/list"}),
        Rule.INVALID_REQUEST,
        -32600,
        True,
        7,
    ),
    (
        "id-null",
        lambda m: _req(None, "tools/list", {}, m),
        Rule.INVALID_REQUEST,
        -32600,
        True,
        None,
    ),
    (
        "id-float",
        lambda m: _req(1.5, "tools/list", {}, m),
        Rule.INVALID_REQUEST,
        -32600,
        True,
        None,
    ),
    (
        "id-bool",
        lambda m: _req(True, "tools/list", {}, m),
        Rule.INVALID_REQUEST,
        -32600,
        True,
        None,
    ),
    (
        "id-object",
        lambda m: _req({"a": 1}, "tools/list", {}, m),
        Rule.INVALID_REQUEST,
        -32600,
        True,
        None,
    ),
    (
        "method-not-string",
        lambda m: wire({"jsonrpc": "2.0", "id": 4, "method": 5}),
        Rule.INVALID_REQUEST,
        -32600,
        True,
        4,
    ),
    (
        "result-and-error",
        lambda m: wire(
            {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}}
        ),
        Rule.INVALID_REQUEST,
        -32600,
        False,
        None,
    ),
    (
        "error-code-not-integer",
        lambda m: wire({"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}}),
        Rule.INVALID_REQUEST,
        -32600,
        False,
        None,
    ),
    (
        "result-id-null",
        lambda m: wire({"jsonrpc": "2.0", "id": None, "result": {}}),
        Rule.INVALID_REQUEST,
        -32600,
        False,
        None,
    ),
    (
        "notification-with-id",
        lambda m: _req(3, "notifications/cancelled", {"requestId": 1}, None),
        Rule.METHOD_NOT_FOUND,
        -32601,
        True,
        3,
    ),
    (
        "request-without-id",
        lambda m: wire({"jsonrpc": "2.0", "method": "tools/list", "params": {"_meta": m or {}}}),
        Rule.METHOD_NOT_FOUND,
        -32601,
        False,
        None,
    ),
    (
        "unknown-method",
        lambda m: _req(9, "no/such/method", {}, m),
        Rule.METHOD_NOT_FOUND,
        -32601,
        True,
        9,
    ),
    (
        "server-method-from-client",
        lambda m: _req(10, "roots/list", {}, m),
        Rule.METHOD_NOT_FOUND,
        -32601,
        True,
        10,
    ),
    (
        "invalid-params",
        lambda m: _req(11, "tools/call", {"name": 5}, m),
        Rule.INVALID_PARAMS,
        -32602,
        True,
        11,
    ),
    ("not-an-object", lambda m: b'"hello"', Rule.INVALID_REQUEST, -32600, True, None),
    ("neither", lambda m: wire({"jsonrpc": "2.0"}), Rule.INVALID_REQUEST, -32600, True, None),
    ("empty-batch", lambda m: b"[]", Rule.BATCH_NOT_ALLOWED, -32600, True, None),
]


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize(
    ("case", "build", "rule", "code", "answered", "answer_id"),
    SERVER_CASES,
    ids=[c[0] for c in SERVER_CASES],
)
def test_server_envelope_rule(
    revision: str, case: str, build: Builder, rule: Rule, code: int, answered: bool, answer_id: Any
) -> None:
    client, server = connect(revision)
    meta = meta_for(client) if revision == "2026-07-28" else None
    violation = only(server.receive(build(meta)), ProtocolViolation)
    assert violation.rule is rule
    assert violation.error.code == code
    assert isinstance(violation.error.data, dict) and violation.error.data["rule"] == rule.value
    if not answered:
        assert violation.response is None
        return
    assert violation.response is not None and violation.response.id == answer_id
    # The answer goes out through send, and the client reads it as an error.
    data = server.send(violation.response)
    answer = json.loads(data)
    assert answer["error"]["code"] == code and answer["id"] == answer_id
    events = client.receive(data)
    if answer_id is None:
        assert only(events, ErrorReceived).request_id is None
    else:
        # The client never sent this id.
        assert only(events, ProtocolViolation).rule is Rule.UNKNOWN_RESPONSE_ID


@pytest.mark.parametrize("revision", REVISIONS)
def test_invalid_params_answer_carries_path_and_reason(revision: str) -> None:
    client, server = connect(revision)
    meta = meta_for(client) if revision == "2026-07-28" else None
    violation = only(
        server.receive(_req(1, "tools/call", {"name": "x", "arguments": [1]}, meta)),
        ProtocolViolation,
    )
    assert violation.error.code == ErrorCode.INVALID_PARAMS
    assert violation.error.data["path"] == "$.params.arguments"
    assert "Expected `object`" in violation.error.data["reason"]
    assert violation.path == "$.params.arguments"


@pytest.mark.parametrize("revision", [r for r in REVISIONS if r != "2025-03-26"])
def test_batches_refused_outside_2025_03_26(revision: str) -> None:
    client, server = connect(revision)
    batch = (
        b"["
        + wire({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        + b"]"
    )
    violation = only(server.receive(batch), ProtocolViolation)
    assert violation.rule is Rule.BATCH_NOT_ALLOWED and violation.error.code == -32600
    assert violation.response is not None and violation.response.id is None
    assert json.loads(server.send(violation.response))["id"] is None
    with pytest.raises(RevisionError):
        client.send_batch([tools_call(client, client.next_id())])


@pytest.mark.parametrize("revision", REVISIONS)
def test_null_id_error_only_when_owed(revision: str) -> None:
    _, server = connect(revision)
    stray = ErrorResponse(id=None, error=ErrorObject(code=-32700, message="Parse error"))
    with pytest.raises(RequestIdError, match="id null"):
        server.send(stray)
    violation = only(server.receive(b"{"), ProtocolViolation)
    assert violation.response is not None
    assert json.loads(server.send(violation.response))["id"] is None
    with pytest.raises(RequestIdError):
        server.send(violation.response)


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_client_envelope_rules(revision: str) -> None:
    client, _server = connect(revision)
    cases = [
        (b"{", Rule.PARSE_ERROR, -32700, None),
        (_req(5, "no/such/method", {}, None), Rule.METHOD_NOT_FOUND, -32601, 5),
        (_req(6, "tools/list", {}, None), Rule.METHOD_NOT_FOUND, -32601, 6),
        (
            _req(7, "sampling/createMessage", {"messages": [], "maxTokens": "many"}, None),
            Rule.INVALID_PARAMS,
            -32602,
            7,
        ),
    ]
    for data, rule, code, answer_id in cases:
        violation = only(client.receive(data), ProtocolViolation)
        assert (violation.rule, violation.error.code) == (rule, code)
        assert violation.response is not None and violation.response.id == answer_id
        assert json.loads(client.send(violation.response))["error"]["code"] == code


@pytest.mark.parametrize("revision", REVISIONS)
def test_handler_failure_is_internal_error(revision: str) -> None:
    client, server = connect(revision)
    request = server.receive(client.send(tools_call(client, client.next_id())))
    received = only(request, RequestReceived)
    data = server.internal_error(received.request_id, "boom")
    error = only(client.receive(data), ErrorReceived)
    assert error.error.code == ErrorCode.INTERNAL_ERROR == -32603
    assert error.method == "tools/call" and error.error.message == "boom"


# -- 2025-03-26 batches ----------------------------------------------------------------------


def _ping(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}


def test_batch_is_answered_as_a_batch() -> None:
    _client, server = connect("2025-03-26")
    batch = wire(
        [_ping(101), {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}, _ping(102)]
    )
    events = server.receive(batch)
    assert [type(e) for e in events] == [RequestReceived, NotificationReceived, RequestReceived]
    assert server.send(ResultResponse(id=102, result={})) == b""
    data = server.send(ResultResponse(id=101, result={}))
    answers = json.loads(data)
    assert isinstance(answers, list) and sorted(a["id"] for a in answers) == [101, 102]


def test_batch_with_an_invalid_member_answers_every_request() -> None:
    _client, server = connect("2025-03-26")
    batch = wire([_ping(201), {"jsonrpc": "2.0", "id": 202, "method": "no/such"}, 17])
    events = server.receive(batch)
    assert isinstance(events[0], RequestReceived)
    bad, worse = events[1], events[2]
    assert isinstance(bad, ProtocolViolation) and bad.rule is Rule.METHOD_NOT_FOUND
    assert isinstance(worse, ProtocolViolation) and worse.rule is Rule.INVALID_REQUEST
    assert worse.path == "$[2]"
    assert bad.response is not None and worse.response is not None
    assert server.send(bad.response) == b""
    assert server.send(worse.response) == b""
    answers = json.loads(server.send(ResultResponse(id=201, result={})))
    assert [a.get("id") for a in answers] == [202, None, 201]


def test_batch_of_notifications_gets_no_answer() -> None:
    _client, server = connect("2025-03-26")
    note = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
    events = server.receive(wire([note, note]))
    assert [type(e) for e in events] == [NotificationReceived, NotificationReceived]
    # No batch is waiting: a later single request is answered on its own.
    only(server.receive(wire(_ping(5))), RequestReceived)
    assert json.loads(server.send(ResultResponse(id=5, result={})))["id"] == 5


def test_send_batch_and_batched_responses() -> None:
    client, server = connect("2025-03-26")
    t = client.types
    data = client.send_batch([t.PingRequest(id=1001), t.ListToolsRequest(id=1002)])
    assert isinstance(json.loads(data), list)
    events = server.receive(data)
    assert [e.method for e in events if isinstance(e, RequestReceived)] == ["ping", "tools/list"]
    assert server.send(ResultResponse(id=1001, result={})) == b""
    answer = server.send(ResultResponse(id=1002, result=server.types.ListToolsResult(tools=[])))
    responses = client.receive(answer)
    assert sorted(e.method for e in responses if isinstance(e, ResponseReceived)) == [
        "ping",
        "tools/list",
    ]
    with pytest.raises(StateError):
        client.send_batch(
            [
                t.InitializeRequest(
                    id=5,
                    params=msgspec.convert(
                        {
                            "protocolVersion": "2025-03-26",
                            "capabilities": {},
                            "clientInfo": {"name": "a", "version": "1"},
                        },
                        t.InitializeRequestParams,
                    ),
                )
            ]
        )


def test_send_batch_refused_member_registers_nothing() -> None:
    client, _ = connect("2025-03-26")
    t = client.types
    client.send(t.PingRequest(id=7))
    with pytest.raises(Exception, match="already outstanding"):
        client.send_batch([t.PingRequest(id=8), t.PingRequest(id=7)])
    assert client.outstanding == {7}


def test_initialize_in_batch_is_refused() -> None:
    server_only_0326 = ServerSession(["2025-03-26"])
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
    }
    violation = only(server_only_0326.receive(wire([init])), ProtocolViolation)
    assert violation.rule is Rule.INITIALIZE_IN_BATCH and violation.error.code == -32600
    assert violation.response is not None and violation.response.id == 1


def test_cancelling_the_last_batch_member_flushes_the_batch() -> None:
    client, server = connect("2025-03-26")
    t = client.types
    server.receive(client.send_batch([t.PingRequest(id=1), t.PingRequest(id=2)]))
    assert server.send(ResultResponse(id=1, result={})) == b""
    events = server.receive(client.cancel(2))
    assert only(events, RequestCancelled).active
    flushed = only(events, Outgoing)
    assert [a["id"] for a in json.loads(flushed.data)] == [1]


def test_batch_member_of_the_wrong_direction() -> None:
    _client, server = connect("2025-03-26")
    batch = wire([_ping(301), {"jsonrpc": "2.0", "id": 302, "method": "roots/list"}])
    events = server.receive(batch)
    wrong = only(events, ProtocolViolation)
    assert wrong.rule is Rule.METHOD_NOT_FOUND and wrong.response is not None
    assert server.send(wrong.response) == b""
    answers = json.loads(server.send(ResultResponse(id=301, result={})))
    assert [a["id"] for a in answers] == [302, 301]


@pytest.mark.parametrize("revision", REVISIONS)
def test_send_takes_only_messages(revision: str) -> None:
    client, _server = connect(revision)
    with pytest.raises(TypeError):
        client.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})  # type: ignore[arg-type]
    t = client.types
    with pytest.raises(TypeError):
        client.send(
            t.CancelledNotification(params=t.CancelledNotificationParams(request_id=1)),
            progress_token=1,
        )


def test_send_batch_rolls_back_progress_tokens() -> None:
    client, _server = connect("2025-03-26")
    t = client.types
    with pytest.raises(RevisionError):
        client.send_batch([])
    with pytest.raises(TypeError):
        client.send_batch([ResultResponse(id=1, result={})])
    first = tools_call(client, 401)
    clash = tools_call(client, 401)
    with pytest.raises(RequestIdError):
        client.send_batch([first, clash])
    # Nothing of the refused batch stays: the id and its token are free again.
    client.send(first, progress_token="tok")
    client.send(t.PingRequest(id=402))
    assert client.outstanding == {401, 402}
