"""The MCP server as an ASGI application: Streamable HTTP in every era.

:class:`HttpApp` serves one :class:`~mcpspec.runtime.connection.server.Server` at one
endpoint (``/mcp`` by default), and picks the era of each request from what it carries:

* ``MCP-Protocol-Version: 2026-07-28`` (or a body whose ``_meta`` names a protocol
  version): the stateless era. Each POST is a connection of its own, made and gone with
  the request: its mirrored headers are checked against its body, its handler runs in
  the request's task, and its answer is JSON, or an SSE stream when progress or log
  messages come first. The client closing that stream cancels the handler.
  ``GET``/``DELETE`` are 405; ``Mcp-Session-Id`` and ``Last-Event-ID`` are ignored.
* Anything else: the handshake eras (2025-03-26 to 2025-11-25). ``initialize`` makes a
  session (:mod:`.sessions`), every later POST names it; the messages of the server go
  where :mod:`.routing` sends them; ``GET`` opens the standalone stream, or resumes a
  broken one from ``Last-Event-ID``; ``DELETE`` ends the session.
* With ``legacy_sse``, the 2024-11-05 HTTP+SSE endpoints as well (:mod:`.legacy`).

Before any of that, every request passes the checks of :mod:`.security` (``Host``,
``Origin``, bearer token) and, for a POST, of its media types and body size. JSON-RPC
errors about a request travel inside a 200 (handshake eras) or with the status the
2026-07-28 rules give their codes; a 500 is sent only when nothing was sent yet.

The sessions' connections run in a task group the app keeps for its lifetime: opened
by the ASGI lifespan (uvicorn sends it), by ``async with app.running():`` (for a host
framework whose lifespan does not reach a mounted app), or, on asyncio, by the first
request that needs it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.abc
import msgspec

from mcpspec.runtime import mirror
from mcpspec.runtime.envelope import ErrorObject, ErrorResponse, ResultResponse
from mcpspec.runtime.errors import ErrorCode, clip
from mcpspec.runtime.events import ProtocolViolation, RequestReceived
from mcpspec.runtime.negotiation import META_PROTOCOL_VERSION, is_stateless
from mcpspec.runtime.rules import Rule

from ..changes import ChangeFeed
from ..errors import RequestError
from ..peer import Peer
from ..pipes import running_asyncio_loop
from .asgi import (
    BodyTooLarge,
    ClientGone,
    Receive,
    Scope,
    Send,
    header_map,
    read_body,
    respond,
    start_response,
)
from .events import MemoryEventStore
from .routing import ROUTE, Channel, ChannelStream, is_request
from .security import (
    Refusal,
    check_accept,
    check_content_type,
    check_host,
    check_origin,
    check_token,
)
from .sessions import HandshakeSession, SessionTable, new_id
from .settings import HttpSettings
from .sse import KEEPALIVE, SSE_HEADERS, encode_event

if TYPE_CHECKING:
    from ..server import Server

__all__ = ["HttpApp"]

logger = logging.getLogger("mcpspec.http")

JSON: Final = "application/json"
EVENT_STREAM: Final = "text/event-stream"
SESSION_HEADER: Final = "mcp-session-id"
VERSION_HEADER: Final = "mcp-protocol-version"

#: The HTTP status of a 2026-07-28 JSON-RPC error, by code (the others travel in a 200).
_STATELESS_STATUS: Final = {
    int(ErrorCode.HEADER_MISMATCH): 400,
    int(ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY): 400,
    int(ErrorCode.UNSUPPORTED_PROTOCOL_VERSION): 400,
    int(ErrorCode.METHOD_NOT_FOUND): 404,
    int(ErrorCode.PARSE_ERROR): 400,
    int(ErrorCode.INVALID_REQUEST): 400,
}


# -- peeking at a body before a session reads it ---------------------------------------------


class _PeekParams(msgspec.Struct):
    protocol_version: Any = msgspec.field(default=None, name="protocolVersion")
    meta: Any = msgspec.field(default=None, name="_meta")


class _Peek(msgspec.Struct):
    """The members of a message the app routes by (the session reads the rest)."""

    id: Any = None
    method: Any = None
    params: Any = None


class _PeekTyped(msgspec.Struct):
    id: Any = None
    method: Any = None
    params: _PeekParams | None = None


_PEEK: Final = msgspec.json.Decoder(_PeekTyped)
_PEEK_LOOSE: Final = msgspec.json.Decoder(_Peek)


class _Body:
    """What the app knows of a POST body before a session reads it."""

    __slots__ = ("batch", "id", "json", "meta_version", "method", "requested_version")

    def __init__(self, data: bytes) -> None:
        self.json = True
        self.batch = False
        self.id: Any = None
        self.method: Any = None
        self.meta_version: Any = None
        self.requested_version: Any = None
        head = data.lstrip()[:1]
        if head == b"[":
            self.batch = True
            return
        try:
            peek = _PEEK.decode(data)
        except msgspec.ValidationError:
            try:
                loose = _PEEK_LOOSE.decode(data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                self.json = False
                return
            self.id, self.method = loose.id, loose.method
            return
        except msgspec.DecodeError:
            self.json = False
            return
        except (RecursionError, UnicodeError):
            self.json = False
            return
        self.id, self.method = peek.id, peek.method
        params = peek.params
        if params is not None:
            self.requested_version = params.protocol_version
            meta = params.meta
            if isinstance(meta, dict):
                self.meta_version = meta.get(META_PROTOCOL_VERSION)

    @property
    def is_request(self) -> bool:
        return isinstance(self.method, str) and isinstance(self.id, (int, str))


def _error_body(code: int, message: str, request_id: Any = None, data: Any = None) -> bytes:
    """A JSON-RPC error response's bytes (``id`` null unless ``request_id`` is one)."""
    error = ErrorObject(
        code=code, message=message, data=data if data is not None else msgspec.UNSET
    )
    return msgspec.json.encode(ErrorResponse(id=_answerable_id(request_id), error=error))


#: How many free 2026-07-28 connections an app keeps.
_POOL_SIZE: Final = 64


class _StatelessConnection:
    """A connection of the server for 2026-07-28 POSTs: one at a time, each on its own
    channel."""

    __slots__ = ("connection", "peer", "session", "stream")

    def __init__(self, app: HttpApp) -> None:
        from ..server import _Connection

        server = app.server
        self.session = server.session(app.stateless_revisions)
        self.stream = ChannelStream(None)
        self.connection = _Connection(server, self.session)
        self.peer: Peer[Any] = Peer(
            self.session,
            self.stream,
            request_handler=self.connection.dispatch,
            notification_handler=self.connection.on_notification,
        )
        self.connection.peer = self.peer

    def clean(self) -> bool:
        """Whether the last request left nothing behind (so the next may reuse it)."""
        session = self.session
        return not session.unanswered and not session.outstanding and not self.peer.handling


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


class HttpApp:
    """An ASGI application serving ``server`` over Streamable HTTP (see the module).

    Build it with :meth:`Server.http_app <mcpspec.runtime.connection.server.Server.http_app>`.
    ``settings`` (:class:`HttpSettings`) says how it behaves.
    """

    def __init__(self, server: Server, settings: HttpSettings | None = None) -> None:
        self.server = server
        self.settings = settings = settings if settings is not None else HttpSettings()
        accepted = server.session().accepted
        served = tuple(r for r in accepted if settings.revisions is None or r in settings.revisions)
        if not served:
            raise ValueError("the settings leave no revision the server accepts")
        self.stateless_revisions = tuple(r for r in served if is_stateless(r))
        self.handshake_revisions = tuple(r for r in served if not is_stateless(r))
        self.max_body = (
            settings.max_body_bytes
            if settings.max_body_bytes is not None
            else server.limits.max_message_bytes
        )
        self.event_store = (
            (settings.event_store or MemoryEventStore()) if settings.resumable else None
        )
        self.sessions = SessionTable(settings.max_sessions, settings.session_idle_seconds)
        #: 2026-07-28 connections free for the next POST.
        self._idle: list[_StatelessConnection] = []
        self._task_group: anyio.abc.TaskGroup | None = None
        self._starting: anyio.Event | None = None
        self._legacy: Any = None
        if settings.legacy_sse:
            from .legacy import LegacySse

            self._legacy = LegacySse(self)

    # -- lifetime -----------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[HttpApp]:
        """Keep the task group the sessions run in, for the block's duration; leaving
        it ends every session."""
        async with anyio.create_task_group() as task_group:
            self._task_group = task_group
            try:
                yield self
            finally:
                for session in self.sessions.all():
                    await session.end()
                self._task_group = None
                task_group.cancel_scope.cancel()

    async def _tasks(self) -> anyio.abc.TaskGroup:
        """The sessions' task group; on asyncio, started in the background when no
        lifespan started it."""
        if self._task_group is not None:
            return self._task_group
        if self._starting is None:
            self._starting = anyio.Event()
            loop = running_asyncio_loop()
            if loop is None:
                raise RuntimeError(
                    "the app's sessions need its lifespan (or `async with app.running()`)"
                )
            started = self._starting

            async def keep() -> None:
                async with self.running():
                    started.set()
                    await anyio.sleep_forever()

            self._background = loop.create_task(keep())
        await self._starting.wait()
        assert self._task_group is not None
        return self._task_group

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":
            return
        async with self.running():
            await send({"type": "lifespan.startup.complete"})
            while True:
                message = await receive()
                if message["type"] == "lifespan.shutdown":
                    break
        await send({"type": "lifespan.shutdown.complete"})

    # -- ASGI ---------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        path = _route_path(scope)
        settings = self.settings
        if path.rstrip("/") != settings.path.rstrip("/") or not path:
            if self._legacy is not None and await self._legacy.handle(path, scope, receive, send):
                return
            await respond(send, 404)
            return
        headers = header_map(scope)
        try:
            refusal = await self._check(headers)
        except Exception:
            # The application's token verifier failed: nothing is known of the request.
            logger.exception("the HTTP app's checks failed on %s", path)
            await _internal_error(send)
            return
        if refusal is not None:
            await _refuse(send, refusal)
            return
        method = scope["method"]
        try:
            if method == "POST":
                await self._post(headers, receive, send)
            elif method == "GET":
                await _until_disconnect(receive, self._get(headers, send))
            elif method == "DELETE":
                await self._delete(headers, send)
            else:
                await respond(send, 405, headers={"allow": self._allowed()})
        except ClientGone:
            return
        except Exception:
            # A bug: 500 while nothing was sent; after that, the response is cut short.
            logger.exception("the HTTP app failed on %s %s", method, path)
            await _internal_error(send)

    async def _check(self, headers: dict[str, str]) -> Refusal | None:
        settings = self.settings
        return (
            check_host(headers, settings)
            or check_origin(headers, settings)
            or await check_token(headers, settings)
        )

    def _allowed(self) -> str:
        methods = ["POST"]
        if self.settings.standalone_stream and self.handshake_revisions:
            methods.append("GET")
        if self.settings.allow_delete and self.handshake_revisions:
            methods.append("DELETE")
        return ", ".join(methods)

    # -- POST ---------------------------------------------------------------------------------
    async def _post(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        refusal = check_content_type(headers) or check_accept(headers, JSON, EVENT_STREAM)
        if refusal is not None:
            await _refuse(send, refusal)
            return
        try:
            body = await read_body(receive, headers, self.max_body)
        except BodyTooLarge as exc:
            # Closing the connection stops the rest of the body at the socket: kept
            # open, the ASGI server would read it all to reach the next request.
            await _refuse(send, Refusal(413, str(exc), {"connection": "close"}))
            return
        peek = _Body(body)
        version = headers.get(VERSION_HEADER)
        # The body's _meta decides when it names a version (a version this server does
        # not know is then answered -32022, as the stateless era says).
        stateless = (version is not None and is_stateless(version)) or (
            peek.meta_version is not None and peek.method != "initialize"
        )
        # A server without 2026-07-28 answers a modern request as the handshake eras
        # do (400, "Missing session ID"): the client then falls back to initialize.
        if (stateless and self.stateless_revisions) or not self.handshake_revisions:
            await self._post_stateless(headers, body, peek, receive, send)
            return
        await self._post_handshake(headers, body, peek, send)

    # -- 2026-07-28 ---------------------------------------------------------------------------
    async def _post_stateless(
        self, headers: dict[str, str], body: bytes, peek: _Body, receive: Receive, send: Send
    ) -> None:

        server = self.server
        if not peek.json or peek.batch:
            reason = "Parse error" if not peek.json else "Invalid request: batches are not taken"
            code = ErrorCode.PARSE_ERROR if not peek.json else ErrorCode.INVALID_REQUEST
            await respond(send, 400, _error_body(int(code), reason), content_type=JSON)
            return
        if peek.is_request:
            mismatch = mirror.header_mismatch(headers, body, self._params_of)
            if mismatch is not None:
                error = mirror.mismatch_error(mismatch)
                response = ErrorResponse(id=_answerable_id(peek.id), error=error)
                await respond(send, 400, msgspec.json.encode(response), content_type=JSON)
                return
        channel = Channel(
            send,
            sse=not self.settings.json_response,
            status_of=_stateless_status,
        )
        listen = peek.method == "subscriptions/listen"
        # A connection whose last request ended leaves nothing behind: the next POST
        # takes it over instead of building a session (and its dispatch table) anew.
        pooled = self._idle.pop() if self._idle and not listen else _StatelessConnection(self)
        pooled.stream.channel = channel
        peer = pooled.peer
        if listen:
            pooled.connection.feed = ChangeFeed(peer)
            server._connections.add(pooled.connection)
        events: list[Any] = []
        token = ROUTE.set(channel)
        try:
            loop = running_asyncio_loop()
            if not peek.is_request:
                events = await peer.feed(body, inline=True)
            elif loop is not None and not listen:
                # The client closing the connection cancels the request; a plain task
                # watches for it (a task group would cost more than the request).
                scope = anyio.CancelScope()
                watcher = loop.create_task(_cancel_on_disconnect(receive, scope))
                try:
                    events = await peer.feed(body, inline=True, scope=scope)
                finally:
                    watcher.cancel()
            else:
                async with anyio.create_task_group() as task_group:
                    task_group.start_soon(self._watch, receive, channel, task_group.cancel_scope)
                    events = await peer.feed(body, inline=True)
                    task_group.cancel_scope.cancel()
            await self._settle(channel, events)
        finally:
            ROUTE.reset(token)
            if listen:
                server._connections.discard(pooled.connection)
            else:
                pooled.stream.channel = None
                if pooled.clean() and len(self._idle) < _POOL_SIZE:
                    self._idle.append(pooled)
            if not channel.complete.is_set():
                with anyio.CancelScope(shield=True):
                    await channel.close()

    def _params_of(self, name: str) -> Sequence[mirror.ParamHeader]:
        """The ``x-mcp-header`` annotations of the server's tool ``name``."""
        tool = self.server.tools.get(name)
        if tool is None:
            return ()
        return _tool_headers(tool)

    async def _watch(self, receive: Receive, channel: Channel, scope: anyio.CancelScope) -> None:
        """Cancel the request when its client goes away (2026-07-28: closing the
        stream is cancelling), and keep a quiet SSE stream alive."""
        while True:
            with anyio.move_on_after(self.settings.keepalive_seconds):
                message = await receive()
                if message["type"] == "http.disconnect":
                    scope.cancel()
                    return
                continue
            await channel.keepalive(KEEPALIVE)

    async def _settle(self, channel: Channel, events: list[Any]) -> None:
        """After a body was fed: say which requests the response waits for, or, when
        it carried none, answer 202 (or 400 when a message of it was refused)."""
        request_ids = [e.request_id for e in events if isinstance(e, RequestReceived)]
        violations = [e for e in events if isinstance(e, ProtocolViolation)]
        if not request_ids and violations and not channel.held:
            first = violations[0]
            channel.held.append(
                _error_body(first.error.code, first.error.message, None, first.error.data)
            )
        if not request_ids and any(_refuses_body(v) for v in violations):
            # No request of the body was taken in: the body itself is refused.
            channel.status = 400
        elif any(v.rule in _META_RULES for v in violations):
            # 2026-07-28: a request whose _meta is missing or wrong is a bad request.
            channel.status = 400
        await channel.expect(request_ids)

    # -- handshake eras -----------------------------------------------------------------------
    async def _post_handshake(
        self, headers: dict[str, str], body: bytes, peek: _Body, send: Send
    ) -> None:
        settings = self.settings
        if peek.batch and not settings.batches:
            await respond(
                send,
                400,
                _error_body(
                    int(ErrorCode.INVALID_REQUEST), "Invalid request: batches are not taken"
                ),
                content_type=JSON,
            )
            return
        if not peek.json:
            await respond(
                send, 400, _error_body(int(ErrorCode.PARSE_ERROR), "Parse error"), content_type=JSON
            )
            return
        version = headers.get(VERSION_HEADER)
        initialize = peek.method == "initialize"
        if version is not None and not initialize and version not in self.handshake_revisions:
            await respond(
                send,
                400,
                _error_body(
                    int(ErrorCode.INVALID_REQUEST),
                    f"Bad Request: unsupported MCP-Protocol-Version {clip(version, 64)!r}",
                    data={"supported": list(self.handshake_revisions)},
                ),
                content_type=JSON,
            )
            return
        if initialize and settings.strict_initialize:
            requested = peek.requested_version
            if requested not in self.handshake_revisions:
                await respond(
                    send,
                    200,
                    _error_body(
                        int(ErrorCode.INVALID_PARAMS),
                        "Unsupported protocol version",
                        peek.id,
                        {
                            "supported": list(self.handshake_revisions),
                            "requested": requested if isinstance(requested, str) else None,
                        },
                    ),
                    content_type=JSON,
                )
                return
        session_id = headers.get(SESSION_HEADER)
        if not settings.sessions:
            if not initialize and version is None and settings.require_protocol_version:
                await _bad_request(send, "MCP-Protocol-Version is required")
                return
            await self._post_sessionless(body, peek, version, send)
            return
        if session_id is None:
            if not initialize:
                await _bad_request(send, "Bad Request: Missing session ID", code=-32000)
                return
            await self._initialize(body, send)
            return
        session = self.sessions.get(session_id)
        if session is None:
            expired = self.sessions.expired(session_id)
            if expired is not None:
                self.sessions.remove(session_id)
                await expired.end()
            await respond(send, 404, _error_body(-32001, "Session not found"), content_type=JSON)
            return
        if initialize:
            await _bad_request(send, "the session is initialized already")
            return
        if version is None and settings.require_protocol_version:
            await _bad_request(send, "MCP-Protocol-Version is required")
            return
        await self._feed_session(session, body, send, headers={})

    def _channel(
        self, send: Send, session: HandshakeSession | None, headers: dict[str, str]
    ) -> Channel:
        settings = self.settings
        resumable = session is not None and session.event_store is not None
        stream_id = new_id()
        revision = session.revision if session is not None else None
        return Channel(
            send,
            sse=not settings.json_response,
            divert=(
                session.to_standalone
                if session is not None and settings.standalone_stream
                else _undeliverable
            ),
            stamp=session.stamp if resumable and session is not None else None,
            stream_id=stream_id,
            priming=resumable and revision == "2025-11-25",
            retry_ms=settings.retry_ms,
            headers=headers,
        )

    async def _feed_session(
        self, session: HandshakeSession, body: bytes, send: Send, headers: dict[str, str]
    ) -> None:
        peer = session.peer
        assert peer is not None
        channel = self._channel(send, session, headers)
        session.live[channel.stream_id] = channel
        token = ROUTE.set(channel)
        try:
            # Each POST has a task of its own: a single request is handled in it. The
            # requests of a batch run concurrently, each in a task of the connection's.
            inline = body.lstrip()[:1] != b"["
            events = await peer.feed(body, inline=inline)
        finally:
            ROUTE.reset(token)
        try:
            await self._settle(channel, events)
            if not inline:
                # Until its requests are answered; a session that ends closes it.
                await channel.hold_open()
            # Else the handler is over: answered, or cancelled (then nothing answers).
        finally:
            session.live.pop(channel.stream_id, None)
            if not channel.complete.is_set():
                with anyio.CancelScope(shield=True):
                    await channel.close()

    async def _initialize(self, body: bytes, send: Send) -> None:
        from ..server import _Connection

        session_id = new_id()
        session = HandshakeSession(
            session_id,
            queue_limit=self.settings.max_queued_messages,
            event_store=self.event_store,
        )
        server = self.server
        sans_io = server.session(self.handshake_revisions)
        connection = _Connection(server, sans_io)
        peer: Peer[Any] = Peer(
            sans_io,
            session.stream,
            request_handler=connection.dispatch,
            notification_handler=connection.on_notification,
            linger=1.0,
        )
        connection.peer = peer
        connection.feed = ChangeFeed(peer)
        session.peer = peer
        session.connection = connection
        task_group = await self._tasks()
        await task_group.start(self._run_session, session)
        for evicted in self.sessions.add(session):
            logger.info("session %s ended to make room", evicted.id[:8])
            await evicted.end()
        await self._feed_session(session, body, send, headers={"mcp-session-id": session_id})

    async def _run_session(
        self, session: HandshakeSession, *, task_status: anyio.abc.TaskStatus[None]
    ) -> None:
        server = self.server
        peer = session.peer
        assert peer is not None
        server._connections.add(session.connection)
        try:
            async with peer:
                task_status.started()
                await peer.wait_closed()
        finally:
            server._connections.discard(session.connection)
            session.ended.set()
            with anyio.CancelScope(shield=True):
                await session.close_streams()
            self.sessions.remove(session.id)
            if self.event_store is not None:
                with anyio.CancelScope(shield=True):
                    await self.event_store.forget(session.id)

    async def _post_sessionless(
        self, body: bytes, peek: _Body, version: str | None, send: Send
    ) -> None:
        """A handshake-era POST without sessions: a connection of its own, primed as
        if ``initialize`` had named the ``MCP-Protocol-Version`` of the request."""
        from ..server import _Connection

        server = self.server
        sans_io = server.session(self.handshake_revisions)
        if peek.method != "initialize":
            revision = version or "2025-03-26"
            _prime(sans_io, revision, initialized=peek.method != "notifications/initialized")
        channel = self._channel(send, None, {})
        connection = _Connection(server, sans_io)
        peer: Peer[Any] = Peer(
            sans_io,
            ChannelStream(channel),
            request_handler=connection.dispatch,
            notification_handler=connection.on_notification,
        )
        connection.peer = peer
        token = ROUTE.set(channel)
        try:
            events = await peer.feed(body, inline=True)
            await self._settle(channel, events)
        finally:
            ROUTE.reset(token)
            with anyio.CancelScope(shield=True):
                await channel.close()

    # -- GET and DELETE -----------------------------------------------------------------------
    def _session_of(
        self, headers: dict[str, str]
    ) -> tuple[HandshakeSession | None, Refusal | None]:
        session_id = headers.get(SESSION_HEADER)
        if session_id is None:
            return None, Refusal(400, "Bad Request: Missing session ID")
        session = self.sessions.get(session_id)
        if session is None:
            return None, Refusal(404, "Session not found")
        return session, None

    async def _get(self, headers: dict[str, str], send: Send) -> None:
        settings = self.settings
        version = headers.get(VERSION_HEADER)
        if (
            not settings.standalone_stream
            or not self.handshake_revisions
            or (version is not None and is_stateless(version))
        ):
            await respond(send, 405, headers={"allow": self._allowed()})
            return
        refusal = check_accept(headers, EVENT_STREAM)
        if refusal is not None:
            await _refuse(send, refusal)
            return
        session, refusal = self._session_of(headers)
        if refusal is not None or session is None:
            await _refuse(send, refusal or Refusal(400, "Bad Request"))
            return
        last_event_id = headers.get("last-event-id")
        if last_event_id is not None and self.event_store is not None:
            await self._resume(session, last_event_id, send)
            return
        if session.listening:
            await _refuse(send, Refusal(409, "Conflict: a GET stream is open for this session"))
            return
        session.listening = True
        try:
            await start_response(send, 200, EVENT_STREAM, SSE_HEADERS)
            await self._standalone(session, send)
        except OSError:
            pass
        finally:
            session.listening = False

    async def _standalone(self, session: HandshakeSession, send: Send) -> None:
        keepalive = self.settings.keepalive_seconds
        while not session.ended.is_set():
            data = await session.next_standalone(keepalive)
            if session.ended.is_set():
                break
            chunk = KEEPALIVE if data is None else await session.standalone_event(data)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    async def _resume(self, session: HandshakeSession, last_event_id: str, send: Send) -> None:
        """Replay the stream ``last_event_id`` belongs to after it, then go on live when
        it is still open (a POST's stream) or is the standalone stream."""
        assert self.event_store is not None
        events = await self.event_store.replay(session.id, last_event_id)
        if events is None:
            await _refuse(send, Refusal(404, "Unknown Last-Event-ID"))
            return
        stream_id = last_event_id.rsplit(".", 1)[0]
        await start_response(send, 200, EVENT_STREAM, SSE_HEADERS)
        try:
            for event in events:
                if event.data:
                    await send(
                        {
                            "type": "http.response.body",
                            "body": encode_event(event.data, event_id=event.event_id),
                            "more_body": True,
                        }
                    )
            channel = session.live.get(stream_id)
            if channel is not None and not channel.complete.is_set():
                channel.follower = send
                await channel.hold_open()
                return
            if stream_id == session.standalone_id and not session.listening:
                session.listening = True
                try:
                    await self._standalone(session, send)
                finally:
                    session.listening = False
                return
            await send({"type": "http.response.body", "body": b""})
        except OSError:
            pass

    async def _delete(self, headers: dict[str, str], send: Send) -> None:
        version = headers.get(VERSION_HEADER)
        if (
            not self.settings.allow_delete
            or not self.handshake_revisions
            or (version is not None and is_stateless(version))
        ):
            await respond(send, 405, headers={"allow": self._allowed()})
            return
        session, refusal = self._session_of(headers)
        if refusal is not None or session is None:
            await _refuse(send, refusal or Refusal(400, "Bad Request"))
            return
        self.sessions.remove(session.id)
        await session.end()
        await respond(send, 200, b"")


def _prime(session: Any, revision: str, *, initialized: bool) -> None:
    """Take a session of a handshake revision through ``initialize`` as if a client of
    ``revision`` had sent it (a POST without sessions stands alone), and through
    ``notifications/initialized`` unless the POST carries that."""
    opening = msgspec.json.encode(
        {
            "jsonrpc": "2.0",
            "id": "mcpspec-prime",
            "method": "initialize",
            "params": {
                "protocolVersion": revision,
                "capabilities": {},
                "clientInfo": {"name": "unknown", "version": "0"},
            },
        }
    )
    session.receive(opening)
    session.send(ResultResponse(id="mcpspec-prime", result=session.initialize_result()))
    if initialized:
        session.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')


@functools.lru_cache(maxsize=1024)
def _tool_headers(tool: Any) -> tuple[mirror.ParamHeader, ...]:
    """A tool's ``x-mcp-header`` annotations (none when they are invalid: a client
    drops such a tool, and sends no ``Mcp-Param`` header for it)."""
    try:
        return mirror.param_headers(tool.input_schema)
    except mirror.MirrorError:
        return ()


#: The rules of a 2026-07-28 request's ``_meta``: broken, they are answered with 400.
_META_RULES: Final = frozenset(
    {
        Rule.MISSING_PROTOCOL_VERSION,
        Rule.MISSING_CLIENT_CAPABILITIES,
        Rule.INVALID_REQUEST_META,
        Rule.UNSUPPORTED_PROTOCOL_VERSION,
    }
)

#: The errors that say a body was not a valid JSON-RPC message.
_MALFORMED: Final = frozenset({int(ErrorCode.PARSE_ERROR), int(ErrorCode.INVALID_REQUEST)})


def _refuses_body(violation: ProtocolViolation) -> bool:
    """Whether a violation refuses the POST's body (400), rather than answering a
    well-formed request with an error (which travels like any answer)."""
    return violation.request_id is None or violation.error.code in _MALFORMED


def _answerable_id(request_id: Any) -> Any:
    valid = isinstance(request_id, (int, str)) and not isinstance(request_id, bool)
    return request_id if valid else None


def _stateless_status(held: list[bytes]) -> int:
    """The status of a 2026-07-28 JSON answer: the one its error's code maps to."""
    if len(held) != 1:
        return 200
    try:
        error = _ERROR_CODE.decode(held[0]).error
    except (msgspec.DecodeError, msgspec.ValidationError):
        return 200
    if error is None:
        return 200
    return _STATELESS_STATUS.get(error.code, 200) if isinstance(error.code, int) else 200


class _ErrorCodeOnly(msgspec.Struct):
    code: Any = None


class _ErrorOnly(msgspec.Struct):
    error: _ErrorCodeOnly | None = None


_ERROR_CODE: Final = msgspec.json.Decoder(_ErrorOnly)


def _route_path(scope: Scope) -> str:
    """The request's path within the app (a host framework mounting the app names its
    prefix in ``root_path``)."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root) :]
    return path


async def _undeliverable(data: bytes) -> None:
    """Where a message goes that no stream can carry (answers are JSON only and there
    is no GET stream): a notification is dropped; a request of the server fails at
    once, so its handler answers instead of waiting for ever."""
    if is_request(data):
        raise RequestError.of(
            ErrorCode.INTERNAL_ERROR,
            "no stream can carry a request of the server to this client "
            "(JSON answers only, and no GET stream)",
        )
    logger.debug("a notification no stream can carry is dropped")


async def _internal_error(send: Send) -> None:
    """500 with a JSON-RPC error, unless a response was started already (the ASGI
    server then refuses a second start: the response it has is cut short)."""
    body = _error_body(int(ErrorCode.INTERNAL_ERROR), "Internal error")
    with contextlib.suppress(Exception):
        await respond(send, 500, body, content_type=JSON)


async def _until_disconnect(receive: Receive, work: Awaitable[None]) -> None:
    """Run ``work`` (a long-lived stream) until it ends or its client goes away."""
    async with anyio.create_task_group() as task_group:

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            task_group.cancel_scope.cancel()

        task_group.start_soon(watch)
        await work
        task_group.cancel_scope.cancel()


async def _refuse(send: Send, refusal: Refusal) -> None:
    body = _error_body(-32000, refusal.reason)
    await respond(send, refusal.status, body, content_type=JSON, headers=dict(refusal.headers))


async def _bad_request(
    send: Send, reason: str, *, code: int = int(ErrorCode.INVALID_REQUEST)
) -> None:
    await respond(send, 400, _error_body(code, reason), content_type=JSON)
