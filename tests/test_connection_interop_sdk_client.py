"""The official Python SDK's client (``mcp==2.3.0``) driving an mcpspec server
(``tests/peers/mcpspec_server.py``, a real subprocess) over stdio and over Streamable
HTTP (the ASGI app under uvicorn), in each handshake revision and in its modes
``legacy``, ``auto`` and ``2026-07-28``: list, call with progress, read, get, complete,
ping, cancel, a failing handler, and an elicitation round trip."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.http_kit import http_server
from tests.interop_kit import SDK_INSTALLED, needs_sdk

# Imported only where it is installed: `nox -s tests` deselects these tests (marker
# interop) without reporting a skip, and `nox -s interop` installs the SDK.
if SDK_INSTALLED:
    import mcp.types as types
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

pytestmark = [pytest.mark.interop, pytest.mark.anyio, needs_sdk]

SERVER = Path(__file__).parent / "peers" / "mcpspec_server.py"
#: Tools declared with the decorator, returning structured output.
STRUCTURED_SERVER = Path(__file__).parent / "peers" / "structured_server.py"
#: Generous bound on a whole scenario: only a hang reaches it (never a measure of speed).
HANG_GUARD = 60


ANYIO_BACKENDS = ("asyncio",)


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def sdk_client(
    mode: str,
    revisions: str | None = None,
    *,
    backend: str = "asyncio",
    transport: str = "stdio",
    script: Path = SERVER,
    **options: Any,
) -> AsyncIterator[Client]:
    args = [str(script), "--backend", backend]
    if revisions is not None:
        args += ["--revisions", revisions]
    if transport == "stdio":
        target: Any = StdioServerParameters(command=sys.executable, args=args)
        with anyio.fail_after(HANG_GUARD):
            async with Client(target, mode=mode, **options) as client:
                yield client
        return
    async with http_server(args) as url:
        with anyio.fail_after(HANG_GUARD):
            async with Client(url, mode=mode, **options) as client:
                yield client


async def elicit_name(context: Any, params: Any) -> types.ElicitResult:
    assert params.message == "Your name?"
    return types.ElicitResult(action="accept", content={"name": "Ada"})


#: (mode, the revisions the server accepts, the revision expected, the server's backend)
CONFIGS = [
    ("legacy", "2024-11-05", "2024-11-05", "asyncio"),
    ("legacy", "2025-03-26", "2025-03-26", "asyncio"),
    ("legacy", "2025-06-18", "2025-06-18", "asyncio"),
    ("legacy", "2025-11-25", "2025-11-25", "asyncio"),
    ("legacy", None, "2025-11-25", "trio"),
    ("auto", None, "2026-07-28", "asyncio"),
    ("auto", "2025-06-18", "2025-06-18", "asyncio"),
    ("auto", None, "2026-07-28", "trio"),
    ("2026-07-28", None, "2026-07-28", "asyncio"),
]


def _id(config: tuple[str, str | None, str, str]) -> str:
    mode, revisions, _, backend = config
    return f"{mode}-{revisions or 'all'}-{backend}"


@pytest.mark.parametrize("config", CONFIGS, ids=_id)
async def test_sdk_client_scenarios(
    config: tuple[str, str | None, str, str], transport: str
) -> None:
    mode, revisions, expected, backend = config
    if transport == "http" and backend == "trio":
        backend = "asyncio"  # uvicorn runs on asyncio; the trio rows are stdio's
    async with sdk_client(mode, revisions, backend=backend, transport=transport) as client:
        assert client.protocol_version == expected
        if mode != "2026-07-28":  # a pinned client skips discovery: no server identity
            assert client.server_info is not None and client.server_info.name == "mcpspec-fixture"
        # list and call
        tools = await client.list_tools()
        assert [tool.name for tool in tools.tools][:2] == ["echo", "add"]
        result = await client.call_tool("add", {"a": 2, "b": 40})
        assert result.content[0].text == "42" and not result.is_error
        # progress, then cancellation of the call in flight
        progress: list[tuple[float, float | None]] = []
        started = anyio.Event()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, total))
            started.set()

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(
                lambda: client.call_tool("slow", {}, progress_callback=on_progress)
            )
            await started.wait()
            task_group.cancel_scope.cancel()
        assert progress == [(1, 2)]
        cancelled = await client.call_tool("cancelled", {})
        assert cancelled.content[0].text == "1"  # the server's handler was cancelled
        # a failing handler: -32603, and the connection goes on
        with pytest.raises(MCPError) as caught:
            await client.call_tool("fail", {})
        assert caught.value.error.code == -32603
        # resources, prompts, completion
        resources = await client.list_resources()
        assert [str(r.uri) for r in resources.resources] == ["test://static"]
        read = await client.read_resource("test://static")
        assert read.contents[0].text == "static text"
        prompts = await client.list_prompts()
        assert [p.name for p in prompts.prompts] == ["greet"]
        prompt = await client.get_prompt("greet", {"name": "Ada"})
        assert prompt.messages[0].content.text == "Greet Ada"
        if expected >= "2025-03-26":  # completions came with 2025-03-26
            completion = await client.complete(
                types.PromptReference(type="ref/prompt", name="greet"),
                {"name": "name", "value": "A"},
            )
            assert completion.completion.values == ["Ada", "Alan"]
        if expected != "2026-07-28":  # ping is gone in 2026-07-28
            with pytest.warns(MCPDeprecationWarning):
                await client.send_ping()
        echo = await client.call_tool("echo", {"message": "still here"})
        assert echo.content[0].text == "still here"


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("legacy", "2025-11-25"), ("auto", "2026-07-28"), ("2026-07-28", "2026-07-28")],
)
async def test_sdk_client_elicitation_round_trip(mode: str, expected: str, transport: str) -> None:
    async with sdk_client(mode, transport=transport, elicitation_callback=elicit_name) as client:
        assert client.protocol_version == expected
        result = await client.call_tool("ask", {})
        assert result.content[0].text == "Hello, Ada!"


async def test_sdk_client_change_notifications_in_a_handshake_revision(transport: str) -> None:
    received: list[Any] = []
    both = anyio.Event()

    async def on_message(message: Any) -> None:
        received.append(message)
        if len(received) == 2:
            both.set()

    async with sdk_client("legacy", transport=transport, message_handler=on_message) as client:
        with pytest.warns(MCPDeprecationWarning):
            await client.subscribe_resource("test://static")
        result = await client.call_tool("touch", {})
        assert result.content[0].text == "touched"
        await both.wait()
    assert [type(m).__name__ for m in received] == [
        "ToolListChangedNotification",
        "ResourceUpdatedNotification",
    ]
    assert received[1].params.uri == "test://static"


@pytest.mark.parametrize("mode", ["auto", "2026-07-28"])
async def test_sdk_client_listens_in_2026_07_28(mode: str, transport: str) -> None:
    async with (
        sdk_client(mode, transport=transport) as client,
        client.listen(
            tools_list_changed=True,
            resource_subscriptions=["test://static"],
        ) as subscription,
    ):
        honored = subscription.honored
        assert honored.tools_list_changed is True
        assert honored.resource_subscriptions == ["test://static"]
        assert not honored.prompts_list_changed  # not asked for
        await client.call_tool("touch", {})
        first = await subscription.__anext__()
        second = await subscription.__anext__()
    assert type(first).__name__ == "ToolsListChanged"
    assert type(second).__name__ == "ResourceUpdated" and second.uri == "test://static"


@pytest.mark.parametrize(
    ("mode", "revisions", "expected"),
    [
        ("legacy", "2025-03-26", "2025-03-26"),
        ("legacy", "2025-06-18", "2025-06-18"),
        ("legacy", "2025-11-25", "2025-11-25"),
        ("auto", None, "2026-07-28"),
    ],
)
async def test_sdk_client_validates_structured_output(
    mode: str, revisions: str | None, expected: str, transport: str
) -> None:
    """The SDK's client checks ``structuredContent`` against the tool's
    ``outputSchema`` on every call (it raises when it does not fit), in every revision
    that has them; an older one gets the JSON text alone."""
    async with sdk_client(mode, revisions, transport=transport, script=STRUCTURED_SERVER) as client:
        assert client.protocol_version == expected
        structured = expected >= "2025-06-18"
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert (tools["weather"].output_schema is not None) is structured
        if structured:
            assert tools["weather"].output_schema["required"] == ["city", "celsius"]
            assert tools["count"].output_schema["properties"] == {"result": {"type": "integer"}}
        expected_values = {
            "weather": ({"city": "Oslo"}, {"city": "Oslo", "celsius": 21.5}),
            "place": ({"name": "Oslo"}, {"name": "Oslo", "population": 1000}),
            "score": ({"player": "ada"}, {"player": "ada", "points": 3}),
            "count": ({"word": "four"}, {"result": 4}),
        }
        for name, (arguments, value) in expected_values.items():
            result = await client.call_tool(name, arguments)
            assert not result.is_error, (name, result)
            assert result.structured_content == (value if structured else None), name
            assert result.content[0].type == "text"
        hot = await client.call_tool("hot", {"city": "Oslo"})
        assert hot.is_error and hot.structured_content is None
        assert "does not fit its output schema" in hot.content[0].text
        picture = await client.call_tool("picture", {})
        assert picture.content[0].type == "image" and picture.content[0].mime_type == "image/png"
