"""The SSE events of shared sessions in Redis (:class:`RedisEventStore`): bounded in
count, bytes and age per session, replayed by stream, unknown or malformed ids refused,
gone once the session ends; and the messages the bus holds for a GET stream not open.
Against a real ``redis-server`` (``nox -s cluster``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio

from mcpspec.runtime.connection.http.redis_events import RedisEventStore
from mcpspec.runtime.connection.http.redis_store import RedisBus
from tests.cluster_kit import redis_server

pytestmark = [pytest.mark.anyio, pytest.mark.cluster]
ANYIO_BACKENDS = ("asyncio",)


#: uvicorn and redis-py run on asyncio.
ANYIO_BACKENDS = ("asyncio",)


@pytest.fixture
async def client() -> AsyncIterator[Any]:
    async with redis_server() as url:
        connection = redis.asyncio.Redis.from_url(url)
        yield connection
        await connection.aclose()


async def test_replay_gives_the_later_events_of_the_same_stream_only(client: Any) -> None:
    store = RedisEventStore(client)
    first = await store.append("s", "w-1", b"one")
    await store.append("s", "w-2", b"other stream")
    second = await store.append("s", "w-1", b"two")
    replayed = await store.replay("s", first)
    assert replayed is not None
    assert [(e.event_id, e.data) for e in replayed] == [(second, b"two")]
    assert await store.replay("s", second) == []
    assert await store.replay("other", first) is None


async def test_unknown_and_malformed_ids_are_not_known(client: Any) -> None:
    store = RedisEventStore(client)
    kept = await store.append("s", "w-1", b"one")
    for wrong in ("", "w-1", "w-1.", "w-1.abc", "w-1.1-1", "w-2." + kept.split(".")[1], "\x00.1-0"):
        assert await store.replay("s", wrong) is None, wrong


async def test_a_session_keeps_at_most_per_session_events(client: Any) -> None:
    store = RedisEventStore(client, per_session=3)
    ids = [await store.append("s", "w-1", b"x") for _ in range(5)]
    assert await client.xlen("mcpspec:events:s") == 3
    assert await store.replay("s", ids[1]) is None  # dropped
    replayed = await store.replay("s", ids[2])
    assert replayed is not None and [e.event_id for e in replayed] == ids[3:]


async def test_a_session_keeps_at_most_per_session_bytes(client: Any) -> None:
    store = RedisEventStore(client, per_session_bytes=1000)
    ids = [await store.append("s", "w-1", b"x" * 400) for _ in range(3)]
    assert int(await client.get("mcpspec:events:s:bytes")) == 800
    assert await store.replay("s", ids[0]) is None
    # One event over the bound is not kept at all.
    await store.append("s", "w-1", b"y" * 5000)
    assert await client.xlen("mcpspec:events:s") == 0
    assert int(await client.get("mcpspec:events:s:bytes")) == 0


async def test_events_expire_with_their_age_bound(client: Any) -> None:
    store = RedisEventStore(client, max_age_seconds=30)
    await store.append("s", "w-1", b"x")
    for key in ("mcpspec:events:s", "mcpspec:events:s:bytes"):
        assert 0 < await client.pttl(key) <= 30_000


async def test_forget_drops_every_key_of_the_session(client: Any) -> None:
    store = RedisEventStore(client)
    await store.append("s", "w-1", b"x")
    await store.forget("s")
    assert await client.keys("mcpspec:*") == []


async def test_the_bus_holds_messages_bounded_in_count_bytes_and_age(client: Any) -> None:
    bus = RedisBus(client, held_messages=3, held_bytes=100, held_seconds=30)
    for number in range(5):
        await bus.hold("c", b"%d" % number)
    assert 0 < await client.pttl("c:held") <= 30_000
    assert await bus.take_held("c") == [b"2", b"3", b"4"]
    assert await bus.take_held("c") == []
    await bus.hold("c", b"x" * 60)
    await bus.hold("c", b"y" * 60)  # over the byte bound: the older goes
    assert await bus.take_held("c") == [b"y" * 60]
    assert await client.keys("*") == []
