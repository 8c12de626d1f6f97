"""Hostile answers to the HTTP client, generated: a server that answers some of the
client's HTTP requests with whatever it likes (any status, media type, headers and
body; SSE streams with any fields, cut anywhere) never makes a call raise anything but
the library's own errors, nor hang past its timeout, and the client still closes.

The honest answers come from the library's own app (in process, through httpx's ASGI
transport); the examples decide which requests get a hostile answer instead.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mcpspec.runtime.connection import Client, Server, errors
from mcpspec.runtime.connection.http import HttpApp, http_app
from mcpspec.runtime.connection.http.client import HttpClientStream
from tests.http_app_kit import json_values, sse_messages

pytestmark = pytest.mark.anyio

#: What a call may raise when the server misbehaves: the library's errors.
TYPED = tuple(getattr(errors, name) for name in errors.__all__)
#: Bound on each call and on opening (seconds); the example's guard is above their sum.
CALL_TIMEOUT = 1.0
GUARD = 30.0
URL = "http://127.0.0.1:8000/mcp"


ANYIO_BACKENDS = ("asyncio",)


def build_app() -> HttpApp:
    server = Server("honest", "1.0")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text."""
        return text

    # Long-lived GET streams would never end through httpx's ASGI transport.
    return http_app(server, standalone_stream=False)


# -- hostile answers ---------------------------------------------------------------------------

#: SSE lines, ``{reply}`` standing for the honest answer's JSON.
sse_lines = st.one_of(
    st.sampled_from(
        [
            "event: message",
            "data: {reply}",
            "data: {reply}",
            "id: 1",
            "id: s:2",
            "retry: 0",
            "retry: 5",
            "retry: 9999999999",
            ": keep-alive",
            "",
            "data: {",
            "event: endpoint",
            "data: /elsewhere",
        ]
    ),
    json_values.map(lambda value: "data: " + json.dumps(value)),
    st.text(max_size=30).map(lambda text: text.replace("\r", "")),
)


@st.composite
def hostile_answers(draw: st.DrawFn) -> dict[str, Any]:
    """One HTTP answer: status, headers, and what its body is made of (``kind``): SSE
    lines (where ``{reply}`` is the honest answer's JSON), any JSON, the honest answer
    with one ``member`` set to ``value``, the honest answer cut in half, any bytes, or
    nothing."""
    kind = draw(st.sampled_from(["sse", "json", "member", "cut", "bytes", "empty"]))
    answer: dict[str, Any] = {"kind": kind}
    if kind == "sse":
        lines = draw(st.lists(sse_lines, max_size=8))
        answer["text"] = "\n".join(lines) + draw(st.sampled_from(["", "\n\n"]))
        media = "text/event-stream"
    elif kind == "json":
        answer["text"] = json.dumps(draw(json_values))
        media = "application/json"
    elif kind == "member":
        answer["member"] = draw(st.sampled_from(["id", "jsonrpc", "result", "error", "method"]))
        answer["value"] = draw(json_values)
        media = "application/json"
    elif kind == "bytes":
        answer["data"] = draw(st.binary(max_size=100))
        media = draw(st.sampled_from(["application/json", "text/html", "text/event-stream"]))
    else:
        media = draw(st.sampled_from(["application/json", "text/event-stream", ""]))
    headers = {"content-type": media} if media else {}
    if draw(st.booleans()):
        headers["mcp-session-id"] = draw(
            st.sampled_from(["s2", "x" * 2000, "é", ""]) | st.text(max_size=8)
        )
    answer["status"] = draw(st.sampled_from([200, 200, 200, 202, 400, 404, 405, 500, 502]))
    answer["headers"] = headers
    return answer


def render(answer: dict[str, Any], honest: bytes) -> httpx.Response:
    """The hostile ``answer``, made from the honest answer's JSON ``honest``."""
    kind = answer["kind"]
    if kind == "sse":
        data = answer["text"].replace("{reply}", honest.decode("utf-8", "replace")).encode()
    elif kind == "json":
        data = answer["text"].encode()
    elif kind == "member":
        try:
            message = json.loads(honest)
        except ValueError:
            message = {}
        if isinstance(message, dict):
            message[answer["member"]] = answer["value"]
        data = json.dumps(message).encode()
    elif kind == "cut":
        data = honest[: len(honest) // 2]
    elif kind == "bytes":
        data = answer["data"]
    else:
        data = b""
    headers = [(k.encode("utf-8"), v.encode("utf-8")) for k, v in answer["headers"].items()]
    return httpx.Response(answer["status"], headers=headers, content=data)


class Mischief(httpx.AsyncBaseTransport):
    """The honest app's answers, but for the requests ``plan`` gives a hostile one
    (the ``n``-th HTTP request gets ``plan[n]`` when it is not ``None``)."""

    def __init__(self, app: HttpApp, plan: list[dict[str, Any] | None]) -> None:
        self._honest = httpx.ASGITransport(app=app)
        self._plan = list(plan)
        self.requests = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        answer = self._plan.pop(0) if self._plan else None
        honest = await self._honest.handle_async_request(request)
        if answer is None:
            return honest
        data = await honest.aread()
        await honest.aclose()
        return render(answer, _json_of(data))


def _json_of(data: bytes) -> bytes:
    """The (last) JSON-RPC message of an honest body, JSON or SSE."""
    if data.startswith((b"{", b"[")):
        return data
    messages = sse_messages(data.decode("utf-8", "replace"))
    return json.dumps(messages[-1]).encode() if messages else b"{}"


# -- the property ------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    plan=st.lists(st.one_of(st.none(), st.none(), hostile_answers()), max_size=8),
    mode=st.sampled_from(["auto", "2025-11-25", "2026-07-28", "legacy"]),
)
async def test_any_server_answer_ends_in_a_result_or_a_typed_error(
    plan: list[dict[str, Any] | None], mode: str
) -> None:
    app = build_app()
    outcomes: list[str] = []
    async with app.running():
        transport = Mischief(app, plan)
        async with httpx.AsyncClient(transport=transport) as http:

            def connect() -> HttpClientStream:
                return HttpClientStream(URL, http_client=http, reconnect_delay=0.01, timeout=2)

            with anyio.fail_after(GUARD):
                try:
                    async with Client(connect, mode=mode, open_timeout=CALL_TIMEOUT) as client:
                        for text in ("one", "two"):
                            try:
                                result = await client.call_tool(
                                    "echo", {"text": text}, timeout=CALL_TIMEOUT
                                )
                            except TYPED as exc:
                                outcomes.append(type(exc).__name__)
                            else:
                                outcomes.append("result")
                                # An answer that reads as a result is the honest one.
                                assert result.text == text
                except TYPED as exc:
                    outcomes.append("open: " + type(exc).__name__)
    event(" ".join(outcomes))  # the mix, with --hypothesis-show-statistics
    assert outcomes
    if not any(plan):
        assert outcomes == ["result", "result"]
