"""Hostile input: the session's last line of defence, error text that never grows with
the input, work that stays linear in the input's size, and the documented edges.

The fuzz suite (tests/test_fuzz.py) throws mutated input at every state; these tests pin
down each mechanism on its own. Scaling is asserted as ratios measured side by side in
one run (never as wall-clock limits), with margins that tell linear from quadratic.
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

import mcpspec
from mcpspec.runtime import (
    ErrorCode,
    InvalidMessage,
    Limits,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    ResultResponse,
    Rule,
)
from mcpspec.runtime.errors import MAX_ECHO

from .session_kit import REVISIONS, connect, only, tools_list, wire

# -- the last line of defence ----------------------------------------------------------------


def _boom(message: Any, checked: Any = None) -> Any:
    raise RuntimeError("a bug in a handler")


@pytest.mark.parametrize("revision", REVISIONS)
def test_a_failure_inside_receive_becomes_an_internal_error_violation(revision: str) -> None:
    client, server = connect(revision)
    request = tools_list(client, 41)
    data = client.send(request)
    server._receiver._handlers[type(request)] = _boom  # the session fails on this message
    violation = only(server.receive(data), ProtocolViolation)
    assert violation.rule is Rule.INTERNAL_ERROR and violation.error.code == -32603
    assert violation.request_id == 41 and violation.method == "tools/list"
    assert "RuntimeError: a bug in a handler" in violation.reason
    # The request is answered, and nothing of it stays.
    assert violation.response is not None
    answer = json.loads(server.send(violation.response))
    assert answer["id"] == 41 and answer["error"]["code"] == -32603
    assert server.unanswered == frozenset()
    # The session goes on.
    if revision != "2026-07-28":  # no ping in the stateless revision
        only(server.receive(client.send(client.types.PingRequest(id=42))), RequestReceived)


def test_a_notification_the_session_fails_on_is_reported_not_answered() -> None:
    client, server = connect("2025-11-25")
    note = client.types.RootsListChangedNotification()
    server._receiver._handlers[type(note)] = _boom
    violation = only(server.receive(client.send(note)), ProtocolViolation)
    assert violation.rule is Rule.INTERNAL_ERROR and violation.response is None


def test_a_response_the_session_fails_on_is_reported_and_receive_goes_on() -> None:
    client, server = connect("2025-06-18")
    only(server.receive(client.send(tools_list(client, 5))), RequestReceived)
    client._receiver._handlers[ResultResponse] = _boom
    answer = server.send(ResultResponse(id=5, result=server.types.ListToolsResult(tools=[])))
    violation = only(client.receive(answer), ProtocolViolation)
    assert violation.rule is Rule.INTERNAL_ERROR and violation.response is None


def test_a_batch_member_the_session_fails_on_loses_nothing_else() -> None:
    """The batch row of the issue: the second member failing left the first pending
    forever. Now every member gets its event, and the batch is answered whole."""
    _client, server = connect("2025-03-26")
    deliver = server._receiver._deliver
    calls = []

    def failing_second(message: Any, data: bytes, gated: bool) -> Any:
        calls.append(message)
        if len(calls) == 2:
            raise KeyError("boom")
        return deliver(message, data, gated)

    server._receiver._deliver = failing_second  # type: ignore[method-assign]
    batch = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in (1, 2, 3)]
    events = server.receive(wire(batch))
    assert [type(e) for e in events] == [RequestReceived, ProtocolViolation, RequestReceived]
    failed = events[1]
    assert isinstance(failed, ProtocolViolation) and failed.rule is Rule.INTERNAL_ERROR
    assert failed.request_id == 2 and failed.response is not None
    assert server.unanswered == {1, 2, 3}
    assert server.send(failed.response) == b""
    assert server.send(ResultResponse(id=1, result={})) == b""
    answers = json.loads(server.send(ResultResponse(id=3, result={})))
    assert [a["id"] for a in answers] == [2, 1, 3]
    assert server.unanswered == frozenset()


# -- error text is bounded --------------------------------------------------------------------


def _echo_fields(error_response: bytes) -> list[str]:
    error = json.loads(error_response)["error"]
    return [error["message"], *(str(v) for v in error.get("data", {}).values())]


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "x" * 1_000_000},
        {"jsonrpc": "2.0", "id": 1, "method": "'" * 1_000_000},
        {"jsonrpc": ["2.0"] * 100_000, "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "y" * 10**6}},
        {"jsonrpc": "2.0", "id": "z" * 10_000, "method": "tools/call", "params": {"name": 5}},
    ],
    ids=["long-method", "quotes-method", "huge-jsonrpc", "long-enum-value", "long-id"],
)
def test_error_responses_never_grow_with_the_input(message: dict[str, Any]) -> None:
    _client, server = connect("2025-06-18", server_limits=Limits(max_message_bytes=10**7))
    data = wire(message)
    violation = only(server.receive(data), ProtocolViolation)
    assert len(violation.reason) < MAX_ECHO + 40 and len(violation.path) < MAX_ECHO + 40
    assert violation.response is not None
    sent = server.send(violation.response)
    id_size = len(json.dumps(message["id"]))  # the id is echoed as JSON-RPC requires
    assert len(sent) < 2 * MAX_ECHO + 400 + id_size
    assert all(len(text) < MAX_ECHO + 40 for text in _echo_fields(sent))


def test_cut_text_says_how_much_was_cut() -> None:
    codec = mcpspec.codec("2025-11-25")
    level = "v" * 5000  # msgspec names the invalid enum value in its message
    with pytest.raises(InvalidMessage) as raised:
        codec.decode(
            wire(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "logging/setLevel",
                    "params": {"level": level},
                }
            )
        )
    assert raised.value.code == ErrorCode.INVALID_PARAMS
    assert raised.value.reason.endswith(
        f"({len(f'Invalid enum value {level!r}') - MAX_ECHO} characters cut)"
    )


# -- linear work ----------------------------------------------------------------------------------


def _best_of(runs: int, make: Callable[[], Callable[[], Any]]) -> float:
    """The shortest of ``runs`` timings of the work ``make()`` returns (made afresh for
    each run, untimed), the least disturbed by the machine; the garbage collector is off
    while it runs, as in ``timeit``: a collection costs in proportion to every object
    alive, which says nothing of the work."""
    best = float("inf")
    enabled = gc.isenabled()
    try:
        for _ in range(runs):
            work = make()
            gc.collect()
            gc.disable()
            started = time.perf_counter()
            work()
            best = min(best, time.perf_counter() - started)
            if enabled:
                gc.enable()
    finally:
        if enabled:
            gc.enable()
    return best


_ROOMY = Limits(max_batch_members=10**6, max_requests_in_flight=10**6, max_message_bytes=10**8)


def _batch_of_ones(members: int) -> bytes:
    return b"[" + b",".join([b"1"] * members) + b"]"


def _batch_of_pings(members: int) -> bytes:
    return wire([{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(members)])


@pytest.mark.parametrize("batch", [_batch_of_ones, _batch_of_pings], ids=["ones", "pings"])
def test_receiving_a_batch_is_linear(batch: Callable[[int], bytes]) -> None:
    codec = mcpspec.codec("2025-03-26")
    small, large = batch(5_000), batch(20_000)

    def receive(data: bytes) -> Callable[[], Callable[[], Any]]:
        def make() -> Callable[[], Any]:
            server = connect("2025-03-26", server_limits=_ROOMY)[1]
            return lambda: server.receive(data)

        return make

    decode_large = _best_of(5, lambda: lambda: codec.decode(large, 10**6))
    receive_small = _best_of(5, receive(small))
    receive_large = _best_of(5, receive(large))
    # A 20,000-member batch costs a few codec decodes of the same bytes (the issue: at
    # most about 20), and four times the members about four times the time
    # (quadratic would be 16).
    assert receive_large < 20 * decode_large
    assert receive_large < 8 * receive_small


def test_answering_open_batches_newest_first_is_linear() -> None:
    def answer_all(members: int) -> Callable[[], Any]:
        def run() -> None:
            _, server = connect("2025-03-26", server_limits=_ROOMY)
            # One batch per request: every answer completes (and closes) one batch.
            ids = []
            for i in range(members):
                request = {"jsonrpc": "2.0", "id": i, "method": "ping"}
                ids.append(only(server.receive(wire([request])), RequestReceived).request_id)
            for request_id in reversed(ids):
                server.send(ResultResponse(id=request_id, result={}))

        return run

    small = _best_of(3, lambda: answer_all(2_000))
    large = _best_of(3, lambda: answer_all(8_000))
    assert large < 8 * small


def test_answering_null_id_errors_of_open_batches_is_linear() -> None:
    def answer_all(batches: int) -> Callable[[], Any]:
        def run() -> None:
            _, server = connect("2025-03-26", server_limits=_ROOMY)
            owed = [
                only(server.receive(b"[7]"), ProtocolViolation).response for _ in range(batches)
            ]
            for response in reversed(owed):
                assert response is not None
                server.send(response)

        return run

    small = _best_of(3, lambda: answer_all(2_000))
    large = _best_of(3, lambda: answer_all(8_000))
    assert large < 8 * small


# -- the documented edges --------------------------------------------------------------------------


@pytest.mark.parametrize("revision", REVISIONS)
def test_documented_edges(revision: str) -> None:
    codec = mcpspec.codec(revision)
    ping = wire({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    if revision == "2026-07-28":
        ping = wire({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {}}})
    # A UTF-8 byte order mark before a message: -32700, named.
    with pytest.raises(InvalidMessage, match="byte order mark") as raised:
        codec.decode(b"\xef\xbb\xbf" + ping)
    assert raised.value.code == ErrorCode.PARSE_ERROR
    # An integer of more than 4,300 digits where a value is read: -32700 (Python will not
    # convert it); in an unknown member, which is skipped, it does no harm.
    huge = b"9" * 5000
    meta = ping.replace(b'"_meta":{}', b'"_meta":{"x":' + huge + b"}")
    if meta == ping:
        meta = ping[:-1] + b',"params":{"_meta":{"x":' + huge + b"}}}"
    with pytest.raises(InvalidMessage) as raised:
        codec.decode(meta)
    assert raised.value.code == ErrorCode.PARSE_ERROR
    assert codec.decode(ping[:-1] + b',"x":' + huge + b"}") == codec.decode(ping)
    # Duplicate keys: the last one wins.
    twice = ping[:-1] + b',"id":2}'
    decoded = codec.decode(twice)
    assert getattr(decoded, "id", None) == 2


def test_a_response_with_a_huge_id_is_refused_without_escaping() -> None:
    client, _server = connect("2025-11-25")
    data = b'{"jsonrpc":"2.0","id":' + b"7" * 5000 + b',"result":{}}'
    violation = only(client.receive(data), ProtocolViolation)
    # Unreadable, so answered as JSON-RPC says: a parse error with id null.
    assert violation.rule is Rule.PARSE_ERROR
    assert violation.response is not None and violation.response.id is None


def test_a_deep_result_is_refused_at_any_stack_depth() -> None:
    client, server = connect("2025-11-25")
    client.send(client.types.ListToolsRequest(id=9))
    nested = b"[" * 5000 + b"]" * 5000
    data = b'{"jsonrpc":"2.0","id":9,"result":{"tools":[],"_meta":{"x":' + nested + b"}}}"

    def at_depth(frames: int) -> list[Any]:
        if frames:
            return at_depth(frames - 1)
        return client.receive(data)

    events = at_depth(900)
    assert [type(e) for e in events] == [ProtocolViolation]
    assert server.revision == "2025-11-25"  # the server is untouched
    # It is request 9's answer all the same: the request ends with the violation.
    violation = only(events, ProtocolViolation)
    assert (violation.rule, violation.request_id, violation.method) == (
        Rule.PARSE_ERROR,
        9,
        "tools/list",
    )
    assert violation.response is None and client.outstanding == frozenset()
    client.send(client.types.ListToolsRequest(id=10))
    fine = wire({"jsonrpc": "2.0", "id": 10, "result": {"tools": []}})
    only(client.receive(fine), ResponseReceived)
