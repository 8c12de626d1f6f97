"""The cluster as deployed (``nox -s cluster``): Debian's ``redis-server``, three worker
processes under uvicorn and ``nginx`` in front of them, round-robin with no affinity.
Through it, the mcpspec client in every handshake revision and in 2026-07-28, and the
official SDK client (``mcp==2.3.0``): list, call with progress, the client's answers
landing on other workers, cancel, the ``GET`` stream's notifications announced
elsewhere, ``listen`` across workers; a stream resumed after its worker was killed (by
hand, and by the mcpspec client); load runs with a worker killed and restarted midway
(no answer lost or misrouted, every failure typed, each worker's memory back near its
start, Redis left holding live sessions' keys only) and with Redis stopped and restarted
midway (every failure typed, every client served again once it is back)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx
import pytest
import redis.asyncio

from mcpspec.runtime.connection import Client
from mcpspec.runtime.connection import errors as client_errors
from tests.cluster_stack import ClusterStack, cluster_stack

try:
    import mcp.types as sdk_types
    from mcp import Client as SdkClient
except ImportError:  # pragma: no cover - nox -s cluster installs it
    SDK_INSTALLED = False
else:
    SDK_INSTALLED = True

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.anyio,
    # One cluster serves every test of the module: asyncio (uvicorn's) only.
    pytest.mark.parametrize("anyio_backend", ["asyncio"], scope="module"),
]
HANDSHAKE = ("2025-03-26", "2025-06-18", "2025-11-25")
#: A hang guard (never a timed assertion).
GUARD = 60
ACCEPT = "application/json, text/event-stream"


@pytest.fixture(scope="module")
async def stack() -> AsyncIterator[ClusterStack]:
    async with cluster_stack(3) as running:
        yield running


async def cancels(stack: ClusterStack) -> int:
    """The ``hold`` calls cancelled, summed over the workers (asked of each directly)."""
    total = 0
    for index in range(len(stack.ports)):
        async with Client.http(stack.worker_url(index), mode="2026-07-28") as client:
            total += int((await client.call_tool("cancelled")).content[0].text)
    return total


async def roots(params: Any, ctx: Any) -> Any:
    return {"roots": [{"uri": "file:///ada", "name": "Ada"}]}


async def elicit(params: Any, ctx: Any) -> Any:
    return {"action": "accept", "content": {"name": "Ada"}}


@pytest.mark.parametrize("mode", [*HANDSHAKE, "2026-07-28"])
async def test_the_mcpspec_client_through_nginx(stack: ClusterStack, mode: str) -> None:
    changed = anyio.Event()

    async def on_notification(note: Any) -> None:
        if type(note).__name__ == "ToolListChangedNotification":
            changed.set()

    options: dict[str, Any] = {"roots": roots, "on_notification": on_notification}
    if mode != "2025-03-26":
        options["elicitation"] = elicit
    with anyio.fail_after(GUARD):
        async with Client.http(stack.url, mode=mode, **options) as client:
            names = {tool.name for tool in await client.list_tools()}
            assert {"echo", "steps", "ask", "roots", "hold"} <= names
            reports: list[float] = []
            stepped = await client.call_tool(
                "steps", {"count": 3}, progress=lambda p: reports.append(p.progress)
            )
            assert stepped.content[0].text == "3 steps" and reports == [1, 2, 3]
            # Three rounds: the client's answers land on the other workers in turn.
            for _ in range(3):
                assert (await client.call_tool("roots")).content[0].text == "roots: Ada"
                if mode != "2025-03-26":
                    assert (await client.call_tool("ask")).content[0].text == "hello Ada"
            # Cancel: the worker running the call hears of it.
            before = await cancels(stack)
            started = anyio.Event()
            async with anyio.create_task_group() as task_group:

                async def hold() -> None:
                    await client.call_tool("hold", progress=lambda p: started.set())

                task_group.start_soon(hold)
                await started.wait()
                task_group.cancel_scope.cancel()
            while await cancels(stack) != before + 1:
                await anyio.sleep(0.05)
            if mode == "2026-07-28":
                # listen on one worker, changes announced on the others
                async with client.listen(tools=True) as changes:
                    async with Client.http(stack.url, mode=mode) as announcer:
                        for _ in range(3):
                            await announcer.call_tool("touch")
                    async for note in changes:
                        assert note.method == "notifications/tools/list_changed"
                        break
            else:
                # The GET stream is held by one worker: touched on each in turn.
                for _ in range(3):
                    await client.call_tool("touch")
                await changed.wait()
            assert (await client.call_tool("echo", {"text": "end"})).content[0].text == "end"


@pytest.mark.skipif(not SDK_INSTALLED, reason="nox -s cluster installs mcp==2.3.0")
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_official_sdk_client_through_nginx(stack: ClusterStack, mode: str) -> None:
    received: list[Any] = []
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        received.append(message)
        if type(message).__name__ == "ToolListChangedNotification":
            changed.set()

    async def elicit_name(context: Any, params: Any) -> Any:
        return sdk_types.ElicitResult(action="accept", content={"name": "Ada"})

    with anyio.fail_after(GUARD):
        async with SdkClient(
            stack.url, mode=mode, elicitation_callback=elicit_name, message_handler=on_message
        ) as client:
            tools = await client.list_tools()
            assert {"echo", "steps", "ask"} <= {tool.name for tool in tools.tools}
            progress: list[float] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(value)

            stepped = await client.call_tool("steps", {"count": 3}, progress_callback=on_progress)
            assert stepped.content[0].text == "3 steps" and progress == [1, 2, 3]
            for _ in range(3):
                asked = await client.call_tool("ask", {})
                assert asked.content[0].text == "hello Ada"
            # Cancel: the worker running the call hears of it.
            before = await cancels(stack)
            started = anyio.Event()

            async def hold_started(value: float, total: float | None, message: str | None) -> None:
                started.set()

            async with anyio.create_task_group() as task_group:
                task_group.start_soon(
                    lambda: client.call_tool("hold", {}, progress_callback=hold_started)
                )
                await started.wait()
                task_group.cancel_scope.cancel()
            while await cancels(stack) != before + 1:
                await anyio.sleep(0.05)
            if mode == "legacy":
                assert client.protocol_version == "2025-11-25"
                for _ in range(3):
                    await client.call_tool("touch", {})
                await changed.wait()


async def test_a_stream_resumes_after_its_worker_is_killed(stack: ClusterStack) -> None:
    with anyio.fail_after(GUARD):
        async with httpx.AsyncClient(timeout=GUARD) as http:
            opened = await http.post(
                stack.url,
                json={
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                },
                headers={"accept": ACCEPT},
            )
            headers = {
                "accept": ACCEPT,
                "mcp-protocol-version": "2025-11-25",
                "mcp-session-id": opened.headers["mcp-session-id"],
            }
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (
                await http.post(stack.url, json=initialized, headers=headers)
            ).status_code == 202
            call = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {
                    "name": "report_then_hold",
                    "arguments": {"count": 3},
                    "_meta": {"progressToken": "p"},
                },
            }
            events: list[tuple[str, dict[str, Any]]] = []
            async with http.stream("POST", stack.url, json=call, headers=headers) as stream:
                event_id = None
                async for line in stream.aiter_lines():
                    if line.startswith("id:"):
                        event_id = line[3:].strip()
                    elif line.startswith("data:") and line[5:].strip() and event_id:
                        events.append((event_id, json.loads(line[5:])))
                        if len(events) == 3:
                            break
            port = int(events[0][1]["params"]["message"])
            index = stack.ports.index(port)
            stack.kill_worker(index)
            try:
                resumed = await http.get(
                    stack.url, headers={**headers, "last-event-id": events[0][0]}
                )
                assert resumed.status_code == 200
                replayed = [
                    json.loads(line[5:])
                    for line in resumed.text.splitlines()
                    if line.startswith("data:") and line[5:].strip()
                ]
                assert [m["params"]["progress"] for m in replayed] == [2, 3]
                # The session lives on: any worker serves it.
                ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
                for _ in range(3):
                    assert (
                        await http.post(stack.url, json=ping, headers=headers)
                    ).status_code == 200
                assert (await http.delete(stack.url, headers=headers)).status_code == 200
            finally:
                await stack.start_worker(index)


async def test_the_mcpspec_client_when_the_worker_of_its_call_is_killed(
    stack: ClusterStack,
) -> None:
    reports: list[tuple[float, str | None]] = []
    third = anyio.Event()

    def on_progress(params: Any) -> None:
        reports.append((params.progress, params.message))
        if len(reports) == 3:
            third.set()

    with anyio.fail_after(GUARD):
        async with Client.http(stack.url, mode="2025-11-25") as client:
            index = -1
            try:
                async with anyio.create_task_group() as task_group:

                    async def kill_its_worker() -> None:
                        nonlocal index
                        await third.wait()
                        index = stack.ports.index(int(str(reports[0][1])))
                        stack.kill_worker(index)

                    task_group.start_soon(kill_its_worker)
                    # Its worker dies: the client resumes the stream on another worker
                    # (no event twice), which has nothing more: the call fails with a
                    # typed error, in its bound.
                    failures = (client_errors.RequestTimeout, client_errors.RequestError)
                    with pytest.raises(failures):
                        await client.call_tool(
                            "report_then_hold", {"count": 3}, progress=on_progress, timeout=5
                        )
                assert [done for done, _ in reports] == [1, 2, 3]
                # The session lives on, served by the other workers.
                for _ in range(3):
                    assert (await client.call_tool("echo", {"text": "on"})).content[0].text == "on"
            finally:
                if index >= 0:
                    await stack.start_worker(index)


#: Load: clients per era and calls per client (``MCPSPEC_CLUSTER_LOAD=CLIENTSxCALLS``;
#: ``nox -s cluster`` runs the full size, 50x1000).
LOAD_CLIENTS, LOAD_CALLS = (
    int(part) for part in os.environ.get("MCPSPEC_CLUSTER_LOAD", "5x100").split("x")
)
#: How far a worker's resident memory may stay above where it was before the load run,
#: once the run's sessions have ended: a fraction of it, and a fixed allowance (the
#: allocator keeps some freed memory; a leak of the run's answers or sessions is more).
#: The typed errors a call may end with while a worker or Redis is down.
TYPED_FAILURES = (
    client_errors.RequestError,
    client_errors.ConnectionClosed,
    client_errors.RequestTimeout,
)
RSS_GROWTH = 0.1
RSS_SLACK = 16 * 1024 * 1024


async def test_load_with_a_worker_killed_and_restarted_midway(stack: ClusterStack) -> None:
    answered = 0
    failures: list[BaseException] = []
    done = anyio.Event()
    halfway = anyio.Event()
    total = 2 * LOAD_CLIENTS * LOAD_CALLS
    # Each worker's memory before: worker 1's is taken again once it is restarted (a
    # new process starts lower than one that served the module's earlier tests).
    rss_before = [stack.worker_rss(index) for index in range(len(stack.ports))]

    async def run_client(mode: str, number: int) -> None:
        nonlocal answered
        async with Client.http(stack.url, mode=mode) as client:
            for call in range(LOAD_CALLS):
                text = f"{mode}/{number}/{call}"
                try:
                    result = await client.call_tool("echo", {"text": text}, timeout=20)
                except TYPED_FAILURES as exc:
                    failures.append(exc)
                    continue
                # Never another client's answer, nor another call's.
                assert result.content[0].text == text
                answered += 1
                if answered + len(failures) >= total // 2:
                    halfway.set()

    async def kill_and_restart() -> None:
        await halfway.wait()
        stack.kill_worker(1)
        await anyio.sleep(0.5)
        await stack.start_worker(1)
        rss_before[1] = stack.worker_rss(1)

    with anyio.fail_after(240):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(kill_and_restart)
            async with anyio.create_task_group() as clients:
                for number in range(LOAD_CLIENTS):
                    clients.start_soon(run_client, "2025-11-25", number)
                    clients.start_soon(run_client, "2026-07-28", number)
            done.set()
    assert answered + len(failures) == total
    assert len(failures) <= total // 10, failures[:5]
    # Every worker's memory is back near where it was (the sessions ended).
    await anyio.sleep(1)
    rss_after = [stack.worker_rss(index) for index in range(len(stack.ports))]
    print(f"worker RSS before {rss_before}, after {rss_after}, {len(failures)} failed")
    for before, after in zip(rss_before, rss_after, strict=True):
        assert after <= before * (1 + RSS_GROWTH) + RSS_SLACK, (rss_before, rss_after)
    # Every client ended its session: Redis keeps nothing of them.
    connection = redis.asyncio.Redis.from_url(stack.redis.url)
    try:
        keys = [key.decode() for key in await connection.keys("mcpspec:*")]
        live = {key.split(":", 2)[2] for key in keys if key.startswith("mcpspec:session:")}
        for key in keys:
            # The index of live sessions, or a key naming one of them.
            assert key == "mcpspec:sessions" or key.split(":")[2] in live, key
    finally:
        await connection.aclose()


async def test_load_with_redis_stopped_and_restarted_midway(stack: ClusterStack) -> None:
    calls = 60
    answered = 0
    failures: list[BaseException] = []
    halfway = anyio.Event()
    back = anyio.Event()
    last_ok: list[bool] = []

    async def run_client(mode: str, number: int) -> None:
        nonlocal answered
        call = 0
        retried = False
        while call < calls:
            # A session lost with Redis's data, and not renewed while Redis was down,
            # ends the client's connection: the caller connects again, as a user would.
            async with Client.http(stack.url, mode=mode) as client:
                while call < calls:
                    if call == calls - 1:
                        await back.wait()  # the last call once Redis is back
                    text = f"{mode}/{number}/{call}"
                    call += 1
                    try:
                        result = await client.call_tool("echo", {"text": text}, timeout=20)
                    except TYPED_FAILURES as exc:
                        failures.append(exc)
                        ended = "Session expired" in str(exc) or isinstance(
                            exc, client_errors.ConnectionClosed
                        )
                        if call == calls:
                            if ended and not retried:
                                # Renewals failed while Redis was down (the client
                                # stops trying after a few): once more, connected anew.
                                retried = True
                                call -= 1
                            else:
                                last_ok.append(False)
                        if ended:
                            break
                        continue
                    assert result.content[0].text == text
                    answered += 1
                    if call == calls:
                        last_ok.append(True)
                    if answered + len(failures) >= calls * LOAD_CLIENTS:
                        halfway.set()

    async def stop_and_restart() -> None:
        await halfway.wait()
        stack.redis.stop()
        await anyio.sleep(1)
        await stack.redis.start()
        await anyio.sleep(1)  # the workers reconnect
        back.set()

    with anyio.fail_after(240):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(stop_and_restart)
            for number in range(LOAD_CLIENTS):
                task_group.start_soon(run_client, "2025-11-25", number)
                task_group.start_soon(run_client, "2026-07-28", number)
    # Every call answered, its own answer, or failed with a typed error (a last call
    # may have been tried twice).
    assert answered + len(failures) >= 2 * LOAD_CLIENTS * calls
    # Once Redis was back, every client's last call
    # was answered (the handshake-era ones in new sessions: Redis restarted empty).
    assert last_ok == [True] * (2 * LOAD_CLIENTS)
