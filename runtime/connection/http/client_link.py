"""What every HTTP transport of the client shares: :class:`ClientLink`.

The three transports a client speaks (:mod:`.client_streamable`, :mod:`.client_stateless`,
:mod:`.client_legacy`) differ in the headers they post with and in what they do around a
post; the rest is here, once:

* one HTTP client to the server (``httpx`` or ``httpx2``: :mod:`.library`), every
  exchange asking for the codings :mod:`.decoding` undoes in bounded steps;
* the queue of the messages received, bounded by ``queue_size`` (a full queue holds the
  responses back), read by :meth:`ClientLink.receive`;
* a task per message posted (:meth:`ClientLink.start_request`,
  :meth:`ClientLink.send_notice`), each cancelled when the link closes; at most
  :data:`MAX_NOTICES_IN_FLIGHT` notifications and responses at once;
* reading an answer: a body bounded by ``max_message_size`` and by the read timeout
  between two chunks, the ``message`` events of an SSE body, a JSON-RPC error body, and
  an error response made up for a request that no answer will come for.

HTTP failures never leave a request waiting: a 4xx/5xx with a JSON-RPC body is
delivered as that message; an error with id null (or none), in any answer to a POST,
answers the request posted (the server could not read its id). Without a JSON-RPC body,
and for a transport failure, a response stream that ends unanswered or an oversized
answer, a JSON-RPC error response for the request is made up here (code -32000, ``data``
with the HTTP ``status`` and the start of the ``body``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, aclosing, suppress
from typing import Any, Final, cast

import anyio
import anyio.abc
import httpx
import msgspec
from msgspec import UNSET

from mcpspec.runtime.envelope import is_id
from mcpspec.runtime.errors import clip
from mcpspec.runtime.session.version_negotiation import META_PROTOCOL_VERSION
from mcpspec.runtime.unparsed_response import response_id

from ..errors import ConnectionClosed, MessageTooLarge
from ..scopes import Scopes
from .decoding import ACCEPT_ENCODING, decoded_chunks
from .library import library_of, timeout_of
from .oauth_discovery import OAuthError
from .sse_decoder import SseDecoder

__all__ = [
    "ACCEPT_BOTH",
    "DEFAULT_TIMEOUT",
    "LIBRARY_HEADERS",
    "MAX_NOTICES_IN_FLIGHT",
    "PARAM_HEADER_PREFIX",
    "QUEUE_SIZE",
    "BodyStalled",
    "BodyTooLarge",
    "ClientLink",
    "HttpClientTransport",
    "InitializeAnswer",
    "OutgoingEnvelope",
    "OutgoingParams",
    "Post",
    "answered_id",
    "incoming",
    "initialize_version",
    "media_type",
    "outgoing",
    "stateless_version",
    "status_note",
]

logger = logging.getLogger("mcpspec.connection")

#: Seconds to connect, write, and read an answer that is not a stream.
DEFAULT_TIMEOUT: Final = 30.0
#: Received messages held until read.
QUEUE_SIZE: Final = 64
#: How much of an error body is quoted in a made-up error.
BODY_QUOTED: Final = 512
#: Notifications and responses posted at once (:meth:`ClientLink.send_notice`).
MAX_NOTICES_IN_FLIGHT: Final = 16
#: Seconds closing waits for the notifications and responses being posted.
NOTICE_GRACE: Final = 1.0
#: Headers the client writes; a caller's ``headers`` cannot set them.
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
#: The prefix of the headers a 2026-07-28 request mirrors its tool's parameters into.
PARAM_HEADER_PREFIX: Final = "mcp-param-"
#: What a POST accepts as its answer.
ACCEPT_BOTH: Final = "application/json, text/event-stream"
#: JSON-RPC code of the errors made up here (an implementation-defined server error).
_TRANSPORT_ERROR: Final = -32000


# -- what the client reads of a message -------------------------------------------------------


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


def outgoing(data: bytes) -> OutgoingEnvelope:
    """What decides how the message ``data`` is posted (nothing, when it does not
    parse: it is posted as it is, for the server to refuse)."""
    try:
        return _OUTGOING.decode(data)
    except _DECODE_FAILURES:
        return OutgoingEnvelope()


def incoming(data: bytes) -> _Incoming | None:
    """What the received message ``data`` is; ``None`` when it does not parse."""
    try:
        return _INCOMING.decode(data)
    except _DECODE_FAILURES:
        return None


def answered_id(data: bytes, message: _Incoming | None) -> Any:
    """The id of the request the response ``data`` (read as ``message``, ``None`` when
    it does not parse) answers; ``UNSET`` when it is no response. A response that does
    not parse answers the request its leading members name, as the session reads it
    (:func:`~mcpspec.runtime.unparsed_response.response_id`)."""
    if message is None:
        request_id = response_id(data)
        return UNSET if request_id is None else request_id
    request_id = message.id
    # ``is_id``: true (or 1.0) is no id, though it equals 1.
    return request_id if message.method is None and is_id(request_id) else UNSET


def initialize_version(data: bytes) -> str | None:
    """The ``protocolVersion`` of the initialize result ``data``, when it is text that
    can travel in a header (a revision is a date); else ``None``."""
    try:
        result = _INITIALIZE_ANSWER.decode(data).result
    except _DECODE_FAILURES:
        return None
    version = None if result is None else result.protocol_version
    if (
        isinstance(version, str)
        and 0 < len(version) <= 64
        and version.isascii()
        and version.isprintable()
    ):
        return version
    return None


def _batch_answers(data: bytes, request_id: Any) -> bool:
    """Whether a member of the batch ``data`` answers ``request_id`` (members are read
    one level deep: a nested batch is the session's to refuse)."""
    try:
        members = _BATCH.decode(data)
    except _DECODE_FAILURES:
        return False
    for member in members:
        item = bytes(member)
        if item[:1] == b"{" and answered_id(item, incoming(item)) == request_id:
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


def status_note(response: httpx.Response) -> str:
    """``HTTP <status> <reason>``, to explain an error made up for a request."""
    return f"HTTP {response.status_code} {response.reason_phrase}".strip()


class BodyTooLarge(Exception):
    """A body grew past the message size limit (``size``: the bytes read so far)."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class BodyStalled(Exception):
    """No byte of a body came for ``idle`` seconds."""

    def __init__(self, idle: float) -> None:
        super().__init__(idle)
        self.idle = idle


async def _read_body(chunks: AsyncGenerator[bytes, None], limit: int, idle: float | None) -> bytes:
    """The body of ``chunks``, read up to ``limit`` bytes; raises :class:`BodyTooLarge`
    past it, and :class:`BodyStalled` when no byte of it comes for ``idle`` seconds
    (``None``: no bound)."""
    body = bytearray()
    async with aclosing(chunks):
        while True:
            try:
                with anyio.fail_after(idle):
                    chunk = await chunks.__anext__()
            except StopAsyncIteration:
                return bytes(body)
            except TimeoutError:
                raise BodyStalled(idle or 0.0) from None
            body += chunk
            if len(body) > limit:
                raise BodyTooLarge(len(body))


class Post:
    """A request posted, whose answer a task of the link reads."""

    __slots__ = ("answered", "id", "method", "note", "on_answer", "scope", "stateless")

    def __init__(
        self,
        request_id: Any,
        method: str,
        stateless: bool,
        on_answer: Callable[[bytes], None] | None = None,
    ) -> None:
        self.id = request_id
        self.method = method
        #: Whether it is a 2026-07-28 request: cancelling it closes its response stream.
        self.stateless = stateless
        self.scope = anyio.CancelScope()
        self.answered = False
        #: Given the message that answers it (a transport learns from some answers).
        self.on_answer = on_answer
        #: Why no answer came, when something explains it (an oversized event ...).
        self.note: str | None = None


class HttpClientTransport:
    """One HTTP transport of MCP as the client speaks it, over a :class:`ClientLink`:
    what a connection needs of a message stream
    (:class:`~mcpspec.runtime.connection.transport.MessageStream`), and
    :meth:`send_message` for a message already read (the selector reads each message
    once, to pick its transport). A transport says how a message is posted and how it
    ends; receiving is the link's."""

    #: The protocol version the transport's messages go with, once known.
    protocol_version: str | None
    _link: ClientLink

    async def receive(self) -> bytes:
        """The next message of the server (:meth:`ClientLink.receive`)."""
        return await self._link.receive()

    async def send(self, data: bytes, *, related_request_id: int | str | None = None) -> None:
        """Post one message (:meth:`send_message`); what it relates to matters to a
        server's routing only."""
        await self.send_message(data, outgoing(data))

    async def send_message(self, data: bytes, message: OutgoingEnvelope) -> None:
        """Post one message, ``data``, read as ``message`` (:func:`outgoing`)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Stop every request and stream in flight, and end what the transport holds
        on the server."""
        raise NotImplementedError


class ClientLink:
    """The client's link to the server at ``url``, shared by its transports: the HTTP
    client, the queue of received messages, the tasks that post, and the reading of
    answers (see the module's docstring). :meth:`open` and :meth:`close` bracket it;
    :meth:`stop` ends the posting and the receiving."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None,
        auth: Any,
        timeout: float | httpx.Timeout | None,
        http_client: Any,
        max_message_size: int,
        queue_size: int,
    ) -> None:
        self.url = url
        #: The caller's headers, but for the ones the client writes itself.
        self.headers = {
            name: value
            for name, value in (headers or {}).items()
            if name.lower() not in LIBRARY_HEADERS
            and not name.lower().startswith(PARAM_HEADER_PREFIX)
        }
        library = library_of(http_client)
        #: Its ``error`` is what a transport failure raises.
        self.library = library
        #: The auth of every exchange (the library's, or the client's own).
        self.auth: Any = library.client_default if auth is None else auth
        #: Bounds connecting, writing, and reading an answer that is not a stream.
        self.timeout = timeout_of(library, timeout)
        #: The same without a read bound: a stream is read as long as it lasts.
        self.stream_timeout = library.timeout(
            connect=self.timeout.connect,
            read=None,
            write=self.timeout.write,
            pool=self.timeout.pool,
        )
        self.limit = max_message_size
        self._given_client = http_client
        self._client: Any = None
        send, receive = anyio.create_memory_object_stream[bytes | MessageTooLarge](queue_size)
        self._queue_in = send
        self._queue_out = receive
        self._task_group: anyio.abc.TaskGroup | None = None
        #: The tasks running (stopping cancels them).
        self._scopes = Scopes()
        #: The requests whose answers are being read, by id.
        self.posts: dict[Any, Post] = {}
        #: Room for the notifications and responses being posted.
        self._notices = anyio.Semaphore(MAX_NOTICES_IN_FLIGHT)
        self.closed = False
        self.close_reason = "the connection is closed"

    # -- lifecycle ------------------------------------------------------------------------------

    async def open(self) -> None:
        """Make the HTTP client (unless one was given) and the task group of the tasks."""
        self._client = (
            self._given_client if self._given_client is not None else self.library.client()
        )
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group

    async def close(self) -> None:
        """Cancel every task left and close the HTTP client made here (:meth:`stop`
        first)."""
        task_group, self._task_group = self._task_group, None
        if task_group is not None:
            task_group.cancel_scope.cancel()
            await task_group.__aexit__(None, None, None)
        if self._given_client is None and self._client is not None:
            with anyio.CancelScope(shield=True):
                await self._client.aclose()
        self._client = None

    @property
    def connected(self) -> bool:
        """Whether the HTTP client is there (between :meth:`open` and :meth:`close`)."""
        return self._client is not None

    @property
    def task_group(self) -> anyio.abc.TaskGroup:
        """The task group of the link's tasks (while open)."""
        if self._task_group is None:
            raise ConnectionClosed(self.close_reason)
        return self._task_group

    async def stop(self) -> bool:
        """Stop every request and stream in flight (after a grace for the notifications
        being posted) and end :meth:`receive`; ``False`` when stopped already."""
        if self.closed:
            return False
        self.closed = True
        if self._notices.value < MAX_NOTICES_IN_FLIGHT:
            # A notification just sent (a cancellation, say) is posted still, for a while.
            with anyio.move_on_after(NOTICE_GRACE, shield=True):
                for _ in range(MAX_NOTICES_IN_FLIGHT):
                    await self._notices.acquire()
        self._scopes.cancel()
        self._queue_in.close()
        return True

    def end_receiving(self, reason: str) -> None:
        """No more messages will come: :meth:`receive` raises ``ConnectionClosed`` once
        the queued ones are read."""
        self.close_reason = reason
        self._queue_in.close()

    # -- HTTP -----------------------------------------------------------------------------------

    def http(self) -> httpx.AsyncClient:
        """The HTTP client (while open)."""
        if self._client is None:
            raise ConnectionClosed("the HTTP stream is not open")
        # Typed as httpx's: an httpx2 client has the same API.
        return cast("httpx.AsyncClient", self._client)

    def post_headers(self) -> dict[str, str]:
        """The headers of a POST of a message (before a transport adds its own)."""
        return {**self.headers, "Accept": ACCEPT_BOTH, "Content-Type": "application/json"}

    def open_exchange(
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
        return self.http().stream(
            method,
            url,
            content=content,
            headers=cast("Mapping[str, str]", {**headers, "Accept-Encoding": ACCEPT_ENCODING}),
            auth=self.auth,
            timeout=timeout,
        )

    async def post_notice(self, data: bytes, headers: Mapping[str, str], url: str) -> int:
        """POST a notification or a response to ``url`` and read the acknowledgement; its
        status. A JSON-RPC message in an error body is delivered, but for a 404 to a
        session id: that is the session's transport to judge. Raises
        ``ConnectionClosed`` when the exchange fails."""
        try:
            async with self.open_exchange(
                "POST", url, content=data, headers=headers, timeout=self.timeout
            ) as response:
                status: int = response.status_code
                if status >= 400 and not (status == 404 and "Mcp-Session-Id" in headers):
                    await self.deliver_error_body(response, None)
                return status
        except self.library.error as exc:
            raise ConnectionClosed(f"POST {url} failed: {exc!r}") from exc

    def chunks(self, response: httpx.Response) -> AsyncGenerator[bytes, None]:
        """The body of ``response``, decoded in bounded steps (:mod:`.decoding`)."""
        return decoded_chunks(response, error=self.library.decoding_error)

    async def read_body(self, response: httpx.Response) -> bytes:
        """The body of an answer that is not a stream, bounded by the size limit and
        by the read timeout between two chunks."""
        return await _read_body(self.chunks(response), self.limit, self.timeout.read)

    # -- tasks ----------------------------------------------------------------------------------

    def spawn(self, function: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``function(*args)`` in a task that stopping the link cancels."""
        self.task_group.start_soon(self._scopes.run, function, args)

    def cancel_request(self, message: OutgoingEnvelope) -> None:
        """Stop posting the request a ``notifications/cancelled`` names, if it is in
        flight (its task's scope is cancelled)."""
        request_id = None if message.params is None else message.params.request_id
        cancelled = self.posts.get(request_id) if request_id is not None else None
        if cancelled is not None:
            cancelled.scope.cancel()

    def start_request(self, post: Post, poster: Callable[..., Awaitable[None]], *args: Any) -> None:
        """Post a request in a task of its own: ``poster(*args)`` posts it and delivers
        its answer; when it leaves ``post`` unanswered (or fails), an error response is
        made up for it."""
        self.posts[post.id] = post
        self.spawn(self._run_post, post, poster, args)

    async def _run_post(
        self, post: Post, poster: Callable[..., Awaitable[None]], args: tuple[Any, ...]
    ) -> None:
        try:
            with post.scope:
                try:
                    await poster(*args)
                except self.library.error as exc:
                    post.note = f"HTTP request failed: {exc!r}"
                except BodyTooLarge as exc:
                    post.note = f"the answer of {exc.size}+ bytes is over the limit of {self.limit}"
                except BodyStalled as exc:
                    post.note = f"the answer's body stalled: nothing came for {exc.idle:g} s"
                except OAuthError as exc:
                    # The OAuth client (the auth given) could not get a token: its
                    # typed error says why, without a token in it.
                    post.note = f"authorization failed: {type(exc).__name__}: {exc}"
                except Exception as exc:  # a bug here must not end every other request
                    logger.exception("reading the answer to %s failed", post.method)
                    post.note = f"the answer could not be read: {type(exc).__name__}"
                if not post.answered:
                    await self.make_up_error(post, post.note or "no answer from the server")
        finally:
            if self.posts.get(post.id) is post:
                del self.posts[post.id]

    async def send_notice(
        self,
        what: str,
        poster: Callable[[], Awaitable[None]],
        *,
        then: Callable[[], Awaitable[None]] | None = None,
        wait: bool = False,
    ) -> None:
        """Post a notification or a response (``what``) in a task: ``poster()`` posts it,
        its acknowledgement bounded by the read timeout; ``then()`` runs once it is
        acknowledged. Waits for room (:data:`MAX_NOTICES_IN_FLIGHT`), and with ``wait``
        for the task to end. A failure is logged: nobody waits for the answer of a
        notification."""
        await self._notices.acquire()
        if self.closed:
            self._notices.release()
            raise ConnectionClosed(self.close_reason)
        acknowledged = anyio.Event()
        self.spawn(self._run_notice, what, poster, then, acknowledged)
        if wait:
            await acknowledged.wait()

    async def _run_notice(
        self,
        what: str,
        poster: Callable[[], Awaitable[None]],
        then: Callable[[], Awaitable[None]] | None,
        acknowledged: anyio.Event,
    ) -> None:
        try:
            with anyio.move_on_after(self.timeout.read) as bound:
                await poster()
            if bound.cancelled_caught:
                logger.warning(
                    "the server did not acknowledge %s within %g s", what, self.timeout.read
                )
            elif then is not None:
                await then()
        except ConnectionClosed as exc:
            logger.warning("%s was not posted: %s", what, exc)
        finally:
            self._notices.release()
            acknowledged.set()

    # -- what is received -----------------------------------------------------------------------

    async def receive(self) -> bytes:
        """The next message of the server; raises ``ConnectionClosed`` at the end and
        ``MessageTooLarge`` for one over the limit (dropped unread)."""
        try:
            item = await self._queue_out.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise ConnectionClosed(self.close_reason) from None
        if isinstance(item, MessageTooLarge):
            raise item
        return item

    async def put(self, item: bytes | MessageTooLarge) -> None:
        """Queue a message (or the note of one dropped) for :meth:`receive`."""
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._queue_in.send(item)  # closed: nobody reads any more

    async def deliver_message(self, data: bytes, post: Post | None) -> None:
        """Queue one message, noting when it answers ``post``. A batch is queued whole,
        for the session to apply its rules to; it answers ``post`` when one of its
        members does."""
        if data.lstrip()[:1] == b"[":
            if post is not None and not post.answered and _batch_answers(data, post.id):
                post.answered = True
            await self.put(data)
            return
        if post is not None and not post.answered:
            message = incoming(data)
            if answered_id(data, message) == post.id:
                post.answered = True
                if post.on_answer is not None:
                    post.on_answer(data)
            else:
                error = _unattributed_error(message)
                if error is not None:
                    # The server could not read the id of the one request the POST
                    # carried: its error answers that request.
                    data = msgspec.json.encode({"jsonrpc": "2.0", "id": post.id, "error": error})
                    post.answered = True
        await self.put(data)

    async def deliver_answer(self, response: httpx.Response, post: Post) -> SseDecoder | None:
        """Deliver what ``response`` (of a status below 400) answers ``post`` with: a
        JSON body, or the events of an SSE one. When an SSE stream ended, or broke after
        an event id, before the answer: its decoder (to resume it from); else ``None``."""
        status = response.status_code
        media = media_type(response)
        if media == "text/event-stream":
            decoder = SseDecoder(self.limit)
            try:
                await self.read_events(response, decoder, post)
            except self.library.error:
                # Cut short (the server, or the worker behind a balancer, went away):
                # resumed from its last event id like a stream that ended, when it
                # gave one.
                if post.answered or decoder.last_event_id is None:
                    raise
            return None if post.answered else decoder
        if media == "application/json":
            body = await self.read_body(response)
            if body.strip():
                await self.deliver_message(body, post)
        elif 300 <= status < 400 and "location" in response.headers:
            # Not followed: a redirect may lead elsewhere with the caller's
            # credentials. The caller can connect to where it leads.
            target = clip(response.headers["location"], 200)
            post.note = f"HTTP {status} redirects to {target!r}: connect to that URL"
        else:
            post.note = f"HTTP {status} with {media or 'no body'}: no answer"
        return None

    async def deliver_error_body(self, response: httpx.Response, post: Post | None) -> str | None:
        """Deliver the JSON-RPC message of an error answer, if it is one (an error with
        id null, or none, answers ``post``): ``None``; else the start of the body, to
        quote."""
        try:
            body = await self.read_body(response)
        except BodyTooLarge as exc:
            return f"({exc.size}+ bytes)"
        except (self.library.error, BodyStalled):
            body = b""
        quoted = body[:BODY_QUOTED].decode("utf-8", "replace")
        message = incoming(body) if body.lstrip()[:1] == b"{" else None
        if message is None or message.jsonrpc != "2.0":
            return quoted
        if not message.error and not message.result:
            return quoted
        await self.deliver_message(body, post)
        return None

    async def refuse(self, post: Post, response: httpx.Response, quoted: str) -> None:
        """Answer ``post`` with an error made up for the HTTP error ``response`` (whose
        body, quoted, was no JSON-RPC message)."""
        post.note = status_note(response)
        await self.make_up_error(post, post.note, status=response.status_code, body=quoted)

    async def make_up_error(
        self, post: Post, reason: str, *, status: int | None = None, body: str = ""
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
        await self.put(msgspec.json.encode({"jsonrpc": "2.0", "id": post.id, "error": error}))

    async def read_events(
        self, response: httpx.Response, decoder: SseDecoder, post: Post | None
    ) -> bool:
        """Deliver the ``message`` events of an SSE body until it ends (or answers
        ``post``); whether any event came."""
        seen = False
        async for chunk in self.chunks(response):
            before = decoder.last_event_id
            for event in decoder.feed(chunk):
                seen = True
                if event.event != "message":
                    continue
                if event.data is None:
                    if post is not None:
                        post.note = (
                            f"an event of {event.size} bytes over the limit of {self.limit} "
                            "was dropped"
                        )
                    await self.put(MessageTooLarge(event.size, self.limit))
                    continue
                await self.deliver_message(event.data, post)
            seen = seen or decoder.last_event_id != before
            if post is not None and post.answered:
                return seen
        if post is not None and decoder.dropping:
            post.note = f"an event over the limit of {self.limit} bytes was dropped"
        return seen
