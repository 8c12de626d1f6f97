"""The 2024-11-05 HTTP+SSE transport (deprecated since 2025-03-26, still deployed).

``GET sse_path`` opens an event stream whose first event, ``endpoint``, names the URL
to POST the client's messages to (``messages_path?session_id=<id>``); every message of
the server arrives on that stream as a ``message`` event. Each POST carries one message
and is answered 202; what it causes travels on the stream.

The connection lives exactly as long as its GET: the GET's task serves it (as
:meth:`Server.serve <mcpspec.runtime.connection.server.Server.serve>` does, over a
:class:`LegacyStream`), so no task outlives a request here. The same security checks
as the Streamable HTTP endpoint apply, and the same revisions (the handshake ones the
settings serve). A client that stops reading is dropped once ``max_queued_messages``
change notifications wait for it.
"""

from __future__ import annotations

import collections
import urllib.parse
from typing import TYPE_CHECKING, Any, Final

import anyio

from ..changes import DROP_GRACE
from ..errors import ConnectionClosed
from ..principal import Principal, current_principal, principal_scope
from .asgi import (
    BodyRefused,
    Receive,
    Scope,
    Send,
    client_gone,
    header_map,
    read_body,
    respond,
    start_response,
)
from .security import Refusal, check_accept, check_content_type
from .sessions import new_id
from .sse import KEEPALIVE, SSE_HEADERS, encode_event

if TYPE_CHECKING:
    from .app import HttpApp

__all__ = ["LegacySse", "LegacyStream"]

#: How many POSTed messages a connection holds before its reader takes them.
_INBOX: Final = 256
#: How many bytes of them it holds (one message of any size the body limit lets in
#: is taken when the inbox is empty).
_INBOX_BYTES: Final = 16 * 1024 * 1024


class LegacyStream:
    """The message stream of one HTTP+SSE connection: POSTed messages in, SSE events
    out."""

    def __init__(self, send: Send, keepalive: float) -> None:
        self._send = send
        self._keepalive = keepalive
        self._inbox: collections.deque[bytes] = collections.deque()
        #: The bytes of the messages in the inbox.
        self._held = 0
        self._arrived = anyio.Event()
        self._closed = False
        self._lock = anyio.Lock()
        #: The key of the principal that opened the connection (``None``: none).
        self.owner: str | None = None

    def deliver(self, data: bytes) -> bool:
        """Take one POSTed message; ``False`` when the connection is closed or its
        inbox is full (in messages, or in bytes)."""
        if self._closed or len(self._inbox) >= _INBOX:
            return False
        if self._inbox and self._held + len(data) > _INBOX_BYTES:
            return False
        self._inbox.append(data)
        self._held += len(data)
        self._arrived.set()
        return True

    async def receive(self) -> bytes:
        while not self._inbox:
            if self._closed:
                raise ConnectionClosed("the SSE stream ended")
            self._arrived = anyio.Event()
            with anyio.move_on_after(self._keepalive):
                await self._arrived.wait()
            if not self._inbox and not self._closed:
                await self._write(KEEPALIVE)
        data = self._inbox.popleft()
        self._held -= len(data)
        return data

    async def send(self, data: bytes, *, related_request_id: int | str | None = None) -> None:
        await self._write(encode_event(data))

    async def _write(self, chunk: bytes) -> None:
        if self._closed:
            raise ConnectionClosed("the SSE stream ended")
        async with self._lock:
            try:
                await self._send({"type": "http.response.body", "body": chunk, "more_body": True})
            except OSError:
                self._closed = True
                self._arrived.set()
                raise ConnectionClosed("the client went away") from None

    async def aclose(self) -> None:
        self._closed = True
        self._arrived.set()


class LegacySse:
    """The HTTP+SSE endpoints of an :class:`~.app.HttpApp`."""

    def __init__(self, app: HttpApp) -> None:
        self.app = app
        self._streams: dict[str, LegacyStream] = {}

    async def handle(self, path: str, scope: Scope, receive: Receive, send: Send) -> bool:
        """Serve the request when ``path`` is one of the endpoints; ``False`` else."""
        settings = self.app.settings
        if path not in (settings.sse_path, settings.messages_path):
            return False
        headers = header_map(scope)
        checked = await self.app._check(headers, scope)
        principal = checked if isinstance(checked, Principal) else None
        refusal = None if isinstance(checked, Principal) else checked
        if refusal is None and path == settings.sse_path and scope["method"] != "GET":
            refusal = Refusal(405, "Method Not Allowed", {"allow": "GET"})
        if refusal is None and path == settings.messages_path and scope["method"] != "POST":
            refusal = Refusal(405, "Method Not Allowed", {"allow": "POST"})
        if refusal is not None:
            await respond(send, refusal.status, headers=dict(refusal.headers))
            return True
        # The connection (and its handlers) is the principal's; a message for it from
        # another principal is refused as if the connection did not exist.
        with principal_scope(principal):
            if path == settings.sse_path:
                await self._open(scope, headers, receive, send)
            else:
                await self._message(scope, headers, receive, send)
        return True

    async def _open(
        self, scope: Scope, headers: dict[str, str], receive: Receive, send: Send
    ) -> None:
        refusal = check_accept(headers, "text/event-stream")
        if refusal is not None:
            await respond(send, refusal.status)
            return
        if len(self._streams) >= self.app.settings.max_sessions:
            await respond(send, 503)
            return
        session_id = new_id()
        stream = LegacyStream(send, self.app.settings.keepalive_seconds)
        stream.owner = _owner()
        self._streams[session_id] = stream
        root = scope.get("root_path", "")
        endpoint = f"{root}{self.app.settings.messages_path}?session_id={session_id}"
        try:
            await start_response(send, 200, "text/event-stream", SSE_HEADERS)
            await send(
                {
                    "type": "http.response.body",
                    "body": encode_event(endpoint.encode(), event="endpoint"),
                    "more_body": True,
                }
            )
            dropped = anyio.Event()
            async with anyio.create_task_group() as task_group:

                async def watch() -> None:
                    await client_gone(receive)
                    await stream.aclose()

                def drop() -> None:
                    dropped.set()
                    task_group.cancel_scope.cancel()

                task_group.start_soon(watch)
                # The settings' handshake revisions only; a feed that never waits
                # on a client that does not read (it is dropped instead).
                async with self.app.server.connect(
                    stream,
                    linger=1.0,
                    revisions=self.app.handshake_revisions,
                    change_buffer=self.app.settings.max_queued_messages,
                    on_overflow=drop,
                ) as connection:
                    await connection.wait_closed()
                task_group.cancel_scope.cancel()
            if dropped.is_set():
                # The client stopped reading: end its stream if it takes the end soon.
                with anyio.move_on_after(DROP_GRACE):
                    await send({"type": "http.response.body", "body": b""})
        except OSError:
            pass
        finally:
            self._streams.pop(session_id, None)

    async def _message(
        self, scope: Scope, headers: dict[str, str], receive: Receive, send: Send
    ) -> None:
        refusal = check_content_type(headers)
        if refusal is not None:
            await respond(send, refusal.status)
            return
        session_id = _query_value(scope, "session_id")
        stream = self._streams.get(session_id or "")
        if stream is None or stream.owner != _owner():
            await respond(send, 404 if session_id else 400)
            return
        try:
            body = await read_body(
                receive, headers, self.app.max_body, self.app.settings.stall_seconds
            )
        except BodyRefused as exc:
            # As on the Streamable HTTP endpoint: closing stops the rest of the body.
            await respond(send, exc.status, headers={"connection": "close"})
            return
        await respond(send, 202 if stream.deliver(body) else 503)


def _owner() -> str | None:
    """The key of the principal of the request being served (``None``: no principal)."""
    principal = current_principal.get()
    return None if principal is None else principal.key


def _query_value(scope: Scope, name: str) -> str | None:
    query: Any = scope.get("query_string", b"")
    text = query.decode("latin-1") if isinstance(query, bytes) else str(query)
    values = urllib.parse.parse_qs(text).get(name)
    return values[0] if values else None
