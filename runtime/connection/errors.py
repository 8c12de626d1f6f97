"""What a connection raises: the stream ended, the peer answered with an error, the
peer's answer broke a rule, a request timed out, negotiation failed, a message was too
large to read.

Every exception here is raised to the *caller* of the connection (the code awaiting a
request, or reading the stream). None of them ends the connection by itself except
:class:`ConnectionClosed`, which reports that it has ended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from mcpspec.runtime.envelope import ErrorObject, RequestId
from mcpspec.runtime.errors import ERROR_MESSAGES, ErrorCode, clip

if TYPE_CHECKING:
    from mcpspec.runtime.session.events import NegotiationFailed, ProtocolViolation

__all__ = [
    "CancelledByPeer",
    "ConnectionClosed",
    "MessageTooLarge",
    "NegotiationRefused",
    "OpenTimeout",
    "RequestError",
    "RequestTimeout",
    "ResponseViolation",
]


class ConnectionClosed(Exception):
    """The connection ended (the stream reached its end, broke, or was closed): nothing
    more can be sent or received on it. Every request still awaiting its answer raises
    this at once."""

    def __init__(self, reason: str = "the connection is closed") -> None:
        super().__init__(reason)
        self.reason = reason


class MessageTooLarge(Exception):
    """A framed message longer than the stream's limit arrived; it was skipped (never
    held in memory whole) and the stream reads on. ``size`` is how many bytes were
    skipped, ``limit`` the maximum the stream accepts, ``head`` its first bytes (up to
    :data:`~mcpspec.runtime.unparsed_response.WINDOW`: enough to tell which request it answers)."""

    def __init__(self, size: int, limit: int, head: bytes = b"") -> None:
        super().__init__(f"a message of {size} bytes exceeds the limit of {limit} bytes")
        self.size = size
        self.limit = limit
        self.head = head


class RequestError(Exception):
    """A JSON-RPC error response.

    Raised by ``request`` when the peer answers with an error (``error`` is the
    :class:`~mcpspec.runtime.ErrorObject` as received, ``request_id`` and ``method`` are
    the request's). Raised by a request handler, it answers the request with ``error``
    (build one with :meth:`of`).
    """

    def __init__(
        self,
        error: ErrorObject,
        *,
        request_id: RequestId | None = None,
        method: str | None = None,
    ) -> None:
        where = f" to {method} (id {request_id!r})" if method is not None else ""
        super().__init__(f"error {error.code} {error.message!r}{where}")
        self.error = error
        self.request_id = request_id
        self.method = method

    @classmethod
    def of(cls, code: int, message: str | None = None, data: Any = UNSET) -> RequestError:
        """An error to answer a request with: ``code`` (an ``ErrorCode`` or any integer),
        ``message`` (the standard one for the code when left out) and ``data``."""
        text = message if message is not None else ERROR_MESSAGES.get(code, "Error")
        return cls(ErrorObject(code=int(code), message=text, data=data))

    @classmethod
    def method_not_found(cls, method: str) -> RequestError:
        """-32601 for a method this side does not handle (the method's name cut to
        :data:`~mcpspec.runtime.errors.MAX_ECHO` characters: it is the peer's text)."""
        return cls.of(ErrorCode.METHOD_NOT_FOUND, data={"method": clip(method)})

    @classmethod
    def invalid_params(cls, reason: str) -> RequestError:
        """-32602 with ``reason`` (cut to :data:`~mcpspec.runtime.errors.MAX_ECHO`
        characters, as the peer's text it may quote must not make the answer grow)."""
        return cls.of(ErrorCode.INVALID_PARAMS, data={"reason": clip(reason)})

    @property
    def code(self) -> int:
        """The JSON-RPC error code."""
        return self.error.code

    @property
    def message(self) -> str:
        """The error's message."""
        return self.error.message

    @property
    def data(self) -> Any:
        """The error's ``data``, or ``None`` when it has none."""
        return None if self.error.data is UNSET else self.error.data


class ResponseViolation(Exception):
    """The peer's answer to a request broke a rule (an invalid result, say): the
    request is over, with no usable result. ``violation`` is the session's
    :class:`~mcpspec.runtime.ProtocolViolation` (``violation.rule``, ``violation.reason``)."""

    def __init__(self, violation: ProtocolViolation) -> None:
        super().__init__(
            f"the answer to {violation.method or 'a request'} (id {violation.request_id!r}) "
            f"broke rule {violation.rule.value}: {violation.reason} (at {violation.path})"
        )
        self.violation = violation

    @property
    def request_id(self) -> RequestId | None:
        """The id of the request answered."""
        return self.violation.request_id

    @property
    def error(self) -> ErrorObject:
        """The JSON-RPC error describing the violation."""
        return self.violation.error


class RequestTimeout(TimeoutError):
    """A request got no answer in time; it was cancelled on the wire
    (``notifications/cancelled``)."""

    def __init__(self, request_id: RequestId, method: str, timeout: float) -> None:
        super().__init__(f"{method} (id {request_id!r}) got no answer in {timeout} s")
        self.request_id = request_id
        self.method = method
        self.timeout = timeout


class OpenTimeout(TimeoutError):
    """Opening a connection (connecting, then negotiating) did not finish within the
    client's ``open_timeout``."""

    def __init__(self, timeout: float, what: str = "") -> None:
        super().__init__(f"the connection did not open in {timeout} s" + (what and f": {what}"))
        self.timeout = timeout


class NegotiationRefused(Exception):
    """Negotiation failed: no revision both sides accept, or the server refused to
    initialize. ``event`` is the session's :class:`~mcpspec.runtime.NegotiationFailed`."""

    def __init__(self, event: NegotiationFailed) -> None:
        super().__init__(f"negotiation failed: {event.reason}")
        self.event = event


class CancelledByPeer(Exception):
    """The peer ended one of this side's requests with ``notifications/cancelled``: no
    answer will come (in 2026-07-28 a server ends a ``subscriptions/listen`` stream so).
    ``request_id`` is the request's id, ``reason`` the peer's, if it gave one."""

    def __init__(self, request_id: RequestId, reason: str | None) -> None:
        super().__init__(f"the peer cancelled request {request_id!r}: {reason or 'no reason'}")
        self.request_id = request_id
        self.reason = reason
