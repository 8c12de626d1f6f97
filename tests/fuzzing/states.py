"""The session states inputs are fed to, and the probe that checks a session still works.

Fourteen states: a fresh server, a server mid-handshake, a server after the handshake of
each handshake revision, a stateless 2026-07-28 server; an ``auto`` client probing with
``server/discover``, a ``legacy`` client waiting for its ``initialize`` result, a client
after each handshake revision and a stateless client (the last five with a ``tools/list``
and a ``tools/call`` with a progress token outstanding, so responses and progress have
something to match).

Building a state replays the wire bytes of one negotiation (the steps of
``session_kit.connect``, run once per revision) on one side only: a quarter of the cost of
connecting a pair, so a run can afford fresh sessions often.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from mcpspec.runtime import (
    ClientSession,
    ErrorObject,
    ErrorResponse,
    Outgoing,
    Phase,
    RequestReceived,
    ResponseReceived,
    ResultResponse,
    ServerSession,
    SessionReady,
)

from ..session_kit import (
    CLIENT_CAPS,
    HANDSHAKE,
    SERVER_CAPS,
    only,
    tools_call,
    tools_list,
)
from .seeds import Sender

__all__ = ["STATES", "Session", "State", "answer_error", "probe"]

Session: TypeAlias = "ServerSession | ClientSession"
STATELESS = "2026-07-28"
PROGRESS_TOKEN = "fuzz-progress"


@dataclass(frozen=True)
class State:
    """A named session state: how to build it and what its inputs are drawn from."""

    name: str
    build: Callable[[], Session]
    #: The revision seeds are preferably drawn from (``None``: any).
    revision: str | None
    #: Who sends what this session receives.
    peer: Sender


@dataclass(frozen=True)
class _Script:
    """The bytes of one negotiation: the opening request, its reply, the follow-up."""

    opening: bytes
    reply: bytes
    initialized: bytes | None


@functools.cache
def _script(revision: str) -> _Script:
    """Negotiate a pair once (the steps of ``session_kit.connect``) and keep the bytes."""
    server = ServerSession(capabilities=SERVER_CAPS, instructions="hi")
    client = ClientSession(mode=revision, capabilities=CLIENT_CAPS)
    opening = client.start()
    request = server.receive(opening)[-1]
    assert isinstance(request, RequestReceived)
    if revision == STATELESS:
        reply = server.send(ResultResponse(id=request.request_id, result=server.discover_result()))
        only(client.receive(reply), SessionReady)
        return _Script(opening, reply, None)
    reply = server.send(ResultResponse(id=request.request_id, result=server.initialize_result()))
    initialized = only(client.receive(reply), Outgoing)
    return _Script(opening, reply, initialized.data)


def _fresh_server() -> ServerSession:
    return ServerSession(capabilities=SERVER_CAPS, instructions="hi")


def _initializing_server() -> ServerSession:
    server = _fresh_server()
    server.receive(_script("2025-11-25").opening)
    return server


def _ready_server(revision: str) -> ServerSession:
    script = _script(revision)
    server = _fresh_server()
    request = server.receive(script.opening)[-1]
    assert isinstance(request, RequestReceived)
    if script.initialized is None:
        server.send(ResultResponse(id=request.request_id, result=server.discover_result()))
    else:
        server.send(ResultResponse(id=request.request_id, result=server.initialize_result()))
        server.receive(script.initialized)
    assert server.phase is Phase.READY
    return server


def _ready_client(revision: str) -> ClientSession:
    client = ClientSession(mode=revision, capabilities=CLIENT_CAPS)
    client.start()
    client.receive(_script(revision).reply)
    assert client.phase is Phase.READY
    client.send(tools_list(client, client.next_id()))
    client.send(tools_call(client, client.next_id()), progress_token=PROGRESS_TOKEN)
    return client


def _probing_client() -> ClientSession:
    client = ClientSession(capabilities=CLIENT_CAPS)
    client.start()
    return client


def _legacy_client() -> ClientSession:
    client = ClientSession(mode="legacy", capabilities=CLIENT_CAPS)
    client.start()
    return client


def _states() -> tuple[State, ...]:
    states = [
        State("server fresh", _fresh_server, None, "client"),
        State("server initializing", _initializing_server, "2025-11-25", "client"),
    ]
    states += [
        State(f"server {r}", functools.partial(_ready_server, r), r, "client")
        for r in (*HANDSHAKE, STATELESS)
    ]
    states += [
        State("client auto, probing", _probing_client, None, "server"),
        State("client legacy, initializing", _legacy_client, "2025-11-25", "server"),
    ]
    states += [
        State(f"client {r}", functools.partial(_ready_client, r), r, "server")
        for r in (*HANDSHAKE, STATELESS)
    ]
    return tuple(states)


STATES: tuple[State, ...] = _states()


def answer_error(request_id: Any) -> ErrorResponse:
    """An error response to ``request_id`` (how the harness drains what it receives)."""
    return ErrorResponse(id=request_id, error=ErrorObject(code=-32603, message="fuzz"))


def _request(request_id: str, method: str, meta: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if method == "tools/call":
        message["params"] = {"name": "echo", "arguments": {"x": 1}}
        if meta is not None:
            message["params"]["_meta"] = meta
    return json.dumps(message).encode()


_STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _request_probe(
    session: Session, data: bytes, request_id: str, result: Callable[[Any], Any]
) -> str | None:
    events = session.receive(data)
    got = [e for e in events if isinstance(e, RequestReceived) and e.request_id == request_id]
    if not got:
        return f"a valid request afterwards was not received: {_short(events)}"
    session.send(ResultResponse(id=request_id, result=result(session.types)))
    if request_id in session.unanswered:
        return "the answered probe request is still unanswered"
    return None


def probe(session: Session, serial: int) -> tuple[str | None, bool]:
    """Check that a valid exchange still works on ``session``: a request the session must
    take (and whose answer ``send`` must take), or for a 2026-07-28 client, which
    receives no requests, a response to a request it sends. Returns the problem (or
    ``None``) and whether the probe used the session up (the caller builds a new one)."""
    request_id = f"probe-{serial}"
    if session.phase is Phase.CLOSED:
        return None, True
    if isinstance(session, ServerSession):
        if session.model == "stateless":
            data = _request(request_id, "tools/call", _STATELESS_META)
            return _request_probe(session, data, request_id, _call_result), False
        if session.phase is Phase.READY:
            data = _request(request_id, "tools/call")
            return _request_probe(session, data, request_id, _call_result), False
        # Before the handshake (a fresh server takes one in any revision): a ping.
        data = _request(request_id, "ping")
        return _request_probe(session, data, request_id, _empty), False
    if "ping" in session.codec.server_requests:
        data = _request(request_id, "ping")
        return _request_probe(session, data, request_id, _empty), False
    if session.phase is Phase.READY:
        return _response_probe(session), False
    if session.phase is Phase.PROBING and 1 in session.outstanding:
        events = session.receive(_script(STATELESS).reply)
        if not any(isinstance(e, SessionReady) for e in events):
            return f"the discover result did not make the client ready: {_short(events)}", True
        return None, True
    return None, True


def _empty(module: Any) -> Any:
    """The empty result of a ping, of the revision the session speaks now."""
    return module.EmptyResult() if hasattr(module, "EmptyResult") else module.Result()


def _call_result(module: Any) -> Any:
    return module.CallToolResult(content=[module.TextContent(text="ok")])


def _response_probe(client: ClientSession) -> str | None:
    request = tools_call(client, client.next_id())
    client.send(request)
    reply = {
        "jsonrpc": "2.0",
        "id": request.id,
        "result": {
            "content": [],
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}},
        },
    }
    events = client.receive(json.dumps(reply).encode())
    if not any(isinstance(e, ResponseReceived) and e.request_id == request.id for e in events):
        return f"a valid response afterwards was not received: {_short(events)}"
    return None


def _short(events: list[Any]) -> str:
    text = repr(events)
    return text if len(text) < 600 else text[:600] + "..."
