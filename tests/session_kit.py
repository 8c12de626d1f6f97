"""Helpers shared by the session tests: connected session pairs and event lookups."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

import mcpspec
from mcpspec.runtime import (
    ClientSession,
    Event,
    Limits,
    Outgoing,
    RequestReceived,
    ResultResponse,
    ServerSession,
    SessionReady,
)

E = TypeVar("E", bound=Event)

REVISIONS = mcpspec.REVISIONS
HANDSHAKE = tuple(r for r in REVISIONS if r < "2026-07-28")
STATELESS = ("2026-07-28",)
#: Every capability either side can declare, in the wire form of the newest revision.
SERVER_CAPS: dict[str, Any] = {
    "tools": {"listChanged": True},
    "prompts": {"listChanged": True},
    "resources": {"subscribe": True, "listChanged": True},
    "logging": {},
    "completions": {},
    "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
}
CLIENT_CAPS: dict[str, Any] = {
    "roots": {"listChanged": True},
    "sampling": {},
    "elicitation": {"form": {}, "url": {}},
}


def wire(obj: Any) -> bytes:
    """JSON bytes of a plain object."""
    return msgspec.json.encode(obj)


def only(events: list[Event], cls: type[E]) -> E:
    """The one event of ``cls`` in ``events`` (and assert there is exactly one)."""
    found = [e for e in events if isinstance(e, cls)]
    assert len(found) == 1, f"expected one {cls.__name__} in {events}"
    return found[0]


def connect(
    revision: str,
    *,
    server_caps: Any = SERVER_CAPS,
    client_caps: Any = CLIENT_CAPS,
    server_revisions: Any = None,
    server_limits: Limits | None = None,
    client_limits: Limits | None = None,
) -> tuple[ClientSession, ServerSession]:
    """A client pinned to ``revision`` and a server, negotiated and ready."""
    server = ServerSession(
        server_revisions, capabilities=server_caps, instructions="hi", limits=server_limits
    )
    client = ClientSession(mode=revision, capabilities=client_caps, limits=client_limits)
    events = server.receive(client.start())
    request = events[-1]
    assert isinstance(request, RequestReceived)
    if revision in STATELESS:
        reply = server.send(ResultResponse(id=request.request_id, result=server.discover_result()))
        only(client.receive(reply), SessionReady)
    else:
        reply = server.send(
            ResultResponse(id=request.request_id, result=server.initialize_result())
        )
        initialized = only(client.receive(reply), Outgoing)
        only(server.receive(initialized.data), SessionReady)
    assert client.revision == revision and server.revision == revision
    return client, server


def meta_for(client: ClientSession) -> dict[str, Any]:
    """The ``_meta`` a 2026-07-28 request of ``client`` carries."""
    return {
        "io.modelcontextprotocol/protocolVersion": client.codec.revision,
        "io.modelcontextprotocol/clientCapabilities": client.capabilities,
    }


def tools_call(session: Any, request_id: Any, **params: Any) -> Any:
    """A ``tools/call`` request of the session's revision."""
    t = session.types
    return t.CallToolRequest(id=request_id, params=t.CallToolRequestParams(name="echo", **params))


def tools_list(session: Any, request_id: Any) -> Any:
    """A ``tools/list`` request of the session's revision (its all-optional params, which
    2026-07-28 requires, build themselves)."""
    return session.types.ListToolsRequest(id=request_id)


def tools_call_result(session: Any, text: str = "ok") -> Any:
    """A ``CallToolResult`` of the session's revision."""
    t = session.types
    return t.CallToolResult(content=[t.TextContent(text=text)])


def raw_request(
    request_id: Any, method: str, params: Any = None, *, stateless_meta: Any = None
) -> bytes:
    """A request as JSON bytes, with the 2026-07-28 ``_meta`` when given."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None or stateless_meta is not None:
        message["params"] = dict(params or {})
        if stateless_meta is not None:
            message["params"]["_meta"] = stateless_meta
    return wire(message)
