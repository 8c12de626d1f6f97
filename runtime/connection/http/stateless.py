"""2026-07-28 over Streamable HTTP: every POST stands alone.

A POST's mirrored headers are checked against its body (-32020 on a mismatch), then its
request is handled in the POST's own task by a connection of the server made for it:
one taken from a small pool when the last request of that connection left nothing
behind, since building a session costs more than handling an echo. The answer is JSON,
or an SSE stream when progress or log messages come before it (:mod:`.routing`); the
client closing the connection cancels the handler. A pooled connection carries only
messages about the request of the POST it carries now (:mod:`.routing`): a task a
handler left behind sends about no request once its request ended, and finds no
stream to send on, even when the connection carries another client's POST by then
(whose request may have the same id). ``subscriptions/listen`` keeps its stream open,
with keep-alive comments, until the client goes away; the changes announced meanwhile
are queued for it (the announcer never waits on a listener), and a listener that lets
more than ``max_queued_messages`` pile up is dropped: its stream ends. The open
listen streams are bounded per principal (:mod:`.listeners`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import anyio
import msgspec

from mcpspec.runtime.envelope import ErrorResponse
from mcpspec.runtime.errors import ErrorCode
from mcpspec.runtime.session import mirrored_headers

from ..changes import DROP_GRACE
from ..handling import Handling
from ..peer import Peer
from ..principal import current_principal
from .asgi import Receive, Send, client_gone, respond
from .listeners import ListenerTable
from .routing import Channel, ChannelTerms, PostStream, RouteKey, request_keys
from .security import Refusal
from .sse import KEEPALIVE
from .wire import (
    JSON,
    BodyPeek,
    answerable_id,
    error_body,
    expect_answers,
    refuse,
    stateless_status,
)

if TYPE_CHECKING:
    from .app import HttpApp

__all__ = ["StatelessEndpoint"]

#: How many free 2026-07-28 connections an app keeps.
_POOL_SIZE: Final = 64


class _StatelessConnection:
    """A connection of the server for 2026-07-28 POSTs: one at a time, each on its own
    channel."""

    __slots__ = ("connection", "peer", "stream")

    def __init__(self, app: HttpApp, *, listen: bool = False) -> None:
        # Reused from POST to POST: what is about no request of the POST it carries
        # now has no stream (there is no standalone stream in 2026-07-28).
        self.stream = PostStream(None)
        # A listen request takes change notifications, buffered: an announcer only
        # queues, and the request's own task sends.
        self.connection = app.server.connection(
            self.stream,
            revisions=app.stateless_revisions,
            changes=listen,
            change_buffer=app.settings.max_queued_messages if listen else None,
        )
        self.peer: Peer[Any] = self.connection.peer

    def clean(self) -> bool:
        """Whether the last request left nothing behind (so the next may reuse it)."""
        return self.connection.session.idle and not self.peer.handlers_running


class _ClientWatch:
    """Cancels a POST's request when its client goes away (2026-07-28: closing the
    stream is cancelling), from a task of the POST's task group.

    Once the response is complete, an ASGI server answers a pending ``receive`` with
    ``http.disconnect`` (the ASGI specification; uvicorn wakes the pending call at once),
    and the watch ends by itself: cancelling it would cost the POST about as much again
    as the watch itself. :meth:`stop` cancels it only when it did not end so: the
    response is not complete, or the server stays silent past one turn of its loop.
    The watch ends in a scope of its own rather than by cancelling its task: an asyncio
    task that ends cancelled keeps its exception in a reference cycle with its frames,
    left for the garbage collector once per POST."""

    __slots__ = ("_handling", "_receive", "_scope", "ended")

    def __init__(self, receive: Receive, handling: Handling) -> None:
        self._receive = receive
        self._handling = handling
        self._scope = anyio.CancelScope()
        #: Whether the watch has ended (the client went, or the response is complete).
        self.ended = False

    async def run(self) -> None:
        with self._scope:
            await client_gone(self._receive)
            self._handling.cancel()  # nothing, once the request is over
        self.ended = True

    async def stop(self, *, response_complete: bool) -> None:
        """The request is over: let the watch end (see the class)."""
        if response_complete and not self.ended:
            await anyio.lowlevel.checkpoint()
        if not self.ended:
            self._scope.cancel()


class StatelessEndpoint:
    """The 2026-07-28 POSTs of an :class:`~.app.HttpApp`."""

    def __init__(self, app: HttpApp) -> None:
        self.app = app
        #: Connections free for the next POST.
        self._idle: list[_StatelessConnection] = []
        settings = app.settings
        #: The open ``subscriptions/listen`` requests (their scopes), oldest first:
        #: past ``max_sessions`` of one principal, its oldest ends.
        self._listeners = ListenerTable(
            settings.max_sessions,
            settings.auth.max_total_sessions if settings.auth is not None else None,
        )
        #: How a POST is answered, by whether it is a listen request and whether its
        #: body was refused by the mirrored headers check.
        self._terms = {
            (listen, refused): ChannelTerms(
                sse=listen or not settings.json_response,
                status_of=_refused_status if refused else stateless_status,
                stall=settings.stall_seconds,
            )
            for listen in (False, True)
            for refused in (False, True)
        }

    async def post(
        self, headers: dict[str, str], body: bytes, peek: BodyPeek, receive: Receive, send: Send
    ) -> None:

        server = self.app.server
        is_request = peek.is_request
        refused = False
        if not peek.json or peek.batch:
            reason = "Parse error" if not peek.json else "Invalid request: batches are not taken"
            code = ErrorCode.PARSE_ERROR if not peek.json else ErrorCode.INVALID_REQUEST
            await respond(send, 400, error_body(int(code), reason), content_type=JSON)
            return
        if is_request and not (
            peek.probe is not None
            and mirrored_headers.plainly_mirrored(headers, peek.probe, self._params_of)
        ):
            try:
                mismatch = mirrored_headers.check_headers(headers, body, self._params_of)
            except mirrored_headers.MirrorError:
                # Not a valid request whatever its headers say: the session's validation
                # refuses it with its own error (-32600, -32602), with 400 as for a
                # missing _meta; not -32020, which would send the client to relist its
                # tools and retry in vain.
                mismatch = None
                refused = True
            if mismatch is not None:
                error = mirrored_headers.mismatch_error(mismatch)
                response = ErrorResponse(id=answerable_id(peek.id), error=error)
                await respond(send, 400, msgspec.json.encode(response), content_type=JSON)
                return
        listen = peek.method == "subscriptions/listen"
        principal = current_principal.get()
        owner = None if principal is None else principal.key
        if listen and not self._listeners.has_room(owner):
            # Full of other principals' streams: none of them is ended.
            await refuse(send, Refusal(503, "Service Unavailable: too many listen streams"))
            return
        # The answer to a listen request is an SSE stream whatever json_response says:
        # its first message is the acknowledgement, long before the response.
        channel = Channel(send, self._terms[listen, refused])
        # A connection whose last request ended leaves nothing behind: the next POST
        # takes it over instead of building a session (and its dispatch table) anew.
        if listen:
            pooled = _StatelessConnection(self.app, listen=True)
        else:
            pooled = self._idle.pop() if self._idle else _StatelessConnection(self.app)
        keys: list[RouteKey] = (
            [peek.id, None] if type(peek.id) in (int, str) and is_request else request_keys(body)
        )
        routes = pooled.stream.open_route(channel, keys)
        peer = pooled.peer
        feed = pooled.connection.feed
        events: list[Any] = []
        listening: anyio.CancelScope | None = None
        try:
            if not is_request:
                events = await peer.feed(body, inline=True)
            elif not listen:
                # The handler runs in this task; the client closing the connection, or
                # no longer reading, cancels it.
                handling = Handling()
                channel.on_gone = handling.cancel
                watch = _ClientWatch(receive, handling)
                async with anyio.create_task_group() as task_group:
                    task_group.start_soon(watch.run)
                    try:
                        events, answer = await peer.feed_request(body, handling)
                        if answer is not None:
                            await channel.answer(*answer)
                    finally:
                        await watch.stop(response_complete=channel.done)
                if answer is not None and channel.done:
                    return
            else:
                assert feed is not None
                channel.open()
                with server.announcing(pooled.connection):
                    async with anyio.create_task_group() as task_group:
                        channel.on_gone = task_group.cancel_scope.cancel
                        task_group.start_soon(
                            self._watch, receive, channel, task_group.cancel_scope
                        )
                        feed.on_overflow = task_group.cancel_scope.cancel
                        task_group.start_soon(feed.pump)
                        listening = task_group.cancel_scope
                        # Past max_sessions of this principal's, its oldest ends
                        # (as a client gone without closing may leave many open).
                        self._listeners.add(listening, owner)
                        events = await peer.feed(body, inline=True)
                        task_group.cancel_scope.cancel()
                if feed.dropped:
                    return  # the client stopped reading: its stream ends below
            await expect_answers(channel.open(), events)
        finally:
            pooled.stream.close_route(channel, routes)
            if listen:
                if listening is not None:
                    self._listeners.remove(listening)
            elif pooled.clean() and len(self._idle) < _POOL_SIZE:
                self._idle.append(pooled)
            if not channel.done:
                # A listener's client may have stopped reading: its stream gets a
                # moment to end, and is left as it is after that.
                with anyio.move_on_after(DROP_GRACE if listen else None, shield=True):
                    await channel.open().close()

    def _params_of(self, name: str) -> Sequence[mirrored_headers.ParamHeader]:
        """The ``x-mcp-header`` annotations of the server's tool ``name``."""
        tool = self.app.server.tools.get(name)
        return () if tool is None else tool.param_headers

    async def _watch(self, receive: Receive, channel: Channel, scope: anyio.CancelScope) -> None:
        """Cancel the request when its client goes away (2026-07-28: closing the
        stream is cancelling), and keep a quiet SSE stream alive."""
        while True:
            with anyio.move_on_after(self.app.settings.keepalive_seconds):
                message = await receive()
                if message["type"] == "http.disconnect":
                    scope.cancel()
                    return
                continue
            await channel.keepalive(KEEPALIVE)


def _refused_status(error_codes: list[int | None]) -> int:
    """The status of the answer to a body the mirrored headers could not be checked
    against (it is no valid request): 400 for its error."""
    if len(error_codes) == 1 and error_codes[0] is not None:
        return 400
    return stateless_status(error_codes)
