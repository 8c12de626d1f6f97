"""Tasks (2025-11-25): a tool declared with ``task=`` runs as a task when the client
asks, in the server's own task group; ``tasks/get``, ``tasks/result``, ``tasks/list``
and ``tasks/cancel`` answer for it; the client's ``TaskHandle``; the store's bounds."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import httpx
import msgspec
import pytest

from mcpspec.runtime import Limits
from mcpspec.runtime.connection import (
    Client,
    Peer,
    RequestContext,
    RequestError,
    Server,
    memory_pair,
)
from mcpspec.runtime.connection.client_tasks import TaskHandle
from mcpspec.runtime.connection.http import AuthSettings, HttpSettings, Principal, http_app
from mcpspec.runtime.connection.peer import MAX_FOLLOWED
from mcpspec.runtime.connection.task_store import MemoryTaskStore, TaskRecord, TaskStoreFull
from mcpspec.runtime.connection.tasks import RELATED_TASK, TaskSettings
from mcpspec.runtime.session.client import ClientSession
from mcpspec.runtime.session.misuse import LocalProtocolError
from tests.tasks_kit import add_task_tools

from .http_app_kit import initialize, request, sse_messages
from .http_kit import ACCEPT_BOTH, JSON, rpc, serve_app, serving
from .http_kit import initialize as kit_initialize

pytestmark = pytest.mark.anyio

REVISION = "2025-11-25"
GUARD = 20


class Point(msgspec.Struct):
    x: int
    y: int


def build(**options: Any) -> tuple[Server, dict[str, Any]]:
    """A server with task tools; ``seen`` records what they saw."""
    server = Server("tasks", **options)
    seen = add_task_tools(server)

    @server.tool(task="optional")
    async def echo(text: str) -> str:
        return text

    @server.tool(task="optional")
    async def point(x: int) -> Point:
        return Point(x, x + 1)

    @server.tool(task="required")
    async def only_task(text: str) -> str:
        return text.upper()

    @server.tool()
    async def plain() -> str:
        return "plain"

    @server.tool(task="optional")
    async def ask(ctx: RequestContext) -> str:
        answer = await ctx.elicit(
            message="name?", requested_schema={"properties": {"name": {"type": "string"}}}
        )
        return f"hello {answer.content['name']}"

    @server.tool(task="optional")
    async def big(size: int) -> str:
        return "x" * size

    return server, seen


def wire(result: Any) -> Any:
    out = msgspec.to_builtins(result)
    out.pop("_meta", None)
    return out


async def test_capabilities_and_tool_execution_follow_the_tools() -> None:
    server, _ = build()
    async with Client.in_memory(server, mode=REVISION) as client:
        tasks = msgspec.to_builtins(client.capabilities)["tasks"]
        assert tasks == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        listed = {tool.name: msgspec.to_builtins(tool) for tool in await client.list_tools()}
        assert listed["echo"]["execution"] == {"taskSupport": "optional"}
        assert listed["only_task"]["execution"] == {"taskSupport": "required"}
        assert "execution" not in listed["plain"]
    # A revision without tasks sees neither, and a required tool runs plainly there.
    async with Client.in_memory(server, mode="2025-06-18") as client:
        assert msgspec.to_builtins(client.capabilities).get("tasks") is None
        listed = {tool.name: msgspec.to_builtins(tool) for tool in await client.list_tools()}
        assert "execution" not in listed["echo"]
        assert (await client.call_tool("only_task", {"text": "a"})).text == "A"
    # A server without task tools declares no tasks and answers no tasks/*.
    bare = Server("bare")

    @bare.tool()
    async def one() -> str:
        return "1"

    async with Client.in_memory(bare, mode=REVISION) as client:
        assert msgspec.to_builtins(client.capabilities).get("tasks") is None
        # The client's session does not send what the server did not declare.
        with pytest.raises(LocalProtocolError):
            await client.task("nope").status()


@pytest.mark.parametrize(
    ("name", "arguments"),
    [("echo", {"text": "hi"}), ("point", {"x": 3}), ("broken", {}), ("echo", {"text": 5})],
)
async def test_the_result_is_what_the_plain_call_answers(
    name: str, arguments: dict[str, Any]
) -> None:
    server, _ = build()
    async with Client.in_memory(server, mode=REVISION) as client:
        plain = await client.call_tool(name, arguments)
        handle = await client.call_tool(name, arguments, task=True)
        assert isinstance(handle, TaskHandle)
        final = await handle.wait(timeout=GUARD)
        assert final.status == ("failed" if plain.is_error else "completed")
        result = await handle.result()
        assert wire(result.result) == wire(plain.result)
        assert result.result.meta[RELATED_TASK] == {"taskId": handle.task_id}


async def test_an_error_of_the_call_is_the_error_of_tasks_result() -> None:
    server, _ = build()
    async with Client.in_memory(server, mode=REVISION) as client:
        with pytest.raises(RequestError) as plain:
            await client.call_tool("refused")
        handle = await client.call_tool("refused", task=True)
        assert (await handle.wait(timeout=GUARD)).status == "failed"
        with pytest.raises(RequestError) as tasked:
            await handle.result()
        assert (tasked.value.code, tasked.value.error.message) == (
            plain.value.code,
            plain.value.error.message,
        )


async def test_task_support_is_enforced_with_32601() -> None:
    server, _ = build()
    async with Client.in_memory(server, mode=REVISION) as client:
        with pytest.raises(RequestError) as required:
            await client.call_tool("only_task", {"text": "a"})
        assert required.value.code == -32601
        with pytest.raises(RequestError) as forbidden:
            await client.call_tool("plain", task=True)
        assert forbidden.value.code == -32601
        handle = await client.call_tool("only_task", {"text": "a"}, task=True)
        assert (await handle.result()).text == "A"


async def test_cancel_while_running_and_after_completion() -> None:
    server, seen = build()
    statuses: list[str] = []

    def heard(notification: Any) -> None:
        statuses.append(notification.params.status)

    async with Client.in_memory(server, mode=REVISION, on_notification=heard) as client:
        handle = await client.call_tool("hold", task=True)
        await anyio.sleep(0.05)
        assert (await handle.status()).status == "working"
        cancelled = await handle.cancel()
        assert cancelled.status == "cancelled"
        with anyio.fail_after(GUARD):
            while not seen["cancelled"]:
                await anyio.sleep(0.01)
        assert (await handle.status()).status == "cancelled"
        with pytest.raises(RequestError) as no_result:
            await handle.result()
        assert no_result.value.code == -32602
        # Cancelling a task that ended: -32602, and its status stays.
        with pytest.raises(RequestError) as again:
            await handle.cancel()
        assert again.value.code == -32602
        done = await client.call_tool("echo", {"text": "x"}, task=True)
        await done.wait(timeout=GUARD)
        with pytest.raises(RequestError) as after:
            await done.cancel()
        assert after.value.code == -32602
        assert (await done.status()).status == "completed"
    assert "cancelled" in statuses and "completed" in statuses


async def test_a_task_asking_the_user_is_input_required_until_answered() -> None:
    server, _ = build()
    asked: list[Any] = []
    release = anyio.Event()

    async def elicitation(params: Any, context: Any) -> Any:
        asked.append(params.meta)
        await release.wait()
        return {"action": "accept", "content": {"name": "ann"}}

    async with Client.in_memory(server, mode=REVISION, elicitation=elicitation) as client:
        handle = await client.call_tool("ask", task=True)
        with anyio.fail_after(GUARD):
            while (await handle.status()).status != "input_required":
                await anyio.sleep(0.01)
        assert asked == [{RELATED_TASK: {"taskId": handle.task_id}}]
        release.set()
        assert (await handle.result()).text == "hello ann"
        assert (await handle.status()).status == "completed"


async def test_tasks_list_pages_and_owners() -> None:
    server, _ = build(page_size=2)
    async with (
        Client.in_memory(server, mode=REVISION) as one,
        Client.in_memory(server, mode=REVISION) as other,
    ):
        handles = [await one.call_tool("echo", {"text": str(i)}, task=True) for i in range(5)]
        listed = await one.list_tasks()
        assert [task.task_id for task in listed] == [h.task_id for h in handles]
        # Another session sees none of them, and cannot reach them by id.
        assert await other.list_tasks() == []
        with pytest.raises(RequestError) as foreign:
            await other.task(handles[0].task_id).status()
        assert foreign.value.code == -32602
        # A cursor altered is refused.
        types = one.types
        first = await one.request(types.ListTasksRequest(id=one.next_id()))
        assert first.next_cursor
        forged = types.ListTasksRequest(
            id=one.next_id(),
            params=types.PaginatedRequestParams(cursor=first.next_cursor[:-2] + "AA"),
        )
        with pytest.raises(RequestError) as bad:
            await one.request(forged)
        assert bad.value.code == -32602


async def test_ttl_is_bounded_and_a_task_expires() -> None:
    server, _ = build(tasks=TaskSettings(max_ttl_ms=100, poll_interval_ms=20))
    async with Client.in_memory(server, mode=REVISION) as client:
        handle = await client.call_tool("echo", {"text": "a"}, task=True, ttl=10**9)
        assert handle.task.ttl == 100
        assert handle.task.poll_interval == 20
        await handle.wait(timeout=GUARD)
        await anyio.sleep(0.15)
        with pytest.raises(RequestError) as gone:
            await handle.status()
        assert gone.value.code == -32602
        assert await client.list_tasks() == []


async def test_a_client_polling_faster_than_the_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    server, seen = build(tasks=TaskSettings(poll_interval_ms=100))
    asked = 0
    status = TaskHandle.status

    async def counted(self: TaskHandle, **kwargs: Any) -> Any:
        nonlocal asked
        asked += 1
        return await status(self, **kwargs)

    async with Client.in_memory(server, mode=REVISION) as client:
        handle = await client.call_tool("hold", task=True)
        # Asking much faster than pollInterval is answered every time, the same.
        types = client.types
        for _ in range(200):
            got = await client.request(
                types.GetTaskRequest(
                    id=client.next_id(), params=types.GetTaskRequestParams(task_id=handle.task_id)
                )
            )
            assert got.status == "working" and got.poll_interval == 100
        # The handle itself asks at the interval (woken by the status notification).
        monkeypatch.setattr(TaskHandle, "status", counted)
        started = time.monotonic()
        async with anyio.create_task_group() as group:
            group.start_soon(handle.wait)
            await anyio.sleep(0.5)
            seen["gate"].set()
        elapsed = time.monotonic() - started
        assert handle.task.status == "completed"
        assert asked <= elapsed / 0.1 + 1


async def test_a_thousand_tasks_against_the_store_bounds() -> None:
    store = MemoryTaskStore(max_per_owner=1000, max_tasks=1500)
    server, _ = build(tasks=TaskSettings(store=store), page_size=100)
    async with Client.in_memory(server, mode=REVISION) as client:
        handles = [await client.call_tool("echo", {"text": "t"}, task=True) for _ in range(1000)]
        with pytest.raises(RequestError) as full:
            await client.call_tool("echo", {"text": "t"}, task=True)
        assert full.value.code == -32603 and "task store" in full.value.error.message
        for handle in handles[::100]:
            assert (await handle.result()).text == "t"
        listed = await client.list_tasks()
        assert len(listed) == 1000 and len(store) == 1000
        assert store.bytes < 1000 * 1024
        # Another client still has room of its own, up to the store's total.
        async with Client.in_memory(server, mode=REVISION) as other:
            await other.call_tool("echo", {"text": "t"}, task=True)


async def test_a_result_larger_than_the_message_limit_fails_the_task() -> None:
    server, _ = build(limits=Limits(max_message_bytes=4096))
    async with Client.in_memory(server, mode=REVISION) as client:
        handle = await client.call_tool("big", {"size": 10_000}, task=True)
        final = await handle.wait(timeout=GUARD)
        assert final.status == "failed" and "over the limit" in final.status_message
        with pytest.raises(RequestError) as too_big:
            await handle.result()
        assert too_big.value.code == -32603
        assert too_big.value.error.data["limit"] < 4096 < too_big.value.error.data["size"]
        # The connection goes on.
        assert (await client.call_tool("echo", {"text": "ok"})).text == "ok"


async def test_store_moves_only_forward_and_bounds_bytes() -> None:
    store = MemoryTaskStore(max_bytes=2000)
    now = time.time()
    record = TaskRecord(
        task_id="a",
        owner="o",
        method="tools/call",
        created=now,
        updated=now,
        ttl_ms=None,
        poll_interval_ms=10,
    )
    await store.create(record)
    done = msgspec.structs.replace(record, status="completed", outcome=b'{"result":{}}')
    assert await store.update(done)
    assert not await store.update(msgspec.structs.replace(record, status="working"))
    assert not await store.update(msgspec.structs.replace(record, status="cancelled"))
    assert (await store.get("a")).status == "completed"  # type: ignore[union-attr]
    with pytest.raises(TaskStoreFull):
        await store.create(msgspec.structs.replace(record, task_id="b", outcome=b"x" * 2000))


ANYIO_BACKENDS = ("asyncio", "trio")


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_task_outlives_its_http_request_and_is_fetched_on_another() -> None:
    server, seen = build()
    async with serve_app(http_app(server)) as base:
        async with httpx.AsyncClient(base_url=base, timeout=GUARD) as first:
            headers = await initialize(first, REVISION)
            created = await first.post(
                "/mcp",
                json=request(
                    "tools/call", {"name": "hold", "arguments": {}, "task": {"ttl": 60000}}, 2
                ),
                headers=headers,
            )
            body = (
                created.json()
                if created.headers["content-type"].startswith("application/json")
                else sse_messages(created.text)[-1]
            )
            task_id = body["result"]["task"]["taskId"]
        # The HTTP connection that created it is gone; the task runs on.
        seen["gate"].set()
        async with httpx.AsyncClient(base_url=base, timeout=GUARD) as second:
            fetched = await second.post(
                "/mcp", json=request("tasks/result", {"taskId": task_id}, 3), headers=headers
            )
            text = fetched.text
            answer = (
                json.loads(text)
                if fetched.headers["content-type"].startswith("application/json")
                else sse_messages(text)[-1]
            )
        assert answer["result"]["content"] == [{"type": "text", "text": "released"}]
        assert answer["result"]["_meta"][RELATED_TASK] == {"taskId": task_id}


async def test_the_client_runs_the_servers_sampling_as_a_task() -> None:
    server = Server("asks")
    release = anyio.Event()

    @server.tool()
    async def delegate(ctx: RequestContext) -> str:
        types, peer = ctx.types, ctx.peer
        assert ctx.client_capabilities.tasks.requests.sampling.create_message == {}
        params = types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(text="hi"))],
            max_tokens=5,
            task=types.TaskMetadata(ttl=10**9),
        )
        created = await peer.request(types.CreateMessageRequest(id=peer.next_id(), params=params))
        task_id = created.task.task_id
        assert created.task.ttl <= 60 * 60 * 1000
        get = types.GetTaskRequest(
            id=peer.next_id(), params=types.GetTaskRequestParams(task_id=task_id)
        )
        working = (await peer.request(get)).status
        listed = await peer.request(types.ListTasksRequest(id=peer.next_id()))
        release.set()
        payload = types.GetTaskPayloadRequest(
            id=peer.next_id(), params=types.GetTaskPayloadRequestParams(task_id=task_id)
        )
        result = await peer.request(payload)
        assert result["_meta"][RELATED_TASK] == {"taskId": task_id}
        return f"{working} {len(listed.tasks)} {result['content']['text']}"

    async def sampling(params: Any, context: Any) -> Any:
        await release.wait()
        types = context.types
        return types.CreateMessageResult(
            role="assistant", model="m", content=types.TextContent(text="sampled")
        )

    async with Client.in_memory(server, mode=REVISION, sampling=sampling, tasks=True) as client:
        assert (await client.call_tool("delegate")).text == "working 1 sampled"


PRINCIPALS = {
    "token-alice": Principal("alice", "app", frozenset({"mcp"}), issuer="https://as.example"),
    "token-alice-2": Principal("alice", "app", frozenset({"mcp"}), issuer="https://as.example"),
    "token-bob": Principal("bob", "app", frozenset({"mcp"}), issuer="https://as.example"),
}


def _message(response: httpx.Response) -> Any:
    if response.headers["content-type"].startswith("text/event-stream"):
        return sse_messages(response.text)[-1]
    return response.json()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_principals_tasks_are_reached_from_its_new_sessions_only() -> None:
    server, seen = build()
    auth = AuthSettings(
        resource="http://127.0.0.1/mcp",
        authorization_servers=("https://as.example",),
        verifier=PRINCIPALS.get,
        required_scopes=("mcp",),
    )
    base_headers = {"content-type": JSON, "accept": ACCEPT_BOTH}

    async def session(client: httpx.AsyncClient, token: str) -> dict[str, str]:
        headers = {**base_headers, "authorization": f"Bearer {token}"}
        opened = await client.post("/mcp", json=kit_initialize(), headers=headers)
        assert opened.status_code == 200, opened.text
        headers["mcp-session-id"] = opened.headers["mcp-session-id"]
        headers["mcp-protocol-version"] = REVISION
        await client.post("/mcp", json=rpc(None, "notifications/initialized"), headers=headers)
        return headers

    async def call(
        client: httpx.AsyncClient, headers: dict[str, str], method: str, params: Any
    ) -> Any:
        return _message(await client.post("/mcp", json=rpc(9, method, params), headers=headers))

    app = http_app(server, HttpSettings(auth=auth))
    async with serving(app) as base, httpx.AsyncClient(base_url=base, timeout=GUARD) as client:
        first = await session(client, "token-alice")
        created = await call(
            client, first, "tools/call", {"name": "hold", "arguments": {}, "task": {}}
        )
        task_id = created["result"]["task"]["taskId"]
        # Alice again, on a new session with a refreshed token: her task is there.
        second = await session(client, "token-alice-2")
        listed = await call(client, second, "tasks/list", {})
        assert [task["taskId"] for task in listed["result"]["tasks"]] == [task_id]
        # Bob sees none of it, and cannot reach it by id.
        bob = await session(client, "token-bob")
        assert (await call(client, bob, "tasks/list", {}))["result"]["tasks"] == []
        refused = await call(client, bob, "tasks/cancel", {"taskId": task_id})
        assert refused["error"]["code"] == -32602
        seen["gate"].set()
        fetched = await call(client, second, "tasks/result", {"taskId": task_id})
        assert fetched["result"]["content"] == [{"type": "text", "text": "released"}]


async def test_a_task_outlives_its_connection_until_the_server_stops() -> None:
    server, seen = build()
    store = server.task_manager.store
    async with server.running():
        async with Client.in_memory(server, mode=REVISION) as client:
            handle = await client.call_tool("hold", task=True)
        # The connection is gone; the task runs on in the server's task group.
        await anyio.sleep(0.05)
        record = await store.get(handle.task_id)
        assert record is not None and record.status == "working"
        assert not seen["cancelled"]
    # The server stopped: the task was cancelled and ends failed, saying why.
    record = await store.get(handle.task_id)
    assert record is not None and record.status == "failed"
    assert record.status_message == "the server stopped before the task ended"
    assert seen["cancelled"]


async def test_a_task_needs_the_server_running() -> None:
    server, _ = build()
    client_end, server_end = memory_pair()
    async with server.connect(server_end), Client.over(client_end, mode=REVISION) as client:
        with pytest.raises(RequestError) as refused:
            await client.call_tool("echo", {"text": "a"}, task=True)
        assert refused.value.code == -32603 and "server.running()" in refused.value.error.message


async def test_progress_of_a_task_reaches_the_caller_after_the_task_was_created() -> None:
    """The handler's progress comes after ``CreateTaskResult`` answered the call: the
    caller's ``progress`` still gets it, for the task's lifetime."""
    server = Server("tasks")
    gate = anyio.Event()

    @server.tool(task="optional")
    async def steps(ctx: RequestContext) -> str:
        await gate.wait()
        for step in (1, 2, 3):
            await ctx.report_progress(step, 3, f"step {step}")
        return "done"

    heard: list[tuple[float, str | None]] = []

    async def progress(event: Any) -> None:
        heard.append((event.progress, event.message))

    async with Client.in_memory(server, mode=REVISION) as client:
        handle = await client.call_tool("steps", {}, task=True, progress=progress)
        gate.set()
        with anyio.fail_after(GUARD):
            await handle.wait()
        assert handle.task.status == "completed"
        assert heard == [(1, "step 1"), (2, "step 2"), (3, "step 3")]
        # Followed no longer once the task ended.
        assert not handle._progress


def test_the_requests_followed_for_progress_are_bounded() -> None:
    end, _ = memory_pair()
    peer = Peer(ClientSession(mode=REVISION), end)

    async def heard(event: Any) -> None:
        raise AssertionError("never called")

    for request_id in range(MAX_FOLLOWED + 5):
        peer.follow_progress(request_id, heard)
    assert len(peer.followed) == MAX_FOLLOWED
    assert 0 not in peer.followed and MAX_FOLLOWED + 4 in peer.followed
    peer.unfollow_progress(MAX_FOLLOWED + 4)
    assert MAX_FOLLOWED + 4 not in peer.followed
