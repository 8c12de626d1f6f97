"""Serving scripted HTTP servers to the HTTP client in tests: what a server saw, answers
written by hand (JSON, SSE, errors), a server that speaks only the HTTP+SSE transport of
2024-11-05, and a stream that breaks mid-answer."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

#: A hang guard for waits on events the test itself causes (never a timed assertion).
GUARD = 20


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """``app`` served by uvicorn in this process; yields its base URL. The socket listens
    before the server starts, so connections wait in its backlog until it serves."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="off"))
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(lambda: server.serve(sockets=[sock]))
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            server.force_exit = True


class Seen:
    """One HTTP request the scripted server got."""

    def __init__(self, method: str, path: str, headers: dict[str, str], body: Any) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body

    @property
    def rpc(self) -> str | None:
        return self.body.get("method") if isinstance(self.body, dict) else None


Handler = Callable[[Seen], Awaitable[Response | None]]


class Scripted:
    """A scripted MCP server over HTTP: ``handle`` answers what it wants to, the rest gets
    the answers of a plain 2025-11-25 server (session ``s1``; GET: 405)."""

    def __init__(self, handle: Handler | None = None, *, version: str = "2025-11-25") -> None:
        self.handle = handle
        self.version = version
        self.seen: list[Seen] = []
        self.deleted = anyio.Event()

    def app(self) -> Starlette:
        methods = ["GET", "POST", "DELETE"]
        return Starlette(
            routes=[Route("/{path:path}", self._endpoint, methods=methods)],
        )

    async def _endpoint(self, request: Request) -> Response:
        raw = await request.body()
        body = json.loads(raw) if raw else None
        seen = Seen(request.method, request.url.path, dict(request.headers), body)
        self.seen.append(seen)
        if self.handle is not None:
            answer = await self.handle(seen)
            if answer is not None:
                return answer
        return self.default(seen)

    def default(self, seen: Seen) -> Response:
        if seen.method == "DELETE":
            self.deleted.set()
            return Response(status_code=200)
        if seen.method == "GET":
            return Response(status_code=405)
        message = seen.body
        if "id" not in message or "method" not in message:
            return Response(status_code=202)  # a notification or a response
        if message["method"] == "initialize":
            return JSONResponse(
                result(message, initialize_result(self.version)),
                headers={"Mcp-Session-Id": "s1"},
            )
        if message["method"] == "tools/call":
            text = message["params"]["arguments"].get("text", "")
            return JSONResponse(result(message, {"content": [{"type": "text", "text": text}]}))
        return JSONResponse(error(message["id"], -32601, "Method not found"))

    def posted(self, rpc: str) -> list[Seen]:
        return [s for s in self.seen if s.method == "POST" and s.rpc == rpc]


def initialize_result(version: str) -> dict[str, Any]:
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "scripted", "version": "1"},
    }


def result(message: dict[str, Any], value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message["id"], "result": value}


def error(request_id: Any, code: int, text: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}


def sse(*events: str) -> bytes:
    return "".join(events).encode()


def sse_message(message: dict[str, Any], event_id: str | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: message\ndata: {json.dumps(message)}\n\n"


def tool_text(message: dict[str, Any], text: str) -> dict[str, Any]:
    return result(message, {"content": [{"type": "text", "text": text}]})


def breaking_stream() -> Scripted:
    """A scripted server whose SSE answer to ``tools/call`` breaks after its priming
    event (``id: e1``, a retry of 1 ms), and whose ``GET`` with ``Last-Event-ID: e1``
    then brings the answer, ``"resumed"``."""

    async def handle(seen: Seen) -> Response | None:
        if seen.rpc == "tools/call":
            return Response(
                sse("id: e1\ndata:\n\n", "retry: 1\n\n"), media_type="text/event-stream"
            )
        if seen.method == "GET" and seen.headers.get("last-event-id") == "e1":
            (call,) = scripted.posted("tools/call")
            body = sse_message(tool_text(call.body, "resumed"), "e2")
            return Response(body.encode(), media_type="text/event-stream")
        return None

    scripted = Scripted(handle)
    return scripted


class LegacyServer:
    """A scripted HTTP+SSE server: ``GET /sse`` gives the endpoint, ``POST /messages``
    answers on that stream; everything else is 404."""

    def __init__(self, endpoint: str = "/messages?session=1") -> None:
        self.endpoint = endpoint
        self.send, self.receive = anyio.create_memory_object_stream[bytes](16)
        self.posted: list[dict[str, Any]] = []

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/sse", self.stream, methods=["GET"]),
                Route("/messages", self.message, methods=["POST"]),
            ]
        )

    async def stream(self, request: Request) -> Response:
        async def events() -> AsyncIterator[bytes]:
            yield f"event: endpoint\ndata: {self.endpoint}\n\n".encode()
            async for data in self.receive:
                yield data

        return StreamingResponse(events(), media_type="text/event-stream")

    async def message(self, request: Request) -> Response:
        message = json.loads(await request.body())
        self.posted.append(message)
        if message.get("method") == "initialize":
            answer = result(message, initialize_result("2024-11-05"))
        elif message.get("method") == "tools/call":
            answer = tool_text(message, "legacy " + message["params"]["arguments"]["text"])
        elif "id" in message and "method" in message:
            answer = error(message["id"], -32601, "Method not found")
        else:
            return Response(status_code=202)
        await self.send.send(sse_message(answer).encode())
        return Response(status_code=202)
