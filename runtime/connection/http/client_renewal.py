"""Opening a new session when the server ended one: :class:`SessionRenewal`."""

from __future__ import annotations

import logging
from typing import Any, Final, Protocol

import anyio
import httpx
from msgspec import UNSET

from .client_link import (
    DEFAULT_TIMEOUT,
    BodyStalled,
    BodyTooLarge,
    ClientLink,
    incoming,
    initialize_version,
    media_type,
)
from .sse_decoder import SseDecoder

__all__ = ["MAX_RENEWALS", "RenewableSession", "SessionRenewal"]

logger = logging.getLogger("mcpspec.connection")

#: Sessions renewed in a row (with no answered request between) before giving up.
MAX_RENEWALS: Final = 3


class RenewableSession(Protocol):
    """What a renewal reads and sets of the session it renews."""

    session_id: str | None
    protocol_version: str | None
    session_expired: bool

    def learn_session(self, response: httpx.Response) -> None:
        """Take the session id an answer to ``initialize`` mints."""
        ...

    def session_headers(self) -> dict[str, str]:
        """The headers that name the session (its id and protocol version)."""
        ...


class SessionRenewal:
    """Streamable HTTP with sessions (2025-03-26 ... 2025-11-25): a 404 to a message
    carrying the session id means the server ended the session, and, as the
    specification says, the client opens a new one: the same ``initialize`` posted
    again without the id, then ``notifications/initialized``; the same protocol version
    must come back. It owns the opening messages (:meth:`opened_with`,
    :meth:`initialized_with`), the lock that holds posting back while a session is
    renewed (:meth:`wait_renewed`), and the bound on renewals in a row
    (:data:`MAX_RENEWALS`, reset by :meth:`progressed`). What the old session held on
    the server (a logging level, resource subscriptions) is not set again."""

    def __init__(self, link: ClientLink, session: RenewableSession, *, enabled: bool) -> None:
        self._link = link
        self._session = session
        self._enabled = enabled
        self._lock = anyio.Lock()
        self._renewals = 0
        #: The id of the ``initialize`` request (its answers are read for the version).
        self.initialize_id: Any = UNSET
        #: The opening messages, to open a new session with.
        self._initialize_body: bytes | None = None
        self.initialized_body: bytes | None = None

    def opened_with(self, request_id: Any, data: bytes) -> None:
        """``initialize`` (``data``, of id ``request_id``) was sent."""
        self.initialize_id = request_id
        self._initialize_body = data

    def initialized_with(self, data: bytes) -> None:
        """``notifications/initialized`` (``data``) was sent."""
        self.initialized_body = data

    def progressed(self) -> None:
        """A request was answered in the session: renewals in a row start again."""
        self._renewals = 0

    async def wait_renewed(self) -> None:
        """Wait while the session is being renewed: what is posted meanwhile would go
        without a session id."""
        if self._lock.locked():
            async with self._lock:
                pass

    async def renew(self, expired: str) -> bool:
        """The server ended session ``expired`` (HTTP 404): open a new one; whether the
        session has an id to go on with (a renewal done meanwhile counts)."""
        if not self._enabled or self._initialize_body is None or self.initialized_body is None:
            return False
        session = self._session
        async with self._lock:
            if session.session_id != expired:
                return not session.session_expired  # renewed meanwhile
            if self._renewals >= MAX_RENEWALS:
                return False
            self._renewals += 1
            session.session_id = None
            renewed = False
            try:
                with anyio.fail_after(self._link.timeout.read or DEFAULT_TIMEOUT):
                    renewed = await self._initialize_again()
            except (self._link.library.error, TimeoutError, BodyTooLarge, BodyStalled):
                renewed = False
            finally:
                if not renewed:
                    # Failed, or cancelled with the request that renews (its caller's
                    # timeout), maybe before `notifications/initialized`: the next
                    # request meets the 404 again and renews then.
                    session.session_id = expired
            if renewed:
                logger.info("the server ended the session: a new one was opened")
        return renewed

    async def _initialize_again(self) -> bool:
        assert self._initialize_body is not None and self.initialized_body is not None
        link, session = self._link, self._session
        version = session.protocol_version
        headers = link.post_headers()
        async with link.open_exchange(
            "POST",
            link.url,
            content=self._initialize_body,
            headers=headers,
            timeout=link.stream_timeout,
        ) as response:
            if response.status_code >= 300:
                return False
            session.learn_session(response)
            answered = await self._initialize_answer(response)
        if answered is None or answered != version:
            session.session_id = None
            return False
        session.protocol_version = answered
        headers.update(session.session_headers())
        async with link.open_exchange(
            "POST", link.url, content=self.initialized_body, headers=headers, timeout=link.timeout
        ) as response:
            return response.status_code < 300  # its body (of a 202: none) is not read

    async def _initialize_answer(self, response: httpx.Response) -> str | None:
        """The protocol version of the initialize result in ``response`` (JSON or
        SSE); nothing of it is delivered."""

        def version_of(data: bytes) -> str | None:
            message = incoming(data)
            if message is None or message.id != self.initialize_id or not message.result:
                return None
            return initialize_version(data)

        link = self._link
        if media_type(response) == "application/json":
            return version_of(await link.read_body(response))
        if media_type(response) != "text/event-stream":
            return None
        decoder = SseDecoder(link.limit)
        async for chunk in link.chunks(response):
            for event in decoder.feed(chunk):
                if event.event == "message" and event.data is not None:
                    version = version_of(event.data)
                    if version is not None:
                        return version
        return None
