"""What the connection targets share: the server under test, wire messages of every
revision, and how a target's run is checked and reported.

The server (:func:`fuzz_server`) has a few tools, one that waits until cancelled, one
that asks the client (``ctx.elicit``), one that reports progress and logs; it keeps
subscriptions and serves ``subscriptions/listen``. What its asking tool got back is
recorded, so a target can tell a question answered from one broken by the peer.
"""

from __future__ import annotations

import gc
import json
import logging
import traceback
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio

from mcpspec.runtime import Limits
from mcpspec.runtime.connection import ConnectionClosed, RequestContext, RequestError, Server

__all__ = [
    "DECODED_PER_BYTE",
    "HANDSHAKE_REVISIONS",
    "IN_FLIGHT",
    "LIMIT",
    "META",
    "REVISIONS",
    "STATELESS",
    "Failure",
    "ServerRecord",
    "errors_logged",
    "fuzz_server",
    "held_bytes",
    "initialize",
    "line",
    "message",
    "request",
    "where",
]

REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
HANDSHAKE_REVISIONS = REVISIONS[:-1]
STATELESS = "2026-07-28"
#: The largest message the server under test takes: small, so that an oversized line is
#: cheap to make and what a message may cost in memory is quick to measure.
LIMIT = 64 * 1024
#: The bytes of requests in flight the server under test takes
#: (``Limits.max_request_bytes_in_flight``): running handlers hold what these decode to.
IN_FLIGHT = LIMIT
#: The most Python objects one byte of JSON decodes to, in bytes (``[{},{},...]``: a
#: dict of 64 bytes and its list slot for three bytes).
DECODED_PER_BYTE = 32
#: The ``_meta`` every 2026-07-28 request carries.
META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "roots": {}},
}
CLIENT_CAPABILITIES: dict[str, Any] = {"elicitation": {}, "roots": {}, "sampling": {}}


def message(body: dict[str, Any]) -> bytes:
    """A message's compact JSON bytes."""
    return json.dumps(body, separators=(",", ":")).encode()


def line(body: dict[str, Any]) -> bytes:
    """A message framed as one stdio line."""
    return message(body) + b"\n"


def request(
    request_id: Any, method: str, params: dict[str, Any] | None, revision: str
) -> dict[str, Any]:
    """A request of ``revision`` (in 2026-07-28 its params carry :data:`META`)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if revision == STATELESS:
        params = {**(params or {}), "_meta": {**META, **(params or {}).get("_meta", {})}}
    if params is not None:
        body["params"] = params
    return body


def initialize(request_id: Any, revision: str) -> dict[str, Any]:
    """The ``initialize`` request of a handshake revision."""
    params = {
        "protocolVersion": revision,
        "capabilities": CLIENT_CAPABILITIES,
        "clientInfo": {"name": "fuzz", "version": "1"},
    }
    return request(request_id, "initialize", params, revision)


@dataclass
class ServerRecord:
    """What the handlers of one :func:`fuzz_server` saw: each ``ask`` call's outcome
    (``"answered"`` or the name of the exception ``ctx.elicit`` raised)."""

    asked: list[str] = field(default_factory=list)


def fuzz_server(record: ServerRecord | None = None) -> Server:
    """The server under test (``record`` gets what its ``ask`` tool saw)."""
    record = record if record is not None else ServerRecord()
    server = Server(
        "fuzz",
        "1.0",
        list_changed=True,
        subscribe=True,
        limits=Limits(
            max_message_bytes=LIMIT,
            max_requests_in_flight=64,
            max_request_bytes_in_flight=IN_FLIGHT,
        ),
    )

    @server.tool()
    async def echo(text: str = "") -> str:
        """Echo the text."""
        return text

    @server.tool()
    async def block() -> str:
        """Wait until cancelled."""
        await anyio.sleep_forever()
        return "never"

    @server.tool()
    async def steps(ctx: RequestContext, n: int = 3) -> str:
        """Report progress ``n`` times (at most 5) and log each step."""
        for step in range(1, min(max(n, 0), 5) + 1):
            await ctx.report_progress(step, 5, f"step {step}")
            await ctx.log("info", {"step": step})
        return "done"

    @server.tool()
    async def ask(ctx: RequestContext) -> str:
        """Ask the client, and say what came back."""
        try:
            answer = await ctx.elicit(message="go on?", requested_schema={"properties": {}})
        except ConnectionClosed:
            record.asked.append("ConnectionClosed")
            raise
        except Exception as exc:
            # What an application does with a bad answer: an error of its own.
            record.asked.append(type(exc).__name__)
            raise RequestError.of(-32000, f"no answer: {type(exc).__name__}") from None
        record.asked.append("answered")
        return str(answer.action)

    @server.tool()
    async def announce() -> str:
        """Tell every client that the tools changed."""
        await server.notify_tools_changed()
        return "told"

    @server.handler("resources/read")
    async def read(request: Any, ctx: RequestContext) -> Any:
        uri = request.params.uri
        if not uri.startswith("fuzz://"):
            raise RequestError.of(-32002, "no such resource")
        return {"contents": [{"uri": uri, "text": "hello"}]}

    @server.handler("resources/list")
    async def resources(request: Any, ctx: RequestContext) -> Any:
        return {"resources": [{"uri": "fuzz://a", "name": "a"}]}

    return server


def held_bytes() -> int:
    """The memory traced as allocated and still reachable (cyclic garbage collected
    first: what a connection holds, not what it left for the collector)."""
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


@dataclass(frozen=True)
class Failure:
    """A broken invariant: what broke (``kind``), where (an exception's innermost frame
    of the package, if any) and the detail."""

    kind: str
    where: str = ""
    detail: str = ""

    @property
    def key(self) -> tuple[str, str]:
        """What makes two failures the same."""
        return (self.kind, self.where)


def where(exc: BaseException) -> str:
    """The innermost frame of the package in ``exc``'s traceback (the innermost
    exception of a group)."""
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/runtime/" in f.filename or "mcpspec" in f.filename]
    if not frames:
        return type(exc).__name__
    frame = (ours or frames)[-1]
    parts = frame.filename.replace("\\", "/").split("/")
    return f"{type(exc).__name__} at {'/'.join(parts[-2:])}:{frame.lineno} in {frame.name}"


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def errors_logged() -> Iterator[list[logging.LogRecord]]:
    """The records the package logs at ERROR or above meanwhile (kept from reaching
    the root logger)."""
    handler = _Records()
    package = logging.getLogger("mcpspec")
    propagate = package.propagate
    package.addHandler(handler)
    package.propagate = False
    try:
        yield handler.records
    finally:
        package.removeHandler(handler)
        package.propagate = propagate


def logged_failures(records: list[logging.LogRecord]) -> list[Failure]:
    """A failure per distinct ERROR record: peer input must not make the package log
    an error (with or without a traceback)."""
    failures = []
    for record in records:
        text = record.getMessage()[:300]
        if record.exc_info and record.exc_info[1] is not None:
            failures.append(
                Failure("ERROR logged with a traceback", where(record.exc_info[1]), text)
            )
        else:
            failures.append(Failure("ERROR logged", record.msg, text))
    return failures


T = TypeVar("T")


def drop_one_at_a_time(
    items: Sequence[T], still_fails: Callable[[tuple[T, ...]], bool], *, keep: int = 0
) -> tuple[T, ...]:
    """``items`` without every item whose removal keeps ``still_fails`` true, tried one
    at a time in order (at least ``keep`` are left): the shrinking of every target."""
    kept = list(items)
    index = 0
    while index < len(kept) and len(kept) > keep:
        trial = tuple(kept[:index] + kept[index + 1 :])
        if still_fails(trial):
            kept = list(trial)
        else:
            index += 1
    return tuple(kept)
