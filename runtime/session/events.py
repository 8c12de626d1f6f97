"""What a session's ``receive`` returns: typed events, one or more per wire message.

Every event is a frozen msgspec Struct. A request, notification or response the session
accepts becomes :class:`RequestReceived`, :class:`NotificationReceived` (with the
specialised :class:`RequestCancelled` and :class:`ProgressReceived`),
:class:`ResponseReceived` or :class:`ErrorReceived`. Input that breaks a rule becomes a
:class:`ProtocolViolation` naming the :class:`~mcpspec.runtime.session.rules.Rule`, with the
JSON-RPC error and, for a request, the error response to send. Negotiation adds
:class:`SessionReady`, :class:`NegotiationFailed` and :class:`Outgoing` (bytes the session
produced itself, such as ``notifications/initialized``, for the caller to write).

Events are built with keywords. The four the receive path makes for nearly every
message (:class:`RequestReceived`, :class:`NotificationReceived`,
:class:`ProgressReceived`, :class:`ResponseReceived`) also take their fields in order,
positionally: the session builds them so, which costs less per message.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ..declared import RESULT_INPUT_REQUIRED
from ..envelope import ErrorObject, ErrorResponse, RequestId
from .rules import Rule

__all__ = [
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
]

ProgressToken = int | str


class Event(msgspec.Struct, kw_only=True, frozen=True):
    """Base class of every session event."""


class RequestReceived(Event, frozen=True):
    """The peer sent a request; answer it with ``session.send(ResultResponse(...))`` or
    an ``ErrorResponse`` (or not at all, if it is cancelled first)."""

    #: The typed request (a generated Struct of the negotiated revision).
    request: Any
    #: Its JSON-RPC id.
    request_id: RequestId
    #: Its method.
    method: str
    #: ``params._meta.progressToken``, when the peer asked for progress.
    progress_token: ProgressToken | None = None
    #: 2026-07-28 only: the request's ``_meta`` protocol version.
    protocol_version: str | None = None
    #: 2026-07-28 only: the client's capabilities for this request (``ClientCapabilities``).
    client_capabilities: Any = None
    #: 2026-07-28 only: the client's identity, when it sent one (``Implementation``).
    client_info: Any = None
    #: 2026-07-28 only: the ``io.modelcontextprotocol/logLevel`` of this request.
    log_level: str | None = None


class NotificationReceived(Event, frozen=True):
    """The peer sent a notification (other than cancellation and progress)."""

    #: The typed notification.
    notification: Any
    #: Its method.
    method: str


class RequestCancelled(Event, kw_only=True, frozen=True):
    """The peer cancelled a request (``notifications/cancelled``).

    ``active`` is true when the request was outstanding: drop it and send no response
    (``send`` now returns ``b""`` for it). When false the notification referred to no
    outstanding request (it crossed the response); nothing to do.
    """

    notification: Any
    request_id: RequestId
    reason: str | None
    active: bool


class ProgressReceived(Event, frozen=True):
    """``notifications/progress`` for a request this side sent."""

    notification: Any
    progress_token: ProgressToken
    progress: float
    total: float | None
    message: str | None
    #: The id of the request the token belongs to.
    request_id: RequestId


class ResponseReceived(Event, frozen=True):
    """A result for a request this side sent, typed by the request's method."""

    request_id: RequestId
    method: str
    #: The typed result (``CreateTaskResult`` for a task-augmented request;
    #: ``InputRequiredResult`` when a 2026-07-28 server asks for input).
    result: Any
    #: The request it answers, as it was sent.
    request: Any

    @property
    def input_required(self) -> bool:
        """True when the result is a 2026-07-28 ``InputRequiredResult``."""
        return getattr(type(self.result), "result_type", None) == RESULT_INPUT_REQUIRED


class ErrorReceived(Event, kw_only=True, frozen=True):
    """An error response for a request this side sent."""

    #: ``None`` when the peer could not read a message of this side (id null).
    request_id: RequestId | None
    method: str | None
    error: ErrorObject
    request: Any


class ProtocolViolation(Event, kw_only=True, frozen=True):
    """Wire input that breaks a rule.

    ``rule`` names it, ``error`` is the JSON-RPC error (``error.code``); for a request,
    ``response`` is the error response to send (``session.send(event.response)``), else
    ``None``: notifications and responses are never answered, and neither is a request
    that reuses an outstanding id (the answer would read as the first request's).

    ``ends_request`` tells what ``request_id`` names: true, a request of this side, which
    the peer answered with a response that breaks the rule (the request is over: no
    other answer will come); false, a message of the peer. The two directions' ids are
    separate namespaces, so a peer's request may carry the id of a request of this side:
    its violation never ends that request.
    """

    rule: Rule
    error: ErrorObject
    response: ErrorResponse | None = None
    request_id: RequestId | None = None
    method: str | None = None
    #: JSON path of the offending value.
    path: str = "$"
    #: What is wrong there.
    reason: str = ""
    #: Whether this ends the request of this side ``request_id`` (see above).
    ends_request: bool = False


class SessionReady(Event, kw_only=True, frozen=True):
    """Negotiation finished: the session speaks ``revision`` in ``model``.

    A client gets it when the initialize result (handshake) or the discover result
    (stateless) arrives; a server when ``notifications/initialized`` arrives, or with
    the first valid stateless request.
    """

    revision: str
    model: Literal["handshake", "stateless"]
    #: The peer's ``Implementation`` (server/client info), when known.
    peer_info: Any = None
    #: The peer's capabilities (``ServerCapabilities``/``ClientCapabilities``), when known.
    peer_capabilities: Any = None
    #: The server's instructions (client side), when it sent any.
    instructions: str | None = None


class NegotiationFailed(Event, kw_only=True, frozen=True):
    """No revision both sides accept (or the server refused ``initialize``): the session
    is now closed, and the caller should disconnect."""

    rule: Rule
    #: The version this side offered, if any.
    offered: str | None
    #: The version or versions the peer answered with.
    answered: tuple[str, ...]
    #: The revisions this side accepts.
    supported: tuple[str, ...]
    reason: str
    #: The JSON-RPC error describing it (-32022 with ``supported`` and ``requested``).
    error: ErrorObject


class Outgoing(Event, kw_only=True, frozen=True):
    """A message the session produced on its own (``notifications/initialized``, the
    ``initialize`` after a failed ``server/discover`` probe, a retry after -32022, the
    answer to a 2025-03-26 batch completed by a cancellation): write ``data``."""

    data: bytes
    message: Any
