"""Shared by the task tests of both eras: the task tools every task server under test
has."""

from __future__ import annotations

from typing import Any

import anyio

from mcpspec.runtime.connection import Question, RequestContext, RequestError, Server, ToolError


def add_task_tools(server: Server) -> dict[str, Any]:
    """Declare on ``server`` the tools ``hold`` (waits for ``seen["gate"]``, noting a
    cancellation in ``seen["cancelled"]``), ``broken`` (a tool error) and ``refused``
    (-32602), each callable as a task; returns ``seen``."""
    seen: dict[str, Any] = {"gate": anyio.Event(), "cancelled": False}

    @server.tool(task="optional")
    async def hold() -> str:
        try:
            await seen["gate"].wait()
        except anyio.get_cancelled_exc_class():
            seen["cancelled"] = True
            raise
        return "released"

    @server.tool(task="optional")
    async def broken() -> str:
        raise ToolError("it broke")

    @server.tool(task="optional")
    async def refused() -> str:
        raise RequestError.invalid_params("not like that")

    return seen


def add_two_names(server: Server) -> None:
    """Declare on ``server`` the task tool ``two_names``: it asks two questions at once
    (keys ``first`` and ``second``, each a form with a ``name``), then answers both
    names."""
    form = {"type": "object", "properties": {"name": {"type": "string"}}}

    @server.tool(task="optional")
    async def two_names(ctx: RequestContext) -> str:
        first, second = await ctx.ask_all(
            Question.elicit(message="first?", requested_schema=form, key="first"),
            Question.elicit(message="second?", requested_schema=form, key="second"),
        )
        return f"{first.content['name']} and {second.content['name']}"
