"""The HTTP+SSE transport of 2024-11-05, as the client speaks it: :class:`LegacySseTransport`."""

from __future__ import annotations

import functools
import logging
from typing import Any, Final
from urllib.parse import urljoin, urlsplit

import anyio
from msgspec import UNSET

from ..errors import ConnectionClosed, MessageTooLarge
from .client_link import (
    ClientLink,
    HttpClientTransport,
    OutgoingEnvelope,
    Post,
    answered_id,
    incoming,
    initialize_version,
)
from .client_sse import LegacySseChannel, NoSseEndpoint

__all__ = ["LegacySseTransport", "sse_urls"]

logger = logging.getLogger("mcpspec.connection")


class LegacySseTransport(HttpClientTransport):
    """The HTTP+SSE transport of 2024-11-05 (deprecated, still deployed), over an
    :class:`~.client_link.ClientLink`: :meth:`open` ``GET``\\ s the URL (then its ``sse``
    sibling) for the ``endpoint`` event (:class:`~.client_sse.LegacySseChannel`); from
    then on every message is posted there, its acknowledgement bounded by the read
    timeout, and every server message, answers included, comes on that one stream.
    A cancellation is posted like any notification.

    It owns the SSE channel and the protocol version the ``initialize`` answer on it
    negotiated."""

    #: Every message is handed to a task of the link, which posts it whole even when
    #: the sender is cancelled: a connection needs no shield around it.
    _completes_sends: Final = True

    def __init__(self, link: ClientLink) -> None:
        self._link = link
        self._channel: LegacySseChannel | None = None
        self._initialize_id: Any = UNSET
        #: The protocol version the ``initialize`` answer negotiated; ``None`` before.
        self.protocol_version: str | None = None

    @property
    def endpoint(self) -> str | None:
        """Where messages are posted, once the stream is open."""
        return None if self._channel is None else self._channel.endpoint

    async def open(self, within: float | None = None) -> None:
        """Open the HTTP+SSE stream: at the link's URL, else at its ``sse`` sibling, the
        endpoint event awaited for the read timeout at each, and ``within`` seconds in
        all (``TimeoutError`` after; ``ConnectionClosed`` when neither serves one)."""
        link = self._link
        channel = LegacySseChannel(
            link.http(),
            http_error=link.library.error,
            decoding_error=link.library.decoding_error,
            headers=link.headers,
            auth=link.auth,
            timeout=link.stream_timeout,
            max_message_size=link.limit,
            deliver=self._deliver,
            ended=link.end_receiving,
        )
        failures: list[str] = []
        deadline = None if within is None else anyio.current_time() + within
        for url in sse_urls(link.url):
            wait = link.timeout.read
            if deadline is not None:
                left = deadline - anyio.current_time()
                if left <= 0:
                    break
                wait = left if wait is None else min(wait, left)
            try:
                await channel.open(link.task_group, url, wait=wait)
            except NoSseEndpoint as exc:
                failures.append(str(exc))
                continue
            self._channel = channel
            logger.debug("%s speaks HTTP+SSE: posting to %s", link.url, channel.endpoint)
            return
        if deadline is not None and anyio.current_time() >= deadline:
            raise TimeoutError(f"no HTTP+SSE endpoint within {within:g} s: " + "; ".join(failures))
        raise ConnectionClosed("no HTTP+SSE endpoint: " + "; ".join(failures))

    # -- the MessageStream protocol -------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop every request in flight and the stream (there is no session to end)."""
        await self._link.stop()

    async def send_message(self, data: bytes, message: OutgoingEnvelope) -> None:
        """Post ``data`` (read as ``message``) to the endpoint, from a task of the link;
        ``notifications/initialized`` is waited for, as the requests after it must not
        overtake it."""
        method = message.method if isinstance(message.method, str) else None
        if method is not None and message.id is not UNSET:
            post = Post(message.id, method, False)
            self._link.start_request(post, self.post_request, data, post)
            return
        await self._link.send_notice(
            method or "a response",
            functools.partial(self._post_notice, data),
            wait=method == "notifications/initialized",
        )

    async def post_request(self, data: bytes, post: Post) -> None:
        """Post a request: its acknowledgement is bounded by the read timeout (its
        answer comes on the stream, bounded by the caller)."""
        timeout = self._link.timeout.read
        with anyio.move_on_after(timeout) as bound:
            await self.post(data, post)
        if bound.cancelled_caught:
            post.note = f"the POST was not acknowledged within {timeout:g} s"

    async def post(self, data: bytes, post: Post) -> None:
        """Post a request to the endpoint; its answer comes on the stream (an error
        status answers it with the error)."""
        if post.method == "initialize":
            self._initialize_id = post.id
        link = self._link
        async with link.open_exchange(
            "POST", self._endpoint(), content=data, headers=self._headers(), timeout=link.timeout
        ) as response:
            if response.status_code < 400:
                post.answered = True  # the answer comes on the SSE stream
                return
            quoted = await link.deliver_error_body(response, post)
            if quoted is not None:
                await link.refuse(post, response, quoted)

    async def _post_notice(self, data: bytes) -> None:
        await self._link.post_notice(data, self._headers(), self._endpoint())

    def _headers(self) -> dict[str, str]:
        return {**self._link.headers, "Content-Type": "application/json"}

    def _endpoint(self) -> str:
        endpoint = self.endpoint
        assert endpoint is not None, "the HTTP+SSE stream is not open"
        return endpoint

    async def _deliver(self, item: bytes | MessageTooLarge) -> None:
        """Queue a message of the stream, noting the request it answers."""
        if not isinstance(item, MessageTooLarge) and item.lstrip()[:1] == b"{":
            answered = answered_id(item, incoming(item))
            post = self._link.posts.get(answered) if answered is not UNSET else None
            if post is not None:
                # Its POST is not acknowledged yet (or never will be): it is answered
                # all the same, and no error is to be made up for it.
                post.answered = True
            if answered is not UNSET and answered == self._initialize_id:
                version = initialize_version(item)
                if version is not None:
                    self.protocol_version = version
        await self._link.put(item)


def sse_urls(url: str) -> list[str]:
    """Where an HTTP+SSE stream may be: the URL itself, then its ``sse`` sibling."""
    urls = [url]
    if not urlsplit(url).path.rstrip("/").endswith("/sse"):
        sibling = urljoin(url, "sse")
        if sibling != url:
            urls.append(sibling)
    return urls
