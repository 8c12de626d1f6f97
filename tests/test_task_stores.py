"""The task stores behave alike: :class:`MemoryTaskStore` here, and
:class:`RedisTaskStore` on a ``redis-server`` of its own (marker ``cluster``:
``nox -s cluster`` installs it). Each test gets a ``stores()`` factory: every store it
makes is another worker's view of the same tasks."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import msgspec
import pytest
from msgspec.structs import replace

from mcpspec import ext_tasks
from mcpspec.runtime.connection import Client, Server
from mcpspec.runtime.connection.task_store import (
    MemoryTaskStore,
    TaskRecord,
    TaskStore,
    TaskStoreFull,
)
from mcpspec.runtime.connection.tasks import TaskSettings
from mcpspec.runtime.extensions import TASKS
from tests.cluster_kit import redis_server
from tests.http_kit import free_port
from tests.tasks_kit import add_two_names

pytestmark = pytest.mark.anyio
#: redis-py runs on asyncio alone (the memory store runs on trio in test_connection_tasks).
ANYIO_BACKENDS = ("asyncio",)

Stores = Callable[..., TaskStore]


@asynccontextmanager
async def memory_stores() -> AsyncIterator[Stores]:
    shared: dict[str, MemoryTaskStore] = {}

    def make(**bounds: Any) -> TaskStore:
        # One store per set of bounds: every worker sees the same one.
        key = repr(sorted(bounds.items()))
        if key not in shared:
            shared[key] = MemoryTaskStore(**bounds)
        return shared[key]

    yield make


@asynccontextmanager
async def redis_stores() -> AsyncIterator[Stores]:
    from mcpspec.runtime.connection.http.redis_tasks import RedisTaskStore, redis_task_store

    made: list[RedisTaskStore] = []
    async with redis_server() as url:

        def make(**bounds: Any) -> TaskStore:
            store = redis_task_store(url, poll_seconds=0.01, **bounds)
            made.append(store)
            return store

        try:
            yield make
        finally:
            for store in made:
                await store.aclose()


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.cluster)])
async def stores(request: pytest.FixtureRequest) -> AsyncIterator[Stores]:
    kind = redis_stores if request.param == "redis" else memory_stores
    async with kind() as make:
        yield make


def task(task_id: str, owner: str = "o", *, ttl_ms: int | None = None, **more: Any) -> TaskRecord:
    now = time.time()
    return TaskRecord(
        task_id=task_id,
        owner=owner,
        method="tools/call",
        created=now,
        updated=now,
        ttl_ms=ttl_ms,
        poll_interval_ms=10,
        **more,
    )


async def test_a_task_made_on_one_worker_is_read_on_another(stores: Stores) -> None:
    one, other = stores(), stores()
    await one.create(task("a", outcome=b'{"result":{}}'))
    record = await other.get("a")
    assert record is not None and record.owner == "o" and record.outcome == b'{"result":{}}'
    assert await other.get("nothing") is None
    with pytest.raises(ValueError, match="exists"):
        await other.create(task("a"))


async def test_status_moves_only_forward(stores: Stores) -> None:
    one, other = stores(), stores()
    record = task("a")
    await one.create(record)
    for status in ("input_required", "working", "working", "completed"):
        assert await other.update(replace(record, status=status))
    assert not await one.update(replace(record, status="working"))
    stored = await one.get("a")
    assert stored is not None and stored.status == "completed"
    assert not await one.update(task("never-made"))


async def test_listing_is_per_owner_oldest_first(stores: Stores) -> None:
    store = stores()
    for task_id in ("c", "a", "b"):
        await store.create(task(task_id, "mine"))
        await anyio.sleep(0.002)
    await store.create(task("x", "theirs"))
    assert [r.task_id for r in await stores().list("mine")] == ["c", "a", "b"]
    assert [r.task_id for r in await store.list("theirs")] == ["x"]
    assert await store.list("nobody") == []


async def test_tasks_expire_at_their_ttl_and_free_room(stores: Stores) -> None:
    store = stores(max_tasks=2)
    await store.create(task("a", ttl_ms=100))
    await store.create(task("b", ttl_ms=100))
    with pytest.raises(TaskStoreFull):
        await store.create(task("c"))
    await anyio.sleep(0.15)
    assert await store.get("a") is None
    assert await store.list("o") == []
    assert not await store.update(task("a", ttl_ms=100))
    await store.create(task("c"))
    assert [r.task_id for r in await store.list("o")] == ["c"]


async def test_bounds_per_owner_in_all_and_in_bytes(stores: Stores) -> None:
    store = stores(max_tasks=3, max_per_owner=2, max_bytes=2000)
    await store.create(task("a", "one"))
    await store.create(task("b", "one"))
    with pytest.raises(TaskStoreFull):
        await store.create(task("c", "one"))
    await store.create(task("c", "two"))
    with pytest.raises(TaskStoreFull):
        await store.create(task("d", "three"))
    # An update past the byte bound changes nothing.
    assert not await store.update(task("a", "one", outcome=b"x" * 2000))
    stored = await store.get("a")
    assert stored is not None and stored.outcome is None
    assert await store.update(task("a", "one", outcome=b"x" * 100))


async def test_the_byte_bound_counts_outcomes(stores: Stores) -> None:
    bytes_store = stores(max_bytes=600)
    await bytes_store.create(task("big", "b", outcome=b"x" * 200))
    with pytest.raises(TaskStoreFull):
        await bytes_store.create(task("more", "b", outcome=b"x" * 200))


async def test_wait_returns_when_another_worker_changes_the_task(stores: Stores) -> None:
    one, other = stores(), stores()
    record = task("a")
    await one.create(record)
    started = time.monotonic()
    await one.wait("a", 0.05)
    assert time.monotonic() - started >= 0.04
    async with anyio.create_task_group() as group:

        async def finish() -> None:
            await anyio.sleep(0.05)
            assert await other.update(replace(record, status="completed"))

        group.start_soon(finish)
        started = time.monotonic()
        await one.wait("a", 5)
    assert time.monotonic() - started < 2


async def test_a_task_survives_the_server_that_ran_it(stores: Stores) -> None:
    first = Server("tasks", tasks=TaskSettings(store=stores()))

    @first.tool(task="optional")
    async def echo(text: str) -> str:
        return text

    async with first.running(), Client.in_memory(first, mode="2025-11-25") as client:
        handle = await client.call_tool("echo", {"text": "kept"}, task=True)
        assert (await handle.result()).text == "kept"
    # The server is gone; another worker's store still answers for the task.
    record = await stores().get(handle.task_id)
    assert record is not None and record.status == "completed"
    assert record.outcome is not None and b"kept" in record.outcome


async def test_another_worker_answers_for_a_task_of_the_extension(stores: Stores) -> None:
    def worker() -> Server:
        server = Server("tasks", tasks=TaskSettings(store=stores()))

        @server.tool(task="optional")
        async def echo(text: str) -> str:
            return text

        return server

    first, second = worker(), worker()
    declared: dict[str, Any] = {
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}}
    }
    async with (
        first.running(),
        Client.in_memory(first, mode="2026-07-28") as client,
    ):
        handle = await client.call_tool("echo", {"text": "elsewhere"}, task=True)
        assert handle.extension
        assert (await handle.result(timeout=20)).text == "elsewhere"
    # The first worker is gone: a client of the second one reads the task there.
    async with Client.in_memory(second, mode="2026-07-28") as client:
        params = ext_tasks.GetTaskRequestParams(task_id=handle.task_id, meta=declared)
        got = await client.request(ext_tasks.GetTaskRequest(id=client.next_id(), params=params))
        assert got.status == "completed"
        assert msgspec.to_builtins(got.result)["content"][0]["text"] == "elsewhere"


async def test_answers_are_kept_first_wins_and_go_with_their_task(stores: Stores) -> None:
    one, other = stores(), stores()
    await one.create(task("a"))
    await other.answer("a", {"q1": b'"first"'})
    await one.answer("a", {"q1": b'"again"', "q2": b"2"})
    assert await other.answers("a") == {"q1": b'"first"', "q2": b"2"}
    await one.answer("never", {"q1": b"1"})
    assert await other.answers("never") == {}
    await other.forget_answers("a")
    assert await one.answers("a") == {}
    await one.create(task("b", ttl_ms=1000))
    await one.answer("b", {"q1": b"1"})
    assert await other.answers("b") == {"q1": b"1"}
    await anyio.sleep(1.2)  # past the ttl: the answers are gone with the task
    assert await other.answers("b") == {} and await one.get("b") is None


async def test_a_running_task_is_answered_and_cancelled_through_another_worker(
    stores: Stores,
) -> None:
    seen = {"stopped": anyio.Event()}

    def worker() -> Server:
        server = Server("tasks", tasks=TaskSettings(store=stores(), poll_interval_ms=10))
        add_two_names(server)

        @server.tool(task="optional")
        async def forever() -> str:
            try:
                await anyio.sleep_forever()
            finally:
                seen["stopped"].set()
            return "never"

        return server

    first, second = worker(), worker()
    meta: dict[str, Any] = {
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}, "elicitation": {}}
    }

    async def ask(client: Client, request: Any, params: Any, **fields: Any) -> Any:
        message = request(id=client.next_id(), params=params(meta=meta, **fields))
        return await client.request(message)

    async def get(client: Client, task_id: str) -> Any:
        return await ask(
            client, ext_tasks.GetTaskRequest, ext_tasks.GetTaskRequestParams, task_id=task_id
        )

    async def update(client: Client, task_id: str, responses: dict[str, Any]) -> Any:
        request, params = ext_tasks.UpdateTaskRequest, ext_tasks.UpdateTaskRequestParams
        return await ask(client, request, params, task_id=task_id, input_responses=responses)

    async with (
        first.running(),
        second.running(),
        Client.in_memory(first, mode="2026-07-28") as here,
        Client.in_memory(second, mode="2026-07-28") as there,
    ):
        with anyio.fail_after(20):
            types = here.types
            created = await ask(
                here, types.CallToolRequest, types.CallToolRequestParams, name="two_names"
            )
            while (waiting := await get(there, created.task_id)).status != "input_required":
                await anyio.sleep(0.01)
            assert sorted(msgspec.to_builtins(waiting.input_requests)) == ["first", "second"]
            answer = {"action": "accept", "content": {"name": "Ada"}}
            await update(there, created.task_id, {"first": answer})
            # Seen on either worker at once: only the question not answered is open.
            for client in (here, there):
                partly = await get(client, created.task_id)
                assert partly.status == "input_required"
                assert sorted(msgspec.to_builtins(partly.input_requests)) == ["second"]
            await update(there, created.task_id, {"second": {**answer, "content": {"name": "Bo"}}})
            while (done := await get(there, created.task_id)).status != "completed":
                await anyio.sleep(0.01)
            assert done.result["content"][0]["text"] == "Ada and Bo"
            assert await stores().answers(created.task_id) == {}

            created = await ask(
                here, types.CallToolRequest, types.CallToolRequestParams, name="forever"
            )
            await ask(
                there,
                ext_tasks.CancelTaskRequest,
                ext_tasks.CancelTaskRequestParams,
                task_id=created.task_id,
            )
            # The worker running it stops the work: its record ended elsewhere.
            await seen["stopped"].wait()
            assert (await get(here, created.task_id)).status == "cancelled"


@pytest.mark.cluster
async def test_redis_down_is_store_unavailable_within_the_bound() -> None:
    from mcpspec.runtime.connection.http.redis_tasks import redis_task_store
    from mcpspec.runtime.connection.http.session_store import StoreUnavailable

    store = redis_task_store(f"redis://127.0.0.1:{free_port()}/0", timeout=0.5)
    started = time.monotonic()
    try:
        for call in (store.create(task("a")), store.get("a"), store.list("o")):
            with pytest.raises(StoreUnavailable):
                await call
    finally:
        await store.aclose()
    assert time.monotonic() - started < 5
