"""The connection core: :class:`Session`, one MCP connection assembled from parts.

Theory of operation
===================

A session is a handful of parts, each with one job, and two paths through them:

* :class:`~mcpspec.runtime.session.state.Lifecycle`: the phase, and what may flow in it;
* :class:`~mcpspec.runtime.session.pending.PendingTable`: requests in flight both ways, the
  cancelled ids each side remembers, the answers owed to a received batch;
* :class:`~mcpspec.runtime.session.progress.ProgressTracker`: progress tokens both ways;
* :class:`~mcpspec.runtime.session.stateless.Subscriptions`: open ``subscriptions/listen``
  streams (2026-07-28);
* :class:`~.negotiated_terms.NegotiatedTerms`: the negotiation state, the revision in use
  with its protocol model (:mod:`.protocol_models`) and rule tables, and what both sides
  declared;
* a negotiation part, the only one that differs between a server and a client
  (:mod:`.negotiation_part`);
* :class:`~mcpspec.runtime.session.violations.Violations`: how a broken rule becomes an event.

``receive`` is :meth:`Receiver.receive <mcpspec.runtime.session.inbound.Receiver.receive>` and
``send`` is :meth:`Sender.send <mcpspec.runtime.session.outbound.Sender.send>`: the receiving and
sending parts read and change the parts above, and nothing else. A rule of single
messages is written once, in the rule table (:mod:`.checks`), and both paths apply it:
on ``send`` its problem raises, on ``receive`` it is a violation. A server and a client
are the same :class:`Session`, given their role and negotiation part;
:class:`~mcpspec.runtime.ServerSession` and :class:`~mcpspec.runtime.ClientSession` add
the public methods of their role and override nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import Any, Literal, TypeAlias

from msgspec import UNSET

from ..codec import Codec
from ..envelope import RequestId
from .events import Event
from .inbound import Receiver
from .limits import DEFAULT_LIMITS, Limits
from .negotiated_terms import NegotiatedTerms
from .negotiation_part import Negotiation
from .outbound import Sendable, Sender
from .parts import SessionParts
from .pending import PendingTable
from .progress import ProgressTracker
from .state import Lifecycle, Phase, Role, Trigger
from .stateless import Subscriptions
from .version_negotiation import accepted_revisions
from .violations import Violations

__all__ = ["Model", "Session"]

Model: TypeAlias = Literal["handshake", "stateless"]


class Session:
    """One MCP connection, either side, in either protocol model (see the module
    docstring). Use :class:`~mcpspec.runtime.ServerSession` or
    :class:`~mcpspec.runtime.ClientSession`."""

    def __init__(
        self,
        role: Role,
        revisions: Iterable[str] | None,
        info: Any,
        capabilities: Any,
        phase: Phase,
        revision: str,
        limits: Limits | None,
        negotiation: Callable[[Session], Negotiation],
        extensions: frozenset[str] = frozenset(),
    ) -> None:
        self._limits = limits = DEFAULT_LIMITS if limits is None else limits
        self._role = role
        self._life = Lifecycle(role, phase)
        self._pending = pending = PendingTable()
        self._progress = progress = ProgressTracker(limits.max_progress_tokens)
        self._subscriptions = subscriptions = Subscriptions()
        self._terms = terms = NegotiatedTerms(
            role, accepted_revisions(revisions), info, capabilities, revision, limits, extensions
        )
        self._violations = Violations(terms, pending, self._life, limits)
        parts = SessionParts(
            terms,
            self._life,
            pending,
            progress,
            subscriptions,
            self._violations,
            limits,
            self._use_revision,
        )
        self._receiver = Receiver(parts)
        self._sender = Sender(parts)
        self._negotiation = negotiation(self)
        self._receiver.attach(self._negotiation)
        self._sender.attach(self._negotiation)
        self.receive = self._receiver.receive

    # -- the two paths ----------------------------------------------------------------------

    #: ``receive(data)``: the events of one framed wire message; never raises. The
    #: session adds nothing to what its receiving part does, so this is that part's own
    #: method (:meth:`Receiver.receive <.inbound.Receiver.receive>`).
    receive: Callable[[bytes], list[Event]]

    def receive_unread(self, head: bytes, reason: str) -> list[Event] | None:
        """For a transport that skipped a message too large to read: when ``head`` (its
        first bytes) reads as the response to a request of this side, the events that
        end that request (a violation with rule ``limit-exceeded`` and ``reason``);
        else ``None`` (see :meth:`Receiver.unread_response
        <mcpspec.runtime.session.inbound.Receiver.unread_response>`)."""
        return self._receiver.unread_response(head, reason)

    def send(self, message: Sendable, *, progress_token: int | str | None = None) -> bytes:
        """The bytes of ``message`` after checking it against every rule the session
        keeps (see :meth:`Sender.send <mcpspec.runtime.session.outbound.Sender.send>`)."""
        return self._sender.send(message, progress_token=progress_token)

    def send_batch(self, messages: Sequence[Sendable]) -> bytes:
        """The bytes of a JSON-RPC batch of requests and notifications (2025-03-26; see
        :meth:`Sender.send_batch <mcpspec.runtime.session.outbound.Sender.send_batch>`)."""
        return self._sender.send_batch(messages)

    def cancel(self, request_id: RequestId, reason: str | None = None) -> bytes:
        """Send ``notifications/cancelled`` for an outstanding request of this side; its
        late response will be ignored."""
        return self._sender.cancel(request_id, reason)

    def internal_error(
        self, request_id: RequestId, message: str = "Internal error", data: Any = UNSET
    ) -> bytes:
        """Answer a request whose handler failed with -32603."""
        return self._sender.internal_error(request_id, message, data)

    # -- what changes the tables --------------------------------------------------------------

    def _use_revision(self, revision: str) -> None:
        """Switch to ``revision`` (while negotiation picks one). The peer's requests
        read before keep the revision they were read in: they are answered in it."""
        before = self._terms.codec.revision
        for record in self._pending.incoming.values():
            if record.revision is None and revision != before:
                record.revision = before
        self._terms.use(revision)
        self._receiver.rebuild()

    def _declare(self, capabilities: dict[str, Any]) -> None:
        """This side's capabilities are now ``capabilities`` (JSON)."""
        self._terms.declare(capabilities)
        self._receiver.rebuild()

    # -- public state -------------------------------------------------------------------------

    @property
    def revision(self) -> str | None:
        """The negotiated revision, or ``None`` before negotiation."""
        return self._terms.negotiated

    @property
    def model(self) -> Model | None:
        """``"handshake"`` or ``"stateless"`` once negotiated, else ``None``."""
        agreed = self._terms.agreed_model
        return None if agreed is None else agreed.name

    @property
    def phase(self) -> Phase:
        """The lifecycle phase (see :mod:`mcpspec.runtime.session.state`)."""
        return self._life.phase

    @property
    def types(self) -> ModuleType:
        """The generated module of the revision in use (``session.types.Tool``):
        messages given to ``send`` are values of its types."""
        return self._terms.module

    @property
    def codec(self) -> Codec:
        """The codec of the revision in use."""
        return self._terms.codec

    @property
    def accepted(self) -> tuple[str, ...]:
        """The revisions this side accepts, oldest first."""
        return self._terms.accepted

    @property
    def limits(self) -> Limits:
        """The limits this session keeps (see :class:`~mcpspec.runtime.session.limits.Limits`)."""
        return self._limits

    @property
    def capabilities(self) -> dict[str, Any]:
        """This side's declared capabilities (JSON object)."""
        return self._terms.own_caps

    @property
    def peer_capabilities(self) -> dict[str, Any] | None:
        """The peer's declared capabilities (JSON object), once known."""
        return self._terms.peer_caps

    @property
    def peer_info(self) -> Any:
        """The peer's ``Implementation``, once known (decoded anew on each read when it
        is large: the session keeps it within a small multiple of its size)."""
        return self._terms.peer_info

    @property
    def declared_peer_capabilities(self) -> Any:
        """The peer's capabilities as it declared them, typed (its revision's
        ``ClientCapabilities`` or ``ServerCapabilities``), once known; decoded anew on
        each read when they are large, as :attr:`peer_info`."""
        return self._terms.peer_capabilities

    @property
    def outstanding(self) -> frozenset[RequestId]:
        """Ids of the requests this side sent that await a response."""
        return frozenset(self._pending.outgoing)

    @property
    def unanswered(self) -> frozenset[RequestId]:
        """Ids of the peer's requests this side has not answered yet."""
        return frozenset(self._pending.incoming)

    @property
    def idle(self) -> bool:
        """Whether no request is in flight either way (none sent awaits a response,
        none of the peer's awaits its answer): ``outstanding`` and ``unanswered``
        both empty, told without copying them."""
        pending = self._pending
        return not pending.outgoing and not pending.incoming

    def next_id(self) -> int:
        """A request id not outstanding (a counter from 1)."""
        return self._pending.next_id()

    def number_requests_from(self, start: int) -> None:
        """Number this side's next requests from ``start`` on (not below the last one
        given): copies of one session on several workers each take a range of their
        own, so that their requests never share an id."""
        self._pending.counter = max(self._pending.counter, start - 1)

    def close(self) -> None:
        """Close the session: nothing more is sent or received."""
        self._life.fire(Trigger.CLOSE)
