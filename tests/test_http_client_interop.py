"""The mcpspec HTTP client (``Client.http``) driving real MCP servers over HTTP, each a
subprocess: the official Python SDK's server (tests/peers/sdk_http_server.py: Streamable
HTTP stateful and stateless, answering with SSE or JSON, and HTTP+SSE) and the reference
``@modelcontextprotocol/server-everything`` (``streamableHttp`` and ``sse``), in ``auto``,
``legacy`` and every revision each server speaks.

``nox -s interop`` installs the peers and runs these (``pytest -m interop``); they skip,
saying why, only when a peer is absent.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from mcpspec.runtime import ProtocolViolation
from mcpspec.runtime.connection import Client, RequestError, RequestTimeout
from mcpspec.runtime.connection.client import ServerRequestContext

pytestmark = [pytest.mark.interop, pytest.mark.anyio]

SDK_HTTP_SERVER = Path(__file__).resolve().parent / "peers" / "sdk_http_server.py"
NODE = os.environ.get("MCPSPEC_NODE")
EVERYTHING = os.environ.get("MCPSPEC_SERVER_EVERYTHING")
HANDSHAKE = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
#: A hang guard for one whole scenario (never a timed assertion).
GUARD = 60
#: Seconds a server has to exit after SIGTERM before it is killed.
STOP_GRACE = 3

needs_sdk = pytest.mark.skipif(
    importlib.util.find_spec("mcp") is None or importlib.util.find_spec("uvicorn") is None,
    reason="the official Python SDK (mcp==2.3.0) or uvicorn is missing: run `nox -s interop`",
)
needs_everything = pytest.mark.skipif(
    not (NODE and EVERYTHING),
    reason="MCPSPEC_NODE and MCPSPEC_SERVER_EVERYTHING are not set: run `nox -s interop`",
)


ANYIO_BACKENDS = ("asyncio",)


class Seen:
    """What reached the client's callbacks and handlers."""

    def __init__(self) -> None:
        self.logs: list[Any] = []
        self.notifications: list[Any] = []
        self.violations: list[ProtocolViolation] = []
        self.asked: list[str] = []

    async def elicit(self, params: Any, ctx: ServerRequestContext) -> Any:
        self.asked.append(ctx.method)
        return {"action": "accept", "content": {"name": "Ada", "check": True, "integer": 7}}

    async def sample(self, params: Any, ctx: ServerRequestContext) -> Any:
        self.asked.append(ctx.method)
        t = ctx.types
        return t.CreateMessageResult(
            role="assistant", model="stub-model", content=t.TextContent(text="sampled!")
        )

    async def roots(self, params: Any, ctx: ServerRequestContext) -> Any:
        self.asked.append(ctx.method)
        return {"roots": [{"uri": "file:///interop", "name": "interop"}]}

    def options(self, mode: str) -> dict[str, Any]:
        return {
            "mode": mode,
            "elicitation": self.elicit,
            "sampling": self.sample,
            "roots": self.roots,
            "on_log": self.logs.append,
            "on_notification": self.notifications.append,
            "on_violation": self.violations.append,
            "open_timeout": GUARD,
        }


async def _drain(stream: anyio.abc.ByteReceiveStream) -> None:
    """Read a server's log to its end (a full pipe would stop the server)."""
    try:
        async for _ in stream:
            pass
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass


@asynccontextmanager
async def launched(
    command: list[str], env: dict[str, str] | None, ready: bytes
) -> AsyncIterator[bytes]:
    """Start a server; yield the line of its output that holds ``ready`` (once it is
    there); stop the server on exit."""
    process = await anyio.open_process(command, stderr=subprocess.STDOUT, env=env)
    assert process.stdout is not None
    try:
        async with anyio.create_task_group() as task_group:
            buffered = b""
            with anyio.fail_after(GUARD):
                while ready not in buffered or not buffered.endswith(b"\n"):
                    buffered += await process.stdout.receive()
            line = next(x for x in buffered.splitlines() if ready in x)
            task_group.start_soon(_drain, process.stdout)
            try:
                yield line
            finally:
                task_group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            # A server with connections still open may linger after SIGTERM.
            process.terminate()
            with anyio.move_on_after(STOP_GRACE):
                await process.wait()
            if process.returncode is None:
                process.kill()
            await process.aclose()


@asynccontextmanager
async def sdk_server(*flags: str) -> AsyncIterator[str]:
    """The SDK server over HTTP with ``flags``; yields its base URL."""
    command = [sys.executable, str(SDK_HTTP_SERVER), *flags]
    async with launched(command, None, b"port ") as line:
        yield f"http://127.0.0.1:{int(line.split(b'port ')[1])}"


def free_port() -> int:
    """A port the OS says is free now (server-everything takes its port by number)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@asynccontextmanager
async def everything(kind: str) -> AsyncIterator[str]:
    """server-everything serving ``kind`` (``streamableHttp`` or ``sse``); yields its
    base URL."""
    assert NODE is not None and EVERYTHING is not None
    port = free_port()
    entry = str(Path(EVERYTHING) / "dist" / "index.js")
    env = {**os.environ, "PORT": str(port)}
    async with launched([NODE, entry, kind], env, str(port).encode()):
        yield f"http://127.0.0.1:{port}"


async def cancel_then_go_on(client: Client, tool: str, arguments: dict[str, Any]) -> None:
    """A call that times out is cancelled; the connection goes on."""
    with pytest.raises(RequestTimeout):
        await client.call_tool(tool, arguments, timeout=0.2)
    assert client.session.outstanding == frozenset()


# -- the official Python SDK's server --------------------------------------------------------------

SDK_SHAPES = {
    "sse-stateful": (),
    "json-stateful": ("--json",),
    "sse-stateless": ("--stateless",),
    "json-stateless": ("--json", "--stateless"),
}


async def sdk_scenario(
    client: Client, seen: Seen, expected: str, streaming: bool, back_channel: bool
) -> None:
    """The SDK server's scenario; ``streaming``: it answers with SSE (with JSON answers
    the SDK drops a request's progress and log notifications: they have no stream);
    ``back_channel``: it can send its own requests up to 2025-11-25 (on the SSE answer of
    a stateful session only)."""
    assert client.revision == expected
    assert client.server_info.name == "sdk-peer"
    tools = {tool.name for tool in await client.list_tools()}
    assert {"echo", "add", "slow", "wait", "note", "ask"} <= tools
    assert [r.uri for r in await client.list_resources()] == ["test://greeting"]
    assert [p.name for p in await client.list_prompts()] == ["greet"]
    assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
    assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"
    assert (await client.call_tool("fail")).is_error
    steps: list[float] = []
    done = await client.call_tool("slow", {"steps": 3}, progress=lambda p: steps.append(p.progress))
    assert done.text == "done after 3 steps"
    assert steps == ([1, 2, 3] if streaming else [])
    read = await client.read_resource("test://greeting")
    assert read.contents[0].text == "hello from the SDK"
    prompt = await client.get_prompt("greet", {"name": "Ada"})
    assert "Ada" in prompt.messages[0].content.text
    # The SDK declares no logging capability: the level is set only in 2026-07-28, where
    # it travels in each request's _meta.
    if client.model == "stateless":
        await client.set_logging_level("warning")
    assert (await client.call_tool("note")).text == "noted"
    logged = [entry.level for entry in seen.logs]
    if not streaming:
        assert logged == []
    elif client.model == "stateless":
        assert logged == ["warning"]
    else:
        assert logged == ["debug", "warning"]
    if expected >= "2025-06-18" and (back_channel or client.model == "stateless"):
        asked = await client.call_tool("ask")
        assert asked.text == "hello Ada"
        assert "elicitation/create" in seen.asked
    elif expected >= "2025-06-18":
        with pytest.raises(RequestError, match="no back-channel") as refused:
            await client.call_tool("ask")
        assert refused.value.code == -32600
    await cancel_then_go_on(client, "wait", {})
    assert (await client.call_tool("echo", {"text": "on"})).text == "on"


@needs_sdk
@pytest.mark.parametrize("shape", list(SDK_SHAPES))
@pytest.mark.parametrize("mode", ["auto", "legacy", "2026-07-28", *HANDSHAKE])
async def test_sdk_streamable_http(shape: str, mode: str) -> None:
    seen = Seen()
    expected = {"auto": "2026-07-28", "legacy": "2025-11-25"}.get(mode, mode)
    with anyio.fail_after(GUARD):
        async with (
            sdk_server(*SDK_SHAPES[shape]) as base,
            Client.http(f"{base}/mcp", **seen.options(mode)) as client,
        ):
            assert client.transport.transport == "streamable"
            streaming = "json" not in shape
            stateful = "stateless" not in shape
            if expected < "2026-07-28":
                assert (client.transport.session_id is not None) == stateful
            await sdk_scenario(client, seen, expected, streaming, streaming and stateful)
    assert seen.violations == []


@needs_sdk
@pytest.mark.parametrize("mode", ["auto", "legacy", *HANDSHAKE])
async def test_sdk_http_sse(mode: str) -> None:
    seen = Seen()
    expected = {"auto": "2025-11-25", "legacy": "2025-11-25"}.get(mode, mode)
    with anyio.fail_after(GUARD):
        async with (
            sdk_server("--sse") as base,
            Client.http(f"{base}/sse", **seen.options(mode)) as client,
        ):
            assert client.transport.transport == "sse"
            await sdk_scenario(client, seen, expected, True, True)


# -- @modelcontextprotocol/server-everything -------------------------------------------------------


async def everything_scenario(client: Client, seen: Seen, expected: str) -> None:
    assert client.revision == expected and client.model == "handshake"
    assert client.server_info.name == "mcp-servers/everything"
    tools = {tool.name for tool in await client.list_tools()}
    assert {"echo", "get-sum", "trigger-long-running-operation"} <= tools
    assert (await client.call_tool("echo", {"message": "hi"})).text == "Echo: hi"
    summed = await client.call_tool("get-sum", {"a": 2, "b": 3})
    assert summed.text == "The sum of 2 and 3 is 5."
    steps: list[float] = []
    done = await client.call_tool(
        "trigger-long-running-operation",
        {"duration": 0.1, "steps": 3},
        progress=lambda p: steps.append(p.progress),
    )
    assert done.text.startswith("Long running operation completed")
    assert steps == [1, 2, 3]
    resources = await client.list_resources()
    read = await client.read_resource(resources[0].uri)
    assert read.contents[0].uri == resources[0].uri
    prompt = await client.get_prompt("simple-prompt")
    assert prompt.messages[0].content.text == "This is a simple prompt without arguments."
    await client.ping()
    sampled = await client.call_tool(
        "trigger-sampling-request", {"prompt": "hello", "maxTokens": 10}
    )
    assert "sampled!" in sampled.text
    rooted = await client.call_tool("get-roots-list")
    assert "file:///interop" in rooted.text
    if expected >= "2025-11-25":
        asked = await client.call_tool("trigger-elicitation-request", {})
        assert "Ada" in asked.text and not asked.is_error
    await cancel_then_go_on(client, "trigger-long-running-operation", {"duration": 30, "steps": 2})
    assert (await client.call_tool("echo", {"message": "on"})).text == "Echo: on"
    assert {"sampling/createMessage", "roots/list"} <= set(seen.asked)


@needs_everything
@pytest.mark.parametrize("mode", ["auto", "legacy", *HANDSHAKE])
async def test_server_everything_streamable_http(mode: str) -> None:
    seen = Seen()
    expected = {"auto": "2025-11-25", "legacy": "2025-11-25"}.get(mode, mode)
    with anyio.fail_after(GUARD):
        async with (
            everything("streamableHttp") as base,
            Client.http(f"{base}/mcp", **seen.options(mode)) as client,
        ):
            assert client.transport.transport == "streamable"
            assert client.transport.session_id is not None
            await everything_scenario(client, seen, expected)


@needs_everything
@pytest.mark.parametrize("path", ["/sse", "/mcp"])
@pytest.mark.parametrize("mode", ["auto", "legacy", *HANDSHAKE])
async def test_server_everything_http_sse(path: str, mode: str) -> None:
    seen = Seen()
    expected = {"auto": "2025-11-25", "legacy": "2025-11-25"}.get(mode, mode)
    with anyio.fail_after(GUARD):
        async with (
            everything("sse") as base,
            Client.http(base + path, **seen.options(mode)) as client,
        ):
            assert client.transport.transport == "sse"
            await everything_scenario(client, seen, expected)
