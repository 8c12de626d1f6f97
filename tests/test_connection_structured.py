"""Structured tool output: the outputSchema a return annotation implies, the
structuredContent checked against the type before it is sent, the revisions that have
it, the client's check of it and its typed result, and tool exceptions as isError."""

from __future__ import annotations

import logging
from typing import Any, TypedDict

import msgspec
import pytest

from mcpspec.runtime.connection import (
    Client,
    RequestContext,
    RequestError,
    ResponseViolation,
    Server,
    ToolFailed,
    ToolResult,
)
from tests.peers.structured_server import Place, Score, Weather
from tests.peers.structured_server import build as structured_fixture

ALL = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
STRUCTURED = ("2025-06-18", "2025-11-25", "2026-07-28")

pytestmark = pytest.mark.anyio


class Page(TypedDict):
    """A structured value with a field named like a result's."""

    content: str


def weather_server() -> Server:
    """The interop peer's structured tools (``weather``, ``place``, ``score``, ``count``,
    ``hot``, ``picture``) and those only these tests call."""
    server = structured_fixture(None)

    @server.tool()
    async def liar(player: str) -> Score:
        return {"player": player, "points": "many"}  # type: ignore[typeddict-item]

    @server.tool()
    async def not_json() -> Place:
        return object()  # type: ignore[return-value]

    @server.tool()
    async def page() -> Page:
        return {"content": "not a result"}

    @server.tool()
    async def ratio() -> float:
        return 1

    @server.tool()
    async def plain(word: str) -> str:
        return word

    @server.tool()
    async def broken(word: str) -> str:
        raise KeyError(word)

    @server.tool()
    async def silent() -> str:
        raise RuntimeError

    @server.tool()
    async def refused() -> str:
        raise RequestError.invalid_params("refused on purpose")

    return server


def test_output_schemas_come_from_the_return_annotation() -> None:
    tools = weather_server().tools
    assert tools["weather"].output_schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "celsius": {"type": "number", "minimum": -90, "maximum": 60},
        },
        "required": ["city", "celsius"],
    }
    assert tools["place"].output_schema == {
        "type": "object",
        "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["name", "population"],
    }
    assert tools["score"].output_schema["required"] == ["player", "points"]  # type: ignore[index]
    assert tools["count"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert tools["plain"].output_schema is None
    assert "outputSchema" not in tools["plain"].definition()
    for revision in ALL:
        listed = "outputSchema" in tools["weather"].definition(revision)
        assert listed is (revision in STRUCTURED), revision


@pytest.mark.parametrize("revision", ALL)
async def test_structured_content_in_the_revisions_that_have_it(revision: str) -> None:
    async with Client.in_memory(weather_server(), mode=revision) as client:
        listed = {tool.name: tool for tool in await client.list_tools()}
        has = revision in STRUCTURED
        assert (
            getattr(listed["weather"], "output_schema", msgspec.UNSET) is not msgspec.UNSET
        ) is has
        result = await client.call_tool("weather", {"city": "Oslo"})
        assert not result.is_error
        assert msgspec.json.decode(result.text) == {"city": "Oslo", "celsius": 21.5}
        assert result.structured == ({"city": "Oslo", "celsius": 21.5} if has else None)
        counted = await client.call_tool("count", {"word": "four"})
        assert counted.text == "4"
        assert counted.structured == ({"result": 4} if has else None)
        assert (await client.call_tool("score", {"player": "ada"})).text == (
            '{"player":"ada","points":3}'
        )
        page = await client.call_tool("page")
        assert page.text == '{"content":"not a result"}'
        assert page.structured == ({"content": "not a result"} if has else None)
        ratio = await client.call_tool("ratio")
        assert not ratio.is_error and ratio.structured == ({"result": 1} if has else None)


@pytest.mark.parametrize("revision", STRUCTURED)
async def test_typed_results(revision: str) -> None:
    async with Client.in_memory(weather_server(), mode=revision) as client:
        await client.list_tools()
        weather = await client.call_tool("weather", {"city": "Oslo"}, result_type=Weather)
        assert weather == Weather("Oslo", 21.5)
        assert await client.call_tool("place", {"name": "x"}, result_type=Place) == Place("x", 1000)
        score = await client.call_tool("score", {"player": "ada"}, result_type=Score)
        assert score == {"player": "ada", "points": 3}
        assert await client.call_tool("count", {"word": "four"}, result_type=int) == 4
        # Asked as a type it does not fit: a violation, not a wrong value.
        with pytest.raises(ResponseViolation, match="is no"):
            await client.call_tool("weather", {"city": "Oslo"}, result_type=Place)
        with pytest.raises(ResponseViolation, match="no structuredContent"):
            await client.call_tool("plain", {"word": "x"}, result_type=str)
        with pytest.raises(ToolFailed) as failed:
            await client.call_tool("broken", {"word": "w"}, result_type=str)
        assert failed.value.result.is_error and "'w'" in failed.value.result.text


@pytest.mark.parametrize("revision", ALL)
async def test_a_result_that_does_not_fit_its_schema_is_a_tool_error(revision: str) -> None:
    async with Client.in_memory(weather_server(), mode=revision) as client:
        hot = await client.call_tool("hot", {"city": "Oslo"})
        assert hot.is_error and hot.structured is None
        assert "does not fit its output schema (Weather)" in hot.text and "$.celsius" in hot.text
        liar = await client.call_tool("liar", {"player": "ada"})
        assert liar.is_error and "$.points" in liar.text
        not_json = await client.call_tool("not_json")
        assert not_json.is_error and "output schema (Place)" in not_json.text
        # The connection goes on.
        assert not (await client.call_tool("weather", {"city": "Oslo"})).is_error


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-11-25", "2026-07-28"])
async def test_exceptions_are_tool_errors(revision: str, caplog: pytest.LogCaptureFixture) -> None:
    async with Client.in_memory(weather_server(), mode=revision) as client:
        with caplog.at_level(logging.DEBUG, logger="mcpspec.connection"):
            broken = await client.call_tool("broken", {"word": "w"})
        assert broken.is_error and broken.text == "'w'"
        assert any(record.exc_info for record in caplog.records)
        silent = await client.call_tool("silent")
        assert silent.is_error and silent.text == "RuntimeError"
        with pytest.raises(RequestError) as caught:
            await client.call_tool("refused")
        assert caught.value.code == -32602
        if revision >= "2025-11-25":  # a tool execution error (SEP-1303)
            bad = await client.call_tool("count", {"word": 5})
            assert bad.is_error and "$.word" in bad.text
        else:  # a protocol error, naming where
            with pytest.raises(RequestError) as caught:
                await client.call_tool("count", {"word": 5})
            assert caught.value.code == -32602
            assert caught.value.error.data == {"path": "$.params.arguments.word"}


def liar_server(structured: Any, listings: list[int] | None = None) -> Server:
    """A server whose tool declares an output schema and answers ``structured``
    (each ``tools/list`` appends to ``listings``)."""
    server = Server("liar", "1.0")
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

    @server.handler("tools/list")
    async def list_tools(request: Any, ctx: RequestContext) -> Any:
        if listings is not None:
            listings.append(1)
        return {"tools": [{"name": "n", "inputSchema": {"type": "object"}, "outputSchema": schema}]}

    @server.handler("tools/call")
    async def call(request: Any, ctx: RequestContext) -> Any:
        result: dict[str, Any] = {"content": [{"type": "text", "text": "n"}]}
        if structured is not None:
            result["structuredContent"] = structured
        return result

    return server


@pytest.mark.parametrize("revision", STRUCTURED)
async def test_the_client_checks_structured_content_against_the_listed_schema(
    revision: str,
) -> None:
    listings: list[int] = []
    async with Client.in_memory(liar_server({"n": "one"}, listings), mode=revision) as client:
        # Not listed yet: the client lists the tools (once) to learn the schema.
        with pytest.raises(ResponseViolation) as caught:
            await client.call_tool("n")
        assert "does not fit its outputSchema" in str(caught.value)
        assert "$.structuredContent['n']" in str(caught.value)
        with pytest.raises(ResponseViolation):
            await client.call_tool("n")
        assert len(listings) == 1
    async with Client.in_memory(liar_server(None), mode=revision) as client:
        await client.list_tools()
        with pytest.raises(ResponseViolation, match="answered no structuredContent"):
            await client.call_tool("n")
    async with Client.in_memory(liar_server({"n": 1}), mode=revision) as client:
        await client.list_tools()
        result = await client.call_tool("n")
        assert isinstance(result, ToolResult) and result.structured == {"n": 1}
