"""The sessions of the handshake eras (2025-03-26 to 2025-11-25) over Streamable HTTP.

A session is one connection of the :class:`~mcpspec.runtime.connection.server.Server`
(its sans-IO session, its :class:`~mcpspec.runtime.connection.peer.Peer`) that lives
across POSTs, named by the ``Mcp-Session-Id`` minted on ``initialize``: 32 random bytes
from the operating system's CSPRNG, URL-safe base64, never reused. Its peer runs in a
task of the app; POST bodies are fed to it (:mod:`.routing` says where its messages go).

:class:`SessionTable` keeps them: at most ``max_sessions``, the least recently active
ended for a new one; one idle for ``idle_seconds`` is ended when next seen (or when a
new session needs room). No timer runs: the clock is read when a request comes. A
session is not idle while it is busy: a POST of it is open, its GET stream is, or a
request of it is being handled; its idle time counts from when its last POST ended.
"""

from __future__ import annotations

import collections
import logging
import secrets
import time
from typing import Any

import anyio

from ..peer import Peer
from .event_store import EventStore
from .routing import Channel, ChannelTerms, PostStream
from .sse import encode_event

__all__ = ["HandshakeSession", "SessionTable", "new_id"]

logger = logging.getLogger("mcpspec.http")


def new_id() -> str:
    """A session or stream id: 256 random bits, visible ASCII only."""
    return secrets.token_urlsafe(32)


class HandshakeSession:
    """One session: its id, connection, standalone stream and SSE streams alive."""

    def __init__(
        self,
        session_id: str,
        *,
        queue_limit: int,
        event_store: EventStore | None,
        owner: str | None = None,
    ) -> None:
        self.id = session_id
        #: The key of the principal that made the session (``None``: no principal).
        self.owner = owner
        self.last_active = time.monotonic()
        self.stream = PostStream(self.to_standalone)
        #: Set by the app once the connection is made.
        self.peer: Peer[Any] | None = None
        self.connection: Any = None
        self.event_store = event_store
        self.standalone_id = "0"
        self._streams = 0
        # Messages about no request, held for the GET stream (bounded: the oldest go).
        self._standalone: collections.deque[bytes] = collections.deque(maxlen=queue_limit)
        self._standalone_ready = anyio.Event()
        #: Whether a GET stream is attached.
        self.listening = False
        self.ended = anyio.Event()
        #: Set as the session starts to end: its GET stream ends rather than wait.
        self.closing = False
        #: The channels of POSTs still open (for a GET resuming one), by stream id.
        self.live: dict[str, Channel] = {}
        #: How its POSTs are answered (the endpoint's, kept once the revision is known).
        self.channel_terms: ChannelTerms | None = None

    @property
    def busy(self) -> bool:
        """Whether the session is in use (never idle then): a POST or its GET stream
        is open, or a request of it is being handled."""
        return (
            bool(self.live)
            or self.listening
            or (self.peer is not None and self.peer.handlers_running > 0)
        )

    def next_stream_id(self) -> str:
        """A new SSE stream's id in this session (``0`` is the standalone stream)."""
        self._streams += 1
        return str(self._streams)

    def is_standalone(self, stream_id: str) -> bool:
        """Whether ``stream_id`` names the session's standalone (``GET``) stream."""
        return stream_id == self.standalone_id

    def note_channel(self, channel: Channel) -> None:
        """Note the channel of one of the session's POSTs, opened, among its open
        streams (until the POST ends), naming its SSE stream."""
        # Unique within the session is enough: a stream's events go to its own client.
        channel.stream_id = self.next_stream_id()
        self.live[channel.stream_id] = channel

    @property
    def revision(self) -> str | None:
        """The negotiated revision (once ``initialize`` arrived)."""
        return None if self.peer is None else self.peer.session.revision

    async def to_standalone(self, data: bytes) -> None:
        """Queue a message about no request for the GET stream."""
        if len(self._standalone) == self._standalone.maxlen:
            logger.warning(
                "session %s: the standalone stream is full; a message is dropped", self.id[:8]
            )
        self._standalone.append(data)
        self._standalone_ready.set()

    async def next_standalone(self, timeout: float) -> bytes | None:
        """The next message for the GET stream; ``None`` after ``timeout`` seconds, or
        at once when the session is ending."""
        if not self._standalone and not self.closing:
            self._standalone_ready = anyio.Event()
            with anyio.move_on_after(timeout):
                await self._standalone_ready.wait()
        return self._standalone.popleft() if self._standalone else None

    async def stamp(self, stream_id: str, data: bytes) -> str:
        """The id of an SSE event of this session (kept for replay)."""
        assert self.event_store is not None
        return await self.event_store.append(self.id, stream_id, data)

    async def standalone_event(self, data: bytes) -> bytes:
        """One SSE event of the standalone stream (with its id when resumable)."""
        event_id = await self.stamp(self.standalone_id, data) if self.event_store else None
        return encode_event(data, event_id=event_id)

    def mark_closing(self) -> None:
        """The session is ending: its GET stream ends now, not after a keep-alive."""
        self.closing = True
        self._standalone_ready.set()

    async def end(self) -> None:
        """End the session: its connection closes (handlers get a short linger)."""
        self.mark_closing()
        if self.peer is not None:
            await self.peer.aclose("the HTTP session ended")
        else:
            await self.stream.aclose()
        await self.close_streams()

    async def close_streams(self) -> None:
        """End the responses of the POSTs still open (the session is over): a request
        still unanswered is answered with an error."""
        for channel in list(self.live.values()):
            await channel.close("Session ended")


class SessionTable:
    """The sessions of one app, in order of last activity.

    Each session belongs to the principal that made it (its ``owner``, ``None`` without
    authorization): ``max_sessions`` counts per owner, and a new session ends the least
    recently active one of its own owner only, never another's. ``max_total`` bounds
    them all: past it, a new session needs an idle one to end (:meth:`has_room`).
    """

    def __init__(
        self, max_sessions: int, idle_seconds: float, max_total: int | None = None
    ) -> None:
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        self.max_total = max_total if max_total is not None else max_sessions
        self._sessions: collections.OrderedDict[str, HandshakeSession] = collections.OrderedDict()
        #: How many sessions each owner has.
        self._owned: collections.Counter[str | None] = collections.Counter()
        #: Ids once minted, kept only as a count: they are never reused since
        #: they are random; this is for tests and metrics.
        self.minted = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: str, owner: str | None = None) -> HandshakeSession | None:
        """The live session of that id owned by ``owner`` (its activity now), else
        ``None``: another principal's session is as unknown as one never made."""
        session = self._sessions.get(session_id)
        if session is None or session.owner != owner:
            return None
        now = time.monotonic()
        if session.ended.is_set() or self._idle(session, now):
            return None
        session.last_active = now
        self._sessions.move_to_end(session_id)
        return session

    def owned(self, owner: str | None) -> int:
        """How many sessions ``owner`` has."""
        return self._owned[owner]

    def has_room(self, owner: str | None) -> bool:
        """Whether a new session of ``owner`` can be kept: below the total, or by
        ending one of its own, or an idle one."""
        if len(self._sessions) < self.max_total or self._owned[owner] >= self.max_sessions:
            return True
        oldest = next(iter(self._sessions.values()), None)
        return oldest is not None and self._idle(oldest, time.monotonic())

    def add(self, session: HandshakeSession) -> list[HandshakeSession]:
        """Keep ``session``; return the sessions to end to make room (idle ones, or the
        least recently active of its own owner)."""
        evicted: list[HandshakeSession] = []
        now = time.monotonic()
        while self._sessions:
            oldest = next(iter(self._sessions.values()))
            if not self._idle(oldest, now):
                break
            evicted.append(self._pop(oldest.id))
        owner = session.owner
        while self._owned[owner] >= self.max_sessions:
            own = next(s for s in self._sessions.values() if s.owner == owner)
            evicted.append(self._pop(own.id))
        self._sessions[session.id] = session
        self._owned[owner] += 1
        self.minted += 1
        return evicted

    def _pop(self, session_id: str) -> HandshakeSession:
        session = self._sessions.pop(session_id)
        self._owned[session.owner] -= 1
        if not self._owned[session.owner]:
            del self._owned[session.owner]
        return session

    def remove(
        self, session_id: str, only: HandshakeSession | None = None
    ) -> HandshakeSession | None:
        """Forget a session (it ended); with ``only``, only if the one kept under that
        id is ``only`` (a copy of a shared session ending leaves its successor)."""
        found = self._sessions.get(session_id)
        if found is None or (only is not None and found is not only):
            return None
        return self._pop(session_id)

    def expired(self, session_id: str) -> HandshakeSession | None:
        """The session of that id if it is kept but idle past the limit (to end)."""
        session = self._sessions.get(session_id)
        if session is not None and self._idle(session, time.monotonic()):
            return session
        return None

    def _idle(self, session: HandshakeSession, now: float) -> bool:
        """Whether ``session`` was idle past the limit (a busy one never is)."""
        return now - session.last_active > self.idle_seconds and not session.busy

    def all(self) -> list[HandshakeSession]:
        """Every session kept."""
        return list(self._sessions.values())
