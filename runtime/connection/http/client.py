"""The client side of MCP over HTTP, for every era: :class:`HttpClientStream`.

One :class:`~mcpspec.runtime.connection.transport.MessageStream` speaks whatever the
server at a URL speaks. It is a small selector over one transport class per era, all
on one :class:`~.client_link.ClientLink` (the HTTP client, the received messages, the
tasks that post, the reading of answers):

* :class:`~.client_streamable.StreamableHttpTransport`: Streamable HTTP with sessions
  (2025-03-26 ... 2025-11-25), with :class:`~.client_renewal.SessionRenewal` and
  :class:`~.client_resumption.SseResumption` as collaborators;
* :class:`~.client_stateless.StatelessHttpTransport`: Streamable HTTP of 2026-07-28,
  mirroring tool parameters from :class:`~.client_tools.ToolHeaderMemory`;
* :class:`~.client_legacy.LegacySseTransport`: the HTTP+SSE transport of 2024-11-05.

Each message picks its transport by what it is: a request carrying a 2026-07-28
protocol version in its ``_meta`` goes stateless; ``initialize`` starts a session; the
rest follow the model the session is in. The fallback is the specification's
(backward compatibility): the modern request goes first, and an error answer to it,
JSON-RPC or made up from the status, lets the session fall back to ``initialize``;
when the URL refuses ``initialize`` with 400, 404 or 405 and no JSON-RPC body (its
POST endpoint is absent), ``transport="auto"`` ``GET``\\ s it for an HTTP+SSE
``endpoint`` event and goes on there. ``transport="sse"`` opens HTTP+SSE on entry.

Every buffer is bounded: one message by ``max_message_size`` (bodies are decoded from
their ``Content-Encoding`` in bounded steps: :mod:`.decoding`), the queue of received
messages by ``queue_size``, error bodies by what is kept of them, reconnections by
``max_reconnects``, the notifications and responses in flight by
:data:`~.client_link.MAX_NOTICES_IN_FLIGHT`, the tools whose parameters are mirrored by
:data:`~.client_tools.MAX_REMEMBERED_TOOLS`. A batch the server sends is handed to the
session whole.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Final, Literal

import anyio
import httpx
from msgspec import UNSET

from mcpspec.runtime.session.mirrored_headers import ParamHeader

from ..errors import ConnectionClosed
from ..transport import DEFAULT_MAX_MESSAGE_SIZE
from .client_legacy import LegacySseTransport
from .client_link import (
    DEFAULT_TIMEOUT,
    LIBRARY_HEADERS,
    QUEUE_SIZE,
    ClientLink,
    HttpClientTransport,
    InitializeAnswer,
    OutgoingEnvelope,
    OutgoingParams,
    Post,
    media_type,
    outgoing,
    stateless_version,
)
from .client_resumption import MAX_RECONNECTS, RECONNECT_DELAY
from .client_stateless import StatelessHttpTransport
from .client_streamable import SESSION_EXPIRED, STANDALONE_WAIT, StreamableHttpTransport
from .client_tools import MAX_REMEMBERED_TOOLS, ToolHeaderMemory

__all__ = [
    "DEFAULT_TIMEOUT",
    "LIBRARY_HEADERS",
    "MAX_RECONNECTS",
    "MAX_REMEMBERED_TOOLS",
    "SESSION_EXPIRED",
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


class HttpClientStream:
    """A message stream to the MCP server at ``url``: the ``auto`` selector of the HTTP
    transports (see the module's docstring). It owns the choice of transport and
    nothing else.

    Use it as an async context manager (``Client.http`` does). ``headers`` are sent with
    every HTTP request, but for the ones the client writes itself (``Accept``,
    ``Content-Type``, ``MCP-Protocol-Version``, ``Mcp-Session-Id``, ``Mcp-Method``,
    ``Mcp-Name``, ``Mcp-Param-*``, ``Last-Event-ID``), which are dropped from them.
    ``auth`` is an auth of the HTTP library (or ``(user, password)``); ``timeout`` bounds
    connecting, writing and reading an answer that is not a stream (streams are read
    without one: a request's own ``timeout`` bounds it). ``http_client`` is an
    ``httpx.AsyncClient`` or an ``httpx2.AsyncClient`` to use (TLS, proxies, pools: the
    caller's, and left open; :mod:`.library`); without one the stream makes an ``httpx``
    one. ``transport`` picks the transport (:data:`HttpTransport`); with ``"sse"``,
    entering the stream opens the HTTP+SSE stream, within ``open_timeout`` seconds
    (``TimeoutError`` after). ``renew_sessions``: open a new session when the server
    ends one (:class:`~.client_renewal.SessionRenewal`).

    :meth:`send` hands every message to a task, which posts it whole even when the
    sender is cancelled meanwhile; a request's task reads its answer too.
    """

    #: :meth:`send` hands every message to a task of the link, which posts it whole
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
        self._link = ClientLink(
            url,
            headers=headers,
            auth=auth,
            timeout=timeout,
            http_client=http_client,
            max_message_size=max_message_size,
            queue_size=queue_size,
        )
        self._choice: HttpTransport = transport
        self._open_timeout = open_timeout
        self._tools = ToolHeaderMemory()
        self._stateless = StatelessHttpTransport(self._link, self._tools)
        self._streamable = StreamableHttpTransport(
            self._link,
            renew_sessions=renew_sessions,
            max_reconnects=max_reconnects,
            reconnect_delay=reconnect_delay,
            fallback=self._fall_back if transport == "auto" else None,
        )
        self._legacy: LegacySseTransport | None = None
        #: The transport of the model the session is in: it takes the messages that do
        #: not say which they are for.
        self._current: HttpClientTransport = self._streamable
        self._switching = anyio.Lock()

    # -- what it is connected to ----------------------------------------------------------------

    @property
    def url(self) -> str:
        """The URL of the server."""
        return self._link.url

    @property
    def transport(self) -> Literal["streamable", "sse"]:
        """The transport in use: ``"sse"`` once on HTTP+SSE, else ``"streamable"``."""
        return "sse" if self._legacy is not None else "streamable"

    @property
    def session_id(self) -> str | None:
        """The session id the server minted (handshake revisions), if any."""
        return self._streamable.session_id

    @property
    def protocol_version(self) -> str | None:
        """The protocol version negotiated by ``initialize``, or of the last 2026-07-28
        request; ``None`` before."""
        return self._current.protocol_version

    @property
    def stateless(self) -> bool:
        """Whether the stream speaks the 2026-07-28 (stateless) model."""
        return self._current is self._stateless

    @property
    def session_expired(self) -> bool:
        """Whether the server said the session expired (HTTP 404)."""
        return self._streamable.session_expired

    # -- lifecycle ------------------------------------------------------------------------------

    async def __aenter__(self) -> HttpClientStream:
        await self._link.open()
        if self._choice == "sse":
            try:
                legacy = LegacySseTransport(self._link)
                await legacy.open(self._open_timeout)
            except BaseException:
                await self.__aexit__(None, None, None)
                raise
            self._legacy = self._current = legacy
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
        await self._link.close()

    async def aclose(self) -> None:
        """End the session (``DELETE``, when the server minted one), stop every request
        and stream in flight, and end :meth:`receive`. Idempotent."""
        await self._current.aclose()

    # -- the MessageStream protocol -------------------------------------------------------------

    async def receive(self) -> bytes:
        """The next message of the server; raises ``ConnectionClosed`` at the end and
        ``MessageTooLarge`` for one over the limit (dropped unread)."""
        return await self._link.receive()

    async def send(self, data: bytes, *, related_request_id: int | str | None = None) -> None:
        """Post one message, by the transport it is for (see the module's docstring);
        ``send`` returns once its task is started (for ``notifications/initialized``,
        once it is acknowledged)."""
        link = self._link
        if link.closed or not link.connected or self._streamable.session_expired:
            raise ConnectionClosed(link.close_reason)
        message = outgoing(data)
        await self._transport_of(message).send_message(data, message)

    def _transport_of(self, message: OutgoingEnvelope) -> HttpClientTransport:
        """The transport ``message`` goes by (updating the model the session is in)."""
        method = message.method
        if method == "notifications/cancelled" and message.params is not None:
            # A 2026-07-28 request is cancelled by closing its stream, whatever came after.
            post = self._link.posts.get(message.params.request_id)
            if post is not None and post.stateless:
                return self._stateless
        if self._legacy is not None:
            return self._legacy
        if isinstance(method, str) and message.id is not UNSET:
            if method == "initialize":
                self._current = self._streamable
                return self._streamable
            if stateless_version(message) is not None:
                if not self._streamable.initialized:
                    self._current = self._stateless
                return self._stateless
        return self._current

    async def _fall_back(self, data: bytes, post: Post) -> bool:
        """The URL refused ``initialize`` as a server without a Streamable HTTP endpoint
        does: try HTTP+SSE (a ``GET`` for its ``endpoint`` event) and post it there;
        whether that server took it."""
        async with self._switching:
            if self._legacy is None:
                legacy = LegacySseTransport(self._link)
                try:
                    await legacy.open()
                except ConnectionClosed as exc:
                    logger.debug("no fallback to HTTP+SSE: %s", exc)
                    return False
                self._legacy = self._current = legacy
        await self._legacy.post(data, post)
        return True

    # -- tools (2026-07-28) ---------------------------------------------------------------------

    def remember_tool_params(self, tools: Mapping[str, Sequence[ParamHeader]]) -> None:
        """Learn the ``x-mcp-header`` parameters of tools (name -> ``ParamHeader``\\ s,
        from :func:`mcpspec.runtime.session.mirrored_headers.param_headers`): ``tools/call``
        requests for them carry the ``Mcp-Param-*`` headers
        (:class:`~.client_tools.ToolHeaderMemory`)."""
        self._tools.remember(tools)
