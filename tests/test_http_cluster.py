"""Handshake-era sessions shared by several workers (``HttpSettings(cluster=...)``): any
worker serves any request of a session, a ``DELETE`` on one ends it on all, what a
client sets on one applies on all, a client's answer or cancellation reaches the
worker waiting for it, a ``GET`` stream gets what another worker sends, and a client
cannot answer another session's requests. Each test runs on a cluster of apps of this
process joined in memory, and on one joined by a real ``redis-server`` (marked
``cluster``: ``nox -s cluster`` installs it)."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from mcpspec.runtime.connection import Client
from mcpspec.runtime.connection.http.redis_store import redis_cluster
from mcpspec.runtime.connection.http.redis_tasks import RedisTaskStore, redis_task_store
from mcpspec.runtime.connection.http.shared_sessions import Cluster
from mcpspec.runtime.connection.principal import Principal
from mcpspec.runtime.connection.task_store import MemoryTaskStore, TaskStore
from tests.cluster_kit import (
    RoundRobin,
    Workers,
    memory_clusters,
    redis_process,
    redis_server,
    workers,
)

pytestmark = pytest.mark.anyio

ANYIO_BACKENDS = ("asyncio",)
ACCEPT = "application/json, text/event-stream"
HANDSHAKE = ("2025-03-26", "2025-06-18", "2025-11-25")
#: A hang guard for what the test itself causes (never a timed assertion).
GUARD = 15


#: uvicorn and redis-py run on asyncio.
ANYIO_BACKENDS = ("asyncio",)


#: A cluster per worker, and a task store per worker (each a view of the same).
Joined = tuple[Callable[[], Cluster], Callable[[], TaskStore]]


@asynccontextmanager
async def redis_clusters(max_sessions: int = 10_000) -> AsyncIterator[Joined]:
    async with redis_server() as url:
        # One cluster per worker, as in separate processes.
        stores: list[RedisTaskStore] = []

        def task_store() -> TaskStore:
            stores.append(redis_task_store(url, poll_seconds=0.01))
            return stores[-1]

        try:
            yield lambda: redis_cluster(url, timeout=2.0, max_sessions=max_sessions), task_store
        finally:
            for store in stores:
                await store.aclose()


@asynccontextmanager
async def in_memory(max_sessions: int = 4096) -> AsyncIterator[Joined]:
    store = MemoryTaskStore()
    yield memory_clusters(max_sessions), lambda: store


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.cluster)])
def joined(request: pytest.FixtureRequest) -> Any:
    return redis_clusters if request.param == "redis" else in_memory


@pytest.fixture
def seen() -> dict[str, Any]:
    return {"release": anyio.Event(), "cancelled": anyio.Event()}


@asynccontextmanager
async def cluster(
    joined: Any,
    seen: dict[str, Any],
    count: int = 2,
    max_sessions: int = 4096,
    tasks: bool = False,
    **settings: Any,
) -> AsyncIterator[tuple[Workers, httpx.AsyncClient]]:
    async with (
        joined(max_sessions) as (clusters, task_stores),
        workers(count, clusters, seen, task_stores if tasks else None, **settings) as bases,
        httpx.AsyncClient(timeout=GUARD) as http,
    ):
        yield bases, http


def rpc(method: str, params: Any = None, request_id: int | None = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if params is not None:
        message["params"] = params
    return message


def call(name: str, arguments: dict[str, Any] | None = None, request_id: int = 1) -> Any:
    return rpc("tools/call", {"name": name, "arguments": arguments or {}}, request_id)


async def open_session(
    http: httpx.AsyncClient,
    base: str,
    version: str = "2025-11-25",
    capabilities: dict[str, Any] | None = None,
    initialized: str | None = None,
) -> dict[str, str]:
    """``initialize`` on ``base`` (then ``notifications/initialized`` on
    ``initialized``); the headers of every later request of the session."""
    params = {
        "protocolVersion": version,
        "capabilities": capabilities or {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    reply = await http.post(
        f"{base}/mcp", json=rpc("initialize", params), headers={"accept": ACCEPT}
    )
    assert reply.status_code == 200, reply.text
    assert reply.json()["result"]["protocolVersion"] == version
    headers = {
        "accept": ACCEPT,
        "mcp-protocol-version": version,
        "mcp-session-id": reply.headers["mcp-session-id"],
    }
    if initialized is not None:
        done = rpc("notifications/initialized", None, None)
        assert (
            await http.post(f"{initialized}/mcp", json=done, headers=headers)
        ).status_code == 202
    return headers


def messages_of(reply: httpx.Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a reply (JSON, or an SSE stream)."""
    if reply.headers["content-type"].startswith("application/json"):
        return [reply.json()]
    out = []
    for line in reply.text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            out.append(json.loads(line[5:]))
    return out


async def sse_messages(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    async for line in response.aiter_lines():
        if line.startswith("data:") and line[5:].strip():
            yield json.loads(line[5:])


@pytest.mark.parametrize("version", HANDSHAKE)
async def test_any_worker_serves_any_post_of_a_session(
    joined: Any, seen: dict[str, Any], version: str
) -> None:
    async with cluster(joined, seen) as ([a, b], http):
        headers = await open_session(http, a, version)
        done = await http.post(
            f"{b}/mcp", json=rpc("notifications/initialized", None, None), headers=headers
        )
        assert done.status_code == 202
        listed = await http.post(f"{b}/mcp", json=rpc("tools/list"), headers=headers)
        assert {tool["name"] for tool in messages_of(listed)[-1]["result"]["tools"]} >= {
            "echo",
            "ask",
        }
        for base in (a, b, a):
            echoed = await http.post(
                f"{base}/mcp", json=call("echo", {"text": base}), headers=headers
            )
            assert messages_of(echoed)[-1]["result"]["content"][0]["text"] == base
        stepped = await http.post(f"{b}/mcp", json=call("steps", {"count": 3}), headers=headers)
        progress = [m for m in messages_of(stepped) if m.get("method") == "notifications/progress"]
        assert messages_of(stepped)[-1]["result"]["content"][0]["text"] == "3 steps"
        assert progress == []  # no progressToken was asked for


async def test_a_delete_on_one_worker_ends_the_session_on_every_worker(
    joined: Any, seen: dict[str, Any]
) -> None:
    async with cluster(joined, seen, count=3) as ([a, b, c], http):
        headers = await open_session(http, a)
        for base in (b, c):
            assert (
                await http.post(f"{base}/mcp", json=rpc("ping"), headers=headers)
            ).status_code == 200
        assert (await http.delete(f"{c}/mcp", headers=headers)).status_code == 200
        for base in (a, b, c):
            gone = await http.post(f"{base}/mcp", json=rpc("ping"), headers=headers)
            assert gone.status_code == 404
            assert gone.json()["error"]["code"] == -32001


async def test_a_session_id_guessed_is_404_on_every_worker(
    joined: Any, seen: dict[str, Any]
) -> None:
    async with cluster(joined, seen) as ([a, b], http):
        real = await open_session(http, a)
        guessed = {**real, "mcp-session-id": secrets.token_urlsafe(32)}
        for base in (a, b):
            assert (
                await http.post(f"{base}/mcp", json=rpc("ping"), headers=guessed)
            ).status_code == 404
            assert (await http.get(f"{base}/mcp", headers=guessed)).status_code == 404
            assert (await http.delete(f"{base}/mcp", headers=guessed)).status_code == 404
        # The real session is untouched.
        assert (await http.post(f"{b}/mcp", json=rpc("ping"), headers=real)).status_code == 200


async def test_the_log_level_set_on_one_worker_holds_on_the_others(
    joined: Any, seen: dict[str, Any]
) -> None:
    async with cluster(joined, seen) as ([a, b], http):
        headers = await open_session(http, a)
        quiet = rpc("logging/setLevel", {"level": "error"})
        assert (await http.post(f"{b}/mcp", json=quiet, headers=headers)).status_code == 200
        chatted = await http.post(f"{a}/mcp", json=call("chat"), headers=headers)
        assert [m for m in messages_of(chatted) if "method" in m] == []
        loud = rpc("logging/setLevel", {"level": "info"})
        assert (await http.post(f"{a}/mcp", json=loud, headers=headers)).status_code == 200
        for base in (b, a):
            chatted = await http.post(f"{base}/mcp", json=call("chat"), headers=headers)
            logged = [m for m in messages_of(chatted) if m.get("method") == "notifications/message"]
            assert [m["params"]["data"] for m in logged] == ["chatting"]


async def test_an_answer_to_an_elicitation_reaches_the_worker_that_asked(
    joined: Any, seen: dict[str, Any]
) -> None:
    async with cluster(joined, seen) as ([a, b], http):
        headers = await open_session(http, a, capabilities={"elicitation": {}}, initialized=b)
        with anyio.fail_after(GUARD):
            async with http.stream(
                "POST", f"{a}/mcp", json=call("ask", request_id=7), headers=headers
            ) as stream:
                messages = sse_messages(stream)
                asked = await anext(messages)
                assert asked["method"] == "elicitation/create"
                answer = {
                    "jsonrpc": "2.0",
                    "id": asked["id"],
                    "result": {"action": "accept", "content": {"name": "Ada"}},
                }
                accepted = await http.post(f"{b}/mcp", json=answer, headers=headers)
                assert accepted.status_code == 202
                result = await anext(messages)
        assert result["id"] == 7
        assert result["result"]["content"][0]["text"] == "hello Ada"


async def test_a_client_cannot_answer_the_requests_of_another_session(
    joined: Any, seen: dict[str, Any]
) -> None:
    async with cluster(joined, seen) as ([a, b], http):
        victim = await open_session(http, a, capabilities={"elicitation": {}}, initialized=b)
        intruder = await open_session(http, b, capabilities={"elicitation": {}}, initialized=a)
        with anyio.fail_after(GUARD):
            async with http.stream("POST", f"{a}/mcp", json=call("ask"), headers=victim) as stream:
                messages = sse_messages(stream)
                asked = await anext(messages)
                forged = {
                    "jsonrpc": "2.0",
                    "id": asked["id"],
                    "result": {"action": "accept", "content": {"name": "Mallory"}},
                }
                for base in (a, b):
                    refused = await http.post(f"{base}/mcp", json=forged, headers=intruder)
                    assert refused.status_code == 400
                    assert refused.json()["error"]["data"]["rule"] == "unknown-response-id"
                honest = {**forged, "result": {"action": "accept", "content": {"name": "Ada"}}}
                assert (await http.post(f"{b}/mcp", json=honest, headers=victim)).status_code == 202
                result = await anext(messages)
        assert result["result"]["content"][0]["text"] == "hello Ada"


async def test_a_cancellation_reaches_the_worker_running_the_request(
    joined: Any, seen: dict[str, Any]
) -> None:
    async with cluster(joined, seen) as ([a, b], http):
        headers = await open_session(http, a)
        with anyio.fail_after(GUARD):
            body = rpc(
                "tools/call", {"name": "hold", "arguments": {}, "_meta": {"progressToken": 1}}, 9
            )
            async with http.stream("POST", f"{a}/mcp", json=body, headers=headers) as stream:
                messages = sse_messages(stream)
                assert (await anext(messages))["method"] == "notifications/progress"
                cancel = rpc("notifications/cancelled", {"requestId": 9, "reason": "enough"}, None)
                assert (
                    await http.post(f"{b}/mcp", json=cancel, headers=headers)
                ).status_code == 202
                await seen["cancelled"].wait()


async def test_a_sessions_tasks_are_its_own_on_every_worker(
    joined: Any, seen: dict[str, Any]
) -> None:
    # Without authorization a 2025-11-25 task is its session's: each worker serves a
    # copy of the session (a connection of its own) and still finds the task.
    seen["task_cancelled"] = anyio.Event()
    async with cluster(joined, seen, tasks=True) as ([a, b], http):
        headers = await open_session(http, a, initialized=b)
        other = await open_session(http, b, initialized=a)

        async def ask(base: str, method: str, params: Any, head: Any = headers) -> Any:
            reply = await http.post(f"{base}/mcp", json=rpc(method, params, 7), headers=head)
            [answer] = [m for m in messages_of(reply) if m.get("id") == 7]
            return answer

        with anyio.fail_after(GUARD):
            held = {"name": "hold_task", "arguments": {}, "task": {"ttl": 60_000}}
            created = await ask(a, "tools/call", held)
            task_id = created["result"]["task"]["taskId"]
            got = await ask(b, "tasks/get", {"taskId": task_id})
            assert got["result"]["status"] == "working"
            listed = await ask(b, "tasks/list", {})
            assert [t["taskId"] for t in listed["result"]["tasks"]] == [task_id]
            # Another session knows nothing of it, on any worker.
            for base in (a, b):
                assert (await ask(base, "tasks/get", {"taskId": task_id}, other))["error"]
            # Cancelled through the worker that does not run it: the work stops there.
            cancelled = await ask(b, "tasks/cancel", {"taskId": task_id})
            assert cancelled["result"]["status"] == "cancelled"
            await seen["task_cancelled"].wait()
            assert (await ask(a, "tasks/get", {"taskId": task_id}))["result"]["status"] == (
                "cancelled"
            )
            # Run on one worker, its result awaited on the other.
            created = await ask(a, "tools/call", held)
            task_id = created["result"]["task"]["taskId"]
            seen["release"].set()
            result = await ask(b, "tasks/result", {"taskId": task_id})
            assert result["result"]["content"] == [{"type": "text", "text": "released"}]


async def test_a_get_stream_gets_the_changes_announced_on_another_worker(
    joined: Any, seen: dict[str, Any]
) -> None:
    async with cluster(joined, seen, count=3) as ([a, b, c], http):
        headers = await open_session(http, a)
        with anyio.fail_after(GUARD):
            async with http.stream("GET", f"{b}/mcp", headers=headers) as stream:
                assert stream.status_code == 200
                messages = sse_messages(stream)
                # The GET takes what other workers send it from before its response
                # starts: a change announced now arrives.
                touched = await http.post(f"{c}/mcp", json=call("touch"), headers=headers)
                assert messages_of(touched)[-1]["result"]["content"][0]["text"] == "touched"
                first = await anext(messages)
                assert first["method"] == "notifications/tools/list_changed"
                await http.post(f"{a}/mcp", json=call("touch"), headers=headers)
                await http.post(f"{a}/mcp", json=call("echo", {"text": "x"}), headers=headers)
                second = await anext(messages)
                assert second["method"] == "notifications/tools/list_changed"


@pytest.mark.parametrize("mode", [*HANDSHAKE, "2026-07-28"])
async def test_the_mcpspec_client_through_a_balancer_without_affinity(
    joined: Any, seen: dict[str, Any], mode: str
) -> None:
    async def roots(params: Any, ctx: Any) -> Any:
        return {"roots": [{"uri": "file:///ada", "name": "Ada"}]}

    async with cluster(joined, seen, count=3) as (bases, _):
        balancer = RoundRobin(bases)
        async with (
            httpx.AsyncClient(transport=balancer, timeout=GUARD) as http,
            Client.http(f"{bases[0]}/mcp", http_client=http, mode=mode, roots=roots) as client,
        ):
            with anyio.fail_after(GUARD):
                names = {tool.name for tool in await client.list_tools()}
                assert {"echo", "steps", "ask"} <= names
                reports: list[float] = []

                async def progress(params: Any) -> None:
                    reports.append(params.progress)

                stepped = await client.call_tool("steps", {"count": 3}, progress=progress)
                assert stepped.content[0].text == "3 steps"
                assert reports == [1, 2, 3]
                for _ in range(4):
                    # The client's answer lands on the next worker.
                    asked = await client.call_tool("roots")
                    assert asked.content[0].text == "roots: Ada"
        assert {worker for _, worker in balancer.sent} == {0, 1, 2}


async def test_a_stream_resumes_on_another_worker_after_its_worker_is_gone(
    joined: Any, seen: dict[str, Any]
) -> None:
    async with cluster(joined, seen, count=3) as (running, http):
        a, b, c = running
        headers = await open_session(http, a, initialized=b)
        body = rpc(
            "tools/call",
            {"name": "steps", "arguments": {"count": 3}, "_meta": {"progressToken": 5}},
            4,
        )
        reply = await http.post(f"{a}/mcp", json=body, headers=headers)
        events = [
            (block.split("id: ", 1)[1].split("\n", 1)[0], block)
            for block in reply.text.split("\n\n")
            if "id: " in block and "data: {" in block
        ]
        assert len(events) == 4  # 3 progress, the result
        await running.stop(0)
        with anyio.fail_after(GUARD):
            resumed = await http.get(f"{c}/mcp", headers={**headers, "last-event-id": events[0][0]})
        assert resumed.status_code == 200
        replayed = messages_of(resumed)
        assert [m.get("params", {}).get("progress") for m in replayed[:2]] == [2, 3]
        assert replayed[2]["id"] == 4 and replayed[2]["result"]["content"][0]["text"] == "3 steps"
        # An id this cluster never gave is refused, not taken for another stream.
        unknown = await http.get(f"{b}/mcp", headers={**headers, "last-event-id": "x-1.0-1"})
        assert unknown.status_code == 400


async def test_a_get_stream_resumed_on_another_worker_goes_on_live(
    joined: Any, seen: dict[str, Any]
) -> None:
    async with cluster(joined, seen, count=3) as (running, http):
        a, b, c = running
        headers = await open_session(http, a, initialized=b)
        with anyio.fail_after(GUARD):
            async with http.stream("GET", f"{b}/mcp", headers=headers) as stream:
                lines = stream.aiter_lines()
                await http.post(f"{c}/mcp", json=call("touch"), headers=headers)
                last_id = None
                async for line in lines:
                    if line.startswith("id:"):
                        last_id = line[3:].strip()
                    if line.startswith("data:") and "list_changed" in line:
                        break
            assert last_id is not None
            await running.stop(1)
            async with http.stream(
                "GET", f"{c}/mcp", headers={**headers, "last-event-id": last_id}
            ) as stream:
                assert stream.status_code == 200
                messages = sse_messages(stream)
                await http.post(f"{a}/mcp", json=call("touch"), headers=headers)
                assert (await anext(messages))["method"] == "notifications/tools/list_changed"


async def test_a_subscription_made_on_one_worker_is_served_by_the_get_stream_of_another(
    joined: Any, seen: dict[str, Any]
) -> None:
    async with cluster(joined, seen, count=3) as ([a, b, c], http):
        headers = await open_session(http, a, initialized=b)
        subscribe = rpc("resources/subscribe", {"uri": "memo://one"})
        assert (await http.post(f"{a}/mcp", json=subscribe, headers=headers)).status_code == 200
        with anyio.fail_after(GUARD):
            async with http.stream("GET", f"{b}/mcp", headers=headers) as stream:
                messages = sse_messages(stream)
                await http.post(
                    f"{c}/mcp", json=call("update", {"uri": "memo://other"}), headers=headers
                )
                await http.post(
                    f"{c}/mcp", json=call("update", {"uri": "memo://one"}), headers=headers
                )
                updated = await anext(messages)
                assert updated["method"] == "notifications/resources/updated"
                assert updated["params"]["uri"] == "memo://one"


async def test_listen_gets_the_changes_announced_on_another_worker(
    joined: Any, seen: dict[str, Any]
) -> None:
    async with (
        cluster(joined, seen) as ([a, b], _),
        Client.http(f"{a}/mcp", mode="2026-07-28") as listener,
        Client.http(f"{b}/mcp", mode="2026-07-28") as announcer,
    ):
        with anyio.fail_after(GUARD):
            async with listener.listen(tools=True) as changes:
                touched = await announcer.call_tool("touch")
                assert touched.content[0].text == "touched"
                async for note in changes:
                    assert note.method == "notifications/tools/list_changed"
                    break


@pytest.mark.cluster
async def test_redis_slow_or_down_is_a_clear_error_in_a_bound_and_the_workers_recover(
    seen: dict[str, Any],
) -> None:
    async with redis_process() as redis:
        clusters = lambda: redis_cluster(redis.url, timeout=0.5)  # noqa: E731
        async with workers(2, clusters, seen) as (a, b), httpx.AsyncClient(timeout=GUARD) as http:
            headers = await open_session(http, a, initialized=b)
            ping = rpc("ping")
            fresh = rpc(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            )
            redis.pause()  # slow: it takes connections and answers nothing
            try:
                with anyio.fail_after(5):
                    for base in (a, b):
                        refused = await http.post(f"{base}/mcp", json=rpc("ping"), headers=headers)
                        assert refused.status_code == 503
                        assert refused.headers["retry-after"] == "1"
                    opened = await http.post(f"{a}/mcp", json=fresh, headers={"accept": ACCEPT})
                    assert opened.status_code == 200 and "mcp-session-id" not in opened.headers
                    assert opened.json()["error"]["code"] == -32603
                    deleted = await http.delete(f"{b}/mcp", headers=headers)
                    assert deleted.status_code == 503
            finally:
                redis.resume()
            with anyio.fail_after(GUARD):
                assert (
                    await http.post(f"{b}/mcp", json=rpc("ping"), headers=headers)
                ).status_code == 200
            redis.stop()  # down
            with anyio.fail_after(5):
                refused = await http.post(f"{a}/mcp", json=rpc("ping"), headers=headers)
                assert refused.status_code == 503
            await redis.start()  # back, and empty: the sessions it held are gone
            with anyio.fail_after(GUARD):
                gone = await http.post(f"{b}/mcp", json=ping, headers=headers)
                assert gone.status_code == 404
                headers = await open_session(http, a, initialized=b)
                # The bus is back too: a GET stream gets what another worker announces.
                async with http.stream("GET", f"{b}/mcp", headers=headers) as stream:
                    assert stream.status_code == 200
                    arrived = anyio.Event()

                    async def read() -> None:
                        async for note in sse_messages(stream):
                            assert note["method"] == "notifications/tools/list_changed"
                            arrived.set()
                            return

                    async with anyio.create_task_group() as reading:
                        reading.start_soon(read)
                        # Announced again until the bus, reconnecting, carries one.
                        while not arrived.is_set():
                            await http.post(f"{a}/mcp", json=call("touch"), headers=headers)
                            with anyio.move_on_after(0.5):
                                await arrived.wait()


async def test_a_copy_idle_on_its_worker_serves_again_and_none_is_left_running(
    joined: Any, seen: dict[str, Any]
) -> None:
    async with cluster(joined, seen, session_idle_seconds=0.2) as (running, http):
        a, b = running
        # A session whose GET streams keep it busy (never idle) on both workers, kept
        # first: an idle copy behind it is not the first to go for room.
        busy = await open_session(http, a, initialized=b)
        async with (
            http.stream("GET", f"{a}/mcp", headers=busy) as on_a,
            http.stream("GET", f"{b}/mcp", headers=busy) as on_b,
        ):
            assert on_a.status_code == on_b.status_code == 200
            headers = await open_session(http, a, initialized=b)
            for _ in range(3):
                # Idle on each worker by its own clock, alive in the cluster all along.
                await anyio.sleep(0.3)
                for base in (a, b):
                    pong = await http.post(f"{base}/mcp", json=rpc("ping"), headers=headers)
                    assert pong.status_code == 200
            assert [len(app.sessions) for app in running.apps] == [2, 2]
            assert (await http.delete(f"{b}/mcp", headers=headers)).status_code == 200
            with anyio.fail_after(GUARD):
                # Every copy of it ended: each worker runs one connection, the busy one's.
                while any(len(app.server._connections) != 1 for app in running.apps):
                    await anyio.sleep(0.02)


async def test_what_is_sent_for_the_get_stream_while_none_is_open_waits_for_the_next(
    joined: Any, seen: dict[str, Any]
) -> None:
    async with cluster(joined, seen, count=3) as ([a, b, c], http):
        headers = await open_session(http, a, initialized=b)
        for text in ("one", "two"):
            sent = await http.post(
                f"{a}/mcp", json=call("announce", {"text": text}), headers=headers
            )
            assert messages_of(sent)[-1]["result"]["content"][0]["text"] == "announced"
        with anyio.fail_after(GUARD):
            async with http.stream("GET", f"{c}/mcp", headers=headers) as stream:
                messages = sse_messages(stream)
                held = [await anext(messages), await anext(messages)]
                assert [m["params"]["data"] for m in held] == ["one", "two"]
                await http.post(
                    f"{b}/mcp", json=call("announce", {"text": "live"}), headers=headers
                )
                assert (await anext(messages))["params"]["data"] == "live"
        assert (await http.delete(f"{a}/mcp", headers=headers)).status_code == 200


async def test_a_change_announced_while_no_get_stream_is_open_waits_once_for_the_next(
    joined: Any, seen: dict[str, Any]
) -> None:
    async with cluster(joined, seen, count=3) as ([a, b, c], http):
        # A copy of the session on every worker, none holding a GET stream.
        headers = await open_session(http, a, initialized=b)
        subscribe = rpc("resources/subscribe", {"uri": "memo://one"})
        assert (await http.post(f"{c}/mcp", json=subscribe, headers=headers)).status_code == 200
        touched = await http.post(f"{c}/mcp", json=call("touch"), headers=headers)
        assert messages_of(touched)[-1]["result"]["content"][0]["text"] == "touched"
        for uri in ("memo://other", "memo://one"):
            await http.post(f"{a}/mcp", json=call("update", {"uri": uri}), headers=headers)
        await anyio.sleep(0.3)  # the other workers' copies take the changes told them
        with anyio.fail_after(GUARD):
            async with http.stream("GET", f"{b}/mcp", headers=headers) as stream:
                messages = sse_messages(stream)
                held = [await anext(messages), await anext(messages)]
                assert sorted((m["method"], m.get("params", {}).get("uri")) for m in held) == [
                    ("notifications/resources/updated", "memo://one"),
                    ("notifications/tools/list_changed", None),
                ]
                # Each held once, however many workers' copies held it: next is live.
                await http.post(
                    f"{c}/mcp", json=call("announce", {"text": "live"}), headers=headers
                )
                assert (await anext(messages))["params"]["data"] == "live"
        assert (await http.delete(f"{a}/mcp", headers=headers)).status_code == 200


async def test_past_the_stores_bound_the_least_recently_used_session_ends_everywhere(
    joined: Any, seen: dict[str, Any]
) -> None:
    async with cluster(joined, seen, max_sessions=2) as ([a, b], http):
        first = await open_session(http, a, initialized=b)
        second = await open_session(http, b, initialized=a)
        assert (await http.post(f"{b}/mcp", json=rpc("ping"), headers=first)).status_code == 200
        # The second session is now the least recently used: the third ends it.
        third = await open_session(http, a, initialized=b)
        for base in (a, b):
            gone = await http.post(f"{base}/mcp", json=rpc("ping"), headers=second)
            assert gone.status_code == 404
            for live in (first, third):
                pong = await http.post(f"{base}/mcp", json=rpc("ping"), headers=live)
                assert pong.status_code == 200


def _principal_of(token: str) -> Principal | None:
    known = {
        "alice": Principal("alice", issuer="https://as"),
        "bob": Principal("bob", issuer="https://as"),
    }
    return known.get(token)


async def test_a_session_is_its_principals_on_every_worker(
    joined: Any, seen: dict[str, Any]
) -> None:
    """A session belongs to the principal that minted it on every worker: another
    principal's token on it is 404 wherever it lands, and the owner goes on."""
    async with cluster(joined, seen, verify_token=_principal_of) as ([a, b], http):
        alice = {"accept": ACCEPT, "authorization": "Bearer alice"}
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        opened = await http.post(f"{a}/mcp", json=rpc("initialize", params), headers=alice)
        assert opened.status_code == 200, opened.text
        session = {
            **alice,
            "mcp-protocol-version": "2025-11-25",
            "mcp-session-id": opened.headers["mcp-session-id"],
        }
        done = rpc("notifications/initialized", None, None)
        assert (await http.post(f"{b}/mcp", json=done, headers=session)).status_code == 202
        as_bob = {**session, "authorization": "Bearer bob"}
        for base in (b, a):
            refused = await http.post(f"{base}/mcp", json=rpc("ping"), headers=as_bob)
            assert refused.status_code == 404, base
            assert (await http.get(f"{base}/mcp", headers=as_bob)).status_code == 404
            assert (await http.delete(f"{base}/mcp", headers=as_bob)).status_code == 404
        for base in (a, b):
            served = await http.post(f"{base}/mcp", json=rpc("ping"), headers=session)
            assert served.status_code == 200, base
