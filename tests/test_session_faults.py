"""Faults a hostile or merely unusual peer found in the sessions, each driven with bytes.

* A request is answered in the terms under which it was received: a ``ping`` read
  before negotiation, then a 2026-07-28 request that fixes the stateless model, is
  still answered (an empty result), never with an exception other than the documented
  local-misuse errors.
* The two directions' request ids are separate namespaces: a peer's request that
  reuses the id of a request of this side never ends this side's request.
* What a session keeps for its lifetime is a small multiple of the bytes it received.
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import msgspec
import pytest

from mcpspec import v2025_11_25
from mcpspec.runtime import (
    ClientSession,
    LocalProtocolError,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    ResultResponse,
    ServerSession,
    SessionReady,
)

from .session_kit import connect, only, raw_request, wire

_STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
}


# -- a request is answered in the terms under which it was received -------------------------


def _ping_then_stateless() -> ServerSession:
    """A server that read a ``ping`` before negotiation, then a 2026-07-28 request."""
    server = ServerSession(capabilities={"tools": {}})
    ping = only(server.receive(raw_request(1, "ping")), RequestReceived)
    assert ping.method == "ping"
    events = server.receive(raw_request(2, "tools/list", stateless_meta=_STATELESS_META))
    only(events, SessionReady)
    only(events, RequestReceived)
    assert server.model == "stateless" and server.revision == "2026-07-28"
    return server


def test_a_ping_read_before_the_stateless_model_is_answered_in_its_own_terms() -> None:
    server = _ping_then_stateless()
    # The request's own revision: its result type is the answer.
    received_in = v2025_11_25
    data = server.send(ResultResponse(id=1, result=received_in.EmptyResult()))
    assert msgspec.json.decode(data) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert 1 not in server.unanswered


def test_a_ping_read_before_the_stateless_model_takes_an_answer_typed_as_now() -> None:
    # What a connection builds with ``session.types`` (the revision in use now) is read
    # again in the request's terms: the same empty result.
    server = _ping_then_stateless()
    data = server.send(ResultResponse(id=1, result=server.types.EmptyResult()))
    assert msgspec.json.decode(data) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    # The stateless request is answered in its own terms as before.
    tools = server.types.ListToolsResult(tools=[], cache_scope="private", ttl_ms=0)
    answer = msgspec.json.decode(server.send(ResultResponse(id=2, result=tools)))
    assert answer["id"] == 2 and answer["result"]["tools"] == []
    assert answer["result"]["resultType"] == "complete"


def test_a_ping_read_before_the_stateless_model_refuses_a_wrong_answer_typed() -> None:
    server = _ping_then_stateless()
    wrong = v2025_11_25.ListToolsResult(tools=[])
    with pytest.raises(LocalProtocolError):
        server.send(ResultResponse(id=1, result=wrong))
    assert 1 in server.unanswered  # nothing recorded: a right answer may follow
    data = server.send(ResultResponse(id=1, result=v2025_11_25.EmptyResult()))
    assert msgspec.json.decode(data)["result"] == {}


# -- the two directions' request ids are separate namespaces ------------------------------------


def _invalid_requests(request_id: int, method: str) -> list[bytes]:
    """Requests of ``method`` with id ``request_id`` that break a rule in ways that
    name the method, or leave it unreadable."""
    return [
        raw_request(request_id, method, {"_meta": 5}),  # params the schema refuses
        wire({"jsonrpc": "1.0", "id": request_id, "method": method}),
        wire({"jsonrpc": "2.0", "id": request_id, "method": 5}),
        raw_request(request_id, "no/such/method"),
    ]


@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
@pytest.mark.parametrize("index", range(4))
@pytest.mark.parametrize("reused_by_peer", [False, True])
def test_a_clients_request_survives_a_server_request_that_reuses_its_id(
    revision: str, index: int, reused_by_peer: bool
) -> None:
    client, server = connect(revision)
    server.receive(client.send(client.types.PingRequest(id=1)))
    if reused_by_peer:  # the server's own request 1, unanswered: a second one is a duplicate
        only(client.receive(server.send(server.types.PingRequest(id=1))), RequestReceived)
    violation = only(client.receive(_invalid_requests(1, "ping")[index]), ProtocolViolation)
    assert violation.ends_request is False
    assert client.outstanding == {1}
    answer = server.send(ResultResponse(id=1, result=server.types.EmptyResult()))
    received = only(client.receive(answer), ResponseReceived)
    assert received.request_id == 1 and received.method == "ping"
    assert client.outstanding == frozenset()


@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
@pytest.mark.parametrize("index", range(4))
@pytest.mark.parametrize("reused_by_peer", [False, True])
def test_a_servers_request_survives_a_client_request_that_reuses_its_id(
    revision: str, index: int, reused_by_peer: bool
) -> None:
    client, server = connect(revision)
    client.receive(server.send(server.types.PingRequest(id=1)))
    if reused_by_peer:
        only(server.receive(client.send(client.types.PingRequest(id=1))), RequestReceived)
    violation = only(server.receive(_invalid_requests(1, "ping")[index]), ProtocolViolation)
    assert violation.ends_request is False
    assert server.outstanding == {1}
    answer = client.send(ResultResponse(id=1, result=client.types.EmptyResult()))
    received = only(server.receive(answer), ResponseReceived)
    assert received.request_id == 1 and received.method == "ping"


def test_a_broken_answer_ends_the_request_it_answers() -> None:
    client, server = connect("2025-11-25")
    server.receive(client.send(client.types.ListToolsRequest(id=1)))
    violation = only(
        client.receive(wire({"jsonrpc": "2.0", "id": 1, "result": {"tools": 5}})),
        ProtocolViolation,
    )
    assert violation.ends_request is True and violation.request_id == 1
    assert client.outstanding == frozenset()


# -- what a session keeps is a small multiple of what it received ------------------------------

#: About 4 MiB of ``{},``: decoded, each is a dict of some 64 bytes, written in three.
_HOARD: list[dict[str, Any]] = [{}] * (4 * 1024 * 1024 // 3 - 200)


def _initialize(experimental: Any, client_info: Any) -> bytes:
    return wire(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"experimental": experimental, "sampling": {}},
                "clientInfo": client_info,
            },
        }
    )


def _retained_by_server(message: bytes) -> tuple[ServerSession, int]:
    """A server after a whole handshake opened by ``message``, and the bytes it holds."""
    gc.collect()
    tracemalloc.start()
    try:
        server = ServerSession(capabilities={"tools": {}})
        events: list[Any] = server.receive(message)
        only(events, RequestReceived)
        server.send(ResultResponse(id=1, result=server.initialize_result()))
        events = server.receive(wire({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        only(events, SessionReady)
        del events
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return server, held


@pytest.mark.parametrize("where", ["capabilities", "client_info"])
def test_a_server_keeps_a_small_multiple_of_a_large_initialize(where: str) -> None:
    small = _initialize({}, {"name": "c", "version": "1"})
    icons = [{"src": "https://example.com/i.png"}] * (4 * 1024 * 1024 // 40)
    if where == "capabilities":
        large = _initialize({"x": {"a": _HOARD}}, {"name": "c", "version": "1"})
    else:
        large = _initialize({}, {"name": "c", "version": "1", "icons": icons})
    assert len(large) < server_limit()
    _, baseline = _retained_by_server(small)
    server, held = _retained_by_server(large)
    assert held - baseline < 4 * len(large), (held - baseline) / len(large)
    # What the session and its checks read of it still reads.
    capabilities = server.peer_capabilities
    assert capabilities is not None and "sampling" in capabilities
    if where == "capabilities":
        assert len(capabilities["experimental"]["x"]["a"]) == len(_HOARD)
    else:
        assert len(server.peer_info.icons) == len(icons)
    server.send(server.types.CreateMessageRequest(id=7, params=_sampling_params(server)))
    with pytest.raises(LocalProtocolError):
        server.send(server.types.ListRootsRequest(id=8))  # roots: not declared


def _sampling_params(session: Any) -> Any:
    t = session.types
    return t.CreateMessageRequestParams(
        messages=[t.SamplingMessage(role="user", content=t.TextContent(text="hi"))],
        max_tokens=5,
    )


def server_limit() -> int:
    limit: int = ServerSession().limits.max_message_bytes
    return limit


def test_a_client_keeps_a_small_multiple_of_a_large_initialize_result() -> None:
    def retained(experimental: Any) -> tuple[ClientSession, int]:
        gc.collect()
        tracemalloc.start()
        try:
            client = ClientSession(mode="2025-11-25")
            client.start()
            answer = wire(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "result": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"experimental": experimental, "tools": {}},
                        "serverInfo": {"name": "s", "version": "1"},
                    },
                }
            )
            events: list[Any] = client.receive(answer)
            only(events, SessionReady)
            del events
            gc.collect()
            held = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        return client, held - len(answer)

    _, baseline = retained({})
    client, held = retained({"x": {"a": _HOARD}})
    size = 3 * len(_HOARD)
    assert held - baseline < 4 * size, (held - baseline) / size
    assert client.peer_capabilities is not None
    assert len(client.peer_capabilities["experimental"]["x"]["a"]) == len(_HOARD)
    client.send(client.types.ListToolsRequest(id=client.next_id()))
    with pytest.raises(LocalProtocolError):
        client.send(client.types.ListPromptsRequest(id=client.next_id()))


def test_a_server_keeps_a_small_multiple_of_an_open_subscription() -> None:
    """A 2026-07-28 ``subscriptions/listen`` stays open as long as the client likes:
    what the session keeps of it is not what its ``_meta`` declared."""

    def listen(experimental: Any) -> bytes:
        meta = dict(_STATELESS_META)
        meta["io.modelcontextprotocol/clientCapabilities"] = {"experimental": experimental}
        params = {"_meta": meta, "notifications": {}}
        return raw_request(1, "subscriptions/listen", params)

    def retained(message: bytes) -> tuple[ServerSession, int]:
        gc.collect()
        tracemalloc.start()
        try:
            server = ServerSession(capabilities={"resources": {"subscribe": True}})
            events: list[Any] = server.receive(message)
            only(events, RequestReceived)
            del events
            gc.collect()
            held = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        return server, held

    large = listen({"x": {"a": _HOARD}})
    _, baseline = retained(listen({}))
    server, held = retained(large)
    assert held - baseline < 4 * len(large), (held - baseline) / len(large)
    assert server.unanswered == {1}
