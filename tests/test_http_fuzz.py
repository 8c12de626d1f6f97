"""Hostile requests to the ASGI app, generated: whatever a client sends (any method,
path, headers and body, the body cut into chunks anywhere), the app answers it with one
HTTP response that is never a 500, raises nothing, logs no failure of its own, and goes
on serving: the next valid request of each era is answered as if nothing happened.

The app is called in process, as an ASGI server calls it. After its body, a request's
``receive`` waits until the response is complete (or briefly, for a stream that never
ends) and then reports the client gone, so long-lived streams end too.
"""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mcpspec.runtime.connection import RequestContext, Server
from mcpspec.runtime.connection.http import HttpApp, http_app
from tests.http_app_kit import ACCEPT, META, STATELESS, json_values, sse_messages

pytestmark = pytest.mark.anyio

HANDSHAKE = ("2025-03-26", "2025-06-18", "2025-11-25")
#: How long a request whose response never completes (a stream) stays connected.
LINGER = 0.05
#: Generous bound on one request: only a hang reaches it.
GUARD = 10.0


ANYIO_BACKENDS = ("asyncio",)


def build_server() -> Server:
    server = Server("fuzz", "1.0", list_changed=True)

    @server.tool()
    async def echo(text: str) -> str:
        """Echo the text."""
        return text

    @server.tool()
    async def located(region: str, ctx: RequestContext) -> str:
        """Report progress once (an SSE answer), then name the region."""
        await ctx.report_progress(1, 1)
        return region

    server.tools["located"].input_schema["properties"]["region"]["x-mcp-header"] = "Region"

    @server.handler("resources/read")
    async def read(request: Any, ctx: RequestContext) -> Any:
        uri = request.params.uri
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "read me"}]}

    @server.handler("prompts/get")
    async def greet(request: Any, ctx: RequestContext) -> Any:
        name = request.params.name
        text = {"type": "text", "text": f"prompt {name}"}
        return {"messages": [{"role": "user", "content": text}]}

    return server


#: The settings an example's app is built with.
SETTINGS: tuple[dict[str, Any], ...] = (
    {},
    {"legacy_sse": True},
    {"json_response": True},
    {"sessions": False},
    {"resumable": False, "standalone_stream": False, "batches": False},
    {"require_protocol_version": True, "strict_initialize": True, "max_body_bytes": 512},
)


# -- calling the app in process ----------------------------------------------------------------


@dataclass
class Exchange:
    """What the app sent for one request."""

    messages: list[dict[str, Any]]

    @property
    def starts(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["type"] == "http.response.start"]

    @property
    def status(self) -> int:
        return int(self.starts[0]["status"])

    @property
    def headers(self) -> dict[bytes, bytes]:
        return {bytes(k).lower(): bytes(v) for k, v in self.starts[0].get("headers", [])}

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages[1:])

    @property
    def complete(self) -> bool:
        last = self.messages[-1]
        return last["type"] == "http.response.body" and not last.get("more_body", False)


async def exchange(
    app: HttpApp,
    method: str,
    path: str,
    headers: list[tuple[bytes, bytes]],
    chunks: list[bytes],
    query: bytes = b"",
) -> Exchange:
    """Call ``app`` with one request, as an ASGI server would."""
    messages: list[dict[str, Any]] = []
    complete = anyio.Event()
    pending = list(chunks) or [b""]

    async def receive() -> dict[str, Any]:
        if pending:
            chunk = pending.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(pending)}
        with anyio.move_on_after(LINGER):
            await complete.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        assert not complete.is_set(), f"a message after the response was complete: {message}"
        messages.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            complete.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode("utf-8", "surrogateescape"),
        "root_path": "",
        "query_string": query,
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    with anyio.fail_after(GUARD):
        await app(scope, receive, send)
    return Exchange(messages)


def plain_headers(**extra: str) -> list[tuple[bytes, bytes]]:
    headers = {"host": "127.0.0.1:8000", "content-type": "application/json", "accept": ACCEPT}
    headers.update(extra)
    return [(k.encode(), v.encode()) for k, v in headers.items()]


def encode(message: Any) -> bytes:
    return json.dumps(message).encode()


def reply_of(result: Exchange) -> Any:
    """The JSON-RPC message of a JSON or SSE answer (the last one of an SSE stream)."""
    if result.headers.get(b"content-type", b"").startswith(b"text/event-stream"):
        return sse_messages(result.body.decode())[-1]
    return json.loads(result.body)


async def open_session(app: HttpApp, version: str = "2025-11-25") -> str | None:
    """Initialize a handshake session; its id (``None`` without sessions)."""
    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "1"},
        },
    }
    result = await exchange(app, "POST", "/mcp", plain_headers(), [encode(body)])
    assert result.status == 200, result.messages
    assert reply_of(result)["result"]["protocolVersion"] == version
    session_id = result.headers.get(b"mcp-session-id")
    return None if session_id is None else session_id.decode()


async def assert_still_serving(app: HttpApp) -> None:
    """The next valid request of each era is answered."""
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "still here"}, "_meta": META},
    }
    headers = plain_headers(
        **{"mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "echo"}
    )
    result = await exchange(app, "POST", "/mcp", headers, [encode(call)])
    assert result.status == 200, result.messages
    answer = reply_of(result)
    assert answer["id"] == 7
    assert answer["result"]["content"] == [{"type": "text", "text": "still here"}]

    session_id = await open_session(app)
    headers = plain_headers(**{"mcp-protocol-version": "2025-11-25"})
    if session_id is not None:
        headers.append((b"mcp-session-id", session_id.encode()))
    ping = {"jsonrpc": "2.0", "id": 8, "method": "ping"}
    result = await exchange(app, "POST", "/mcp", headers, [encode(ping)])
    assert result.status == 200, result.messages
    assert reply_of(result) == {"jsonrpc": "2.0", "id": 8, "result": {}}


class FailureLog(logging.Handler):
    """Keeps the records of errors the library logs."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def __enter__(self) -> FailureLog:
        logging.getLogger("mcpspec").addHandler(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        logging.getLogger("mcpspec").removeHandler(self)


# -- what a hostile client sends -------------------------------------------------------------

#: Header text: the latin-1 range (sent as UTF-8 bytes, as careless clients do).
header_text = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"),
    max_size=40,
)


def sentinel(text: str) -> str:
    """``text`` in the base64 sentinel form of ``Mcp-Name`` and ``Mcp-Param-*``."""
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def rare() -> st.SearchStrategy[bool]:
    """``True`` about one time in ten. Hypothesis favours small integers, so the rare
    case is the largest of ten, not the smallest."""
    return st.integers(0, 9).map(lambda n: n == 9)


def usually(value: str | None, *others: str | None) -> st.SearchStrategy[str | None]:
    """``value`` nine times in ten (about), else one of ``others`` or any header text: most
    requests pass the checks at the door, so the layers behind it are reached too."""
    rarely = st.one_of(st.sampled_from(others), header_text) if others else header_text
    return rare().flatmap(lambda hostile: rarely if hostile else st.just(value))


#: Each method the fuzzed client calls, with params it might carry (valid or nearly).
PARAMS: dict[str, list[dict[str, Any]]] = {
    "tools/call": [
        {"name": "echo", "arguments": {"text": "hi"}},
        {"name": "located", "arguments": {"region": "eu-west"}},
        {"name": "located", "arguments": {"region": "ünïcode \n"}},
        {"name": "located", "arguments": {}},
        {"name": "nope", "arguments": {}},
    ],
    "tools/list": [{}],
    "initialize": [
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        }
    ],
    "notifications/initialized": [{}],
    "ping": [{}],
    "resources/read": [{"uri": "file:///readme"}],
    "prompts/get": [{"name": "greet", "arguments": {"name": "ada"}}],
    "server/discover": [{}],
    "subscriptions/listen": [{"notifications": {"toolsListChanged": True}}],
    "logging/setLevel": [{"level": "debug"}],
    "notifications/cancelled": [{"requestId": 1, "reason": "stop"}],
    "notifications/progress": [{"progressToken": 1, "progress": 1}],
    "completion/complete": [{}],
    "no/such/method": [{}],
}


@st.composite
def messages(draw: st.DrawFn, version: str = STATELESS) -> Any:
    """A JSON-RPC message for ``version``: usually valid, else broken in one place."""
    method = draw(st.sampled_from(sorted(PARAMS)))
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if not method.startswith("notifications/") or draw(rare()):
        message["id"] = draw(st.one_of(st.integers(0, 5), st.just("a")))
    params = dict(draw(st.sampled_from(PARAMS[method])))
    if version == STATELESS or draw(rare()):
        meta = dict(META)
        if draw(rare()):
            meta[draw(st.sampled_from(sorted(META)))] = draw(json_values)
        params["_meta"] = meta
    if params or draw(st.booleans()):
        message["params"] = params
    if draw(rare()):
        # Break one member: any value where the message had another, or a new member.
        key = draw(st.sampled_from(["jsonrpc", "method", "id", "params", "result", "error"]))
        message[key] = draw(json_values)
    return message


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def bodies(version: str) -> st.SearchStrategy[bytes]:
    """A POST body: mostly a message of ``version`` (alone or in a batch), else JSON
    that is no message, bytes that are no JSON, or nesting past any stack."""
    message = messages(version).map(encode)
    hostile = st.one_of(
        st.lists(messages(version), min_size=0, max_size=3).map(encode),
        json_values.map(encode),
        st.binary(max_size=200),
        st.integers(1, 100_000).map(nested),
        st.integers(1, 100_000).map(lambda n: b"[" * n),
        message.map(lambda data: data[: len(data) // 2]),
        st.just(b""),
    )
    return rare().flatmap(lambda rarely: hostile if rarely else message)


#: Stands for the id of the session each example opens first (drawn before it exists).
SESSION = "{session}"


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    """One hostile request: method, path, headers (where :data:`SESSION` stands for the
    session's id), body chunks."""
    # The era's headers usually agree with the body, and name a revision served.
    version = draw(st.sampled_from([STATELESS, STATELESS, *HANDSHAKE]))
    body = draw(bodies(version))
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        decoded = None
    method_of_body = decoded.get("method") if isinstance(decoded, dict) else None
    name_of_body = None
    if isinstance(decoded, dict) and isinstance(decoded.get("params"), dict):
        name_of_body = decoded["params"].get("name") or decoded["params"].get("uri")
    name = name_of_body if isinstance(name_of_body, str) else None
    fields: dict[str, str | None] = {
        "host": draw(usually("127.0.0.1:8000", "localhost", "evil.example", None)),
        "origin": draw(usually(None, "http://localhost:8000", "http://evil.example", "null")),
        "content-type": draw(
            usually("application/json", "application/json; charset=utf-8", "text/plain", None)
        ),
        "accept": draw(usually(ACCEPT, "application/json", "text/event-stream", "*/*", None)),
        "mcp-protocol-version": draw(usually(version, "2024-11-05", "2099-01-01", "", None)),
        "mcp-method": draw(
            usually(method_of_body if isinstance(method_of_body, str) else None, "ping", None)
        ),
        "mcp-name": draw(
            usually(
                draw(st.sampled_from([name, sentinel(name or "")])) if name else None,
                "=?base64?!?=",
                "echo",
            )
        ),
        "mcp-param-region": draw(usually(None, "eu-west", sentinel("ünïcode \n"), "=?base64?")),
        "mcp-session-id": draw(usually(SESSION, SESSION + "x", None)),
        "last-event-id": draw(usually(None, "0:1", SESSION + ":0", "9" * 30)),
        "authorization": draw(usually(None, "Bearer x", "Basic eA==")),
        "content-length": draw(usually(None, str(len(body)), "0", "-1", "9" * 25)),
    }
    pairs = [(k, v) for k, v in fields.items() if v is not None]
    pairs += draw(st.lists(st.tuples(st.sampled_from(["x-extra", "mcp-param-other"]), header_text)))
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=3)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    return {
        "method": draw(usually("POST", "GET", "DELETE", "PUT", "HEAD")),
        "path": draw(usually("/mcp", "/mcp/", "/MCP", "/mcp/x", "/", "/sse", "/messages")),
        "query": draw(usually("", "session_id=" + SESSION)),
        "headers": pairs,
        "chunks": chunks,
    }


def assert_well_answered(result: Exchange, request: dict[str, Any]) -> None:
    """One response, begun by its head, not a 500; a complete JSON answer is JSON."""
    assert result.messages, f"no response to {request}"
    assert result.messages[0]["type"] == "http.response.start", result.messages
    assert len(result.starts) == 1, result.messages
    assert 200 <= result.status < 600 and result.status != 500, (result.messages, request)
    content_type = result.headers.get(b"content-type", b"")
    if content_type.startswith(b"application/json") and result.complete:
        answer = json.loads(result.body)
        for message in answer if isinstance(answer, list) else [answer]:
            assert message.get("jsonrpc") == "2.0", answer
    if not content_type.startswith(b"text/event-stream") and result.status != 200:
        assert result.complete, result.messages


# -- the properties --------------------------------------------------------------------------


def with_session(text: str, session_id: str | None) -> bytes:
    return text.replace(SESSION, session_id or "none").encode()


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=st.lists(requests(), min_size=1, max_size=4), options=st.sampled_from(SETTINGS))
async def test_any_request_gets_one_response_and_the_app_goes_on(
    batch: list[dict[str, Any]], options: dict[str, Any]
) -> None:
    app = http_app(build_server(), **options)
    with FailureLog() as failures:
        async with app.running():
            session_id = await open_session(app)
            for request in batch:
                headers = [(k.encode(), with_session(v, session_id)) for k, v in request["headers"]]
                result = await exchange(
                    app,
                    request["method"],
                    request["path"],
                    headers,
                    request["chunks"],
                    with_session(request["query"], session_id),
                )
                assert_well_answered(result, request)
                event(f"status {result.status}")  # the mix, with --hypothesis-show-statistics
            await assert_still_serving(app)
            assert len(app.sessions) <= app.settings.max_sessions
            assert len(app.stateless._idle) <= 64
    assert not failures.records, [r.getMessage() for r in failures.records]
    assert not app.server._connections, "a connection outlived the app"


async def test_sessions_stay_bounded_under_a_flood_of_initialize() -> None:
    """Initialize after initialize, never closed: the table keeps at most its bound
    and the newest session still works."""
    app = http_app(build_server(), max_sessions=8)
    async with app.running():
        ids = [await open_session(app) for _ in range(40)]
        assert len(app.sessions) == 8
        assert len(set(ids)) == 40
        headers = plain_headers(
            **{"mcp-protocol-version": "2025-11-25", "mcp-session-id": str(ids[-1])}
        )
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        result = await exchange(app, "POST", "/mcp", headers, [encode(ping)])
        assert reply_of(result)["result"] == {}
        evicted = plain_headers(
            **{"mcp-protocol-version": "2025-11-25", "mcp-session-id": str(ids[0])}
        )
        result = await exchange(app, "POST", "/mcp", evicted, [encode(ping)])
        assert result.status == 404
