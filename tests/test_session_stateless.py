"""The stateless revision (2026-07-28): per-request _meta, -32022, server/discover,
resultType and server identity on results, multi round-trip requests,
subscriptions/listen and the per-request log level."""

from __future__ import annotations

import json
from importlib.metadata import version
from typing import Any

import msgspec
import pytest

import mcpspec
from mcpspec import v2025_11_25
from mcpspec.runtime import (
    CapabilityError,
    ClientSession,
    ErrorObject,
    ErrorReceived,
    ErrorResponse,
    LocalProtocolError,
    NotificationReceived,
    ProtocolViolation,
    RequestCancelled,
    RequestReceived,
    ResponseReceived,
    RevisionError,
    Rule,
    ServerSession,
    SessionReady,
    SubscriptionError,
)

from .session_kit import CLIENT_CAPS, connect, meta_for, only, tools_call, tools_call_result, wire

REV = "2026-07-28"
VERSION = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/clientInfo"
LEVEL = "io.modelcontextprotocol/logLevel"
SUB = "io.modelcontextprotocol/subscriptionId"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"


def _call(request_id: Any, meta: dict[str, Any]) -> bytes:
    return wire(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "t", "_meta": meta},
        }
    )


#: (case, _meta of the request, rule, code, path)
META_CASES: list[tuple[str, dict[str, Any], Rule, int, str]] = [
    (
        "no-version",
        {CAPS: {}},
        Rule.MISSING_PROTOCOL_VERSION,
        -32602,
        f'$.params._meta["{VERSION}"]',
    ),
    (
        "no-capabilities",
        {VERSION: REV},
        Rule.MISSING_CLIENT_CAPABILITIES,
        -32602,
        f'$.params._meta["{CAPS}"]',
    ),
    (
        "version-not-string",
        {VERSION: 2026, CAPS: {}},
        Rule.INVALID_REQUEST_META,
        -32602,
        f'$.params._meta["{VERSION}"]',
    ),
    (
        "capabilities-not-object",
        {VERSION: REV, CAPS: []},
        Rule.INVALID_REQUEST_META,
        -32602,
        f'$.params._meta["{CAPS}"]',
    ),
    (
        "bad-client-info",
        {VERSION: REV, CAPS: {}, INFO: {"name": 1}},
        Rule.INVALID_REQUEST_META,
        -32602,
        f'$.params._meta["{INFO}"]',
    ),
    (
        "bad-log-level",
        {VERSION: REV, CAPS: {}, LEVEL: "loud"},
        Rule.INVALID_REQUEST_META,
        -32602,
        f'$.params._meta["{LEVEL}"]',
    ),
    (
        "unsupported-version",
        {VERSION: "2099-01-01", CAPS: {}},
        Rule.UNSUPPORTED_PROTOCOL_VERSION,
        -32022,
        f'$.params._meta["{VERSION}"]',
    ),
    (
        "handshake-version",
        {VERSION: "2025-11-25", CAPS: {}},
        Rule.UNSUPPORTED_PROTOCOL_VERSION,
        -32022,
        f'$.params._meta["{VERSION}"]',
    ),
]


@pytest.mark.parametrize("server_revisions", [None, [REV]], ids=["dual", "stateless-only"])
@pytest.mark.parametrize(
    ("case", "meta", "rule", "code", "path"), META_CASES, ids=[c[0] for c in META_CASES]
)
def test_every_request_is_validated(
    server_revisions: Any, case: str, meta: dict[str, Any], rule: Rule, code: int, path: str
) -> None:
    client, server = connect(REV, server_revisions=server_revisions)
    violation = only(server.receive(_call(5, meta)), ProtocolViolation)
    assert (violation.rule, violation.error.code, violation.path) == (rule, code, path)
    assert violation.response is not None and violation.response.id == 5
    answer = json.loads(server.send(violation.response))
    if code == -32022:
        supported = ["2026-07-28"] if server_revisions else list(reversed(mcpspec.REVISIONS))
        assert answer["error"]["data"] == {"supported": supported, "requested": meta[VERSION]}
    # A valid request right after is served: validation is per request.
    only(server.receive(_call(6, meta_for(client))), RequestReceived)


def test_client_stamps_every_request() -> None:
    client, server = connect(REV)
    data = client.send(tools_call(client, 7))
    meta = json.loads(data)["params"]["_meta"]
    assert meta[VERSION] == REV and meta[CAPS] == CLIENT_CAPS
    assert meta[INFO] == {"name": "mcpspec", "version": version("mcpspec")}
    received = only(server.receive(data), RequestReceived)
    assert received.protocol_version == REV and received.client_info.name == "mcpspec"
    assert received.client_capabilities.roots is not msgspec.UNSET
    with pytest.raises(LocalProtocolError):
        client.send(tools_call(client, 8, meta={VERSION: "2025-11-25"}))
    with pytest.raises(RevisionError):
        client.send(v2025_11_25.PingRequest(id=9))


def test_discover_is_always_served() -> None:
    server = ServerSession([REV])  # no capabilities at all
    client = ClientSession(mode=REV)
    events = server.receive(client.start())
    ready = only(events, SessionReady)
    assert ready.model == "stateless" and ready.revision == REV
    discover = only(events, RequestReceived)
    assert discover.method == "server/discover"
    result = server.discover_result()
    assert result.supported_versions == [REV]
    only(client.receive(server.answer(discover.request_id, result)), ResponseReceived)
    # Other requests still need the capability.
    violation = only(server.receive(_call(3, meta_for(client))), ProtocolViolation)
    assert violation.rule is Rule.CAPABILITY_NOT_DECLARED and violation.error.code == -32601


def test_results_carry_result_type_and_server_identity() -> None:
    client, server = connect(REV)
    server.receive(client.send(tools_call(client, 10)))
    data = server.answer(10, tools_call_result(server))
    result = json.loads(data)["result"]
    assert result["resultType"] == "complete"
    assert result["_meta"][SERVER_INFO] == {"name": "mcpspec", "version": version("mcpspec")}
    # An identity the server sets itself is kept.
    server.receive(client.send(tools_call(client, 11)))
    mine = msgspec.structs.replace(
        tools_call_result(server), meta={SERVER_INFO: {"name": "x", "version": "2"}}
    )
    assert json.loads(server.answer(11, mine))["result"]["_meta"][SERVER_INFO]["name"] == "x"


def test_result_without_result_type_reads_as_complete() -> None:
    client, server = connect(REV)
    server.receive(client.send(tools_call(client, 12)))
    old_style = wire(
        {"jsonrpc": "2.0", "id": 12, "result": {"content": [{"type": "text", "text": "hi"}]}}
    )
    response = only(client.receive(old_style), ResponseReceived)
    assert type(response.result).__name__ == "CallToolResult" and not response.input_required


# -- multi round-trip ------------------------------------------------------------------------------


def _input_required(server: ServerSession, **fields: Any) -> Any:
    t = server.types
    return t.InputRequiredResult(**fields)


def _elicit(server: ServerSession) -> Any:
    t = server.types
    return t.ElicitRequest(
        params=t.ElicitRequestParams(
            message="who?", requested_schema=t.ElicitRequestFormParamsRequestedSchema(properties={})
        )
    )


def test_multi_round_trip_on_both_sides() -> None:
    client, server = connect(REV)
    ct, st = client.types, server.types
    server.receive(client.send(tools_call(client, 20)))
    asked = _input_required(
        server,
        input_requests={"who": _elicit(server), "roots": st.ListRootsRequest()},
        request_state="opaque",
    )
    response = only(client.receive(server.answer(20, asked)), ResponseReceived)
    assert response.input_required and set(response.result.input_requests) == {"who", "roots"}
    with pytest.raises(LocalProtocolError) as missing:
        client.retry_with_input(response, {"who": ct.ElicitResult(action="decline")})
    assert missing.value.rule is Rule.INPUT_RESPONSES_MISMATCH
    with pytest.raises(LocalProtocolError):
        client.retry_with_input(
            response,
            {"who": ct.ElicitResult(action="decline"), "roots": ct.ElicitResult(action="cancel")},
        )
    retry = client.retry_with_input(
        response,
        {
            "who": ct.ElicitResult(action="accept", content={"name": "Ada"}),
            "roots": ct.ListRootsResult(roots=[]),
        },
    )
    assert retry.id != 20 and retry.params.request_state == "opaque"
    received = only(server.receive(client.send(retry)), RequestReceived)
    typed = server.input_responses(received, {"who": "elicitation/create", "roots": "roots/list"})
    assert isinstance(typed, dict) and typed["who"].content == {"name": "Ada"}
    assert typed["roots"].roots == []
    wrong = server.input_responses(received, {"who": "elicitation/create"})
    assert isinstance(wrong, ProtocolViolation) and wrong.rule is Rule.INPUT_RESPONSES_MISMATCH
    assert wrong.response is not None and wrong.response.id == retry.id
    done = only(client.receive(server.send(wrong.response)), ErrorReceived)
    assert done.error.code == -32602


def test_input_required_result_must_carry_something() -> None:
    client, server = connect(REV)
    server.receive(client.send(tools_call(client, 21)))
    with pytest.raises(LocalProtocolError) as info:
        server.answer(21, _input_required(server))
    assert info.value.rule is Rule.INPUT_REQUIRED_EMPTY
    empty = wire({"jsonrpc": "2.0", "id": 21, "result": {"resultType": "input_required"}})
    assert only(client.receive(empty), ProtocolViolation).rule is Rule.INPUT_REQUIRED_EMPTY


def test_input_requests_need_the_requests_capabilities() -> None:
    client, server = connect(REV, client_caps={"roots": {}})  # no elicitation
    server.receive(client.send(tools_call(client, 22)))
    with pytest.raises(CapabilityError):
        server.answer(22, _input_required(server, input_requests={"who": _elicit(server)}))
    missing = server.missing_capability(22, {"elicitation": {}})
    assert missing.error.code == -32021 and missing.error.data == {
        "requiredCapabilities": {"elicitation": {}}
    }
    bogus = wire(
        {
            "jsonrpc": "2.0",
            "id": 22,
            "result": {
                "resultType": "input_required",
                "inputRequests": {"who": msgspec.to_builtins(_elicit(server))},
            },
        }
    )
    assert only(client.receive(bogus), ProtocolViolation).rule is Rule.CAPABILITY_NOT_DECLARED


# -- subscriptions/listen -----------------------------------------------------------------------


def _listen(client: ClientSession, request_id: Any, **filters: Any) -> Any:
    t = client.types
    return t.SubscriptionsListenRequest(
        id=request_id,
        params=t.SubscriptionsListenRequestParams(notifications=t.SubscriptionFilter(**filters)),
    )


def _ack(server: ServerSession, sub: Any, **filters: Any) -> Any:
    t = server.types
    return t.SubscriptionsAcknowledgedNotification(
        params=t.SubscriptionsAcknowledgedNotificationParams(
            meta={SUB: sub}, notifications=t.SubscriptionFilter(**filters)
        )
    )


def _changed(server: ServerSession, sub: Any) -> Any:
    t = server.types
    return t.ToolListChangedNotification(params=t.NotificationParams(meta={SUB: sub}))


def _updated(server: ServerSession, sub: Any, uri: str) -> Any:
    t = server.types
    return t.ResourceUpdatedNotification(
        params=t.ResourceUpdatedNotificationParams(meta={SUB: sub}, uri=uri)
    )


def test_subscription_lifecycle() -> None:
    client, server = connect(REV)
    only(
        server.receive(
            client.send(
                _listen(client, "L", tools_list_changed=True, resource_subscriptions=["x://a"])
            )
        ),
        RequestReceived,
    )
    with pytest.raises(SubscriptionError) as early:
        server.send(_changed(server, "L"))
    assert early.value.rule is Rule.SUBSCRIPTION_NOT_ACKNOWLEDGED
    with pytest.raises(SubscriptionError) as greedy:
        server.send(_ack(server, "L", prompts_list_changed=True))
    assert greedy.value.rule is Rule.SUBSCRIPTION_FILTER
    ack = server.send(_ack(server, "L", tools_list_changed=True, resource_subscriptions=["x://a"]))
    only(client.receive(ack), NotificationReceived)
    with pytest.raises(SubscriptionError):
        server.send(_ack(server, "L", tools_list_changed=True))  # once
    assert only(client.receive(ack), ProtocolViolation).rule is Rule.SUBSCRIPTION_NOT_ACKNOWLEDGED
    only(client.receive(server.send(_changed(server, "L"))), NotificationReceived)
    only(client.receive(server.send(_updated(server, "L", "x://a"))), NotificationReceived)
    with pytest.raises(SubscriptionError):
        server.send(_updated(server, "L", "x://b"))
    t = server.types
    with pytest.raises(SubscriptionError):
        server.send(t.PromptListChangedNotification(params=t.NotificationParams(meta={SUB: "L"})))
    with pytest.raises(SubscriptionError) as unknown:
        server.send(_changed(server, "nope"))
    assert unknown.value.rule is Rule.SUBSCRIPTION_UNKNOWN

    # The client checks the same rules on what arrives.
    def note(method: str, sub: Any, **params: Any) -> bytes:
        return wire({"jsonrpc": "2.0", "method": method, "params": {"_meta": {SUB: sub}, **params}})

    cases = [
        (note("notifications/prompts/list_changed", "L"), Rule.SUBSCRIPTION_FILTER),
        (note("notifications/resources/updated", "L", uri="x://b"), Rule.SUBSCRIPTION_FILTER),
        (note("notifications/tools/list_changed", "nope"), Rule.SUBSCRIPTION_UNKNOWN),
        (
            wire({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
            Rule.SUBSCRIPTION_UNKNOWN,
        ),
    ]
    for data, rule in cases:
        assert only(client.receive(data), ProtocolViolation).rule is rule
    # The client ends it; nothing flows on it afterwards.
    cancelled = only(server.receive(client.cancel("L")), RequestCancelled)
    assert cancelled.active
    with pytest.raises(SubscriptionError):
        server.send(_changed(server, "L"))
    # A notification that crossed the cancellation is dropped, not a violation.
    assert client.receive(note("notifications/tools/list_changed", "L")) == []


def test_subscription_ends_by_result_or_server_cancel() -> None:
    client, server = connect(REV)
    t = server.types
    server.receive(client.send(_listen(client, "A", tools_list_changed=True)))
    server.receive(client.send(_listen(client, "B", tools_list_changed=True)))
    client.receive(server.send(_ack(server, "A", tools_list_changed=True)))
    end = server.answer("A", t.SubscriptionsListenResult())
    assert json.loads(end)["result"]["resultType"] == "complete"
    only(client.receive(end), ResponseReceived)
    ended = only(client.receive(server.cancel("B")), RequestCancelled)
    assert ended.active and ended.request_id == "B" and client.outstanding == frozenset()
    unacked = wire(
        {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": {SUB: "A"}, "notifications": {}},
        }
    )
    assert only(client.receive(unacked), ProtocolViolation).rule is Rule.SUBSCRIPTION_UNKNOWN


# -- log level ---------------------------------------------------------------------------------


def _log(server: ServerSession, level: str) -> Any:
    t = server.types
    return t.LoggingMessageNotification(
        params=t.LoggingMessageNotificationParams(level=level, data="d")
    )


def test_log_messages_follow_the_request_log_level() -> None:
    client, server = connect(REV)
    with pytest.raises(SubscriptionError) as nobody:
        server.send(_log(server, "error"))
    assert nobody.value.rule is Rule.LOG_LEVEL
    stray = wire(
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "error", "data": 1},
        }
    )
    assert only(client.receive(stray), ProtocolViolation).rule is Rule.LOG_LEVEL
    received = only(
        server.receive(client.send(tools_call(client, 30, meta={LEVEL: "warning"}))),
        RequestReceived,
    )
    assert received.log_level == "warning"
    only(client.receive(server.send(_log(server, "error"))), NotificationReceived)
    with pytest.raises(SubscriptionError):
        server.send(_log(server, "info"))
    info = wire(
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": 1},
        }
    )
    assert only(client.receive(info), ProtocolViolation).rule is Rule.LOG_LEVEL
    client.receive(server.answer(30, tools_call_result(server)))
    with pytest.raises(SubscriptionError):
        server.send(_log(server, "emergency"))  # the request that asked is complete
    with pytest.raises(LocalProtocolError):
        client.send(tools_call(client, 31, meta={LEVEL: "chatty"}))


def test_unsupported_version_helper() -> None:
    _client, server = connect(REV, server_revisions=[REV, "2025-11-25"])
    error = server.unsupported_version(3, "2099-01-01")
    assert error.error.code == -32022
    assert error.error.data == {"supported": [REV, "2025-11-25"], "requested": "2099-01-01"}


def test_listen_answered_with_an_error_ends_the_subscription() -> None:
    client, server = connect(REV)
    server.receive(client.send(_listen(client, "E", tools_list_changed=True)))
    refusal = ErrorResponse(id="E", error=ErrorObject(code=-32603, message="no"))
    only(client.receive(server.send(refusal)), ErrorReceived)
    with pytest.raises(SubscriptionError):
        server.send(_ack(server, "E", tools_list_changed=True))
    ack = wire(
        {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": {SUB: "E"}, "notifications": {}},
        }
    )
    assert only(client.receive(ack), ProtocolViolation).rule is Rule.SUBSCRIPTION_UNKNOWN


def test_notifications_crossing_a_cancellation_are_dropped() -> None:
    client, server = connect(REV)
    server.receive(client.send(_listen(client, "X", tools_list_changed=True)))
    ack = server.send(_ack(server, "X", tools_list_changed=True))
    server.receive(client.send(tools_call(client, 50, meta={LEVEL: "info"})))
    log = server.send(_log(server, "info"))
    client.cancel("X")
    client.cancel(50)
    assert client.receive(ack) == []  # the acknowledgement crossed the cancellation
    only(client.receive(log), NotificationReceived)  # so did the log message
