"""Progress (``_meta.progressToken``) in every revision: tokens unique among active
requests, progress increasing, none after completion; progress that crossed a
cancellation is dropped."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpspec.runtime import (
    ProgressError,
    ProgressReceived,
    ProtocolViolation,
    RequestCancelled,
    RequestReceived,
    ResponseReceived,
    ResultResponse,
    Rule,
)

from .session_kit import (
    HANDSHAKE,
    REVISIONS,
    connect,
    only,
    tools_call,
    tools_call_result,
    tools_list,
    wire,
)


def _progress(session: Any, token: Any, value: float, total: float | None = None) -> Any:
    t = session.types
    params = t.ProgressNotificationParams(progress_token=token, progress=value)
    if total is not None:
        params = t.ProgressNotificationParams(progress_token=token, progress=value, total=total)
    return t.ProgressNotification(params=params)


def _call_with_token(client: Any, server: Any, request_id: Any, token: Any) -> RequestReceived:
    events = server.receive(client.send(tools_call(client, request_id), progress_token=token))
    received = only(events, RequestReceived)
    assert received.progress_token == token
    return received


@pytest.mark.parametrize("revision", REVISIONS)
def test_progress_flows_and_increases(revision: str) -> None:
    client, server = connect(revision)
    _call_with_token(client, server, 1, "tok")
    first = only(client.receive(server.send(_progress(server, "tok", 1, 3))), ProgressReceived)
    assert (first.request_id, first.progress, first.total) == (1, 1, 3)
    only(client.receive(server.send(_progress(server, "tok", 2.5))), ProgressReceived)
    # Not increasing: the local side refuses to send it ...
    with pytest.raises(ProgressError) as info:
        server.send(_progress(server, "tok", 2.5))
    assert info.value.rule is Rule.PROGRESS_NOT_INCREASING
    # ... and the receiving side reports it.
    data = wire(
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "tok", "progress": 2},
        }
    )
    violation = only(client.receive(data), ProtocolViolation)
    assert violation.rule is Rule.PROGRESS_NOT_INCREASING and violation.response is None


@pytest.mark.parametrize("revision", REVISIONS)
def test_no_progress_after_completion(revision: str) -> None:
    client, server = connect(revision)
    _call_with_token(client, server, 2, 7)
    stale = server.send(_progress(server, 7, 1))
    only(
        client.receive(server.send(ResultResponse(id=2, result=tools_call_result(server)))),
        ResponseReceived,
    )
    with pytest.raises(ProgressError) as info:
        server.send(_progress(server, 7, 2))
    assert info.value.rule is Rule.PROGRESS_AFTER_COMPLETION
    violation = only(client.receive(stale), ProtocolViolation)
    assert violation.rule is Rule.PROGRESS_AFTER_COMPLETION
    # The token is free again for a new request.
    _call_with_token(client, server, 3, 7)


@pytest.mark.parametrize("revision", REVISIONS)
def test_unknown_token_is_a_violation(revision: str) -> None:
    client, server = connect(revision)
    data = wire(
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "x", "progress": 1},
        }
    )
    assert only(client.receive(data), ProtocolViolation).rule is Rule.PROGRESS_UNKNOWN_TOKEN
    with pytest.raises(ProgressError) as info:
        server.send(_progress(server, "x", 1))
    assert info.value.rule is Rule.PROGRESS_UNKNOWN_TOKEN


@pytest.mark.parametrize("revision", REVISIONS)
def test_tokens_unique_among_active_requests(revision: str) -> None:
    client, server = connect(revision)
    _call_with_token(client, server, 4, "same")
    with pytest.raises(ProgressError) as info:
        client.send(tools_call(client, 5), progress_token="same")
    assert info.value.rule is Rule.PROGRESS_TOKEN_IN_USE
    assert client.outstanding == {4}
    # A peer that reuses an active token gets -32602.
    if revision == "2026-07-28":
        meta = {
            "io.modelcontextprotocol/protocolVersion": revision,
            "io.modelcontextprotocol/clientCapabilities": {},
            "progressToken": "same",
        }
    else:
        meta = {"progressToken": "same"}
    data = wire(
        {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "x", "_meta": meta}}
    )
    violation = only(server.receive(data), ProtocolViolation)
    assert violation.rule is Rule.PROGRESS_TOKEN_IN_USE and violation.error.code == -32602
    assert violation.response is not None and violation.response.id == 6


@pytest.mark.parametrize("revision", REVISIONS)
def test_progress_token_must_be_string_or_integer(revision: str) -> None:
    _client, server = connect(revision)
    meta: dict[str, Any] = {"progressToken": 1.5}
    if revision == "2026-07-28":
        meta |= {
            "io.modelcontextprotocol/protocolVersion": revision,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    data = wire(
        {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "x", "_meta": meta}}
    )
    violation = only(server.receive(data), ProtocolViolation)
    assert (
        violation.rule is Rule.INVALID_PARAMS and violation.path == "$.params._meta.progressToken"
    )
    assert violation.response is not None


@pytest.mark.parametrize("revision", REVISIONS)
def test_progress_crossing_a_cancellation_is_dropped(revision: str) -> None:
    client, server = connect(revision)
    _call_with_token(client, server, 9, "c")
    in_flight = server.send(_progress(server, "c", 1))
    cancel = client.cancel(9)
    assert client.receive(in_flight) == []  # the request was cancelled: not a violation
    assert only(server.receive(cancel), RequestCancelled).active
    assert server.send(_progress(server, "c", 2)) == b""  # nothing to write any more


@pytest.mark.parametrize("revision", REVISIONS)
def test_token_from_params_meta(revision: str) -> None:
    client, server = connect(revision)
    events = server.receive(client.send(tools_call(client, 10, meta={"progressToken": "m"})))
    assert only(events, RequestReceived).progress_token == "m"
    assert (
        only(client.receive(server.send(_progress(server, "m", 1))), ProgressReceived).request_id
        == 10
    )
    with pytest.raises(ProgressError):
        client.send(tools_call(client, 11, meta={"progressToken": "m"}), progress_token="other")


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_progress_on_server_requests(revision: str) -> None:
    client, server = connect(revision)
    t = server.types
    events = client.receive(server.send(t.ListRootsRequest(id=30), progress_token="roots"))
    assert only(events, RequestReceived).progress_token == "roots"
    report = client.send(_progress(client, "roots", 0.5))
    assert only(server.receive(report), ProgressReceived).request_id == 30


def test_task_augmented_request_keeps_its_token_until_the_task_ends() -> None:
    client, server = connect("2025-11-25")
    t, st = client.types, server.types
    request = t.CallToolRequest(
        id=40, params=t.CallToolRequestParams(name="slow", task=t.TaskMetadata(ttl=1000))
    )
    only(server.receive(client.send(request, progress_token="task")), RequestReceived)
    task = st.Task(
        task_id="T1",
        status="working",
        ttl=1000,
        created_at="2026-01-01T00:00:00Z",
        last_updated_at="2026-01-01T00:00:00Z",
    )
    created = only(
        client.receive(server.send(ResultResponse(id=40, result=st.CreateTaskResult(task=task)))),
        ResponseReceived,
    )
    assert type(created.result).__name__ == "CreateTaskResult"
    # The token outlives the CreateTaskResult ...
    only(client.receive(server.send(_progress(server, "task", 1))), ProgressReceived)
    done = st.TaskStatusNotification(
        params=st.TaskStatusNotificationParams(
            task_id="T1",
            status="completed",
            ttl=1000,
            created_at="2026-01-01T00:00:00Z",
            last_updated_at="2026-01-01T00:00:01Z",
        )
    )
    client.receive(server.send(done))
    # ... until the task is terminal.
    with pytest.raises(ProgressError):
        server.send(_progress(server, "task", 2))


@pytest.mark.parametrize("revision", REVISIONS)
def test_progress_token_argument_goes_into_params_meta(revision: str) -> None:
    client, server = connect(revision)
    # A request without params gets them, carrying the token; what is recorded as sent
    # is what went on the wire.
    listing = tools_list(client, 12)
    data = client.send(listing, progress_token="list")
    assert json.loads(data)["params"]["_meta"]["progressToken"] == "list"
    received = only(server.receive(data), RequestReceived)
    assert received.progress_token == "list"
    st = server.types
    result = (
        st.ListToolsResult(tools=[])
        if revision != "2026-07-28"
        else st.ListToolsResult(tools=[], ttl_ms=0, cache_scope="public")
    )
    answered = only(client.receive(server.answer(12, result)), ResponseReceived)
    assert answered.request.params.meta["progressToken"] == "list"
    # Other _meta entries are kept.
    call = tools_call(client, 13, meta={"com.example/trace": "t1"})
    sent = json.loads(client.send(call, progress_token=5))["params"]["_meta"]
    assert sent["com.example/trace"] == "t1" and sent["progressToken"] == 5
    with pytest.raises(ProgressError) as info:
        client.send(tools_call(client, 14), progress_token=1.5)  # type: ignore[arg-type]
    assert info.value.rule is Rule.INVALID_PARAMS
    assert client.outstanding == {13}


def test_progress_token_argument_needs_params_with_meta() -> None:
    client, _server = connect("2025-11-25")
    t = client.types
    # Every generated params type has _meta (tasks/get's too, which the schema inlines
    # without it); a value of another type in params has nowhere to carry the token.
    stray = t.GetTaskRequest(id=15, params=t.TaskMetadata(ttl=5))
    with pytest.raises(TypeError, match="no _meta"):
        client.send(stray, progress_token=1)
    assert client.outstanding == frozenset()
    assert "meta" in t.GetTaskRequestParams.__struct_fields__


@pytest.mark.parametrize("revision", [r for r in HANDSHAKE if r < "2025-11-25"])
def test_token_in_open_params(revision: str) -> None:
    # Up to 2025-06-18 the params of ping are an open object, not a Struct.
    _client, server = connect(revision)
    ping = {
        "jsonrpc": "2.0",
        "id": 16,
        "method": "ping",
        "params": {"_meta": {"progressToken": "p"}},
    }
    assert only(server.receive(wire(ping)), RequestReceived).progress_token == "p"
    bad = {"jsonrpc": "2.0", "id": 17, "method": "ping", "params": {"_meta": 5}}
    violation = only(server.receive(wire(bad)), ProtocolViolation)
    assert violation.rule is Rule.INVALID_PARAMS and violation.path == "$.params._meta"
    assert violation.response is not None and violation.response.id == 17
