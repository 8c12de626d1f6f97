"""The client side of MCP over HTTP, for every era: :class:`HttpClientStream`.

One :class:`~mcpspec.runtime.connection.transport.MessageStream` speaks whatever the
server at a URL speaks, the messages telling it which era it is in:

* Streamable HTTP (2025-03-26 ... 2025-11-25): every message is a POST with the headers
  the revision requires (``Accept``, ``Content-Type``, ``MCP-Protocol-Version`` once
  negotiated, ``Mcp-Session-Id`` once the server minted one). A request's answer is read
  in a task of its own, from an ``application/json`` body or a ``text/event-stream``
  one; a stream that ends before the answer is resumed with ``GET`` and
  ``Last-Event-ID`` (after the server's ``retry``). Once initialized, a standalone
  ``GET`` stream carries the server's own requests and notifications. Closing sends
  ``DELETE`` for the session.
* Streamable HTTP 2026-07-28 (stateless): the mirrored request headers
  (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``) come from
  :mod:`mcpspec.runtime.mirror`; cancelling a request closes its response stream
  (``notifications/cancelled`` is not posted); ``subscriptions/listen`` is a long-lived
  response stream like any other.
* HTTP+SSE (2024-11-05): when ``initialize`` is refused with 400, 404 or 405 and no
  JSON-RPC body (``transport="auto"``), or with ``transport="sse"``, the stream ``GET``\\ s
  the URL (then its ``sse`` sibling) for the ``endpoint`` event and from then on posts
  every message there and reads every server message from that stream.

HTTP failures never leave a request waiting: a 4xx/5xx with a JSON-RPC body is
delivered as that message; an error with id null (or none), in any answer to a POST,
answers the request posted (the server could not read its id). Without a JSON-RPC body,
and for a transport failure, a response stream that ends unanswered or an oversized
answer, a JSON-RPC error response for the request is made up here (code -32000, ``data``
with the HTTP ``status`` and the start of the ``body``).

A 404 to a message carrying the session id means the server ended the session: as the
specification says, the stream opens a new one (the same ``initialize`` posted again
without the id, then ``notifications/initialized``; the same protocol version must come
back) and posts the message again; what the old session held on the server is not set
again. When that is off (``renew_sessions=False``) or fails, the request fails (message
``"Session expired ..."``) and the stream ends (``ConnectionClosed`` for what follows).

Every message is posted by a task of the stream (:meth:`HttpClientStream.send` returns
once it is started), so a server slow to answer a POST holds up neither the sender nor
the other messages; the acknowledgement of a notification or response is bounded by the
read timeout.

Every buffer is bounded: one message by ``max_message_size`` (bodies are decoded from
their ``Content-Encoding`` in bounded steps: :mod:`.decoding`), the queue of received
messages by ``queue_size`` (a full queue holds the responses back), error bodies by
what is kept of them, reconnections by ``max_reconnects`` (a resumed stream that
replays what it sent before counts as broken), the notifications and responses in
flight by :data:`MAX_NOTICES_IN_FLIGHT`, the tools whose parameters are mirrored by
:data:`MAX_REMEMBERED_TOOLS`. A batch the server sends is handed to the session whole.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, aclosing, suppress
from types import TracebackType
from typing import Any, Final, Literal, cast
from urllib.parse import urljoin, urlsplit

import anyio
import anyio.abc
import httpx
import msgspec
from msgspec import UNSET

from mcpspec.runtime.envelope import is_id
from mcpspec.runtime.errors import clip
from mcpspec.runtime.mirror import MirrorError, ParamHeader, request_headers
from mcpspec.runtime.negotiation import META_PROTOCOL_VERSION
from mcpspec.runtime.shallow import response_id

from ..errors import ConnectionClosed, MessageTooLarge
from ..scopes import Scopes
from ..transport import DEFAULT_MAX_MESSAGE_SIZE
from .client_events import SseDecoder
from .client_sse import LegacySseChannel, NoSseEndpoint
from .decoding import ACCEPT_ENCODING, decoded_chunks
from .library import library_of, timeout_of

__all__ = [
    "DEFAULT_TIMEOUT",
    "LIBRARY_HEADERS",
    "STANDALONE_WAIT",
    "HttpClientStream",
    "HttpTransport",
    "InitializeAnswer",
    "OutgoingEnvelope",
    "OutgoingParams",
    "media_type",
    "stateless_version",
]

logger = logging.getLogger("mcpspec.connection")

#: Which HTTP transport a client speaks: ``"auto"`` (Streamable HTTP, falling back to
#: HTTP+SSE when the URL has no Streamable HTTP endpoint), ``"streamable"`` or ``"sse"``.
HttpTransport = Literal["auto", "streamable", "sse"]

#: Seconds to connect, write, and read an answer that is not a stream.
DEFAULT_TIMEOUT: Final = 30.0
#: How long the client waits, after ``notifications/initialized``, for the server to
#: answer the ``GET`` of its standalone stream before it goes on (seconds).
STANDALONE_WAIT: Final = 5.0
#: Received messages held until read.
QUEUE_SIZE: Final = 64
#: Reconnections in a row that bring nothing new before a stream is given up.
MAX_RECONNECTS: Final = 5
#: Seconds before reconnecting when the server did not say (``retry``).
RECONNECT_DELAY: Final = 1.0
#: Event ids a resumed response stream remembers, to tell progress from replay.
MAX_SEEN_EVENT_IDS: Final = 1024
#: The shortest ``retry`` heeded, in seconds (``retry: 0`` would reconnect in a loop).
MIN_RETRY: Final = 0.1
#: How much of an error body is quoted in a made-up error.
BODY_QUOTED: Final = 512
#: Sessions renewed in a row (with no answered request between) before giving up.
MAX_RENEWALS: Final = 3
#: Notifications and responses posted at once (:meth:`HttpClientStream.send`).
MAX_NOTICES_IN_FLIGHT: Final = 16
#: Seconds closing waits for the notifications and responses being posted.
NOTICE_GRACE: Final = 1.0
#: Tools whose ``x-mcp-header`` parameters are remembered (the ones listed last).
MAX_REMEMBERED_TOOLS: Final = 4096
#: The longest session id accepted.
MAX_SESSION_ID: Final = 1024
#: Headers the stream writes; a caller's ``headers`` cannot set them.
LIBRARY_HEADERS: Final = frozenset(
    {
        "accept",
        "accept-encoding",
        "content-type",
        "content-length",
        "last-event-id",
        "mcp-protocol-version",
        "mcp-session-id",
        "mcp-method",
        "mcp-name",
    }
)
#: The reason of the error a request gets, and of the end of the stream, when the server
#: answers 404 to the session id.
SESSION_EXPIRED: Final = (
    "Session expired: the server no longer knows this session (HTTP 404); "
    "a new connection starts a new one"
)
_PARAM_HEADER_PREFIX: Final = "mcp-param-"
#: The first revision with the ``MCP-Protocol-Version`` header.
_VERSION_HEADER_SINCE: Final = "2025-06-18"
_ACCEPT_BOTH: Final = "application/json, text/event-stream"
#: JSON-RPC code of the errors made up here (an implementation-defined server error).
_TRANSPORT_ERROR: Final = -32000


# -- what the stream reads of a message -------------------------------------------------------


class OutgoingParams(msgspec.Struct, rename={"meta": "_meta", "request_id": "requestId"}):
    """The params members an outgoing message is posted by: ``_meta`` (2026-07-28's
    protocol version) and a cancellation's ``requestId``."""

    meta: dict[str, Any] | None = None
    request_id: Any = None


class OutgoingEnvelope(msgspec.Struct):
    """The members of an outgoing message that decide how it is posted (the checker
    reads ``jsonrpc`` too, to judge what it sends on purpose)."""

    jsonrpc: Any = None
    id: Any = UNSET
    method: Any = None
    params: OutgoingParams | None = None


#: An absent member read as raw JSON (``null`` and absent read alike).
_ABSENT: Final = msgspec.Raw(b"")


class _Incoming(msgspec.Struct):
    """The members of a received message that tell what it is."""

    jsonrpc: Any = None
    id: Any = UNSET
    method: Any = None
    result: msgspec.Raw = _ABSENT
    error: msgspec.Raw = _ABSENT


class _Version(msgspec.Struct, rename={"protocol_version": "protocolVersion"}):
    protocol_version: Any = None


class InitializeAnswer(msgspec.Struct):
    """The ``protocolVersion`` of an initialize result, as far as it can be read."""

    result: _Version | None = None


_OUTGOING = msgspec.json.Decoder(OutgoingEnvelope)
_INCOMING = msgspec.json.Decoder(_Incoming)
_INITIALIZE_ANSWER = msgspec.json.Decoder(InitializeAnswer)
_BATCH = msgspec.json.Decoder(list[msgspec.Raw])
#: What reading a server's JSON may raise: nesting too deep is a ``RecursionError``.
_DECODE_FAILURES = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


def _outgoing(data: bytes) -> OutgoingEnvelope:
    try:
        return _OUTGOING.decode(data)
    except _DECODE_FAILURES:
        return OutgoingEnvelope()


def _incoming(data: bytes) -> _Incoming | None:
    try:
        return _INCOMING.decode(data)
    except _DECODE_FAILURES:
        return None


def _answered_id(data: bytes, message: _Incoming | None) -> Any:
    """The id of the request the response ``data`` (read as ``message``, ``None`` when
    it does not parse) answers; ``UNSET`` when it is no response. A response that does
    not parse answers the request its leading members name, as the session reads it
    (:func:`~mcpspec.runtime.shallow.response_id`)."""
    if message is None:
        request_id = response_id(data)
        return UNSET if request_id is None else request_id
    request_id = message.id
    # ``is_id``: true (or 1.0) is no id, though it equals 1.
    return request_id if message.method is None and is_id(request_id) else UNSET


def _batch_answers(data: bytes, request_id: Any) -> bool:
    """Whether a member of the batch ``data`` answers ``request_id`` (members are read
    one level deep: a nested batch is the session's to refuse)."""
    try:
        members = _BATCH.decode(data)
    except _DECODE_FAILURES:
        return False
    for member in members:
        item = bytes(member)
        if item[:1] == b"{" and _answered_id(item, _incoming(item)) == request_id:
            return True
    return False


def _unattributed_error(message: _Incoming | None) -> Any:
    """The ``error`` of ``message`` when it is an error response whose id is null or
    absent (a server writes one when it cannot read the request's id); else ``None``."""
    if (
        message is None
        or message.jsonrpc != "2.0"
        or message.method is not None
        or message.result
        or not message.error
        or not (message.id is UNSET or message.id is None)
    ):
        return None
    try:
        return msgspec.json.decode(message.error)
    except _DECODE_FAILURES:
        return None


def stateless_version(message: OutgoingEnvelope | None) -> str | None:
    """The 2026-07-28 protocol version a request carries in its ``_meta``, if any."""
    params = None if message is None else message.params
    if params is None or params.meta is None:
        return None
    version = params.meta.get(META_PROTOCOL_VERSION)
    return version if isinstance(version, str) else None


def media_type(response: httpx.Response) -> str:
    """The response's media type, lower case, without parameters."""
    value: str = response.headers.get("content-type", "")
    return value.split(";")[0].strip().lower()


class _BodyTooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class _BodyStalled(Exception):
    def __init__(self, idle: float) -> None:
        super().__init__(idle)
        self.idle = idle


async def _read_body(chunks: AsyncGenerator[bytes, None], limit: int, idle: float | None) -> bytes:
    """The body of ``chunks``, read up to ``limit`` bytes; raises :class:`_BodyTooLarge`
    past it, and :class:`_BodyStalled` when no byte of it comes for ``idle`` seconds
    (``None``: no bound; the answers of a stream are read without one)."""
    body = bytearray()
    async with aclosing(chunks):
        while True:
            try:
                with anyio.fail_after(idle):
                    chunk = await chunks.__anext__()
            except StopAsyncIteration:
                return bytes(body)
            except TimeoutError:
                raise _BodyStalled(idle or 0.0) from None
            body += chunk
            if len(body) > limit:
                raise _BodyTooLarge(len(body))


class _Post:
    """A request posted, whose answer a task reads."""

    __slots__ = ("answered", "id", "method", "note", "renewed", "scope", "stateless")

    def __init__(self, request_id: Any, method: str, stateless: bool) -> None:
        self.id = request_id
        self.method = method
        self.stateless = stateless
        self.scope = anyio.CancelScope()
        self.answered = False
        #: Whether it was posted again in a renewed session.
        self.renewed = False
        #: Why no answer came, when something explains it (an oversized event ...).
        self.note: str | None = None


class HttpClientStream:
    """A message stream to the MCP server at ``url`` (see the module's docstring).

    Use it as an async context manager (``Client.http`` does). ``headers`` are sent with
    every HTTP request, but for the ones the stream writes itself (``Accept``,
    ``Content-Type``, ``MCP-Protocol-Version``, ``Mcp-Session-Id``, ``Mcp-Method``,
    ``Mcp-Name``, ``Mcp-Param-*``, ``Last-Event-ID``), which are dropped from them.
    ``auth`` is an auth of the HTTP library (or ``(user, password)``); ``timeout`` bounds
    connecting, writing and reading an answer that is not a stream (streams are read
    without one: a request's own ``timeout`` bounds it). ``http_client`` is an
    ``httpx.AsyncClient`` or an ``httpx2.AsyncClient`` to use (TLS, proxies, pools: the
    caller's, and left open; :mod:`.library`); without one the stream makes an ``httpx``
    one. ``transport`` picks the transport (:data:`HttpTransport`); with ``"sse"``,
    entering the stream opens the HTTP+SSE stream, within ``open_timeout`` seconds
    (``TimeoutError`` after).
    """

    #: :meth:`send` hands every message to a task of the stream, which posts it whole
    #: even when the sender is cancelled: a connection needs no shield around it.
    _completes_sends: Final = True

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        timeout: float | httpx.Timeout | None = DEFAULT_TIMEOUT,
        http_client: Any = None,
        transport: HttpTransport = "auto",
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        queue_size: int = QUEUE_SIZE,
        max_reconnects: int = MAX_RECONNECTS,
        reconnect_delay: float = RECONNECT_DELAY,
        renew_sessions: bool = True,
        open_timeout: float | None = None,
    ) -> None:
        if transport not in ("auto", "streamable", "sse"):
            raise ValueError(f"not an HTTP transport: {transport!r}")
        if max_message_size < 1 or queue_size < 1 or max_reconnects < 0:
            raise ValueError(
                "max_message_size and queue_size must be positive, max_reconnects not negative"
            )
        self.url = url
        self._headers = {
            name: value
            for name, value in (headers or {}).items()
            if name.lower() not in LIBRARY_HEADERS
            and not name.lower().startswith(_PARAM_HEADER_PREFIX)
        }
        library = library_of(http_client)
        #: Its ``error`` is what a transport failure raises.
        self._library = library
        self._auth: Any = library.client_default if auth is None else auth
        self._timeout = timeout_of(library, timeout)
        self._stream_timeout = library.timeout(
            connect=self._timeout.connect,
            read=None,
            write=self._timeout.write,
            pool=self._timeout.pool,
        )
        self._given_client = http_client
        self._client: Any = None
        self._transport_choice: HttpTransport = transport
        self._limit = max_message_size
        self._max_reconnects = max_reconnects
        self._reconnect_delay = reconnect_delay
        self._renew_sessions = renew_sessions
        self._open_timeout = open_timeout
        self._renewing = anyio.Lock()
        self._renewals = 0
        #: The opening messages, to open a new session with when the server ends one.
        self._initialize_body: bytes | None = None
        self._initialized_body: bytes | None = None
        send, receive = anyio.create_memory_object_stream[bytes | MessageTooLarge](queue_size)
        self._queue_in = send
        self._queue_out = receive
        self._task_group: anyio.abc.TaskGroup | None = None
        #: The tasks running (closing cancels them).
        self._scopes = Scopes()
        self._posts: dict[Any, _Post] = {}
        #: Room for the notifications and responses being posted.
        self._notices = anyio.Semaphore(MAX_NOTICES_IN_FLIGHT)
        self._tool_params: dict[str, Sequence[ParamHeader]] = {}
        self._initialize_id: Any = UNSET
        self._legacy: LegacySseChannel | None = None
        self._switching = anyio.Lock()
        self._listening = False
        #: The scope of the standalone stream's task, while it runs.
        self._listener: anyio.CancelScope | None = None
        self._closed = False
        self._deleted = False
        self._close_reason = "the connection is closed"
        #: The session id the server minted (handshake revisions), if any.
        self.session_id: str | None = None
        #: The protocol version negotiated by ``initialize``, or of the last 2026-07-28
        #: request; ``None`` before.
        self.protocol_version: str | None = None
        #: Whether the stream speaks the 2026-07-28 (stateless) model.
        self.stateless = False
        #: Whether the server said the session expired (HTTP 404).
        self.session_expired = False

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def transport(self) -> Literal["streamable", "sse"]:
        """The transport in use: ``"sse"`` once on HTTP+SSE, else ``"streamable"``."""
        return "sse" if self._legacy is not None else "streamable"

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            raise ConnectionClosed("the HTTP stream is not open")
        # Typed as httpx's: an httpx2 client has the same API.
        return cast("httpx.AsyncClient", self._client)

    async def __aenter__(self) -> HttpClientStream:
        self._client = (
            self._given_client if self._given_client is not None else self._library.client()
        )
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        if self._transport_choice == "sse":
            try:
                await self._open_legacy(self._open_timeout)
            except BaseException:
                await self.__aexit__(None, None, None)
                raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
        task_group, self._task_group = self._task_group, None
        if task_group is not None:
            task_group.cancel_scope.cancel()
            await task_group.__aexit__(None, None, None)
        if self._given_client is None and self._client is not None:
            with anyio.CancelScope(shield=True):
                await self._client.aclose()
        self._client = None

    async def aclose(self) -> None:
        """End the session (``DELETE``, when the server minted one), stop every request
        and stream in flight, and end :meth:`receive`. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._notices.value < MAX_NOTICES_IN_FLIGHT:
            # A notification just sent (a cancellation, say) is posted still, for a while.
            with anyio.move_on_after(NOTICE_GRACE, shield=True):
                for _ in range(MAX_NOTICES_IN_FLIGHT):
                    await self._notices.acquire()
        self._scopes.cancel()
        self._queue_in.close()
        with anyio.CancelScope(shield=True):
            await self._delete_session()

    async def _delete_session(self) -> None:
        session_id = self.session_id
        if session_id is None or self._deleted or self._legacy is not None:
            return
        self._deleted = True
        if self._client is None:
            return
        headers = {**self._headers, **self._session_headers()}
        try:
            with anyio.move_on_after(self._timeout.connect or DEFAULT_TIMEOUT):
                # The answer's body is not read: nothing in it matters now.
                async with self._open_exchange(
                    "DELETE", self.url, headers=headers, timeout=self._timeout
                ) as response:
                    if response.status_code >= 400 and response.status_code != 405:
                        logger.debug("DELETE of the session answered %s", response.status_code)
        except (self._library.error, ValueError) as exc:  # closing never raises
            logger.debug("DELETE of the session failed: %r", exc)

    def _end_receiving(self, reason: str) -> None:
        """No more messages will come: :meth:`receive` raises ``ConnectionClosed`` once
        the queued ones are read."""
        self._close_reason = reason
        self._queue_in.close()

    # -- the MessageStream protocol -------------------------------------------------------------

    async def receive(self) -> bytes:
        """The next message of the server; raises ``ConnectionClosed`` at the end and
        ``MessageTooLarge`` for one over the limit (dropped unread)."""
        try:
            item = await self._queue_out.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise ConnectionClosed(self._close_reason) from None
        if isinstance(item, MessageTooLarge):
            raise item
        return item

    async def send(self, data: bytes) -> None:
        """Post one message, from a task of the stream: ``send`` returns once that task
        is started, and the message is posted whole even when the caller is cancelled
        meanwhile. A request's task reads its answer too. At most
        :data:`MAX_NOTICES_IN_FLIGHT` notifications and responses are posted at once
        (``send`` waits for room), each acknowledgement bounded by the read timeout;
        ``send`` waits for ``notifications/initialized`` to be acknowledged, as the
        requests after it must not overtake it."""
        if self._closed or self._task_group is None or self.session_expired:
            raise ConnectionClosed(self._close_reason)
        message = _outgoing(data)
        method = message.method if isinstance(message.method, str) else None
        if method == "notifications/cancelled" and self._cancel(message):
            return
        if method is not None and message.id is not UNSET:
            self._send_request(data, message, method)
            return
        if method == "notifications/initialized" and self._legacy is None:
            self._initialized_body = data
        await self._notices.acquire()
        if self._closed:
            self._notices.release()
            raise ConnectionClosed(self._close_reason)
        acknowledged = anyio.Event()
        self._spawn(self._run_notice, data, message, method, acknowledged)
        if method == "notifications/initialized":
            await acknowledged.wait()

    # -- tools (2026-07-28) ---------------------------------------------------------------------

    def remember_tool_params(self, tools: Mapping[str, Sequence[ParamHeader]]) -> None:
        """Learn the ``x-mcp-header`` parameters of tools (name -> ``ParamHeader``\\ s,
        from :func:`mcpspec.runtime.mirror.param_headers`): ``tools/call`` requests for
        them carry the ``Mcp-Param-*`` headers. Only tools with such parameters are
        kept, the :data:`MAX_REMEMBERED_TOOLS` listed last: a server listing more new
        tools for ever does not make the client grow for ever."""
        remembered = self._tool_params
        for name, params in tools.items():
            remembered.pop(name, None)  # listed again: it moves to the newest
            if params:
                remembered[name] = params
        while len(remembered) > MAX_REMEMBERED_TOOLS:
            del remembered[next(iter(remembered))]

    def _params_of(self, name: str) -> Sequence[ParamHeader]:
        return self._tool_params.get(name, ())

    # -- posting -------------------------------------------------------------------------------

    def _session_headers(self) -> dict[str, str]:
        headers: dict[str, str] = {}
        version = self.protocol_version
        if not self.stateless and version is not None and version >= _VERSION_HEADER_SINCE:
            headers["MCP-Protocol-Version"] = version
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    async def _session_settled(self) -> None:
        """Wait while the session is being renewed: what is posted meanwhile would go
        without a session id."""
        if self._renewing.locked():
            async with self._renewing:
                pass

    def _post_headers(self, data: bytes, message: OutgoingEnvelope) -> dict[str, str]:
        headers = {**self._headers, "Accept": _ACCEPT_BOTH, "Content-Type": "application/json"}
        version = stateless_version(message)
        if version is not None:
            headers["MCP-Protocol-Version"] = version
            headers.update(_mirrored(data, self._params_of))
            return headers
        headers.update(self._session_headers())
        return headers

    def _send_request(self, data: bytes, message: OutgoingEnvelope, method: str) -> None:
        if method == "initialize":
            # A probe may have gone before: its version is not this handshake's.
            self._initialize_id = message.id
            self._initialize_body = data
            self.stateless = False
            self.protocol_version = None
        else:
            version = stateless_version(message)
            if version is not None and self._initialize_id is UNSET:
                self.stateless = True
                self.protocol_version = version
        post = _Post(message.id, method, stateless_version(message) is not None)
        self._posts[post.id] = post
        self._spawn(self._run_post, data, message, post)

    def _cancel(self, message: OutgoingEnvelope) -> bool:
        """Act on an outgoing ``notifications/cancelled``: close the response stream of
        the request it names (in 2026-07-28 that is the cancellation, and nothing is
        posted: ``True``)."""
        request_id = None if message.params is None else message.params.request_id
        post = self._posts.get(request_id) if request_id is not None else None
        if self.stateless or (post is not None and post.stateless):
            if post is not None:
                post.scope.cancel()
            return True
        if post is not None and self._legacy is None:
            # Disconnecting is no cancellation here: the notification is posted too; the
            # answer it makes moot is not waited for.
            post.scope.cancel()
        return False

    async def _run_notice(
        self,
        data: bytes,
        message: OutgoingEnvelope,
        method: str | None,
        acknowledged: anyio.Event,
    ) -> None:
        """Post a notification or a response (:meth:`send`), then open the standalone
        stream after ``notifications/initialized``. A failure is logged: nobody waits
        for the answer of a notification."""
        what = method or "a response"
        try:
            with anyio.move_on_after(self._timeout.read) as bound:
                await self._post_notice(data, message)
            if bound.cancelled_caught:
                logger.warning(
                    "the server did not acknowledge %s within %g s", what, self._timeout.read
                )
            elif (
                method == "notifications/initialized"
                and self._legacy is None  # HTTP+SSE has its one stream already
                and not self._listening
            ):
                self._listening = True
                await self._start_listening()
        except ConnectionClosed as exc:
            logger.warning("%s was not posted: %s", what, exc)
        finally:
            self._notices.release()
            acknowledged.set()

    async def _post_notice(self, data: bytes, message: OutgoingEnvelope) -> None:
        """Post a notification or a response and read the server's acknowledgement."""
        if self._legacy is not None:
            await self._post_legacy(data, None)
            return
        for attempt in range(2):
            await self._session_settled()
            try:
                headers = self._post_headers(data, message)
            except MirrorError as exc:
                raise ConnectionClosed(
                    f"the message cannot be mirrored into headers: {exc}"
                ) from exc
            expired = await self._post_once(data, headers)
            if expired is None:
                break
            if attempt or not await self._renew(expired):
                self._expire()
                raise ConnectionClosed(self._close_reason)
            if data == self._initialized_body:
                return  # renewing posted it to the new session already

    async def _start_listening(self) -> None:
        """Open the standalone stream (after ``initialize``, or a renewed session's).
        It is opened before the session goes on: else the next requests could race it
        to the server, which may send their answers on it once it opens. A server slow
        to answer the ``GET`` is waited for a while only."""
        if self._listener is not None:
            self._listener.cancel()  # the stream of a session the server ended
        opened = anyio.Event()
        self._spawn(self._listen, opened)
        with anyio.move_on_after(STANDALONE_WAIT):
            await opened.wait()

    def _open_exchange(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str | bytes],
        timeout: Any,
        content: bytes | None = None,
    ) -> AbstractAsyncContextManager[httpx.Response]:
        """One HTTP exchange with the server, its response streamed (auth as given). A
        header value given as bytes is sent as it is (httpx takes them, though its
        hints name text only)."""
        return self._http().stream(
            method,
            url,
            content=content,
            headers=cast("Mapping[str, str]", {**headers, "Accept-Encoding": ACCEPT_ENCODING}),
            auth=self._auth,
            timeout=timeout,
        )

    async def _post_once(self, data: bytes, headers: dict[str, str]) -> str | None:
        """Post a notification or response; the session id the server answered 404 to,
        if it did."""
        try:
            async with self._open_exchange(
                "POST",
                self.url,
                content=data,
                headers=headers,
                timeout=self._timeout,
            ) as response:
                status = response.status_code
                if status == 404 and "Mcp-Session-Id" in headers:
                    return headers["Mcp-Session-Id"]
                if status >= 400:
                    await self._deliver_error_body(response, None)
        except self._library.error as exc:
            raise ConnectionClosed(f"POST {self.url} failed: {exc!r}") from exc
        return None

    def _chunks(self, response: httpx.Response) -> AsyncGenerator[bytes, None]:
        """The body of ``response``, decoded in bounded steps (:mod:`.decoding`)."""
        return decoded_chunks(response, error=self._library.decoding_error)

    async def _read_body(self, response: httpx.Response) -> bytes:
        """The body of an answer that is not a stream (:func:`_read_body`)."""
        return await _read_body(self._chunks(response), self._limit, self._timeout.read)

    def _spawn(self, function: Callable[..., Any], *args: Any) -> None:
        """Run ``function(*args)`` in a task that closing the stream cancels."""
        assert self._task_group is not None
        self._task_group.start_soon(self._scopes.run, function, args)

    async def _run_post(self, data: bytes, message: OutgoingEnvelope, post: _Post) -> None:
        """Post a request and deliver its answer, or an error made up for it."""
        try:
            with post.scope:
                try:
                    if self._legacy is not None:
                        await self._post_legacy_request(data, post)
                    elif await self._exchange(data, message, post):
                        post.renewed = True
                        await self._exchange(data, message, post)
                except self._library.error as exc:
                    post.note = f"HTTP request failed: {exc!r}"
                except _BodyTooLarge as exc:
                    post.note = (
                        f"the answer of {exc.size}+ bytes is over the limit of {self._limit}"
                    )
                except _BodyStalled as exc:
                    post.note = f"the answer's body stalled: nothing came for {exc.idle:g} s"
                except MirrorError as exc:
                    post.note = f"the request cannot be mirrored into headers: {exc}"
                except Exception as exc:  # a bug here must not end every other request
                    logger.exception("reading the answer to %s failed", post.method)
                    post.note = f"the answer could not be read: {type(exc).__name__}"
                if not post.answered:
                    await self._make_up_error(post, post.note or "no answer from the server")
        finally:
            if self._posts.get(post.id) is post:
                del self._posts[post.id]

    async def _exchange(self, data: bytes, message: OutgoingEnvelope, post: _Post) -> bool:
        """Post a request and deliver what answers it; ``True`` when the session expired
        and a new one was opened: the request is to be posted again."""
        await self._session_settled()
        headers = self._post_headers(data, message)
        async with self._open_exchange(
            "POST",
            self.url,
            content=data,
            headers=headers,
            timeout=self._stream_timeout,
        ) as response:
            status = response.status_code
            if post.method == "initialize" and status < 300:
                self._learn_session(response)
            if status == 404 and "Mcp-Session-Id" in headers:
                if not post.renewed and await self._renew(headers["Mcp-Session-Id"]):
                    return True
                await self._make_up_error(post, SESSION_EXPIRED, status=404)
                self._expire()
                return False
            if status < 300:
                self._renewals = 0
            if status >= 400:
                quoted = await self._deliver_error_body(response, post)
                if quoted is None:
                    return False
                if (
                    post.method == "initialize"
                    and status in (400, 404, 405)
                    and self._transport_choice == "auto"
                    and await self._switch_to_legacy()
                ):
                    await self._post_legacy(data, post)
                    return False
                post.note = _status_note(response)
                await self._make_up_error(post, post.note, status=status, body=quoted)
                return False
            media = media_type(response)
            if media == "text/event-stream":
                decoder = SseDecoder(self._limit)
                await self._read_events(response, decoder, post)
                if not post.answered and not post.stateless:
                    await self._resume(post, decoder)
            elif media == "application/json":
                body = await self._read_body(response)
                await self._deliver_body(body, post)
            elif 300 <= status < 400 and "location" in response.headers:
                # Not followed: a redirect may lead elsewhere with the caller's
                # credentials. The caller can connect to where it leads.
                target = clip(response.headers["location"], 200)
                post.note = f"HTTP {status} redirects to {target!r}: connect to that URL"
            else:
                post.note = f"HTTP {status} with {media or 'no body'}: no answer"
        return False

    def _learn_session(self, response: httpx.Response) -> None:
        session_id = response.headers.get("mcp-session-id")
        if session_id is None:
            return
        if 0 < len(session_id) <= MAX_SESSION_ID and all(
            0x21 <= ord(c) <= 0x7E for c in session_id
        ):
            self.session_id = session_id
        else:
            logger.warning("the server minted an invalid session id: ignored")

    async def _renew(self, expired: str) -> bool:
        """The server ended session ``expired`` (HTTP 404): open a new one as the
        specification says (the same ``initialize`` posted without the session id, then
        ``notifications/initialized``); whether the stream has a session to go on with.

        The new session must negotiate the same protocol version; what the old one held
        on the server (a logging level, resource subscriptions) is not set again."""
        if (
            not self._renew_sessions
            or self._initialize_body is None
            or self._initialized_body is None
        ):
            return False
        async with self._renewing:
            if self.session_id != expired:
                return not self.session_expired  # renewed meanwhile
            if self._renewals >= MAX_RENEWALS:
                return False
            self._renewals += 1
            self.session_id = None
            renewed = False
            try:
                with anyio.fail_after(self._timeout.read or DEFAULT_TIMEOUT):
                    renewed = await self._initialize_again()
            except (self._library.error, TimeoutError, _BodyTooLarge, _BodyStalled):
                renewed = False
            finally:
                if not renewed:
                    # Failed, or cancelled with the request that renews (its caller's
                    # timeout), maybe before `notifications/initialized`: the next
                    # request meets the 404 again and renews then.
                    self.session_id = expired
            if renewed:
                logger.info("the server ended the session: a new one was opened")
        if renewed and self._listening:
            await self._start_listening()
        return renewed

    async def _initialize_again(self) -> bool:
        assert self._initialize_body is not None and self._initialized_body is not None
        version = self.protocol_version
        headers = {**self._headers, "Accept": _ACCEPT_BOTH, "Content-Type": "application/json"}
        async with self._open_exchange(
            "POST",
            self.url,
            content=self._initialize_body,
            headers=headers,
            timeout=self._stream_timeout,
        ) as response:
            if response.status_code >= 300:
                return False
            self._learn_session(response)
            answered = await self._initialize_answer(response)
        if answered is None or answered != version:
            self.session_id = None
            return False
        self.protocol_version = answered
        headers.update(self._session_headers())
        async with self._open_exchange(
            "POST", self.url, content=self._initialized_body, headers=headers, timeout=self._timeout
        ) as response:
            return response.status_code < 300  # its body (of a 202: none) is not read

    async def _initialize_answer(self, response: httpx.Response) -> str | None:
        """The protocol version of the initialize result in ``response`` (JSON or
        SSE); nothing of it is delivered."""

        def version_of(data: bytes) -> str | None:
            message = _incoming(data)
            if message is None or message.id != self._initialize_id or not message.result:
                return None
            try:
                result = _INITIALIZE_ANSWER.decode(data).result
            except _DECODE_FAILURES:
                return None
            found = None if result is None else result.protocol_version
            return found if isinstance(found, str) else None

        if media_type(response) == "application/json":
            return version_of(await self._read_body(response))
        if media_type(response) != "text/event-stream":
            return None
        decoder = SseDecoder(self._limit)
        async for chunk in self._chunks(response):
            for event in decoder.feed(chunk):
                if event.event == "message" and event.data is not None:
                    version = version_of(event.data)
                    if version is not None:
                        return version
        return None

    def _expire(self) -> None:
        """The server answered 404 to the session id: the session is over."""
        self.session_expired = True
        self.session_id = None
        self._deleted = True
        self._end_receiving(SESSION_EXPIRED)

    # -- answers --------------------------------------------------------------------------------

    async def _put(self, item: bytes | MessageTooLarge) -> None:
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._queue_in.send(item)  # closed: nobody reads any more

    async def _deliver_message(self, data: bytes, post: _Post | None) -> None:
        """Queue one message, noting when it answers ``post``. A batch is queued whole,
        for the session to apply its rules to; it answers ``post`` when one of its
        members does."""
        if data.lstrip()[:1] == b"[":
            if post is not None and not post.answered and _batch_answers(data, post.id):
                post.answered = True
            await self._put(data)
            return
        if post is not None and not post.answered:
            message = _incoming(data)
            if _answered_id(data, message) == post.id:
                post.answered = True
                self._learn_version(post, data)
            else:
                error = _unattributed_error(message)
                if error is not None:
                    # The server could not read the id of the one request the POST
                    # carried: its error answers that request.
                    data = msgspec.json.encode({"jsonrpc": "2.0", "id": post.id, "error": error})
                    post.answered = True
        await self._put(data)

    def _learn_version(self, post: _Post, data: bytes) -> None:
        if post.method != "initialize" or post.id != self._initialize_id:
            return
        try:
            result = _INITIALIZE_ANSWER.decode(data).result
        except _DECODE_FAILURES:
            return
        version = None if result is None else result.protocol_version
        # Kept only when it can travel in a header (a revision is a date): any other
        # answer fails the negotiation, and closing must still send a valid DELETE.
        if (
            isinstance(version, str)
            and 0 < len(version) <= 64
            and version.isascii()
            and version.isprintable()
        ):
            self.protocol_version = version

    async def _deliver_body(self, body: bytes, post: _Post) -> None:
        if body.strip():
            await self._deliver_message(body, post)

    async def _deliver_error_body(self, response: httpx.Response, post: _Post | None) -> str | None:
        """Deliver the JSON-RPC message of an error answer, if it is one (an error with
        id null, or none, answers ``post``): ``None``; else the start of the body, to
        quote."""
        try:
            body = await self._read_body(response)
        except _BodyTooLarge as exc:
            return f"({exc.size}+ bytes)"
        except (self._library.error, _BodyStalled):
            body = b""
        quoted = body[:BODY_QUOTED].decode("utf-8", "replace")
        message = _incoming(body) if body.lstrip()[:1] == b"{" else None
        if message is None or message.jsonrpc != "2.0":
            return quoted
        if not message.error and not message.result:
            return quoted
        await self._deliver_message(body, post)
        return None

    async def _make_up_error(
        self, post: _Post, reason: str, *, status: int | None = None, body: str = ""
    ) -> None:
        """Answer ``post`` with an error response made up here."""
        data: dict[str, Any] = {}
        if status is not None:
            data["status"] = status
        if body:
            data["body"] = body
        error: dict[str, Any] = {"code": _TRANSPORT_ERROR, "message": reason}
        if data:
            error["data"] = data
        post.answered = True
        await self._put(msgspec.json.encode({"jsonrpc": "2.0", "id": post.id, "error": error}))

    # -- streams --------------------------------------------------------------------------------

    async def _read_events(
        self, response: httpx.Response, decoder: SseDecoder, post: _Post | None
    ) -> bool:
        """Deliver the ``message`` events of an SSE body until it ends (or answers
        ``post``); whether any event came."""
        seen = False
        async for chunk in self._chunks(response):
            before = decoder.last_event_id
            for event in decoder.feed(chunk):
                seen = True
                if event.event != "message":
                    continue
                if event.data is None:
                    if post is not None:
                        post.note = (
                            f"an event of {event.size} bytes over the limit of {self._limit} "
                            "was dropped"
                        )
                    await self._put(MessageTooLarge(event.size, self._limit))
                    continue
                await self._deliver_message(event.data, post)
            seen = seen or decoder.last_event_id != before
            if post is not None and post.answered:
                return seen
        if post is not None and decoder.dropping:
            post.note = f"an event over the limit of {self._limit} bytes was dropped"
        return seen

    def _get_headers(self, last_event_id: str | None) -> dict[str, Any]:
        headers: dict[str, Any] = {
            **self._headers,
            "Accept": "text/event-stream",
            **self._session_headers(),
        }
        if last_event_id is not None:
            # An event id is any text but CR, LF and NUL: sent as its UTF-8 bytes, as
            # browsers send it (a header value of text must be ASCII).
            headers["Last-Event-ID"] = last_event_id.encode("utf-8")
        return headers

    async def _resume(self, post: _Post, decoder: SseDecoder) -> None:
        """A response stream ended before its answer: reconnect with ``GET`` and
        ``Last-Event-ID`` (after the server's ``retry``) while that brings events with
        ids not seen before."""
        failures = 0
        seen_ids = {decoder.last_event_id}
        while not post.answered and decoder.last_event_id is not None:
            if failures >= self._max_reconnects:
                post.note = f"the response stream broke {failures} times without an answer"
                return
            await anyio.sleep(self._delay(decoder.retry))
            resumed = SseDecoder(self._limit)
            resumed.last_event_id, resumed.retry = decoder.last_event_id, decoder.retry
            decoder = resumed
            try:
                async with self._open_exchange(
                    "GET",
                    self.url,
                    headers=self._get_headers(decoder.last_event_id),
                    timeout=self._stream_timeout,
                ) as response:
                    if response.status_code >= 400 or media_type(response) != "text/event-stream":
                        post.note = f"resuming the response stream: HTTP {response.status_code}"
                        return
                    await self._read_events(response, decoder, post)
            except self._library.error:
                pass
            # Only a new event id is progress: a server replaying the same events for
            # ever is given up like one that sends nothing.
            if decoder.last_event_id in seen_ids:
                failures += 1
            else:
                failures = 0
                if len(seen_ids) < MAX_SEEN_EVENT_IDS:
                    seen_ids.add(decoder.last_event_id)
        if not post.answered and post.note is None:
            post.note = "the response stream ended without an answer"

    def _delay(self, retry: float | None) -> float:
        """Seconds before reconnecting: the server's ``retry`` (at least
        :data:`MIN_RETRY`), else ``reconnect_delay``."""
        return self._reconnect_delay if retry is None else max(retry, MIN_RETRY)

    async def _listen(self, opened: anyio.Event) -> None:
        """The standalone ``GET`` stream of the server's own requests and notifications
        (handshake revisions), reconnected while it brings something. ``opened`` is set
        once the first ``GET`` is answered (or failed). A renewed session's stream
        replaces it (:meth:`_start_listening` cancels it)."""
        with anyio.CancelScope() as scope:
            self._listener = scope
            try:
                await self._listen_until_done(opened)
            except Exception:
                # A bug here must not end the connection: only this stream ends.
                logger.exception("reading the standalone SSE stream failed")
            finally:
                if self._listener is scope:
                    self._listener = None
                opened.set()

    async def _listen_until_done(self, opened: anyio.Event) -> None:
        last_event_id: str | None = None
        retry: float | None = None
        failures = 0
        while failures <= self._max_reconnects and not self._closed:
            decoder = SseDecoder(self._limit)
            decoder.last_event_id, decoder.retry = last_event_id, retry
            try:
                async with self._open_exchange(
                    "GET",
                    self.url,
                    headers=self._get_headers(last_event_id),
                    timeout=self._stream_timeout,
                ) as response:
                    opened.set()
                    if response.status_code >= 400 or media_type(response) != "text/event-stream":
                        logger.debug("no standalone SSE stream: HTTP %s", response.status_code)
                        return
                    progressed = await self._read_events(response, decoder, None)
            except self._library.error as exc:
                logger.debug("the standalone SSE stream broke: %r", exc)
                progressed = False
            opened.set()
            last_event_id, retry = decoder.last_event_id, decoder.retry
            failures = 0 if progressed else failures + 1
            await anyio.sleep(self._delay(retry))

    # -- HTTP+SSE (2024-11-05) ------------------------------------------------------------------

    async def _open_legacy(self, within: float | None = None) -> None:
        """Open the HTTP+SSE stream: at its URL, else at its ``sse`` sibling, the
        endpoint event awaited for the read timeout at each, and ``within`` seconds in
        all (``TimeoutError`` after)."""
        assert self._task_group is not None
        channel = LegacySseChannel(
            self._http(),
            http_error=self._library.error,
            decoding_error=self._library.decoding_error,
            headers=self._headers,
            auth=self._auth,
            timeout=self._stream_timeout,
            max_message_size=self._limit,
            deliver=self._put_legacy,
            ended=self._end_receiving,
        )
        failures: list[str] = []
        deadline = None if within is None else anyio.current_time() + within
        for url in _sse_urls(self.url):
            wait = self._timeout.read
            if deadline is not None:
                left = deadline - anyio.current_time()
                if left <= 0:
                    break
                wait = left if wait is None else min(wait, left)
            try:
                await channel.open(self._task_group, url, wait=wait)
            except NoSseEndpoint as exc:
                failures.append(str(exc))
                continue
            self._legacy = channel
            logger.debug("%s speaks HTTP+SSE: posting to %s", self.url, channel.endpoint)
            return
        if deadline is not None and anyio.current_time() >= deadline:
            raise TimeoutError(f"no HTTP+SSE endpoint within {within:g} s: " + "; ".join(failures))
        raise ConnectionClosed("no HTTP+SSE endpoint: " + "; ".join(failures))

    async def _put_legacy(self, item: bytes | MessageTooLarge) -> None:
        """Queue a message of the HTTP+SSE stream, noting the request it answers."""
        if not isinstance(item, MessageTooLarge) and item.lstrip()[:1] == b"{":
            answered = _answered_id(item, _incoming(item))
            post = self._posts.get(answered) if answered is not UNSET else None
            if post is not None:
                # Its POST is not acknowledged yet (or never will be): it is answered
                # all the same, and no error is to be made up for it.
                post.answered = True
            if answered is not UNSET and answered == self._initialize_id:
                self._learn_version(_Post(answered, "initialize", False), item)
        await self._put(item)

    async def _switch_to_legacy(self) -> bool:
        """Try HTTP+SSE after ``initialize`` was refused."""
        async with self._switching:
            if self._legacy is not None:
                return True
            try:
                await self._open_legacy()
            except ConnectionClosed as exc:
                logger.debug("no fallback to HTTP+SSE: %s", exc)
                return False
            return True

    async def _post_legacy_request(self, data: bytes, post: _Post) -> None:
        """Post a request to the HTTP+SSE endpoint: its acknowledgement is bounded by
        the read timeout (its answer comes on the stream, bounded by the caller)."""
        with anyio.move_on_after(self._timeout.read) as bound:
            await self._post_legacy(data, post)
        if bound.cancelled_caught:
            post.note = f"the POST was not acknowledged within {self._timeout.read:g} s"

    async def _post_legacy(self, data: bytes, post: _Post | None) -> None:
        """Post a message to the HTTP+SSE endpoint; its answer comes on the stream."""
        channel = self._legacy
        assert channel is not None and channel.endpoint is not None
        headers = {**self._headers, "Content-Type": "application/json"}
        try:
            async with self._open_exchange(
                "POST",
                channel.endpoint,
                content=data,
                headers=headers,
                timeout=self._timeout,
            ) as response:
                status = response.status_code
                if status < 400:
                    if post is not None:
                        post.answered = True  # the answer comes on the SSE stream
                    return
                quoted = await self._deliver_error_body(response, post)
                if quoted is not None and post is not None:
                    await self._make_up_error(
                        post, _status_note(response), status=status, body=quoted
                    )
        except (self._library.error, _BodyTooLarge) as exc:
            if post is None:
                raise ConnectionClosed(f"POST {channel.endpoint} failed: {exc!r}") from exc
            await self._make_up_error(post, f"HTTP request failed: {exc!r}")


def _status_note(response: httpx.Response) -> str:
    return f"HTTP {response.status_code} {response.reason_phrase}".strip()


def _sse_urls(url: str) -> list[str]:
    """Where an HTTP+SSE stream may be: the URL itself, then its ``sse`` sibling."""
    urls = [url]
    if not urlsplit(url).path.rstrip("/").endswith("/sse"):
        sibling = urljoin(url, "sse")
        if sibling != url:
            urls.append(sibling)
    return urls


def _mirrored(data: bytes, params_of: Callable[[str], Sequence[ParamHeader]]) -> dict[str, str]:
    """The 2026-07-28 request headers mirrored from the body."""
    return request_headers(data, params_of)
