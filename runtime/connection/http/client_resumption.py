"""Resuming the SSE streams of Streamable HTTP: :class:`SseResumption`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

import anyio

from .client_link import ClientLink, Post, media_type
from .sse_decoder import SseDecoder

__all__ = ["MAX_RECONNECTS", "MIN_RETRY", "RECONNECT_DELAY", "SseResumption"]

logger = logging.getLogger("mcpspec.connection")

#: Reconnections in a row that bring nothing new before a stream is given up.
MAX_RECONNECTS: Final = 5
#: Seconds before reconnecting when the server did not say (``retry``).
RECONNECT_DELAY: Final = 1.0
#: Event ids a resumed response stream remembers, to tell progress from replay.
MAX_SEEN_EVENT_IDS: Final = 1024
#: The shortest ``retry`` heeded, in seconds (``retry: 0`` would reconnect in a loop).
MIN_RETRY: Final = 0.1


class SseResumption:
    """Reconnecting the SSE streams of Streamable HTTP with sessions (2025-03-26 ...
    2025-11-25): a ``GET`` with ``Last-Event-ID``, after the server's ``retry``, as
    long as it brings something new. It owns the reconnection policy of a request's
    response stream that ends before its answer (:meth:`resume`) and of the
    standalone stream of the server's own messages (:meth:`follow`).

    ``session_headers`` gives the headers of the session (its id and protocol
    version) at the time of each ``GET``; ``max_reconnects`` bounds the reconnections
    in a row that bring nothing new (a resumed stream that replays what it sent before
    counts as broken)."""

    def __init__(
        self,
        link: ClientLink,
        session_headers: Callable[[], dict[str, str]],
        *,
        max_reconnects: int = MAX_RECONNECTS,
        reconnect_delay: float = RECONNECT_DELAY,
    ) -> None:
        self._link = link
        self._session_headers = session_headers
        self.max_reconnects = max_reconnects
        self._reconnect_delay = reconnect_delay

    def delay(self, retry: float | None) -> float:
        """Seconds before reconnecting: the server's ``retry`` (at least
        :data:`MIN_RETRY`), else ``reconnect_delay``."""
        return self._reconnect_delay if retry is None else max(retry, MIN_RETRY)

    def get_headers(self, last_event_id: str | None) -> dict[str, Any]:
        """The headers of a ``GET`` of an SSE stream, resuming after ``last_event_id``."""
        headers: dict[str, Any] = {
            **self._link.headers,
            "Accept": "text/event-stream",
            **self._session_headers(),
        }
        if last_event_id is not None:
            # An event id is any text but CR, LF and NUL: sent as its UTF-8 bytes, as
            # browsers send it (a header value of text must be ASCII).
            headers["Last-Event-ID"] = last_event_id.encode("utf-8")
        return headers

    async def resume(self, post: Post, decoder: SseDecoder) -> None:
        """A response stream ended before its answer: reconnect while that brings
        events with ids not seen before (``post.note`` says why it stopped)."""
        link = self._link
        failures = 0
        seen_ids = {decoder.last_event_id}
        while not post.answered and decoder.last_event_id is not None:
            if failures >= self.max_reconnects:
                post.note = f"the response stream broke {failures} times without an answer"
                return
            await anyio.sleep(self.delay(decoder.retry))
            resumed = SseDecoder(link.limit)
            resumed.last_event_id, resumed.retry = decoder.last_event_id, decoder.retry
            decoder = resumed
            try:
                async with link.open_exchange(
                    "GET",
                    link.url,
                    headers=self.get_headers(decoder.last_event_id),
                    timeout=link.stream_timeout,
                ) as response:
                    if response.status_code >= 400 or media_type(response) != "text/event-stream":
                        post.note = f"resuming the response stream: HTTP {response.status_code}"
                        return
                    await link.read_events(response, decoder, post)
            except link.library.error:
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

    async def follow(self, opened: anyio.Event) -> None:
        """Read the standalone stream, reconnected while it brings something (and the
        link is open); ``opened`` is set once the first ``GET`` is answered (or
        failed)."""
        link = self._link
        last_event_id: str | None = None
        retry: float | None = None
        failures = 0
        while failures <= self.max_reconnects and not link.closed:
            decoder = SseDecoder(link.limit)
            decoder.last_event_id, decoder.retry = last_event_id, retry
            try:
                async with link.open_exchange(
                    "GET",
                    link.url,
                    headers=self.get_headers(last_event_id),
                    timeout=link.stream_timeout,
                ) as response:
                    opened.set()
                    if response.status_code >= 400 or media_type(response) != "text/event-stream":
                        logger.debug("no standalone SSE stream: HTTP %s", response.status_code)
                        return
                    progressed = await link.read_events(response, decoder, None)
            except link.library.error as exc:
                logger.debug("the standalone SSE stream broke: %r", exc)
                progressed = False
            opened.set()
            last_event_id, retry = decoder.last_event_id, decoder.retry
            failures = 0 if progressed else failures + 1
            await anyio.sleep(self.delay(retry))
