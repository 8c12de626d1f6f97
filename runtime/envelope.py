"""JSON-RPC 2.0 response envelopes, the same in every revision.

Requests and notifications are the revision's own generated types. A response is kept
as a :class:`ResultResponse` whose ``result`` stays ``msgspec.Raw`` until the caller, who
knows the method it answers, types it with ``codec.decode_result(method, result)``.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias, TypeGuard, cast

import msgspec
from msgspec import UNSET, UnsetType

__all__ = ["JSONRPC_VERSION", "ErrorObject", "ErrorResponse", "RequestId", "ResultResponse"]

RequestId: TypeAlias = int | str

#: The default of every generated ``jsonrpc`` field: ``"2.0"``, as a string object of its
#: own. A decoded ``"2.0"`` is never this object, so a decoded message whose ``jsonrpc``
#: *is* it lacked the member on the wire, which the codec reports (-32600).
JSONRPC_VERSION: Final = cast(Literal["2.0"], "".join(("2.", "0")))


class ErrorObject(msgspec.Struct, kw_only=True):
    """The ``error`` member of an error response."""

    #: The error type (``ErrorCode`` for the standard ones).
    code: int
    #: A short description of the error.
    message: str
    #: Anything the sender adds, kept as sent.
    data: Any = UNSET


class ResultResponse(msgspec.Struct, kw_only=True):
    """A successful response. Decoded, ``result`` is the ``msgspec.Raw`` JSON of the
    result; to send, put any generated result value there."""

    id: RequestId
    result: Any
    jsonrpc: Literal["2.0"] = "2.0"


class ErrorResponse(msgspec.Struct, kw_only=True):
    """An error response; ``id`` is ``None`` when the request's id could not be read
    (``UNSET`` when a 2025-11-25 or later peer left it out)."""

    id: RequestId | UnsetType | None
    error: ErrorObject
    jsonrpc: Literal["2.0"] = "2.0"


class AnyResponse(msgspec.Struct, kw_only=True):
    """What the codec decodes a response into before it checks result-xor-error."""

    jsonrpc: Literal["2.0"]
    id: RequestId | UnsetType | None = UNSET
    result: msgspec.Raw | UnsetType = UNSET
    error: ErrorObject | UnsetType = UNSET


class Envelope(AnyResponse, kw_only=True):
    """A message's members with every value skipped: tells a response (no ``method``)
    from a request or notification in one pass."""

    method: Any = UNSET


def typed_response_type(result_type: Any) -> type[msgspec.Struct]:
    """An :class:`Envelope` whose ``result`` is ``result_type``: a response decoded and
    typed in one pass (``method`` tells a request or notification that came instead)."""
    return msgspec.defstruct(
        "TypedResponse",
        [("result", result_type | UnsetType, UNSET)],
        bases=(Envelope,),
        kw_only=True,
    )


def is_id(value: Any) -> TypeGuard[RequestId]:
    """Whether ``value`` is a JSON-RPC request id: a string or an integer."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)
