"""Streamable HTTP with sessions, as the client speaks it: :class:`StreamableHttpTransport`."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Final

import anyio
import httpx
from msgspec import UNSET

from ..errors import ConnectionClosed
from .client_link import (
    DEFAULT_TIMEOUT,
    ClientLink,
    HttpClientTransport,
    OutgoingEnvelope,
    Post,
    initialize_version,
)
from .client_renewal import SessionRenewal
from .client_resumption import MAX_RECONNECTS, RECONNECT_DELAY, SseResumption

__all__ = [
    "MAX_SESSION_ID",
    "SESSION_EXPIRED",
    "STANDALONE_WAIT",
    "Fallback",
    "StreamableHttpTransport",
]

logger = logging.getLogger("mcpspec.connection")

#: How long the client waits, after ``notifications/initialized``, for the server to
#: answer the ``GET`` of its standalone stream before it goes on (seconds).
STANDALONE_WAIT: Final = 5.0
#: The longest session id accepted.
MAX_SESSION_ID: Final = 1024
#: The reason of the error a request gets, and of the end of the stream, when the server
#: answers 404 to the session id.
SESSION_EXPIRED: Final = (
    "Session expired: the server no longer knows this session (HTTP 404); "
    "a new connection starts a new one"
)
#: The first revision with the ``MCP-Protocol-Version`` header.
_VERSION_HEADER_SINCE: Final = "2025-06-18"

#: Given an ``initialize`` the URL refused with 400, 404 or 405 and no JSON-RPC body
#: (its bytes and its post): whether another transport took it.
Fallback = Callable[[bytes, Post], Awaitable[bool]]


class StreamableHttpTransport(HttpClientTransport):
    """Streamable HTTP with sessions (2025-03-26 ... 2025-11-25), over an
    :class:`~.client_link.ClientLink`.

    Every message is a POST with the headers the revision requires (``Accept``,
    ``Content-Type``, ``MCP-Protocol-Version`` once negotiated, ``Mcp-Session-Id`` once
    the server minted one). A request's answer is read in a task of its own, from an
    ``application/json`` body or a ``text/event-stream`` one; a stream that ends before
    the answer is resumed (:class:`~.client_resumption.SseResumption`). Once
    initialized, a standalone ``GET`` stream carries the server's own requests and
    notifications. A 404 to the session id renews the session
    (:class:`~.client_renewal.SessionRenewal`); when that is off or fails, the request
    fails (message ``"Session expired ..."``) and the link ends. :meth:`delete_session`
    sends ``DELETE`` for the session.

    It owns the session: its id, its protocol version, whether it expired, and its
    standalone stream. ``fallback`` is given an ``initialize`` the URL refused as a
    server without a Streamable HTTP endpoint does (:data:`Fallback`)."""

    #: Every message is handed to a task of the link, which posts it whole even when
    #: the sender is cancelled: a connection needs no shield around it.
    _completes_sends: Final = True

    def __init__(
        self,
        link: ClientLink,
        *,
        renew_sessions: bool = True,
        max_reconnects: int = MAX_RECONNECTS,
        reconnect_delay: float = RECONNECT_DELAY,
        fallback: Fallback | None = None,
    ) -> None:
        self._link = link
        self._fallback = fallback
        self.resumption = SseResumption(
            link,
            self.session_headers,
            max_reconnects=max_reconnects,
            reconnect_delay=reconnect_delay,
        )
        self.renewal = SessionRenewal(link, self, enabled=renew_sessions)
        #: The session id the server minted, if any.
        self.session_id: str | None = None
        #: The protocol version negotiated by ``initialize``; ``None`` before.
        self.protocol_version: str | None = None
        #: Whether the server said the session expired (HTTP 404).
        self.session_expired = False
        self._deleted = False
        self._listening = False
        #: The scope of the standalone stream's task, while it runs.
        self._listener: anyio.CancelScope | None = None

    @property
    def initialized(self) -> bool:
        """Whether an ``initialize`` was sent."""
        return self.renewal.initialize_id is not UNSET

    # -- the MessageStream protocol -------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop every request and stream in flight, then end the session."""
        if await self._link.stop():
            with anyio.CancelScope(shield=True):
                await self.delete_session()

    async def send_message(self, data: bytes, message: OutgoingEnvelope) -> None:
        """Post ``data`` (read as ``message``) from a task of the link: a request's task
        reads its answer too; ``notifications/initialized`` is waited for, as the
        requests after it must not overtake it. A cancellation stops reading the
        answer it makes moot and is posted."""
        if self.session_expired:
            raise ConnectionClosed(self._link.close_reason)
        method = message.method if isinstance(message.method, str) else None
        if method is not None and message.id is not UNSET:
            on_answer = None
            if method == "initialize":
                self.renewal.opened_with(message.id, data)
                # A probe may have gone before: its version is not this handshake's.
                self.protocol_version = None
                on_answer = self._learn_version
            post = Post(message.id, method, False, on_answer)
            self._link.start_request(post, self._post_request, data, post)
            return
        if method == "notifications/cancelled":
            # Disconnecting is no cancellation here: the notification is posted too; the
            # answer it makes moot is not waited for.
            self._link.cancel_request(message)
        initialized = method == "notifications/initialized"
        if initialized:
            self.renewal.initialized_with(data)
        await self._link.send_notice(
            method or "a response",
            functools.partial(self._post_notice, data),
            then=self._listen_once if initialized else None,
            wait=initialized,
        )

    # -- the session ----------------------------------------------------------------------------

    def session_headers(self) -> dict[str, str]:
        """``MCP-Protocol-Version`` (from 2025-06-18) and ``Mcp-Session-Id``, as known."""
        headers: dict[str, str] = {}
        version = self.protocol_version
        if version is not None and version >= _VERSION_HEADER_SINCE:
            headers["MCP-Protocol-Version"] = version
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def learn_session(self, response: httpx.Response) -> None:
        """Take the session id an answer to ``initialize`` mints, when it is valid."""
        session_id = response.headers.get("mcp-session-id")
        if session_id is None:
            return
        if 0 < len(session_id) <= MAX_SESSION_ID and all(
            0x21 <= ord(c) <= 0x7E for c in session_id
        ):
            self.session_id = session_id
        else:
            logger.warning("the server minted an invalid session id: ignored")

    def _learn_version(self, data: bytes) -> None:
        # Kept only when it can travel in a header: any other answer fails the
        # negotiation, and closing must still send a valid DELETE.
        version = initialize_version(data)
        if version is not None:
            self.protocol_version = version

    def _expire(self) -> None:
        """The server answered 404 to the session id: the session is over."""
        self.session_expired = True
        self.session_id = None
        self._deleted = True
        self._link.end_receiving(SESSION_EXPIRED)

    async def _renew(self, expired: str) -> bool:
        """Renew session ``expired`` (:meth:`SessionRenewal.renew`); a renewed session
        gets its own standalone stream."""
        renewed = await self.renewal.renew(expired)
        if renewed and self._listening:
            await self._start_listening()
        return renewed

    async def delete_session(self) -> None:
        """``DELETE`` the session, when the server minted one (closing never raises)."""
        link = self._link
        session_id = self.session_id
        if session_id is None or self._deleted:
            return
        self._deleted = True
        if not link.connected:
            return
        headers = {**link.headers, **self.session_headers()}
        try:
            with anyio.move_on_after(link.timeout.connect or DEFAULT_TIMEOUT):
                # The answer's body is not read: nothing in it matters now.
                async with link.open_exchange(
                    "DELETE", link.url, headers=headers, timeout=link.timeout
                ) as response:
                    if response.status_code >= 400 and response.status_code != 405:
                        logger.debug("DELETE of the session answered %s", response.status_code)
        except (link.library.error, ValueError) as exc:
            logger.debug("DELETE of the session failed: %r", exc)

    # -- posting --------------------------------------------------------------------------------

    async def _post_request(self, data: bytes, post: Post) -> None:
        """Post a request and deliver its answer; once more in a renewed session when
        the server ended this one."""
        if await self._exchange(data, post, renewed=False):
            await self._exchange(data, post, renewed=True)

    async def _exchange(self, data: bytes, post: Post, *, renewed: bool) -> bool:
        """Post a request and deliver what answers it; ``True`` when the session expired
        and a new one was opened: the request is to be posted again."""
        link = self._link
        await self.renewal.wait_renewed()
        headers = link.post_headers()
        headers.update(self.session_headers())
        async with link.open_exchange(
            "POST", link.url, content=data, headers=headers, timeout=link.stream_timeout
        ) as response:
            status = response.status_code
            if post.method == "initialize" and status < 300:
                self.learn_session(response)
            if status == 404 and "Mcp-Session-Id" in headers:
                if not renewed and await self._renew(headers["Mcp-Session-Id"]):
                    return True
                await link.make_up_error(post, SESSION_EXPIRED, status=404)
                self._expire()
                return False
            if status < 300:
                self.renewal.progressed()
            if status >= 400:
                quoted = await link.deliver_error_body(response, post)
                if quoted is None:
                    return False
                if (
                    post.method == "initialize"
                    and status in (400, 404, 405)
                    and self._fallback is not None
                    and await self._fallback(data, post)
                ):
                    return False
                await link.refuse(post, response, quoted)
                return False
            decoder = await link.deliver_answer(response, post)
            if decoder is not None:
                await self.resumption.resume(post, decoder)
        return False

    async def _post_notice(self, data: bytes) -> None:
        """Post a notification or a response and read the server's acknowledgement;
        once more in a renewed session when the server ended this one."""
        for attempt in range(2):
            await self.renewal.wait_renewed()
            headers = self._link.post_headers()
            headers.update(self.session_headers())
            expired = await self._post_once(data, headers)
            if expired is None:
                break
            if attempt or not await self._renew(expired):
                self._expire()
                raise ConnectionClosed(self._link.close_reason)
            if data == self.renewal.initialized_body:
                return  # renewing posted it to the new session already

    async def _post_once(self, data: bytes, headers: dict[str, str]) -> str | None:
        """Post a notification or response; the session id the server answered 404 to,
        if it did."""
        status = await self._link.post_notice(data, headers, self._link.url)
        if status == 404 and "Mcp-Session-Id" in headers:
            return headers["Mcp-Session-Id"]
        return None

    # -- the standalone stream ------------------------------------------------------------------

    async def _listen_once(self) -> None:
        """After ``notifications/initialized``: open the standalone stream, once."""
        if not self._listening:
            self._listening = True
            await self._start_listening()

    async def _start_listening(self) -> None:
        """Open the standalone stream (after ``initialize``, or a renewed session's).
        It is opened before the session goes on: else the next requests could race it
        to the server, which may send their answers on it once it opens. A server slow
        to answer the ``GET`` is waited for a while only."""
        if self._listener is not None:
            self._listener.cancel()  # the stream of a session the server ended
        opened = anyio.Event()
        self._link.spawn(self._listen, opened)
        with anyio.move_on_after(STANDALONE_WAIT):
            await opened.wait()

    async def _listen(self, opened: anyio.Event) -> None:
        """The standalone ``GET`` stream of the server's own requests and notifications
        (:meth:`SseResumption.follow`); a renewed session's stream replaces it."""
        with anyio.CancelScope() as scope:
            self._listener = scope
            try:
                await self.resumption.follow(opened)
            except Exception:
                # A bug here must not end the connection: only this stream ends.
                logger.exception("reading the standalone SSE stream failed")
            finally:
                if self._listener is scope:
                    self._listener = None
                opened.set()
