"""The tasks extension (io.modelcontextprotocol/tasks, SEP-2663) over 2026-07-28:
declared by both sides, tools/call answered with CreateTaskResult, tasks/get,
tasks/update, tasks/cancel, and -32021 for a client that did not declare it."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest

from mcpspec import ext_tasks
from mcpspec.runtime.connection import (
    Client,
    RequestContext,
    RequestError,
    Server,
)
from mcpspec.runtime.connection.client_tasks import TaskHandle
from mcpspec.runtime.connection.http import http_app
from mcpspec.runtime.connection.task_store import MemoryTaskStore, TaskRecord, TaskStore
from mcpspec.runtime.connection.tasks import TaskSettings
from mcpspec.runtime.errors import ErrorCode
from mcpspec.runtime.extensions import TASKS, extended_codec, known_extensions
from mcpspec.runtime.session.misuse import RevisionError
from tests.tasks_kit import add_task_tools, add_two_names

from .http_kit import serve_app

pytestmark = pytest.mark.anyio

REVISION = "2026-07-28"
GUARD = 20
NAME = {"type": "object", "properties": {"name": {"type": "string"}}}
DECLARED = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}}}


def build() -> tuple[Server, dict[str, Any]]:
    server = Server("tasks")
    seen = add_task_tools(server)

    @server.tool(task="required")
    async def only_task() -> str:
        return "ran"

    @server.tool()
    async def greet(name: str) -> str:
        return f"Hello, {name}!"

    add_two_names(server)
    return server, seen


def declared() -> dict[str, Any]:
    return {k: dict(v) for k, v in DECLARED.items()}


async def call(client: Client, name: str, meta: dict[str, Any] | None = None) -> Any:
    types = client.types
    params = types.CallToolRequestParams(name=name, arguments={}, meta=meta or {})
    return await client.request(types.CallToolRequest(id=client.next_id(), params=params))


async def get(client: Client, task_id: str, meta: dict[str, Any] | None = None) -> Any:
    params = ext_tasks.GetTaskRequestParams(task_id=task_id, meta=meta or declared())
    return await client.request(ext_tasks.GetTaskRequest(id=client.next_id(), params=params))


async def cancel(client: Client, task_id: str) -> Any:
    params = ext_tasks.CancelTaskRequestParams(task_id=task_id, meta=declared())
    return await client.request(ext_tasks.CancelTaskRequest(id=client.next_id(), params=params))


async def settled(client: Client, task_id: str) -> Any:
    with anyio.fail_after(GUARD):
        while True:
            task = await get(client, task_id)
            if task.status in ("completed", "failed", "cancelled"):
                return task
            await anyio.sleep(0.01)


async def test_the_server_declares_the_extension_and_no_core_tasks() -> None:
    server, _ = build()
    async with Client.in_memory(server, mode=REVISION) as client:
        capabilities = msgspec.to_builtins(client.capabilities)
        assert capabilities["extensions"] == {TASKS: {}}
        assert "tasks" not in capabilities
    bare = Server("bare")

    @bare.tool()
    async def one() -> str:
        return "1"

    assert bare.extensions == frozenset()
    assert "extensions" not in bare.capabilities


async def test_a_declaring_client_gets_a_task_and_its_result_inlined() -> None:
    server, seen = build()
    async with Client.in_memory(server, mode=REVISION) as client:
        created = await call(client, "hold", declared())
        assert isinstance(created, ext_tasks.CreateTaskResult)
        wire = msgspec.to_builtins(created)
        assert wire["resultType"] == "task" and wire["status"] == "working"
        assert {"ttl", "pollInterval", "task", "result"}.isdisjoint(wire)
        working = await get(client, created.task_id)
        assert working.status == "working" and working.result is msgspec.UNSET
        seen["gate"].set()
        done = await settled(client, created.task_id)
        assert done.status == "completed"
        assert done.result["content"] == [{"type": "text", "text": "released"}]
        assert "io.modelcontextprotocol/related-task" not in done.result.get("_meta", {})


async def test_a_tool_error_completes_and_a_protocol_error_fails() -> None:
    server, _ = build()
    async with Client.in_memory(server, mode=REVISION) as client:
        broken = await settled(client, (await call(client, "broken", declared())).task_id)
        assert broken.status == "completed" and broken.result["isError"] is True
        refused = await settled(client, (await call(client, "refused", declared())).task_id)
        assert refused.status == "failed" and refused.result is msgspec.UNSET
        assert refused.error.code == ErrorCode.INVALID_PARAMS


async def test_cancel_acknowledges_stops_and_is_idempotent() -> None:
    server, seen = build()
    async with Client.in_memory(server, mode=REVISION) as client:
        created = await call(client, "hold", declared())
        ack = await cancel(client, created.task_id)
        assert msgspec.to_builtins(ack).keys() <= {"resultType", "_meta"}
        assert (await settled(client, created.task_id)).status == "cancelled"
        with anyio.fail_after(GUARD):
            while not seen["cancelled"]:
                await anyio.sleep(0.01)
        again = await cancel(client, created.task_id)
        assert isinstance(again, ext_tasks.CancelTaskResult)
        with pytest.raises(RequestError) as caught:
            await cancel(client, "no-such-task")
        assert caught.value.error.code == ErrorCode.INVALID_PARAMS
        with pytest.raises(RequestError) as caught:
            await get(client, "no-such-task")
        assert caught.value.error.code == ErrorCode.INVALID_PARAMS


async def test_a_client_that_did_not_declare_it_gets_no_task() -> None:
    server, _ = build()
    async with Client.in_memory(server, mode=REVISION) as client:
        # A sync tool stays sync for a declaring client.
        types = client.types
        params = types.CallToolRequestParams(name="greet", arguments={"name": "W"}, meta=declared())
        result = await client.request(types.CallToolRequest(id=client.next_id(), params=params))
        assert msgspec.to_builtins(result)["resultType"] == "complete"
        assert result.content[0].text == "Hello, W!"
        with pytest.raises(RequestError) as caught:
            await call(client, "only_task")
        error = caught.value.error
        assert error.code == ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY
        assert error.data == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
        created = await call(client, "only_task", declared())
        with pytest.raises(RequestError) as caught:
            await get(client, created.task_id, meta={"x": 1})
        assert caught.value.error.code == ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY


async def test_an_optional_task_tool_runs_plainly_for_a_client_without_it() -> None:
    server, seen = build()
    seen["gate"].set()
    async with Client.in_memory(server, mode=REVISION) as client:
        result = await call(client, "hold")
        assert result.content[0].text == "released"


def test_the_extension_joins_only_the_revision_it_is_for() -> None:
    import mcpspec.v2025_11_25 as older
    import mcpspec.v2026_07_28 as newest

    assert extended_codec(older.codec, frozenset({TASKS})) is older.codec
    codec = extended_codec(newest.codec, frozenset({TASKS}))
    assert codec is extended_codec(newest.codec, frozenset({TASKS}))  # built once
    assert "tasks/update" in codec.requests and "tasks/update" not in newest.codec.requests
    assert "tasks/list" not in codec.requests and "tasks/result" not in codec.requests
    with pytest.raises(ValueError, match="unknown extensions"):
        known_extensions(["com.example/other"])


async def update(client: Client, task_id: str, responses: dict[str, Any]) -> Any:
    params = ext_tasks.UpdateTaskRequestParams(
        task_id=task_id, input_responses=responses, meta=declared()
    )
    return await client.request(ext_tasks.UpdateTaskRequest(id=client.next_id(), params=params))


async def asking(client: Client, task_id: str) -> Any:
    with anyio.fail_after(GUARD):
        while True:
            task = await get(client, task_id)
            if task.status == "input_required":
                return task
            assert task.status == "working", task
            await anyio.sleep(0.01)


async def test_a_task_asks_in_its_input_requests_and_resumes_on_update() -> None:
    server, _ = build()
    async with Client.in_memory(server, mode=REVISION, capabilities={"elicitation": {}}) as client:
        meta = declared()
        meta["io.modelcontextprotocol/clientCapabilities"]["elicitation"] = {}
        created = await call(client, "two_names", meta)
        waiting = await asking(client, created.task_id)
        requests = msgspec.to_builtins(waiting.input_requests)
        assert sorted(requests) == ["first", "second"]
        assert requests["first"]["method"] == "elicitation/create"
        answer = {"action": "accept", "content": {"name": "Ada"}}
        ack = await update(client, created.task_id, {"first": answer, "never-asked": answer})
        assert isinstance(ack, ext_tasks.UpdateTaskResult)
        # Partly answered: still waiting, on the other question alone.
        waiting = await asking(client, created.task_id)
        assert sorted(msgspec.to_builtins(waiting.input_requests)) == ["second"]
        await update(client, created.task_id, {"second": {**answer, "content": {"name": "Bo"}}})
        done = await settled(client, created.task_id)
        assert done.status == "completed"
        assert done.result["content"][0]["text"] == "Ada and Bo"


async def test_the_client_runs_a_task_of_the_extension_with_a_handle() -> None:
    server, seen = build()
    async with Client.in_memory(server, mode=REVISION) as client:
        handle = await client.call_tool("hold", {}, task=True)
        assert handle.extension and handle.task.status == "working"
        assert (await handle.status()).status == "working"
        seen["gate"].set()
        result = await handle.result(timeout=GUARD)
        assert result.text == "released"
        # The tool's error is a completed task's isError result; a protocol error raises.
        broken = await client.call_tool("broken", {}, task=True)
        assert (await broken.result(timeout=GUARD)).is_error
        refused = await client.call_tool("refused", {}, task=True)
        with pytest.raises(RequestError) as caught:
            await refused.result(timeout=GUARD)
        assert caught.value.error.code == ErrorCode.INVALID_PARAMS


async def test_the_client_cancels_and_answers_the_questions_of_a_task() -> None:
    server, _ = build()

    async def elicit(params: Any, context: Any) -> Any:
        return {"action": "accept", "content": {"name": params.message.rstrip("?")}}

    async with Client.in_memory(server, mode=REVISION, elicitation=elicit) as client:
        asking = await client.call_tool("two_names", {}, task=True)
        assert (await asking.result(timeout=GUARD)).text == "first and second"
        held = await client.call_tool("hold", {}, task=True)
        assert isinstance(await held.cancel(), ext_tasks.CancelTaskResult)
        assert (await held.wait(timeout=GUARD)).status == "cancelled"
        with pytest.raises(RequestError):
            await held.result(timeout=GUARD)


async def test_a_task_call_needs_the_server_to_declare_the_extension() -> None:
    bare = Server("bare")

    @bare.tool()
    async def one() -> str:
        return "1"

    async with Client.in_memory(bare, mode=REVISION) as client:
        with pytest.raises(RevisionError, match="does not declare"):
            await client.call_tool("one", {}, task=True)


async def test_a_result_given_at_once_is_a_completed_task() -> None:
    """A server may answer a declaring call with the result itself."""
    server, _ = build()
    async with Client.in_memory(server, mode=REVISION) as client:
        types = client.types
        answer = types.CallToolResult(content=[types.TextContent(text="now")])
        handle = TaskHandle.of_extension(client, answer)
        assert handle.done and handle.extension
        assert (await handle.result(timeout=GUARD)).text == "now"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_task_of_the_extension_over_stateless_http() -> None:
    """Each request on a connection of its own: the task outlives the call that
    created it, and is fetched, answered and cancelled by later ones (Mcp-Name
    carrying its id)."""
    server, seen = build()

    async def elicit(params: Any, context: Any) -> Any:
        return {"action": "accept", "content": {"name": "http"}}

    async with (
        serve_app(http_app(server)) as base,
        Client.http(f"{base}/mcp", mode=REVISION, elicitation=elicit) as client,
    ):
        handle = await client.call_tool("hold", {}, task=True)
        seen["gate"].set()
        assert (await handle.result(timeout=GUARD)).text == "released"
        asking = await client.call_tool("two_names", {}, task=True)
        assert (await asking.result(timeout=GUARD)).text == "http and http"
        seen["gate"] = anyio.Event()
        held = await client.call_tool("hold", {}, task=True)
        await held.cancel()
        assert (await held.wait(timeout=GUARD)).status == "cancelled"


class _StatusLog(MemoryTaskStore):
    """A memory store noting every status a task is given."""

    def __init__(self) -> None:
        super().__init__()
        self.statuses: list[str] = []

    async def update(self, record: TaskRecord) -> bool:
        self.statuses.append(record.status)
        return await super().update(record)


def asks_first(store: TaskStore | None = None) -> tuple[Server, dict[str, int]]:
    """A server whose task tool asks the user's name in the request's rounds, then
    becomes a task (``ctx.start_task()``); ``runs`` counts each part's runs."""
    server = Server(
        "tasks", tasks=TaskSettings(store=store if store is not None else MemoryTaskStore())
    )
    runs = {"before": 0, "after": 0}

    @server.tool(task="optional", ask_before_task=True)
    async def greet_later(ctx: RequestContext) -> str:
        runs["before"] += 1
        answer = await ctx.elicit(message="name?", requested_schema=NAME, key="name")
        ctx.start_task()
        runs["after"] += 1
        return f"Hello, {answer.content['name']}!"

    return server, runs


async def test_a_tool_that_asks_before_its_task_asks_in_rounds_then_creates_it() -> None:
    store = _StatusLog()
    server, runs = asks_first(store)
    asked: list[str] = []

    async def elicit(params: Any, context: Any) -> Any:
        asked.append(params.message)
        return {"action": "accept", "content": {"name": "Ada"}}

    async with (
        server.running(),
        Client.in_memory(server, mode=REVISION, elicitation=elicit) as client,
    ):
        # Round one asks (InputRequiredResult, no task); round two, answered, is the
        # CreateTaskResult; the task runs the handler again with the answer given.
        handle = await client.call_tool("greet_later", {}, task=True)
        assert handle.extension and handle.task_id
        assert (await handle.result(timeout=GUARD)).text == "Hello, Ada!"
    assert asked == ["name?"]
    assert runs == {"before": 3, "after": 1}
    # The task itself never waited on the client.
    assert "input_required" not in store.statuses and store.statuses[-1] == "completed"


async def test_before_its_task_a_call_is_a_plain_one_and_2025_11_25_starts_at_once() -> None:
    server, runs = asks_first()

    async def elicit(params: Any, context: Any) -> Any:
        return {"action": "accept", "content": {"name": "Bo"}}

    async with server.running():
        # Without the extension declared: a plain call, start_task() does nothing.
        async with Client.in_memory(server, mode=REVISION, elicitation=elicit) as client:
            assert (await client.call_tool("greet_later", {})).text == "Hello, Bo!"
        assert runs == {"before": 2, "after": 1}
        # 2025-11-25 has no rounds: the task starts at once and asks as a task.
        async with Client.in_memory(server, mode="2025-11-25", elicitation=elicit) as client:
            handle = await client.call_tool("greet_later", {}, task=True)
            assert (await handle.result(timeout=GUARD)).text == "Hello, Bo!"
        assert runs == {"before": 3, "after": 2}


def test_ask_before_task_is_for_a_task_tool() -> None:
    server = Server("tasks")
    with pytest.raises(ValueError, match="ask_before_task is for a tool that runs as a task"):

        @server.tool(ask_before_task=True)
        async def plain() -> str:
            return "never"
