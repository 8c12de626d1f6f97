"""The benchmark's echo tool on the sans-IO sessions alone, in a hand-written ASGI app.

What the ``Server``'s app does around the sessions (its connection layer: a handler per
request in a cancel scope, cancellation when a client goes away, SSE answers with
progress and logs, resumable streams, the limits and security settings, dispatch and the
handler's context) is left out. What stays is what any MCP server over Streamable HTTP
does for a ``tools/call``, with the app's own HTTP helpers (the header map, the ``Host``,
``Origin``, ``Content-Type`` and ``Accept`` checks, the bounded body read, the body
peek): the session of ``Mcp-Session-Id`` and its ``MCP-Protocol-Version`` (before
2026-07-28), the mirrored headers against the body (2026-07-28), and the session's typed
``receive`` and ``send``. Side by side with the ``Server``'s app in the floor curve, it
tells what the connection layer costs on this stack. A benchmark peer, not an example
to deploy: every POST is answered as JSON, and nothing but ``echo`` is served.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Final

import msgspec

from mcpspec.runtime import (
    ErrorObject,
    ErrorResponse,
    ProtocolViolation,
    RequestReceived,
    ResultResponse,
    ServerSession,
)
from mcpspec.runtime.connection.http import HttpSettings
from mcpspec.runtime.connection.http.asgi import (
    BodyStalled,
    BodyTooLarge,
    ClientGone,
    header_map,
    read_body,
    respond,
)
from mcpspec.runtime.connection.http.security import (
    check_accept,
    check_content_type,
    check_host,
    check_origin,
)
from mcpspec.runtime.connection.http.wire import (
    EVENT_STREAM,
    JSON,
    BodyPeek,
    answerable_id,
    refuse,
)
from mcpspec.runtime.errors import ErrorCode
from mcpspec.runtime.session.mirrored_headers import (
    MirrorError,
    check_headers,
    mismatch_error,
    plainly_mirrored,
)
from peers.http_bare import Receive, Scope, Send, lifespan

App = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The revision whose POSTs stand alone (no session).
STATELESS: Final = "2026-07-28"
#: The largest body read; a longer one is refused (413) as soon as it is known.
MAX_BODY: Final = 4 * 1024 * 1024
#: Header combinations remembered as having passed the checks (as the app remembers
#: them: the same few come again and again).
MAX_PASSED: Final = 64
#: Sessions kept; the oldest goes when a new one would be one too many.
MAX_SESSIONS: Final = 4096
INFO: Final = {"name": "mcpspec-sansio-echo", "version": "1.0.0"}
CAPABILITIES: Final = {"tools": {}}


def _mismatch(headers: dict[str, str], body: bytes, peek: BodyPeek) -> str | None:
    """What is wrong with the mirrored headers of ``body`` (``None``: nothing, or the
    body is no valid request, which the session refuses with its own error)."""
    if peek.probe is not None and plainly_mirrored(headers, peek.probe, no_param_headers):
        return None  # the usual request, told from the peek alone
    try:
        return check_headers(headers, body, no_param_headers)
    except MirrorError:
        return None


def no_param_headers(name: str) -> tuple[()]:
    """The ``x-mcp-header`` annotations of tool ``name``: ``echo`` has none."""
    return ()


def _result(session: ServerSession, event: RequestReceived) -> object:
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
    settings = HttpSettings()
    passed: set[tuple[str | None, ...]] = set()
    sessions: dict[str, ServerSession] = {}
    # Each POST is answered before the next is read, so one stateless session serves all.
    stateless = ServerSession([STATELESS], info=INFO, capabilities=CAPABILITIES)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["path"] != "/mcp":
            await respond(send, 404)
            return
        if scope["method"] != "POST":
            await respond(send, 405, headers={"allow": "POST"})
            return
        headers = header_map(scope)
        checked = tuple(map(headers.get, ("host", "origin", "content-type", "accept")))
        if checked not in passed:
            refusal = (
                check_host(headers, settings)
                or check_origin(headers, settings)
                or check_content_type(headers)
                or check_accept(headers, JSON, EVENT_STREAM)
            )
            if refusal is not None:
                await refuse(send, refusal)
                return
            if len(passed) >= MAX_PASSED:
                passed.clear()
            passed.add(checked)
        try:
            body = await read_body(receive, headers, MAX_BODY, settings.stall_seconds)
        except BodyTooLarge:
            await respond(send, 413)
            return
        except BodyStalled:
            await respond(send, 408)
            return
        except ClientGone:
            return
        peek = BodyPeek(body)
        version = headers.get("mcp-protocol-version")
        session_id = headers.get("mcp-session-id")
        extra: dict[str, str] = {}
        if version == STATELESS:
            session = stateless
            mismatch = _mismatch(headers, body, peek)
            if mismatch is not None:
                error = ErrorResponse(id=answerable_id(peek.id), error=mismatch_error(mismatch))
                await respond(send, 400, msgspec.json.encode(error), content_type=JSON)
                return
        elif session_id is None:
            if peek.method != "initialize":
                await respond(send, 400)  # Mcp-Session-Id is required
                return
            session = ServerSession(info=INFO, capabilities=CAPABILITIES)
            session_id = secrets.token_urlsafe(24)
            if len(sessions) >= MAX_SESSIONS:
                del sessions[next(iter(sessions))]
            sessions[session_id] = session
            extra["mcp-session-id"] = session_id
        else:
            found = sessions.get(session_id)
            if found is None:
                await respond(send, 404)
                return
            if found.revision is not None and version != found.revision:
                await respond(send, 400)
                return
            session = found
        answers: list[bytes] = []
        for event in session.receive(body):
            if isinstance(event, RequestReceived):
                try:
                    result = _result(session, event)
                except LookupError:
                    code = int(ErrorCode.METHOD_NOT_FOUND)
                    error = ErrorObject(code=code, message=f"Method not found: {event.method}")
                    answers.append(session.send(ErrorResponse(id=event.request_id, error=error)))
                else:
                    answers.append(session.send(ResultResponse(id=event.request_id, result=result)))
            elif isinstance(event, ProtocolViolation) and event.response is not None:
                answers.append(session.send(event.response))
        if not answers:
            await respond(send, 202, headers=extra)
            return
        body = answers[0] if len(answers) == 1 else b"[" + b",".join(answers) + b"]"
        await respond(send, 200, body, content_type=JSON, headers=extra)

    return app
