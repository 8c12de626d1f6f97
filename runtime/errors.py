"""The one exception wire input raises, the JSON-RPC error codes it maps to, and how
text taken from the wire is bounded before it goes into an error."""

from __future__ import annotations

import reprlib
from enum import IntEnum
from typing import Any, Final

__all__ = ["ERROR_MESSAGES", "MAX_ECHO", "ErrorCode", "InvalidMessage", "clip", "show"]

#: The most characters of a reason or path an error carries: text a peer sent is echoed
#: back in error responses, and an error response must not grow with its input.
MAX_ECHO: Final = 512


def clip(text: str, limit: int = MAX_ECHO) -> str:
    """``text`` cut to about ``limit`` characters, the cut marked with how much went."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} characters cut)"


class _Show(reprlib.Repr):
    """``repr`` that stays small whatever it is given (long strings, huge or deeply
    nested containers, integers of thousands of digits)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxstring = 120
        self.maxother = 120
        self.maxlong = 60
        self.maxlist = self.maxtuple = self.maxdict = self.maxset = 8

    def repr_int(self, x: int, level: int) -> str:
        # int.__repr__ refuses more than 4,300 digits: say how long it is instead.
        if x.bit_length() > 4000:
            return f"<an integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_SHOW: Final = _Show()


def show(value: Any) -> str:
    """A bounded ``repr`` of a value taken from the wire, for error reasons."""
    return _SHOW.repr(value)


class ErrorCode(IntEnum):
    """JSON-RPC 2.0 error codes, and the MCP codes of the stateless revision."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    HEADER_MISMATCH = -32020
    MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
    UNSUPPORTED_PROTOCOL_VERSION = -32022


class InvalidMessage(ValueError):
    """Wire input that breaks a rule: not JSON, not JSON-RPC, or not the schema.

    ``code`` is the JSON-RPC error to answer with (-32700, -32600, -32601 or -32602),
    ``path`` the JSON path of the offending value (``$.params.name``), ``reason`` what
    is wrong there (both cut to :data:`MAX_ECHO` characters). ``id`` and ``method`` are
    the request's, when they could be read; for a response, ``id`` is that of the
    request it answers, read even from one that is not JSON when its leading members
    name it (:mod:`.unparsed_response`). ``response`` is true when the message has no ``method``:
    then it can only be an answer (broken, or with neither ``result`` nor ``error``), and
    its ``id`` names the request it would answer. ``answerable`` is false for a
    notification or a response that has ``result`` or ``error``, which are never
    answered; a message with neither is answered unless it answers a request of the
    receiver's. ``limit`` names the limit the input went over
    (``"max_batch_members"``), if that is what is wrong.
    """

    def __init__(
        self,
        code: ErrorCode,
        path: str,
        reason: str,
        *,
        id: int | str | None = None,
        method: str | None = None,
        answerable: bool = True,
        response: bool = False,
        limit: str | None = None,
    ) -> None:
        path = clip(path)
        reason = clip(reason)
        super().__init__(f"{reason} (at {path}; JSON-RPC error {int(code)})")
        self.code = code
        self.path = path
        self.reason = reason
        self.id = id
        self.method = method
        self.answerable = answerable
        self.response = response
        self.limit = limit

    @property
    def data(self) -> dict[str, Any]:
        """The ``data`` member of the error response: where and what."""
        return {"path": self.path, "reason": self.reason}

    @property
    def message(self) -> str:
        """The ``message`` member of the error response."""
        return ERROR_MESSAGES.get(self.code, "Error")


#: The standard ``message`` of each error code's response.
ERROR_MESSAGES: dict[int, str] = {
    ErrorCode.PARSE_ERROR: "Parse error",
    ErrorCode.INVALID_REQUEST: "Invalid request",
    ErrorCode.METHOD_NOT_FOUND: "Method not found",
    ErrorCode.INVALID_PARAMS: "Invalid params",
    ErrorCode.INTERNAL_ERROR: "Internal error",
    ErrorCode.HEADER_MISMATCH: "Header mismatch",
    ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY: "Missing required client capability",
    ErrorCode.UNSUPPORTED_PROTOCOL_VERSION: "Unsupported protocol version",
}
