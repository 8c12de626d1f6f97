"""Capabilities, in every revision: a side never sends a request the peer did not
declare the capability for (local misuse raises), and a request for a capability the
receiver did not declare gets -32601."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from mcpspec.runtime import (
    CapabilityError,
    ClientSession,
    Outgoing,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    ResultResponse,
    Rule,
    ServerSession,
)

from .session_kit import HANDSHAKE, REVISIONS, connect, meta_for, only, wire

#: Client requests, their minimal params, and the server capability each needs (written
#: out here from the specification, independently of the runtime's table).
CLIENT_REQUESTS: dict[str, tuple[dict[str, Any], str]] = {
    "tools/list": ({}, "tools"),
    "tools/call": ({"name": "t"}, "tools"),
    "prompts/list": ({}, "prompts"),
    "prompts/get": ({"name": "p"}, "prompts"),
    "resources/list": ({}, "resources"),
    "resources/read": ({"uri": "x://a"}, "resources"),
    "resources/templates/list": ({}, "resources"),
    "resources/subscribe": ({"uri": "x://a"}, "resources.subscribe"),
    "resources/unsubscribe": ({"uri": "x://a"}, "resources.subscribe"),
    "logging/setLevel": ({"level": "info"}, "logging"),
    "completion/complete": (
        {"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}},
        "completions",
    ),
    "tasks/list": ({}, "tasks.list"),
    "tasks/cancel": ({"taskId": "t"}, "tasks.cancel"),
    "tasks/get": ({"taskId": "t"}, "tasks"),
    "tasks/result": ({"taskId": "t"}, "tasks"),
}
#: The capability names each revision's ServerCapabilities defines.
SERVER_CAPABILITIES: dict[str, set[str]] = {
    "2024-11-05": {"tools", "prompts", "resources", "logging"},
    "2025-03-26": {"tools", "prompts", "resources", "logging", "completions"},
    "2025-06-18": {"tools", "prompts", "resources", "logging", "completions"},
    "2025-11-25": {"tools", "prompts", "resources", "logging", "completions", "tasks"},
    "2026-07-28": {"tools", "prompts", "resources", "logging", "completions"},
}


def _caps(path: str) -> dict[str, Any]:
    """The smallest capability object declaring ``path``."""
    head, _, rest = path.partition(".")
    if not rest:
        return {head: {}}
    if path == "resources.subscribe":
        return {"resources": {"subscribe": True}}
    return {head: {rest: {}}}


def _cases() -> list[tuple[str, str]]:
    out = []
    for revision in REVISIONS:
        codec = ClientSession(mode=revision).codec
        for method in CLIENT_REQUESTS:
            if method in codec.client_requests:
                out.append((revision, method))
    return out


def _raw(client: ClientSession, request_id: int, method: str) -> bytes:
    params = dict(CLIENT_REQUESTS[method][0])
    if client.codec.revision == "2026-07-28":
        params["_meta"] = meta_for(client)
    return wire({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


@pytest.mark.parametrize(("revision", "method"), _cases())
def test_client_requests_need_the_server_capability(revision: str, method: str) -> None:
    needed = CLIENT_REQUESTS[method][1]
    gated = needed.split(".")[0] in SERVER_CAPABILITIES[revision]
    client, server = connect(revision, server_caps={})
    raw = _raw(client, 50, method)
    typed = client.codec.decode(raw)
    if not gated:
        # The revision has no such capability: the request needs none.
        client.send(typed)
        only(server.receive(raw), RequestReceived)
        return
    with pytest.raises(CapabilityError) as info:
        client.send(typed)
    assert info.value.rule is Rule.CAPABILITY_NOT_DECLARED
    assert client.outstanding == frozenset()
    violation = only(server.receive(raw), ProtocolViolation)
    assert violation.rule is Rule.CAPABILITY_NOT_DECLARED and violation.error.code == -32601
    assert violation.response is not None and violation.response.id == 50
    # Declared: the same request flows.
    client, server = connect(revision, server_caps=_caps(needed))
    client.send(typed)
    only(server.receive(raw), RequestReceived)


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_subscribe_needs_the_subscribe_flag(revision: str) -> None:
    client, server = connect(revision, server_caps={"resources": {"subscribe": False}})
    raw = _raw(client, 51, "resources/subscribe")
    with pytest.raises(CapabilityError):
        client.send(client.codec.decode(raw))
    assert only(server.receive(raw), ProtocolViolation).rule is Rule.CAPABILITY_NOT_DECLARED


#: Server requests, minimal params, the client capability each needs, first revision.
SERVER_REQUESTS: dict[str, tuple[dict[str, Any] | None, str, str]] = {
    "roots/list": (None, "roots", "2024-11-05"),
    "sampling/createMessage": ({"messages": [], "maxTokens": 5}, "sampling", "2024-11-05"),
    "elicitation/create": (
        {"message": "who?", "requestedSchema": {"type": "object", "properties": {}}},
        "elicitation",
        "2025-06-18",
    ),
}


@pytest.mark.parametrize("revision", HANDSHAKE)
@pytest.mark.parametrize("method", list(SERVER_REQUESTS))
def test_server_requests_need_the_client_capability(revision: str, method: str) -> None:
    params, needed, since = SERVER_REQUESTS[method]
    if revision < since:
        client, server = connect(revision)
        assert method not in server.codec.server_requests
        return
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 60, "method": method}
    if params is not None:
        message["params"] = params
    raw = wire(message)
    client, server = connect(revision, client_caps={})
    typed = server.codec.decode(raw)
    with pytest.raises(CapabilityError):
        server.send(typed)
    violation = only(client.receive(raw), ProtocolViolation)
    assert violation.rule is Rule.CAPABILITY_NOT_DECLARED and violation.error.code == -32601
    assert violation.response is not None and violation.response.id == 60
    client, server = connect(revision, client_caps={needed: {}})
    server.send(typed)
    only(client.receive(raw), RequestReceived)


def test_url_elicitation_needs_the_url_mode() -> None:
    raw = wire(
        {
            "jsonrpc": "2.0",
            "id": 61,
            "method": "elicitation/create",
            "params": {
                "mode": "url",
                "message": "go",
                "url": "https://example.com",
                "elicitationId": "e",
            },
        }
    )
    client, server = connect("2025-11-25", client_caps={"elicitation": {}})
    with pytest.raises(CapabilityError):
        server.send(server.codec.decode(raw))
    assert only(client.receive(raw), ProtocolViolation).rule is Rule.CAPABILITY_NOT_DECLARED
    client, server = connect("2025-11-25", client_caps={"elicitation": {"url": {}}})
    server.send(server.codec.decode(raw))
    only(client.receive(raw), RequestReceived)


def test_task_augmented_call_needs_the_task_capability() -> None:
    raw = wire(
        {
            "jsonrpc": "2.0",
            "id": 62,
            "method": "tools/call",
            "params": {"name": "t", "task": {"ttl": 5}},
        }
    )
    client, server = connect("2025-11-25", server_caps={"tools": {}})
    with pytest.raises(CapabilityError):
        client.send(client.codec.decode(raw))
    assert only(server.receive(raw), ProtocolViolation).rule is Rule.CAPABILITY_NOT_DECLARED
    caps = {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}}
    client, server = connect("2025-11-25", server_caps=caps)
    client.send(client.codec.decode(raw))
    only(server.receive(raw), RequestReceived)


@pytest.mark.parametrize("revision", HANDSHAKE)
def test_server_learns_its_capabilities_from_the_initialize_result(revision: str) -> None:
    server = ServerSession()  # constructed without capabilities
    client = ClientSession(mode=revision)
    request = only(server.receive(client.start()), RequestReceived)
    t = server.types
    result = t.InitializeResult(
        protocol_version=revision,
        capabilities=t.ServerCapabilities(tools=msgspec.convert({}, t.ServerCapabilitiesTools)),
        server_info=t.Implementation(name="s", version="1"),
    )
    assert server.capabilities == {}
    events = client.receive(server.send(ResultResponse(id=request.request_id, result=result)))
    assert server.capabilities == {"tools": {}}
    assert client.peer_capabilities == {"tools": {}}
    server.receive(only(events, Outgoing).data)
    only(server.receive(_raw(client, 80, "tools/list")), RequestReceived)
    violation = only(server.receive(_raw(client, 81, "prompts/list")), ProtocolViolation)
    assert violation.rule is Rule.CAPABILITY_NOT_DECLARED


def test_stateless_server_learns_its_capabilities_from_discover() -> None:
    server = ServerSession(["2026-07-28"])
    client = ClientSession(mode="2026-07-28")
    request = only(server.receive(client.start()), RequestReceived)
    t = server.types
    result = t.DiscoverResult(
        supported_versions=["2026-07-28"],
        capabilities=t.ServerCapabilities(prompts=t.ServerCapabilitiesPrompts()),
        ttl_ms=0,
        cache_scope="public",
    )
    only(
        client.receive(server.send(ResultResponse(id=request.request_id, result=result))),
        ResponseReceived,
    )
    assert server.capabilities == {"prompts": {}} and client.peer_capabilities == {"prompts": {}}
    raw = _raw(client, 70, "prompts/list")
    only(server.receive(raw), RequestReceived)
    with pytest.raises(CapabilityError):
        client.send(client.codec.decode(_raw(client, 71, "tools/list")))
