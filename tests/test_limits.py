"""Limits: what a peer can make a session hold or do is bounded, and a limit hit is a
violation naming the limit and its value, keeping nothing of what it refused."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpspec.runtime import (
    DEFAULT_LIMITS,
    ErrorResponse,
    LimitError,
    Limits,
    Outgoing,
    ProtocolViolation,
    RequestReceived,
    ResultResponse,
    Rule,
)

from .session_kit import HANDSHAKE, REVISIONS, connect, meta_for, only, tools_call, tools_list, wire


def _request(client: Any, request_id: int, **params: Any) -> bytes:
    """The wire bytes of a tools/call from ``client`` (its 2026-07-28 ``_meta`` included),
    not recorded by the client: the server is what is tested."""
    message: dict[str, Any] = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "echo", **params},
    }
    if client.codec.revision == "2026-07-28":
        message["params"]["_meta"] = {**meta_for(client), **message["params"].get("_meta", {})}
    return wire(message)


def _ping(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}


@pytest.mark.parametrize(
    "field",
    [
        "max_message_bytes",
        "max_batch_members",
        "max_requests_in_flight",
        "max_request_bytes_in_flight",
    ],
)
@pytest.mark.parametrize("value", [0, -1, True, 1.5])
def test_limits_are_positive_integers(field: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f"Limits.{field} must be an integer of at least"):
        Limits(**{field: value})


def test_the_message_size_limit_is_at_least_512() -> None:
    with pytest.raises(ValueError, match="at least 512, not 511"):
        Limits(max_message_bytes=511)
    assert Limits(max_message_bytes=512).max_message_bytes == 512


def test_sessions_keep_the_default_limits_unless_given_others() -> None:
    client, server = connect("2025-11-25", server_limits=Limits(max_batch_members=3))
    assert client.limits == DEFAULT_LIMITS
    assert server.limits.max_batch_members == 3
    assert DEFAULT_LIMITS.max_message_bytes == 4 * 1024 * 1024


# -- message size -------------------------------------------------------------------------------


@pytest.mark.parametrize("revision", REVISIONS)
def test_a_message_over_max_message_bytes_is_refused_unread(revision: str) -> None:
    client, server = connect(revision, server_limits=Limits(max_message_bytes=1000))
    data = _request(client, 7, arguments={"text": "x" * 2000})
    violation = only(server.receive(data), ProtocolViolation)
    assert violation.rule is Rule.LIMIT_EXCEEDED and violation.error.code == -32600
    assert f"a message of {len(data)} bytes" in violation.reason
    assert "max_message_bytes=1000" in violation.reason
    # Refused unread: the id is unknown, so the answer's id is null, and nothing is held.
    assert violation.response is not None and violation.response.id is None
    assert json.loads(server.send(violation.response))["id"] is None
    assert server.unanswered == frozenset()
    # The session goes on: a request within the limit is taken in.
    only(server.receive(_request(client, 8)), RequestReceived)


def test_a_message_at_max_message_bytes_is_taken_in() -> None:
    client, _ = connect("2025-06-18")
    data = _request(client, 1, arguments={"text": "x" * 2000})  # larger than initialize
    _, server = connect("2025-06-18", server_limits=Limits(max_message_bytes=len(data)))
    only(server.receive(data), RequestReceived)
    larger = _request(client, 2, arguments={"text": "x" * 2001})
    assert only(server.receive(larger), ProtocolViolation).rule is Rule.LIMIT_EXCEEDED


# -- batches ---------------------------------------------------------------------------------------


def test_a_batch_over_max_batch_members_is_refused_whole() -> None:
    _, server = connect("2025-03-26", server_limits=Limits(max_batch_members=3))
    events = server.receive(wire([_ping(i) for i in range(4)]))
    violation = only(events, ProtocolViolation)
    assert violation.rule is Rule.LIMIT_EXCEEDED and violation.error.code == -32600
    assert violation.reason == "a batch of 4 members is over the limit max_batch_members=3"
    assert violation.response is not None and violation.response.id is None
    assert server.unanswered == frozenset()
    events = server.receive(wire([_ping(i) for i in range(3)]))
    assert [type(e) for e in events] == [RequestReceived] * 3


def test_a_large_batch_of_garbage_gets_one_small_answer() -> None:
    """A 100 KB batch of ``1`` members gave 8.7 MB of error responses: now one error."""
    _, server = connect("2025-03-26")
    data = b"[" + b",".join([b"1"] * 50_000) + b"]"
    violation = only(server.receive(data), ProtocolViolation)
    assert violation.response is not None
    assert len(server.send(violation.response)) < 400


# -- requests in flight ----------------------------------------------------------------------------


@pytest.mark.parametrize("revision", REVISIONS)
def test_requests_beyond_max_requests_in_flight_are_answered_and_not_kept(revision: str) -> None:
    client, server = connect(revision, server_limits=Limits(max_requests_in_flight=3))
    for request_id in (1, 2, 3):
        only(server.receive(_request(client, request_id)), RequestReceived)
    violation = only(server.receive(_request(client, 4)), ProtocolViolation)
    assert violation.rule is Rule.LIMIT_EXCEEDED and violation.request_id == 4
    assert "max_requests_in_flight=3" in violation.reason
    assert server.unanswered == {1, 2, 3}
    # The answer needs no record: send writes it, and still nothing is kept.
    assert isinstance(violation.response, ErrorResponse) and violation.response.id == 4
    answer = json.loads(server.send(violation.response))
    assert answer["id"] == 4 and answer["error"]["code"] == -32600
    assert server.unanswered == {1, 2, 3}
    # A request that breaks another rule beyond the limit gets its own error, unkept.
    unknown = wire({"jsonrpc": "2.0", "id": 5, "method": "no/such"})
    refused = only(server.receive(unknown), ProtocolViolation)
    assert refused.rule is Rule.METHOD_NOT_FOUND and refused.response is not None
    assert json.loads(server.send(refused.response))["id"] == 5
    assert server.unanswered == {1, 2, 3}
    # Once one is answered, there is room again.
    server.send(ResultResponse(id=1, result=server.types.CallToolResult(content=[])))
    only(server.receive(_request(client, 6)), RequestReceived)


@pytest.mark.parametrize("revision", REVISIONS)
def test_requests_beyond_max_request_bytes_in_flight_are_answered_and_not_kept(
    revision: str,
) -> None:
    """The bytes of the requests in flight are bounded as their number is: a request
    decodes to many times its size, and its handler holds it until it is answered."""
    limits = Limits(max_message_bytes=4096, max_request_bytes_in_flight=4096)
    client, server = connect(revision, server_limits=limits)
    padding = {"x": "y" * 1500}  # each request is a little over 1,500 bytes
    for request_id in (1, 2):
        only(server.receive(_request(client, request_id, arguments=padding)), RequestReceived)
    violation = only(server.receive(_request(client, 3, arguments=padding)), ProtocolViolation)
    assert violation.rule is Rule.LIMIT_EXCEEDED and violation.request_id == 3
    assert "max_request_bytes_in_flight=4096" in violation.reason
    assert violation.response is not None
    assert json.loads(server.send(violation.response))["error"]["code"] == -32600
    assert server.unanswered == {1, 2}
    # A small request still fits; once one is answered, a large one does too.
    only(server.receive(_request(client, 4)), RequestReceived)
    server.send(ResultResponse(id=1, result=server.types.CallToolResult(content=[])))
    only(server.receive(_request(client, 5, arguments=padding)), RequestReceived)
    assert server.unanswered == {2, 4, 5}


def test_a_cancelled_request_gives_its_bytes_back() -> None:
    limits = Limits(max_message_bytes=4096, max_request_bytes_in_flight=4096)
    client, server = connect("2025-11-25", server_limits=limits)
    padding = {"x": "y" * 3000}
    only(server.receive(_request(client, 1, arguments=padding)), RequestReceived)
    assert server.receive(_request(client, 2, arguments=padding))[0].rule is Rule.LIMIT_EXCEEDED
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    server.receive(wire(cancel))
    only(server.receive(_request(client, 3, arguments=padding)), RequestReceived)


def test_the_bytes_in_flight_are_never_below_one_message() -> None:
    limits = Limits(max_message_bytes=8192, max_request_bytes_in_flight=1)
    assert limits.request_bytes_in_flight == 8192
    client, server = connect("2025-11-25", server_limits=limits)
    only(server.receive(_request(client, 1, arguments={"x": "y" * 6000})), RequestReceived)


def test_a_batch_shares_its_bytes_among_its_requests() -> None:
    limits = Limits(max_message_bytes=4096, max_request_bytes_in_flight=4096)
    _, server = connect("2025-03-26", server_limits=limits)
    events = server.receive(wire([_ping(n) for n in range(1, 41)]))  # about 1.6 KB in all
    assert all(isinstance(e, RequestReceived) for e in events) and len(events) == 40


def test_batch_members_beyond_the_limit_are_answered_with_the_batch() -> None:
    _, server = connect("2025-03-26", server_limits=Limits(max_requests_in_flight=2))
    events = server.receive(wire([_ping(1), _ping(2), _ping(3), _ping(4)]))
    accepted = [e.request_id for e in events if isinstance(e, RequestReceived)]
    refused = [e for e in events if isinstance(e, ProtocolViolation)]
    assert accepted == [1, 2]
    assert [(v.request_id, v.rule, v.response) for v in refused] == [
        (3, Rule.LIMIT_EXCEEDED, None),
        (4, Rule.LIMIT_EXCEEDED, None),
    ]
    assert server.unanswered == {1, 2}
    assert server.send(ResultResponse(id=1, result={})) == b""
    answers = json.loads(server.send(ResultResponse(id=2, result={})))
    assert [a["id"] for a in answers] == [3, 4, 1, 2]
    assert [a.get("error", {}).get("code") for a in answers] == [-32600, -32600, None, None]


def test_a_batch_refused_whole_by_the_limit_is_written_at_once() -> None:
    _, server = connect("2025-03-26", server_limits=Limits(max_requests_in_flight=1))
    only(server.receive(wire(_ping(1))), RequestReceived)
    events = server.receive(wire([_ping(2), _ping(3)]))
    written = only(events, Outgoing)
    assert [a["id"] for a in json.loads(written.data)] == [2, 3]
    assert server.unanswered == {1}


def test_unreadable_messages_owe_no_more_than_the_limit() -> None:
    """Answers with id null are owed too: beyond the limit they are not counted."""
    _, server = connect("2025-06-18", server_limits=Limits(max_requests_in_flight=2))
    owed = [only(server.receive(b"{nope"), ProtocolViolation).response for _ in range(4)]
    assert all(r is not None and r.id is None for r in owed)
    for response in owed:
        assert json.loads(server.send(response))["id"] is None  # every answer can be sent


# -- progress tokens and task records --------------------------------------------------------------


@pytest.mark.parametrize("revision", REVISIONS)
def test_progress_tokens_beyond_max_progress_tokens_are_refused(revision: str) -> None:
    client, server = connect(revision, server_limits=Limits(max_progress_tokens=2))
    for request_id in (1, 2):
        meta = {"progressToken": f"t{request_id}"}
        only(server.receive(_request(client, request_id, _meta=meta)), RequestReceived)
    violation = only(
        server.receive(_request(client, 3, _meta={"progressToken": "t3"})), ProtocolViolation
    )
    assert violation.rule is Rule.LIMIT_EXCEEDED
    assert violation.path == "$.params._meta.progressToken"
    assert "max_progress_tokens=2" in violation.reason
    assert violation.response is not None
    assert json.loads(server.send(violation.response))["error"]["code"] == -32600
    assert server.unanswered == {1, 2}
    only(server.receive(_request(client, 4)), RequestReceived)  # no token: taken in


def test_tokens_kept_for_unfinished_tasks_count_against_the_limit() -> None:
    """2025-11-25: a task-augmented call keeps its token until the task ends, so a client
    starting tasks that never finish is stopped at max_progress_tokens."""
    client, server = connect("2025-11-25", server_limits=Limits(max_progress_tokens=2))
    t = server.types
    for request_id in (1, 2):
        data = _request(client, request_id, task={}, _meta={"progressToken": request_id})
        event = only(server.receive(data), RequestReceived)
        task = t.Task(
            task_id=f"task-{request_id}",
            status="working",
            created_at="2026-01-01T00:00:00Z",
            last_updated_at="2026-01-01T00:00:00Z",
            ttl=None,
        )
        server.send(ResultResponse(id=event.request_id, result=t.CreateTaskResult(task=task)))
    assert server.unanswered == frozenset()
    data = _request(client, 3, task={}, _meta={"progressToken": 3})
    assert only(server.receive(data), ProtocolViolation).rule is Rule.LIMIT_EXCEEDED
    # A task that ends frees its token.
    status = t.TaskStatusNotification(
        params=t.TaskStatusNotificationParams(
            task_id="task-1",
            status="completed",
            created_at="2026-01-01T00:00:00Z",
            last_updated_at="2026-01-01T00:00:00Z",
            ttl=None,
        )
    )
    server.send(status)
    only(server.receive(_request(client, 4, task={}, _meta={"progressToken": 4})), RequestReceived)


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_sending_beyond_max_progress_tokens_raises(revision: str) -> None:
    client, _server = connect(revision, client_limits=Limits(max_progress_tokens=1))
    client.send(tools_call(client, 1), progress_token="a")
    with pytest.raises(LimitError, match="max_progress_tokens=1") as raised:
        client.send(tools_call(client, 2), progress_token="b")
    assert raised.value.rule is Rule.LIMIT_EXCEEDED
    assert client.outstanding == {1}  # nothing recorded
    client.send(tools_list(client, 3))  # a request without a token still goes
