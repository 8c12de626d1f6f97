"""Defects of a Streamable HTTP server, each injected by an ASGI middleware around the
baseline server's own app (``http_app(Server)``), which stays the baseline in
everything else. Each defect's docstring says which check of ``mcpspec check`` must
catch it, and where.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

__all__ = ["HTTP_DEFECTS", "Middleware"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

SESSION_HEADER: Final = b"mcp-session-id"


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    """The whole request body, and whether the client disconnected meanwhile."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks), True
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), False


def _replay(body: bytes, disconnected: bool, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` first, then whatever ``receive`` gives."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        if disconnected:
            return {"type": "http.disconnect"}
        return await receive()

    return replayed


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


class Middleware:
    """No defect: the app as it is. Subclasses change one thing."""

    #: The name given to ``--defect``.
    name = ""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body, disconnected = await _read_body(receive)
        await self.handle(scope, _json(body), _replay(body, disconnected, receive), send)

    async def handle(self, scope: Scope, message: Any, receive: Receive, send: Send) -> None:
        """One HTTP request (``message``: its body's JSON, ``None`` if it is none)."""
        await self.app(scope, receive, send)


class NotificationStatus(Middleware):
    """A notification POSTed is answered 200 instead of 202 (the body, empty, as the
    app wrote it). Caught by ``http.status`` (a failure) at that POST."""

    name = "http-notification-status"

    async def handle(self, scope: Scope, message: Any, receive: Receive, send: Send) -> None:
        notification = isinstance(message, dict) and "method" in message and "id" not in message
        if not notification:
            await self.app(scope, receive, send)
            return

        async def changed(event: Message) -> None:
            if event["type"] == "http.response.start" and event["status"] == 202:
                event = {**event, "status": 200}
            await send(event)

        await self.app(scope, receive, changed)


class NoSessionEnforcement(Middleware):
    """A request without ``Mcp-Session-Id`` (other than ``initialize``) is given the
    session id minted last, so the app serves it instead of answering 400. Caught by
    ``http.session`` (a warning: SHOULD) at that request."""

    name = "http-no-session-enforcement"

    def __init__(self, app: App) -> None:
        super().__init__(app)
        self.minted: bytes | None = None

    async def handle(self, scope: Scope, message: Any, receive: Receive, send: Send) -> None:
        headers = list(scope.get("headers", ()))
        has_session = any(name.lower() == SESSION_HEADER for name, _ in headers)
        initialize = isinstance(message, dict) and message.get("method") == "initialize"
        if not has_session and not initialize and self.minted is not None:
            scope = {**scope, "headers": [*headers, (SESSION_HEADER, self.minted)]}

        async def watched(event: Message) -> None:
            if event["type"] == "http.response.start":
                for name, value in event.get("headers", ()):
                    if name.lower() == SESSION_HEADER:
                        self.minted = value
            await send(event)

        await self.app(scope, receive, watched)


class WrongContentType(Middleware):
    """A JSON answer is labelled ``Content-Type: text/plain``. Caught by
    ``http.headers`` (a failure) at that POST's response."""

    name = "http-wrong-content-type"

    async def handle(self, scope: Scope, message: Any, receive: Receive, send: Send) -> None:
        async def relabelled(event: Message) -> None:
            if event["type"] == "http.response.start":
                headers = [
                    (name, b"text/plain")
                    if name.lower() == b"content-type" and value.startswith(b"application/json")
                    else (name, value)
                    for name, value in event.get("headers", ())
                ]
                event = {**event, "headers": headers}
            await send(event)

        await self.app(scope, receive, relabelled)


async def _answer(send: Send, status: int, body: Any, headers: list[Any] | None = None) -> None:
    data = json.dumps(body).encode()
    start_headers = [(b"content-type", b"application/json"), *(headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": start_headers})
    await send({"type": "http.response.body", "body": data})


def _header(scope: Scope, wanted: bytes) -> bytes | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == wanted:
            return bytes(value)
    return None


class OriginIgnored(Middleware):
    """The ``Origin`` header is dropped before the app sees it, so a request from a
    foreign origin is served. Caught by ``http.origin`` (a failure) at the POST."""

    name = "http-origin-ignored"

    async def handle(self, scope: Scope, message: Any, receive: Receive, send: Send) -> None:
        headers = [(n, v) for n, v in scope.get("headers", ()) if n.lower() != b"origin"]
        await self.app({**scope, "headers": headers}, receive, send)


class UnknownSession400(Middleware):
    """A request naming a session id the server never minted is answered 400 (with an
    error without id) instead of 404. Caught by ``http.session`` (a warning: no rule
    names the status, but a client recovers on 404 alone)."""

    name = "http-unknown-session-400"

    def __init__(self, app: App) -> None:
        super().__init__(app)
        self.minted: set[bytes] = set()

    async def handle(self, scope: Scope, message: Any, receive: Receive, send: Send) -> None:
        session = _header(scope, SESSION_HEADER)
        if session is not None and session not in self.minted:
            error = {"code": -32000, "message": "Bad Request: no such session"}
            await _answer(send, 400, {"jsonrpc": "2.0", "id": None, "error": error})
            return

        async def watched(event: Message) -> None:
            if event["type"] == "http.response.start":
                for name, value in event.get("headers", ()):
                    if name.lower() == SESSION_HEADER:
                        self.minted.add(bytes(value))
            await send(event)

        await self.app(scope, receive, watched)


class TokenRequired(Middleware):
    """No defect: every request without ``Authorization: Bearer t`` is answered 401
    (with ``WWW-Authenticate: Bearer`` and a JSON-RPC error without id, as many
    servers write it). Checked without ``--header``, the server cannot be reached."""

    name = "http-token-required"

    async def handle(self, scope: Scope, message: Any, receive: Receive, send: Send) -> None:
        if _header(scope, b"authorization") != b"Bearer t":
            error = {"code": -32001, "message": "Unauthorized"}
            body = {"jsonrpc": "2.0", "id": None, "error": error}
            await _answer(send, 401, body, [(b"www-authenticate", b"Bearer")])
            return
        await self.app(scope, receive, send)


class IdNullOnUnknownSession(Middleware):
    """A request naming a session id the server never minted is accepted (200) and
    answered with an error whose id is null, though the request's id was readable.
    Caught by ``protocol.responses`` (a failure, as the conversation files it) and
    ``http.session`` (a warning: not 404)."""

    name = "http-id-null-on-unknown-session"

    def __init__(self, app: App) -> None:
        super().__init__(app)
        self.minted: set[bytes] = set()

    async def handle(self, scope: Scope, message: Any, receive: Receive, send: Send) -> None:
        session = _header(scope, SESSION_HEADER)
        if session is not None and session not in self.minted:
            error = {"code": -32000, "message": "no such session"}
            await _answer(send, 200, {"jsonrpc": "2.0", "id": None, "error": error})
            return

        async def watched(event: Message) -> None:
            if event["type"] == "http.response.start":
                for name, value in event.get("headers", ()):
                    if name.lower() == SESSION_HEADER:
                        self.minted.add(bytes(value))
            await send(event)

        await self.app(scope, receive, watched)


#: Every HTTP defect, by name.
HTTP_DEFECTS: Final[dict[str, type[Middleware]]] = {
    cls.name: cls
    for cls in (
        NotificationStatus,
        NoSessionEnforcement,
        WrongContentType,
        OriginIgnored,
        UnknownSession400,
        TokenRequired,
        IdNullOnUnknownSession,
    )
}
