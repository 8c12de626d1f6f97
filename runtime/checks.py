"""Protocol rules that both directions enforce, each written once.

A check is a pure function that returns the :class:`Problem` (the rule broken, where,
why) or ``None``. The sessions use the same check on both paths: on ``send`` a problem
raises the local-misuse error of its rule (:func:`misuse`), on ``receive`` it becomes a
:class:`~mcpspec.runtime.events.ProtocolViolation`.

Rules of a single message (what a request or notification of some method may hold,
given the requests in flight) are :class:`MessageRule` values in :data:`MESSAGE_RULES`,
by method. A check sees the message and its sender's side of the connection
(:class:`SenderView`: the requests the sender sent and received, the subscriptions): on
``send`` the sender is this side, on ``receive`` the peer, so one check reads the same
whichever way the message goes. A session applies the rules of a method on ``send``
(raising) and on ``receive`` (reporting, and answering a request with the rule's
error), in the protocol models and for the senders each rule names. :func:`register`
adds one; a session reads the table when it is built and when its revision changes.

The other rules live in one table each: the lifecycle's phases and gates in
:mod:`.state`, the capability each request needs in :mod:`.capabilities`, the
``_meta`` of a stateless request in :mod:`.stateless`, and what differs between the
protocol models in :mod:`.models`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from .contract import ProtocolModel
from .envelope import RequestId
from .errors import show
from .misuse import (
    LimitError,
    LocalProtocolError,
    ProgressError,
    StateError,
    SubscriptionError,
)
from .pending import IncomingRequest, OutgoingRequest, PendingTable
from .progress import Tokens
from .rules import Problem, Rule
from .state import Role
from .stateless import ACKNOWLEDGED, FILTER_FIELDS, LEVELS, LISTEN, Subscriptions, subscription_of

__all__ = [
    "IGNORED",
    "MESSAGE_RULES",
    "MessageRule",
    "Problem",
    "SenderView",
    "first_problem",
    "log_problem",
    "misuse",
    "register",
    "rule_table",
    "rules_for",
    "token_problem",
    "unregister",
]

#: Where a request's progress token is.
TOKEN_PATH: Final = "$.params._meta.progressToken"


#: The local-misuse error of the rules of :func:`token_problem` (the rules of the table
#: name theirs: :attr:`MessageRule.error`).
_MISUSE: Final[dict[Rule, type[LocalProtocolError]]] = {
    Rule.PROGRESS_TOKEN_IN_USE: ProgressError,
    Rule.LIMIT_EXCEEDED: LimitError,
}


def misuse(
    problem: Problem, default: type[LocalProtocolError] = LocalProtocolError
) -> LocalProtocolError:
    """The exception ``send`` raises for ``problem`` (``default`` for a rule that has no
    error class of its own)."""
    return _MISUSE.get(problem.rule, default)(problem.rule, problem.reason)


# -- rules of one message ------------------------------------------------------------------------


class SenderView:
    """What a rule sees of the side that sends a message: the requests it sent and
    received that are still in flight, and the subscriptions. A session has two: its
    own (for ``send``) and its peer's (for ``receive``), over the same pending table."""

    __slots__ = ("_pending", "received", "receiving", "role", "sent", "subscriptions")

    def __init__(
        self, role: Role, pending: PendingTable, subscriptions: Subscriptions, *, receiving: bool
    ) -> None:
        self.role = role
        #: Whether the message is being received (the sender is the peer).
        self.receiving = receiving
        self._pending = pending
        #: The sender's requests in flight, and the requests it received, by id.
        self.sent: dict[RequestId, IncomingRequest] | dict[RequestId, OutgoingRequest] = (
            pending.incoming if receiving else pending.outgoing
        )
        self.received: dict[RequestId, IncomingRequest] | dict[RequestId, OutgoingRequest] = (
            pending.outgoing if receiving else pending.incoming
        )
        self.subscriptions = subscriptions

    def crossed(self, request_id: Any) -> bool:
        """Whether the receiver cancelled request ``request_id``: what the sender says of
        it may have crossed the cancellation (only ever while receiving)."""
        return self.receiving and request_id in self._pending.cancelled_out

    def log_ranks(self) -> list[int]:
        """The log levels (ranks) asked for by the requests the sender received and has
        not answered, and, while receiving, by one the receiver cancelled (a message may
        have crossed the cancellation)."""
        ranks = [r.log_level for r in self.received.values() if r.log_level is not None]
        if self.receiving and self._pending.cancelled_log_rank is not None:
            ranks.append(self._pending.cancelled_log_rank)
        return ranks


#: What a check returns for a message to drop without a word: it crossed the
#: receiver's cancellation of the request it is about.
IGNORED: Final = Problem(Rule.INTERNAL_ERROR, "$", "crossed a cancellation")

#: A check: the message and its sender, the problem or ``None`` (or :data:`IGNORED`).
Check = Callable[[Any, SenderView], Problem | None]


@dataclass(frozen=True, eq=False)
class MessageRule:
    """A rule of the requests or notifications of ``methods``: ``check`` gets the typed
    message and its :class:`SenderView` and returns the :class:`Problem` or ``None``.
    ``senders``: whose messages it judges (both sides' unless given); ``models``: the
    protocol models it holds in (both unless given); ``error``: what ``send`` raises for
    it."""

    rule: Rule
    methods: frozenset[str]
    check: Check
    senders: frozenset[Role] = frozenset(Role)
    models: frozenset[ProtocolModel] = frozenset(ProtocolModel)
    error: type[LocalProtocolError] = LocalProtocolError


#: The message rules, by method.
MESSAGE_RULES: Final[dict[str, tuple[MessageRule, ...]]] = {}


def register(rule: MessageRule) -> None:
    """Add ``rule`` to :data:`MESSAGE_RULES` (sessions built from now on enforce it)."""
    for method in rule.methods:
        MESSAGE_RULES[method] = (*MESSAGE_RULES.get(method, ()), rule)
    rule_table.cache_clear()


def unregister(rule: MessageRule) -> None:
    """Remove ``rule`` from :data:`MESSAGE_RULES`."""
    for method in rule.methods:
        kept = tuple(r for r in MESSAGE_RULES.get(method, ()) if r is not rule)
        if kept:
            MESSAGE_RULES[method] = kept
        else:
            MESSAGE_RULES.pop(method, None)
    rule_table.cache_clear()


def rules_for(method: str, sender: Role, model: ProtocolModel) -> tuple[MessageRule, ...]:
    """The rules of ``method`` for messages of ``sender`` in ``model``."""
    return tuple(
        r for r in MESSAGE_RULES.get(method, ()) if sender in r.senders and model in r.models
    )


@functools.cache
def rule_table(sender: Role, model: ProtocolModel) -> dict[str, tuple[MessageRule, ...]]:
    """The rules of ``sender``'s messages in ``model``, by method (only methods that
    have some); computed once per table (read it, never change it)."""
    table = {method: rules_for(method, sender, model) for method in MESSAGE_RULES}
    return {method: rules for method, rules in table.items() if rules}


def first_problem(
    rules: tuple[MessageRule, ...], message: Any, sender: SenderView
) -> tuple[MessageRule, Problem] | None:
    """The first rule ``message`` from ``sender`` breaks, with its problem."""
    for rule in rules:
        problem = rule.check(message, sender)
        if problem is not None:
            return rule, problem
    return None


def token_problem(token: Any, tokens: Tokens) -> Problem | None:
    """A request's progress token must be a string or an integer, not in use by another
    active request of its direction, and within ``max_progress_tokens``."""
    if token.__class__ is not str and token.__class__ is not int:
        return Problem(
            Rule.INVALID_PARAMS,
            TOKEN_PATH,
            f"a progress token is a string or an integer, not {show(token)}",
        )
    if token in tokens.active:
        return Problem(
            Rule.PROGRESS_TOKEN_IN_USE,
            TOKEN_PATH,
            f"progress token {show(token)} is in use by another active request",
        )
    if len(tokens.active) >= tokens.capacity:
        return Problem(
            Rule.LIMIT_EXCEEDED,
            TOKEN_PATH,
            f"{tokens.capacity} progress tokens are active (requests not finished, or tasks "
            f"not terminal): over the limit max_progress_tokens={tokens.capacity}",
        )
    return None


def log_problem(level: str, rank: int, requested: list[int]) -> Problem | None:
    """2026-07-28: ``notifications/message`` only while a request that set
    ``io.modelcontextprotocol/logLevel`` is in flight, at that level or above
    (``level``, ``rank``: the message's level and its rank; ``requested``: the ranks
    requested)."""
    if not requested:
        return Problem(
            Rule.LOG_LEVEL,
            "$.params.level",
            "no request in flight set io.modelcontextprotocol/logLevel: "
            "notifications/message has nowhere to go",
        )
    if rank < min(requested):
        return Problem(
            Rule.LOG_LEVEL,
            "$.params.level",
            f"level {show(level)} is below every requested log level",
        )
    return None


# -- the rules of the table ----------------------------------------------------------------------

_CANCEL: Final = "notifications/cancelled"


def _cancel_not_initialize(message: Any, sender: SenderView) -> Problem | None:
    """A request can be cancelled by its sender, but never ``initialize``."""
    record = sender.sent.get(message.params.request_id)
    if record is not None and record.method == "initialize":
        return Problem(
            Rule.CANCEL_INITIALIZE,
            "$.params.requestId",
            "the initialize request cannot be cancelled",
        )
    return None


def _cancel_only_listen(message: Any, sender: SenderView) -> Problem | None:
    """2026-07-28: a server cancels nothing but a ``subscriptions/listen`` request it
    serves."""
    request_id = message.params.request_id
    record = sender.received.get(request_id)
    if record is not None and record.method == LISTEN:
        return None
    if record is None and sender.crossed(request_id):
        return None  # the client cancelled the subscription itself meanwhile
    return Problem(
        Rule.CANCEL_NOT_LISTEN,
        "$.params.requestId",
        "in 2026-07-28 a server cancels only a subscriptions/listen request it serves",
    )


def _log_asked_for(message: Any, sender: SenderView) -> Problem | None:
    level = message.params.level
    return log_problem(level, LEVELS[level], sender.log_ranks())


def _on_subscription(message: Any, sender: SenderView) -> Problem | None:
    """2026-07-28: ``notifications/subscriptions/acknowledged`` once, first, on an open
    subscription; a subscription notification within what it agreed to (see
    :meth:`~mcpspec.runtime.stateless.Subscriptions.verify`, which records the
    acknowledged filter)."""
    params = message.params
    problem = sender.subscriptions.verify(message.method, params)
    if problem is not None and sender.crossed(subscription_of(params)):
        return IGNORED
    return problem


_SERVER: Final = frozenset({Role.SERVER})
_STATELESS: Final = frozenset({ProtocolModel.STATELESS})

for _rule in (
    MessageRule(
        Rule.CANCEL_INITIALIZE, frozenset({_CANCEL}), _cancel_not_initialize, error=StateError
    ),
    MessageRule(
        Rule.CANCEL_NOT_LISTEN,
        frozenset({_CANCEL}),
        _cancel_only_listen,
        senders=_SERVER,
        models=_STATELESS,
        error=StateError,
    ),
    MessageRule(
        Rule.LOG_LEVEL,
        frozenset({"notifications/message"}),
        _log_asked_for,
        senders=_SERVER,
        models=_STATELESS,
        error=SubscriptionError,
    ),
    MessageRule(
        Rule.SUBSCRIPTION_UNKNOWN,
        frozenset({ACKNOWLEDGED, *FILTER_FIELDS}),
        _on_subscription,
        senders=_SERVER,
        models=_STATELESS,
        error=SubscriptionError,
    ),
):
    register(_rule)
