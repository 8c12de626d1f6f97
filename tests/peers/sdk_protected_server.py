"""The official SDK's resource server (``mcp==2.3.0``), for the OAuth interop tests of
the mcpspec client: ``python sdk_protected_server.py ISSUER PORT``.

An ``MCPServer`` with the SDK's authorization settings (it serves the Protected Resource
Metadata and answers 401 with its challenge) at ``http://127.0.0.1:PORT/mcp``, tokens of
``ISSUER`` required with scope ``mcp``. The SDK ships no token verifier: mcpspec's
``JwtVerifier`` judges the tokens. One tool, ``whoami``, answers the token's subject and
scopes. It prints ``port PORT`` once it accepts connections.
"""

from __future__ import annotations

import sys

import anyio
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

from mcpspec.runtime.connection.http.verifiers import JwtVerifier


class Verifier:
    """The SDK's token verifier protocol over mcpspec's JwtVerifier."""

    def __init__(self, issuer: str, resource: str) -> None:
        self.resource = resource
        self.jwt = JwtVerifier(issuer, resource)

    async def verify_token(self, token: str) -> AccessToken | None:
        principal = await self.jwt(token)
        if principal is None:
            return None
        return AccessToken(
            token=token,
            client_id=principal.client_id or "",
            scopes=sorted(principal.scopes),
            expires_at=int(principal.expires_at) if principal.expires_at else None,
            resource=self.resource,
            subject=principal.subject,
        )


async def main() -> None:
    issuer, port = sys.argv[1], int(sys.argv[2])
    resource = f"http://127.0.0.1:{port}/mcp"
    server = MCPServer(
        "sdk-protected",
        version="1.0",
        token_verifier=Verifier(issuer, resource),
        auth=AuthSettings(
            issuer_url=issuer,  # type: ignore[arg-type]
            resource_server_url=resource,  # type: ignore[arg-type]
            required_scopes=["mcp"],
        ),
    )

    @server.tool()
    async def whoami() -> str:
        token = get_access_token()
        assert token is not None
        return f"{token.subject} {' '.join(sorted(token.scopes))}"

    app = server.streamable_http_app()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    http = uvicorn.Server(config)

    async def announce() -> None:
        while not http.started:
            await anyio.sleep(0.01)
        print(f"port {port}", flush=True)

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(announce)
        await http.serve()
        task_group.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
