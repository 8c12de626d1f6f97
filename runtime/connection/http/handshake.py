"""The handshake eras (2025-03-26 to 2025-11-25) over Streamable HTTP: sessions.

``initialize`` makes a session (:mod:`.sessions`) whose connection lives in the app's
task group; each later POST names it by ``Mcp-Session-Id`` and is fed to that
connection with the POST as the route of what is about its requests (:mod:`.routing`).
``GET`` opens the session's standalone stream, or resumes a broken stream from
``Last-Event-ID``; ``DELETE`` ends the session. Without sessions, each POST gets a
connection of its own, primed as if ``initialize`` had named the request's
``MCP-Protocol-Version``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import msgspec

from mcpspec.runtime.envelope import RequestId, ResultResponse
from mcpspec.runtime.errors import ErrorCode, clip
from mcpspec.runtime.session.events import RequestCancelled
from mcpspec.runtime.session.version_negotiation import is_stateless

from ..errors import RequestError
from ..peer import HandedBack
from ..principal import current_principal
from .asgi import Send, respond, start_response
from .routing import Channel, ChannelTerms, PostStream, is_request, request_keys
from .security import Refusal, check_accept
from .session_store import StoreUnavailable
from .sessions import HandshakeSession, new_id
from .sse import KEEPALIVE, SSE_HEADERS, encode_event
from .wire import (
    EVENT_STREAM,
    JSON,
    SESSION_HEADER,
    VERSION_HEADER,
    BodyPeek,
    bad_request,
    error_body,
    expect_answers,
    refuse,
)

if TYPE_CHECKING:
    from ..server import ServerConnection
    from .app import HttpApp

#: The answer to a request when the cluster's store does not answer in time.
UNAVAILABLE = Refusal(
    503, "Service Unavailable: the session store did not answer", {"retry-after": "1"}
)

__all__ = ["HandshakeEndpoint"]

logger = logging.getLogger("mcpspec.http")


class HandshakeEndpoint:
    """The handshake-era requests of an :class:`~.app.HttpApp`."""

    def __init__(self, app: HttpApp) -> None:
        self.app = app
        #: How the POSTs of a server without sessions are answered.
        self._sessionless = self._terms_of(None)

    def post(
        self, headers: dict[str, str], body: bytes, peek: BodyPeek, send: Send
    ) -> Awaitable[None]:
        """Answer a handshake-era POST. Returns what to await (the session's feeding, or
        the refusal), having awaited nothing itself: one coroutine less per request."""
        settings = self.app.settings
        if peek.batch and not settings.batches:
            return respond(
                send,
                400,
                error_body(
                    int(ErrorCode.INVALID_REQUEST), "Invalid request: batches are not taken"
                ),
                content_type=JSON,
            )
        if not peek.json:
            return respond(
                send, 400, error_body(int(ErrorCode.PARSE_ERROR), "Parse error"), content_type=JSON
            )
        version = headers.get(VERSION_HEADER)
        initialize = peek.method == "initialize"
        if version is not None and not initialize and version not in self.app.handshake_revisions:
            return self._unsupported_version(version, send)
        if initialize and settings.strict_initialize:
            requested = peek.requested_version
            if requested not in self.app.handshake_revisions:
                return respond(
                    send,
                    200,
                    error_body(
                        int(ErrorCode.INVALID_PARAMS),
                        "Unsupported protocol version",
                        peek.id,
                        {
                            "supported": list(self.app.handshake_revisions),
                            "requested": requested if isinstance(requested, str) else None,
                        },
                    ),
                    content_type=JSON,
                )
        session_id = headers.get(SESSION_HEADER)
        if not settings.sessions:
            if not initialize and version is None and settings.require_protocol_version:
                return bad_request(send, "MCP-Protocol-Version is required")
            return self._post_sessionless(body, peek, version, send)
        if session_id is None:
            if not initialize:
                return bad_request(send, "Bad Request: Missing session ID", code=-32000)
            return self._initialize(body, send)
        if self.app.shared is not None:
            return self._post_shared(session_id, body, peek, version, initialize, send)
        session = self.app.sessions.get(session_id, _owner())
        if session is None:
            return self._session_not_found(session_id, send)
        if initialize:
            return bad_request(send, "the session is initialized already")
        if version is None and settings.require_protocol_version:
            return bad_request(send, "MCP-Protocol-Version is required")
        carried = peek.id if peek.method is not None else None
        return self._feed_session(session, body, send, {}, not peek.batch, carried)

    async def _post_shared(
        self,
        session_id: str,
        body: bytes,
        peek: BodyPeek,
        version: str | None,
        initialize: bool,
        send: Send,
    ) -> None:
        """A POST of a session shared by the workers of a cluster (:mod:`.shared_sessions`)."""
        shared = self.app.shared
        assert shared is not None
        try:
            session = await shared.find(self, session_id, _owner())
            if session is not None and not initialize and await shared.forward(session, body, peek):
                await respond(send, 202)
                return
        except StoreUnavailable:
            await refuse(send, UNAVAILABLE)
            return
        if session is None:
            await respond(send, 404, error_body(-32001, "Session not found"), content_type=JSON)
            return
        if initialize:
            await bad_request(send, "the session is initialized already")
            return
        if version is None and self.app.settings.require_protocol_version:
            await bad_request(send, "MCP-Protocol-Version is required")
            return

        async def keep(answer: HandedBack | None) -> bool:
            # What the request set is written back before it is answered.
            try:
                await shared.keep(session)
            except StoreUnavailable:
                logger.warning("session %s: what the client set is not shared", session.id[:8])
            return True

        carried = peek.id if peek.method is not None else None
        await self._feed_session(session, body, send, {}, not peek.batch, carried, keep)

    async def _session_not_found(self, session_id: str, send: Send) -> None:
        """404 for a session id not kept, or another principal's (one kept but idle
        past the limit ends now)."""
        expired = self.app.sessions.expired(session_id)
        if expired is not None and expired.owner == _owner():
            self.app.sessions.remove(session_id)
            await expired.end()
        await respond(send, 404, error_body(-32001, "Session not found"), content_type=JSON)

    async def _unsupported_version(self, version: str, send: Send) -> None:
        """400 for an ``MCP-Protocol-Version`` this endpoint does not serve."""
        await respond(
            send,
            400,
            error_body(
                int(ErrorCode.INVALID_REQUEST),
                f"Bad Request: unsupported MCP-Protocol-Version {clip(version, 64)!r}",
                data={"supported": list(self.app.handshake_revisions)},
            ),
            content_type=JSON,
        )

    def allowed(self) -> str:
        """The methods the endpoint takes (the ``Allow`` of a 405): ``GET`` and
        ``DELETE`` only with sessions, since both name one."""
        settings = self.app.settings
        sessions = settings.sessions and bool(self.app.handshake_revisions)
        methods = ["POST"]
        if sessions and settings.standalone_stream:
            methods.append("GET")
        if sessions and settings.allow_delete:
            methods.append("DELETE")
        return ", ".join(methods)

    def _channel(
        self,
        send: Send,
        session: HandshakeSession | None,
        headers: dict[str, str],
        carried: RequestId | None = None,
    ) -> Channel:
        """The channel of a POST (``session``: of that session; ``None``: a POST
        without sessions)."""
        if session is None:
            return Channel(send, self._sessionless, headers, carried)
        terms = session.channel_terms
        if terms is None:
            terms = self._terms_of(session)
            # Kept once the revision is known: it decides the priming event.
            if session.revision is not None:
                session.channel_terms = terms
        return Channel(send, terms, headers, carried, session.note_channel)

    def _terms_of(self, session: HandshakeSession | None) -> ChannelTerms:
        """How the POSTs of ``session`` (``None``: of a server without sessions) are
        answered."""
        settings = self.app.settings
        stamp = session.stamp if session is not None and session.event_store is not None else None
        return ChannelTerms(
            sse=not settings.json_response,
            divert=(
                session.to_standalone
                if session is not None and settings.standalone_stream
                else _undeliverable
            ),
            stamp=stamp,
            priming=stamp is not None and session is not None and session.revision == "2025-11-25",
            retry_ms=settings.retry_ms,
            stall=settings.stall_seconds,
        )

    async def _feed_session(
        self,
        session: HandshakeSession,
        body: bytes,
        send: Send,
        headers: dict[str, str],
        inline: bool,
        carried: RequestId | None = None,
        admit: Callable[[HandedBack | None], Awaitable[bool | HandedBack]] | None = None,
    ) -> None:
        """Feed a POST's body to ``session`` with the POST as the route of what is about
        its requests (until it ends); ``inline``: the body is one message (``carried``:
        its request's id), not a batch. ``admit`` (``initialize``) sees the
        handed-back answer before it is sent and says whether the session is kept (or
        gives the answer to send instead, the session not kept); a session not kept
        ends once the response is over."""
        peer = session.peer
        assert peer is not None
        channel = self._channel(send, session, headers, carried)
        stream = session.stream
        # A batch's reply goes to this POST whichever task flushes it.
        keys = [carried, None] if inline and type(carried) in (int, str) else request_keys(body)
        routes = stream.open_route(channel, keys)
        answer = None
        admitted = False
        try:
            # Each POST has a task of its own: a single request is handled in it. The
            # requests of a batch run concurrently, each in a task of the connection's.
            if inline:
                # The handler may wait, be cancelled, or be outlived by the session: its
                # POST's stream is open (and known to the session) while it runs.
                channel.open()
                events, answer = await peer.feed_request(body)
            else:
                channel.open()
                events = await peer.feed(body)
            if admit is not None:
                verdict = await admit(answer)
                admitted = verdict is True
                if isinstance(verdict, HandedBack):
                    answer = verdict
            if answer is not None:
                await channel.answer(*answer)
            await _cancel_members(stream, events)
            if not channel.done:
                await expect_answers(channel.open(), events)
                if not inline:
                    # Until its requests are answered; a session that ends closes it.
                    await channel.hold_open()
            # Else the handler is over: answered, or cancelled (then the channel
            # answers the POST with a stream that ends at once).
        finally:
            stream.close_route(channel, routes)
            if channel.opened:
                session.live.pop(channel.stream_id, None)
            # Idle time counts from the end of the session's last POST.
            session.last_active = time.monotonic()
            if not channel.done or (admit is not None and not admitted):
                with anyio.CancelScope(shield=True):
                    if not channel.done:
                        await channel.open().close()
                    if admit is not None and not admitted:
                        await session.end()

    async def _initialize(self, body: bytes, send: Send) -> None:
        owner = _owner()
        if not self.app.sessions.has_room(owner):
            # Full of other principals' sessions, none idle: none of them is ended.
            await refuse(send, Refusal(503, "Service Unavailable: too many sessions"))
            return
        session_id = new_id()
        shared = self.app.shared
        session = (
            HandshakeSession(
                session_id,
                queue_limit=self.app.settings.max_queued_messages,
                event_store=self.app.event_store,
                owner=owner,
            )
            if shared is None
            else shared.new_session(session_id, owner)
        )
        task_group = await self.app.tasks()
        await task_group.start(self._run_session, session)
        # The session is kept, and its id sent, only once initialize succeeded: a
        # refused one must not take (or free by eviction) a place of the table.
        headers: dict[str, str] = {}

        async def admit(answer: HandedBack | None) -> bool | HandedBack:
            if answer is None or answer.error_code is not None:
                return False
            if shared is not None:
                refused = await shared.admit(session, body, answer)
                if refused is not None:
                    return refused
            headers["mcp-session-id"] = session_id
            for evicted in self.app.sessions.add(session):
                logger.info("session %s ended to make room", evicted.id[:8])
                # Not in this POST's task: ending waits on the evicted session's client.
                task_group.start_soon(evicted.end)
            return True

        await self._feed_session(session, body, send, headers, True, admit=admit)

    async def _run_session(
        self,
        session: HandshakeSession,
        *,
        prime: Callable[[ServerConnection], None] | None = None,
        task_status: anyio.abc.TaskStatus[None],
    ) -> None:
        """Run the session's connection in the app's task group until it ends
        (``prime``: what its connection is given first, a copy of a shared session)."""
        try:
            # Buffered: an announcer (another client's handler) only queues; the
            # session's own task sends, and only it waits on a client that does not
            # read. One more than max_queued_messages behind, the session ends (its
            # next request is 404, and it starts over).
            async with self.app.server.connect(
                session.stream,
                linger=1.0,
                revisions=self.app.handshake_revisions,
                change_buffer=self.app.settings.max_queued_messages,
            ) as connection:
                session.peer = connection.peer
                session.connection = connection
                # Its tasks are the session's, on every worker that serves a copy.
                self.app.server.task_manager.own(connection.peer, session.id)
                if prime is not None:
                    prime(connection)
                task_status.started()
                await connection.wait_closed()
        finally:
            session.mark_closing()
            session.ended.set()
            with anyio.CancelScope(shield=True):
                await session.close_streams()
            self.app.sessions.remove(session.id, only=session)
            # A shared session's events outlive this worker's copy (the cluster ends them).
            if self.app.event_store is not None and self.app.shared is None:
                with anyio.CancelScope(shield=True):
                    await self.app.event_store.forget(session.id)

    async def _post_sessionless(
        self, body: bytes, peek: BodyPeek, version: str | None, send: Send
    ) -> None:
        """A handshake-era POST without sessions: a connection of its own, primed as
        if ``initialize`` had named the ``MCP-Protocol-Version`` of the request."""
        channel = self._channel(send, None, {})
        # It lasts one request: it takes no change notifications, and it has no
        # standalone stream for what is about no request of its POST.
        stream = PostStream(None)
        stream.open_route(channel, request_keys(body))
        connection = self.app.server.connection(
            stream, revisions=self.app.handshake_revisions, changes=False
        )
        if peek.method != "initialize":
            revision = version or "2025-03-26"
            _prime(
                connection.session, revision, initialized=peek.method != "notifications/initialized"
            )
        try:
            events, answer = await connection.peer.feed_request(body)
            if answer is not None:
                await channel.answer(*answer)
            if not channel.done:
                await expect_answers(channel.open(), events)
        finally:
            if not channel.done:
                with anyio.CancelScope(shield=True):
                    await channel.open().close()

    def _session_of(
        self, headers: dict[str, str]
    ) -> tuple[HandshakeSession | None, Refusal | None]:
        session_id = headers.get(SESSION_HEADER)
        if session_id is None:
            return None, Refusal(400, "Bad Request: Missing session ID")
        session = self.app.sessions.get(session_id, _owner())
        if session is None:
            return None, Refusal(404, "Session not found")
        return session, None

    async def get(self, headers: dict[str, str], send: Send) -> None:
        settings = self.app.settings
        version = headers.get(VERSION_HEADER)
        if (
            not settings.standalone_stream
            or not settings.sessions
            or not self.app.handshake_revisions
            or (version is not None and is_stateless(version))
        ):
            await respond(send, 405, headers={"allow": self.allowed()})
            return
        if version is not None and version not in self.app.handshake_revisions:
            await self._unsupported_version(version, send)
            return
        refusal = check_accept(headers, EVENT_STREAM)
        if refusal is not None:
            await refuse(send, refusal)
            return
        session, refusal = await self._find(headers)
        if refusal is not None or session is None:
            await refuse(send, refusal or Refusal(400, "Bad Request"))
            return
        last_event_id = headers.get("last-event-id")
        if last_event_id is not None and self.app.event_store is not None:
            await self._resume(session, last_event_id, send)
            return
        if session.listening:
            await refuse(send, Refusal(409, "Conflict: a GET stream is open for this session"))
            return
        session.listening = True
        try:
            await self._standalone(session, send, start=True)
        except OSError:
            pass
        finally:
            session.listening = False

    async def _find(
        self, headers: dict[str, str]
    ) -> tuple[HandshakeSession | None, Refusal | None]:
        """The session a GET or DELETE names (shared: found, or copied, through the
        cluster's store)."""
        shared = self.app.shared
        session_id = headers.get(SESSION_HEADER)
        if shared is None or session_id is None:
            return self._session_of(headers)
        try:
            session = await shared.find(self, session_id, _owner())
        except StoreUnavailable:
            return None, UNAVAILABLE
        return session, None if session is not None else Refusal(404, "Session not found")

    async def _standalone(
        self, session: HandshakeSession, send: Send, *, start: bool = False
    ) -> None:
        """Serve the standalone stream (``start``: its response is not started yet);
        shared, it takes what the other workers send it from before it starts."""
        if self.app.shared is not None:
            async with self.app.shared.relaying(session):
                if start:
                    await start_response(send, 200, EVENT_STREAM, SSE_HEADERS)
                await self._standalone_stream(session, send)
            return
        if start:
            await start_response(send, 200, EVENT_STREAM, SSE_HEADERS)
        await self._standalone_stream(session, send)

    async def _standalone_stream(self, session: HandshakeSession, send: Send) -> None:
        keepalive = self.app.settings.keepalive_seconds
        while not session.closing:
            data = await session.next_standalone(keepalive)
            if session.closing:
                break
            chunk = KEEPALIVE if data is None else await session.standalone_event(data)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})

    async def _resume(self, session: HandshakeSession, last_event_id: str, send: Send) -> None:
        """Replay the stream ``last_event_id`` belongs to after it, then go on live when
        it is still open (a POST's stream) or is the standalone stream."""
        stream_id = last_event_id.rsplit(".", 1)[0]
        channel = session.live.get(stream_id)
        try:
            if channel is not None and not channel.done:
                # The POST's writers wait meanwhile: an event they stamp while the
                # replay runs would be in neither the replay nor the live part.
                async with channel.hold_writes():
                    if not await self._replay(session, last_event_id, send):
                        return
                    follow = not channel.done
                    if follow:
                        channel.follower = send
                if follow:
                    try:
                        await channel.hold_open()
                    finally:
                        if channel.follower is send:
                            channel.follower = None
                # The channel ended the POST's own response only.
                await send({"type": "http.response.body", "body": b""})
                return
            if not await self._replay(session, last_event_id, send):
                return
            if session.is_standalone(stream_id) and not session.listening:
                session.listening = True
                try:
                    await self._standalone(session, send)
                finally:
                    session.listening = False
                return
            await send({"type": "http.response.body", "body": b""})
        except OSError:
            pass

    async def _replay(self, session: HandshakeSession, last_event_id: str, send: Send) -> bool:
        """Start the response of a GET resuming a stream with the events after
        ``last_event_id``; ``False`` (refused) when the store does not know that id."""
        assert self.app.event_store is not None
        events = await self.app.event_store.replay(session.id, last_event_id)
        if events is None:
            # Not 404: that says the session is gone, and the client would drop a
            # session that is alive. The id is what is wrong.
            await refuse(send, Refusal(400, "Unknown Last-Event-ID"))
            return False
        await start_response(send, 200, EVENT_STREAM, SSE_HEADERS)
        for event in events:
            if event.data:
                await send(
                    {
                        "type": "http.response.body",
                        "body": encode_event(event.data, event_id=event.event_id),
                        "more_body": True,
                    }
                )
        return True

    async def delete(self, headers: dict[str, str], send: Send) -> None:
        version = headers.get(VERSION_HEADER)
        if (
            not self.app.settings.allow_delete
            or not self.app.settings.sessions
            or not self.app.handshake_revisions
            or (version is not None and is_stateless(version))
        ):
            await respond(send, 405, headers={"allow": self.allowed()})
            return
        if version is not None and version not in self.app.handshake_revisions:
            await self._unsupported_version(version, send)
            return
        session, refusal = await self._find(headers)
        if refusal is not None or session is None:
            await refuse(send, refusal or Refusal(400, "Bad Request"))
            return
        if self.app.shared is not None:
            try:
                await self.app.shared.end(session.id)
            except StoreUnavailable:
                await refuse(send, UNAVAILABLE)
                return
        self.app.sessions.remove(session.id)
        await session.end()
        await respond(send, 200, b"")


def _owner() -> str | None:
    """The key of the principal of the request being served (``None``: no principal)."""
    principal = current_principal.get()
    return None if principal is None else principal.key


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


async def _cancel_members(stream: PostStream, events: list[Any]) -> None:
    """Tell the batch POSTs whose requests the client cancelled (``events`` of a body
    carrying ``notifications/cancelled``) that nothing will answer those."""
    for event in events:
        if isinstance(event, RequestCancelled):
            channel = stream.channel_of(event.request_id)
            if channel is not None and channel.opened:
                await channel.drop(event.request_id)


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
