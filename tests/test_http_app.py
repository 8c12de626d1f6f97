"""The ASGI app's eras, streams and lifetime, over real HTTP (uvicorn in this process,
httpx as a plain HTTP client): 2026-07-28 requests standing alone (JSON, SSE, header
checks, status codes), handshake sessions (JSON and SSE answers, the standalone stream,
resumption from ``Last-Event-ID``, DELETE), sessions turned off, the 2024-11-05
HTTP+SSE endpoints, mounting inside Starlette, and two uvicorn workers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from typing import Any

import anyio
import httpx
import pytest

from mcpspec.runtime.connection import RequestContext, Server
from mcpspec.runtime.connection.http import http_app
from tests.http_app_kit import (
    ACCEPT,
    META,
    STATELESS,
    app_client,
    build_server,
    initialize,
    request,
    sse_messages,
    stateless_call,
    stateless_headers,
)
from tests.http_kit import free_port, serve_app, wait_listening

pytestmark = pytest.mark.anyio


#: uvicorn runs on asyncio.
ANYIO_BACKENDS = ("asyncio",)


# -- 2026-07-28 ----------------------------------------------------------------------------------


async def test_stateless_call_answers_json() -> None:
    async with app_client() as client:
        response = await client.post(
            "/mcp",
            json=stateless_call("echo", {"text": "hi"}),
            headers=stateless_headers("tools/call", "echo"),
        )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in response.headers
    assert response.json()["result"]["content"] == [{"type": "text", "text": "hi"}]


async def test_stateless_progress_comes_on_an_sse_stream() -> None:
    async with app_client() as client:
        body = stateless_call("steps", {"count": 3})
        body["params"]["_meta"]["progressToken"] = "p"
        response = await client.post(
            "/mcp", json=body, headers=stateless_headers("tools/call", "steps")
        )
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["x-accel-buffering"] == "no"
    messages = sse_messages(response.text)
    assert [m.get("method") for m in messages] == ["notifications/progress"] * 3 + [None]
    assert messages[-1]["result"]["content"][0]["text"] == "3 steps"
    assert "id:" not in response.text  # no resumability in 2026-07-28


@pytest.mark.parametrize(
    ("header", "value"),
    [("mcp-name", "add"), ("mcp-method", "tools/list"), ("mcp-protocol-version", None)],
)
async def test_stateless_header_mismatch_is_400_32020(header: str, value: str | None) -> None:
    headers = stateless_headers("tools/call", "echo")
    if value is None:
        del headers[header]
        headers["mcp-method"] = "tools/call"
    else:
        headers[header] = value
    async with app_client() as client:
        response = await client.post(
            "/mcp", json=stateless_call("echo", {"text": "hi"}, 7), headers=headers
        )
    if header == "mcp-protocol-version":
        # Without the version header the body's _meta still marks the era.
        assert response.status_code == 400
    else:
        assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32020
    assert response.json()["id"] == 7


async def test_stateless_unsupported_version_is_400_32022() -> None:
    server, _ = build_server()
    server = Server("old-only", "1", revisions=["2025-11-25", "2026-07-28"])
    body = stateless_call("echo", {"text": "x"})
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01"
    headers = stateless_headers("tools/call", "echo")
    headers["mcp-protocol-version"] = "2026-07-28"
    async with app_client(server) as client:
        response = await client.post("/mcp", json=body, headers=headers)
    assert response.status_code in (400,)
    error = response.json()["error"]
    assert error["code"] in (-32022, -32020)


async def test_stateless_unknown_method_is_404_32601() -> None:
    async with app_client() as client:
        response = await client.post(
            "/mcp",
            json=request("no/such", {"_meta": dict(META)}),
            headers=stateless_headers("no/such"),
        )
    assert response.status_code == 404
    assert response.json()["error"]["code"] == -32601


async def test_stateless_get_and_delete_are_405() -> None:
    async with app_client() as client:
        for method in ("GET", "DELETE"):
            response = await client.request(
                method,
                "/mcp",
                headers={**stateless_headers("tools/list"), "mcp-session-id": "whatever"},
            )
            assert response.status_code == 405


async def test_closing_a_stateless_stream_cancels_the_handler() -> None:
    server, seen = build_server()
    body = stateless_call("hold", {})
    body["params"]["_meta"]["progressToken"] = "p"
    async with app_client(server) as client:
        async with client.stream(
            "POST",
            "/mcp",
            json=body,
            headers=stateless_headers("tools/call", "hold"),
        ) as response:
            assert response.headers["content-type"] == "text/event-stream"
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    break  # the progress notification: the handler is running
        with anyio.fail_after(10):
            await seen["cancelled"].wait()


async def test_a_task_left_behind_sends_nothing_on_a_later_request() -> None:
    # A 2026-07-28 connection carries one POST after another, of any client. A handler
    # that leaves a task behind holding its context: what that task sends once its
    # request has ended must not go out on the response of the request that has the
    # connection by then. It finds the connection closed, as it would between POSTs.
    server = Server("late-test", "1.0")
    late: dict[str, Any] = {name: anyio.Event() for name in ("release", "sent", "running", "end")}
    left_behind: set[asyncio.Task[None]] = set()

    @server.tool()
    async def spawn(ctx: RequestContext) -> str:
        """Leave a task behind that logs when released."""

        async def log_later() -> None:
            await late["release"].wait()
            try:
                await ctx.log("info", "from the first request")
                late["outcome"] = "sent"
            except Exception as exc:
                late["outcome"] = type(exc).__name__
            late["sent"].set()

        left_behind.add(asyncio.get_running_loop().create_task(log_later()))
        return "spawned"

    @server.tool()
    async def wait(ctx: RequestContext) -> str:
        """Log, then wait until the test ends it."""
        await ctx.log("info", "from the second request")
        late["running"].set()
        await late["end"].wait()
        return "ended"

    def call(name: str, request_id: int) -> dict[str, Any]:
        body = stateless_call(name, {}, request_id)
        body["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = "debug"
        return body

    async with app_client(server) as client:
        first = await client.post(
            "/mcp", json=call("spawn", 1), headers=stateless_headers("tools/call", "spawn")
        )
        assert first.json()["result"]["content"][0]["text"] == "spawned"
        second: dict[str, httpx.Response] = {}

        async def post_second() -> None:
            second["response"] = await client.post(
                "/mcp", json=call("wait", 2), headers=stateless_headers("tools/call", "wait")
            )

        with anyio.fail_after(10):
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(post_second)
                await late["running"].wait()
                late["release"].set()
                await late["sent"].wait()
                late["end"].set()
    messages = sse_messages(second["response"].text)
    assert [m.get("params", {}).get("data") for m in messages[:-1]] == ["from the second request"]
    assert messages[-1]["result"]["content"][0]["text"] == "ended"
    assert late["outcome"] == "ConnectionClosed"


async def test_subscriptions_listen_streams_changes() -> None:
    server, _ = build_server()
    async with app_client(server, keepalive_seconds=0.2) as client:
        listen = request(
            "subscriptions/listen",
            {"notifications": {"toolsListChanged": True}, "_meta": dict(META)},
            request_id="listen",  # type: ignore[arg-type]
        )
        async with client.stream(
            "POST", "/mcp", json=listen, headers=stateless_headers("subscriptions/listen")
        ) as response:
            assert response.headers["content-type"] == "text/event-stream"
            lines = response.aiter_lines()
            methods: list[str] = []
            keepalive = False
            async for line in lines:
                if line.startswith(":"):
                    keepalive = True
                if not line.startswith("data:"):
                    if keepalive and methods == ["notifications/subscriptions/acknowledged"]:
                        touched = await client.post(
                            "/mcp",
                            json=stateless_call("touch", {}, 2),
                            headers=stateless_headers("tools/call", "touch"),
                        )
                        assert touched.json()["result"]["content"][0]["text"] == "touched"
                        methods.append("touched")
                    continue
                methods.append(json.loads(line[5:])["method"])
                if methods[-1] == "notifications/tools/list_changed":
                    break
    assert methods == [
        "notifications/subscriptions/acknowledged",
        "touched",
        "notifications/tools/list_changed",
    ]
    assert keepalive


# -- handshake eras ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
async def test_session_round_trip(version: str) -> None:
    async with app_client() as client:
        headers = await initialize(client, version)
        assert len(headers["mcp-session-id"]) >= 32
        response = await client.post(
            "/mcp",
            json=request("tools/call", {"name": "echo", "arguments": {"text": "hi"}}, 2),
            headers=headers,
        )
        assert response.status_code == 200
        assert response.json()["result"]["content"][0]["text"] == "hi"
        # A request without the session id, or with an unknown one.
        missing = {k: v for k, v in headers.items() if k != "mcp-session-id"}
        assert (
            await client.post("/mcp", json=request("tools/list"), headers=missing)
        ).status_code == 400
        unknown = {**headers, "mcp-session-id": "nope"}
        assert (
            await client.post("/mcp", json=request("tools/list"), headers=unknown)
        ).status_code == 404
        # DELETE ends it.
        assert (await client.delete("/mcp", headers=headers)).status_code == 200
        after = await client.post("/mcp", json=request("tools/list", None, 3), headers=headers)
        assert after.status_code == 404


async def test_session_progress_is_resumable_from_last_event_id() -> None:
    async with app_client() as client:
        headers = await initialize(client)
        body = request(
            "tools/call",
            {"name": "steps", "arguments": {"count": 2}, "_meta": {"progressToken": 1}},
            5,
        )
        response = await client.post("/mcp", json=body, headers=headers)
        assert response.headers["content-type"] == "text/event-stream"
        text = response.text
        # 2025-11-25: a priming event (an id, empty data, retry) opens the stream.
        first = text.split("\n\n")[0]
        assert "retry: 1000" in first and first.startswith("id: ")
        ids = [line[4:] for line in text.splitlines() if line.startswith("id: ")]
        assert len(ids) == 4 and len(set(ids)) == 4  # priming, two progress, the answer
        # Resume after the first progress event: the rest of that stream only.
        resumed = await client.get("/mcp", headers={**headers, "last-event-id": ids[1]})
        messages = sse_messages(resumed.text)
        assert [m.get("method") for m in messages] == ["notifications/progress", None]
        assert messages[-1]["id"] == 5
        # An unknown id is a bad request; 404 would say the session is gone.
        unknown = await client.get("/mcp", headers={**headers, "last-event-id": "nope.1"})
        assert unknown.status_code == 400


async def test_standalone_stream_carries_notifications_about_no_request() -> None:
    server, _ = build_server()
    async with app_client(server) as client:
        headers = await initialize(client)
        async with client.stream("GET", "/mcp", headers=headers) as stream:
            assert stream.status_code == 200
            second = await client.get("/mcp", headers=headers)
            assert second.status_code == 409  # one standalone stream a session
            async with anyio.create_task_group() as task_group:

                async def notify() -> None:
                    await server.notify_tools_changed()

                task_group.start_soon(notify)
                async for line in stream.aiter_lines():
                    if line.startswith("data:"):
                        message = json.loads(line[5:])
                        break
    assert message["method"] == "notifications/tools/list_changed"


async def _next_message(stream: Any) -> dict[str, Any]:
    """The next message of an open SSE response (``stream``: httpx's)."""
    with anyio.fail_after(10):
        async for line in stream.aiter_lines():
            if line.startswith("data:"):
                message: dict[str, Any] = json.loads(line[5:])
                return message
    raise AssertionError("the stream ended")


@pytest.mark.parametrize("caller", ["2025-11-25", STATELESS])
async def test_a_change_sent_from_a_handler_reaches_each_session_on_its_own_streams(
    caller: str,
) -> None:
    # A tool called by A announces a change to every client. Session B's notification
    # must leave on B's standalone stream, not on the response of A's POST (whose task
    # sent it). A change is about no request, so A's own (2025-11-25) leaves on A's
    # standalone stream too, and A's response carries only the answer; a 2026-07-28
    # request gets none (no subscriptions/listen is open).
    server, _ = build_server()
    async with app_client(server) as client, contextlib.AsyncExitStack() as streams:
        if caller == STATELESS:
            first = stateless_headers("tools/call", "touch")
            call = stateless_call("touch", {}, 2)
            own = None
        else:
            first = await initialize(client, caller)
            call = request("tools/call", {"name": "touch", "arguments": {}}, 2)
            own = await streams.enter_async_context(client.stream("GET", "/mcp", headers=first))
            assert own.status_code == 200
        second = await initialize(client)
        other = await streams.enter_async_context(client.stream("GET", "/mcp", headers=second))
        assert other.status_code == 200
        response = await client.post("/mcp", json=call, headers=first)
        assert (await _next_message(other))["method"] == "notifications/tools/list_changed"
        if own is not None:
            assert (await _next_message(own))["method"] == "notifications/tools/list_changed"
    if response.headers["content-type"] == "text/event-stream":
        messages = sse_messages(response.text)
    else:
        messages = [response.json()]
    assert [m.get("method") for m in messages] == [None]
    assert messages[-1]["result"]["content"][0]["text"] == "touched"


async def test_json_response_mode_never_streams() -> None:
    async with app_client(json_response=True) as client:
        headers = await initialize(client)
        body = request(
            "tools/call",
            {"name": "steps", "arguments": {"count": 2}, "_meta": {"progressToken": 1}},
            5,
        )
        response = await client.post("/mcp", json=body, headers=headers)
    assert response.headers["content-type"] == "application/json"
    assert response.json()["result"]["content"][0]["text"] == "2 steps"


async def test_batch_of_2025_03_26() -> None:
    async with app_client() as client:
        headers = await initialize(client, "2025-03-26")
        batch = [
            request("tools/call", {"name": "echo", "arguments": {"text": "a"}}, 1),
            request("tools/call", {"name": "echo", "arguments": {"text": "b"}}, 2),
        ]
        response = await client.post("/mcp", json=batch, headers=headers)
    answers = {m["id"]: m["result"]["content"][0]["text"] for m in response.json()}
    assert answers == {1: "a", 2: "b"}


async def test_without_sessions_each_post_stands_alone() -> None:
    async with app_client(sessions=False) as client:
        headers = await initialize(client)
        assert "mcp-session-id" not in headers
        response = await client.post(
            "/mcp",
            json=request("tools/call", {"name": "echo", "arguments": {"text": "x"}}, 9),
            headers=headers,
        )
    assert response.json()["result"]["content"][0]["text"] == "x"


async def test_invalid_json_is_400_with_a_parse_error() -> None:
    async with app_client() as client:
        response = await client.post(
            "/mcp",
            content=b"{not json",
            headers={"accept": ACCEPT, "content-type": "application/json"},
        )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700


# -- other transports and hosts ------------------------------------------------------------------


async def test_legacy_http_sse_endpoints() -> None:
    server, _ = build_server()
    async with (
        app_client(server, legacy_sse=True) as client,
        client.stream("GET", "/sse", headers={"accept": "text/event-stream"}) as stream,
    ):
        lines = stream.aiter_lines()
        endpoint = None
        async for line in lines:
            if line.startswith("data:"):
                endpoint = line[5:].strip()
                break
        assert endpoint is not None and endpoint.startswith("/messages?session_id=")
        init = request(
            "initialize",
            {
                "protocolVersion": "2024-11-05",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        )
        posted = await client.post(endpoint, json=init)
        assert posted.status_code == 202
        async for line in lines:
            if line.startswith("data:"):
                answer = json.loads(line[5:])
                break
    assert answer["result"]["protocolVersion"] == "2024-11-05"


async def test_mounted_inside_starlette() -> None:
    from starlette.applications import Starlette
    from starlette.routing import Mount

    server, _ = build_server()
    app = http_app(server)
    host = Starlette(routes=[Mount("/api", app=app)])
    async with (
        app.running(),
        serve_app(host) as base,
        httpx.AsyncClient(base_url=base + "/api", timeout=30) as client,
    ):
        headers = await initialize(client)
        response = await client.post(
            "/mcp",
            json=request("tools/call", {"name": "echo", "arguments": {"text": "m"}}, 2),
            headers=headers,
        )
    assert response.json()["result"]["content"][0]["text"] == "m"


async def test_two_uvicorn_workers_serve_stateless_requests() -> None:
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "tests.peers.http_app:app",
            "--workers",
            "2",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        stdin=subprocess.DEVNULL,
    )
    try:
        await wait_listening(port, process)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            pids: set[int] = set()
            # The second worker may still be starting when the first listens: ask until
            # both answered (or enough rounds that one worker alone is no chance).
            for round_ in range(400):
                if len(pids) == 2:
                    break
                response = await client.post(
                    "/mcp",
                    json=stateless_call("pid", {}, round_),
                    headers={**stateless_headers("tools/call", "pid"), "connection": "close"},
                )
                assert response.status_code == 200
                pids.add(int(response.json()["result"]["content"][0]["text"]))
        assert len(pids) == 2  # both workers answered, each request on its own
    finally:
        process.terminate()
        process.wait(timeout=20)
