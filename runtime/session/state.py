"""The lifecycle of a session as tables: phases, what moves between them, what may flow.

Theory of operation
===================

In the manner of h11, the lifecycle is data, not code. A session is in one
:class:`Phase`; a small number of protocol moves (:class:`Trigger`) change the phase,
and nothing else does. Which moves are legal in which phase, for which side, is the
``TRANSITIONS`` table: ``(role, phase, trigger) -> next phase``. A move missing from the
table is illegal. The session asks ``Lifecycle.can(trigger)`` before acting: when the
move comes from the wire, an illegal one becomes a
:class:`~mcpspec.runtime.session.events.ProtocolViolation`; when it comes from the local side, a
:class:`~mcpspec.runtime.session.misuse.StateError`.

Phases only matter before the session is ready. The handshake revisions go::

    client  IDLE --send initialize--> INITIALIZING --receive result--> INITIALIZED
            --send notifications/initialized--> READY
    server  IDLE --receive initialize--> INITIALIZING --send result--> INITIALIZED
            --receive notifications/initialized--> READY
            (INITIALIZING --send error--> IDLE: the client may try again)

An ``auto`` client probes first (``IDLE --send server/discover--> PROBING``), and from
PROBING either reaches READY on a discover result it can use (the stateless model) or
falls back to ``send initialize`` (-32601 from the server). A server in IDLE that
receives a valid 2026-07-28 request goes straight to READY in the stateless model. A
client pinned to 2026-07-28 starts READY. Failed negotiation (or ``close()``) moves any
phase to CLOSED, where nothing is sent or received.

While a side is in a phase, *what may flow* is the second table, ``GATES``:
``(role, phase, direction) -> Gate``, the request and notification methods allowed, or
``None`` for any. This is where the handshake rules live: before the ``initialize``
response the client sends only ``ping`` (and cancellations), the server accepts only
``initialize`` and ``ping``; until ``notifications/initialized`` the server sends only
``ping``, ``notifications/message`` and the progress of requests it has received.
Responses are not gated by phase: the pending table decides whether a response is legal,
whatever the phase.

Everything after READY (ids, cancellation, progress, capabilities, the per-request
rules of 2026-07-28) is tracked elsewhere, per request, not per session. The lifecycle
stays out of the receive hot path: ``Lifecycle.gated`` is false when the receive gate
lets everything through, and a session checks the gate only while it is true.
"""

from __future__ import annotations

from enum import Enum
from typing import Final, NamedTuple

__all__ = ["GATES", "TRANSITIONS", "Gate", "Lifecycle", "Phase", "Role", "Trigger"]


class _Table(Enum):
    """An enum whose members key the tables below: they are singletons compared by
    identity, so they hash by identity too (in C; ``Enum`` hashes by name, in Python)."""

    __hash__ = object.__hash__


class Role(_Table):
    """Which side of the connection a session plays."""

    CLIENT = "client"
    SERVER = "server"


class Phase(_Table):
    """Where a session is in its lifecycle."""

    IDLE = "idle"
    PROBING = "probing"
    INITIALIZING = "initializing"
    INITIALIZED = "initialized"
    READY = "ready"
    CLOSED = "closed"


class Trigger(_Table):
    """A protocol move that changes the phase."""

    SEND_PROBE = "send server/discover probe"
    PROBE_ANSWERED = "receive a usable server/discover result"
    SEND_INITIALIZE = "send initialize"
    RECEIVE_INITIALIZE = "receive initialize"
    SEND_INITIALIZE_RESULT = "send the initialize result"
    SEND_INITIALIZE_ERROR = "send an error for initialize"
    RECEIVE_INITIALIZE_RESULT = "receive the initialize result"
    SEND_INITIALIZED = "send notifications/initialized"
    RECEIVE_INITIALIZED = "receive notifications/initialized"
    RECEIVE_STATELESS_REQUEST = "receive a valid 2026-07-28 request"
    CLOSE = "close"


class Gate(NamedTuple):
    """The request and notification methods allowed to flow; ``None`` allows any."""

    requests: frozenset[str] | None
    notifications: frozenset[str] | None


C, S = Role.CLIENT, Role.SERVER
P = Phase
T = Trigger

#: ``(role, phase, trigger) -> next phase``; a move not listed is illegal.
TRANSITIONS: Final[dict[tuple[Role, Phase, Trigger], Phase]] = {
    (C, P.IDLE, T.SEND_PROBE): P.PROBING,
    (C, P.PROBING, T.SEND_PROBE): P.PROBING,  # retry with another version after -32022
    (C, P.PROBING, T.PROBE_ANSWERED): P.READY,
    (C, P.IDLE, T.SEND_INITIALIZE): P.INITIALIZING,
    (C, P.PROBING, T.SEND_INITIALIZE): P.INITIALIZING,  # fallback after -32601
    (C, P.INITIALIZING, T.RECEIVE_INITIALIZE_RESULT): P.INITIALIZED,
    (C, P.INITIALIZED, T.SEND_INITIALIZED): P.READY,
    (S, P.IDLE, T.RECEIVE_INITIALIZE): P.INITIALIZING,
    (S, P.INITIALIZING, T.SEND_INITIALIZE_RESULT): P.INITIALIZED,
    (S, P.INITIALIZING, T.SEND_INITIALIZE_ERROR): P.IDLE,
    (S, P.INITIALIZED, T.RECEIVE_INITIALIZED): P.READY,
    (S, P.IDLE, T.RECEIVE_STATELESS_REQUEST): P.READY,
}
for _role in Role:
    for _phase in Phase:
        TRANSITIONS[(_role, _phase, T.CLOSE)] = P.CLOSED

_ANY: Final = Gate(None, None)
_NOTHING: Final = Gate(frozenset(), frozenset())
_CANCEL = "notifications/cancelled"
_LOG = "notifications/message"
_PROGRESS = "notifications/progress"

#: ``(role, phase, "send" | "receive") -> Gate``.
GATES: Final[dict[tuple[Role, Phase, str], Gate]] = {
    # client sends
    (C, P.IDLE, "send"): Gate(frozenset({"initialize", "ping", "server/discover"}), frozenset()),
    (C, P.PROBING, "send"): Gate(
        frozenset({"initialize", "server/discover"}), frozenset({_CANCEL})
    ),
    (C, P.INITIALIZING, "send"): Gate(frozenset({"ping"}), frozenset({_CANCEL})),
    (C, P.INITIALIZED, "send"): Gate(
        frozenset({"ping"}), frozenset({_CANCEL, "notifications/initialized"})
    ),
    (C, P.READY, "send"): _ANY,
    # client receives
    (C, P.IDLE, "receive"): _NOTHING,
    (C, P.PROBING, "receive"): Gate(frozenset(), frozenset({_LOG})),
    (C, P.INITIALIZING, "receive"): Gate(frozenset({"ping"}), frozenset({_LOG, _CANCEL})),
    (C, P.INITIALIZED, "receive"): Gate(frozenset({"ping"}), frozenset({_LOG, _CANCEL})),
    (C, P.READY, "receive"): _ANY,
    # server sends
    (S, P.IDLE, "send"): Gate(frozenset({"ping"}), frozenset({_LOG, _CANCEL})),
    (S, P.INITIALIZING, "send"): Gate(frozenset({"ping"}), frozenset({_LOG, _CANCEL})),
    # A client may send requests before notifications/initialized; their handlers may
    # report progress (the rule restrains the server's requests, not its notifications).
    (S, P.INITIALIZED, "send"): Gate(frozenset({"ping"}), frozenset({_LOG, _CANCEL, _PROGRESS})),
    (S, P.READY, "send"): _ANY,
    # server receives
    (S, P.IDLE, "receive"): Gate(frozenset({"initialize", "ping"}), frozenset({_CANCEL})),
    (S, P.INITIALIZING, "receive"): Gate(frozenset({"ping"}), frozenset({_CANCEL})),
    (S, P.INITIALIZED, "receive"): _ANY,
    (S, P.READY, "receive"): _ANY,
}
for _role in Role:
    GATES[(_role, P.CLOSED, "send")] = _NOTHING
    GATES[(_role, P.CLOSED, "receive")] = _NOTHING


class Lifecycle:
    """The phase of one session, and the gates of that phase."""

    __slots__ = ("gated", "phase", "receive_gate", "role", "send_gate")

    def __init__(self, role: Role, phase: Phase = Phase.IDLE) -> None:
        self.role = role
        self.phase: Phase
        self.send_gate: Gate
        self.receive_gate: Gate
        #: False when the receive gate lets every message through; always true in IDLE
        #: and CLOSED, where a message takes the session's slow path.
        self.gated: bool
        self._enter(phase)

    def can(self, trigger: Trigger) -> bool:
        """Whether ``trigger`` is a legal move now."""
        return (self.role, self.phase, trigger) in TRANSITIONS

    def fire(self, trigger: Trigger) -> Phase:
        """Make the move; ``ValueError`` if it is not legal (check :meth:`can` first)."""
        try:
            phase = TRANSITIONS[(self.role, self.phase, trigger)]
        except KeyError:
            raise ValueError(
                f"{self.role.value} cannot {trigger.value} in phase {self.phase.value}"
            ) from None
        self._enter(phase)
        return phase

    def _enter(self, phase: Phase) -> None:
        self.phase = phase
        self.send_gate = GATES[(self.role, phase, "send")]
        self.receive_gate = gate = GATES[(self.role, phase, "receive")]
        self.gated = gate is not _ANY

    def __repr__(self) -> str:
        return f"<Lifecycle {self.role.value} {self.phase.value}>"
