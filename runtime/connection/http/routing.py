"""Which HTTP response each message of the server travels on.

Over stdio a connection writes every message to one pipe. Over Streamable HTTP each
POST has its own response, and a message belongs on the response of the POST that
carried the request it is about: the request's answer, and (as the era allows) the
progress, log messages and server requests its handler sends meanwhile. Messages about
no request go to the session's standalone ``GET`` stream.

The theory of operation: the app feeds a POST's body to the connection's
:class:`~mcpspec.runtime.connection.peer.Peer` with :data:`ROUTE` set to that POST:
the session's stream and the POST's :class:`Post`. A context variable set in a task
is copied into every task that task starts, so the handlers of the POST's requests, and
everything they send, see the same route; the :class:`SessionStream` the peer writes to
reads it on every ``send``, and takes its POST's channel when it is its own session's. A
connection that carries one POST at a time (:class:`ChannelStream`) holds that POST
itself, and, when it is reused from POST to POST, takes messages only from senders
that :data:`ROUTE` says are the POST's.
Nothing is parsed to route a message but the two members that tell a response from the
rest (``id``, ``method``).

Most POSTs carry one request whose handler answers at once, sending nothing else and
never waiting: the answer is the whole response, written as JSON by the POST's
:class:`Post` itself. The POST's :class:`Channel`, with what it takes to carry more
(a stream, a lock, the session's record of open streams), is made only when more
comes: a message sent while the request runs, the handler's first wait, a body that
is no single request.

A :class:`Channel` answers its POST lazily, without a task of its own: the first
message decides. A response that completes the POST is sent as ``application/json``;
anything else first (a progress notification, say) opens an SSE stream, when the
client accepts one and the settings allow it, and every later message is an event on
it. The writes happen in the task that sends the message, under the channel's lock.
"""

from __future__ import annotations

import collections
import contextvars
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final, NamedTuple

import anyio
import msgspec

from mcpspec.runtime.envelope import ErrorObject, ErrorResponse, RequestId

from ..errors import ConnectionClosed
from .asgi import Send, start_response
from .sse import SSE_HEADERS, encode_event

__all__ = [
    "ROUTE",
    "Answer",
    "Channel",
    "ChannelStream",
    "ChannelTerms",
    "Divert",
    "Post",
    "SessionStream",
    "answers_in",
    "is_request",
]

logger = logging.getLogger("mcpspec.http")

#: The POST whose messages the current task sends: the session's stream and the POST
#: (``None``: the standalone stream). A stream takes the POST's channel only when it
#: is its own: a handler may send on another session's stream (a change announced to
#: every client), and that message leaves on the other session's standalone stream.
ROUTE: contextvars.ContextVar[tuple[SessionStream, Post] | None] = contextvars.ContextVar(
    "mcpspec_http_route", default=None
)


class _ErrorCode(msgspec.Struct):
    code: Any = None


class _Kind(msgspec.Struct):
    """The members that tell a response (and which, and its error's code) from a
    request or notification."""

    id: Any = None
    method: Any = None
    error: _ErrorCode | None = None


_KIND: Final = msgspec.json.Decoder(_Kind)

#: Where a message goes when its channel cannot carry it (a notification for a POST
#: answered with JSON, a message after the POST was answered): the standalone stream.
Divert = Callable[[bytes], Awaitable[None]]
#: Gives an SSE event of a stream its id (keeping it for replay); ``None`` when the
#: stream's events carry no ids.
Stamp = Callable[[str, bytes], Awaitable[str]]


_KINDS: Final = msgspec.json.Decoder(list[_Kind])

#: The error a request still unanswered gets when its session ends under it (the
#: code JSON-RPC leaves to servers, as the MCP SDKs use it for a closed connection).
SESSION_ENDED: Final = -32000
#: The largest JSON answer written without a stall bound: the ASGI servers buffer this
#: much (uvicorn's write buffer high-water mark) without waiting for the client.
_BUFFERED: Final = 64 * 1024
#: The error a cancelled request gets when its POST can only answer JSON (the code
#: JSON-RPC peers such as LSP use for a cancelled request).
REQUEST_CANCELLED: Final = -32800


def _error_response(request_id: RequestId, code: int, message: str) -> bytes:
    """The bytes of a JSON-RPC error answering ``request_id``."""
    return msgspec.json.encode(
        ErrorResponse(id=request_id, error=ErrorObject(code=code, message=message))
    )


def is_request(data: bytes) -> bool:
    """Whether ``data`` (a message the session wrote) is a request."""
    try:
        kind = _KIND.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return kind.method is not None and kind.id is not None


class Answer(NamedTuple):
    """One response a message of the session holds: the id it answers (``None``:
    null, or none) and its error's code (``None`` for a result)."""

    request_id: RequestId | None
    error_code: int | None


def answers_in(data: bytes) -> list[Answer] | None:
    """The responses ``data`` (what the session wrote: one message, or a batch's
    reply) holds, read in one pass; ``None`` when it is not a response."""
    try:
        kinds = _KINDS.decode(data) if data[:1] == b"[" else [_KIND.decode(data)]
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if not kinds or any(kind.method is not None for kind in kinds):
        return None
    return [
        Answer(
            kind.id if isinstance(kind.id, (int, str)) else None,
            kind.error.code
            if kind.error is not None and isinstance(kind.error.code, int)
            else None,
        )
        for kind in kinds
    ]


class _Gate:
    """A lock that costs nothing while it is free (the usual case: one writer per
    POST); a writer that finds it held waits on an event of its own, and the holder
    hands it over on release, in order."""

    __slots__ = ("_held", "_waiters")

    def __init__(self) -> None:
        self._held = False
        self._waiters: collections.deque[anyio.Event] | None = None

    async def __aenter__(self) -> None:
        if not self._held:
            self._held = True
            return
        if self._waiters is None:
            self._waiters = collections.deque()
        turn = anyio.Event()
        self._waiters.append(turn)
        try:
            await turn.wait()
        except BaseException:
            if turn.is_set():
                self._release()  # handed over, but cancelled before it ran: pass it on
            else:
                self._waiters.remove(turn)
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        self._release()

    @property
    def held(self) -> bool:
        """Whether a writer holds it."""
        return self._held

    def _release(self) -> None:
        if self._waiters:
            self._waiters.popleft().set()  # still held: now by that waiter
        else:
            self._held = False


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ChannelTerms:
    """What the channels of one kind of POST share, made once (per session, or per
    endpoint) rather than for each POST.

    ``sse`` says whether the response may be an SSE stream (the client accepts one and
    the settings allow it); ``divert`` takes what the response cannot carry. ``stamp``
    (resumable sessions) gives SSE events their ids; ``priming`` opens an SSE stream
    with an empty event that has one (2025-11-25), announcing ``retry_ms``.
    ``status_of`` picks the status of a JSON response from the error codes of its
    responses (``None`` for a result). ``stall`` is how many seconds a client may take
    to take one event (``None``: no bound).
    """

    sse: bool
    divert: Divert | None = None
    stamp: Stamp | None = None
    priming: bool = False
    retry_ms: int | None = None
    status_of: Callable[[list[int | None]], int] | None = None
    stall: float | None = None


class Channel:
    """The response of one POST: the messages about its requests.

    ``send`` is the ASGI send of the POST; ``terms`` (:class:`ChannelTerms`) how it
    may answer. ``stream_id`` names its SSE stream within the session; ``headers`` are
    the caller's extra response headers (its dict itself: it may add one until the
    response starts). ``carried`` is the id of the POST's only request, when the app
    knows it before the body is fed (so that a session ending under it answers it).

    A POST that carried a request never gets ``202``: a request the session ended under
    is answered with an error; one the client cancelled is answered by an SSE stream
    that ends at once (or, JSON only, an error).
    """

    __slots__ = (
        "_answered",
        "_cancelled",
        "_done_event",
        "_error_codes",
        "_expected",
        "_headers",
        "_held",
        "_lock",
        "_send",
        "_terms",
        "carried",
        "done",
        "follower",
        "gone",
        "mode",
        "on_gone",
        "status",
        "stream_id",
    )

    def __init__(
        self,
        send: Send,
        terms: ChannelTerms,
        stream_id: str = "",
        headers: dict[str, str] | None = None,
        carried: RequestId | None = None,
    ) -> None:
        self._send = send
        self._terms = terms
        self.stream_id = stream_id
        self._headers = headers if headers is not None else {}
        self.carried = carried
        #: The status of a JSON answer, when the app knows it (else ``terms.status_of``).
        self.status: int | None = None
        self._lock = _Gate()
        #: The ids of the POST's requests that await their answer (``None``: the body
        #: was not fed yet); answers that come before they are known are kept in
        #: ``_answered``.
        self._expected: set[RequestId] | None = None
        self._answered: set[RequestId] = set()
        #: The ids of the POST's requests the client cancelled (made when one is).
        self._cancelled: list[RequestId] | None = None
        #: Messages held until the response's form is decided.
        self._held: list[bytes] = []
        #: The error code (``None``: a result) of each response taken, in order.
        self._error_codes: list[int | None] = []
        #: ``"json"`` or ``"sse"`` once the response started; ``None`` before.
        self.mode: str | None = None
        #: Whether the response has ended (the channel's to set; read by the POST's
        #: task after each step).
        self.done = False
        #: Made only when someone waits for the response to end.
        self._done_event: anyio.Event | None = None
        #: The client went away (writes failed): on a resumable stream the rest is still
        #: stamped (kept for a GET resuming it); else requests and notifications are
        #: diverted, responses dropped.
        self.gone = False
        #: Another response (a ``GET`` resuming this stream) that takes the events.
        self.follower: Send | None = None
        #: Called once when the client is found gone (2026-07-28: cancel the request).
        self.on_gone: Callable[[], object] | None = None

    # -- what the POST's task does --------------------------------------------------------

    async def expect(self, request_ids: Iterable[RequestId]) -> None:
        """Say which requests the POST carried; the response ends once each is
        answered (it is sent at once when there are none left)."""
        expected = set(request_ids) - self._answered
        if self._cancelled is not None:
            expected.difference_update(self._cancelled)
        self._expected = expected
        if not expected:
            await self._finish()

    async def hold_open(self) -> None:
        """Wait until every request of the POST is answered (or the channel closed)."""
        if self.done:
            return
        if self._done_event is None:
            self._done_event = anyio.Event()
        await self._done_event.wait()

    async def close(self, ended: str | None = None) -> None:
        """End the response as it stands: the POST gave up, or (``ended``: why) the
        session ended, and each request still unanswered is answered with an error.
        A client that does not take it within the stall bound is left gone."""
        if self.done:
            return
        with anyio.move_on_after(self._terms.stall) as bounded:
            async with self._lock:
                await self._finish_locked(ended)
        if bounded.cancelled_caught:
            self._went()

    async def drop(self, request_id: RequestId) -> None:
        """The client cancelled one of the POST's requests: it is answered by nobody,
        and the response ends once the others are answered."""
        if self.done:
            return
        async with self._lock:
            if self._cancelled is None:
                self._cancelled = []
            self._cancelled.append(request_id)
            expected = self._expected
            if expected is not None and request_id in expected:
                expected.discard(request_id)
                if not expected:
                    await self._finish_locked()

    def hold_writes(self) -> _Gate:
        """The lock of the channel's writers: while it is held, nothing is stamped or
        written on the stream (a GET resuming it catches up, then takes it over)."""
        return self._lock

    @property
    def held(self) -> list[bytes]:
        """The messages not yet written (before the response's form was decided)."""
        return self._held

    # -- what the session's sends do ----------------------------------------------------------

    async def put(self, data: bytes) -> None:
        """Take one message of the server about this POST."""
        if self.done:
            await self._after_done(data)
            return
        answers = answers_in(data)
        async with self._lock:
            if answers is not None:
                await self._take(data)
                self._error_codes.extend(answer.error_code for answer in answers)
                answered = [a.request_id for a in answers if a.request_id is not None]
                self._answered.update(answered)
                expected = self._expected
                if expected is not None and expected.intersection(answered):
                    expected.difference_update(answered)
                    if not expected:
                        await self._finish_locked()
            elif self.gone and self._terms.stamp is None:
                # Nobody can resume this stream: the standalone stream may carry it.
                await self._elsewhere(data)
            elif self.mode == "sse" or (self.mode is None and self._terms.sse):
                await self._take(data, stream=True)
            else:
                await self._elsewhere(data)

    async def _after_done(self, data: bytes) -> None:
        """A message about this POST once its response ended: a request or notification
        goes elsewhere; a response is dropped (no other stream may carry it)."""
        if answers_in(data) is None:
            await self._elsewhere(data)
        else:
            logger.debug("a response for a POST whose response ended is dropped")

    async def answer(self, data: bytes, error_code: int | None) -> None:
        """Take the answer to the POST's only request (its bytes, and the code of its
        error: ``None`` for a result), which its peer handed back rather than wrote
        (:meth:`~mcpspec.runtime.connection.peer.Peer.feed_request`): when nothing came
        before it, it is the whole response, sent at once as JSON; else it is taken as
        :meth:`put` takes it."""
        if (
            self.mode
            or self._held
            or self.done
            or self.gone
            or self._lock.held
            or self._expected is not None
        ):
            await self.put(data)
            return
        # Done from here: what the session sends meanwhile goes elsewhere, as it would
        # once the response was sent.
        self.done = True
        self.mode = "json"
        self._error_codes.append(error_code)
        try:
            await self._write_json(data)
        finally:
            if self._done_event is not None:
                self._done_event.set()

    async def keepalive(self, comment: bytes) -> None:
        """Write a comment line on an open SSE stream (quiet long-lived streams)."""
        async with self._lock:
            if self.mode == "sse" and not self.done and not self.gone:
                await self._write(comment)

    async def _elsewhere(self, data: bytes) -> None:
        divert = self._terms.divert
        if divert is not None:
            await divert(data)

    async def _take(self, data: bytes, *, stream: bool = False) -> None:
        if self.mode == "sse" or stream:
            if self.mode is None:
                await self._open_sse()
            await self._event(data)
        else:
            self._held.append(data)

    async def _open_sse(self) -> None:
        terms = self._terms
        self.mode = "sse"
        headers = {**SSE_HEADERS, **self._headers}
        try:
            await start_response(self._send, 200, "text/event-stream", headers)
        except OSError:
            self._went()
            if terms.stamp is None:
                return
            # Resumable: the events are still kept, for a GET resuming the stream.
        if terms.priming and terms.stamp is not None:
            event_id = await terms.stamp(self.stream_id, b"")
            await self._write(
                encode_event(b"", event=None, event_id=event_id, retry_ms=terms.retry_ms)
            )
        held, self._held = self._held, []
        for data in held:
            await self._event(data)

    async def _event(self, data: bytes) -> None:
        stamp = self._terms.stamp
        event_id = await stamp(self.stream_id, data) if stamp is not None else None
        await self._write(encode_event(data, event_id=event_id))

    async def _write(self, chunk: bytes) -> None:
        target = self.follower if self.follower is not None else (None if self.gone else self._send)
        if target is None:
            return
        if not await self._bounded(
            target, {"type": "http.response.body", "body": chunk, "more_body": True}
        ):
            if target is self.follower:
                self.follower = None
            else:
                self._went()

    async def _bounded(self, target: Send, message: dict[str, Any]) -> bool:
        """Send ``message``; ``False`` when the client is gone or took longer than the
        stall bound (one that stopped reading would hold this write, and the locks of
        whoever writes, for as long as it keeps the connection open)."""
        try:
            with anyio.fail_after(self._terms.stall):
                await target(message)
        except (OSError, TimeoutError):
            return False
        return True

    def _went(self) -> None:
        """The client is gone: nothing more is written to it."""
        if not self.gone:
            self.gone = True
            if self.on_gone is not None:
                self.on_gone()

    async def _finish(self) -> None:
        async with self._lock:
            await self._finish_locked()

    def _unanswered(self) -> list[RequestId]:
        """The POST's requests neither answered nor cancelled."""
        expected = self._expected
        if expected is None:
            carried = self.carried
            if carried is None or carried in self._answered:
                return []
            expected = {carried}
        cancelled = self._cancelled
        return [i for i in expected if cancelled is None or i not in cancelled]

    async def _finish_locked(self, ended: str | None = None) -> None:
        if self.done:
            return
        try:
            unanswered = self._unanswered()
            if ended is not None:
                for request_id in unanswered:
                    self._error_codes.append(SESSION_ENDED)
                    await self._take(_error_response(request_id, SESSION_ENDED, ended))
                unanswered = []
            if self.mode == "sse":
                if not self.gone:
                    await self._end_sse()
            elif self._held or not (unanswered or self._cancelled):
                await self._respond_json()
            elif self._terms.sse:
                # The client cancelled what it sent, or gave up on it: a request is
                # answered by a stream (or JSON), never by 202. An SSE stream that
                # ends with no response honours "SHOULD NOT send a response for the
                # cancelled request" (cancellation page) within that MUST.
                await self._open_sse()
                if not self.gone:
                    await self._end_sse()
            else:
                # JSON only: a body must answer the request; the error says why.
                for request_id in [*unanswered, *(self._cancelled or ())]:
                    self._error_codes.append(REQUEST_CANCELLED)
                    self._held.append(
                        _error_response(request_id, REQUEST_CANCELLED, "Request cancelled")
                    )
                await self._respond_json()
        except OSError:
            self._went()
        finally:
            self.done = True
            if self._done_event is not None:
                self._done_event.set()

    async def _end_sse(self) -> None:
        if not await self._bounded(self._send, {"type": "http.response.body", "body": b""}):
            self._went()

    async def _respond_json(self) -> None:
        held = self._held
        self._held = []
        self.mode = "json"
        if not held:
            await start_response(self._send, 202, None, self._headers, 0)
            await self._send({"type": "http.response.body", "body": b""})
            return
        await self._write_json(held[0] if len(held) == 1 else b"[" + b",".join(held) + b"]")

    async def _write_json(self, body: bytes) -> None:
        """Write ``body`` as the whole JSON response: with the status the app set, else
        the one the terms pick from the error codes of the responses taken."""
        status = self.status
        if status is None:
            status_of = self._terms.status_of
            status = status_of(self._error_codes) if status_of is not None else 200
        if not await write_json(self._send, status, self._headers, body, self._terms.stall):
            self._went()


async def write_json(
    send: Send, status: int, headers: dict[str, str], body: bytes, stall: float | None
) -> bool:
    """Write a whole ``application/json`` response (``headers``: the caller's extra
    ones); ``False`` when the client is gone. A body over :data:`_BUFFERED` bytes may
    wait for the client to read, so it is bounded by ``stall`` seconds; a smaller one
    goes to the server's write buffer at once, without a timer."""
    fields = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if headers:
        fields.extend((k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items())
    message = {"type": "http.response.body", "body": body}
    try:
        await send({"type": "http.response.start", "status": status, "headers": fields})
        if len(body) <= _BUFFERED:
            await send(message)
        else:
            with anyio.fail_after(stall):
                await send(message)
    except (OSError, TimeoutError):
        return False
    return True


#: Makes the :class:`Channel` of a :class:`Post` (and notes it where its session keeps
#: the POSTs' open streams).
Opener = Callable[["Post"], Channel]


class Post:
    """One POST, as :data:`ROUTE` names it: its ASGI ``send``, how it may answer
    (``terms``, ``headers``, ``carried``: as :class:`Channel` takes them), and its
    :class:`Channel` once one is made (:meth:`open`; ``opener`` makes it, else a plain
    one). ``on_gone`` is handed to the channel. A POST whose only request is answered
    before anything else happened needs no channel: :meth:`answer` writes the answer
    as the whole JSON response.
    """

    __slots__ = (
        "_answered",
        "_opener",
        "carried",
        "channel",
        "headers",
        "on_gone",
        "send",
        "terms",
    )

    def __init__(
        self,
        send: Send,
        terms: ChannelTerms,
        headers: dict[str, str] | None = None,
        carried: RequestId | None = None,
        opener: Opener | None = None,
    ) -> None:
        self.send = send
        self.terms = terms
        self.headers = headers if headers is not None else {}
        self.carried = carried
        self._opener = opener
        #: The POST's channel, once made.
        self.channel: Channel | None = None
        #: Called once when the client is found gone (set before the channel is made).
        self.on_gone: Callable[[], object] | None = None
        #: Answered by :meth:`answer` without a channel.
        self._answered = False

    def open(self) -> Channel:
        """The POST's channel, made now if it was not yet."""
        channel = self.channel
        if channel is None:
            opener = self._opener
            if opener is None or self._answered:
                channel = Channel(self.send, self.terms, "", self.headers, self.carried)
            else:
                channel = opener(self)
            if self._answered:
                # For what the handler's leftover tasks send: a response that ended.
                channel.mode = "json"
                channel.done = True
            channel.on_gone = self.on_gone
            self.channel = channel
        return channel

    async def answer(self, data: bytes, error_code: int | None) -> None:
        """Take the answer to the POST's only request, handed back by its peer (see
        :meth:`Channel.answer`): with no channel made, nothing came before it, and it
        is the whole response."""
        channel = self.channel
        if channel is not None:
            await channel.answer(data, error_code)
            return
        terms = self.terms
        status_of = terms.status_of
        status = status_of([error_code]) if status_of is not None else 200
        self._answered = True
        await write_json(self.send, status, self.headers, data, terms.stall)

    @property
    def done(self) -> bool:
        """Whether the POST's response has ended."""
        channel = self.channel
        return self._answered or (channel is not None and channel.done)


class SessionStream:
    """The :class:`~mcpspec.runtime.connection.transport.MessageStream` of a
    connection whose messages arrive as POST bodies (fed to its peer directly) and
    leave on the response of the POST they are about (:data:`ROUTE`), or through
    ``standalone`` when they are about none. ``receive`` only waits for the end."""

    _completes_sends = True

    def __init__(self, standalone: Divert) -> None:
        self._standalone = standalone
        self._closed = anyio.Event()
        #: The channel of each request of a batch in flight, by id: the batch's reply
        #: may be flushed from another POST's task (a sibling's cancellation).
        self.owners: dict[RequestId, Channel] = {}

    async def receive(self) -> bytes:
        await self._closed.wait()
        raise ConnectionClosed("the HTTP session ended")

    async def send(self, data: bytes) -> None:
        if self._closed.is_set():
            raise ConnectionClosed("the HTTP session ended")
        channel = self._owner(data) if self.owners else None
        if channel is None:
            route = ROUTE.get()
            if route is not None and route[0] is self:
                channel = route[1].open()
        if channel is not None:
            await channel.put(data)
        else:
            await self._standalone(data)

    def _owner(self, data: bytes) -> Channel | None:
        """The channel of the batch a response answers (``None``: not such a one)."""
        answers = answers_in(data)
        if answers is None:
            return None
        for answer in answers:
            if answer.request_id is not None:
                channel = self.owners.get(answer.request_id)
                if channel is not None:
                    return channel
        return None

    async def aclose(self) -> None:
        self._closed.set()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()


class ChannelStream(SessionStream):
    """The message stream of a connection whose every message is about the one POST
    it carries now (2026-07-28, or a handshake-era POST without sessions).

    Any task may send on it, unless it is ``guarded``: then only the POST's own task
    and the tasks started from it (:data:`ROUTE` names the POST there). A guarded
    connection carries one POST after another, and a task that a handler left behind,
    still sending once its request ended, must find it closed rather than write on
    the response of whichever request, of whichever client, has it by then.
    """

    def __init__(self, post: Post | None, *, guarded: bool = False) -> None:
        super().__init__(_no_standalone)
        #: The POST whose messages it carries now (``None`` between POSTs).
        self.post = post
        self._guarded = guarded

    async def send(self, data: bytes) -> None:
        post = self.post
        if self.closed or post is None:
            raise ConnectionClosed("the request ended")
        if self._guarded:
            route = ROUTE.get()
            if route is None or route[1] is not post:
                raise ConnectionClosed("the request ended")
        await post.open().put(data)


async def _no_standalone(data: bytes) -> None:
    raise ConnectionClosed("this connection has no standalone stream")
