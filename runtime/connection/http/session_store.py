"""Where the handshake-era sessions of several workers are kept: :class:`SessionStore`.

One worker alone keeps its sessions in its :class:`~.sessions.SessionTable` and needs no
store (the default: nothing here runs). Workers behind a load balancer without sticky
routing share one: the worker that answers ``initialize`` writes the session's
:class:`SessionRecord` (what the handshake settled and what the client set since), and
any worker a later request of the session lands on reads it and serves the request
with a copy of the session made from it (:mod:`.shared_sessions`). A record gone
(``DELETE``, idle past its time to live) is a session ended on every worker: its next
request is 404.

:class:`MemorySessionStore` keeps records in this process (for tests, and for several
apps in one process); :class:`~.redis_store.RedisSessionStore` keeps them in Redis.
Both bound what they keep: in bytes per record, in count (the least recently used
session ends for a new one, on every worker) and in time (a record lives
``ttl_seconds`` after its session was last used).
"""

from __future__ import annotations

import collections
import time
from typing import Any, Final, Protocol

import msgspec

__all__ = [
    "MAX_RECORD_BYTES",
    "MemorySessionStore",
    "SessionRecord",
    "SessionStore",
    "StoreUnavailable",
    "encode_bounded",
]

#: The most bytes a session's record takes (its client's capabilities and identity,
#: its subscriptions): a client declaring more is refused a shared session.
MAX_RECORD_BYTES: Final = 64 * 1024


class StoreUnavailable(Exception):
    """The shared store did not answer in time, or refused (Redis down or slow): the
    request is answered 503 (or with its JSON-RPC error), never left hanging."""


class SessionRecord(msgspec.Struct, frozen=True, kw_only=True):
    """What every worker needs to serve a handshake-era session.

    ``revision``: the revision negotiated. ``client``: the ``initialize`` params the
    client sent (its requested version, capabilities and identity; the server's side
    is the server's own, the same on every worker). ``log_level``: the rank set by
    ``logging/setLevel`` (``None``: never set). ``subscriptions``: the resources the
    client subscribed to. ``principal``: who the client is, once authenticated (any
    JSON value; ``None`` without authentication).
    """

    revision: str
    client: dict[str, Any]
    log_level: int | None = None
    subscriptions: tuple[str, ...] = ()
    principal: Any = None

    def encode(self) -> bytes:
        """The record as JSON (what a store keeps)."""
        return _ENCODER.encode(self)

    @classmethod
    def decode(cls, data: bytes | str) -> SessionRecord:
        """A record from its JSON; raises ``msgspec.DecodeError`` or
        ``msgspec.ValidationError`` for anything else."""
        return _DECODER.decode(data)


_ENCODER: Final = msgspec.json.Encoder()
_DECODER: Final = msgspec.json.Decoder(SessionRecord)


class SessionStore(Protocol):
    """Keeps :class:`SessionRecord` values by session id, shared by workers. Each
    method raises :class:`StoreUnavailable` when the store cannot answer in time."""

    #: How long a record lives after its session was last used (seconds).
    ttl_seconds: float

    async def create(self, session_id: str, record: SessionRecord) -> list[str]:
        """Keep the record of a new session; the ids of the sessions ended to make
        room for it (the store keeps a bounded number)."""
        ...

    async def load(self, session_id: str) -> SessionRecord | None:
        """The record of a live session (its time to live starts over: it is in use);
        ``None`` when there is none (never made, ended, or expired)."""
        ...

    async def save(self, session_id: str, record: SessionRecord) -> None:
        """Replace the record of a live session (what its client set changed); a
        session ended meanwhile stays ended."""
        ...

    async def delete(self, session_id: str) -> bool:
        """End a session everywhere; whether it was live."""
        ...

    async def aclose(self) -> None:
        """Let go of the store's connections."""
        ...


class MemorySessionStore:
    """A :class:`SessionStore` in this process: shared by the apps of this process
    only. At most ``max_sessions`` records (the least recently used goes first), each
    living ``ttl_seconds`` after its last use."""

    def __init__(self, *, ttl_seconds: float = 3600.0, max_sessions: int = 4096) -> None:
        if ttl_seconds <= 0 or max_sessions < 1:
            raise ValueError("ttl_seconds and max_sessions must be positive")
        self.ttl_seconds = ttl_seconds
        self.max_sessions = max_sessions
        self._records: collections.OrderedDict[str, tuple[bytes, float]] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    async def create(self, session_id: str, record: SessionRecord) -> list[str]:
        data = encode_bounded(record)
        ended = []
        while len(self._records) >= self.max_sessions:
            ended.append(self._records.popitem(last=False)[0])
        self._records[session_id] = (data, time.monotonic() + self.ttl_seconds)
        return ended

    async def load(self, session_id: str) -> SessionRecord | None:
        kept = self._records.get(session_id)
        if kept is None:
            return None
        now = time.monotonic()
        if kept[1] <= now:
            del self._records[session_id]
            return None
        self._records[session_id] = (kept[0], now + self.ttl_seconds)
        self._records.move_to_end(session_id)
        return SessionRecord.decode(kept[0])

    async def save(self, session_id: str, record: SessionRecord) -> None:
        kept = self._records.get(session_id)
        if kept is not None and kept[1] > time.monotonic():
            self._records[session_id] = (encode_bounded(record), kept[1])

    async def delete(self, session_id: str) -> bool:
        kept = self._records.pop(session_id, None)
        return kept is not None and kept[1] > time.monotonic()

    async def aclose(self) -> None:
        self._records.clear()


def encode_bounded(record: SessionRecord) -> bytes:
    """The record's JSON (what a store keeps); ``ValueError`` past :data:`MAX_RECORD_BYTES`."""
    data = record.encode()
    if len(data) > MAX_RECORD_BYTES:
        raise ValueError(
            f"a session record of {len(data)} bytes: over the limit of {MAX_RECORD_BYTES}"
        )
    return data
