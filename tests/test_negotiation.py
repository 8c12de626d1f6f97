"""Version negotiation across the two protocol models: the pure rules, a server that
serves both models, and the client modes (pinned, legacy, auto)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcpspec
from mcpspec.runtime import (
    ClientSession,
    ErrorReceived,
    NegotiationError,
    NegotiationFailed,
    Outgoing,
    Phase,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    ResultResponse,
    RevisionError,
    Rule,
    ServerSession,
    SessionReady,
)
from mcpspec.runtime.session.version_negotiation import (
    HANDSHAKE_REVISIONS,
    STATELESS_REVISIONS,
    accepted_revisions,
    client_plan,
    negotiate_handshake,
    newest_mutual,
)

from .session_kit import HANDSHAKE, connect, only, tools_call, wire

ALL = mcpspec.REVISIONS


def test_revision_families() -> None:
    assert HANDSHAKE_REVISIONS == ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
    assert STATELESS_REVISIONS == ("2026-07-28",)


def test_accepted_revisions() -> None:
    assert accepted_revisions(None) == ALL
    assert accepted_revisions(["2025-06-18", "2024-11-05"]) == ("2024-11-05", "2025-06-18")
    assert accepted_revisions("2025-06-18") == ("2025-06-18",)
    with pytest.raises(ValueError, match="unsupported MCP revision"):
        accepted_revisions(["2030-01-01"])
    with pytest.raises(ValueError, match="at least one"):
        accepted_revisions([])


@pytest.mark.parametrize(
    ("requested", "accepted", "answer"),
    [
        ("2025-06-18", ALL, "2025-06-18"),
        ("2099-01-01", ALL, "2025-11-25"),
        ("2026-07-28", ALL, "2025-11-25"),  # never a stateless answer to initialize
        ("2025-11-25", ("2024-11-05", "2025-03-26"), "2025-03-26"),
        ("2024-11-05", ("2026-07-28",), None),
    ],
)
def test_negotiate_handshake(requested: str, accepted: tuple[str, ...], answer: str | None) -> None:
    assert negotiate_handshake(requested, accepted) == answer


def test_newest_mutual() -> None:
    assert newest_mutual(["2025-06-18", "2026-07-28", 5, None], ALL) == "2026-07-28"
    assert newest_mutual(["2030-01-01"], ALL) is None
    assert newest_mutual(["2025-03-26", "2025-06-18"], ("2024-11-05", "2025-03-26")) == "2025-03-26"


@pytest.mark.parametrize(
    ("mode", "accepted", "plan"),
    [
        ("auto", ALL, ("probe", "2026-07-28")),
        ("auto", HANDSHAKE, ("initialize", "2025-11-25")),
        ("legacy", ALL, ("initialize", "2025-11-25")),
        ("2025-03-26", ALL, ("initialize", "2025-03-26")),
        ("2026-07-28", ALL, ("stateless", "2026-07-28")),
    ],
)
def test_client_plan(mode: str, accepted: tuple[str, ...], plan: tuple[str, str]) -> None:
    assert client_plan(mode, accepted) == plan


@pytest.mark.parametrize(
    ("mode", "accepted", "message"),
    [
        ("legacy", ("2026-07-28",), "needs a handshake revision"),
        ("2025-03-26", ("2025-06-18",), "not among the accepted"),
        ("newest", ALL, "client mode is"),
    ],
)
def test_client_plan_refuses(mode: str, accepted: tuple[str, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        client_plan(mode, accepted)


# -- a server serving both models -----------------------------------------------------------------


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_dual_server_first_initialize_means_handshake(revision: str) -> None:
    server = ServerSession()
    client = ClientSession(mode=revision)
    only(server.receive(client.start()), RequestReceived)
    assert server.phase is Phase.INITIALIZING and revision == server.types.REVISION
    events = client.receive(server.answer(1, server.initialize_result()))
    assert server.phase is Phase.INITIALIZED and server.revision is None
    ready = only(server.receive(only(events, Outgoing).data), SessionReady)
    assert (ready.model, server.model, server.revision) == ("handshake", "handshake", revision)
    # Bound to the handshake: a stateless request is just an unknown method now.
    discover = wire(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "server/discover",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
        }
    )
    assert only(server.receive(discover), ProtocolViolation).rule is Rule.METHOD_NOT_FOUND


def test_dual_server_meta_version_means_stateless() -> None:
    server = ServerSession(capabilities={"tools": {}})
    client = ClientSession(mode="2026-07-28")
    events = server.receive(client.send(tools_call(client, 1)))
    assert only(events, SessionReady).model == "stateless"
    assert server.model == "stateless" and server.revision == "2026-07-28"
    # Bound to the stateless model: initialize is no method of 2026-07-28.
    init = wire(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
        }
    )
    assert only(server.receive(init), ProtocolViolation).rule is Rule.METHOD_NOT_FOUND


def test_dual_server_invalid_first_request_binds_nothing() -> None:
    server = ServerSession()
    bad = wire(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/list",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}},
        }
    )
    violation = only(server.receive(bad), ProtocolViolation)
    assert violation.rule is Rule.UNSUPPORTED_PROTOCOL_VERSION and violation.error.code == -32022
    assert violation.error.data == {"supported": list(reversed(ALL)), "requested": "2099-01-01"}
    assert server.phase is Phase.IDLE
    assert violation.response is not None
    server.send(violation.response)
    client = ClientSession(mode="2025-06-18")
    only(server.receive(client.start()), RequestReceived)
    assert server.types.REVISION == "2025-06-18"


# -- client modes ---------------------------------------------------------------------------------


def test_auto_client_against_a_dual_server_goes_stateless() -> None:
    server = ServerSession(capabilities={"tools": {}})
    client = ClientSession()
    probe = client.start()
    assert json.loads(probe)["method"] == "server/discover"
    assert client.phase is Phase.PROBING
    with pytest.raises(Exception, match="phase probing"):
        client.send(tools_call(client, 50))
    request = only(server.receive(probe), RequestReceived)
    events = client.receive(server.answer(request.request_id, server.discover_result()))
    assert [type(e) for e in events] == [ResponseReceived, SessionReady]
    assert client.model == "stateless" and client.revision == "2026-07-28"
    assert client.peer_capabilities == {"tools": {}} and client.peer_info.name == "mcpspec"
    only(server.receive(client.send(tools_call(client, client.next_id()))), RequestReceived)


@pytest.mark.parametrize(
    "server_accepts", [("2025-06-18",), HANDSHAKE, ("2024-11-05", "2025-03-26")]
)
def test_auto_client_falls_back_to_initialize_on_method_not_found(server_accepts: Any) -> None:
    server = ServerSession(server_accepts, capabilities={"tools": {}})
    client = ClientSession()
    refused = only(server.receive(client.start()), ProtocolViolation)
    assert refused.rule is Rule.METHOD_NOT_FOUND
    events = client.receive(server.send(refused.response))
    assert only(events, ErrorReceived).error.code == -32601
    fallback = only(events, Outgoing)
    assert json.loads(fallback.data)["method"] == "initialize"
    assert client.phase is Phase.INITIALIZING
    request = only(server.receive(fallback.data), RequestReceived)
    ready = only(
        client.receive(server.answer(request.request_id, server.initialize_result())), SessionReady
    )
    assert ready.model == "handshake" and ready.revision == server_accepts[-1]
    assert server_accepts[-1] == client.types.REVISION


def test_auto_client_uses_initialize_when_discover_lists_only_handshake_versions() -> None:
    client = ClientSession()
    client.start()
    result = {
        "resultType": "complete",
        "supportedVersions": ["2025-06-18", "2025-03-26"],
        "capabilities": {},
        "ttlMs": 0,
        "cacheScope": "public",
    }
    events = client.receive(wire({"jsonrpc": "2.0", "id": 1, "result": result}))
    initialize = json.loads(only(events, Outgoing).data)
    assert (
        initialize["method"] == "initialize"
        and initialize["params"]["protocolVersion"] == "2025-06-18"
    )
    assert client.model is None


def _unsupported(request_id: int, supported: list[str]) -> bytes:
    return wire(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {"supported": supported, "requested": "2026-07-28"},
            },
        }
    )


def test_auto_client_retries_once_on_unsupported_version() -> None:
    client = ClientSession()
    client.start()
    retry = only(client.receive(_unsupported(1, ["2026-07-28", "2030-01-01"])), Outgoing)
    assert json.loads(retry.data)["method"] == "server/discover"
    events = client.receive(_unsupported(json.loads(retry.data)["id"], ["2026-07-28"]))
    failed = only(events, NegotiationFailed)
    assert failed.error.code == -32022 and client.phase is Phase.CLOSED


def test_auto_client_retries_with_a_handshake_revision() -> None:
    client = ClientSession()
    client.start()
    retry = only(client.receive(_unsupported(1, ["2025-03-26", "2030-01-01"])), Outgoing)
    body = json.loads(retry.data)
    assert body["method"] == "initialize" and body["params"]["protocolVersion"] == "2025-03-26"
    server = ServerSession(["2025-03-26"])
    request = only(server.receive(retry.data), RequestReceived)
    ready = only(
        client.receive(server.answer(request.request_id, server.initialize_result())), SessionReady
    )
    assert ready.revision == "2025-03-26"


def test_auto_client_with_nothing_in_common_fails() -> None:
    client = ClientSession(["2026-07-28", "2025-11-25"])
    client.start()
    failed = only(client.receive(_unsupported(1, ["2024-11-05"])), NegotiationFailed)
    assert failed.answered == ("2024-11-05",) and failed.supported == ("2026-07-28", "2025-11-25")


def test_legacy_client_never_probes() -> None:
    client = ClientSession(mode="legacy")
    first = json.loads(client.start())
    assert first["method"] == "initialize" and first["params"]["protocolVersion"] == "2025-11-25"
    stateless_only = ServerSession(["2026-07-28"])
    client = ClientSession(mode="legacy")
    refused = only(stateless_only.receive(client.start()), ProtocolViolation)
    assert refused.rule is Rule.METHOD_NOT_FOUND
    events = client.receive(stateless_only.send(refused.response))
    failed = only(events, NegotiationFailed)
    assert failed.rule is Rule.METHOD_NOT_FOUND and client.phase is Phase.CLOSED


def test_pinned_stateless_client_needs_no_discovery() -> None:
    server = ServerSession(["2026-07-28"], capabilities={"tools": {}})
    client = ClientSession(mode="2026-07-28")
    assert client.phase is Phase.READY and client.accepted == ("2026-07-28",)
    only(server.receive(client.send(tools_call(client, 1))), RequestReceived)
    assert client.peer_capabilities is None  # unknown until a discover result arrives


def test_pinned_handshake_client_accepts_only_its_revision() -> None:
    client = ClientSession(mode="2025-03-26")
    assert client.accepted == ("2025-03-26",)
    assert json.loads(client.start())["params"]["protocolVersion"] == "2025-03-26"


@pytest.mark.parametrize(
    ("client_accepts", "server_accepts", "expected"),
    [
        (("2025-03-26",), ("2025-03-26", "2025-06-18"), "2025-03-26"),
        (("2024-11-05", "2025-06-18"), ("2025-06-18", "2026-07-28"), "2025-06-18"),
        (("2025-06-18", "2026-07-28"), ("2025-06-18", "2026-07-28"), "2026-07-28"),
        (("2025-11-25",), ("2024-11-05",), None),
    ],
)
def test_both_sides_restrict_revisions(
    client_accepts: Any, server_accepts: Any, expected: str | None
) -> None:
    client = ClientSession(client_accepts)
    server = ServerSession(server_accepts)
    outgoing = client.start()
    for _ in range(3):  # probe, fallback, initialize at most
        events = server.receive(outgoing)
        reply = events[-1]
        if isinstance(reply, ProtocolViolation):
            assert reply.response is not None
            answer = server.send(reply.response)
        elif reply.method == "initialize":
            answer = server.answer(reply.request_id, server.initialize_result())
        else:
            answer = server.answer(reply.request_id, server.discover_result())
        client_events = client.receive(answer)
        if any(isinstance(e, (SessionReady, NegotiationFailed)) for e in client_events):
            break
        outgoing = only(client_events, Outgoing).data
    if expected is None:
        only(client_events, NegotiationFailed)
    else:
        assert only(client_events, SessionReady).revision == expected == client.revision


def test_server_result_for_discover_needs_stateless() -> None:
    server = ServerSession(HANDSHAKE)
    with pytest.raises(Exception, match="stateless"):
        server.discover_result()
    assert ResultResponse(id=1, result={}).id == 1


def test_auto_client_fails_when_discover_lists_nothing_it_accepts() -> None:
    client = ClientSession(["2026-07-28", "2025-11-25"])
    client.start()
    result = {
        "resultType": "complete",
        "supportedVersions": ["2024-11-05"],
        "capabilities": {},
        "ttlMs": 0,
        "cacheScope": "public",
    }
    failed = only(
        client.receive(wire({"jsonrpc": "2.0", "id": 1, "result": result})), NegotiationFailed
    )
    assert failed.answered == ("2024-11-05",) and client.phase is Phase.CLOSED


def test_auto_client_without_handshake_revisions_cannot_fall_back() -> None:
    client = ClientSession(["2026-07-28"])
    client.start()
    refusal = wire(
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "Method not found"}}
    )
    failed = only(client.receive(refusal), NegotiationFailed)
    assert failed.rule is Rule.METHOD_NOT_FOUND and client.phase is Phase.CLOSED


def _error(code: int, message: str, request_id: Any = 1) -> bytes:
    """An error response; ``request_id`` ``...`` leaves the id out."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "error": {"code": code, "message": message}}
    if request_id is not ...:
        body["id"] = request_id
    return wire(body)


@pytest.mark.parametrize(
    "answer",
    [
        _error(-32000, "Server not initialized", None),  # the reference TypeScript server
        _error(-32600, "Missing session ID"),
        _error(-32600, "Invalid request", ...),
        _error(-32603, "boom"),
        _error(-32700, "Parse error", None),
        _error(-32602, "Invalid params"),
    ],
)
def test_auto_client_falls_back_on_any_error_an_older_server_answers(answer: bytes) -> None:
    client = ClientSession()
    client.start()
    events = client.receive(answer)
    refused = only(events, ErrorReceived)
    assert (refused.request_id, refused.method) == (1, "server/discover")
    initialize = json.loads(only(events, Outgoing).data)
    assert initialize["method"] == "initialize"
    assert initialize["params"]["protocolVersion"] == "2025-11-25"
    assert client.phase is Phase.INITIALIZING and client.outstanding == frozenset({2})
    server = ServerSession()
    request = only(server.receive(only(events, Outgoing).data), RequestReceived)
    ready = only(
        client.receive(server.answer(request.request_id, server.initialize_result())), SessionReady
    )
    assert ready.model == "handshake" and client.revision == "2025-11-25"


def test_auto_client_falls_back_after_a_retried_probe_is_refused_without_id() -> None:
    client = ClientSession()
    client.start()
    retry = only(client.receive(_unsupported(1, ["2026-07-28"])), Outgoing)
    assert json.loads(retry.data)["method"] == "server/discover"
    events = client.receive(_error(-32000, "Server not initialized", None))
    assert only(events, ErrorReceived).request_id == json.loads(retry.data)["id"]
    assert json.loads(only(events, Outgoing).data)["method"] == "initialize"
    assert client.phase is Phase.INITIALIZING


@pytest.mark.parametrize(
    "answer", [_error(-32000, "Server not initialized", None), _error(-32603, "boom")]
)
def test_auto_client_without_handshake_revisions_fails_on_a_legacy_refusal(answer: bytes) -> None:
    client = ClientSession(["2026-07-28"])
    client.start()
    failed = only(client.receive(answer), NegotiationFailed)
    assert failed.rule is Rule.METHOD_NOT_FOUND and failed.error.code in (-32000, -32603)
    assert client.phase is Phase.CLOSED and client.outstanding == frozenset()


@pytest.mark.parametrize(("code", "message"), [(-32020, "Header mismatch"), (-32021, "Missing")])
def test_auto_client_fails_when_a_modern_server_refuses_the_probe(code: int, message: str) -> None:
    client = ClientSession()
    client.start()
    events = client.receive(_error(code, message))
    failed = only(events, NegotiationFailed)
    assert failed.error.code == code and failed.offered == "2026-07-28"
    assert not any(isinstance(e, Outgoing) for e in events)
    assert client.phase is Phase.CLOSED


def test_auto_client_falls_back_when_the_probe_gets_no_discover_result() -> None:
    # An older server that answers every method with an empty result.
    client = ClientSession()
    client.start()
    events = client.receive(wire({"jsonrpc": "2.0", "id": 1, "result": {}}))
    assert only(events, ProtocolViolation).rule is Rule.INVALID_RESULT
    opening = only(events, Outgoing)
    assert type(opening.message).method == "initialize"
    assert not any(isinstance(e, NegotiationFailed) for e in events)


@pytest.mark.parametrize(
    "result",
    [
        {"supportedVersions": "2026-07-28", "capabilities": {}},
        {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": []},
    ],
)
def test_auto_client_fails_on_an_invalid_discover_result(result: dict[str, Any]) -> None:
    client = ClientSession()
    client.start()
    events = client.receive(wire({"jsonrpc": "2.0", "id": 1, "result": result}))
    violation = only(events, ProtocolViolation)
    failed = only(events, NegotiationFailed)
    assert violation.rule is Rule.INVALID_RESULT and failed.rule is Rule.INVALID_RESULT
    assert failed.error == violation.error and violation.reason in failed.reason
    assert client.phase is Phase.CLOSED


#: Answers to request 1 whose envelope breaks JSON-RPC.
_UNREADABLE = [
    {"jsonrpc": None, "id": 1, "result": {}},
    {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": -32601, "message": "no"}},
    {"jsonrpc": "2.0", "id": 1, "error": {"code": "unknown", "message": "no"}},
    {"jsonrpc": "2.0", "id": 1},
]


@pytest.mark.parametrize("answer", _UNREADABLE)
def test_auto_client_falls_back_when_the_probe_is_answered_unreadably(
    answer: dict[str, Any],
) -> None:
    # As with an error without id: a server that cannot answer server/discover in
    # valid JSON-RPC is not a 2026-07-28 server; initialize may still work.
    client = ClientSession()
    client.start()
    events = client.receive(wire(answer))
    violation = only(events, ProtocolViolation)
    assert violation.rule is Rule.INVALID_REQUEST
    assert (violation.request_id, violation.method) == (1, "server/discover")
    assert type(only(events, Outgoing).message).method == "initialize"
    assert client.phase is Phase.INITIALIZING and client.outstanding == frozenset({2})


@pytest.mark.parametrize("answer", _UNREADABLE)
@pytest.mark.parametrize(
    ("revisions", "mode"),
    [(None, "legacy"), (None, "2025-06-18"), (None, "2026-07-28"), (["2026-07-28"], "auto")],
)
def test_an_unreadable_answer_to_the_opening_request_fails_negotiation(
    answer: dict[str, Any], revisions: Any, mode: str
) -> None:
    client = ClientSession(revisions, mode=mode)
    client.start()
    events = client.receive(wire(answer))
    violation = only(events, ProtocolViolation)
    failed = only(events, NegotiationFailed)
    assert violation.request_id == 1 and failed.rule is violation.rule is Rule.INVALID_REQUEST
    assert failed.error == violation.error and violation.reason in failed.reason
    assert client.phase is Phase.CLOSED and client.outstanding == frozenset()


def test_an_unreadable_answer_to_the_fallback_initialize_fails_negotiation() -> None:
    client = ClientSession()
    client.start()
    client.receive(_error(-32601, "Method not found"))
    events = client.receive(wire({"jsonrpc": None, "id": 2, "result": {}}))
    assert only(events, NegotiationFailed).rule is Rule.INVALID_REQUEST
    assert client.phase is Phase.CLOSED and client.outstanding == frozenset()


def test_a_stray_answer_while_probing_leaves_the_probe_waiting() -> None:
    client = ClientSession()
    client.start()
    stray = only(client.receive(wire({"jsonrpc": "2.0", "id": 7, "result": {}})), ProtocolViolation)
    assert stray.rule is Rule.UNKNOWN_RESPONSE_ID
    assert client.phase is Phase.PROBING and client.outstanding == frozenset({1})


def test_an_error_without_id_after_negotiation_names_no_request() -> None:
    client, _ = connect("2025-11-25")
    client.send(tools_call(client, 5))
    refused = only(client.receive(_error(-32700, "Parse error", None)), ErrorReceived)
    assert refused.request_id is None and refused.method is None
    assert client.outstanding == frozenset({5}) and client.phase is Phase.READY


@settings(max_examples=60, deadline=None)
@given(
    code=st.integers(min_value=-33000, max_value=1000),
    request_id=st.sampled_from([1, None, ...]),
    handshake=st.booleans(),
)
def test_every_probe_error_moves_negotiation_on(
    code: int, request_id: Any, handshake: bool
) -> None:
    client = ClientSession(None if handshake else ["2026-07-28"])
    client.start()
    data = {"supported": ["2026-07-28"]} if code == -32022 else None
    body: dict[str, Any] = {"jsonrpc": "2.0", "error": {"code": code, "message": "no"}}
    if data is not None:
        body["error"]["data"] = data
    if request_id is not ...:
        body["id"] = request_id
    events = client.receive(wire(body))
    assert only(events, ErrorReceived).method == "server/discover"
    if any(isinstance(e, NegotiationFailed) for e in events):
        assert client.phase is Phase.CLOSED and client.outstanding == frozenset()
    else:
        sent = json.loads(only(events, Outgoing).data)
        assert client.outstanding == frozenset({sent["id"]})
        assert client.phase in (Phase.PROBING, Phase.INITIALIZING)


def test_invalid_initialize_result_fails_negotiation() -> None:
    client = ClientSession(mode="2025-06-18")
    client.start()
    bad = wire({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-06-18"}})
    events = client.receive(bad)
    assert only(events, ProtocolViolation).rule is Rule.INVALID_RESULT
    assert only(events, NegotiationFailed).rule is Rule.INVALID_RESULT
    assert client.phase is Phase.CLOSED


def test_client_initialize_must_offer_an_accepted_revision() -> None:
    client = ClientSession(["2025-06-18", "2025-11-25"], mode="legacy")

    def init(module_revision: str, offered: str) -> Any:
        module = __import__(mcpspec.module_name(module_revision), fromlist=["x"])
        return module.InitializeRequest(
            id=1,
            params=module.InitializeRequestParams(
                protocol_version=offered,
                capabilities=module.ClientCapabilities(),
                client_info=module.Implementation(name="c", version="1"),
            ),
        )

    with pytest.raises(NegotiationError, match="not an accepted handshake revision"):
        client.send(init("2025-11-25", "2024-11-05"))
    with pytest.raises(RevisionError, match="is a value of that revision's types"):
        client.send(init("2025-11-25", "2025-06-18"))
    with pytest.raises(RevisionError, match="not a type of revision"):
        client.send(init("2024-11-05", "2024-11-05"))
    assert client.outstanding == frozenset()
    assert (
        json.loads(client.send(init("2025-06-18", "2025-06-18")))["params"]["protocolVersion"]
        == "2025-06-18"
    )


def test_close_ends_the_session() -> None:
    server = ServerSession()
    client = ClientSession(mode="2025-11-25")
    server.receive(client.start())
    client.close()
    assert client.phase is Phase.CLOSED
    with pytest.raises(Exception, match="closed"):
        client.start()
    closed = only(
        client.receive(wire({"jsonrpc": "2.0", "id": 1, "result": {}})), ProtocolViolation
    )
    assert closed.rule is Rule.SESSION_CLOSED and closed.response is None


@pytest.mark.parametrize(
    "answer",
    [
        _error(-32601, "Method not found"),
        _error(-32000, "Server not initialized", None),
        _error(-32022, "Unsupported protocol version"),
    ],
)
def test_a_client_pinned_to_2026_fails_when_its_opening_discover_is_refused(
    answer: bytes,
) -> None:
    client = ClientSession(mode="2026-07-28")
    client.start()
    events = client.receive(answer)
    assert only(events, ErrorReceived).method == "server/discover"
    failed = only(events, NegotiationFailed)
    assert failed.error.code == json.loads(answer)["error"]["code"]
    assert client.phase is Phase.CLOSED and client.outstanding == frozenset()


def test_a_client_pinned_to_2026_fails_on_an_invalid_opening_discover_result() -> None:
    client = ClientSession(mode="2026-07-28")
    client.start()
    events = client.receive(wire({"jsonrpc": "2.0", "id": 1, "result": {"supportedVersions": 1}}))
    assert only(events, NegotiationFailed).rule is Rule.INVALID_RESULT
    assert client.phase is Phase.CLOSED


def test_a_pinned_client_keeps_its_session_when_a_later_discover_fails() -> None:
    client, _ = connect("2026-07-28")
    discover = client.types.DiscoverRequest(id=9, params=client.types.RequestParams())
    client.send(discover)
    events = client.receive(_error(-32603, "busy", 9))
    assert only(events, ErrorReceived).request_id == 9
    assert not any(isinstance(e, NegotiationFailed) for e in events)
    assert client.phase is Phase.READY
    # an error without id names no request once negotiation is over
    client.send(msgspec.structs.replace(discover, id=10))
    refused = only(client.receive(_error(-32700, "Parse error", None)), ErrorReceived)
    assert refused.request_id is None and client.outstanding == frozenset({10})


def test_a_client_pinned_to_2026_retries_once_with_a_version_a_32022_lists() -> None:
    client = ClientSession(mode="2026-07-28")
    client.start()
    refusal = {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {
            "code": -32022,
            "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"},
        },
    }
    events = client.receive(wire(refusal))
    retry = only(events, Outgoing)
    assert type(retry.message).method == "server/discover" and retry.message.id == 2
    assert not any(isinstance(e, NegotiationFailed) for e in events)
    server = ServerSession(["2026-07-28"])
    answered = only(server.receive(retry.data), RequestReceived)
    result = server.send(ResultResponse(id=answered.request_id, result=server.discover_result()))
    assert only(client.receive(result), SessionReady).revision == "2026-07-28"


def test_a_pinned_client_retries_a_32022_only_once() -> None:
    client = ClientSession(mode="2026-07-28")
    client.start()
    data = {"supported": ["2026-07-28"]}
    first = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "no", "data": data}}
    only(client.receive(wire(first)), Outgoing)
    again = {**first, "id": 2}
    assert only(client.receive(wire(again)), NegotiationFailed).error.code == -32022
