"""The parts of one session (:class:`SessionParts`), handed together to the two paths
through them, receiving and sending (:class:`MessagePath`); :mod:`.core` says what each
part does."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from .limits import Limits
from .negotiated_terms import NegotiatedTerms
from .pending import PendingTable
from .progress import ProgressTracker
from .state import Lifecycle
from .stateless import Subscriptions
from .violations import Violations

if TYPE_CHECKING:
    from .negotiation_part import Negotiation

__all__ = ["MessagePath", "SessionParts"]


class SessionParts(NamedTuple):
    """The parts of one session."""

    terms: NegotiatedTerms
    life: Lifecycle
    pending: PendingTable
    progress: ProgressTracker
    subscriptions: Subscriptions
    violations: Violations
    limits: Limits
    #: Switches the session to another revision, rebuilding what depends on it.
    switch: Callable[[str], None]


class MessagePath:
    """A path through the session's parts (the receiving and the sending part are the
    two): the parts it shares, as attributes (with the pending table's and the progress
    tracker's dicts, which nearly every message reads), and the negotiation part it hands
    the messages that negotiate to."""

    def __init__(self, parts: SessionParts) -> None:
        self._terms = parts.terms
        self._life = parts.life
        self._pending = pending = parts.pending
        self._incoming = pending.incoming
        self._outgoing = pending.outgoing
        self._progress = progress = parts.progress
        self._expected = progress.expected
        self._reporting = progress.reporting
        self._subscriptions = parts.subscriptions
        #: Switches the session to another revision.
        self._switch = parts.switch
        self._negotiation: Negotiation

    def attach(self, negotiation: Negotiation) -> None:
        """The negotiation part whose messages this part hands over."""
        self._negotiation = negotiation
