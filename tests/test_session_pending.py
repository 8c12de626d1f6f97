"""The pending table and cancellation, in every revision.

Ids are unique among outstanding requests; a response is typed by the method its id
was sent with; unknown and duplicate ids are violations; a cancelled request is dropped
by its receiver, never answered, and its late response is ignored; ``initialize``
cannot be cancelled.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcpspec.runtime import (
    ClientSession,
    ErrorObject,
    ErrorReceived,
    ErrorResponse,
    NotificationReceived,
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


@pytest.mark.parametrize("revision", REVISIONS)
def test_outgoing_ids_are_unique_among_outstanding(revision: str) -> None:
    client, server = connect(revision)
    data = client.send(tools_call(client, 42))
    with pytest.raises(RequestIdError) as info:
        client.send(tools_call(client, 42))
    assert info.value.rule is Rule.DUPLICATE_REQUEST_ID
    assert client.outstanding == {42}
    server.receive(data)
    client.receive(server.send(ResultResponse(id=42, result=tools_call_result(server))))
    # Answered: the id may be used again.
    assert client.outstanding == frozenset()
    client.send(tools_call(client, 42))


@pytest.mark.parametrize("revision", REVISIONS)
def test_idle_says_no_request_is_in_flight_either_way(revision: str) -> None:
    client, server = connect(revision)
    assert client.idle and server.idle
    data = client.send(tools_call(client, 7))
    assert not client.idle and client.outstanding == {7}
    server.receive(data)
    assert not server.idle and server.unanswered == {7}
    answer = server.send(ResultResponse(id=7, result=tools_call_result(server)))
    assert server.idle and server.unanswered == frozenset()
    client.receive(answer)
    assert client.idle and client.outstanding == frozenset()


@pytest.mark.parametrize("revision", REVISIONS)
def test_incoming_duplicate_id_is_a_violation_without_answer(revision: str) -> None:
    client, server = connect(revision)
    data = client.send(tools_call(client, "dup"))
    only(server.receive(data), RequestReceived)
    violation = only(server.receive(data), ProtocolViolation)
    assert violation.rule is Rule.DUPLICATE_REQUEST_ID and violation.error.code == -32600
    assert violation.response is None
    # The first request is still answerable, once.
    answer = server.send(ResultResponse(id="dup", result=tools_call_result(server, "first")))
    response = only(client.receive(answer), ResponseReceived)
    assert response.result.content[0].text == "first"


@pytest.mark.parametrize("revision", REVISIONS)
def test_response_is_typed_by_the_method_of_its_id(revision: str) -> None:
    client, server = connect(revision)
    list_request = tools_list(client, 1)
    server.receive(client.send(list_request))
    server.receive(client.send(tools_call(client, 2)))
    st = server.types
    if revision == "2026-07-28":
        listing = st.ListToolsResult(tools=[], ttl_ms=0, cache_scope="public")
    else:
        listing = st.ListToolsResult(tools=[])
    # Answer out of order: each response is typed by its own id's method.
    second = only(client.receive(server.answer(2, tools_call_result(server))), ResponseReceived)
    first = only(client.receive(server.answer(1, listing)), ResponseReceived)
    assert (first.method, type(first.result).__name__) == ("tools/list", "ListToolsResult")
    assert (second.method, type(second.result).__name__) == ("tools/call", "CallToolResult")
    assert second.request.method == "tools/call"


@pytest.mark.parametrize("revision", REVISIONS)
def test_result_not_matching_its_method_is_a_violation(revision: str) -> None:
    client, server = connect(revision)
    server.receive(client.send(tools_call(client, 3)))
    bogus = wire({"jsonrpc": "2.0", "id": 3, "result": {"tools": []}})  # no `content`
    violation = only(client.receive(bogus), ProtocolViolation)
    assert violation.rule is Rule.INVALID_RESULT and violation.error.code == -32602
    assert violation.path.startswith("$.result") and violation.response is None
    assert client.outstanding == frozenset()


def _answer(**members: Any) -> bytes:
    """A response to request 3, written as Python's ``json`` writes it."""
    return json.dumps({"jsonrpc": "2.0", "id": 3, **members}).encode()


#: Answers to request 3 that cannot be read, with the rule each breaks (the last of each
#: kind is large enough to take the one-pass decoding of the only outstanding request's
#: response).
UNREADABLE_ANSWERS = [
    (_answer(jsonrpc=None, result={"content": []}), Rule.INVALID_REQUEST),
    (_answer(result={"content": []}, error={"code": 1, "message": "x"}), Rule.INVALID_REQUEST),
    (_answer(error={"code": "busy", "message": "x"}), Rule.INVALID_REQUEST),
    (_answer(jsonrpc="1.0", result={"content": [], "pad": "p" * 300}), Rule.INVALID_REQUEST),
    # Python's json writes a lone surrogate as an escape, which is not JSON to msgspec.
    (_answer(result={"content": [{"type": "text", "text": "\ud800"}]}), Rule.PARSE_ERROR),
    (_answer(result={"content": [], "pad": "p" * 300, "text": "\udbff"}), Rule.PARSE_ERROR),
    (_answer(result={"content": "x"})[:-1], Rule.PARSE_ERROR),  # cut short
    (b'{"jsonrpc":"2.0","id":3,"result":' + b"[" * 5000 + b"]" * 5000 + b"}", Rule.PARSE_ERROR),
]


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize(("answer", "rule"), UNREADABLE_ANSWERS)
@pytest.mark.parametrize("outstanding", [1, 2])
def test_an_unreadable_answer_still_answers_its_request(
    revision: str, answer: bytes, rule: Rule, outstanding: int
) -> None:
    # The peer sends no other answer: the request is settled, and the violation names
    # it, so that nothing waits for it (nor keeps its record) forever.
    client, server = connect(revision)
    for request_id in range(3, 3 + outstanding):
        server.receive(client.send(tools_call(client, request_id)))
    violation = only(client.receive(answer), ProtocolViolation)
    assert violation.rule is rule and violation.response is None
    assert (violation.request_id, violation.method) == (3, "tools/call")
    assert client.outstanding == frozenset(range(4, 3 + outstanding))
    again = only(client.receive(answer), ProtocolViolation)
    assert again.rule is rule and again.request_id is None and again.response is None


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("answer", [_answer(), _answer(data={"pad": "p" * 300})])
def test_an_answer_with_neither_result_nor_error_answers_its_request(
    revision: str, answer: bytes
) -> None:
    # No method: it can only be an answer, though a broken one. It settles request 3 and
    # is not answered (the peer would not know what the error answers); the same message
    # once 3 is settled answers nothing of ours, and gets the -32600 of an invalid request.
    client, server = connect(revision)
    server.receive(client.send(tools_call(client, 3)))
    violation = only(client.receive(answer), ProtocolViolation)
    assert violation.rule is Rule.INVALID_REQUEST and violation.response is None
    assert (violation.request_id, violation.method) == (3, "tools/call")
    assert client.outstanding == frozenset()
    again = only(client.receive(answer), ProtocolViolation)
    assert again.response is not None and again.response.id == 3
    assert again.response.error.code == -32600


def test_an_unreadable_answer_in_a_batch_answers_its_request() -> None:
    client, server = connect("2025-03-26")
    for request_id in (3, 4):
        server.receive(client.send(tools_call(client, request_id)))
    batch = [
        {"jsonrpc": None, "id": 3, "result": {"content": []}},
        {"jsonrpc": "2.0", "id": 4, "result": {"content": []}},
    ]
    events = client.receive(wire(batch))
    violation = only(events, ProtocolViolation)
    assert (violation.request_id, violation.method) == (3, "tools/call")
    assert only(events, ResponseReceived).request_id == 4
    assert client.outstanding == frozenset()


@pytest.mark.parametrize("revision", REVISIONS)
@pytest.mark.parametrize("kind", ["result", "error"])
def test_unknown_and_duplicate_response_ids(revision: str, kind: str) -> None:
    client, server = connect(revision)
    body = (
        {"result": {"content": []}} if kind == "result" else {"error": {"code": 1, "message": "x"}}
    )
    unknown = only(client.receive(wire({"jsonrpc": "2.0", "id": 99, **body})), ProtocolViolation)
    assert unknown.rule is Rule.UNKNOWN_RESPONSE_ID and unknown.response is None
    server.receive(client.send(tools_call(client, 5)))
    answer = wire({"jsonrpc": "2.0", "id": 5, **body})
    first = client.receive(answer)
    assert isinstance(first[0], (ResponseReceived, ErrorReceived))
    again = only(client.receive(answer), ProtocolViolation)
    assert again.rule is Rule.UNKNOWN_RESPONSE_ID


@pytest.mark.parametrize("revision", REVISIONS)
def test_answering_unknown_or_answered_ids_raises(revision: str) -> None:
    client, server = connect(revision)
    with pytest.raises(RequestIdError) as info:
        server.send(ResultResponse(id=77, result=tools_call_result(server)))
    assert info.value.rule is Rule.UNKNOWN_RESPONSE_ID
    server.receive(client.send(tools_call(client, 8)))
    server.send(ResultResponse(id=8, result=tools_call_result(server)))
    with pytest.raises(RequestIdError):
        server.send(ErrorResponse(id=8, error=ErrorObject(code=-32603, message="x")))


@pytest.mark.parametrize("revision", REVISIONS)
def test_result_type_and_revision_are_checked_on_send(revision: str) -> None:
    client, server = connect(revision)
    server.receive(client.send(tools_call(client, 9)))
    with pytest.raises(RevisionError) as wrong_type:
        server.send(ResultResponse(id=9, result=server.types.TextContent(text="no")))
    assert wrong_type.value.rule is Rule.INVALID_RESULT
    other = "2025-06-18" if revision != "2025-06-18" else "2025-11-25"
    foreign = ClientSession(mode=other).types
    with pytest.raises(RevisionError) as wrong_revision:
        client.send(foreign.CallToolRequest(id=10, params=foreign.CallToolRequestParams(name="x")))
    assert wrong_revision.value.rule is Rule.WRONG_REVISION
    assert client.outstanding == {9}  # the refused request was not recorded


# -- cancellation -------------------------------------------------------------------------------


@pytest.mark.parametrize("revision", REVISIONS)
def test_cancelled_request_is_dropped_and_never_answered(revision: str) -> None:
    client, server = connect(revision)
    server.receive(client.send(tools_call(client, 11)))
    events = server.receive(client.cancel(11, "user"))
    cancelled = only(events, RequestCancelled)
    assert cancelled.active and cancelled.request_id == 11 and cancelled.reason == "user"
    assert 11 not in server.unanswered
    # The receiver sends no response: an answer now writes nothing.
    assert server.send(ResultResponse(id=11, result=tools_call_result(server))) == b""
    assert server.send(ErrorResponse(id=11, error=ErrorObject(code=-32603, message="x"))) == b""


@pytest.mark.parametrize("revision", REVISIONS)
def test_response_after_cancellation_is_ignored(revision: str) -> None:
    client, server = connect(revision)
    server.receive(client.send(tools_call(client, 12)))
    answer = server.send(ResultResponse(id=12, result=tools_call_result(server)))
    cancel = client.cancel(12)
    assert client.receive(answer) == []  # crossed the cancellation: ignored
    late = only(server.receive(cancel), RequestCancelled)
    assert not late.active  # referred to nothing outstanding any more
    assert only(client.receive(answer), ProtocolViolation).rule is Rule.UNKNOWN_RESPONSE_ID


@pytest.mark.parametrize("revision", REVISIONS)
def test_cancel_of_unknown_request_raises_locally(revision: str) -> None:
    client, _ = connect(revision)
    with pytest.raises(RequestIdError):
        client.cancel(404)


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_initialize_cannot_be_cancelled(revision: str) -> None:
    server = ServerSession()
    client = ClientSession(mode=revision)
    server.receive(client.start())
    with pytest.raises(StateError) as info:
        client.cancel(1)
    assert info.value.rule is Rule.CANCEL_INITIALIZE
    cancel = wire(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    )
    violation = only(server.receive(cancel), ProtocolViolation)
    assert violation.rule is Rule.CANCEL_INITIALIZE and violation.response is None
    # initialize is still pending and answerable.
    assert json.loads(server.answer(1, server.initialize_result()))["id"] == 1


def test_stateless_server_cancels_only_listen_requests() -> None:
    client, server = connect("2026-07-28")
    server.receive(client.send(tools_call(client, 13)))
    with pytest.raises(StateError) as info:
        server.cancel(13)
    assert info.value.rule is Rule.CANCEL_NOT_LISTEN
    bogus = wire(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 13}}
    )
    violation = only(client.receive(bogus), ProtocolViolation)
    assert violation.rule is Rule.CANCEL_NOT_LISTEN
    # The request is still outstanding and answered normally.
    only(client.receive(server.answer(13, tools_call_result(server))), ResponseReceived)


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_server_can_cancel_its_own_requests(revision: str) -> None:
    client, server = connect(revision)
    t = server.types
    data = server.send(t.ListRootsRequest(id=21))
    only(client.receive(data), RequestReceived)
    cancelled = only(client.receive(server.cancel(21)), RequestCancelled)
    assert cancelled.active and 21 not in client.unanswered
    assert client.send(ResultResponse(id=21, result=client.types.ListRootsResult(roots=[]))) == b""
    error = ErrorResponse(id=21, error=ErrorObject(code=-32603, message="late"))
    assert server.receive(wire(error)) == []


# -- decoding responses ---------------------------------------------------------------------------


class _Counting:
    """Counts the calls of a session's ``codec.decode``."""

    def __init__(self, session: Any) -> None:
        self.calls = 0
        self._decode = session._receiver._decode
        session._receiver._decode = self

    def __call__(self, data: bytes) -> Any:
        self.calls += 1
        return self._decode(data)


@pytest.mark.parametrize("revision", REVISIONS)
def test_response_to_the_only_outstanding_request_is_decoded_in_one_pass(revision: str) -> None:
    text = "x" * 400  # large enough to be worth the one-pass attempt
    events = []
    decodes = []
    for extra in (False, True):
        client, server = connect(revision)
        counting = _Counting(client)
        server.receive(client.send(tools_call(client, 1)))
        if extra:  # two outstanding: the codec decodes, then the result is typed
            server.receive(client.send(tools_call(client, 2)))
        events.append(client.receive(server.answer(1, tools_call_result(server, text))))
        decodes.append(counting.calls)
    assert decodes == [0, 1]
    assert events[0] == events[1]
    response = only(events[0], ResponseReceived)
    assert response.result.content[0].text == text and response.request.id == 1


@pytest.mark.parametrize("revision", REVISIONS)
def test_what_is_not_the_awaited_response_takes_the_usual_path(revision: str) -> None:
    client, server = connect(revision)
    server.receive(client.send(tools_call(client, 1)))
    padding = "y" * 300
    # A response to another id: a violation, and the request is still outstanding.
    other = wire({"jsonrpc": "2.0", "id": 2, "result": {"content": [], "pad": padding}})
    assert only(client.receive(other), ProtocolViolation).rule is Rule.UNKNOWN_RESPONSE_ID
    assert client.outstanding == {1}
    # An error response.
    error = wire({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": padding}})
    assert only(client.receive(error), ErrorReceived).error.message == padding
    # A result of the wrong shape: reported with its path, as by the codec.
    server.receive(client.send(tools_call(client, 3)))
    bogus = wire({"jsonrpc": "2.0", "id": 3, "result": {"content": 1, "pad": padding}})
    violation = only(client.receive(bogus), ProtocolViolation)
    assert violation.rule is Rule.INVALID_RESULT and violation.path == "$.result.content"
    assert client.outstanding == frozenset()


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_notification_mentioning_result_is_a_notification(revision: str) -> None:
    client, server = connect(revision)
    server.receive(client.send(tools_call(client, 1)))
    log = {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "data": {"result": "z" * 300}},
    }
    assert only(client.receive(wire(log)), NotificationReceived).method == log["method"]
    assert client.outstanding == {1}


def test_result_without_result_type_from_an_older_peer_reads_complete() -> None:
    client, server = connect("2026-07-28")
    server.receive(client.send(tools_call(client, 1)))
    older = wire({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "pad": "p" * 300}})
    response = only(client.receive(older), ResponseReceived)
    assert response.result.result_type == "complete"
