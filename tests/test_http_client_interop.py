"""The mcpspec HTTP client (``Client.http``) driving real MCP servers over HTTP, each a
subprocess: the official Python SDK's server (tests/peers/sdk_http_server.py: Streamable
HTTP stateful and stateless, answering with SSE or JSON, and HTTP+SSE) and the reference
``@modelcontextprotocol/server-everything`` (``streamableHttp`` and ``sse``), in ``auto``,
``legacy`` and every revision each server speaks.

``nox -s interop`` installs the peers and runs these (``pytest -m interop``); they skip,
saying why, only when a peer is absent.
"""

from __future__ import annotations

import anyio
import anyio.abc
import pytest

from mcpspec.runtime.connection import Client, RequestError
from tests.interop_kit import (
    GUARD,
    Seen,
    cancel_then_go_on,
    everything,
    needs_everything,
    needs_http_sdk,
    sdk_server,
)

pytestmark = [pytest.mark.interop, pytest.mark.anyio]

HANDSHAKE = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


ANYIO_BACKENDS = ("asyncio",)


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
        assert "elicitation/create" in seen.methods
    elif expected >= "2025-06-18":
        with pytest.raises(RequestError, match="no back-channel") as refused:
            await client.call_tool("ask")
        assert refused.value.code == -32600
    await cancel_then_go_on(client, "wait", {})
    assert (await client.call_tool("echo", {"text": "on"})).text == "on"


@needs_http_sdk
@pytest.mark.parametrize("shape", list(SDK_SHAPES))
@pytest.mark.parametrize("mode", ["auto", "legacy", "2026-07-28", *HANDSHAKE])
async def test_sdk_streamable_http(shape: str, mode: str) -> None:
    seen = Seen()
    expected = {"auto": "2026-07-28", "legacy": "2025-11-25"}.get(mode, mode)
    with anyio.fail_after(GUARD):
        async with (
            sdk_server(*SDK_SHAPES[shape]) as base,
            Client.http(f"{base}/mcp", **seen.options(mode, open_timeout=GUARD)) as client,
        ):
            assert client.transport.transport == "streamable"
            streaming = "json" not in shape
            stateful = "stateless" not in shape
            if expected < "2026-07-28":
                assert (client.transport.session_id is not None) == stateful
            await sdk_scenario(client, seen, expected, streaming, streaming and stateful)
    assert seen.violations == []


@needs_http_sdk
@pytest.mark.parametrize("mode", ["auto", "legacy", *HANDSHAKE])
async def test_sdk_http_sse(mode: str) -> None:
    seen = Seen()
    expected = {"auto": "2025-11-25", "legacy": "2025-11-25"}.get(mode, mode)
    with anyio.fail_after(GUARD):
        async with (
            sdk_server("--sse") as base,
            Client.http(f"{base}/sse", **seen.options(mode, open_timeout=GUARD)) as client,
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
    assert {"sampling/createMessage", "roots/list"} <= seen.methods


@needs_everything
@pytest.mark.parametrize("mode", ["auto", "legacy", *HANDSHAKE])
async def test_server_everything_streamable_http(mode: str) -> None:
    seen = Seen()
    expected = {"auto": "2025-11-25", "legacy": "2025-11-25"}.get(mode, mode)
    with anyio.fail_after(GUARD):
        async with (
            everything("streamableHttp") as base,
            Client.http(f"{base}/mcp", **seen.options(mode, open_timeout=GUARD)) as client,
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
            Client.http(base + path, **seen.options(mode, open_timeout=GUARD)) as client,
        ):
            assert client.transport.transport == "sse"
            await everything_scenario(client, seen, expected)
