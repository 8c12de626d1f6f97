"""Exceptions for misuse by the local side.

Wire input never raises: a peer that breaks a rule produces a
:class:`~mcpspec.runtime.session.events.ProtocolViolation` event. The local side breaking a rule
(sending a request the peer has no capability for, answering an id nobody asked, ...)
is a bug in the caller, and raises one of these. Each names the :class:`Rule` broken.
"""

from __future__ import annotations

from .rules import Rule

__all__ = [
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
]


class LocalProtocolError(Exception):
    """The local side tried to send something the protocol forbids; nothing was sent.

    ``rule`` names the rule that the message would have broken.
    """

    def __init__(self, rule: Rule, message: str) -> None:
        super().__init__(f"{message} [{rule.value}]")
        self.rule = rule


class StateError(LocalProtocolError):
    """The message is not allowed in the session's current lifecycle state."""


class SessionClosed(StateError):
    """The session is closed (negotiation failed or ``close()`` was called)."""


class RequestIdError(LocalProtocolError):
    """A request id already outstanding, or a response to an id nobody is waiting for."""


class CapabilityError(LocalProtocolError):
    """The peer did not declare the capability the request needs."""


class ProgressError(LocalProtocolError):
    """A progress token already in use, unknown, or a progress value that does not
    increase."""


class LimitError(LocalProtocolError):
    """Sending the message would make the session hold more than its ``Limits`` allow
    (progress tokens kept for requests the peer has not finished)."""


class NegotiationError(LocalProtocolError):
    """A protocol version outside what the session accepts, or an answer to
    ``initialize`` that breaks the negotiation rule."""


class RevisionError(LocalProtocolError):
    """A value of another revision's types, or a method this revision or direction does
    not have."""


class SubscriptionError(LocalProtocolError):
    """A ``subscriptions/listen`` notification the subscription does not allow, or a
    notifications/message no request asked for (2026-07-28)."""
