"""An HTTP server that echoes the bearer token it was given wherever a server's words
reach a checker's report: its instructions, a tool's name, a resource's URI, an error
message and, for a token it does not take, its 401 challenge. The checker must show
none of it.

Run: ``python echoing.py TOKEN --http PORT``.
"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn

from mcpspec.runtime.connection import RequestError, Server
from mcpspec.runtime.connection.http import http_app


def build(token: str) -> Any:
    server = Server("echoing", "1.0", instructions=f"Welcome, holder of {token}")

    @server.tool(name=f"echo {token}")
    async def echo() -> str:
        return f"you sent {token}"

    @server.resource(f"notes://{token}")
    async def note() -> str:
        raise RequestError.of(-32000, f"no note for {token}")

    app = http_app(server)

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"").decode()
            if given != f"Bearer {token}":
                challenge = f'Bearer error="invalid_token", error_description="{given}"'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"www-authenticate", challenge.encode())],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        await app(scope, receive, send)

    return guarded


if __name__ == "__main__":
    port = int(sys.argv[sys.argv.index("--http") + 1])
    uvicorn.run(build(sys.argv[1]), host="127.0.0.1", port=port, log_level="warning")
