"""The server's lifespan (entered once per process, its value in every handler, closed
on shutdown and when start-up fails half way: in memory, under the ASGI lifespan, over
stdio) and the in-memory client in every revision."""

from __future__ import annotations

import contextlib
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mcpspec.runtime.connection import (
    Client,
    LifespanNotRunning,
    RequestContext,
    Server,
    memory_pair,
)
from mcpspec.runtime.connection.http import http_app

from .http_app_kit import stateless_call, stateless_headers

ALL = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")

pytestmark = pytest.mark.anyio


class Database:
    """What a lifespan opens: it records its openings and closings."""

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.rows = {"answer": "42"}


def server_with(log: list[str], *, fail_after_open: bool = False) -> Server:
    @contextlib.asynccontextmanager
    async def open_database(server: Server) -> AsyncIterator[Database]:
        log.append(f"open {server.info['name']}")
        try:
            if fail_after_open:
                # Half way: something was opened, then start-up fails.
                raise OSError("the database refused the connection")
            yield Database(log)
        finally:
            log.append("close")

    server = Server("life", "1.0", lifespan=open_database)

    @server.tool()
    async def lookup(key: str, ctx: RequestContext) -> str:
        database: Database = ctx.lifespan
        return database.rows[key]

    return server


async def test_entered_once_reached_by_handlers_and_closed() -> None:
    log: list[str] = []
    server = server_with(log)
    async with Client.in_memory(server) as client:
        assert log == ["open life"]
        assert (await client.call_tool("lookup", {"key": "answer"})).text == "42"
    assert log == ["open life", "close"]
    # Inside a running server, clients share its lifespan: entered once.
    log.clear()
    async with server.running() as database:
        assert isinstance(database, Database)
        for revision in ("2025-11-25", "2026-07-28"):
            async with Client.in_memory(server, mode=revision) as client:
                assert (await client.call_tool("lookup", {"key": "answer"})).text == "42"
        assert log == ["open life"]
    assert log == ["open life", "close"]


async def test_a_lifespan_whose_start_up_raises_closes_and_serves_nothing() -> None:
    log: list[str] = []
    server = server_with(log, fail_after_open=True)
    with pytest.raises(OSError, match="refused"):
        async with Client.in_memory(server):
            pytest.fail("served without its lifespan")
    assert log == ["open life", "close"]
    # Nothing stays entered: the next start tries again.
    with pytest.raises(OSError):
        async with server.running():
            pass
    assert log == ["open life", "close"] * 2


async def test_handlers_without_a_running_lifespan_are_told() -> None:
    log: list[str] = []
    server = server_with(log)
    server_end, client_end = memory_pair()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve, server_end)
        async with Client.over(client_end) as client:
            result = await client.call_tool("lookup", {"key": "answer"})
            assert result.is_error and "lifespan is not running" in result.text
    assert log == []
    with pytest.raises(LifespanNotRunning):
        server._lifespan.value  # noqa: B018
    # A server without a lifespan: ctx.lifespan is None.
    plain = Server()

    @plain.tool()
    async def probe(ctx: RequestContext) -> str:
        return repr(ctx.lifespan)

    async with Client.in_memory(plain) as client:
        assert (await client.call_tool("probe")).text == "None"


class Lifespan:
    """Drives the ASGI lifespan protocol of an app, as an ASGI server does."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.sent: list[dict[str, Any]] = []
        self.to_app, self.inbox = anyio.create_memory_object_stream[dict[str, Any]](4)

    async def run(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0"}}

        async def send(message: dict[str, Any]) -> None:
            self.sent.append(message)

        await self.app(scope, self.inbox.receive, send)


async def test_the_asgi_lifespan_enters_and_closes_it() -> None:
    log: list[str] = []
    app = http_app(server_with(log))
    driver = Lifespan(app)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(driver.run)
        await driver.to_app.send({"type": "lifespan.startup"})
        with anyio.fail_after(10):
            while not driver.sent:
                await anyio.sleep(0.01)
        assert driver.sent == [{"type": "lifespan.startup.complete"}]
        assert log == ["open life"]
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            response = await http.post(
                "/mcp",
                json=stateless_call("lookup", {"key": "answer"}),
                headers=stateless_headers("tools/call", "lookup"),
            )
        assert response.json()["result"]["content"][0]["text"] == "42"
        await driver.to_app.send({"type": "lifespan.shutdown"})
    assert driver.sent[-1] == {"type": "lifespan.shutdown.complete"}
    assert log == ["open life", "close"]


async def test_the_asgi_lifespan_reports_a_failed_start_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    log: list[str] = []
    driver = Lifespan(http_app(server_with(log, fail_after_open=True)))
    await driver.to_app.send({"type": "lifespan.startup"})
    with anyio.fail_after(10):
        await driver.run()
    assert driver.sent == [
        {"type": "lifespan.startup.failed", "message": "the database refused the connection"}
    ]
    assert log == ["open life", "close"]
    assert "lifespan failed at startup" in caplog.text


SCRIPT = """
import contextlib, sys
from mcpspec.runtime.connection import RequestContext, Server

LOG = sys.argv[1]

@contextlib.asynccontextmanager
async def lifespan(server):
    with open(LOG, "a") as f:
        f.write("open\\n")
    try:
        yield "from the lifespan"
    finally:
        with open(LOG, "a") as f:
            f.write("close\\n")

server = Server("stdio-life", lifespan=lifespan)

@server.tool()
async def where(ctx: RequestContext) -> str:
    return ctx.lifespan

server.run()
"""


async def test_stdio_enters_it_once_per_process(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(textwrap.dedent(SCRIPT))
    log = tmp_path / "log"
    async with Client.stdio(sys.executable, [str(script), str(log)]) as client:
        assert (await client.call_tool("where")).text == "from the lifespan"
        assert (await client.call_tool("where")).text == "from the lifespan"
    assert log.read_text().split() == ["open", "close"]


@pytest.mark.parametrize("revision", ALL)
async def test_the_in_memory_client_speaks_every_revision(revision: str) -> None:
    server = Server("memory", "1.0")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    async with Client.in_memory(server, mode=revision) as client:
        assert client.revision == revision
        assert client.server_info.name == "memory"
        assert (await client.call_tool("echo", {"text": "hi"})).text == "hi"
        assert [tool.name for tool in await client.list_tools()] == ["echo"]
    # Left: the server's connection ended with it.
    assert not server._connections


async def test_the_asgi_lifespan_reports_a_failed_shutdown() -> None:
    @contextlib.asynccontextmanager
    async def closes_badly(server: Server) -> AsyncIterator[None]:
        yield
        raise OSError("the pool would not close")

    driver = Lifespan(http_app(Server(lifespan=closes_badly)))
    await driver.to_app.send({"type": "lifespan.startup"})
    await driver.to_app.send({"type": "lifespan.shutdown"})
    with anyio.fail_after(10):
        await driver.run()
    assert driver.sent == [
        {"type": "lifespan.startup.complete"},
        {"type": "lifespan.shutdown.failed", "message": "the pool would not close"},
    ]
