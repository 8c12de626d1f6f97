"""The client of one MCP connection: :class:`Client`.

A :class:`Client` is one object whatever the transport underneath: ``Client.stdio``
launches a server command and speaks to it over its stdin and stdout, ``Client.http``
speaks to a server at a URL (Streamable HTTP of every era, or the HTTP+SSE transport of
2024-11-05), ``Client.over`` speaks over any open
:class:`~mcpspec.runtime.connection.transport.MessageStream`. It
negotiates on entry (``mode`` ``"auto"``, ``"legacy"`` or one revision), then sends
typed requests of the negotiated revision (:attr:`Client.types`) and returns their
typed results.

Server-to-client requests (sampling, elicitation, roots) are answered by handlers with
one signature in every revision, ``async handler(params, context) -> result``: up to
2025-11-25 they arrive as requests on the connection; in 2026-07-28 as the input
requests of an ``InputRequiredResult``, which :meth:`Client.request` answers and
retries on its own. A handler may return the result as a value of any revision or as
a mapping in wire form; it is typed as the negotiated revision's result.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import math
import os
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from contextlib import (
    AbstractAsyncContextManager,
    AsyncExitStack,
    aclosing,
    asynccontextmanager,
    suppress,
)
from types import ModuleType, TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, TypedDict, TypeVar, overload

import anyio
import anyio.abc
import msgspec
from msgspec import UNSET

from mcpspec.runtime.envelope import ErrorObject, RequestId
from mcpspec.runtime.errors import ErrorCode, show
from mcpspec.runtime.extensions import KNOWN, TASKS
from mcpspec.runtime.session.client import ClientSession
from mcpspec.runtime.session.events import (
    NotificationReceived,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    SessionReady,
)
from mcpspec.runtime.session.limits import DEFAULT_LIMITS, Limits
from mcpspec.runtime.session.misuse import RevisionError
from mcpspec.runtime.session.rules import Rule
from mcpspec.runtime.session.stateless import ACKNOWLEDGED, FILTER_FIELDS, LEVELS, subscription_of
from mcpspec.runtime.session.version_negotiation import META_LOG_LEVEL, ClientMode

from .client_tasks import (
    TASK_METHODS,
    ClientTasks,
    TaskHandle,
    TaskWatch,
    declaring_meta,
    server_speaks_tasks,
)
from .errors import (
    CancelledByPeer,
    ConnectionClosed,
    OpenTimeout,
    RequestError,
    RequestTimeout,
    ResponseViolation,
)
from .peer import Peer, ProgressCallback, ViolationHandler
from .results import Completions, ToolFailed, ToolResult
from .stdio import DEFAULT_GRACE, StderrMode, launch_server
from .tool_outputs import OutputSchemas, remembering, structured_as
from .transport import MessageStream

if TYPE_CHECKING:
    import httpx
    from typing_extensions import Unpack  # typing.Unpack from 3.11 on

    from .http.client import HttpTransport
    from .server import Server

__all__ = [
    "Client",
    "Completions",
    "InputRoundsExceeded",
    "ListingTooLong",
    "LogCallback",
    "NotificationCallback",
    "ServerRequestContext",
    "ServerRequestHandler",
    "Subscription",
    "ToolResult",
    "prompt_ref",
    "resource_ref",
]

logger = logging.getLogger("mcpspec.connection")

#: How many ``InputRequiredResult`` rounds one request may take (2026-07-28).
MAX_INPUT_ROUNDS: Final = 16
#: How many pages ``list_tools`` and its siblings read before they take the list for
#: one that never ends (a server minting a fresh cursor on every page).
MAX_LISTED_PAGES: Final = 1000
#: How many bytes of items (as JSON) ``list_tools`` and its siblings hold before they
#: take the list for one too large to hold at once (its pages can be read one by one).
MAX_LISTED_BYTES: Final = 64 * 1024 * 1024
#: How many change notifications a :class:`Subscription` holds unread (the same change
#: is held once); later ones are dropped, with a warning.
MAX_QUEUED_CHANGES: Final = 1024

R = TypeVar("R")

#: The server-to-client requests a handler answers, by method: the handler's keyword.
_HANDLED: Final = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}


class ServerRequestContext:
    """What a handler of a server-to-client request knows besides its params."""

    __slots__ = ("client", "input_key", "method", "request_id", "revision", "types")

    def __init__(
        self,
        client: Client,
        session: ClientSession,
        method: str,
        request_id: RequestId | None,
        input_key: str | None,
    ) -> None:
        #: The client the request came to.
        self.client = client
        #: The negotiated revision.
        self.revision: str = session.codec.revision
        #: The negotiated revision's generated module (to build the result with).
        self.types: ModuleType = session.types
        #: ``sampling/createMessage``, ``elicitation/create`` or ``roots/list``.
        self.method = method
        #: The server's request id (up to 2025-11-25), else ``None``.
        self.request_id = request_id
        #: The key of the input request in its ``InputRequiredResult`` (2026-07-28), else
        #: ``None``.
        self.input_key = input_key


#: Answers one server-to-client request: ``(params, context) -> result``. ``params`` is
#: the request's typed params in the negotiated revision (``None`` when it has none); the
#: result is a result value of any revision, or a mapping in wire form.
ServerRequestHandler = Callable[[Any, ServerRequestContext], Awaitable[Any]]
#: Gets the params of each ``notifications/message`` (``level``, ``logger``, ``data``).
LogCallback = Callable[[Any], Awaitable[None] | None]
#: Gets each other notification of the server (a typed notification).
NotificationCallback = Callable[[Any], Awaitable[None] | None]


class InputRoundsExceeded(Exception):
    """A 2026-07-28 server kept answering ``InputRequiredResult`` past
    :data:`MAX_INPUT_ROUNDS` rounds."""


class ListingTooLong(ResponseViolation):
    """A listing (``list_tools`` and its siblings, or pages read with ``max_pages``)
    went on past its bound: more than ``max_pages`` pages (a server minting a fresh
    cursor on every page), or more than :data:`MAX_LISTED_BYTES` of items to hold.
    Read the pages one by one (``tool_pages`` and its siblings) to go on."""


class _Deadline:
    """When a call must be over: its ``timeout`` (seconds, ``None``: never) counted
    from now. Every step of a call (the pages of a listing, the input rounds of a
    request, a retry) takes what is left of it."""

    __slots__ = ("at", "timeout")

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self.at = None if timeout is None else anyio.current_time() + timeout

    def left(self) -> float | None:
        """Seconds left (none when the call has no timeout)."""
        return None if self.at is None else max(self.at - anyio.current_time(), 0.0)


class Subscription:
    """A ``subscriptions/listen`` stream (2026-07-28): an async context manager that is
    an async iterator of the change notifications the client opted into. Entering sends
    the request and waits for the server's acknowledgement; leaving cancels it.

    Notifications not read yet are held once per change (a list change of one kind, an
    update of one resource), at most :data:`MAX_QUEUED_CHANGES`; ``dropped`` counts any
    beyond."""

    def __init__(self, client: Client, notifications: Any) -> None:
        self._client = client
        self._filter = notifications
        send, receive = anyio.create_memory_object_stream[Any](math.inf)
        self._send = send
        self._receive = receive
        self._acknowledged = anyio.Event()
        self._error: BaseException | None = None
        self._task_group: anyio.abc.TaskGroup | None = None
        #: What the queued notifications are about (method, and URI for a resource
        #: update): the same change queued twice would tell nothing more.
        self._queued: set[tuple[str, Any]] = set()
        #: How many notifications were dropped because the queue was full.
        self.dropped = 0
        #: The id of the ``subscriptions/listen`` request (the subscription's id).
        self.request_id: RequestId | None = None

    async def __aenter__(self) -> Subscription:
        client = self._client
        types = client.types
        request = types.SubscriptionsListenRequest(
            id=client.next_id(),
            params=types.SubscriptionsListenRequestParams(notifications=self._filter),
        )
        self.request_id = request.id
        client._subscriptions[request.id] = self
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        task_group.start_soon(self._run, request)
        try:
            await self._acknowledged.wait()
        except BaseException as exc:
            # Cancelled (a caller's timeout) before the server acknowledged: the task
            # group must be left here, with what ended the wait, or the caller's cancel
            # scopes are left corrupted.
            await self._leave(type(exc), exc, exc.__traceback__)
            raise
        if self._error is not None:
            await self.__aexit__(None, None, None)
            raise self._error
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._leave(None, None, None)

    async def _leave(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Cancel the request on the wire and leave the task group (given the
        exception the block of ``__aenter__`` ended with, if any)."""
        task_group = self._task_group
        if task_group is None:
            return
        self._task_group = None
        task_group.cancel_scope.cancel()
        try:
            await task_group.__aexit__(exc_type, exc, traceback)
        finally:
            self._client._subscriptions.pop(self.request_id, None)
            self._receive.close()

    async def _run(self, request: Any) -> None:
        try:
            await self._client._peer_now().request_response(request)
        except CancelledByPeer:
            pass  # the server ended the stream: the iteration ends
        except Exception as exc:
            self._error = exc
        finally:
            self._acknowledged.set()
            self._send.close()

    def _deliver(self, notification: Any) -> None:
        if notification.method == ACKNOWLEDGED:
            self._acknowledged.set()
            return
        key = _change_key(notification)
        if key in self._queued:
            return
        if len(self._queued) >= MAX_QUEUED_CHANGES:
            if not self.dropped:
                logger.warning(
                    "subscription %r: %d notifications are waiting to be read; "
                    "later ones are dropped",
                    self.request_id,
                    MAX_QUEUED_CHANGES,
                )
            self.dropped += 1
            return
        # A notification may cross the subscription's end: nobody reads it then.
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._send.send_nowait(notification)
            self._queued.add(key)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Any:
        """The next notification; the iteration ends when the server ends the stream
        (with a result, or by cancelling it), and raises what ended it if that was an
        error."""
        try:
            notification = await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            if self._error is not None:
                raise self._error from None
            raise StopAsyncIteration from None
        self._queued.discard(_change_key(notification))
        return notification


def _change_key(notification: Any) -> tuple[str, Any]:
    """What a change notification is about: its method, and a resource update's URI."""
    return notification.method, getattr(getattr(notification, "params", None), "uri", None)


class ClientOptions(TypedDict, total=False):
    """The options of :class:`Client` that :meth:`Client.stdio` and :meth:`Client.over`
    pass on (each described there)."""

    mode: ClientMode
    revisions: Iterable[str] | None
    info: Any
    capabilities: Any
    sampling: ServerRequestHandler | None
    elicitation: ServerRequestHandler | None
    roots: ServerRequestHandler | None
    on_log: LogCallback | None
    on_notification: NotificationCallback | None
    on_violation: ViolationHandler | None
    open_timeout: float | None
    limits: Limits | None
    tasks: bool | ClientTasks


class Client:
    """The client side of an MCP connection.

    Build it with :meth:`stdio` (launch a server command), :meth:`http` (a server at a
    URL), :meth:`in_memory` (a :class:`~mcpspec.runtime.connection.Server` of this
    process) or :meth:`over` (an open message stream), then ``async with`` it: entering
    connects and negotiates,
    leaving disconnects (for stdio: close the server's stdin, then SIGTERM, then
    SIGKILL). Negotiation follows ``mode``: ``"auto"`` (probe ``server/discover``, fall
    back to ``initialize``), ``"legacy"`` (``initialize``) or one revision;
    ``revisions`` restricts the revisions accepted.

    ``info`` is the client's identity; ``capabilities`` its capabilities, by default
    those of the handlers given: ``sampling``, ``elicitation`` and ``roots`` answer the
    server's requests (:data:`ServerRequestHandler`). ``on_log`` gets log messages,
    ``on_notification`` every other notification, ``on_violation`` the server's
    protocol violations (logged when not given). ``open_timeout`` bounds opening:
    connecting (over HTTP+SSE, the wait for the endpoint) and negotiation; past it,
    entering raises :class:`~mcpspec.runtime.connection.errors.OpenTimeout`.
    ``limits`` bound what the server can make the client hold
    (:class:`~mcpspec.runtime.session.limits.Limits`; the defaults when ``None``).
    ``tasks`` (2025-11-25) lets the server ask for ``sampling/createMessage`` and
    ``elicitation/create`` as tasks (``True``, or a
    :class:`~mcpspec.runtime.connection.client_tasks.ClientTasks` with bounds of its own):
    the handler runs on while the server polls ``tasks/get`` and ``tasks/result``.
    """

    def __init__(
        self,
        connect: Callable[[], AbstractAsyncContextManager[MessageStream]],
        *,
        mode: ClientMode = "auto",
        revisions: Iterable[str] | None = None,
        info: Any = None,
        capabilities: Any = None,
        sampling: ServerRequestHandler | None = None,
        elicitation: ServerRequestHandler | None = None,
        roots: ServerRequestHandler | None = None,
        on_log: LogCallback | None = None,
        on_notification: NotificationCallback | None = None,
        on_violation: ViolationHandler | None = None,
        open_timeout: float | None = None,
        limits: Limits | None = None,
        tasks: bool | ClientTasks = False,
    ) -> None:
        self._connect = connect
        self._handlers: dict[str, ServerRequestHandler] = {}
        for method, handler in (
            ("sampling/createMessage", sampling),
            ("elicitation/create", elicitation),
            ("roots/list", roots),
        ):
            if handler is not None:
                self._handlers[method] = handler
        #: The tasks run for the server (``tasks``), if it may ask for them.
        self._client_tasks: ClientTasks | None = (
            tasks if isinstance(tasks, ClientTasks) else ClientTasks() if tasks else None
        )
        if capabilities is None:
            capabilities = {_HANDLED[method]: {} for method in self._handlers}
            if self._client_tasks is not None:
                capabilities["tasks"] = ClientTasks.capability(self._handlers)
        self._session_args: dict[str, Any] = {
            "revisions": revisions,
            "mode": mode,
            "info": info,
            "capabilities": capabilities,
            "limits": limits,
            # Spoken (its methods known) in 2026-07-28; declared per task call only.
            "extensions": (TASKS,),
        }
        self._on_log = on_log
        self._on_notification = on_notification
        self._violation_callback = on_violation
        self._open_timeout = open_timeout
        self._stack: AsyncExitStack | None = None
        self._stream: MessageStream | None = None
        self._peer: Peer[ClientSession] | None = None
        self._ready: SessionReady | None = None
        self._log_level: str | None = None
        self._subscriptions: dict[RequestId | None, Subscription] = {}
        #: The output schemas of the tools listed, which results are checked against.
        self._outputs = OutputSchemas()
        self._task_watch = TaskWatch()

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def stdio(
        cls,
        command: str | os.PathLike[str],
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: StderrMode = "forward",
        max_message_size: int | None = None,
        grace: float = DEFAULT_GRACE,
        **options: Unpack[ClientOptions],
    ) -> Client:
        """A client of the stdio server ``command args`` (launched on entry): ``env`` is
        its whole environment (``None``: this process's), ``cwd`` its directory,
        ``stderr`` where its log goes (``"forward"``, ``"capture"``, ``"discard"`` or a
        callable per line); ``max_message_size`` bounds one line of its stdout
        (default: ``limits.max_message_bytes``); ``grace`` is the seconds of each
        shutdown step. The other options are those of :class:`Client`."""
        line_limit = (
            max_message_size
            if max_message_size is not None
            else (options.get("limits") or DEFAULT_LIMITS).max_message_bytes
        )

        def connect() -> AbstractAsyncContextManager[MessageStream]:
            return launch_server(
                command,
                args,
                env=env,
                cwd=cwd,
                stderr=stderr,
                max_message_size=line_limit,
                grace=grace,
            )

        return cls(connect, **options)

    @classmethod
    def over(cls, stream: MessageStream, **options: Unpack[ClientOptions]) -> Client:
        """A client over an open message stream (closed when the client closes); the
        options are those of :class:`Client`."""

        @asynccontextmanager
        async def connect() -> AsyncIterator[MessageStream]:
            try:
                yield stream
            finally:
                await stream.aclose()

        return cls(connect, **options)

    @classmethod
    def in_memory(cls, server: Server, **options: Unpack[ClientOptions]) -> Client:
        """A client of ``server`` run in this process, over an in-memory message stream
        (no subprocess, no socket; any revision, by ``mode``): the server is served, its
        lifespan entered, while the client is open. The options are those of
        :class:`Client`."""
        from .memory import serve_in_memory

        return cls(lambda: serve_in_memory(server), **options)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        timeout: float | httpx.Timeout | None = 30.0,
        http_client: Any = None,
        transport: HttpTransport = "auto",
        max_message_size: int | None = None,
        renew_sessions: bool = True,
        **options: Unpack[ClientOptions],
    ) -> Client:
        """A client of the MCP server at ``url`` over HTTP, in any era: Streamable HTTP
        (2025-03-26 ... 2026-07-28) or, when the URL has no Streamable HTTP endpoint (or
        with ``transport="sse"``), the HTTP+SSE transport of 2024-11-05.

        ``headers`` go with every HTTP request (authorization, say), except those the
        library writes itself, which they cannot override: ``Accept``,
        ``Content-Type``, ``MCP-Protocol-Version``, ``Mcp-Session-Id``, ``Mcp-Method``,
        ``Mcp-Name``, ``Mcp-Param-*`` and ``Last-Event-ID``. ``auth`` is an ``httpx``
        auth; ``timeout`` bounds connecting, writing and each answer that is not a
        stream (seconds, or an ``httpx.Timeout``). ``http_client`` is an
        ``httpx.AsyncClient`` to use (for TLS, proxies, ...; left open on exit), or an
        ``httpx2.AsyncClient``: the same API, and much less CPU per request with many
        in flight (``auth`` is then one of ``httpx2``).
        ``transport`` is ``"auto"``, ``"streamable"`` or ``"sse"``; ``max_message_size``
        bounds one message (default: ``limits.max_message_bytes``). The other options
        are those of :class:`Client`. Needs ``httpx`` (``pip install mcpspec[http]``).

        When the server ends the session (HTTP 404 to its id), a new one is opened as
        the specification says (the same ``initialize`` again, without the id; it must
        negotiate the same revision) and the request posted again; what the old session
        held on the server (a logging level, subscriptions) is not set again. With
        ``renew_sessions=False``, or when that fails, the request fails (message
        ``"Session expired ..."``) and the connection ends: enter a new client.
        """
        from .http.client import HttpClientStream

        limit = (
            max_message_size
            if max_message_size is not None
            else (options.get("limits") or DEFAULT_LIMITS).max_message_bytes
        )

        def connect() -> AbstractAsyncContextManager[MessageStream]:
            return HttpClientStream(
                url,
                headers=headers,
                auth=auth,
                timeout=timeout,
                http_client=http_client,
                transport=transport,
                max_message_size=limit,
                renew_sessions=renew_sessions,
                open_timeout=options.get("open_timeout"),
            )

        return cls(connect, **options)

    # -- lifecycle ----------------------------------------------------------------------------

    async def __aenter__(self) -> Client:
        if self._stack is not None:
            raise RuntimeError("the client is already open")
        stack = AsyncExitStack()
        await stack.__aenter__()
        self._stack = stack
        started = anyio.current_time()
        try:
            if self._client_tasks is not None:
                await stack.enter_async_context(self._client_tasks.running())
            stream = await stack.enter_async_context(self._connect())
            self._stream = stream
            session = ClientSession(**self._session_args)
            peer = Peer(
                session,
                stream,
                request_handler=self._on_request,
                notification_handler=self._on_notification_event,
                violation_handler=self._on_violation,
            )
            self._peer = peer  # before the reader starts: the server's requests need it
            await stack.enter_async_context(peer)
            timeout = self._open_timeout
            if timeout is not None:  # what connecting left of it
                timeout = max(0.0, timeout - (anyio.current_time() - started))
            self._ready = await peer.open(timeout=timeout)
        except BaseException as exc:
            await self._exit()
            if isinstance(exc, TimeoutError) and self._open_timeout is not None:
                raise OpenTimeout(self._open_timeout, str(exc)) from exc
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._exit()

    async def _exit(self) -> None:
        """Leave what entering entered (the peer's task group, the transport), here,
        in the scope they were entered in; their shutdowns shield themselves."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    async def aclose(self) -> None:
        """Disconnect now (from any task): every request still waiting raises
        :class:`ConnectionClosed` and the transport closes (a launched server is shut
        down). Leaving the ``async with`` block does this too. Idempotent."""
        peer = self._peer
        if peer is not None:
            await peer.aclose()

    @property
    def transport(self) -> Any:
        """The message stream underneath (for stdio, a
        :class:`~mcpspec.runtime.connection.stdio.ProcessStream`: ``process``,
        ``returncode``, captured ``stderr``; over HTTP, a
        :class:`~mcpspec.runtime.connection.http.client.HttpClientStream`:
        ``session_id``, ``protocol_version``, ``transport``, ``session_expired``);
        ``None`` before the client is opened."""
        return self._stream

    @property
    def closed(self) -> bool:
        """Whether the connection has ended (or was never opened)."""
        return self._peer is None or self._peer.closed

    def _peer_now(self) -> Peer[ClientSession]:
        peer = self._peer
        if peer is None or self._ready is None:
            raise ConnectionClosed("the client is not connected")
        return peer

    # -- what negotiation found -----------------------------------------------------------------

    def _ready_now(self) -> SessionReady:
        if self._ready is None:
            raise ConnectionClosed("the client is not connected")
        return self._ready

    @property
    def revision(self) -> str:
        """The negotiated revision."""
        return self._ready_now().revision

    @property
    def model(self) -> str:
        """``"handshake"`` (up to 2025-11-25) or ``"stateless"`` (2026-07-28)."""
        return self._ready_now().model

    @property
    def server_info(self) -> Any:
        """The server's ``Implementation`` (name, version, ...), when it sent one."""
        self._ready_now()
        return self.session.peer_info

    @property
    def capabilities(self) -> Any:
        """The server's ``ServerCapabilities`` (typed, in the negotiated revision)."""
        self._ready_now()
        return self.session.declared_peer_capabilities

    @property
    def instructions(self) -> str | None:
        """The server's instructions, when it sent any."""
        return self._ready_now().instructions

    @property
    def session(self) -> ClientSession:
        """The sans-IO session underneath."""
        return self._peer_now().session

    @property
    def types(self) -> ModuleType:
        """The negotiated revision's generated module: requests given to
        :meth:`request` are values of its types."""
        return self.session.types

    def next_id(self) -> int:
        """A fresh request id."""
        return self._peer_now().next_id()

    # -- requests -------------------------------------------------------------------------------

    async def request(
        self,
        request: Any,
        *,
        progress: ProgressCallback | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Send ``request`` (a request of :attr:`types` with a fresh id, :meth:`next_id`)
        and return its typed result.

        In 2026-07-28 an ``InputRequiredResult`` is answered with the handlers and the
        request retried, until the server answers it. ``progress`` gets each
        ``ProgressReceived``. After ``timeout`` seconds (all rounds together), or when
        the caller is cancelled, the request is cancelled on the wire.

        Raises :class:`~mcpspec.runtime.connection.RequestError` (an error response),
        :class:`~mcpspec.runtime.connection.ResponseViolation` (an answer that breaks
        the schema or a rule), :class:`~mcpspec.runtime.connection.RequestTimeout`,
        :class:`~mcpspec.runtime.connection.ConnectionClosed`, or the session's
        ``LocalProtocolError`` when the request cannot be sent.
        """
        response = await self._exchange(request, progress, _Deadline(timeout))
        return response.result

    async def _exchange(
        self, request: Any, progress: ProgressCallback | None, deadline: _Deadline
    ) -> ResponseReceived:
        """Send ``request`` (and its retries with input) and get its answer, before
        ``deadline``: past it, :class:`RequestTimeout` names the whole call's timeout."""
        peer = self._peer_now()
        session = peer.session
        if self._log_level is not None and session.model == "stateless":
            request = _with_meta(request, META_LOG_LEVEL, self._log_level)
        for _ in range(MAX_INPUT_ROUNDS):
            try:
                response = await peer.request_response(
                    request, progress=progress, timeout=deadline.left()
                )
            except RequestTimeout as exc:
                raise RequestTimeout(exc.request_id, exc.method, deadline.timeout or 0.0) from None
            if not response.input_required:
                return response
            with anyio.move_on_after(deadline.left()) as answering:
                answers = await self._answer_inputs(response.result)
            if answering.cancelled_caught:
                raise RequestTimeout(request.id, type(request).method, deadline.timeout or 0.0)
            request = session.retry_with_input(response, answers)
        raise InputRoundsExceeded(
            f"{type(request).method} still needed input after {MAX_INPUT_ROUNDS} rounds"
        )

    async def _answer_inputs(self, result: Any) -> dict[str, Any]:
        asked: dict[str, Any] = {} if result.input_requests is UNSET else result.input_requests
        answers: dict[str, Any] = {}
        for key, ask in asked.items():
            params = getattr(ask, "params", UNSET)
            context = ServerRequestContext(self, self.session, ask.method, None, key)
            answers[key] = await self._answer(ask.method, params, context)
        return answers

    async def _answer(self, method: str, params: Any, context: ServerRequestContext) -> Any:
        """The typed result of a server-to-client request, from its handler."""
        handler = self._handlers.get(method)
        if handler is None:
            raise RequestError.method_not_found(method)
        value = await handler(None if params is UNSET else params, context)
        # The session of the peer, not of a finished negotiation: a server may ask as
        # soon as notifications/initialized is out, before ``open`` has returned here.
        assert self._peer is not None
        session = self._peer.session
        if type(value).__module__ == session.types.__name__:
            return value
        return session.codec.decode_result(method, msgspec.json.encode(value))

    async def _on_request(self, event: RequestReceived) -> Any:
        assert self._peer is not None
        context = ServerRequestContext(
            self, self._peer.session, event.method, event.request_id, None
        )
        params = getattr(event.request, "params", UNSET)
        tasks = self._client_tasks
        if tasks is not None:
            types = context.types
            if event.method in TASK_METHODS:
                return await tasks.answer(types, event.method, params)
            task = getattr(params, "task", UNSET)
            if task is not UNSET:
                method = event.method
                del event

                async def work() -> Any:
                    return await self._answer(method, params, context)

                return await tasks.start(types, method, task.ttl, work)
        return await self._answer(event.method, params, context)

    # -- notifications ---------------------------------------------------------------------------

    async def _on_notification_event(self, event: NotificationReceived) -> None:
        notification = event.notification
        method = event.method
        if method in FILTER_FIELDS or method == ACKNOWLEDGED:
            subscription = self._subscriptions.get(subscription_of(notification.params))
            if subscription is not None:
                subscription._deliver(notification)
                return
        if method == "notifications/tasks/status":
            self._task_watch.heard(notification.params)
        if method == "notifications/message":
            if self._on_log is not None:
                await _call(self._on_log, notification.params)
            return
        if self._on_notification is not None:
            await _call(self._on_notification, notification)

    async def _on_violation(self, event: ProtocolViolation) -> None:
        if self._violation_callback is not None:
            await _call(self._violation_callback, event)
        else:
            logger.warning(
                "protocol violation by the server: %s: %s (at %s)",
                event.rule.value,
                event.reason,
                event.path,
            )

    # -- what a client asks -------------------------------------------------------------------

    def _build(self, name: str, params: Mapping[str, Any] | None = None) -> Any:
        """A request of the negotiated revision's class ``name`` with a fresh id, its
        params given in wire form."""
        cls = getattr(self.types, name, None)
        if cls is None:
            raise RevisionError(Rule.METHOD_NOT_FOUND, f"revision {self.revision} has no {name}")
        message: dict[str, Any] = {"id": self.next_id(), "method": cls.method}
        if params is not None or _params_required(cls):
            message["params"] = dict(params or {})
        return msgspec.convert(message, cls)

    async def ping(self, *, timeout: float | None = None) -> None:
        """``ping`` (up to 2025-11-25; 2026-07-28 has none: ``RevisionError``)."""
        await self.request(self._build("PingRequest"), timeout=timeout)

    async def _pages(
        self,
        name: str,
        items: str,
        cursor: str | None,
        timeout: float | None,
        max_pages: int | None = None,
        deadline: _Deadline | None = None,
    ) -> AsyncGenerator[Any, None]:
        """The results of ``name`` page by page: each page within ``timeout``, or all of
        them before ``deadline``. The cursors seen are kept as digests: a server's long
        cursors are not held."""
        seen: set[bytes] = set()
        pages = 0
        while True:
            params = None if cursor is None else {"cursor": cursor}
            request = self._build(name, params)
            page_deadline = deadline if deadline is not None else _Deadline(timeout)
            result = (await self._exchange(request, None, page_deadline)).result
            yield result
            pages += 1
            cursor = result.next_cursor
            if cursor is UNSET or cursor is None:
                return
            digest = hashlib.blake2b(cursor.encode("utf-8", "surrogatepass"), digest_size=16)
            if digest.digest() in seen:
                raise _paging_violation(
                    request, f"the server repeated cursor {show(cursor)} listing {items}"
                )
            if max_pages is not None and pages >= max_pages:
                raise _paging_violation(
                    request,
                    f"the server gave more than {max_pages} pages listing {items}: "
                    "a list that never ends (iterate the pages to read on)",
                    ListingTooLong,
                )
            seen.add(digest.digest())

    async def _listing(
        self, pages: AsyncGenerator[Any, None], name: str, field: str, items: str
    ) -> list[Any]:
        """Every item of ``pages`` (their ``field``), at most :data:`MAX_LISTED_BYTES`
        of them as JSON; past it, :class:`ListingTooLong`."""
        listed: list[Any] = []
        held = 0
        async with aclosing(pages):
            async for page in pages:
                found = getattr(page, field)
                held += len(msgspec.json.encode(found))
                if held > MAX_LISTED_BYTES:
                    reason = (
                        f"the server gave more than {MAX_LISTED_BYTES} bytes listing {items} "
                        "(iterate the pages to read on)"
                    )
                    method = getattr(self.types, name).method
                    raise ListingTooLong(_paging_event(method, reason, path="$.result"))
                listed.extend(found)
        return listed

    def tool_pages(
        self,
        cursor: str | None = None,
        *,
        timeout: float | None = None,
        max_pages: int | None = None,
    ) -> AsyncGenerator[Any, None]:
        """The ``tools/list`` results, page by page (from ``cursor``), each page within
        ``timeout``; past ``max_pages`` pages, :class:`ListingTooLong`; a cursor
        repeated, :class:`ResponseViolation`.

        Over Streamable HTTP in 2026-07-28, a tool whose ``x-mcp-header`` annotations
        break the rules is left out of its page (and logged as a warning on the
        ``mcpspec.connection`` logger, with its name and the reason), as the
        specification requires; the annotations of the others are remembered, so that
        :meth:`call_tool` mirrors those arguments into ``Mcp-Param-*`` headers."""
        return self._tool_pages(cursor, timeout, max_pages, None)

    def _tool_pages(
        self,
        cursor: str | None,
        timeout: float | None,
        max_pages: int | None,
        deadline: _Deadline | None,
    ) -> AsyncGenerator[Any, None]:
        pages = remembering(
            self._pages("ListToolsRequest", "tools", cursor, timeout, max_pages, deadline),
            self._outputs,
        )
        remember = getattr(self._stream, "remember_tool_params", None)
        if remember is None or self.model != "stateless":
            return pages
        return _mirrored_tool_pages(pages, remember)

    def resource_pages(
        self,
        cursor: str | None = None,
        *,
        timeout: float | None = None,
        max_pages: int | None = None,
    ) -> AsyncGenerator[Any, None]:
        """The ``resources/list`` results, page by page (as :meth:`tool_pages`)."""
        return self._pages("ListResourcesRequest", "resources", cursor, timeout, max_pages)

    def resource_template_pages(
        self,
        cursor: str | None = None,
        *,
        timeout: float | None = None,
        max_pages: int | None = None,
    ) -> AsyncGenerator[Any, None]:
        """The ``resources/templates/list`` results, page by page (as :meth:`tool_pages`)."""
        return self._pages(
            "ListResourceTemplatesRequest", "resource templates", cursor, timeout, max_pages
        )

    def prompt_pages(
        self,
        cursor: str | None = None,
        *,
        timeout: float | None = None,
        max_pages: int | None = None,
    ) -> AsyncGenerator[Any, None]:
        """The ``prompts/list`` results, page by page (as :meth:`tool_pages`)."""
        return self._pages("ListPromptsRequest", "prompts", cursor, timeout, max_pages)

    async def list_tools(self, *, timeout: float | None = None) -> list[Any]:
        """Every tool (``Tool``), all pages: ``timeout`` bounds them all; at most
        :data:`MAX_LISTED_PAGES` pages and :data:`MAX_LISTED_BYTES` of tools
        (:class:`ListingTooLong` past either)."""
        return await self._list_tools(_Deadline(timeout))

    async def _list_tools(self, deadline: _Deadline) -> list[Any]:
        pages = self._tool_pages(None, None, MAX_LISTED_PAGES, deadline)
        return await self._listing(pages, "ListToolsRequest", "tools", "tools")

    async def list_resources(self, *, timeout: float | None = None) -> list[Any]:
        """Every resource (``Resource``), all pages (bounded as :meth:`list_tools`)."""
        return await self._list("ListResourcesRequest", "resources", "resources", timeout)

    async def list_resource_templates(self, *, timeout: float | None = None) -> list[Any]:
        """Every resource template (``ResourceTemplate``), all pages (bounded as
        :meth:`list_tools`)."""
        return await self._list(
            "ListResourceTemplatesRequest", "resource_templates", "resource templates", timeout
        )

    async def list_prompts(self, *, timeout: float | None = None) -> list[Any]:
        """Every prompt (``Prompt``), all pages (bounded as :meth:`list_tools`)."""
        return await self._list("ListPromptsRequest", "prompts", "prompts", timeout)

    async def _list(self, name: str, field: str, items: str, timeout: float | None) -> list[Any]:
        pages = self._pages(name, items, None, None, MAX_LISTED_PAGES, _Deadline(timeout))
        return await self._listing(pages, name, field, items)

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
        timeout: float | None = None,
        result_type: None = None,
        task: Literal[False] = False,
    ) -> ToolResult: ...

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
        timeout: float | None = None,
        result_type: type[R],
        task: Literal[False] = False,
    ) -> R: ...

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
        timeout: float | None = None,
        task: Literal[True],
        ttl: int | None = None,
    ) -> TaskHandle: ...

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
        timeout: float | None = None,
        result_type: type[Any] | None = None,
        task: bool = False,
        ttl: int | None = None,
    ) -> Any:
        """Call tool ``name`` with ``arguments``. A tool that fails answers a result
        with :attr:`ToolResult.is_error`; a request the server refuses raises
        :class:`~mcpspec.runtime.connection.RequestError`.

        The ``structuredContent`` of a tool listed with an ``outputSchema`` is checked
        against it (:mod:`~mcpspec.runtime.connection.tool_outputs`; the tools are
        listed once, within ``timeout``, when none were before):
        :class:`ResponseViolation` when it does not fit. With ``result_type``, the
        structured content is returned as that type (a Struct, a dataclass, a
        ``TypedDict``, a scalar the server sent under ``"result"``, ...), checked by
        msgspec; a failed call raises :class:`~mcpspec.runtime.connection.ToolFailed`.

        Over Streamable HTTP in 2026-07-28, a refusal with -32020 (``HeaderMismatch``:
        the tool's ``x-mcp-header`` annotations changed since they were listed) makes
        the client list the tools again and retry the call once.

        With ``task=True`` (2025-11-25, a tool whose ``execution.taskSupport`` allows
        it) the server runs the call as a task: the answer is a
        :class:`~mcpspec.runtime.connection.client_tasks.TaskHandle` at once (``wait()``,
        ``result()``, ``cancel()``); ``ttl`` asks how long (milliseconds) the server
        keeps it."""
        if task:
            return await self._call_tool_as_task(name, arguments, ttl, progress, timeout)
        deadline = _Deadline(timeout)  # the listing and the retry included
        result = await self._call_tool(name, arguments, progress, deadline)
        if not self._outputs.listed and result.structured is not None:
            await self._list_tools(deadline)  # the output schema to check against
        problem = self._outputs.problem(name, result.result)
        if problem is None and result_type is not None and not result.is_error:
            if result.structured is None:
                problem = f"tool {name!r} answered no structuredContent"
            else:
                try:
                    return structured_as(result.structured, result_type)
                except msgspec.ValidationError as exc:
                    problem = f"the structuredContent of tool {name!r} is no {result_type!r}: {exc}"
        if problem is not None:
            path = "$.result.structuredContent"
            raise ResponseViolation(_paging_event("tools/call", problem, None, path))
        if result_type is not None and result.is_error:
            raise ToolFailed(result)
        return result

    async def _call_tool_as_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        ttl: int | None,
        progress: ProgressCallback | None,
        timeout: float | None,
    ) -> TaskHandle:
        types = self.types
        if getattr(types, "TaskMetadata", None) is None:
            if self.revision in KNOWN[TASKS].revisions and server_speaks_tasks(self):
                return await self._call_tool_in_extension(name, arguments, progress, timeout)
            raise RevisionError(
                Rule.METHOD_NOT_FOUND,
                f"revision {self.revision} has no tasks in its core, and the server does "
                f"not declare the {TASKS} extension",
            )
        params = types.CallToolRequestParams(
            name=name,
            arguments=UNSET if arguments is None else dict(arguments),
            task=types.TaskMetadata(ttl=UNSET if ttl is None else ttl),
        )
        request = types.CallToolRequest(id=self.next_id(), params=params)
        created = await self.request(request, progress=progress, timeout=timeout)
        handle = TaskHandle(self, created.task)
        if progress is not None and not handle.done:
            # The handler's progress goes on after the answer, as long as the task.
            handle.follow_progress(self._peer_now(), request.id, progress)
        return handle

    async def _call_tool_in_extension(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        progress: ProgressCallback | None,
        timeout: float | None,
    ) -> TaskHandle:
        """``tools/call`` declaring the tasks extension on this request alone: the
        server answers a task (or, its choice, the result at once: a handle of a
        completed task then)."""
        types = self.types
        params = types.CallToolRequestParams(
            name=name,
            arguments=UNSET if arguments is None else dict(arguments),
            meta=declaring_meta(self),
        )
        request = types.CallToolRequest(id=self.next_id(), params=params)
        answer = await self.request(request, progress=progress, timeout=timeout)
        return TaskHandle.of_extension(self, answer)

    def task(self, task_id: str) -> TaskHandle:
        """A handle of the task ``task_id`` (kept from an earlier connection, say);
        its status unknown until asked (``await handle.status()``)."""
        placeholder = msgspec.structs.replace(_UNKNOWN_TASK, task_id=task_id)
        return TaskHandle(self, placeholder)

    async def list_tasks(self, *, timeout: float | None = None) -> list[Any]:
        """The client's tasks the server keeps (``tasks/list``, every page; each a
        ``Task``)."""
        return await self._list("ListTasksRequest", "tasks", "tasks", timeout)

    async def _call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        progress: ProgressCallback | None,
        deadline: _Deadline,
    ) -> ToolResult:
        types = self.types
        params = types.CallToolRequestParams(
            name=name, arguments=UNSET if arguments is None else dict(arguments)
        )
        request = types.CallToolRequest(id=self.next_id(), params=params)
        try:
            return ToolResult((await self._exchange(request, progress, deadline)).result)
        except RequestError as exc:
            mirrors = getattr(self._stream, "remember_tool_params", None) is not None
            if exc.code != ErrorCode.HEADER_MISMATCH or not mirrors or self.model != "stateless":
                raise
        await self._list_tools(deadline)
        request = types.CallToolRequest(id=self.next_id(), params=params)
        return ToolResult((await self._exchange(request, progress, deadline)).result)

    async def read_resource(self, uri: str, *, timeout: float | None = None) -> Any:
        """Read resource ``uri``: its ``ReadResourceResult`` (``contents``)."""
        types = self.types
        request = types.ReadResourceRequest(
            id=self.next_id(), params=types.ReadResourceRequestParams(uri=uri)
        )
        return await self.request(request, timeout=timeout)

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> Any:
        """Get prompt ``name`` filled with ``arguments``: its ``GetPromptResult``."""
        types = self.types
        params = types.GetPromptRequestParams(
            name=name, arguments=UNSET if arguments is None else dict(arguments)
        )
        request = types.GetPromptRequest(id=self.next_id(), params=params)
        return await self.request(request, timeout=timeout)

    async def complete(
        self,
        ref: Any,
        argument: str,
        value: str,
        *,
        context: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Completions:
        """Complete ``argument`` (typed so far: ``value``) of ``ref``: a prompt or
        resource template reference, typed or in wire form (:func:`prompt_ref`,
        :func:`resource_ref`). ``context`` gives the arguments already chosen (from
        2025-06-18)."""
        params: dict[str, Any] = {
            "ref": _wire(ref),
            "argument": {"name": argument, "value": value},
        }
        if context is not None:
            params["context"] = {"arguments": dict(context)}
        result = await self.request(self._build("CompleteRequest", params), timeout=timeout)
        return Completions(result)

    async def set_logging_level(self, level: str, *, timeout: float | None = None) -> None:
        """Ask for log messages at ``level`` and above: ``logging/setLevel`` up to
        2025-11-25; in 2026-07-28 the level goes into the ``_meta`` of every later
        request."""
        if level not in LEVELS:
            raise ValueError(f"not a logging level: {level!r}")
        if self.model == "stateless":
            self._log_level = level
            return
        await self.request(self._build("SetLevelRequest", {"level": level}), timeout=timeout)

    async def subscribe(self, uri: str, *, timeout: float | None = None) -> None:
        """``resources/subscribe`` (up to 2025-11-25; in 2026-07-28 use :meth:`listen`):
        ``notifications/resources/updated`` for ``uri`` then reach ``on_notification``."""
        await self.request(self._build("SubscribeRequest", {"uri": uri}), timeout=timeout)

    async def unsubscribe(self, uri: str, *, timeout: float | None = None) -> None:
        """``resources/unsubscribe`` (up to 2025-11-25)."""
        await self.request(self._build("UnsubscribeRequest", {"uri": uri}), timeout=timeout)

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Iterable[str] = (),
    ) -> Subscription:
        """``subscriptions/listen`` (2026-07-28): ``async with client.listen(tools=True)
        as changes: async for note in changes: ...``. ``tools``, ``prompts`` and
        ``resources`` opt into the list-changed notifications, ``resource_uris`` into
        ``notifications/resources/updated`` for those resources."""
        types = self.types
        if not hasattr(types, "SubscriptionsListenRequest"):
            raise RevisionError(
                Rule.METHOD_NOT_FOUND,
                f"revision {self.revision} has no subscriptions/listen: use subscribe",
            )
        wanted: dict[str, Any] = {}
        if tools:
            wanted["toolsListChanged"] = True
        if prompts:
            wanted["promptsListChanged"] = True
        if resources:
            wanted["resourcesListChanged"] = True
        uris = list(resource_uris)
        if uris:
            wanted["resourceSubscriptions"] = uris
        return Subscription(self, msgspec.convert(wanted, types.SubscriptionFilter))


async def _mirrored_tool_pages(
    pages: AsyncGenerator[Any, None], remember: Callable[[Mapping[str, Any]], None]
) -> AsyncGenerator[Any, None]:
    """``pages`` without the tools whose ``x-mcp-header`` annotations are invalid; the
    others' annotations go to ``remember`` (name -> ``ParamHeader``\\ s)."""
    from mcpspec.runtime.session.mirrored_headers import MirrorError, param_headers

    try:
        async for page in pages:
            kept: list[Any] = []
            annotated: dict[str, Any] = {}
            for tool in page.tools:
                try:
                    annotated[tool.name] = param_headers(msgspec.to_builtins(tool.input_schema))
                except MirrorError as exc:
                    logger.warning("tool %r left out: invalid x-mcp-header: %s", tool.name, exc)
                    continue
                kept.append(tool)
            remember(annotated)
            if len(kept) != len(page.tools):
                page = msgspec.structs.replace(page, tools=kept)
            yield page
    finally:
        await pages.aclose()


def prompt_ref(name: str) -> dict[str, Any]:
    """A completion reference to prompt ``name`` (wire form)."""
    return {"type": "ref/prompt", "name": name}


def resource_ref(uri: str) -> dict[str, Any]:
    """A completion reference to resource (template) ``uri`` (wire form)."""
    return {"type": "ref/resource", "uri": uri}


def _wire(value: Any) -> Any:
    """A typed value of any revision, or a mapping, in wire form."""
    if isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value)
    return dict(value)


def _params_required(cls: type) -> bool:
    for field in msgspec.structs.fields(cls):
        if field.name == "params":
            return field.required
    return False


def _with_meta(request: Any, key: str, value: Any) -> Any:
    """``request`` with ``params._meta[key]`` set, unless it is set already."""
    params = request.params
    meta = params.meta if params.meta is not UNSET else {}
    if key in meta:
        return request
    params = msgspec.structs.replace(params, meta={**meta, key: value})
    return msgspec.structs.replace(request, params=params)


async def _call(callback: Callable[[Any], Awaitable[None] | None], arg: Any) -> None:
    """Call a callback that may be a plain function or a coroutine function."""
    outcome = callback(arg)
    if inspect.isawaitable(outcome):
        await outcome


def _paging_event(
    method: str, reason: str, request_id: Any = None, path: str = "$.result.nextCursor"
) -> ProtocolViolation:
    """A violation in the result of ``method``: a listing the server pages wrongly, a
    tool's structured content that does not fit."""
    error = ErrorObject(code=int(ErrorCode.INVALID_PARAMS), message=reason)
    return ProtocolViolation(
        rule=Rule.INVALID_RESULT,
        error=error,
        method=method,
        request_id=request_id,
        path=path,
        reason=reason,
    )


def _paging_violation(
    request: Any, reason: str, error: type[ResponseViolation] = ResponseViolation
) -> ResponseViolation:
    """The error of a listing the server pages wrongly (the result of ``request``)."""
    return error(_paging_event(type(request).method, reason, request.id))


class _TaskPlaceholder(msgspec.Struct, kw_only=True):
    """A task known by its id alone."""

    task_id: str
    status: str = "unknown"
    poll_interval: Any = UNSET


_UNKNOWN_TASK: Final = _TaskPlaceholder(task_id="")
