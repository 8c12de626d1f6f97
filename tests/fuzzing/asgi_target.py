"""Target: the ASGI app of the server (``http_app(server)``), called directly with
scripted ``receive`` and ``send``, fed mutated HTTP requests.

An input is an :class:`Exchange`: the app's settings (sessions on or off, JSON or SSE
answers) and requests one after the other, each with its method, path, headers, body
chunks, the ``receive`` call at which the client disconnects (``http.disconnect``) and
the ``send`` call that raises ``OSError`` (as ASGI servers do for a client gone).
Seeds are valid exchanges of every era; mutations change headers, bodies, methods,
paths and chunking, and disconnect or break ``send`` at every point.

The oracle (:func:`check`): the app returns from every call (nothing escapes) within a
bound; each request not cut short gets one well-formed ``http.response.start`` (a status,
byte headers) before any body, and nothing after its last body; nothing is logged at
ERROR.
"""

from __future__ import annotations

import json
import random
import tracemalloc
from dataclasses import dataclass, field, replace
from typing import Any

import anyio

from mcpspec.runtime.connection.http import HttpSettings, http_app

from .conversation import (
    LIMIT,
    REVISIONS,
    STATELESS,
    Failure,
    drop_one_at_a_time,
    errors_logged,
    fuzz_server,
    held_bytes,
    initialize,
    logged_failures,
    message,
    request,
    where,
)

__all__ = ["Exchange", "HttpRequest", "check", "generate", "run"]

#: Bound on one input: only a hang reaches it.
HANG = 10.0
ACCEPT = "application/json, text/event-stream"
#: What the app may still hold, its sessions open, per byte it was sent (and wrote),
#: plus a fixed allowance.
MEMORY_FACTOR = 8
MEMORY_ALLOWANCE = 1 << 20
#: Replaced in a header value by the session id the app minted last.
SESSION = "%SESSION%"


@dataclass(frozen=True)
class HttpRequest:
    """One request: ``disconnect_at`` is the ``receive`` call (0-based) that returns
    ``http.disconnect`` (``None``: once the response is over, or everything waits);
    ``fail_send_at`` the ``send`` call that raises ``OSError``."""

    method: str
    headers: tuple[tuple[str, str], ...]
    chunks: tuple[bytes, ...]
    path: str = "/mcp"
    disconnect_at: int | None = None
    fail_send_at: int | None = None


@dataclass(frozen=True)
class Exchange:
    """One input: the app's settings and its requests, in order."""

    requests: tuple[HttpRequest, ...]
    sessions: bool = True
    json_response: bool = False
    measure: bool = False
    mutations: tuple[str, ...] = ()

    def describe(self) -> str:
        """The input as Python (a regression test can paste it)."""
        return (
            f"Exchange(requests={self.requests!r}, sessions={self.sessions!r}, "
            f"json_response={self.json_response!r}, measure={self.measure!r})"
        )


@dataclass
class Response:
    """What ``send`` got for one request."""

    status: int | None = None
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)
    complete: bool = False
    cut: bool = False
    problems: list[str] = field(default_factory=list)


# -- the seeds -----------------------------------------------------------------------------------


def _base(revision: str) -> list[tuple[str, str]]:
    headers = [("host", "127.0.0.1:8000"), ("content-type", "application/json"), ("accept", ACCEPT)]
    return [*headers, ("mcp-protocol-version", revision)]


def _post(body: dict[str, Any], revision: str, session: bool) -> HttpRequest:
    headers = _base(revision)
    if revision == STATELESS:
        headers.append(("mcp-method", body["method"]))
        name = body.get("params", {}).get("name")
        if isinstance(name, str):
            headers.append(("mcp-name", name))
    elif session:
        headers.append(("mcp-session-id", SESSION))
    return HttpRequest("POST", tuple(headers), (message(body),))


def seed(revision: str, sessions: bool, rng: random.Random) -> list[HttpRequest]:
    """A valid exchange in ``revision``."""
    out: list[HttpRequest] = []
    ids = iter(range(1, 100))
    stateless = revision == STATELESS
    if not stateless:
        init = initialize(0, revision)
        out.append(HttpRequest("POST", tuple(_base(revision)[:3]), (message(init),)))
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        out.append(_post(note, revision, sessions))

    def call(name: str, **params: Any) -> HttpRequest:
        arguments = params.pop("arguments", {})
        body = request(
            next(ids), "tools/call", {"name": name, "arguments": arguments, **params}, revision
        )
        return _post(body, revision, sessions and not stateless)

    def plain(method: str, params: dict[str, Any] | None) -> HttpRequest:
        return _post(
            request(next(ids), method, params, revision), revision, sessions and not stateless
        )

    pool = [
        plain("tools/list", {}),
        call("echo", arguments={"text": "hi"}),
        call("steps", arguments={"n": 2}, _meta={"progressToken": "p"}),
        # (a question in a handshake era waits for an answer this client never gives)
        *([call("ask")] if stateless else []),
        call("announce"),
        plain("resources/read", {"uri": "fuzz://a"}),
    ]
    if stateless:
        pool.append(plain("server/discover", {}))
        pool.append(plain("subscriptions/listen", {"notifications": {"toolsListChanged": True}}))
    else:
        pool.append(plain("ping", None))
        pool.append(plain("resources/subscribe", {"uri": "fuzz://a"}))
        pool.append(plain("logging/setLevel", {"level": "debug"}))
        if sessions:
            get_headers = [h for h in _base(revision) if h[0] != "content-type"]
            get_headers += [("mcp-session-id", SESSION)]
            pool.append(HttpRequest("GET", tuple(get_headers), ()))
    rng.shuffle(pool)
    out += pool[: rng.randint(1, 4)]
    if sessions and not stateless and rng.random() < 0.3:
        delete = (("host", "127.0.0.1:8000"), ("mcp-session-id", SESSION))
        out.append(HttpRequest("DELETE", delete, ()))
    return out


# -- the mutations -------------------------------------------------------------------------------


def _pick(requests: list[HttpRequest], rng: random.Random) -> int:
    return rng.randrange(len(requests))


def m_headers(requests: list[HttpRequest], rng: random.Random) -> None:
    index = _pick(requests, rng)
    headers = list(requests[index].headers)
    kind = rng.randrange(4)
    if kind == 0 and headers:
        del headers[rng.randrange(len(headers))]
    elif kind == 1 and headers:
        at = rng.randrange(len(headers))
        value = rng.choice(
            ("", "x", "\u00e9", "2024-11-05", "9999-01-01", "text/plain", "a" * 5000, SESSION)
        )
        headers[at] = (headers[at][0], value)
    elif kind == 2:
        name = rng.choice(
            (
                "origin",
                "mcp-session-id",
                "last-event-id",
                "mcp-method",
                "mcp-name",
                "authorization",
                "content-encoding",
                "mcp-param-x",
            )
        )
        headers.append(
            (name, rng.choice(("http://evil.example", "x", "0", "tools/call", "gzip", "Bearer x")))
        )
    else:
        headers += headers[: rng.randint(0, len(headers))]  # repeated headers
    requests[index] = replace(requests[index], headers=tuple(headers))


def m_body(requests: list[HttpRequest], rng: random.Random) -> None:
    index = _pick(requests, rng)
    body = b"".join(requests[index].chunks)
    kind = rng.randrange(7)
    if kind == 0 and body:
        at = rng.randrange(len(body))
        body = body[:at] + bytes([body[at] ^ (1 << rng.randint(0, 7))]) + body[at + 1 :]
    elif kind == 1:
        body = body[: rng.randint(0, len(body))]
    elif kind == 2:
        body = b"[" + body + b"," + body + b"]"
    elif kind == 3:
        body = body.replace(b'"', b'"\xff', 1)
    elif kind == 4:
        body = (
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"'
            + b"x" * (LIMIT + 10)
            + b'"}}}'
        )
    elif kind == 5:
        body = rng.choice((b"", b"null", b"{}", b"[]", b"1", b'{"jsonrpc":"2.0"}', b"\x00" * 10))
    else:
        try:
            value = json.loads(body)
        except ValueError:
            return
        if isinstance(value, dict):
            value["id"] = rng.choice((None, 0, "", [], {}, True, 2**70))
            body = message(value)
    requests[index] = replace(requests[index], chunks=(body,))


def m_chunking(requests: list[HttpRequest], rng: random.Random) -> None:
    index = _pick(requests, rng)
    body = b"".join(requests[index].chunks)
    cuts = sorted(rng.randint(0, len(body)) for _ in range(rng.randint(1, 4)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    requests[index] = replace(requests[index], chunks=tuple(pieces))


def m_method(requests: list[HttpRequest], rng: random.Random) -> None:
    index = _pick(requests, rng)
    method = rng.choice(("GET", "DELETE", "PUT", "OPTIONS", "HEAD", "post", "POST"))
    path = rng.choice(("/mcp", "/mcp/", "/", "/sse", "/messages", "/mcp?x=1", ""))
    requests[index] = replace(requests[index], method=method, path=path)


def m_disconnect(requests: list[HttpRequest], rng: random.Random) -> None:
    index = _pick(requests, rng)
    requests[index] = replace(
        requests[index], disconnect_at=rng.randint(0, len(requests[index].chunks) + 1)
    )


def m_send_fails(requests: list[HttpRequest], rng: random.Random) -> None:
    index = _pick(requests, rng)
    requests[index] = replace(requests[index], fail_send_at=rng.randint(0, 3))


def m_duplicate(requests: list[HttpRequest], rng: random.Random) -> None:
    index = _pick(requests, rng)
    requests.insert(rng.randint(index, len(requests)), requests[index])


def m_big(requests: list[HttpRequest], rng: random.Random) -> None:
    index = _pick(requests, rng)
    try:
        value = json.loads(b"".join(requests[index].chunks))
    except ValueError:
        return
    if not isinstance(value, dict) or not isinstance(value.get("params"), dict):
        return
    filler: list[dict[str, Any]] = [{}] * ((LIMIT - 2048) // 3)
    params = value["params"]
    capabilities = params.get("capabilities")
    if value.get("method") == "initialize" and isinstance(capabilities, dict):
        capabilities["experimental"] = {"x": filler}
    elif isinstance(params.setdefault("_meta", {}), dict):
        params["_meta"]["x"] = filler
    requests[index] = replace(requests[index], chunks=(message(value),))


MUTATIONS = {
    "headers": m_headers,
    "body": m_body,
    "chunking": m_chunking,
    "method or path": m_method,
    "disconnect": m_disconnect,
    "send raises OSError": m_send_fails,
    "duplicate": m_duplicate,
    "large payload": m_big,
}


def generate(seed_value: int, index: int) -> Exchange:
    """Input ``index`` of the run with ``seed_value``."""
    rng = random.Random(f"asgi/{seed_value}/{index}")
    revision = rng.choice(REVISIONS)
    sessions = rng.random() < 0.6
    requests = seed(revision, sessions, rng)
    names = rng.sample(sorted(MUTATIONS), rng.choice((0, 1, 1, 2, 2, 3)))
    for name in names:
        MUTATIONS[name](requests, rng)
    json_response = rng.random() < 0.3
    measure = "large payload" in names
    return Exchange(tuple(requests), sessions, json_response, measure, (revision, *names))


# -- running one input ---------------------------------------------------------------------------


async def _one(
    app: Any, item: HttpRequest, session: str | None
) -> tuple[Response, BaseException | None]:
    response = Response()
    pending = list(item.chunks) or [b""]
    calls = 0
    sends = 0
    over = anyio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if item.disconnect_at is not None and calls - 1 >= item.disconnect_at:
            response.cut = True
            return {"type": "http.disconnect"}
        if pending:
            chunk = pending.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(pending)}
        await over.wait()
        return {"type": "http.disconnect"}

    async def send(event: dict[str, Any]) -> None:
        nonlocal sends
        sends += 1
        if item.fail_send_at is not None and sends - 1 >= item.fail_send_at:
            response.cut = True
            raise OSError("the client is gone")
        kind = event.get("type")
        if response.complete:
            response.problems.append(f"{kind} after the response ended")
        elif kind == "http.response.start":
            if response.status is not None:
                response.problems.append("a second http.response.start")
            status = event.get("status")
            headers = event.get("headers", [])
            if not isinstance(status, int) or not 100 <= status <= 599:
                response.problems.append(f"status {status!r}")
            if not all(isinstance(k, bytes) and isinstance(v, bytes) for k, v in headers):
                response.problems.append(f"headers not bytes: {headers!r}"[:200])
            response.status = status
            response.headers = list(headers)
        elif kind == "http.response.body":
            if response.status is None:
                response.problems.append("a body before http.response.start")
            response.body += event.get("body", b"")
            response.complete = not event.get("more_body", False)
        else:
            response.problems.append(f"unknown event {kind!r}")

    headers = [
        (k.encode(), v.replace(SESSION, session or "none").encode("utf-8", "replace"))
        for k, v in item.headers
    ]
    path, _, query = item.path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": item.method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    escaped: BaseException | None = None

    async def call() -> None:
        nonlocal escaped
        try:
            await app(scope, receive, send)
        except Exception as exc:
            escaped = exc

    async with anyio.create_task_group() as task_group:
        task_group.start_soon(call)
        # Everything waits: the client hangs up (a long-lived stream ends so).
        while not response.complete and escaped is None:
            await anyio.wait_all_tasks_blocked()
            if not response.complete:
                over.set()
                break
    return response, escaped


@dataclass
class Run:
    """What an exchange did: the responses, what escaped, whether it hung, and (when
    measured) the memory held with every session still open."""

    responses: list[Response] = field(default_factory=list)
    escaped: list[BaseException] = field(default_factory=list)
    hung: bool = False
    held: int | None = None


async def run(exchange: Exchange) -> Run:
    """Run the exchange against a fresh app."""
    done = Run()
    server = fuzz_server()
    app = http_app(
        server,
        HttpSettings(
            sessions=exchange.sessions,
            json_response=exchange.json_response,
            stall_seconds=1.0,
            keepalive_seconds=60,
        ),
    )
    session: str | None = None
    try:
        with anyio.fail_after(HANG):
            async with app.running():
                for item in exchange.requests:
                    response, exc = await _one(app, item, session)
                    done.responses.append(response)
                    if exc is not None:
                        done.escaped.append(exc)
                    for name, value in response.headers:
                        if name.lower() == b"mcp-session-id":
                            session = value.decode("latin-1")
                if exchange.measure:
                    await anyio.wait_all_tasks_blocked()
                    done.held = held_bytes()
    except TimeoutError:
        done.hung = True
    return done


def check(exchange: Exchange) -> list[Failure]:
    """Run ``exchange`` and judge what happened."""
    if exchange.measure:
        # Once untraced first: lazy imports and caches are not what a connection holds.
        with errors_logged():
            anyio.run(run, replace(exchange, measure=False), backend="trio")
        tracemalloc.start()
    try:
        with errors_logged() as records:
            baseline = held_bytes() if exchange.measure else 0
            done = anyio.run(run, exchange, backend="trio")
    finally:
        if exchange.measure:
            tracemalloc.stop()
    responses, escaped, hung = done.responses, done.escaped, done.hung
    failures = logged_failures(records)
    if done.held is not None:
        held = done.held - baseline
        sent = sum(len(chunk) for item in exchange.requests for chunk in item.chunks)
        received = sum(len(response.body) for response in responses)
        bound = MEMORY_FACTOR * (sent + received) + MEMORY_ALLOWANCE
        if held > bound:
            detail = f"{held:,} bytes held for {sent:,} sent (bound {bound:,})"
            failures.append(Failure("memory out of proportion to input", "", detail))
    for exc in escaped:
        failures.append(Failure("the app raised", where(exc), repr(exc)[:300]))
    if hung:
        failures.append(Failure("hang", "", f"no end within {HANG} s"))
    for item, response in zip(exchange.requests, responses, strict=False):
        for problem in response.problems:
            failures.append(Failure("malformed ASGI response", problem.split(" ")[0], problem))
        if not response.cut and response.status is None and not hung and not escaped:
            failures.append(Failure("no response start", item.method, f"{item.method} {item.path}"))
    return failures


def shrink(exchange: Exchange, failure: Failure) -> Exchange:
    """A smaller exchange that still fails the same way (requests dropped one at a time)."""

    def still_fails(requests: tuple[HttpRequest, ...]) -> bool:
        return any(f.key == failure.key for f in check(replace(exchange, requests=requests)))

    return replace(exchange, requests=drop_one_at_a_time(exchange.requests, still_fails))
