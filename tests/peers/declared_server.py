"""An mcpspec server written with the decorators alone, for the interop tests of the
declared surface: a tool, a static resource, two resource templates (``db://{table}/{id}``
and ``file:///{+path}``), a prompt with arguments and completers of a prompt argument and
a template variable; lists paged one by one.

Run: ``python declared_server.py [--revisions R1,R2,...] [--http PORT]``: over stdio, or
with ``--http`` as the ASGI app under uvicorn at ``http://127.0.0.1:PORT/mcp``.
"""

from __future__ import annotations

import argparse

from mcpspec.runtime.connection import Server
from mcpspec.runtime.connection.http import run_http

TABLES = ("users", "orders", "products")


def build(revisions: list[str] | None) -> Server:
    server = Server("declared", "1.0", revisions=revisions, page_size=1)

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.resource("config://app", title="Configuration", mime_type="application/json")
    async def config() -> str:
        return '{"debug": false}'

    @server.resource("db://{table}/{id}", name="row", title="Table row")
    async def row(table: str, id: int) -> str:
        return f"row {id} of {table}"

    @server.resource("file:///{+path}", name="file", mime_type="text/plain")
    async def file(path: str) -> str:
        return f"contents of {path}"

    @server.prompt(title="Greeting")
    async def greet(name: str, tone: str = "warm") -> str:
        """Greet someone."""
        return f"Greet {name} in a {tone} tone"

    @server.completion(prompt="greet", argument="name")
    async def names(value: str) -> list[str]:
        return [name for name in ("Ada", "Alan", "Grace") if name.startswith(value)]

    @server.completion(template="db://{table}/{id}", argument="table")
    async def tables(value: str) -> list[str]:
        return [table for table in TABLES if table.startswith(value)]

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--revisions", default=None)
    parser.add_argument("--http", type=int, default=None, metavar="PORT")
    options = parser.parse_args()
    revisions = options.revisions.split(",") if options.revisions else None
    if options.http is not None:
        run_http(build(revisions), port=options.http)
        return
    build(revisions).run()


if __name__ == "__main__":
    main()
