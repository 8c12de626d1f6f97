"""An mcpspec stdio server with one fixture of each kind, for the interop and stdio
tests.

Run: ``python mcpspec_server.py [--revisions R1,R2,...] [--backend asyncio|trio]
[--linger SECONDS] [--http PORT]``: over stdio, or with ``--http`` as the ASGI app under
uvicorn at ``http://127.0.0.1:PORT/mcp``.

Tools: ``echo`` (text), ``add`` (a + b), ``slow`` (reports progress, then waits until
cancelled), ``cancelled`` (waits until a ``slow`` call was cancelled; answers how many
were), ``ask`` (elicits a name, greets it), ``fail`` (raises: -32603), ``exit`` (the
process exits at once), ``noisy`` (prints to stdout, and so does a child process),
``touch`` (announces that the tool list and ``test://static`` changed). A resource
``test://static`` (subscribable), a prompt ``greet`` with a completable argument ``name``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio

from mcpspec.runtime.connection import RequestContext, RequestError, Server
from mcpspec.runtime.connection.http import run_http

TOOLS: list[dict[str, Any]] = [
    {
        "name": "echo",
        "description": "Echo a message.",
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
    },
    {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
    {"name": "slow", "inputSchema": {"type": "object"}},
    {"name": "cancelled", "inputSchema": {"type": "object"}},
    {"name": "ask", "inputSchema": {"type": "object"}},
    {"name": "fail", "inputSchema": {"type": "object"}},
    {"name": "exit", "inputSchema": {"type": "object"}},
    {"name": "noisy", "inputSchema": {"type": "object"}},
    {"name": "touch", "inputSchema": {"type": "object"}},
]


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


def build(revisions: list[str] | None) -> Server:
    server = Server(
        "mcpspec-fixture",
        "1.0",
        revisions=revisions,
        instructions="fixture",
        list_changed=True,
        subscribe=True,
    )
    cancelled = {"count": 0}
    cancel_seen = anyio.Event()

    @server.handler("tools/list")
    async def list_tools(request: Any, ctx: RequestContext) -> Any:
        return {"tools": TOOLS}

    @server.handler("tools/call")
    async def call_tool(request: Any, ctx: RequestContext) -> Any:
        nonlocal cancel_seen
        name = request.params.name
        args = request.params.arguments or {}
        if name == "echo":
            await ctx.log("info", {"echo": args.get("message")}, logger="fixture")
            return text(str(args.get("message")))
        if name == "add":
            return text(str(int(args["a"]) + int(args["b"])))
        if name == "slow":
            await ctx.report_progress(1, 2, "started")
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                cancelled["count"] += 1
                cancel_seen.set()
                raise
        if name == "cancelled":
            await cancel_seen.wait()
            cancel_seen = anyio.Event()
            return text(str(cancelled["count"]))
        if name == "ask":
            answer = await ctx.elicit(
                message="Your name?",
                requested_schema={
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            )
            if answer.action != "accept":
                return text(f"no name ({answer.action})")
            return text(f"Hello, {answer.content['name']}!")
        if name == "touch":
            await server.notify_tools_changed()
            await server.notify_resource_updated("test://static")
            return text("touched")
        if name == "noisy":
            print("noise from print")  # must reach stderr, never the protocol stream
            os.system("echo noise from a child process")
            return text("quiet")
        if name == "fail":
            raise RuntimeError("the fixture fails on purpose")
        if name == "exit":
            os._exit(3)  # the process dies mid-request
        raise RequestError.invalid_params(f"unknown tool {name!r}")

    @server.handler("resources/list")
    async def list_resources(request: Any, ctx: RequestContext) -> Any:
        return {"resources": [{"uri": "test://static", "name": "static", "mimeType": "text/plain"}]}

    @server.handler("resources/read")
    async def read_resource(request: Any, ctx: RequestContext) -> Any:
        uri = request.params.uri
        if uri != "test://static":
            raise RequestError.invalid_params(f"no resource {uri}")
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "static text"}]}

    @server.handler("prompts/list")
    async def list_prompts(request: Any, ctx: RequestContext) -> Any:
        return {
            "prompts": [
                {"name": "greet", "arguments": [{"name": "name", "required": True}]},
            ]
        }

    @server.handler("prompts/get")
    async def get_prompt(request: Any, ctx: RequestContext) -> Any:
        name = (request.params.arguments or {}).get("name", "world")
        return {
            "description": "A greeting",
            "messages": [{"role": "user", "content": {"type": "text", "text": f"Greet {name}"}}],
        }

    @server.handler("completion/complete")
    async def complete(request: Any, ctx: RequestContext) -> Any:
        prefix = request.params.argument.value
        names = [n for n in ("Ada", "Alan", "Grace") if n.startswith(prefix)]
        return {"completion": {"values": names, "total": len(names), "hasMore": False}}

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--revisions", default=None)
    parser.add_argument("--backend", default="asyncio")
    parser.add_argument("--linger", type=float, default=1.0)
    parser.add_argument("--http", type=int, default=None, metavar="PORT")
    options = parser.parse_args()
    revisions = options.revisions.split(",") if options.revisions else None
    if options.http is not None:
        run_http(build(revisions), port=options.http)
        return
    build(revisions).run(backend=options.backend, linger=options.linger)
    print("stdin closed: the server exits", file=sys.stderr)


if __name__ == "__main__":
    main()
