"""Tasks kept in Redis (``pip install "mcpspec[redis]"``): a
:class:`~..task_store.TaskStore` that the workers of a cluster share, so that a task
outlives the worker that started it and any worker answers ``tasks/get`` for it.

What Redis holds (``prefix`` first):

* ``task:<id>``: the task's record as JSON, expiring at the task's ``ttl``;
* ``tasks``: the ids of all tasks by when they expire (a sorted set), and
  ``tasks:meta`` (a hash: each task's size and owner) and ``tasks:bytes`` (their
  total): what the bounds count; expired tasks leave them before a new one is counted;
* ``tasks:owner:<owner>``: the ids of one owner's tasks by creation (a sorted set);
* ``task:<id>:answers``: the answers ``tasks/update`` brought to the questions of a
  task waiting on its client (a hash by question key, the first answer kept), expiring
  with the task.

A record only moves forward: the update is one Lua script that reads the stored
status and refuses to change a task that ended. Every call is bounded by ``timeout``
seconds (:class:`~.session_store.StoreUnavailable` past it). :meth:`RedisTaskStore.wait`
polls the record and the count of its answers (every ``poll_seconds``): no connection
waits on pub/sub for it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
import msgspec

from ..task_store import Answers, TaskRecord, TaskStoreFull
from .redis_calls import bounded_call, redis_module

__all__ = ["RedisTaskStore", "redis_task_store"]

logger = logging.getLogger("mcpspec.http")

#: Drop the expired tasks from the counts (ARGV[1]: now, in ms; ARGV[2]: the prefix).
_PURGE = """
local function purge(now, prefix)
  local gone = redis.call('ZRANGEBYSCORE', prefix .. 'tasks', '-inf', now)
  for _, id in ipairs(gone) do
    local meta = redis.call('HGET', prefix .. 'tasks:meta', id)
    if meta then
      local space = string.find(meta, ' ', 1, true)
      redis.call('DECRBY', prefix .. 'tasks:bytes', tonumber(string.sub(meta, 1, space - 1)))
      redis.call('ZREM', prefix .. 'tasks:owner:' .. string.sub(meta, space + 1), id)
      redis.call('HDEL', prefix .. 'tasks:meta', id)
    end
    redis.call('ZREM', prefix .. 'tasks', id)
    redis.call('DEL', prefix .. 'task:' .. id, prefix .. 'task:' .. id .. ':answers')
  end
end
"""

#: Keep a new task if it fits the bounds. KEYS: the record, the owner's index. ARGV:
#: now (ms), prefix, id, owner, record, size, expiry (ms or '+inf'), time to live (ms,
#: '' for none), created (ms), max tasks, max per owner, max bytes.
#: Returns 'ok', 'exists' or 'full'.
_CREATE = (
    _PURGE
    + """
local prefix = ARGV[2]
purge(tonumber(ARGV[1]), prefix)
if redis.call('EXISTS', KEYS[1]) == 1 then return 'exists' end
local bytes = tonumber(redis.call('GET', prefix .. 'tasks:bytes') or '0')
if redis.call('ZCARD', prefix .. 'tasks') >= tonumber(ARGV[10])
  or redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[11])
  or bytes + tonumber(ARGV[6]) > tonumber(ARGV[12]) then
  return 'full'
end
if ARGV[8] == '' then
  redis.call('SET', KEYS[1], ARGV[5])
else
  redis.call('SET', KEYS[1], ARGV[5], 'PX', ARGV[8])
end
redis.call('ZADD', prefix .. 'tasks', ARGV[7], ARGV[3])
redis.call('HSET', prefix .. 'tasks:meta', ARGV[3], ARGV[6] .. ' ' .. ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[9], ARGV[3])
redis.call('INCRBY', prefix .. 'tasks:bytes', ARGV[6])
return 'ok'
"""
)

#: Replace a task's record unless it ended or the bytes bound is passed. KEYS: the
#: record. ARGV: prefix, id, record, size, max bytes. Returns 1 when replaced, else 0.
_UPDATE = """
local prefix = ARGV[1]
local stored = redis.call('GET', KEYS[1])
if not stored then return 0 end
local status = cjson.decode(stored)['status']
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
local meta = redis.call('HGET', prefix .. 'tasks:meta', ARGV[2])
if not meta then return 0 end
local space = string.find(meta, ' ', 1, true)
local delta = tonumber(ARGV[4]) - tonumber(string.sub(meta, 1, space - 1))
local bytes = tonumber(redis.call('GET', prefix .. 'tasks:bytes') or '0')
if delta > 0 and bytes + delta > tonumber(ARGV[5]) then return 0 end
redis.call('SET', KEYS[1], ARGV[3], 'KEEPTTL')
redis.call('HSET', prefix .. 'tasks:meta', ARGV[2], ARGV[4] .. ' ' .. string.sub(meta, space + 1))
redis.call('INCRBY', prefix .. 'tasks:bytes', delta)
return 1
"""

#: Keep answers of a task that exists, each key's first one. KEYS: the record, the
#: answers. ARGV: key, answer, key, answer, ... Returns 1 when kept, 0: no such task.
_ANSWER = """
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return 0 end
for i = 1, #ARGV, 2 do redis.call('HSETNX', KEYS[2], ARGV[i], ARGV[i + 1]) end
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
"""

#: What :meth:`RedisTaskStore.wait` compares. KEYS: the record, the answers.
_STATE = """
return {redis.call('GET', KEYS[1]) or '', redis.call('HLEN', KEYS[2])}
"""

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(TaskRecord).decode


class RedisTaskStore:
    """A :class:`~..task_store.TaskStore` in Redis (see the module), bounded like
    :class:`~..task_store.MemoryTaskStore`: at most ``max_tasks`` tasks and
    ``max_bytes`` bytes of them in all, ``max_per_owner`` tasks of one owner. Its
    scripts name keys they are not given: one Redis (not Redis Cluster) holds them."""

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "mcpspec:",
        max_tasks: int = 10_000,
        max_per_owner: int = 1_000,
        max_bytes: int = 256 * 1024 * 1024,
        timeout: float = 2.0,
        poll_seconds: float = 0.05,
    ) -> None:
        if min(max_tasks, max_per_owner, max_bytes) < 1 or timeout <= 0 or poll_seconds <= 0:
            raise ValueError("the bounds, timeout and poll_seconds of a task store are positive")
        self.client = client
        self.prefix = prefix
        self.max_tasks = max_tasks
        self.max_per_owner = max_per_owner
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.poll_seconds = poll_seconds
        self._create = client.register_script(_CREATE)
        self._update = client.register_script(_UPDATE)
        self._answer = client.register_script(_ANSWER)
        self._state = client.register_script(_STATE)

    def key(self, task_id: str) -> str:
        """The key of a task's record."""
        return f"{self.prefix}task:{task_id}"

    def answers_key(self, task_id: str) -> str:
        """The key of the answers kept for a task's questions."""
        return f"{self.prefix}task:{task_id}:answers"

    def owner_key(self, owner: str) -> str:
        """The key of an owner's tasks (by creation)."""
        return f"{self.prefix}tasks:owner:{owner}"

    async def create(self, record: TaskRecord) -> None:
        now = time.time()
        expires = record.expires_at
        ttl = "" if expires is None else str(max(1, int((expires - now) * 1000)))
        keys = [self.key(record.task_id), self.owner_key(record.owner)]
        args = [
            int(now * 1000),
            self.prefix,
            record.task_id,
            record.owner,
            _encode(record),
            record.size,
            "+inf" if expires is None else int(expires * 1000),
            ttl,
            int(record.created * 1000),
            self.max_tasks,
            self.max_per_owner,
            self.max_bytes,
        ]
        answer = await bounded_call(self.timeout, lambda: self._create(keys=keys, args=args))
        answer = answer.decode() if isinstance(answer, bytes) else answer
        if answer == "exists":
            raise ValueError(f"task {record.task_id!r} exists")
        if answer == "full":
            raise TaskStoreFull(
                "the task store holds as many tasks as it may (in all, of this client, "
                "or in bytes): no more may be created until some expire"
            )

    async def get(self, task_id: str) -> TaskRecord | None:
        data = await bounded_call(self.timeout, lambda: self.client.get(self.key(task_id)))
        return self._record(task_id, data, time.time())

    def _record(self, task_id: str, data: bytes | None, now: float) -> TaskRecord | None:
        if data is None:
            return None
        try:
            record = _decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            logger.warning("task %s: its record in Redis is not one of ours", task_id[:8])
            return None
        return None if record.expired(now) else record

    async def update(self, record: TaskRecord) -> bool:
        keys = [self.key(record.task_id)]
        args = [self.prefix, record.task_id, _encode(record), record.size, self.max_bytes]
        done = await bounded_call(self.timeout, lambda: self._update(keys=keys, args=args))
        return bool(done)

    async def list(self, owner: str) -> list[TaskRecord]:
        ids = await bounded_call(
            self.timeout, lambda: self.client.zrange(self.owner_key(owner), 0, -1)
        )
        if not ids:
            return []
        task_ids = [_text(i) for i in ids]
        keys = [self.key(task_id) for task_id in task_ids]
        values = await bounded_call(self.timeout, lambda: self.client.mget(keys))
        now = time.time()
        records = (self._record(t, v, now) for t, v in zip(task_ids, values, strict=True))
        return [record for record in records if record is not None]

    async def wait(self, task_id: str, timeout: float) -> None:
        keys = [self.key(task_id), self.answers_key(task_id)]
        before = await bounded_call(self.timeout, lambda: self._state(keys=keys))
        with anyio.move_on_after(timeout):
            while True:
                await anyio.sleep(self.poll_seconds)
                now = await bounded_call(self.timeout, lambda: self._state(keys=keys))
                if now != before:
                    return

    async def answer(self, task_id: str, answers: Answers) -> None:
        if not answers:
            return
        keys = [self.key(task_id), self.answers_key(task_id)]
        args = [part for pair in answers.items() for part in pair]
        await bounded_call(self.timeout, lambda: self._answer(keys=keys, args=args))

    async def answers(self, task_id: str) -> Answers:
        kept = await bounded_call(
            self.timeout, lambda: self.client.hgetall(self.answers_key(task_id))
        )
        return {_text(key): _data(answer) for key, answer in kept.items()}

    async def forget_answers(self, task_id: str) -> None:
        await bounded_call(self.timeout, lambda: self.client.delete(self.answers_key(task_id)))

    async def aclose(self) -> None:
        """Close the connections to Redis."""
        await self.client.aclose()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _data(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def redis_task_store(
    url: str = "redis://127.0.0.1:6379/0", *, timeout: float = 2.0, **bounds: Any
) -> RedisTaskStore:
    """A :class:`RedisTaskStore` on the Redis at ``url`` (``bounds``: ``prefix``,
    ``max_tasks``, ``max_per_owner``, ``max_bytes``, ``poll_seconds``); every call
    bounded by ``timeout`` seconds. Give it as ``TaskSettings(store=...)``."""
    client = redis_module().Redis.from_url(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, health_check_interval=30
    )
    return RedisTaskStore(client, timeout=timeout, **bounds)
