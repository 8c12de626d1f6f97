"""Where the SSE events of a session are kept for replay: :class:`EventStore`.

Resumability (Streamable HTTP, 2025-03-26 to 2025-11-25): every event a server sends on
an SSE stream carries an id, unique within the session, that names its stream. A client
whose stream broke reconnects with ``GET`` and ``Last-Event-ID``; the server replays
the events of that stream (and of no other) after that id, then goes on live.

An :class:`EventStore` keeps the events; :class:`MemoryEventStore` (the default) keeps
them in this process, a bounded number per session. Several workers that do not route a
session's requests to one worker need a store they all share (a database, say): one
written to this protocol.
"""

from __future__ import annotations

import collections
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
    """An :class:`EventStore` in this process's memory: the last ``per_session``
    events of each session (an older event can no longer be replayed from)."""

    def __init__(self, per_session: int = 1024) -> None:
        if per_session < 1:
            raise ValueError("per_session must be positive")
        self.per_session = per_session
        self._events: dict[str, collections.deque[StoredEvent]] = {}
        self._counters: dict[str, int] = {}

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        number = self._counters.get(session_id, 0) + 1
        self._counters[session_id] = number
        event = StoredEvent(f"{stream_id}.{number}", stream_id, data)
        events = self._events.get(session_id)
        if events is None:
            events = self._events[session_id] = collections.deque(maxlen=self.per_session)
        events.append(event)
        return event.event_id

    async def replay(self, session_id: str, last_event_id: str) -> list[StoredEvent] | None:
        events = self._events.get(session_id)
        if not events:
            return None
        for index, event in enumerate(events):
            if event.event_id == last_event_id:
                stream_id = event.stream_id
                return [e for e in list(events)[index + 1 :] if e.stream_id == stream_id]
        return None

    async def forget(self, session_id: str) -> None:
        self._events.pop(session_id, None)
        self._counters.pop(session_id, None)
