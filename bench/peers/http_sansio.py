"""The benchmark's echo tool on the sans-IO sessions alone, in a hand-written ASGI app.

What the ``Server``'s app does around the sessions (its connection layer: a handler per
request in a cancel scope, cancellation when a client goes away, SSE answers with
progress and logs, resumable streams, the limits and security settings, dispatch and the
handler's context) is left out. What stays is what any MCP server over Streamable HTTP
does for a ``tools/call``: the ``Host``, ``Content-Type`` and ``Accept`` checks, a
bounded body, the session of ``Mcp-Session-Id`` and its ``MCP-Protocol-Version`` (before
2026-07-28), the mirrored headers against the body (2026-07-28), and the session's typed
``receive`` and ``send``. Side by side with the ``Server``'s app in the floor curve, it
tells what the connection layer costs on this stack. A benchmark peer, not an example
to deploy: every POST is answered as JSON, and nothing but ``echo`` is served.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import msgspec

from mcpspec.runtime import (
    ErrorObject,
    ErrorResponse,
    ProtocolViolation,
    RequestReceived,
    ResultResponse,
    ServerSession,
)
from mcpspec.runtime.envelope import is_id
from mcpspec.runtime.errors import ErrorCode
from mcpspec.runtime.mirror import MirrorError, check_headers, mismatch_error, plainly_mirrored
from mcpspec.runtime.negotiation import PROBE_DECODER, Probe
from peers.http_bare import Receive, Scope, Send, lifespan

App = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The revision whose POSTs stand alone (no session).
STATELESS: Final = "2026-07-28"
#: Hosts served (``Host`` without its port): loopback only, against DNS rebinding.
HOSTS: Final = frozenset({"127.0.0.1", "localhost", "[::1]"})
#: The largest body read; a longer one is refused (413) as soon as it is known.
MAX_BODY: Final = 4 * 1024 * 1024
#: Sessions kept; the oldest goes when a new one would be one too many.
MAX_SESSIONS: Final = 4096
INFO: Final = {"name": "mcpspec-sansio-echo", "version": "1.0.0"}
CAPABILITIES: Final = {"tools": {}}


def _hostname(host: str) -> str:
    """``host`` (a ``Host`` header) without its port."""
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.partition(":")[0]


def _probe(body: bytes) -> Probe | None:
    """The routing fields of the message ``body`` (``None``: not one JSON-RPC object)."""
    try:
        return PROBE_DECODER.decode(body)
    except msgspec.DecodeError:
        return None


def _mismatch(headers: dict[str, str], body: bytes, probe: Probe | None) -> str | None:
    """What is wrong with the mirrored headers of ``body`` (``None``: nothing, or the
    body is no valid request, which the session refuses with its own error)."""
    if probe is not None and plainly_mirrored(headers, probe, no_param_headers):
        return None  # the usual request, told from the probe alone
    try:
        return check_headers(headers, body, no_param_headers)
    except MirrorError:
        return None


def no_param_headers(name: str) -> tuple[()]:
    """The ``x-mcp-header`` annotations of tool ``name``: ``echo`` has none."""
    return ()


async def _answer(
    send: Send, status: int, body: bytes = b"", extra: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    headers = [(b"content-length", b"%d" % len(body)), *extra]
    if body:
        headers.append((b"content-type", b"application/json"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive: Receive) -> bytes | None:
    """The request's body, or ``None`` past :data:`MAX_BODY` (the rest left unread)."""
    body = bytearray()
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return None
        body += message.get("body", b"")
        if len(body) > MAX_BODY:
            return None
        more = message.get("more_body", False)
    return bytes(body)


def _result(session: ServerSession, event: RequestReceived) -> Any:
    """The result of ``event`` (raises ``LookupError`` for a method not served)."""
    if event.method == "initialize":
        return session.initialize_result()
    if event.method != "tools/call" or event.request.params.name != "echo":
        raise LookupError(event.method)
    types = session.types
    arguments = event.request.params.arguments or {}
    return types.CallToolResult(content=[types.TextContent(text=str(arguments.get("message", "")))])


def build() -> App:
    """The app (a factory, as ``http_serve.py`` expects)."""
    sessions: dict[str, ServerSession] = {}
    # Each POST is answered before the next is read, so one stateless session serves all.
    stateless = ServerSession([STATELESS], info=INFO, capabilities=CAPABILITIES)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["method"] != "POST" or scope["path"] != "/mcp":
            await _answer(send, 405 if scope["path"] == "/mcp" else 404)
            return
        headers = {
            name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]
        }
        if _hostname(headers.get("host", "")) not in HOSTS:
            await _answer(send, 403)
            return
        if not headers.get("content-type", "").startswith("application/json"):
            await _answer(send, 415)
            return
        accept = headers.get("accept", "")
        if "application/json" not in accept or "text/event-stream" not in accept:
            await _answer(send, 406)
            return
        body = await _read_body(receive)
        if body is None:
            await _answer(send, 413)
            return
        version = headers.get("mcp-protocol-version")
        session_id = headers.get("mcp-session-id")
        extra: list[tuple[bytes, bytes]] = []
        probe = _probe(body)
        if version == STATELESS:
            session = stateless
            mismatch = _mismatch(headers, body, probe)
            if mismatch is not None:
                request_id = probe.id if probe is not None and is_id(probe.id) else None
                error = ErrorResponse(id=request_id, error=mismatch_error(mismatch))
                await _answer(send, 400, msgspec.json.encode(error))
                return
        elif session_id is None:
            if probe is None or probe.method != "initialize":
                await _answer(send, 400)  # Mcp-Session-Id is required
                return
            session = ServerSession(info=INFO, capabilities=CAPABILITIES)
            session_id = secrets.token_urlsafe(24)
            if len(sessions) >= MAX_SESSIONS:
                del sessions[next(iter(sessions))]
            sessions[session_id] = session
            extra.append((b"mcp-session-id", session_id.encode()))
        else:
            found = sessions.get(session_id)
            if found is None:
                await _answer(send, 404)
                return
            if found.revision is not None and version != found.revision:
                await _answer(send, 400)
                return
            session = found
        answers: list[bytes] = []
        for event in session.receive(body):
            if isinstance(event, RequestReceived):
                try:
                    answer: Any = ResultResponse(
                        id=event.request_id, result=_result(session, event)
                    )
                except LookupError:
                    code = int(ErrorCode.METHOD_NOT_FOUND)
                    error = ErrorObject(code=code, message=f"Method not found: {event.method}")
                    answer = ErrorResponse(id=event.request_id, error=error)
                answers.append(session.send(answer))
            elif isinstance(event, ProtocolViolation) and event.response is not None:
                answers.append(session.send(event.response))
        if not answers:
            await _answer(send, 202, extra=extra)
            return
        await _answer(
            send, 200, answers[0] if len(answers) == 1 else b"[" + b",".join(answers) + b"]", extra
        )

    return app
