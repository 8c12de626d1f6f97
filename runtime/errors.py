"""The one exception wire input raises, and the JSON-RPC error codes it maps to."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

__all__ = ["ERROR_MESSAGES", "ErrorCode", "InvalidMessage"]


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
    is wrong there. ``id`` and ``method`` are the request's, when they could be read.
    """

    def __init__(
        self,
        code: ErrorCode,
        path: str,
        reason: str,
        *,
        id: int | str | None = None,
        method: str | None = None,
    ) -> None:
        super().__init__(f"{reason} (at {path}; JSON-RPC error {int(code)})")
        self.code = code
        self.path = path
        self.reason = reason
        self.id = id
        self.method = method

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
