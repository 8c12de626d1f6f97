"""Which HTTP response each message of the server travels on.

Over stdio a connection writes every message to one pipe. Over Streamable HTTP each
POST has its own response, and a message belongs on the response of the POST that
carried the request it is about: the request's answer, and (as the era allows) the
progress, log messages and server requests its handler sends meanwhile. Messages about
no request go to the session's standalone ``GET`` stream.

The theory of operation: what a message is about is said, never guessed from where it
is sent. A response is about the request it answers (its id). Any other message is
about the request its sender names: the peer's ``send``, ``notify`` and ``request``
take a ``related_request_id`` and hand it to the stream's ``send``; a handler's
:class:`~mcpspec.runtime.connection.context.RequestContext` names its own request
while it runs (and none once it was answered: a task the handler left behind sends
about no request). A change announced to a session is about no request (up to
2025-11-25) or about the ``subscriptions/listen`` request it is delivered to
(2026-07-28).

Every server connection over HTTP writes to a :class:`PostStream`. The app feeds a
POST's body to the connection's :class:`~mcpspec.runtime.connection.peer.Peer`
having opened the POST's routes on the stream: the ids of the requests the body
carries, and the null id (for the answer to a body that could not be read), each
leading to the POST's :class:`Channel` until the POST ends. The stream sends a message to
the POST its id or its relation leads to; a message about no request (or a request no
longer open) goes to the session's standalone stream, or, where there is none
(2026-07-28, a POST without sessions), cannot be sent. A 2026-07-28 connection, reused
from POST to POST, so never carries a message of one POST's handler on another's
response, even when both requests have the same id. Nothing is parsed to route a
message but the two members that tell a response from the rest (``id``, ``method``).

Most POSTs carry one request whose handler answers at once, sending nothing else and
never waiting: the answer is the whole response, written as JSON at once. A POST's
:class:`Channel` is opened, and noted by its session among its open streams (for a
``GET`` resuming one, for a session ending under it), only when more may come: a
message sent while the request runs, a handler that may wait, a body that is no
single request.

A :class:`Channel` answers its POST lazily, without a task of its own: the first
message decides. A response that completes the POST is sent as ``application/json``;
anything else first (a progress notification, say) opens an SSE stream, when the
client accepts one and the settings allow it, and every later message is an event on
it. The writes happen in the task that sends the message, under the channel's lock.
"""

from __future__ import annotations

import collections
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
    "Answer",
    "Channel",
    "ChannelTerms",
    "Divert",
    "PostStream",
    "RouteKey",
    "answers_in",
    "is_request",
    "request_keys",
]

logger = logging.getLogger("mcpspec.http")


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
    """The response of one POST: the messages about its requests, where the routes of a
    :class:`PostStream` lead.

    ``send`` is the ASGI send of the POST; ``terms`` (:class:`ChannelTerms`) how it
    may answer. ``headers`` are the caller's extra response headers (its dict itself:
    it may add one until the response starts). ``carried`` is the id of the POST's only
    request, when the app knows it before the body is fed (so that a session ending
    under it answers it). ``on_open`` is called when the channel is opened
    (:meth:`open`): a session notes it among its open streams, naming its SSE stream
    (``stream_id``).

    A POST whose only request is answered before anything else happened is never
    opened: :meth:`answer` writes the answer as the whole JSON response.

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
        "_on_open",
        "_send",
        "_terms",
        "carried",
        "done",
        "follower",
        "gone",
        "mode",
        "on_gone",
        "opened",
        "status",
        "stream_id",
    )

    def __init__(
        self,
        send: Send,
        terms: ChannelTerms,
        headers: dict[str, str] | None = None,
        carried: RequestId | None = None,
        on_open: Callable[[Channel], None] | None = None,
    ) -> None:
        self._send = send
        self._terms = terms
        #: Its SSE stream's id within the session (given when it is opened).
        self.stream_id = ""
        self._on_open = on_open
        #: Whether it was opened: it may carry more than a single answer.
        self.opened = False
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

    def open(self) -> Channel:
        """Make ready to carry more than a single answer (a handler that waits, a batch,
        a message before the answer): noted by its session (``on_open``) until the POST
        ends. Returns the channel itself."""
        if not self.opened:
            self.opened = True
            on_open = self._on_open
            if on_open is not None and not self.done:
                on_open(self)
        return self

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

    async def put(self, data: bytes, answers: list[Answer] | None) -> None:
        """Take one message of the server about this POST (``answers``: the responses
        it holds, as :func:`answers_in` reads them; ``None``: it is no response)."""
        if self.done:
            await self._after_done(data, answers)
            return
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

    async def _after_done(self, data: bytes, answers: list[Answer] | None) -> None:
        """A message about this POST once its response ended: a request or notification
        goes elsewhere; a response is dropped (no other stream may carry it)."""
        if answers is None:
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
            await self.put(data, answers_in(data))
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


#: What a POST is found by among the routes of a stream: the id of one of its
#: requests, or ``None`` for the responses with a null id (a body that could not be
#: read is answered so).
RouteKey = RequestId | None


class PostStream:
    """The :class:`~mcpspec.runtime.connection.transport.MessageStream` of a server
    connection over Streamable HTTP: its messages arrive as POST bodies (fed to its
    peer directly) and leave on the response of the POST they are about (its
    :class:`Channel`), else through ``standalone`` (a handshake session's ``GET``
    stream; ``None``: there is none, and such a message cannot be sent).

    A POST takes its routes for as long as it is open (:meth:`open_route`): the ids of
    the requests its body carries, and the null id. A response goes to the POST of
    the request it answers; any other message to the POST of the request it relates
    to (``related_request_id``), or, relating to none (or to one no longer open),
    through ``standalone``. ``receive`` only waits for the end.
    """

    __slots__ = ("_closed", "_routes", "_standalone")

    _completes_sends = True

    def __init__(self, standalone: Divert | None) -> None:
        self._standalone = standalone
        self._closed = anyio.Event()
        #: The channel of the POST of each request in flight (and of the null id).
        self._routes: dict[RouteKey, Channel] = {}

    def open_route(
        self, channel: Channel, keys: Iterable[RouteKey]
    ) -> list[tuple[RouteKey, Channel | None]]:
        """Send what is about ``keys`` to ``channel`` until :meth:`close_route`; returns
        the keys taken, with the POST each was taken from (to hand back to it).

        A request id another open POST holds stays that POST's: a client reusing the id
        of a request in flight is refused by the session, which writes nothing about
        the reused id, and the first request's messages must not follow the second.
        The null id is the newest POST's: the session answers a body it cannot read
        while it is fed, and the POST that carried it is the one fed last."""
        routes = self._routes
        taken: list[tuple[RouteKey, Channel | None]] = []
        for key in keys:
            holder = routes.get(key)
            if key is not None and holder is not None and not holder.done:
                continue
            taken.append((key, holder))
            routes[key] = channel
        return taken

    def close_route(self, channel: Channel, taken: list[tuple[RouteKey, Channel | None]]) -> None:
        """The POST of ``channel`` ended: what is about the keys it took has no POST
        any more (or, for the null id taken from another POST still open, that one's
        again)."""
        routes = self._routes
        for key, previous in taken:
            if routes.get(key) is channel:
                if previous is None or previous.done:
                    del routes[key]
                else:
                    routes[key] = previous

    def channel_of(self, request_id: RequestId) -> Channel | None:
        """The channel of the open POST that carried the request ``request_id``, if
        any."""
        return self._routes.get(request_id)

    async def receive(self) -> bytes:
        await self._closed.wait()
        raise ConnectionClosed("the HTTP session ended")

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        if self._closed.is_set():
            raise ConnectionClosed("the HTTP session ended")
        answers = answers_in(data)
        if answers is not None:
            channel = self._answered(answers)
            if channel is None:
                logger.debug("a response whose request has no open POST is dropped")
                return
            await channel.open().put(data, answers)
            return
        channel = None if related_request_id is None else self._routes.get(related_request_id)
        if channel is not None:
            await channel.open().put(data, answers)
        elif self._standalone is not None:
            await self._standalone(data)
        else:
            raise ConnectionClosed("the request ended: no stream can carry this message")

    def _answered(self, answers: list[Answer]) -> Channel | None:
        """The channel of the requests a response (or a batch's reply) answers."""
        routes = self._routes
        for answer in answers:
            channel = routes.get(answer.request_id)
            if channel is not None:
                return channel
        return None

    async def aclose(self) -> None:
        self._closed.set()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()


def request_keys(data: bytes) -> list[RouteKey]:
    """The route keys of a POST body: the ids of the messages it carries that are no
    responses (requests, and what may be answered as one that is broken), read from a
    batch member by member (one that is not an object has none), and ``None``."""
    try:
        members = _MEMBERS.decode(data) if data.lstrip()[:1] == b"[" else [msgspec.Raw(data)]
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return [None]
    keys: list[RouteKey] = []
    for member in members:
        try:
            kind = _MEMBER.decode(member)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            continue
        request_id = kind.id
        is_response = kind.method is None and (kind.result is not None or kind.error is not None)
        if (
            isinstance(request_id, (int, str))
            and not isinstance(request_id, bool)
            and not is_response
        ):
            keys.append(request_id)
    keys.append(None)
    return keys


class _Member(msgspec.Struct):
    """What tells a message that is no response, and its id (the rest left unread)."""

    id: Any = None
    method: Any = None
    result: msgspec.Raw | None = None
    error: msgspec.Raw | None = None


_MEMBER: Final = msgspec.json.Decoder(_Member)
_MEMBERS: Final = msgspec.json.Decoder(list[msgspec.Raw])
