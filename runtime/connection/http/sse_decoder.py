"""A bounded decoder of Server-Sent Events, for the HTTP client.

:class:`SseDecoder` turns the bytes of a ``text/event-stream`` body into events as the
HTML standard's event-stream interpretation says (lines end at CR LF, CR or LF; ``:``
starts a comment; ``event``, ``data``, ``id`` and ``retry`` fields; a blank line
dispatches; a byte order mark at the start is skipped), keeping the data as bytes.
Every buffer is bounded by ``max_event_size``: a longer line or event is dropped as it
streams in, and dispatched as an oversized event (``data is None``) so the reader can
say so, instead of being held in memory. Each chunk is scanned once.
"""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = ["SseDecoder", "SseEvent"]

_CR: Final = 0x0D
_LF: Final = 0x0A
#: The longest field name or ``retry`` value worth reading (``retry`` is milliseconds).
_MAX_RETRY_DIGITS: Final = 9
#: A UTF-8 byte order mark, skipped at the start of a stream.
_BOM: Final = b"\xef\xbb\xbf"
#: The longest event name or id kept (a longer one is cut: they are routing hints only).
_MAX_NAME: Final = 256


class SseEvent(NamedTuple):
    """One dispatched event: its type (``"message"`` unless named), its data (the
    ``data`` lines joined with LF; ``None`` when the event was over the limit), and its
    size in bytes (of the data seen, even when dropped)."""

    event: str
    data: bytes | None
    size: int


class SseDecoder:
    """Feed it chunks of an event stream (:meth:`feed`); it returns the events completed
    so far. :attr:`last_event_id` and :attr:`retry` (seconds) follow the stream's
    ``id`` and ``retry`` fields. At most ``max_event_size`` bytes of one line, plus one
    event's data, are ever held."""

    def __init__(self, max_event_size: int) -> None:
        if max_event_size < 1:
            raise ValueError("max_event_size must be positive")
        self._limit = max_event_size
        self._buffer = bytearray()
        #: Where the next end-of-line search starts (the buffer before it has none).
        self._scanned = 0
        #: A CR ended the last line: an LF right after it belongs to that line end.
        self._after_cr = False
        #: The current line is over the limit: drop bytes up to its end.
        self._skipping = False
        #: The event's data lines, joined with LF (one buffer: a line is no object).
        self._data = bytearray()
        self._data_lines = 0
        self._data_size = 0
        #: Nothing came yet: a byte order mark may start the stream.
        self._at_start = True
        self._oversized = False
        self._event = ""
        #: The last event id the stream set (``None`` until one is set).
        self.last_event_id: str | None = None
        #: The reconnection delay the stream asked for, in seconds (``None``: not set).
        self.retry: float | None = None

    @property
    def dropping(self) -> bool:
        """Whether an oversized line or event is being dropped (at the end of the
        stream: one was lost)."""
        return self._oversized or self._skipping

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events that ``chunk`` completes."""
        events: list[SseEvent] = []
        buffer = self._buffer
        buffer += chunk
        if self._at_start:
            if len(buffer) < len(_BOM) and _BOM.startswith(bytes(buffer)):
                return events  # a byte order mark may be coming
            self._at_start = False
            if buffer.startswith(_BOM):
                del buffer[: len(_BOM)]
        start = 0
        # The next LF and CR from where the search is (-1: none in the buffer): each is
        # searched for again only once passed, so a chunk is scanned once for each.
        next_lf = next_cr = -2
        while start < len(buffer):
            if self._after_cr:
                self._after_cr = False
                if buffer[start] == _LF:
                    start += 1
                    continue
            search = max(start, self._scanned)
            if -1 < next_lf < search or next_lf == -2:
                next_lf = buffer.find(b"\n", search)
            if -1 < next_cr < search or next_cr == -2:
                next_cr = buffer.find(b"\r", search)
            end = next_cr if next_lf < 0 or -1 < next_cr < next_lf else next_lf
            if end < 0:
                break
            if self._skipping:
                self._skipping = False
            else:
                self._line(bytes(buffer[start:end]), events)
            self._after_cr = buffer[end] == _CR
            start = end + 1
            self._scanned = start
        del buffer[:start]
        self._scanned = len(buffer)  # what is left holds no line end
        if len(buffer) > self._limit:
            # A line with no end in sight: drop what came, and the rest as it comes.
            self._drop_line(len(buffer))
            buffer.clear()
            self._scanned = 0
            self._skipping = True
        return events

    def _drop_line(self, size: int) -> None:
        self._oversized = True
        self._data_size += size
        self._data.clear()
        self._data_lines = 0

    def _line(self, line: bytes, events: list[SseEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line[0] == 0x3A:  # ":" a comment (a keep-alive)
            return
        colon = line.find(b":")
        if colon < 0:
            name, value = line, b""
        else:
            name, value = line[:colon], line[colon + 1 :]
            if value[:1] == b" ":
                value = value[1:]
        if name == b"data":
            self._data_size += len(value) + (1 if self._data_lines else 0)
            if self._oversized or self._data_size > self._limit:
                self._drop_line(0)
            else:
                if self._data_lines:
                    self._data += b"\n"
                self._data += value
                self._data_lines += 1
        elif name == b"event":
            self._event = value[:_MAX_NAME].decode("utf-8", "replace")
        elif name == b"id":
            if b"\x00" not in value:
                self.last_event_id = value[:_MAX_NAME].decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit() and len(value) <= _MAX_RETRY_DIGITS:
            self.retry = int(value) / 1000

    def _dispatch(self, events: list[SseEvent]) -> None:
        if self._oversized:
            events.append(SseEvent(self._event or "message", None, self._data_size))
        elif self._data:  # an event with empty data (a priming event) is not dispatched
            data = bytes(self._data)
            events.append(SseEvent(self._event or "message", data, len(data)))
        self._data = bytearray()
        self._data_lines = 0
        self._data_size = 0
        self._oversized = False
        self._event = ""
