"""Shared by the authorization tests: a server whose tools tell who calls them."""

from __future__ import annotations

from mcpspec.runtime.connection import RequestContext, Server


def protected_server(name: str) -> Server:
    """A server with ``whoami`` (the caller's subject and scopes) and ``shutdown``
    (callable only with the ``admin`` scope)."""
    server = Server(name, "1.0")

    @server.tool()
    async def whoami(ctx: RequestContext) -> str:
        principal = ctx.principal
        assert principal is not None
        return f"{principal.subject} {' '.join(sorted(principal.scopes))}"

    @server.tool(scopes=["admin"])
    async def shutdown() -> str:
        return "shut down"

    return server
