"""The records of shared sessions in Redis (:class:`RedisSessionStore`): each expires
after its session's last use, at most ``max_sessions`` are kept (the least recently used
goes), a save never revives an ended session, a record too large or not ours is
refused. Against a real ``redis-server`` (``nox -s cluster``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio

from mcpspec.runtime.connection.http.redis_store import RedisSessionStore
from mcpspec.runtime.connection.http.session_store import MAX_RECORD_BYTES, SessionRecord
from tests.cluster_kit import redis_server

pytestmark = [pytest.mark.anyio, pytest.mark.cluster]
ANYIO_BACKENDS = ("asyncio",)

RECORD = SessionRecord(revision="2025-11-25", client={"capabilities": {}}, principal={"sub": "a"})


@pytest.fixture
async def client() -> AsyncIterator[Any]:
    async with redis_server() as url:
        connection = redis.asyncio.Redis.from_url(url)
        yield connection
        await connection.aclose()


async def test_a_record_lives_its_ttl_after_each_use(client: Any) -> None:
    store = RedisSessionStore(client, ttl_seconds=30)
    assert await store.create("s", RECORD) == []
    assert await store.load("s") == RECORD
    assert 0 < await client.pttl("mcpspec:session:s") <= 30_000
    assert 0 < await client.pttl("mcpspec:sessions") <= 30_000
    levelled = SessionRecord(revision="2025-11-25", client={}, log_level=3, subscriptions=("u",))
    await store.save("s", levelled)
    assert await store.load("s") == levelled
    assert await store.delete("s") is True
    assert await store.load("s") is None
    await store.save("s", RECORD)  # an ended session stays ended
    assert await store.load("s") is None
    assert await store.delete("s") is False
    assert await client.keys("*") == []


async def test_past_max_sessions_the_least_recently_used_ends(client: Any) -> None:
    store = RedisSessionStore(client, max_sessions=2)
    await store.create("a", RECORD)
    await store.create("b", RECORD)
    await store.load("a")  # now b is the least recently used
    assert await store.create("c", RECORD) == ["b"]
    assert await store.load("b") is None
    assert await store.load("a") == RECORD and await store.load("c") == RECORD
    assert await client.zcard("mcpspec:sessions") == 2


async def test_a_record_too_large_or_not_ours_is_refused(client: Any) -> None:
    store = RedisSessionStore(client)
    large = SessionRecord(revision="2025-11-25", client={"x": "y" * MAX_RECORD_BYTES})
    with pytest.raises(ValueError, match="over the limit"):
        await store.create("s", large)
    await client.set("mcpspec:session:t", b"{not json")
    assert await store.load("t") is None
