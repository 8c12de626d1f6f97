"""The official Python SDK's client (``mcp==2.3.0``) against an mcpspec server written
with the decorators alone (``tests/peers/declared_server.py``, a real subprocess), over
stdio and Streamable HTTP, in every revision the SDK speaks: it lists resources, templates
and prompts page by page, reads a static resource and two templates (percent-encoding,
reserved expansion), gets a prompt with arguments, completes a prompt argument and a
template variable, and gets the error of its revision for an unknown resource."""

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
    from mcp.shared.exceptions import MCPError

pytestmark = [pytest.mark.interop, pytest.mark.anyio, needs_sdk]

SERVER = Path(__file__).parent / "peers" / "declared_server.py"
#: Generous bound on a whole scenario: only a hang reaches it (never a measure of speed).
HANG_GUARD = 60

#: (the SDK client's mode, the revision the server accepts, the revision expected)
CONFIGS = [
    ("legacy", "2024-11-05", "2024-11-05"),
    ("legacy", "2025-03-26", "2025-03-26"),
    ("legacy", "2025-06-18", "2025-06-18"),
    ("legacy", "2025-11-25", "2025-11-25"),
    ("2026-07-28", None, "2026-07-28"),
]


@asynccontextmanager
async def sdk_client(mode: str, revisions: str | None, transport: str) -> AsyncIterator[Any]:
    args = [str(SERVER)]
    if revisions is not None:
        args += ["--revisions", revisions]
    if transport == "stdio":
        target: Any = StdioServerParameters(command=sys.executable, args=args)
        with anyio.fail_after(HANG_GUARD):
            async with Client(target, mode=mode) as client:
                yield client
        return
    async with http_server(args) as url:
        with anyio.fail_after(HANG_GUARD):
            async with Client(url, mode=mode) as client:
                yield client


async def every_page(list_page: Any, field: str) -> list[Any]:
    """Every item of an SDK listing, following ``nextCursor``."""
    items: list[Any] = []
    cursor = None
    while True:
        page = await list_page(cursor=cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if cursor is None:
            return items


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("config", CONFIGS, ids=lambda config: config[2])
async def test_sdk_client_uses_the_declared_surface(
    config: tuple[str, str | None, str], transport: str
) -> None:
    mode, revisions, expected = config
    async with sdk_client(mode, revisions, transport) as client:
        assert client.protocol_version == expected
        tools = await client.list_tools()
        assert [tool.name for tool in tools.tools] == ["add"]
        assert (await client.call_tool("add", {"a": 2, "b": 40})).content[0].text == "42"

        resources = await every_page(client.list_resources, "resources")
        assert [str(r.uri) for r in resources] == ["config://app"]
        templates = await every_page(client.list_resource_templates, "resource_templates")
        assert [t.uri_template for t in templates] == ["db://{table}/{id}", "file:///{+path}"]
        first = await client.list_resource_templates()
        assert first.next_cursor is not None  # paged one by one
        assert (templates[0].title == "Table row") == (expected >= "2025-06-18")

        config_read = await client.read_resource("config://app")
        assert config_read.contents[0].text == '{"debug": false}'
        row = await client.read_resource("db://us%65rs/7")
        assert row.contents[0].text == "row 7 of users"
        file = await client.read_resource("file:///srv/a%20b/c.txt")
        assert file.contents[0].text == "contents of srv/a b/c.txt"
        assert file.contents[0].mime_type == "text/plain"
        with pytest.raises(MCPError) as caught:
            await client.read_resource("db://users/not-a-number")
        assert caught.value.error.code == (-32602 if expected == "2026-07-28" else -32002)

        prompts = await every_page(client.list_prompts, "prompts")
        assert [p.name for p in prompts] == ["greet"]
        assert [(a.name, bool(a.required)) for a in prompts[0].arguments] == [
            ("name", True),
            ("tone", False),
        ]
        prompt = await client.get_prompt("greet", {"name": "Ada", "tone": "dry"})
        assert prompt.messages[0].content.text == "Greet Ada in a dry tone"
        assert prompt.description == "Greet someone."
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("greet", {})
        assert caught.value.error.code == -32602

        if expected >= "2025-03-26":  # the SDK completes from 2025-03-26 on
            names = await client.complete(
                types.PromptReference(type="ref/prompt", name="greet"),
                {"name": "name", "value": "A"},
            )
            assert names.completion.values == ["Ada", "Alan"]
            tables = await client.complete(
                types.ResourceTemplateReference(type="ref/resource", uri="db://{table}/{id}"),
                {"name": "table", "value": "o"},
            )
            assert tables.completion.values == ["orders"]
