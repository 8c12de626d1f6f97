"""The symmetric core of a connection: one sans-IO session, one message stream.

:class:`Peer` is what both the ``Client`` and the ``Server`` are built on. It owns a
:class:`~mcpspec.runtime.ServerSession` or :class:`~mcpspec.runtime.ClientSession` and
a :class:`~mcpspec.runtime.connection.transport.MessageStream`, and does the I/O the
session leaves out:

* a reader task feeds every received message to ``session.receive`` and acts on the
  events: it writes what the session hands over (``Outgoing``, the error response of a
  violation), settles the caller waiting on a response, routes progress to the
  request's callback, answers ``ping``, and runs each of the peer's requests in a task
  of its own;
* :meth:`Peer.request` sends a request and waits for its answer: the typed result, or
  :class:`~mcpspec.runtime.connection.errors.RequestError` for an error response,
  :class:`~mcpspec.runtime.connection.errors.ResponseViolation` for an answer that
  breaks a rule, :class:`~mcpspec.runtime.connection.errors.ConnectionClosed` when the
  connection ends first. A timeout or a cancelled caller sends
  ``notifications/cancelled``;
* the peer's requests go to one ``request_handler`` coroutine each, concurrently, each
  in a task of the peer's task group and inside a cancel scope of its own
  (:class:`~.handling.Handling`). Its return value is the result; raising
  ``RequestError`` answers with that error, any other exception with -32603, logged
  once (the connection goes on); without a handler the answer is -32601. Nothing a
  handler or the answering of it raises leaves its task: an answer the session refuses
  or fails to encode is logged and becomes -32603 where one can still be sent. The
  peer's ``notifications/cancelled``, and the connection ending once ``linger`` is
  over, cancel the handler's scope.

Every write goes through one lock, in the order the session produced it, and is
shielded from cancellation, so a message is never cut in half on the wire. (An HTTP
POST holding one request may take its answer back instead, when nothing else is being
written: :meth:`Peer.feed_request`.)
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Final, Generic, NamedTuple, TypeVar

import anyio
import anyio.abc
import anyio.lowlevel
import msgspec
from msgspec import UNSET

from mcpspec.runtime.envelope import ErrorObject, ErrorResponse, RequestId, ResultResponse
from mcpspec.runtime.errors import ErrorCode
from mcpspec.runtime.session.client import ClientSession
from mcpspec.runtime.session.events import (
    ErrorReceived,
    Event,
    NegotiationFailed,
    NotificationReceived,
    Outgoing,
    ProgressReceived,
    ProtocolViolation,
    RequestCancelled,
    RequestReceived,
    ResponseReceived,
    SessionReady,
)
from mcpspec.runtime.session.misuse import LocalProtocolError
from mcpspec.runtime.session.rules import Rule
from mcpspec.runtime.session.server import ServerSession

from .errors import (
    CancelledByPeer,
    ConnectionClosed,
    MessageTooLarge,
    NegotiationRefused,
    RequestError,
    RequestTimeout,
    ResponseViolation,
)
from .handling import CANCELLED, Handling
from .transport import MessageStream

__all__ = [
    "AnswerLater",
    "NotificationHandler",
    "Peer",
    "ProgressCallback",
    "RequestHandler",
    "ViolationHandler",
]

logger = logging.getLogger("mcpspec.connection")

S = TypeVar("S", ServerSession, ClientSession)

#: Answers one request of the peer: the result to send (a generated result value).
RequestHandler = Callable[[RequestReceived], Awaitable[Any]]
#: Called with each notification of the peer (other than progress and cancellation).
NotificationHandler = Callable[[NotificationReceived], Awaitable[None] | None]
#: Called with each violation of the peer (after its error response, if any, is sent).
ViolationHandler = Callable[[ProtocolViolation], Awaitable[None] | None]
#: Called with each progress notification of one request.
ProgressCallback = Callable[[ProgressReceived], Awaitable[None] | None]

#: Seconds a handler cancelled as the connection ends has to end before the stream is
#: closed under it (it is then stuck writing to a peer that does not read).
STUCK_GRACE: Final = 1.0
#: The most requests whose progress is followed after their answer (tasks): the oldest
#: is let go beyond it.
MAX_FOLLOWED: Final = 1024


async def _call(callback: Callable[[Any], Awaitable[None] | None], arg: Any) -> None:
    """Call a callback that may be a plain function or a coroutine function."""
    outcome = callback(arg)
    if inspect.isawaitable(outcome):
        await outcome


class HandedBack(NamedTuple):
    """An answer :meth:`Peer.feed_request` hands back: its bytes, and the code of its
    error (``None`` for a result)."""

    data: bytes
    error_code: int | None

    @classmethod
    def of(cls, data: bytes, answer: ResultResponse | ErrorResponse) -> HandedBack | None:
        """``answer`` as the session wrote it (``data``); ``None`` when nothing was."""
        if not data:
            return None
        code = answer.error.code if isinstance(answer, ErrorResponse) else None
        return cls(data, code if isinstance(code, int) else None)


class _Waiter:
    """A request of this side awaiting its answer."""

    __slots__ = ("done", "error", "method", "progress", "response")

    def __init__(self, method: str, progress: ProgressCallback | None) -> None:
        self.method = method
        self.progress = progress
        self.done = anyio.Event()
        self.response: ResponseReceived | None = None
        self.error: Exception | None = None

    def resolve(self, response: ResponseReceived | None, error: Exception | None) -> None:
        self.response, self.error = response, error
        self.done.set()


class Peer(Generic[S]):
    """One connection: a sans-IO ``session`` speaking over ``stream``.

    Use it as an async context manager: entering starts the reader task, leaving closes
    the stream, cancels what still runs and fails every request still waiting with
    :class:`ConnectionClosed`. :meth:`wait_closed` returns when the stream has ended
    (and the peer's requests in flight have finished or been cancelled).

    ``request_handler`` answers the peer's requests (``ping`` is answered here unless
    the handler is given ``answer_ping=False``); ``notification_handler`` gets the
    peer's notifications, ``violation_handler`` its violations (the default logs
    them). Both are called from the reader, in order: keep them short, and never await
    an answer of the peer inside them (start a task for that). ``linger`` is how long
    the peer's requests in flight may run on once the stream's receiving end has ended
    (their answers can still be written) before they are cancelled.
    """

    def __init__(
        self,
        session: S,
        stream: MessageStream,
        *,
        request_handler: RequestHandler | None = None,
        notification_handler: NotificationHandler | None = None,
        violation_handler: ViolationHandler | None = None,
        answer_ping: bool = True,
        linger: float = 5.0,
    ) -> None:
        self.session: S = session
        self.stream = stream
        self.request_handler = request_handler
        self.notification_handler = notification_handler
        self.violation_handler = violation_handler
        self.answer_ping = answer_ping
        self.linger = linger
        # No checkpoint when the lock is free: the hot paths (an answer, a request) yield
        # right after writing anyway; the public ``send`` adds one of its own.
        self._write_lock = anyio.Lock(fast_acquire=True)
        # A stream that always writes a message whole, even when cancelled, needs no
        # shield around each write.
        self._shield_writes = not getattr(stream, "_completes_sends", False)
        #: The shield of the write under way (shielded writes only).
        self._writing: anyio.CancelScope | None = None
        self._waiters: dict[RequestId, _Waiter] = {}
        #: Progress callbacks of answered requests whose work goes on (tasks), by id.
        self._followed: dict[RequestId, ProgressCallback] = {}
        #: The handlers of the peer's requests running, by id.
        self._handling: dict[RequestId, Handling] = {}
        #: Set (and dropped) when a handler ends; made only while someone waits for it.
        self._handled: anyio.Event | None = None
        #: The reader's and the handlers' tasks.
        self._task_group: anyio.abc.TaskGroup | None = None
        self._ready: SessionReady | None = None
        self._failed: NegotiationFailed | None = None
        self._negotiated = anyio.Event()
        self._receiving_ended = anyio.Event()
        self._ended = anyio.Event()
        self._closed = False
        self._close_reason = "the connection is closed"
        #: Set once the linger is over and the handlers left are being cancelled.
        self._abandoning = False

    # -- lifecycle ------------------------------------------------------------------------------

    async def __aenter__(self) -> Peer[S]:
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        task_group.start_soon(self._run_reader)
        return self

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        task_group = self._task_group
        assert task_group is not None, "the peer was not entered"
        try:
            await self.aclose()
        finally:
            # Even when closing the stream failed: the task group must be left, or the
            # caller's cancel scopes are left corrupted.
            task_group.cancel_scope.cancel()
            exited = await task_group.__aexit__(*exc_info)
        return exited

    async def aclose(self, reason: str = "the connection is closed") -> None:
        """Close the connection: every request still waiting raises
        :class:`ConnectionClosed`, the stream is closed. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._close_reason = reason
        self._fail_waiters(reason)
        if self._writing is not None:
            self._writing.cancel()
        with anyio.CancelScope(shield=True):
            await self.stream.aclose()

    def cancel_write(self) -> None:
        """End the write under way, if any (it raises :class:`ConnectionClosed`): the
        peer no longer reads, and a write to it may never return."""
        if self._writing is not None:
            self._writing.cancel()

    @property
    def closed(self) -> bool:
        """Whether the connection ended (closed here, or the stream ended)."""
        return self._closed or self._receiving_ended.is_set()

    async def wait_receiving_ended(self) -> None:
        """Return when the stream's receiving end has ended (nothing more will arrive;
        answers can still be written until the stream is closed)."""
        await self._receiving_ended.wait()

    async def wait_closed(self) -> None:
        """Return when the stream's receiving end has ended and the peer's requests in
        flight are over (finished, or cancelled after ``linger`` seconds)."""
        await self._ended.wait()

    # -- negotiation ------------------------------------------------------------------------

    @property
    def ready(self) -> SessionReady | None:
        """The session's ``SessionReady`` event, once negotiation finished, without the
        peer's info and capabilities (``session.peer_info`` and
        ``session.declared_peer_capabilities`` read them)."""
        return self._ready

    async def wait_ready(self) -> SessionReady:
        """The ``SessionReady`` event, once negotiation finished. Raises
        :class:`NegotiationRefused` if it failed, :class:`ConnectionClosed` if the
        connection ended first."""
        await self._negotiated.wait()
        if self._ready is not None:
            return self._ready
        if self._failed is not None:
            raise NegotiationRefused(self._failed)
        raise ConnectionClosed(self._close_reason)

    async def open(self, *, timeout: float | None = None) -> SessionReady:
        """Client side: write the session's opening message (``session.start()``:
        ``initialize`` or the ``server/discover`` probe) and wait for negotiation to
        finish (fallbacks and ``notifications/initialized`` are written by the reader).
        Raises :class:`NegotiationRefused`, :class:`ConnectionClosed`, or ``TimeoutError``
        after ``timeout`` seconds."""
        session = self.session
        if not isinstance(session, ClientSession):
            raise TypeError("open() is for a client session")
        async with self._write_lock:
            data = session.start()
            await self._write(data)
        with anyio.fail_after(timeout):
            return await self.wait_ready()

    # -- sending ----------------------------------------------------------------------------

    def next_id(self) -> int:
        """A request id not outstanding (``session.next_id()``)."""
        return self.session.next_id()

    def follow_progress(self, request_id: RequestId, progress: ProgressCallback) -> None:
        """Keep giving ``progress`` the progress of request ``request_id`` after its
        answer: a task-augmented request's token lives as long as its task (the
        session still reports it). At most :data:`MAX_FOLLOWED` requests are followed;
        the oldest is let go beyond that."""
        self._followed.pop(request_id, None)
        self._followed[request_id] = progress
        while len(self._followed) > MAX_FOLLOWED:
            del self._followed[next(iter(self._followed))]

    def unfollow_progress(self, request_id: RequestId) -> None:
        """Stop :meth:`follow_progress` for ``request_id`` (its task ended)."""
        self._followed.pop(request_id, None)

    @property
    def followed(self) -> frozenset[RequestId]:
        """The answered requests whose progress is still followed."""
        return frozenset(self._followed)

    async def _write(self, data: bytes, related: RequestId | None = None) -> None:
        """Write one message (the lock is held; ``related``: the peer's request it is
        about, for the stream to route by), never cut short: shielded, unless the
        stream finishes every write it starts by itself."""
        if not data:
            return
        if self._closed:
            raise ConnectionClosed(self._close_reason)
        if not self._shield_writes:
            await self.stream.send(data, related_request_id=related)
            return
        # Closing the peer still cancels it: a stream's send may never return.
        writing = self._writing = anyio.CancelScope(shield=True)
        try:
            with writing:
                await self.stream.send(data, related_request_id=related)
        finally:
            self._writing = None
        if writing.cancelled_caught:
            raise ConnectionClosed(self._close_reason)

    async def send(
        self,
        message: Any,
        *,
        progress_token: int | str | None = None,
        related_request_id: RequestId | None = None,
    ) -> None:
        """``session.send(message)`` and write the bytes, in session order.
        ``related_request_id`` names the peer's request the message is about (the
        handler of that request sends it), so that the stream carries it where that
        request's messages go (see :meth:`MessageStream.send`). Raises the session's
        ``LocalProtocolError`` (nothing written) or :class:`ConnectionClosed`."""
        async with self._write_lock:
            # A checkpoint (shielded: what is sent once the lock is held is sent), as
            # every async call of anyio is one: a task sending in a loop lets the others
            # run. The connection's own answers and requests skip it (:meth:`_send`).
            await anyio.lowlevel.cancel_shielded_checkpoint()
            await self._send_locked(message, progress_token, related_request_id)

    async def _send(self, message: Any) -> None:
        """:meth:`send` without its checkpoint (an answer: its task ends next; it is
        about the request it answers)."""
        async with self._write_lock:
            await self._send_locked(message, None, None)

    async def _send_locked(
        self, message: Any, progress_token: int | str | None, related: RequestId | None
    ) -> None:
        if self._closed:
            raise ConnectionClosed(self._close_reason)
        data = self.session.send(message, progress_token=progress_token)
        await self._write(data, related)

    async def notify(
        self, notification: Any, *, related_request_id: RequestId | None = None
    ) -> None:
        """Send a notification (a generated notification of ``session.types``), about
        the peer's request ``related_request_id`` if any (see :meth:`send`)."""
        await self.send(notification, related_request_id=related_request_id)

    async def request(
        self,
        request: Any,
        *,
        progress: ProgressCallback | None = None,
        timeout: float | None = None,
        cancel_reason: str | None = None,
        related_request_id: RequestId | None = None,
    ) -> Any:
        """Send ``request`` (a generated request of ``session.types`` with a fresh id:
        :meth:`next_id`) and return its typed result. See :meth:`request_response`."""
        response = await self.request_response(
            request,
            progress=progress,
            timeout=timeout,
            cancel_reason=cancel_reason,
            related_request_id=related_request_id,
        )
        return response.result

    async def request_response(
        self,
        request: Any,
        *,
        progress: ProgressCallback | None = None,
        timeout: float | None = None,
        cancel_reason: str | None = None,
        related_request_id: RequestId | None = None,
    ) -> ResponseReceived:
        """Send ``request`` and return the session's ``ResponseReceived`` for it (the
        typed ``result``; ``input_required`` for a 2026-07-28 ``InputRequiredResult``).

        ``progress`` asks the peer for progress (the request id is the token, unless the
        request carries one) and gets each ``ProgressReceived``. After ``timeout``
        seconds, or when the caller is cancelled, the request is cancelled on the wire
        (``notifications/cancelled`` with ``cancel_reason``) and
        :class:`RequestTimeout` (a ``TimeoutError``) or the cancellation is raised.

        Raises :class:`RequestError` (an error response), :class:`ResponseViolation`
        (an answer that breaks a rule), :class:`ConnectionClosed`, or the session's
        ``LocalProtocolError`` when the request cannot be sent (nothing was sent).

        ``related_request_id``: the peer's request this one is about (its handler asks
        the peer), as for :meth:`send`; its cancellation goes the same way.
        """
        request_id: RequestId = request.id
        related = related_request_id
        method: str = type(request).method
        if request_id in self._waiters:
            raise ValueError(f"request id {request_id!r} is already awaited")
        waiter = _Waiter(method, progress)
        token: int | str | None = None
        if progress is not None and not _has_progress_token(request):
            token = request_id
        if timeout is None:
            await self._write_request(request, waiter, token, related)
        else:
            # The timeout counts from here: a write waiting on a peer that does not read
            # (its own, or another's holding the lock) is bounded too.
            deadline = anyio.current_time() + timeout
            try:
                with anyio.fail_at(deadline):
                    await self._write_request(request, waiter, token, related)
            except TimeoutError:
                if request_id not in self._waiters:  # never sent
                    raise RequestTimeout(request_id, method, timeout) from None
        try:
            if timeout is None:
                await waiter.done.wait()
            else:
                with anyio.fail_at(deadline):
                    await waiter.done.wait()
        except TimeoutError:
            await self._cancel_request(request_id, waiter, cancel_reason or "timed out", related)
            if not waiter.done.is_set():
                raise RequestTimeout(request_id, method, timeout or 0.0) from None
        except BaseException:
            await self._cancel_request(request_id, waiter, cancel_reason or "cancelled", related)
            raise
        if waiter.error is not None:
            raise waiter.error
        assert waiter.response is not None
        return waiter.response

    async def _write_request(
        self, request: Any, waiter: _Waiter, token: int | str | None, related: RequestId | None
    ) -> None:
        """Write ``request`` (``waiter`` awaits its answer; ``token``: the progress token
        to ask for; ``related``: the peer's request it is about); when it cannot be
        sent, nothing waits for it."""
        request_id = request.id
        async with self._write_lock:
            if self.closed:
                raise ConnectionClosed(self._close_reason)
            data = self.session.send(request, progress_token=token)
            # Registered before the write: the answer may come before this task runs on.
            self._waiters[request_id] = waiter
            try:
                await self._write(data, related)
            except BaseException:
                # Not sent (the stream is gone, or cannot carry it): nothing will answer.
                self._waiters.pop(request_id, None)
                if not self._closed and request_id in self.session.outstanding:
                    with contextlib.suppress(LocalProtocolError):
                        self.session.cancel(request_id, "not sent")
                raise

    async def _cancel_request(
        self, request_id: RequestId, waiter: _Waiter, reason: str, related: RequestId | None
    ) -> None:
        """Stop waiting for ``request_id`` and cancel it on the wire (unless it was
        answered meanwhile, or cannot be cancelled), where the request went
        (``related``)."""
        if waiter.done.is_set() or self._waiters.pop(request_id, None) is None:
            return
        # Bounded: the lock may be held by a write to a peer that does not read.
        with anyio.move_on_after(STUCK_GRACE, shield=True):
            async with self._write_lock:
                if self._closed or request_id not in self.session.outstanding:
                    return
                try:
                    data = self.session.cancel(request_id, reason)
                except LocalProtocolError:
                    return  # initialize cannot be cancelled
                with contextlib.suppress(ConnectionClosed):
                    await self._write(data, related)

    # -- receiving ----------------------------------------------------------------------------

    async def _run_reader(self) -> None:
        ended = "the stream ended"
        try:
            try:
                ended = await self._read_all()
            finally:
                self._receiving_ended.set()
                self._negotiated.set()
                if not self._closed:
                    self._close_reason = ended
                self._fail_waiters(self._close_reason)
            await self._drain()
        finally:
            self._ended.set()

    async def _read_all(self) -> str:
        """Read until the stream ends; why it ended, as the stream says."""
        stream = self.stream
        while True:
            try:
                data = await stream.receive()
            except MessageTooLarge as exc:
                await self._refuse_oversized(exc)
                continue
            except ConnectionClosed as exc:
                return str(exc) or "the stream ended"
            await self._on_message(data)

    async def _on_message(self, data: bytes) -> None:
        """Act on one message the reader read. Its events live no longer than this call:
        while the reader waits for the next message, only the handlers hold requests."""
        try:
            events = self.session.receive(data)
        except Exception:  # a bug in the session: keep the connection
            logger.exception("the session failed to read a message")
            return
        for event in events:
            await self._on_event(event)

    async def feed(
        self, data: bytes, *, inline: bool = False, handling: Handling | None = None
    ) -> list[Event]:
        """Take one message that arrived outside the stream (the body of an HTTP POST)
        as the reader takes each message it reads, and return the session's events for
        it. With ``inline``, each of the peer's requests in it is handled here, in the
        caller's task, before ``feed`` returns (the peer need not be entered); else in
        a task of its own, as the reader does; ``handling`` (inline only) is the
        handler's, for the caller to cancel it. Never raises for what
        ``data`` holds."""
        try:
            events = self.session.receive(data)
        except Exception:  # a bug in the session: keep the connection
            logger.exception("the session failed to read a message")
            return []
        if inline:
            await self._take_events(events, handling)
        else:
            for event in events:
                await self._on_event(event)
        return events

    async def feed_request(
        self, data: bytes, handling: Handling | None = None
    ) -> tuple[list[Event], HandedBack | None]:
        """:meth:`feed` with ``inline`` of a body that holds one request, whose answer is
        handed back instead of written when it is the next write: nothing is being
        written then and the handler (``handling``, for the caller to cancel it) was not
        cancelled. The caller must then write those bytes (where the stream would)
        before it waits for anything, so that the writes keep the session's order.
        Returns the session's events and the answer (``None`` when it was written, or
        there is none); any other body is fed as :meth:`feed` feeds it."""
        try:
            events = self.session.receive(data)
        except Exception:  # a bug in the session: keep the connection
            logger.exception("the session failed to read a message")
            return [], None
        request = events[-1] if events else None
        # One request, after the SessionReady of a 2026-07-28 request at most.
        if not isinstance(request, RequestReceived) or (
            len(events) > 1 and (len(events) > 2 or not isinstance(events[0], SessionReady))
        ):
            await self._take_events(events, handling)
            return events, None
        if len(events) > 1:
            await self._on_event(events[0])
        request_id = request.request_id
        handling = self._track(request_id, handling)
        try:
            answer = await self._answer_of(
                request_id, request.method, self._call_handler(request), handling
            )
            if answer is not None:
                if not (self._closed or handling.cancel_called or self._write_lock.locked()):
                    return events, self._encode_answer(request.method, answer)
                await self._send_answer(request.method, answer)
            return events, None
        finally:
            self._handled_one(request_id, handling)

    async def _take_events(self, events: list[Event], handling: Handling | None) -> None:
        """Act on the events of a message fed with ``inline``. Each request's event is
        handed to its handler, and ``events`` keeps a slim copy of it (what the caller
        reads afterwards: its id and method): the handler alone holds the request, and
        lets it go once it has what it needs (see :class:`AnswerLater`)."""
        for index in range(len(events)):
            if isinstance(events[index], RequestReceived):
                await self._take_request(events, index, handling)
            else:
                await self._on_event(events[index])

    def _take_request(
        self, events: list[Event], index: int, handling: Handling | None
    ) -> Coroutine[Any, Any, None]:
        """Hand the request ``events[index]`` to its handler (the coroutine to await),
        leaving its slim copy in its place."""
        event = events[index]
        assert isinstance(event, RequestReceived)
        events[index] = _slim(event)
        return self._handle(event, self._track(event.request_id, handling))

    async def _drain(self) -> None:
        """Let the peer's requests in flight finish for up to ``linger`` seconds, then
        cancel them (each is answered with an error: see :meth:`_handle`). A handler
        that outlives its cancellation by :data:`STUCK_GRACE` seconds is stuck in a
        write the peer does not read: the stream is closed, which fails the write."""
        with anyio.move_on_after(self.linger):
            await self._handlers_ended()
        if not self._handling:
            return
        self._abandoning = True
        for handling in list(self._handling.values()):
            handling.cancel()
        with anyio.move_on_after(STUCK_GRACE):
            await self._handlers_ended()
        if self._handling:
            await self.aclose("the peer does not read what is written")
        await self._handlers_ended()

    async def _handlers_ended(self) -> None:
        """Return when no handler of the peer's requests runs."""
        while self._handling:
            await self._handler_ended()

    async def _handler_ended(self) -> None:
        """Return when one of the handlers running ends."""
        if self._handled is None:
            self._handled = anyio.Event()
        await self._handled.wait()

    async def _on_event(self, event: Event) -> None:
        match event:
            case ResponseReceived():
                waiter = self._waiters.pop(event.request_id, None)
                if waiter is not None:
                    waiter.resolve(event, None)
            case RequestReceived():
                self._start_handler(event)
            case ProgressReceived():
                waiter = self._waiters.get(event.request_id)
                if waiter is not None and waiter.progress is not None:
                    await self._guarded(waiter.progress, event)
                elif (followed := self._followed.get(event.request_id)) is not None:
                    await self._guarded(followed, event)
            case RequestCancelled():
                if isinstance(self.session, ClientSession) and self.session.model == "stateless":
                    # A 2026-07-28 server cancels only this side's subscriptions/listen.
                    waiter = self._waiters.pop(event.request_id, None)
                    if waiter is not None:
                        waiter.resolve(None, CancelledByPeer(event.request_id, event.reason))
                elif (handling := self._handling.get(event.request_id)) is not None:
                    handling.cancel()
            case NotificationReceived():
                if self.notification_handler is not None:
                    await self._guarded(self.notification_handler, event)
            case ErrorReceived():
                self._on_error(event)
            case ProtocolViolation():
                await self._on_violation(event)
            case Outgoing():
                await self._write_owned(event.data)
            case SessionReady():
                # Without the peer's declarations: the session keeps them within a small
                # multiple of their size, where a copy here would keep them decoded for
                # as long as the connection lasts.
                self._ready = msgspec.structs.replace(event, peer_info=None, peer_capabilities=None)
                self._negotiated.set()
            case NegotiationFailed():
                self._failed = event
                self._negotiated.set()

    def _on_error(self, event: ErrorReceived) -> None:
        if event.request_id is None:
            logger.warning(
                "the peer could not read a message: %s %s",
                event.error.code,
                event.error.message,
            )
            return
        waiter = self._waiters.pop(event.request_id, None)
        if waiter is not None:
            waiter.resolve(
                None, RequestError(event.error, request_id=event.request_id, method=event.method)
            )

    async def _on_violation(self, event: ProtocolViolation) -> None:
        if event.response is not None:
            await self._answer(event.response)
        elif event.ends_request:
            # An answer to one of this side's requests that breaks a rule: no other will
            # come. (A violation of the peer's own request may carry the same id: the two
            # directions' ids are separate namespaces.)
            request_id = event.request_id
            waiter = None if request_id is None else self._waiters.pop(request_id, None)
            if waiter is not None:
                waiter.resolve(None, ResponseViolation(event))
        if self.violation_handler is not None:
            await self._guarded(self.violation_handler, event)
        else:
            logger.warning(
                "protocol violation by the peer: %s: %s (at %s)",
                event.rule.value,
                event.reason,
                event.path,
            )

    async def _refuse_oversized(self, exc: MessageTooLarge) -> None:
        """An oversized message was skipped unread: report it, and answer it as the
        session answers a message over its own limit (-32600, id null)."""
        reason = f"a message of {exc.size} bytes is over the stream's limit of {exc.limit}"
        # An answer to a request of this side ends that request: no other will come.
        answered = self.session.receive_unread(exc.head, reason) if exc.head else None
        if answered is not None:
            for event in answered:
                await self._on_event(event)
            return
        # The session learns that an unreadable message arrived (so that it owes the
        # null-id answer, or knows it may write one past its limits) from a stand-in that
        # is not a JSON-RPC message either; its answer carries this error instead.
        owed = next(
            (
                event.response
                for event in self.session.receive(b'"message too large"')
                if isinstance(event, ProtocolViolation) and event.response is not None
            ),
            None,
        )
        error = ErrorObject(
            code=int(ErrorCode.INVALID_REQUEST),
            message="Invalid request",
            data={
                "rule": Rule.LIMIT_EXCEEDED.value,
                "path": "$",
                "reason": reason,
                "size": exc.size,
                "limit": exc.limit,
            },
        )
        event = ProtocolViolation(
            rule=Rule.LIMIT_EXCEEDED,
            error=error,
            response=None if owed is None else msgspec.structs.replace(owed, error=error),
            reason=reason,
        )
        await self._on_violation(event)

    async def _guarded(self, callback: Callable[[Any], Awaitable[None] | None], arg: Any) -> None:
        """Run a user callback; its exception is logged, never ends the connection."""
        try:
            await _call(callback, arg)
        except Exception:
            logger.exception("a connection callback failed")

    async def _write_owned(self, data: bytes) -> None:
        """Write bytes the session already produced."""
        async with self._write_lock:
            with contextlib.suppress(ConnectionClosed):
                await self._write(data)

    async def _answer(self, response: ResultResponse | ErrorResponse) -> None:
        """Send an answer the connection owes; a closed connection or a session that
        refuses it (closed after a failed negotiation, say) is logged, never raised:
        the reader and the handlers must go on."""
        try:
            await self._send(response)
        except ConnectionClosed:
            pass
        except Exception as exc:
            _log_refused(response, exc)

    def _fail_waiters(self, reason: str) -> None:
        waiters, self._waiters = self._waiters, {}
        for waiter in waiters.values():
            waiter.resolve(None, ConnectionClosed(reason))

    # -- the peer's requests --------------------------------------------------------------------

    @property
    def handlers_running(self) -> int:
        """How many of the peer's requests are being handled now."""
        return len(self._handling)

    def cancel_scope_of(self, request_id: RequestId) -> anyio.CancelScope | None:
        """The cancel scope the handler of the peer's request ``request_id`` runs in
        (its ``notifications/cancelled`` cancels it), while it runs."""
        handling = self._handling.get(request_id)
        return None if handling is None else handling.scope

    def handling_of(self, request_id: RequestId) -> Handling | None:
        """The handler of the peer's request ``request_id``, while it runs."""
        return self._handling.get(request_id)

    def _track(self, request_id: RequestId, handling: Handling | None = None) -> Handling:
        """Note ``handling`` (a new one when ``None``) as the handler of the peer's
        request ``request_id``."""
        if handling is None:
            handling = Handling()
        self._handling[request_id] = handling
        return handling

    def _start_handler(self, event: RequestReceived) -> None:
        task_group = self._task_group
        assert task_group is not None
        task_group.start_soon(self._handle, event, self._track(event.request_id))

    async def _handle(self, event: RequestReceived, handling: Handling) -> None:
        """Answer one of the peer's requests, its handler running in ``handling``.
        Nothing the handler or the answering raises leaves here. Only the handler holds
        the request (``event``): a request kept open keeps what its handler keeps."""
        request_id, method = event.request_id, event.method
        handler = self._call_handler(event)
        del event
        try:
            answer = await self._answer_of(request_id, method, handler, handling)
            if answer is not None:
                await self._send_answer(method, answer)
        finally:
            self._handled_one(request_id, handling)

    async def _answer_of(
        self,
        request_id: RequestId,
        method: str,
        handler: Coroutine[Any, Any, Any],
        handling: Handling,
    ) -> ResultResponse | ErrorResponse | None:
        """Run ``handler`` (of the request ``request_id``) in ``handling``'s scope: the
        answer owed (``None``: none is, the request having been cancelled or the
        connection closed). The one place where what a handler raised becomes an
        answer."""
        try:
            outcome = await handling.run(_until_answered(handler))
        except ConnectionClosed:
            # What it waited for can no longer come (the peer's answer to its own
            # request, say): as if it were cancelled as the connection ends.
            return self._abandoned_answer(request_id, ended=True)
        except Exception as exc:
            if isinstance(exc, RequestError):
                return ErrorResponse(id=request_id, error=exc.error)
            logger.exception("the handler of %s (id %r) failed", method, request_id, exc_info=exc)
            return _internal_error(request_id, exc)
        if outcome is CANCELLED:
            return self._abandoned_answer(request_id, ended=self._abandoning)
        return ResultResponse(id=request_id, result=outcome)

    def _abandoned_answer(self, request_id: RequestId, *, ended: bool) -> ErrorResponse | None:
        """The answer owed to a request whose handler did not finish: one only when
        the connection ended under it (``ended``: the peer hears why, and the other
        answers of its batch are no longer held for this one), and it is still
        unanswered. A request the peer cancelled is owed nothing."""
        if ended and not self._closed and request_id in self.session.unanswered:
            return _abandoned(request_id)
        return None

    def _handled_one(self, request_id: RequestId, handling: Handling) -> None:
        """The handler of ``request_id`` (``handling``) ended."""
        if self._handling.get(request_id) is handling:
            del self._handling[request_id]
        handled, self._handled = self._handled, None
        if handled is not None:
            handled.set()

    async def _call_handler(self, event: RequestReceived) -> Any:
        """The result of ``event``, as its handler gives it."""
        if event.method == "ping" and self.answer_ping:
            return self.session.types.EmptyResult()
        handler = self.request_handler
        if handler is None:
            raise RequestError.method_not_found(event.method)
        return await handler(event)

    def _encode_answer(
        self, method: str, answer: ResultResponse | ErrorResponse
    ) -> HandedBack | None:
        """What :meth:`_send_answer` would write (``None``: nothing to write)."""
        try:
            return HandedBack.of(self.session.send(answer), answer)
        except Exception as exc:
            failure = self._refused(method, answer, exc)
            if failure is None:
                return None
            try:
                return HandedBack.of(self.session.send(failure), failure)
            except Exception as refused:
                _log_refused(failure, refused)
                return None

    async def _send_answer(self, method: str, answer: ResultResponse | ErrorResponse) -> None:
        """Write ``answer``; one the session refuses or fails to encode (a result of
        the wrong type, say) is logged and answered -32603 instead."""
        try:
            await self._send(answer)
        except ConnectionClosed:
            pass
        except Exception as exc:
            failure = self._refused(method, answer, exc)
            if failure is not None:
                await self._answer(failure)

    def _refused(
        self, method: str, answer: ResultResponse | ErrorResponse, exc: Exception
    ) -> ErrorResponse | None:
        """Log that ``answer`` could not be sent (``exc``); the -32603 to send instead
        (``None``: none can be, or that was it)."""
        if isinstance(exc, LocalProtocolError):
            logger.error("the answer to %s (id %r) was refused: %s", method, answer.id, exc)
        else:
            logger.error(
                "the answer to %s (id %r) could not be encoded",
                method,
                answer.id,
                exc_info=exc,
            )
        if answer.id is None or answer.id is UNSET or _is_internal_error(answer):
            return None
        return _internal_error(answer.id, exc)


def _log_refused(answer: ResultResponse | ErrorResponse, exc: Exception) -> None:
    """Log that the session refused (or failed to encode) an answer the connection owes."""
    if isinstance(exc, LocalProtocolError):
        logger.error("an answer to id %r was refused by the session: %s", answer.id, exc)
    else:
        logger.error("an answer to id %r could not be encoded", answer.id, exc_info=exc)


def _is_internal_error(answer: ResultResponse | ErrorResponse) -> bool:
    return isinstance(answer, ErrorResponse) and answer.error.code == int(ErrorCode.INTERNAL_ERROR)


class AnswerLater:
    """What a request handler returns for a request it keeps open (a 2026-07-28
    ``subscriptions/listen``): ``answer`` is awaited for the result, in the handler's
    cancel scope, once the handler has returned, so that the handler's frames, and the
    decoded request they hold, are let go meanwhile. ``answer`` should hold only what
    it needs."""

    __slots__ = ("answer",)

    def __init__(self, answer: Awaitable[Any]) -> None:
        self.answer = answer


async def _until_answered(handler: Awaitable[Any]) -> Any:
    """The result of ``handler``, or of the :class:`AnswerLater` it returned."""
    outcome = await handler
    if type(outcome) is AnswerLater:
        later = outcome.answer
        del outcome
        return await later
    return outcome


def _slim(event: RequestReceived) -> RequestReceived:
    """``event`` without the decoded request and what came with it (its id, method,
    progress token and versions are left)."""
    return msgspec.structs.replace(event, request=None, client_capabilities=None, client_info=None)


def _abandoned(request_id: RequestId) -> ErrorResponse:
    """-32603 for a request whose handler was cancelled as the connection ended."""
    return ErrorResponse(
        id=request_id,
        error=ErrorObject(
            code=int(ErrorCode.INTERNAL_ERROR),
            message="Internal error",
            data={"reason": "the connection ended before the request was answered"},
        ),
    )


def _internal_error(request_id: RequestId, exc: BaseException) -> ErrorResponse:
    """-32603 for a handler that failed, naming the exception's type only (its text may
    hold what the peer should not see)."""
    return ErrorResponse(
        id=request_id,
        error=ErrorObject(
            code=int(ErrorCode.INTERNAL_ERROR),
            message="Internal error",
            data={"exception": type(exc).__name__},
        ),
    )


def _has_progress_token(request: Any) -> bool:
    params = getattr(request, "params", None)
    meta = getattr(params, "meta", None)
    if isinstance(params, dict):
        meta = params.get("_meta")
    return isinstance(meta, dict) and "progressToken" in meta
