"""mcpspec.runtime: the revision-independent layer under the generated bindings.

:class:`Codec` decodes and encodes one revision's messages; :class:`InvalidMessage` is
the one exception bad wire input raises, with the JSON-RPC error code, JSON path and
reason; :class:`ResultResponse` and :class:`ErrorResponse` are the JSON-RPC response
envelopes.
"""

from __future__ import annotations

from .codec import Codec, Message
from .envelope import ErrorObject, ErrorResponse, RequestId, ResultResponse
from .errors import ErrorCode, InvalidMessage

__all__ = [
    "Codec",
    "ErrorCode",
    "ErrorObject",
    "ErrorResponse",
    "InvalidMessage",
    "Message",
    "RequestId",
    "ResultResponse",
]
