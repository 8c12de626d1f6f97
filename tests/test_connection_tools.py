"""Tools declared from typed functions: schemas from annotations, arguments converted
by msgspec, tool errors, and the tools/list and tools/call the server then answers."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import pytest

from mcpspec.runtime.connection import RequestContext, RequestError, Server, Tool, ToolError

from .connection_kit import (
    call_tool,
    connected,
    list_tools,
    text_of,
)


class Greeting(msgspec.Struct, kw_only=True):
    name: str
    excited: bool = False


def make_server() -> Server:
    server = Server("tools", "1.0")

    @server.tool(annotations={"readOnlyHint": True})
    async def add(a: int, b: int = 2) -> int:
        """Add two integers."""
        return a + b

    @server.tool(name="greet", title="Greeter")
    async def greet_someone(ctx: RequestContext, greeting: Greeting) -> str:
        await ctx.report_progress(1, 1)
        return f"Hello, {greeting.name}{'!' if greeting.excited else '.'}"

    @server.tool()
    async def refuse() -> str:
        raise ToolError("not today")

    @server.tool()
    async def pair(x: list[int]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": str(sum(x))}], "isError": False}

    return server


def test_schemas_come_from_the_annotations() -> None:
    tools = make_server().tools
    assert tools["add"].definition() == {
        "name": "add",
        "description": "Add two integers.",
        "annotations": {"readOnlyHint": True},
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 2}},
            "required": ["a"],
        },
        # A scalar return is structured output, held under "result".
        "outputSchema": {
            "type": "object",
            "properties": {"result": {"type": "integer"}},
            "required": ["result"],
        },
    }
    assert "outputSchema" not in tools["add"].definition("2025-03-26")
    greet = tools["greet"].definition()
    assert greet["title"] == "Greeter" and "description" not in greet
    assert greet["inputSchema"]["required"] == ["name"]
    assert greet["inputSchema"]["properties"]["excited"] == {"type": "boolean", "default": False}


@pytest.mark.anyio
async def test_annotated_constraints_reach_the_schema_and_the_check() -> None:
    server = Server()

    @server.tool()
    async def count(n: Annotated[int, msgspec.Meta(ge=0)]) -> str:
        return str(n)

    tool = server.tools["count"]
    assert tool.input_schema["properties"]["n"] == {"type": "integer", "minimum": 0}
    refused = await tool.call({"n": -1}, None)  # type: ignore[arg-type]
    assert refused["isError"] is True and ">= 0" in refused["content"][0]["text"]
    assert (await tool.call({"n": 3}, None))["content"][0]["text"] == "3"  # type: ignore[arg-type]


def test_registration_rules() -> None:
    server = make_server()
    with pytest.raises(ValueError, match="tools declared"):
        server.add_handler("tools/call", server._call_tool)
    other = Server()

    @other.handler("tools/call")
    async def call(request: Any, ctx: RequestContext) -> Any:
        return {}

    with pytest.raises(ValueError, match="handler of its own"):
        other.add_tool(Tool.from_function(make_server().tools["add"].fn))

    def not_async(a: int) -> int:
        return a

    with pytest.raises(TypeError, match="coroutine function"):
        Tool.from_function(not_async)  # type: ignore[arg-type]

    async def untyped(a):  # type: ignore[no-untyped-def]
        return a

    with pytest.raises(TypeError, match="needs a type"):
        Tool.from_function(untyped)


@pytest.mark.anyio
@pytest.mark.parametrize("revision", ["2024-11-05", "2025-11-25", "2026-07-28"])
async def test_declared_tools_are_listed_and_called(revision: str) -> None:
    async with connected(make_server(), revision) as client:
        assert set(client.session.peer_capabilities or {}) == {"tools", "logging"}
        listed = await client.request(list_tools(client))
        assert [tool.name for tool in listed.tools] == ["add", "greet", "refuse", "pair"]
        assert text_of(await client.request(call_tool(client, "add", {"a": 40}))) == "42"
        updates: list[Any] = []
        result = await client.request(
            call_tool(client, "greet", {"name": "Ada", "excited": True}), progress=updates.append
        )
        assert text_of(result) == "Hello, Ada!" and len(updates) == 1
        assert text_of(await client.request(call_tool(client, "pair", {"x": [1, 2]}))) == "3"

        # Arguments that do not fit: a tool execution error from 2025-11-25 on (the
        # model reads it: SEP-1303), a protocol error naming where before.
        if revision >= "2025-11-25":
            bad = await client.request(call_tool(client, "add", {"a": "forty"}))
            assert bad.is_error is True and text_of(bad).startswith("invalid arguments:")
        else:
            with pytest.raises(RequestError) as caught:
                await client.request(call_tool(client, "add", {"a": "forty"}))
            assert caught.value.code == -32602
            assert caught.value.error.data == {"path": "$.params.arguments.a"}
            assert "Expected `int`, got `str`" in caught.value.error.message
        refused = await client.request(call_tool(client, "refuse"))
        assert refused.is_error is True and text_of(refused) == "not today"
        with pytest.raises(RequestError) as caught:
            await client.request(call_tool(client, "nope"))
        assert caught.value.code == -32602
        # The name is the client's text: the error names it, cut short.
        with pytest.raises(RequestError) as caught:
            await client.request(call_tool(client, "n" * 100_000))
        reason = caught.value.error.data["reason"]
        assert reason.startswith("unknown tool 'nnn") and len(reason) < 600
