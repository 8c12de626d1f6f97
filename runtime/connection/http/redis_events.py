"""The SSE events of shared sessions kept in Redis, for resumption on any worker.

:class:`RedisEventStore` is an :class:`~.event_store.EventStore` every worker of a
cluster reads: a client whose stream broke resumes it with ``Last-Event-ID`` on any
worker, also after the worker that sent the stream is gone. Each session's events are
one Redis stream, ``<prefix>events:<session id>`` (with its byte count beside it,
``<prefix>events:<session id>:bytes``), written by one script that keeps it bounded:
at most ``per_session`` events and ``per_session_bytes`` bytes of them, none older than
``max_age_seconds`` (the oldest go first), and both keys expire ``max_age_seconds``
after the session's last event. An event id is ``<stream id>.<entry id>``.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Final

from .event_store import StoredEvent
from .redis_calls import bounded_call

__all__ = ["RedisEventStore"]

logger = logging.getLogger("mcpspec.http")

#: What a Redis stream entry's id looks like.
_ENTRY: Final = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")

#: Add one event, then drop the oldest while the session is over a bound (count,
#: bytes, age); expire both keys with the age bound. Returns the entry's id.
_APPEND: Final = """
local id = redis.call('XADD', KEYS[1], '*', 's', ARGV[1], 'd', ARGV[2])
local bytes = redis.call('INCRBY', KEYS[2], string.len(ARGV[2]))
local count = redis.call('XLEN', KEYS[1])
local now = redis.call('TIME')
local oldest_kept = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
    - tonumber(ARGV[5])
while count > 0 do
  local head = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
  local ms = tonumber(string.match(head[1], '^(%d+)'))
  if count <= tonumber(ARGV[3]) and bytes <= tonumber(ARGV[4]) and ms >= oldest_kept then
    break
  end
  redis.call('XDEL', KEYS[1], head[1])
  bytes = redis.call('DECRBY', KEYS[2], string.len(head[2][4]))
  count = count - 1
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return id
"""


class RedisEventStore:
    """An :class:`~.event_store.EventStore` in Redis (see the module). ``forget`` is
    for a session ended everywhere: a worker's copy of a session ending leaves the
    events to the others."""

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "mcpspec:",
        per_session: int = 1024,
        per_session_bytes: int = 4 * 1024 * 1024,
        max_age_seconds: float = 600.0,
        timeout: float = 2.0,
    ) -> None:
        if min(per_session, per_session_bytes) < 1 or max_age_seconds <= 0 or timeout <= 0:
            raise ValueError(
                "per_session, per_session_bytes, max_age_seconds and timeout must be positive"
            )
        self.client = client
        self.prefix = prefix
        self.per_session = per_session
        self.per_session_bytes = per_session_bytes
        self.max_age_seconds = max_age_seconds
        self.timeout = timeout
        self._append = client.register_script(_APPEND)

    def keys(self, session_id: str) -> tuple[str, str]:
        """The keys of a session's events and of their byte count."""
        key = f"{self.prefix}events:{session_id}"
        return key, f"{key}:bytes"

    async def append(self, session_id: str, stream_id: str, data: bytes) -> str:
        age_ms = max(1, int(self.max_age_seconds * 1000))
        args = [stream_id, data, self.per_session, self.per_session_bytes, age_ms]
        entry = await bounded_call(
            self.timeout, lambda: self._append(keys=list(self.keys(session_id)), args=args)
        )
        return f"{stream_id}.{_text(entry)}"

    async def replay(self, session_id: str, last_event_id: str) -> list[StoredEvent] | None:
        stream_id, _, entry = last_event_id.rpartition(".")
        if not stream_id or not entry:
            return None
        if _ENTRY.fullmatch(entry) is None:
            return None
        key = self.keys(session_id)[0]
        found = await bounded_call(self.timeout, lambda: self.client.xrange(key, entry, entry))
        if not found or _text(found[0][1].get(b"s", b"")) != stream_id:
            return None
        later = await bounded_call(
            self.timeout,
            lambda: self.client.xrange(key, f"({entry}", "+", count=self.per_session),
        )
        return [
            StoredEvent(f"{stream_id}.{_text(entry_id)}", stream_id, bytes(fields[b"d"]))
            for entry_id, fields in later
            if _text(fields.get(b"s", b"")) == stream_id
        ]

    async def forget(self, session_id: str) -> None:
        keys = self.keys(session_id)
        await bounded_call(self.timeout, lambda: self.client.delete(*keys))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
