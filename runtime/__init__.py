"""mcpspec.runtime: the revision-independent layer under the generated bindings.

:class:`Codec` decodes and encodes one revision's messages; :class:`InvalidMessage` is
the one exception bad wire input raises, with the JSON-RPC error code, JSON path and
reason; :class:`ResultResponse` and :class:`ErrorResponse` are the JSON-RPC response
envelopes; :func:`protocol_model` says how a revision negotiates (a
:class:`ProtocolModel`, as its generated module declares).

The folders are the layers. This package's own modules are the codec layer, what the
generated revision modules import (:mod:`.codec`, :mod:`.declared`, :mod:`.envelope`,
:mod:`.errors`, :mod:`.unions`); :mod:`.session` is the sans-IO session core above it;
:mod:`.connection` does the I/O (anyio: stdio, Streamable HTTP).

The sans-IO sessions (:class:`ServerSession`, :class:`ClientSession`), their events
(``RequestReceived``, ``ProtocolViolation``, ...), the :class:`Rule` table and the
local-misuse exceptions are exported here too, imported from :mod:`.session` on first
use, so that importing a revision module (which imports the codec, hence this package)
stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .codec import Codec, Message
from .declared import ProtocolModel
from .envelope import ErrorObject, ErrorResponse, RequestId, ResultResponse
from .errors import ErrorCode, InvalidMessage

if TYPE_CHECKING:
    from .session.client import ClientSession
    from .session.events import (
        ErrorReceived,
        Event,
        NegotiationFailed,
        NotificationReceived,
        Outgoing,
        ProgressReceived,
        ProtocolViolation,
        RequestCancelled,
        RequestReceived,
        ResponseReceived,
        SessionReady,
    )
    from .session.limits import DEFAULT_LIMITS, Limits
    from .session.misuse import (
        CapabilityError,
        LimitError,
        LocalProtocolError,
        NegotiationError,
        ProgressError,
        RequestIdError,
        RevisionError,
        SessionClosed,
        StateError,
        SubscriptionError,
    )
    from .session.rules import RULES, Rule
    from .session.server import ServerSession
    from .session.state import Phase
    from .session.version_negotiation import protocol_model

#: Lazily imported names, by the submodule that defines them.
_LAZY = {
    "protocol_model": "session.version_negotiation",
    "ClientSession": "session.client",
    "ServerSession": "session.server",
    "Phase": "session.state",
    "Limits": "session.limits",
    "DEFAULT_LIMITS": "session.limits",
    "Rule": "session.rules",
    "RULES": "session.rules",
    **dict.fromkeys(
        [
            "ErrorReceived",
            "Event",
            "NegotiationFailed",
            "NotificationReceived",
            "Outgoing",
            "ProgressReceived",
            "ProtocolViolation",
            "RequestCancelled",
            "RequestReceived",
            "ResponseReceived",
            "SessionReady",
        ],
        "session.events",
    ),
    **dict.fromkeys(
        [
            "CapabilityError",
            "LimitError",
            "LocalProtocolError",
            "NegotiationError",
            "ProgressError",
            "RequestIdError",
            "RevisionError",
            "SessionClosed",
            "StateError",
            "SubscriptionError",
        ],
        "session.misuse",
    ),
}

__all__ = [
    "DEFAULT_LIMITS",
    "RULES",
    "CapabilityError",
    "ClientSession",
    "Codec",
    "ErrorCode",
    "ErrorObject",
    "ErrorReceived",
    "ErrorResponse",
    "Event",
    "InvalidMessage",
    "LimitError",
    "Limits",
    "LocalProtocolError",
    "Message",
    "NegotiationError",
    "NegotiationFailed",
    "NotificationReceived",
    "Outgoing",
    "Phase",
    "ProgressError",
    "ProgressReceived",
    "ProtocolModel",
    "ProtocolViolation",
    "RequestCancelled",
    "RequestId",
    "RequestIdError",
    "RequestReceived",
    "ResponseReceived",
    "ResultResponse",
    "RevisionError",
    "Rule",
    "ServerSession",
    "SessionClosed",
    "SessionReady",
    "StateError",
    "SubscriptionError",
    "protocol_model",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib  # here, not at the top: a revision module's import skips it

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
