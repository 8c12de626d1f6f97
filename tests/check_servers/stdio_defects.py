"""Defects of a stdio server, each injected by a filter on the messages the baseline
server reads and writes, so that the server stays the baseline in everything else.

:class:`FilteredStream` sits between the stdio transport and the server's connection:
every line read goes through :meth:`Defect.read` (which may drop it, or write something
of its own), every message written through :meth:`Defect.write` (which writes it,
changed, twice, or in pieces). Each defect's docstring says which check of
``mcpspec check`` must catch it, and where.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Final

import anyio

from mcpspec.runtime.connection import MessageStream
from mcpspec.runtime.connection.server import _client_methods

__all__ = ["STDIO_DEFECTS", "Defect", "FilteredStream"]

#: The id of a request the server makes up (it never clashes with one of the baseline's).
MADE_UP_ID: Final = "check-fixture-1"
#: The ``_meta`` key that marks a 2026-07-28 request.
META_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
#: The ``_meta`` key of a 2026-07-28 request that asks for log messages.
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"


def _encode(message: Any) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


def _decode(data: bytes) -> Any:
    """The JSON value of a line, or ``None`` when it is not JSON."""
    try:
        return json.loads(data)
    except ValueError:
        return None


def _key(request_id: Any) -> str:
    """A request id as a dictionary key (``1`` and ``"1"`` are different ids)."""
    return json.dumps(request_id)


class FilteredStream:
    """A message stream that passes every message through a :class:`Defect`; it knows
    the method of each request the client sent, so a defect can tell what a response
    answers."""

    def __init__(self, inner: MessageStream, defect: Defect) -> None:
        self._inner = inner
        self._defect = defect
        self._lock = anyio.Lock()
        #: The method of every request read, by id (see :func:`_key`).
        self.requests: dict[str, str] = {}
        #: The params of every request read, by id.
        self.params: dict[str, Any] = {}

    def method_answered(self, message: Any) -> str | None:
        """The method of the request a response answers (``None``: not a response of a
        request read)."""
        if not isinstance(message, dict) or "method" in message or "id" not in message:
            return None
        return self.requests.get(_key(message["id"]))

    async def open(self) -> None:
        """Let the defect write what it writes before anything is read."""
        await self._defect.open(self)

    async def receive(self) -> bytes:
        while True:
            data = await self._inner.receive()
            message = _decode(data)
            if isinstance(message, dict) and "method" in message and "id" in message:
                self.requests[_key(message["id"])] = str(message["method"])
                self.params[_key(message["id"])] = message.get("params")
            kept = await self._defect.read(message, data, self)
            if kept is not None:
                return kept

    async def send(self, data: bytes, *, related_request_id: int | str | None = None) -> None:
        await self._defect.write(_decode(data), data, self)

    async def write(self, data: bytes) -> None:
        """Write one line as it is."""
        async with self._lock:
            await self._inner.send(data)

    async def write_message(self, message: Any) -> None:
        """Write one JSON value as a line."""
        await self.write(_encode(message))

    async def aclose(self) -> None:
        await self._inner.aclose()


class Defect:
    """No defect: every message goes through unchanged. Subclasses change one thing."""

    #: The name given to ``--defect``.
    name: ClassVar[str] = ""

    async def open(self, out: FilteredStream) -> None:
        """Before the first message is read."""

    async def read(self, message: Any, data: bytes, out: FilteredStream) -> bytes | None:
        """A line the client wrote (``message`` its JSON, ``None`` when it is none): the
        bytes the server reads, or ``None`` to drop the line."""
        return data

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        """A message the server writes: write it (or not, or something else)."""
        await out.write(data)


def _is_notification(message: Any, method: str) -> bool:
    return isinstance(message, dict) and message.get("method") == method and "id" not in message


class Banner(Defect):
    """A log line on stdout before the first message. Caught by ``wire.message`` (a
    failure) at ``stdout line 1``."""

    name = "banner"

    async def open(self, out: FilteredStream) -> None:
        await out.write(b"check-fixture 1.0.0 starting on stdio")


class PartialLine(Defect):
    """A message split over two lines: once the client sent
    ``notifications/initialized``, a log message is written with a newline in its middle.
    Caught by ``wire.message`` (a failure) at both lines (``stdout line N`` and ``N+1``);
    nothing else is lost, as the broken message is one no answer waits for."""

    name = "partial-line"

    async def read(self, message: Any, data: bytes, out: FilteredStream) -> bytes | None:
        if _is_notification(message, "notifications/initialized"):
            line = _encode(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "info", "data": "ready"},
                }
            )
            half = len(line) // 2
            await out.write(line[:half])
            await out.write(line[half:])
        return data


class EchoVersion(Defect):
    """``initialize`` is answered with whatever ``protocolVersion`` the client offered,
    even one the server does not speak. Caught by ``protocol.negotiation`` (a failure) in
    the negotiation report, at the answer to the offer of an unknown version
    (``stdout line 1`` of that connection; echoing the old pre-release version the
    checker also offers is allowed)."""

    name = "echo-version"

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        if out.method_answered(message) == "initialize" and isinstance(message.get("result"), dict):
            params = out.params.get(_key(message["id"]))
            offered = params.get("protocolVersion") if isinstance(params, dict) else None
            if isinstance(offered, str):
                message["result"]["protocolVersion"] = offered
                data = _encode(message)
        await out.write(data)


class NoServerInfo(Defect):
    """The ``initialize`` result lacks ``serverInfo`` (required in every handshake
    revision). Caught by ``schema.message`` (a failure) at ``stdout line N: $.result``
    (the missing member is named in the reason)."""

    name = "no-server-info"

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        if out.method_answered(message) == "initialize" and isinstance(message.get("result"), dict):
            message["result"].pop("serverInfo", None)
            data = _encode(message)
        await out.write(data)


class NotificationAnswered(Defect):
    """``notifications/initialized`` is answered, as if it were a request, with an error
    of id null (-32601). Caught by ``protocol.responses`` (a failure) at the line of
    that error."""

    name = "notification-answered"

    async def read(self, message: Any, data: bytes, out: FilteredStream) -> bytes | None:
        if _is_notification(message, "notifications/initialized"):
            await out.write_message(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32601, "message": "Method not found"},
                }
            )
        return data


class DuplicateResponse(Defect):
    """The response to the first ``tools/list`` is written twice. Caught by
    ``protocol.responses`` (a failure) at ``$.id`` of the second copy."""

    name = "duplicate-response"

    def __init__(self) -> None:
        self.done = False

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        await out.write(data)
        if not self.done and out.method_answered(message) == "tools/list":
            self.done = True
            await out.write(data)


class UndeclaredCapability(Defect):
    """Once the client sent ``notifications/initialized``, the server asks it for a URL
    elicitation (``elicitation/create`` with ``mode: "url"``, 2025-11-25) although the
    client declared no ``elicitation.url`` (the client's answer is dropped before the
    server sees it). Caught by ``protocol.capabilities`` (a failure) at that request's
    ``$.method``."""

    name = "undeclared-capability"

    def __init__(self) -> None:
        self.client_capabilities: Any = None

    async def read(self, message: Any, data: bytes, out: FilteredStream) -> bytes | None:
        if not isinstance(message, dict):
            return data
        if message.get("method") == "initialize" and isinstance(message.get("params"), dict):
            self.client_capabilities = message["params"].get("capabilities")
        elif _is_notification(message, "notifications/initialized"):
            capabilities = self.client_capabilities
            elicitation = (
                capabilities.get("elicitation") if isinstance(capabilities, dict) else None
            )
            if not (isinstance(elicitation, dict) and "url" in elicitation):
                await out.write_message(
                    {
                        "jsonrpc": "2.0",
                        "id": MADE_UP_ID,
                        "method": "elicitation/create",
                        "params": {
                            "mode": "url",
                            "message": "Sign in, please.",
                            "url": "https://example.com/sign-in",
                            "elicitationId": "sign-in-1",
                        },
                    }
                )
        elif "method" not in message and message.get("id") == MADE_UP_ID:
            return None  # the answer to the made-up request: not the server's business
        return data


class UndeclaredNotification(Defect):
    """Once the client sent ``notifications/initialized``, the server announces
    ``notifications/resources/updated`` although it declared no ``resources.subscribe``
    (and nothing was subscribed to). Caught by ``protocol.capabilities`` (a failure) at
    that notification's line."""

    name = "undeclared-notification"

    async def read(self, message: Any, data: bytes, out: FilteredStream) -> bytes | None:
        if _is_notification(message, "notifications/initialized"):
            await out.write_message(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/resources/updated",
                    "params": {"uri": "fixture://notes/1"},
                }
            )
        return data


class ProgressNotIncreasing(Defect):
    """The second progress notification of a request goes down (half the first one's
    value). Caught by ``protocol.progress`` (a failure) at ``$.params.progress`` of that
    notification; needs ``--call-tools`` (tool ``count`` reports progress)."""

    name = "progress-not-increasing"

    def __init__(self) -> None:
        self.first: dict[str, float] = {}
        self.seen: dict[str, int] = {}

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        if _is_notification(message, "notifications/progress"):
            params = message["params"]
            token = _key(params["progressToken"])
            count = self.seen[token] = self.seen.get(token, 0) + 1
            if count == 1:
                self.first[token] = params["progress"]
            elif count == 2:
                params["progress"] = self.first[token] / 2
                data = _encode(message)
        await out.write(data)


class CursorLoop(Defect):
    """The last page of ``resources/list`` has a ``nextCursor``: the cursor of the second
    page, which leads back to a page already seen. Caught by ``protocol.pagination`` (a
    failure) at the ``nextCursor`` of that last page (``resources/list``)."""

    name = "cursor-loop"

    def __init__(self) -> None:
        self.first_cursor: str | None = None

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        if out.method_answered(message) == "resources/list" and isinstance(
            message.get("result"), dict
        ):
            params = out.params.get(_key(message["id"]))
            cursor = params.get("cursor") if isinstance(params, dict) else None
            if isinstance(cursor, str) and self.first_cursor is None:
                self.first_cursor = cursor
            result = message["result"]
            if "nextCursor" not in result and cursor is not None and self.first_cursor:
                result["nextCursor"] = self.first_cursor
                data = _encode(message)
        await out.write(data)


class InvalidInputSchema(Defect):
    """The first tool's ``inputSchema`` is no JSON Schema: one property has
    ``"type": "nonsense"``. Caught by ``surface.json-schema`` (a failure) at
    ``tools/list: $.tools[0].inputSchema``."""

    name = "invalid-input-schema"

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        if out.method_answered(message) == "tools/list" and isinstance(message.get("result"), dict):
            schema = message["result"]["tools"][0]["inputSchema"]
            for prop in schema["properties"].values():
                prop["type"] = "nonsense"
                break
            data = _encode(message)
        await out.write(data)


class UnknownMethodWrongCode(Defect):
    """A method no revision defines is answered with -32603 instead of -32601. Caught by
    ``protocol.unknown-method`` (a failure) at that answer's line."""

    name = "unknown-method-wrong-code"

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        method = out.method_answered(message)
        error = message.get("error") if method is not None else None
        if (
            method not in _client_methods()
            and isinstance(error, dict)
            and error.get("code") == -32601
        ):
            message["error"] = {"code": -32603, "message": "Internal error"}
            data = _encode(message)
        await out.write(data)


class PingBroken(Defect):
    """``ping`` is answered with a result that is not empty (``{"pong": true}``).
    Caught by ``protocol.ping`` (a failure) at that answer's line."""

    name = "ping-broken"

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        if out.method_answered(message) == "ping" and "result" in message:
            message["result"] = {"pong": True}
            data = _encode(message)
        await out.write(data)


# -- defects beyond the list, one per check no defect above covers ---------------------


class ServedBeforeInitialize(Defect):
    """A handshake-era request other than ``ping`` that comes before ``initialize`` is
    served (``tools/list``: an empty list; anything else: an empty result) instead of
    refused. Caught by ``protocol.lifecycle`` (a warning: SHOULD) at that answer."""

    name = "served-before-initialize"

    def __init__(self) -> None:
        self.initialized = False

    async def read(self, message: Any, data: bytes, out: FilteredStream) -> bytes | None:
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            return data
        method = message["method"]
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        modern = isinstance(meta, dict) and META_VERSION in meta
        if method in ("initialize", "server/discover") or modern:
            self.initialized = True
        if self.initialized or method == "ping":
            return data
        result: dict[str, Any] = {"tools": []} if method == "tools/list" else {}
        await out.write_message({"jsonrpc": "2.0", "id": message["id"], "result": result})
        return None


class CancelAnswered(Defect):
    """A request cancelled while the server works on it is answered anyway, with an
    error (-32800 "Request cancelled"). Caught by ``protocol.cancellation`` (a warning:
    SHOULD) at that answer."""

    name = "cancel-answered"

    def __init__(self) -> None:
        self.answered: set[str] = set()

    async def read(self, message: Any, data: bytes, out: FilteredStream) -> bytes | None:
        if _is_notification(message, "notifications/cancelled"):
            params = message.get("params")
            request_id = params.get("requestId") if isinstance(params, dict) else None
            key = _key(request_id)
            if key in out.requests and key not in self.answered:
                self.answered.add(key)
                await out.write_message(
                    {
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "error": {"code": -32800, "message": "Request cancelled"},
                    }
                )
        return data

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        if out.method_answered(message) is not None:
            key = _key(message["id"])
            if key in self.answered:
                return  # answered already, when cancelled
            self.answered.add(key)
        await out.write(data)


class VersionErrorWithoutSupported(Defect):
    """2026-07-28: the -32022 error for an unsupported protocol version lacks
    ``data.supported``. Caught by ``protocol.negotiation`` (a failure) in the
    2026-07-28 report, at that error's line."""

    name = "version-error-without-supported"

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        error = message.get("error") if isinstance(message, dict) else None
        if (
            isinstance(error, dict)
            and error.get("code") == -32022
            and isinstance(error.get("data"), dict)
        ):
            error["data"].pop("supported", None)
            data = _encode(message)
        await out.write(data)


class IdDroppedFromError(Defect):
    """An error answering a readable request carries id null (as some HTTP servers answer
    a probe they cannot serve): ``prompts/list`` is answered with -32000 and id null.
    Caught by ``protocol.responses`` (a failure) at that line."""

    name = "id-dropped-from-error"

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        if out.method_answered(message) == "prompts/list":
            await out.write_message(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "busy"}}
            )
            return
        await out.write(data)


class UnaskedLog(Defect):
    """2026-07-28: before answering a ``tools/list`` that set no log level, the server
    writes a log message (which only a request that asked for that level may get).
    Caught by ``protocol.logging`` (a failure) at ``$.params.level`` of that message."""

    name = "unasked-log"

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        if out.method_answered(message) == "tools/list":
            params = out.params.get(_key(message["id"]))
            meta = params.get("_meta") if isinstance(params, dict) else None
            if isinstance(meta, dict) and META_VERSION in meta and META_LOG_LEVEL not in meta:
                await out.write_message(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/message",
                        "params": {"level": "info", "data": "listing tools"},
                    }
                )
        await out.write(data)


class InvalidParamsWrongCode(Defect):
    """Invalid params are answered with -32603 instead of -32602. Caught by
    ``protocol.invalid-params`` (a warning: SHOULD) at that answer's line."""

    name = "invalid-params-wrong-code"

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        error = message.get("error") if isinstance(message, dict) else None
        if isinstance(error, dict) and error.get("code") == -32602:
            message["error"] = {"code": -32603, "message": "Internal error"}
            data = _encode(message)
        await out.write(data)


class ParseErrorWrongCode(Defect):
    """Malformed JSON is answered with -32600 (invalid request) instead of -32700.
    Caught by ``protocol.parse-error`` (a warning: SHOULD) at that answer's line."""

    name = "parse-error-wrong-code"

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        error = message.get("error") if isinstance(message, dict) else None
        if isinstance(error, dict) and error.get("code") == -32700:
            message["error"] = {"code": -32600, "message": "Invalid Request"}
            data = _encode(message)
        await out.write(data)


class StructuredContentMismatch(Defect):
    """Tool ``add`` answers ``structuredContent`` whose ``sum`` is a string, against its
    ``outputSchema`` (an integer). Caught by ``surface.call`` (a failure; needs
    ``--call-tools``) at ``stdout line N: $.result.structuredContent.sum``."""

    name = "structured-content-mismatch"

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        result = message.get("result") if isinstance(message, dict) else None
        if (
            out.method_answered(message) == "tools/call"
            and isinstance(result, dict)
            and isinstance(result.get("structuredContent"), dict)
        ):
            structured = result["structuredContent"]
            structured["sum"] = str(structured.get("sum"))
            data = _encode(message)
        await out.write(data)


class UnreadableResource(Defect):
    """Reading the listed resource ``fixture://notes/3`` fails with -32603. Caught by
    ``surface.read`` (a failure) at that error's line (the reason names the URI)."""

    name = "unreadable-resource"

    async def read(self, message: Any, data: bytes, out: FilteredStream) -> bytes | None:
        if (
            isinstance(message, dict)
            and message.get("method") == "resources/read"
            and "id" in message
            and isinstance(message.get("params"), dict)
            and message["params"].get("uri") == "fixture://notes/3"
        ):
            await out.write_message(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32603, "message": "the disk is on fire"},
                }
            )
            return None
        return data


class TaskRequiredServed(Defect):
    """2025-11-25: ``tools/list`` says tool ``add`` requires a task
    (``execution.taskSupport: "required"``), but a call made without one is served.
    Caught by ``protocol.tasks`` (a failure; needs ``--call-tools``) at that answer."""

    name = "task-required-served"
    #: Whether a call of ``add`` without a task is refused, as the rule says.
    refuses = False

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        result = message.get("result") if isinstance(message, dict) else None
        method = out.method_answered(message)
        if method == "initialize" and isinstance(result, dict):
            # The capability that goes with the tool's taskSupport.
            result.setdefault("capabilities", {})["tasks"] = {"requests": {"tools": {"call": {}}}}
            data = _encode(message)
        elif method == "tools/list" and isinstance(result, dict):
            for tool in result.get("tools") or ():
                if tool.get("name") == "add":
                    tool["execution"] = {"taskSupport": "required"}
            data = _encode(message)
        elif method == "tools/call":
            params = out.params.get(_key(message["id"]))
            named = isinstance(params, dict) and params.get("name") == "add"
            # The server below has no tasks: a call as a task is refused, as a server
            # out of task capacity may (the checker notes it); one without a task is
            # refused only when the rule is kept.
            as_task = named and "task" in params  # type: ignore[operator]
            if as_task or (named and self.refuses):
                error = {"code": -32601, "message": "tool add requires a task"}
                data = _encode({"jsonrpc": "2.0", "id": message["id"], "error": error})
        await out.write(data)


class TaskRequiredRefused(TaskRequiredServed):
    """No defect: tool ``add`` requires a task, and a call without one gets -32601."""

    name = "task-required-refused"
    refuses = True


class ToolError(Defect):
    """No defect: every ``tools/call`` result says ``isError: true`` (the tool failed;
    MCP has no rule on what a tool does), counted as a tool error."""

    name = "tool-error"

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        result = message.get("result") if isinstance(message, dict) else None
        if out.method_answered(message) == "tools/call" and isinstance(result, dict):
            data = _encode(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {"content": [{"type": "text", "text": "failed"}], "isError": True},
                }
            )
        await out.write(data)


#: Every stdio defect, by name.
STDIO_DEFECTS: Final[dict[str, type[Defect]]] = {
    cls.name: cls
    for cls in (
        Banner,
        PartialLine,
        EchoVersion,
        NoServerInfo,
        NotificationAnswered,
        DuplicateResponse,
        UndeclaredCapability,
        UndeclaredNotification,
        ProgressNotIncreasing,
        CursorLoop,
        InvalidInputSchema,
        UnknownMethodWrongCode,
        PingBroken,
        ServedBeforeInitialize,
        CancelAnswered,
        VersionErrorWithoutSupported,
        IdDroppedFromError,
        UnaskedLog,
        InvalidParamsWrongCode,
        ParseErrorWrongCode,
        StructuredContentMismatch,
        UnreadableResource,
        TaskRequiredServed,
        TaskRequiredRefused,
        ToolError,
    )
}
