"""The client side of the HTTP+SSE transport of 2024-11-05 (deprecated, still deployed).

:class:`LegacySseChannel` opens ``GET <sse-url>``, waits for the ``endpoint`` event (the
URI to POST client messages to, resolved against the SSE URL, and refused unless it
has the SSE URL's origin: a server must not send the client's credentials elsewhere),
then hands every ``message`` event's data on. Posting is the caller's
(:class:`~mcpspec.runtime.connection.http.client_legacy.LegacySseTransport`, which the
client switches to when a server has no Streamable HTTP endpoint; and the checker).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final
from urllib.parse import urljoin, urlsplit

import anyio
import anyio.abc
import httpx

from ..errors import MessageTooLarge
from .decoding import ACCEPT_ENCODING, decoded_chunks
from .sse_decoder import SseDecoder

__all__ = ["LegacySseChannel", "NoSseEndpoint"]

logger = logging.getLogger("mcpspec.connection")

#: The longest ``endpoint`` URI accepted.
MAX_ENDPOINT: Final = 4096


class NoSseEndpoint(Exception):
    """The URL serves no HTTP+SSE stream with an ``endpoint`` event."""


class LegacySseChannel:
    """The server's SSE stream of the HTTP+SSE transport: :meth:`open` connects and
    learns :attr:`endpoint`; every ``message`` event then goes to ``deliver``, and
    ``ended`` is called when the stream ends."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        http_error: type[Exception] = httpx.HTTPError,
        decoding_error: type[Exception] = httpx.DecodingError,
        headers: Mapping[str, str],
        auth: Any,
        timeout: httpx.Timeout,
        max_message_size: int,
        deliver: Callable[[bytes | MessageTooLarge], Awaitable[None]],
        ended: Callable[[str], None],
    ) -> None:
        self._client = client
        self._http_error = http_error
        self._decoding_error = decoding_error
        self._headers = dict(headers)
        self._auth = auth
        self._timeout = timeout
        self._limit = max_message_size
        self._deliver = deliver
        self._ended = ended
        #: The URL of the SSE stream, once open.
        self.url: str | None = None
        #: Where client messages are POSTed, once the ``endpoint`` event came.
        self.endpoint: str | None = None

    async def open(self, task_group: anyio.abc.TaskGroup, url: str, *, wait: float | None) -> None:
        """Connect to ``url`` and wait (up to ``wait`` seconds) for its ``endpoint``
        event; the stream is then read by a task of ``task_group``. Raises
        :class:`NoSseEndpoint`."""
        try:
            with anyio.fail_after(wait):
                endpoint = await task_group.start(self._read, url)
        except TimeoutError:
            raise NoSseEndpoint(f"{url} sent no endpoint event in time") from None
        except self._http_error as exc:
            raise NoSseEndpoint(f"GET {url} failed: {exc!r}") from exc
        self.url = url
        self.endpoint = endpoint

    async def _read(
        self, url: str, *, task_status: anyio.abc.TaskStatus[str] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        headers = {
            **self._headers,
            "Accept": "text/event-stream",
            "Accept-Encoding": ACCEPT_ENCODING,
        }
        started = False
        reason = "the server ended the SSE stream"
        try:
            async with self._client.stream(
                "GET", url, headers=headers, auth=self._auth, timeout=self._timeout
            ) as response:
                media = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if response.status_code != 200 or media != "text/event-stream":
                    raise NoSseEndpoint(
                        f"GET {url} answered {response.status_code} {media or 'no content'}"
                    )
                decoder = SseDecoder(self._limit)
                async for chunk in decoded_chunks(response, error=self._decoding_error):
                    for event in decoder.feed(chunk):
                        if not started:
                            if event.event == "endpoint" and event.data is not None:
                                task_status.started(_endpoint(url, event.data))
                                started = True
                            continue
                        if event.event != "message":
                            continue
                        if event.data is None:
                            await self._deliver(MessageTooLarge(event.size, self._limit))
                        else:
                            await self._deliver(event.data)
        except self._http_error as exc:
            if not started:
                raise
            reason = f"the SSE stream broke: {exc!r}"
        except Exception:
            if not started:
                raise
            # A bug here must not end the caller's task group: the stream ends.
            logger.exception("reading the HTTP+SSE stream of %s failed", url)
            reason = "reading the SSE stream failed"
        if not started:
            raise NoSseEndpoint(f"GET {url} ended before an endpoint event")
        logger.debug("%s: %s", url, reason)
        self._ended(reason)


def _endpoint(url: str, data: bytes) -> str:
    """The absolute POST URI an ``endpoint`` event names; raises :class:`NoSseEndpoint`
    unless it is short, text, and of the SSE URL's origin."""
    if len(data) > MAX_ENDPOINT:
        raise NoSseEndpoint("the endpoint event is too long")
    try:
        target = urljoin(url, data.decode("utf-8").strip())
        # httpx refuses to send to a URI with a control character (or another it cannot
        # parse): refused here, where it is the server's fault.
        httpx.URL(target)
    except (UnicodeDecodeError, ValueError, httpx.InvalidURL) as exc:
        raise NoSseEndpoint(f"the endpoint event is not a URI: {exc}") from None
    base, there = urlsplit(url), urlsplit(target)
    if (there.scheme, there.netloc) != (base.scheme, base.netloc):
        raise NoSseEndpoint(f"the endpoint {target!r} is not of the origin of {url!r}")
    return target
