"""Where the SSE events of a session are kept for replay: :class:`EventStore`.

Resumability (Streamable HTTP, 2025-03-26 to 2025-11-25): every event a server sends on
an SSE stream carries an id, unique within the session, that names its stream. A client
whose stream broke reconnects with ``GET`` and ``Last-Event-ID``; the server replays
the events of that stream (and of no other) after that id, then goes on live.

An :class:`EventStore` keeps the events; :class:`MemoryEventStore` (the default) keeps
them in this process, bounded in count, bytes and age per session and in bytes in all.
Several workers that do not route a session's requests to one worker need a store they
all share (a database, say): one written to this protocol.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["EventStore", "MemoryEventStore", "StoredEvent"]


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One event as kept: its id, the stream it belongs to, the message's bytes."""

    event_id: str
    stream_id: str
    data: bytes


class EventStore(Protocol):
    """Keeps the SSE events of sessions for replay."""

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        """Keep one event of ``stream_id`` in ``session_id``; return its id (unique in
        the session, never reused)."""
        ...

    async def replay(self, session_id: str, last_event_id: str) -> list[StoredEvent] | None:
        """The events of the stream ``last_event_id`` belongs to that came after it, in
        order; ``None`` when that id is not one this store knows for the session."""
        ...

    async def forget(self, session_id: str) -> None:
        """Drop every event of a session that ended."""
        ...


class MemoryEventStore:
    """An :class:`EventStore` in this process's memory, bounded in count, bytes and
    time: each session keeps at most its last ``per_session`` events and
    ``per_session_bytes`` bytes of them; all sessions together keep at most
    ``total_bytes`` (past it, the least recently active session loses its oldest events
    first); an event older than ``max_age_seconds`` is dropped. An event dropped can no
    longer be replayed from (the client's ``GET`` then starts afresh)."""

    def __init__(
        self,
        per_session: int = 1024,
        *,
        per_session_bytes: int = 4 * 1024 * 1024,
        total_bytes: int = 64 * 1024 * 1024,
        max_age_seconds: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if min(per_session, per_session_bytes, total_bytes) < 1 or max_age_seconds <= 0:
            raise ValueError(
                "per_session, per_session_bytes, total_bytes and max_age_seconds must be positive"
            )
        self.per_session = per_session
        self.per_session_bytes = per_session_bytes
        self.total_bytes = total_bytes
        self.max_age_seconds = max_age_seconds
        self._clock = clock
        #: Each session's events (with the time each was kept), oldest first; the
        #: sessions in the order they were last appended to.
        self._events: dict[str, collections.deque[tuple[float, StoredEvent]]] = {}
        self._bytes: dict[str, int] = {}
        self._counters: dict[str, int] = {}
        #: The bytes of every event kept.
        self.held_bytes = 0

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        number = self._counters.get(session_id, 0) + 1
        self._counters[session_id] = number
        event = StoredEvent(f"{stream_id}.{number}", stream_id, data)
        now = self._clock()
        events = self._events.pop(session_id, None)
        if events is None:
            events = collections.deque()
            self._bytes[session_id] = 0
        self._events[session_id] = events  # now the most recently active session
        events.append((now, event))
        self._bytes[session_id] += len(data)
        self.held_bytes += len(data)
        self._expire(session_id, now)
        while len(events) > self.per_session or (
            self._bytes.get(session_id, 0) > self.per_session_bytes
        ):
            self._drop_oldest(session_id)
        while self.held_bytes > self.total_bytes:
            self._drop_oldest(next(iter(self._events)))
        return event.event_id

    async def replay(self, session_id: str, last_event_id: str) -> list[StoredEvent] | None:
        if session_id in self._events:
            self._expire(session_id, self._clock())
        events = self._events.get(session_id)
        if not events:
            return None
        for index, (_, event) in enumerate(events):
            if event.event_id == last_event_id:
                stream_id = event.stream_id
                return [e for _, e in list(events)[index + 1 :] if e.stream_id == stream_id]
        return None

    async def forget(self, session_id: str) -> None:
        self._events.pop(session_id, None)
        self.held_bytes -= self._bytes.pop(session_id, 0)
        self._counters.pop(session_id, None)

    def _expire(self, session_id: str, now: float) -> None:
        """Drop the events of ``session_id`` older than ``max_age_seconds``."""
        events = self._events[session_id]
        while events and now - events[0][0] > self.max_age_seconds:
            self._drop_oldest(session_id)

    def _drop_oldest(self, session_id: str) -> None:
        """Drop the oldest event of ``session_id`` (its id counter stays: ids are never
        reused)."""
        events = self._events[session_id]
        _, event = events.popleft()
        self._bytes[session_id] -= len(event.data)
        self.held_bytes -= len(event.data)
        if not events:
            del self._events[session_id]
            del self._bytes[session_id]
