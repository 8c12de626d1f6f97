"""Helpers of the connection tests: a server and a hand-driven client peer connected in
memory, requests of the negotiated revision, a demo server whose handlers record what
they saw (``Probe``, ``demo_server``), and a server with one tool per behaviour under
test (``Fixture``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import anyio
import msgspec

from mcpspec.runtime import ClientSession
from mcpspec.runtime.connection import (
    Client,
    ConnectionClosed,
    NotificationHandler,
    Peer,
    Question,
    RequestContext,
    RequestError,
    RequestHandler,
    Server,
    memory_pair,
)

REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
#: Generous bound on a whole test: only a hang reaches it (never a measure of speed).
HANG_GUARD = 30


@asynccontextmanager
async def connected(
    server: Server,
    mode: str,
    *,
    capabilities: Any = None,
    request_handler: RequestHandler | None = None,
    notification_handler: NotificationHandler | None = None,
    linger: float = 5.0,
) -> AsyncIterator[Peer[ClientSession]]:
    """A client peer (a ``ClientSession`` in ``mode``) negotiated with ``server`` over
    an in-memory pair; leaving closes the client's end, which ends the server's."""
    server_end, client_end = memory_pair()
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            task_group.start_soon(partial(server.serve, server_end, linger=linger))
            session = ClientSession(mode=mode, capabilities=capabilities)
            async with Peer(
                session,
                client_end,
                request_handler=request_handler,
                notification_handler=notification_handler,
            ) as peer:
                await peer.open()
                yield peer


def call_tool(peer: Peer[ClientSession], name: str, arguments: Any = None, **meta: Any) -> Any:
    """A ``tools/call`` request of the peer's revision (``meta`` goes to ``_meta``)."""
    t = peer.session.types
    params = t.CallToolRequestParams(name=name, arguments=arguments or {})
    if meta:
        params = t.CallToolRequestParams(name=name, arguments=arguments or {}, meta=meta)
    return t.CallToolRequest(id=peer.next_id(), params=params)


def list_tools(peer: Peer[ClientSession]) -> Any:
    """A ``tools/list`` request of the peer's revision."""
    return peer.session.types.ListToolsRequest(id=peer.next_id())


def closing_call(client: Client, outcomes: list[BaseException]) -> Callable[[str], Awaitable[None]]:
    """A call of the tool it is given that records the ``ConnectionClosed`` it ends in
    (for tests of a server that goes away mid-request)."""

    async def call(name: str) -> None:
        try:
            await client.call_tool(name)
        except ConnectionClosed as exc:
            outcomes.append(exc)

    return call


def text_of(result: Any) -> str:
    """The text of a result's first content block."""
    return str(result.content[0].text)


class Probe:
    """What the demo server's handlers saw, for the tests to look at."""

    def __init__(self) -> None:
        self.cancelled = anyio.Event()
        self.waiting = 0
        self.all_waiting = anyio.Event()
        self.crowd = 0
        self.log_levels: list[str] = []
        #: How many times the ``ask_all`` tool's handler ran.
        self.runs = 0


def demo_server(probe: Probe, *, revisions: Any = None, page_size: int = 2) -> Server:
    """A server with tools, resources, templates, prompts, completion and subscriptions."""
    server = Server("demo", "1.0", instructions="be nice", revisions=revisions)
    tool_names = ["echo", "add", "slow", "wait", "fail", "crowd", "ask", "sample", "roots", "log"]

    @server.handler("tools/list")
    async def list_tools(request: Any, ctx: RequestContext) -> Any:
        params = request.params
        cursor = None if params is msgspec.UNSET else params.cursor
        start = 0 if cursor in (None, msgspec.UNSET) else int(cursor)
        page = tool_names[start : start + page_size]
        fields: dict[str, Any] = {
            "tools": [{"name": n, "inputSchema": {"type": "object"}} for n in page]
        }
        if start + page_size < len(tool_names):
            fields["nextCursor"] = str(start + page_size)
        if ctx.stateless:
            fields.update(ttlMs=0, cacheScope="private")
        return fields

    @server.handler("tools/call")
    async def call_tool(request: Any, ctx: RequestContext) -> Any:
        t = ctx.types
        name = request.params.name
        args = request.params.arguments or {}
        if name == "echo":
            return t.CallToolResult(content=[t.TextContent(text=args["text"])])
        if name == "add":
            total = args["a"] + args["b"]
            fields: dict[str, Any] = {"content": [{"type": "text", "text": str(total)}]}
            if ctx.revision >= "2025-06-18":
                fields["structuredContent"] = {"sum": total}
            return fields
        if name == "slow":
            for step in range(1, args["steps"] + 1):
                await ctx.report_progress(step, args["steps"], f"step {step}")
            return {"content": [{"type": "text", "text": "done"}]}
        if name == "wait":
            try:
                await anyio.sleep_forever()
            finally:
                probe.cancelled.set()
        if name == "crowd":
            probe.crowd += 1
            if probe.crowd == args["of"]:
                probe.all_waiting.set()
            await probe.all_waiting.wait()
            return {"content": [{"type": "text", "text": str(args["n"])}]}
        if name == "fail":
            return {"content": [{"type": "text", "text": "no"}], "isError": True}
        if name == "ask":
            answer = await ctx.elicit(
                message="Your name?",
                requested_schema={"properties": {"name": {"type": "string"}}},
            )
            return {"content": [{"type": "text", "text": f"{answer.action} {answer.content}"}]}
        if name == "sample":
            reply = await ctx.sample(
                {
                    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                    "maxTokens": 5,
                }
            )
            return {"content": [{"type": "text", "text": reply.content.text}]}
        if name == "roots":
            roots = await ctx.list_roots()
            return {"content": [{"type": "text", "text": ",".join(r.uri for r in roots.roots)}]}
        if name == "log":
            for level in ("debug", "info", "error"):
                await ctx.log(level, {"level": level}, logger="demo")
            return {"content": []}
        if name == "ask_all":
            probe.runs += 1
            message = {"role": "user", "content": {"type": "text", "text": "hi"}}
            name_of, greeting, roots = await ctx.ask_all(
                Question.elicit(
                    message="Your name?",
                    requested_schema={"properties": {"name": {"type": "string"}}},
                    key="name",
                ),
                Question.sample({"messages": [message], "maxTokens": 5}, key="greeting"),
                Question.roots(key="roots"),
            )
            text = f"{name_of.content['name']}; {greeting.content.text}; {len(roots.roots)}"
            return {"content": [{"type": "text", "text": text}]}
        raise RequestError.invalid_params(f"no tool {name}")

    @server.handler("resources/list")
    async def list_resources(request: Any, ctx: RequestContext) -> Any:
        fields: dict[str, Any] = {"resources": [{"uri": "test://a", "name": "a"}]}
        if ctx.stateless:
            fields.update(ttlMs=0, cacheScope="private")
        return fields

    @server.handler("resources/templates/list")
    async def list_templates(request: Any, ctx: RequestContext) -> Any:
        fields: dict[str, Any] = {"resourceTemplates": [{"uriTemplate": "test://{x}", "name": "x"}]}
        if ctx.stateless:
            fields.update(ttlMs=0, cacheScope="private")
        return fields

    @server.handler("resources/read")
    async def read(request: Any, ctx: RequestContext) -> Any:
        uri = request.params.uri
        fields: dict[str, Any] = {"contents": [{"uri": uri, "text": f"text of {uri}"}]}
        if ctx.stateless:
            fields.update(ttlMs=0, cacheScope="private")
        return fields

    @server.handler("prompts/list")
    async def list_prompts(request: Any, ctx: RequestContext) -> Any:
        fields: dict[str, Any] = {"prompts": [{"name": "greet"}]}
        if ctx.stateless:
            fields.update(ttlMs=0, cacheScope="private")
        return fields

    @server.handler("prompts/get")
    async def get_prompt(request: Any, ctx: RequestContext) -> Any:
        who = (request.params.arguments or {}).get("who", "you")
        text = {"type": "text", "text": f"greet {who}"}
        return {"messages": [{"role": "user", "content": text}]}

    @server.handler("completion/complete")
    async def complete(request: Any, ctx: RequestContext) -> Any:
        value = request.params.argument.value
        names = [n for n in ("alice", "albert", "bob") if n.startswith(value)]
        return {"completion": {"values": names, "total": len(names)}}

    async def subscribed(request: Any, ctx: RequestContext) -> Any:
        return {}

    server.add_handler("resources/subscribe", subscribed)
    server.add_handler("resources/unsubscribe", subscribed)
    return server


class Fixture:
    """A server with one tool per behaviour under test, and the events its handlers
    set."""

    def __init__(self, **options: Any) -> None:
        self.started = anyio.Event()
        self.cancelled = anyio.Event()
        self.release = anyio.Event()
        self.rendezvous = anyio.Event()
        self.roots_changed = anyio.Event()
        self.server = server = Server("fixture", "1.0", **options)
        server.add_handler("tools/list", self.list_tools)
        server.add_handler("tools/call", self.call_tool)

        @server.notification_handler("notifications/roots/list_changed")
        async def roots_changed(notification: Any) -> None:
            self.roots_changed.set()

    async def list_tools(self, request: Any, ctx: RequestContext) -> Any:
        return {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}

    async def call_tool(self, request: Any, ctx: RequestContext) -> Any:
        name = request.params.name
        args = request.params.arguments or {}
        t = ctx.types
        if name == "echo":
            return t.CallToolResult(content=[t.TextContent(text=str(args.get("message")))])
        if name == "fail":
            raise RuntimeError("on purpose")
        if name == "refuse":
            raise RequestError.of(-32000, "refused", data={"why": "on purpose"})
        if name == "wrong_result":
            return t.ListToolsResult(tools=[]) if not ctx.stateless else {"tools": 5}
        if name == "progress":
            for step in (1, 2, 3):
                await ctx.report_progress(step, 3, f"step {step}")
            return {"content": [{"type": "text", "text": "done"}]}
        if name == "slow":
            self.started.set()
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                assert ctx.cancelled
                self.cancelled.set()
                raise
        if name == "held":
            self.started.set()
            await self.release.wait()
            return {"content": [{"type": "text", "text": "released"}]}
        if name == "first":
            await self.rendezvous.wait()
            return {"content": [{"type": "text", "text": "first"}]}
        if name == "second":
            self.rendezvous.set()
            return {"content": [{"type": "text", "text": "second"}]}
        if name == "log":
            for level in ("debug", "info", "error"):
                await ctx.log(level, {"level": level}, logger="fixture")
            return {"content": []}
        if name == "ask":
            answers = []
            for question in args.get("questions", ["name"]):
                answer = await ctx.elicit(
                    message=f"Your {question}?",
                    requested_schema={"properties": {question: {"type": "string"}}},
                    key=question if args.get("keyed") else None,
                )
                answers.append(answer.content[question])
            return {"content": [{"type": "text", "text": " ".join(answers)}]}
        if name == "changed":
            await ctx.notify(t.ToolListChangedNotification())
            return {"content": []}
        if name == "roots":
            roots = await ctx.list_roots()
            return {"content": [{"type": "text", "text": roots.roots[0].uri}]}
        if name == "sample":
            message = {"role": "user", "content": {"type": "text", "text": "2+2?"}}
            reply = await ctx.sample({"messages": [message], "maxTokens": 5})
            return {"content": [{"type": "text", "text": reply.content.text}]}
        raise RequestError.invalid_params(f"no tool {name}")
