"""The parts of one session, handed together to its receiving and sending parts (see
:mod:`.core` for what each does)."""

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
    """A part that works on the others (the receiving and the sending part): the parts
    it shares, bound once as attributes, with the pending table's and the progress
    tracker's dicts that hot paths read; and the negotiation part it hands the messages
    that negotiate to."""

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
