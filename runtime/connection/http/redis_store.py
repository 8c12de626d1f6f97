"""The sessions of several workers kept in Redis (``pip install "mcpspec[redis]"``).

:func:`redis_cluster` is the :class:`~.shared_sessions.Cluster` of workers sharing one
Redis: a :class:`RedisSessionStore` and a :class:`RedisBus` over redis-py's asyncio
client. What Redis holds:

* ``<prefix>session:<id>``: one string per live session, its record as JSON (at most
  :data:`~.session_store.MAX_RECORD_BYTES`), expiring ``ttl_seconds`` after the
  session's last request (every request sets the expiry again);
* ``<prefix>sessions``: the live sessions by last use (a sorted set): past
  ``max_sessions`` the least recently used one ends, on every worker;
* ``<prefix>events:<id>`` (and ``...:bytes``): the session's SSE events, for
  resumption on any worker (:mod:`.redis_events`: bounded in count, bytes and age);
* ``<prefix>get:<id>:held`` (and ``...:bytes``): messages for the session's ``GET``
  stream sent while no worker held one, for the next ``GET`` (at most 1,024 and 4 MiB,
  expiring 10 minutes after the last);
* nothing else: the messages between workers go over pub/sub (``<prefix>cluster`` and
  ``<prefix>get:<id>``), which keeps nothing.

Every call is bounded by ``timeout`` seconds: Redis down or slow is
:class:`~.session_store.StoreUnavailable` (the request is answered 503, or with its
JSON-RPC error), never a hang; the bus reconnects by itself when Redis returns.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from typing import Any

import anyio
import anyio.abc
import msgspec

from .redis_calls import bounded_call, redis_module, unbounded
from .redis_events import RedisEventStore
from .session_bus import Receiver
from .session_store import SessionRecord, StoreUnavailable, encode_bounded
from .shared_sessions import Cluster

__all__ = ["RedisBus", "RedisSessionStore", "redis_cluster"]

logger = logging.getLogger("mcpspec.http")


#: Keep a new session's record, note it in the index (by last use, in microseconds:
#: exact as a double until the year 2255), and end the least
#: recently used sessions past the bound (those the index names whose records expired
#: go first). Returns the ids of the sessions ended.
_CREATE = """
local now = redis.call('TIME')
local us = tonumber(now[1]) * 1000000 + tonumber(now[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', us - tonumber(ARGV[2]) * 1000)
redis.call('ZADD', KEYS[2], us, ARGV[3])
local ended = {}
while redis.call('ZCARD', KEYS[2]) > tonumber(ARGV[4]) do
  local oldest = redis.call('ZPOPMIN', KEYS[2])
  redis.call('DEL', ARGV[5] .. oldest[1])
  table.insert(ended, oldest[1])
end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return ended
"""

#: Read a session's record; when there is one, its time to live starts over and the
#: index notes its use.
_LOAD = """
local data = redis.call('GET', KEYS[1])
if data then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  local now = redis.call('TIME')
  redis.call('ZADD', KEYS[2], 'XX', tonumber(now[1]) * 1000000 + tonumber(now[2]), ARGV[2])
end
return data
"""


class RedisSessionStore:
    """A :class:`~.session_store.SessionStore` in Redis (see the module): at most
    ``max_sessions`` records (the least recently used session ends for a new one),
    each living ``ttl_seconds`` after its last use. Its scripts name keys they are
    not given: one Redis (not Redis Cluster) holds a cluster's sessions."""

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "mcpspec:",
        ttl_seconds: float = 3600.0,
        max_sessions: int = 10_000,
        timeout: float = 2.0,
    ) -> None:
        if ttl_seconds <= 0 or timeout <= 0 or max_sessions < 1:
            raise ValueError("ttl_seconds, max_sessions and timeout must be positive")
        self.client = client
        self.prefix = prefix
        self.ttl_seconds = ttl_seconds
        self.max_sessions = max_sessions
        self.timeout = timeout
        self._ttl_ms = max(1, int(ttl_seconds * 1000))
        #: The sorted set of live sessions, by last use.
        self.index = f"{prefix}sessions"
        self._create = client.register_script(_CREATE)
        self._load = client.register_script(_LOAD)

    def key(self, session_id: str) -> str:
        """The key of a session's record."""
        return f"{self.prefix}session:{session_id}"

    async def create(self, session_id: str, record: SessionRecord) -> list[str]:
        data = encode_bounded(record)
        keys = [self.key(session_id), self.index]
        args = [data, self._ttl_ms, session_id, self.max_sessions, self.key("")]
        ended = await bounded_call(self.timeout, lambda: self._create(keys=keys, args=args))
        return [_text(session) for session in ended]

    async def load(self, session_id: str) -> SessionRecord | None:
        keys = [self.key(session_id), self.index]
        args = [self._ttl_ms, session_id]
        data = await bounded_call(self.timeout, lambda: self._load(keys=keys, args=args))
        if data is None:
            return None
        try:
            return SessionRecord.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            logger.warning("session %s: its record in Redis is not one of ours", session_id[:8])
            return None

    async def save(self, session_id: str, record: SessionRecord) -> None:
        data = encode_bounded(record)
        # XX: a session ended meanwhile stays ended.
        await bounded_call(
            self.timeout,
            lambda: self.client.set(self.key(session_id), data, px=self._ttl_ms, xx=True),
        )

    async def delete(self, session_id: str) -> bool:
        async def both() -> Any:
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.delete(self.key(session_id))
                pipe.zrem(self.index, session_id)
                return await pipe.execute()

        removed, _ = await bounded_call(self.timeout, both)
        return bool(removed)

    async def aclose(self) -> None:
        await self.client.aclose()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


#: Hold one message for a channel: the oldest go past the count or byte bound; both
#: keys expire with the age bound.
_HOLD = """
if ARGV[5] == '1' then
  for _, held in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
    if held == ARGV[1] then return -1 end
  end
end
redis.call('RPUSH', KEYS[1], ARGV[1])
local bytes = redis.call('INCRBY', KEYS[2], string.len(ARGV[1]))
while redis.call('LLEN', KEYS[1]) > tonumber(ARGV[2]) or bytes > tonumber(ARGV[3]) do
  local gone = redis.call('LPOP', KEYS[1])
  if not gone then break end
  bytes = redis.call('DECRBY', KEYS[2], string.len(gone))
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return bytes
"""

#: Take every message held for a channel, at once.
_TAKE = """
local held = redis.call('LRANGE', KEYS[1], 0, -1)
redis.call('DEL', KEYS[1], KEYS[2])
return held
"""


class RedisBus:
    """A :class:`~.session_bus.MessageBus` over Redis pub/sub: one connection per
    worker reads every channel it subscribed to (:meth:`run`); ``publish`` takes a
    connection of ``client``'s pool. When Redis goes away, :meth:`run` reconnects and
    subscribes again (what was published meanwhile is lost)."""

    def __init__(
        self,
        client: Any,
        *,
        timeout: float = 2.0,
        retry_seconds: float = 0.5,
        held_messages: int = 1024,
        held_bytes: int = 4 * 1024 * 1024,
        held_seconds: float = 600.0,
    ) -> None:
        self.client = client
        self.timeout = timeout
        self.retry_seconds = retry_seconds
        self.held_messages = held_messages
        self.held_bytes = held_bytes
        self.held_seconds = held_seconds
        self._receivers: dict[str, list[Receiver]] = {}
        self._pubsub: Any = None
        self._hold = client.register_script(_HOLD)
        self._take = client.register_script(_TAKE)

    @staticmethod
    def held_keys(channel: str) -> list[str]:
        """The keys of the messages held for ``channel`` and of their byte count."""
        return [f"{channel}:held", f"{channel}:held:bytes"]

    async def hold(self, channel: str, data: bytes, *, unique: bool = False) -> None:
        expiry = max(1, int(self.held_seconds * 1000))
        args = [data, self.held_messages, self.held_bytes, expiry, "1" if unique else "0"]
        keys = self.held_keys(channel)
        await bounded_call(self.timeout, lambda: self._hold(keys=keys, args=args))

    async def take_held(self, channel: str) -> list[bytes]:
        keys = self.held_keys(channel)
        held = await bounded_call(self.timeout, lambda: self._take(keys=keys))
        return [bytes(data) for data in held]

    async def receivers(self, channel: str) -> int:
        counts = await bounded_call(self.timeout, lambda: self.client.pubsub_numsub(channel))
        return sum(int(count) for _, count in counts)

    async def publish(self, channel: str, data: bytes) -> int:
        taken = await bounded_call(self.timeout, lambda: self.client.publish(channel, data))
        return int(taken)

    async def subscribe(self, channel: str, receiver: Receiver) -> None:
        receivers = self._receivers.setdefault(channel, [])
        receivers.append(receiver)
        if len(receivers) == 1 and self._pubsub is not None:
            await self._pubsub_call("subscribe", channel)

    async def unsubscribe(self, channel: str, receiver: Receiver) -> None:
        receivers = self._receivers.get(channel)
        if receivers is None or receiver not in receivers:
            return
        receivers.remove(receiver)
        if not receivers:
            del self._receivers[channel]
            if self._pubsub is not None:
                await self._pubsub_call("unsubscribe", channel)

    async def _pubsub_call(self, command: str, channel: str) -> None:
        """(Un)subscribe the reading connection, from another task than the reader's.
        When the connection is being lost meanwhile, redis-py may fail in other ways
        than its errors: all are the bus unavailable (the reader subscribes again to
        every channel wanted when it reconnects)."""
        pubsub = self._pubsub
        try:
            await bounded_call(self.timeout, lambda: getattr(pubsub, command)(channel))
        except StoreUnavailable:
            raise
        except Exception as exc:
            raise StoreUnavailable(f"the Redis bus is reconnecting: {exc!r}") from exc

    async def run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        started = False
        while True:
            pubsub = self.client.pubsub(ignore_subscribe_messages=True)
            try:
                self._pubsub = pubsub
                if self._receivers:
                    await bounded_call(
                        self.timeout, functools.partial(pubsub.subscribe, *self._receivers)
                    )
                if not started:
                    started = True
                    task_status.started()
                await unbounded(self._read(pubsub))
            except StoreUnavailable as exc:
                logger.warning("the Redis bus lost its connection (%s); trying again", exc)
            finally:
                self._pubsub = None
                with (
                    anyio.CancelScope(shield=True),
                    anyio.move_on_after(self.timeout),
                    contextlib.suppress(StoreUnavailable),
                ):
                    await unbounded(pubsub.aclose())
            if not started:
                started = True
                task_status.started()
            await anyio.sleep(self.retry_seconds)

    async def _read(self, pubsub: Any) -> None:
        while True:
            if not pubsub.subscribed:
                await anyio.sleep(0.02)
                continue
            message = await pubsub.get_message(timeout=1.0)
            if message is None or message.get("type") != "message":
                continue
            channel = message["channel"]
            if isinstance(channel, bytes):
                channel = channel.decode()
            for receiver in list(self._receivers.get(channel, ())):
                try:
                    await receiver(message["data"])
                except Exception:
                    logger.exception("a receiver of %s failed", channel)


def redis_cluster(
    url: str = "redis://127.0.0.1:6379/0",
    *,
    prefix: str = "mcpspec:",
    ttl_seconds: float = 3600.0,
    max_sessions: int = 10_000,
    timeout: float = 2.0,
    events: dict[str, Any] | None = None,
) -> Cluster:
    """The :class:`~.shared_sessions.Cluster` of the workers sharing the Redis at
    ``url``: sessions live ``ttl_seconds`` after their last request, at most
    ``max_sessions`` of them (the least recently used ends for a new one); their SSE events
    are kept in Redis (:class:`~.redis_events.RedisEventStore`, given the options
    ``events``: ``per_session``, ``per_session_bytes``, ``max_age_seconds``); every
    Redis call is bounded by ``timeout`` seconds."""
    module = redis_module()
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as LostConnection

    # A connection Redis dropped (it restarted) is tried once more on a new one; a
    # timeout is not (the call's bound would be spent twice).
    client = module.Redis.from_url(
        url,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        health_check_interval=30,
        retry=Retry(NoBackoff(), 1, (LostConnection,)),
        retry_on_error=[LostConnection],
    )
    # The bus's reading connection waits for messages for as long as there are none.
    reader = module.Redis.from_url(url, socket_connect_timeout=timeout, health_check_interval=30)
    return Cluster(
        RedisSessionStore(
            client,
            prefix=prefix,
            ttl_seconds=ttl_seconds,
            max_sessions=max_sessions,
            timeout=timeout,
        ),
        RedisBus(reader, timeout=timeout),
        prefix,
        RedisEventStore(client, prefix=prefix, timeout=timeout, **(events or {})),
    )
