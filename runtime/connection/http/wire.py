"""What the HTTP app reads of a POST body, and the answers it writes itself.

A body is peeked at (:class:`BodyPeek`: ``id``, ``method``, the versions it names)
before a session reads it, to pick the era and the connection; the answers the app
writes without a session (refusals, errors with the statuses each era gives them) are
built here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable
from typing import Any, Final

import anyio
import msgspec

from mcpspec.runtime.envelope import ErrorObject, ErrorResponse
from mcpspec.runtime.errors import ErrorCode
from mcpspec.runtime.session.events import ProtocolViolation, RequestReceived
from mcpspec.runtime.session.rules import Rule
from mcpspec.runtime.session.version_negotiation import PROBE_DECODER, Probe

from .asgi import Receive, Scope, Send, client_gone, respond
from .routing import Channel
from .security import Refusal

__all__ = [
    "EVENT_STREAM",
    "JSON",
    "SESSION_HEADER",
    "VERSION_HEADER",
    "BodyPeek",
    "answerable_id",
    "bad_request",
    "error_body",
    "expect_answers",
    "internal_error",
    "refuse",
    "refuses_body",
    "route_path",
    "stateless_status",
    "until_disconnect",
]

JSON: Final = "application/json"
EVENT_STREAM: Final = "text/event-stream"
SESSION_HEADER: Final = "mcp-session-id"
VERSION_HEADER: Final = "mcp-protocol-version"
#: The HTTP status of a 2026-07-28 JSON-RPC error, by code (the others travel in a 200).
_STATELESS_STATUS: Final = {
    int(ErrorCode.HEADER_MISMATCH): 400,
    int(ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY): 400,
    int(ErrorCode.UNSUPPORTED_PROTOCOL_VERSION): 400,
    int(ErrorCode.METHOD_NOT_FOUND): 404,
    int(ErrorCode.PARSE_ERROR): 400,
    int(ErrorCode.INVALID_REQUEST): 400,
}


# -- peeking at a body before a session reads it ---------------------------------------------


class _Envelope(msgspec.Struct):
    """The members of a message that tell what it is, when the rest is unreadable."""

    id: Any = None
    method: Any = None


_ENVELOPE: Final = msgspec.json.Decoder(_Envelope)


class BodyPeek:
    """What the app knows of a POST body before a session reads it."""

    __slots__ = ("batch", "id", "json", "meta_version", "method", "probe", "requested_version")

    def __init__(self, data: bytes) -> None:
        self.json = True
        self.batch = False
        self.id: Any = None
        self.method: Any = None
        self.meta_version: Any = None
        self.requested_version: Any = None
        #: The routing fields as read, when the body has their types (else ``None``).
        self.probe: Probe | None = None
        head = data[:1]
        if head != b"{":
            head = data.lstrip()[:1]
            if head == b"[":
                self.batch = True
                return
        try:
            peek = PROBE_DECODER.decode(data)
        except msgspec.ValidationError:
            try:
                loose = _ENVELOPE.decode(data)
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeError):
                self.json = False
                return
            self.id, self.method = loose.id, loose.method
            return
        except msgspec.DecodeError:
            self.json = False
            return
        except (RecursionError, UnicodeError):
            self.json = False
            return
        self.probe = peek
        self.id, self.method = peek.id, peek.method
        self.requested_version = peek.protocol_version
        self.meta_version = peek.meta_version

    @property
    def is_request(self) -> bool:
        return isinstance(self.method, str) and isinstance(self.id, (int, str))


# -- answers of the app's own ----------------------------------------------------------------


def error_body(code: int, message: str, request_id: Any = None, data: Any = None) -> bytes:
    """A JSON-RPC error response's bytes (``id`` null unless ``request_id`` is one)."""
    error = ErrorObject(
        code=code, message=message, data=data if data is not None else msgspec.UNSET
    )
    return msgspec.json.encode(ErrorResponse(id=answerable_id(request_id), error=error))


def answerable_id(request_id: Any) -> Any:
    valid = isinstance(request_id, (int, str)) and not isinstance(request_id, bool)
    return request_id if valid else None


#: The rules of a 2026-07-28 request's ``_meta``: broken, they are answered with 400.
_META_RULES: Final = frozenset(
    {
        Rule.MISSING_PROTOCOL_VERSION,
        Rule.MISSING_CLIENT_CAPABILITIES,
        Rule.INVALID_REQUEST_META,
        Rule.UNSUPPORTED_PROTOCOL_VERSION,
    }
)


#: The errors that say a body was not a valid JSON-RPC message.
_MALFORMED: Final = frozenset({int(ErrorCode.PARSE_ERROR), int(ErrorCode.INVALID_REQUEST)})


def refuses_body(violation: ProtocolViolation) -> bool:
    """Whether a violation refuses the POST's body (400), rather than answering a
    well-formed request with an error (which travels like any answer)."""
    return violation.request_id is None or violation.error.code in _MALFORMED


def stateless_status(error_codes: list[int | None]) -> int:
    """The status of a 2026-07-28 JSON answer, from the error codes of its responses
    (``None``: a result): the one its error's code maps to."""
    if len(error_codes) != 1 or error_codes[0] is None:
        return 200
    return _STATELESS_STATUS.get(error_codes[0], 200)


async def internal_error(send: Send) -> None:
    """500 with a JSON-RPC error, unless a response was started already (the ASGI
    server then refuses a second start: the response it has is cut short)."""
    body = error_body(int(ErrorCode.INTERNAL_ERROR), "Internal error")
    with contextlib.suppress(Exception):
        await respond(send, 500, body, content_type=JSON)


async def refuse(send: Send, refusal: Refusal) -> None:
    body = error_body(-32000, refusal.reason)
    await respond(send, refusal.status, body, content_type=JSON, headers=dict(refusal.headers))


async def bad_request(
    send: Send, reason: str, *, code: int = int(ErrorCode.INVALID_REQUEST)
) -> None:
    await respond(send, 400, error_body(code, reason), content_type=JSON)


async def until_disconnect(receive: Receive, work: Awaitable[None]) -> None:
    """Run ``work`` (a long-lived stream) until it ends or its client goes away."""
    async with anyio.create_task_group() as task_group:

        async def watch() -> None:
            await client_gone(receive)
            task_group.cancel_scope.cancel()

        task_group.start_soon(watch)
        await work
        task_group.cancel_scope.cancel()


def route_path(scope: Scope) -> str:
    """The request's path within the app (a host framework mounting the app names its
    prefix in ``root_path``)."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root) :]
    return path


async def expect_answers(channel: Channel, events: list[Any]) -> None:
    """After a body was fed: say which requests the response waits for, or, when
    it carried none, answer 202 (or 400 when a message of it was refused)."""
    request_ids = [e.request_id for e in events if isinstance(e, RequestReceived)]
    violations = [e for e in events if isinstance(e, ProtocolViolation)]
    if not request_ids and violations and not channel.held:
        first = violations[0]
        channel.held.append(
            error_body(first.error.code, first.error.message, None, first.error.data)
        )
    if not request_ids and any(refuses_body(v) for v in violations):
        # No request of the body was taken in: the body itself is refused.
        channel.status = 400
    elif any(v.rule in _META_RULES for v in violations):
        # 2026-07-28: a request whose _meta is missing or wrong is a bad request.
        channel.status = 400
    await channel.expect(request_ids)
