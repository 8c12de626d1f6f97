"""What the receiving and sending parts ask of a session's negotiation part.

Negotiation is the one thing a server and a client do differently, so each has its own
part (:class:`~mcpspec.runtime.session.server.ServerNegotiation`,
:class:`~mcpspec.runtime.session.client.ClientNegotiation`); everything else of a session is
the same for both, told apart by role data (:class:`~.negotiated_terms.NegotiatedTerms`).
The parts hand over only the messages that negotiate: ``initialize`` and its answer,
``notifications/initialized``, ``server/discover`` and its answer, the first message a
server reads, and the first valid request of the stateless model. Each method says when
it is called; a side with nothing to do there does nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from msgspec import Raw

from ..envelope import ErrorObject, RequestId, ResultResponse
from .events import Event, SessionReady
from .pending import IncomingRequest, OutgoingRequest
from .stateless import RequestMeta

if TYPE_CHECKING:
    from .inbound import Handler, Receiver

__all__ = ["Negotiation"]


class Negotiation(Protocol):
    """A side's negotiation (see the module docstring)."""

    # -- receiving ----------------------------------------------------------------------

    def handlers(self, receiver: Receiver) -> dict[str, Handler]:
        """The handlers of the peer's requests and notifications that negotiate, by
        method (built with the dispatch table)."""
        ...

    def first_revision(self, data: bytes) -> str | None:
        """The revision to read ``data`` with, the first message of the connection
        (``None``: the revision in use)."""
        ...

    def ready_by_request(self, checked: RequestMeta) -> SessionReady | None:
        """The first request whose ``_meta`` passed, in the stateless model: the event
        that the session is ready, if that makes it so."""
        ...

    def initialize_answered(self, record: OutgoingRequest, response: ResultResponse) -> list[Event]:
        """The events of the result answering ``initialize`` (still untyped: its
        revision is the one it names)."""
        ...

    def result_received(self, record: OutgoingRequest, result: Any, events: list[Event]) -> None:
        """A typed result of a request that negotiates arrived; may add events."""
        ...

    def result_refused(self, record: OutgoingRequest, raw: Raw | None, events: list[Event]) -> None:
        """An answer to ``record`` that cannot be used arrived (``events``: its
        violation): a result not of its type (``raw``), or a response that cannot be
        read at all (``None``); may add events."""
        ...

    def error_received(
        self, record: OutgoingRequest, error: ErrorObject, events: list[Event]
    ) -> None:
        """An error answered a request of this side; may add events."""
        ...

    def unreadable_request(self) -> RequestId | None:
        """The id of the request an error response with id null answers, when
        negotiation knows it (an older server that cannot read the probe)."""
        ...

    # -- sending --------------------------------------------------------------------------

    def sending(self, message: Any, method: str) -> None:
        """Before ``initialize``, ``server/discover`` or ``notifications/initialized``
        is recorded: check it (may raise), and move the lifecycle on for a
        notification."""
        ...

    def sent(self, message: Any, method: str) -> None:
        """After ``initialize`` or ``server/discover`` was recorded."""
        ...

    def answering(self, record: IncomingRequest, result: Any) -> None:
        """Before the result of ``initialize`` or ``server/discover`` goes out: check it
        (may raise), and take this side's capabilities from it."""
        ...

    def refusing(self, record: IncomingRequest) -> None:
        """Before an error response to ``initialize`` goes out."""
        ...
