"""The rule table: every protocol rule a message is judged by, each written once.

Theory of operation
===================

In the manner of h11, a session has one path per message, and the rules on it are
data. A rule is a :class:`MessageRule`: the :class:`~.rules.Rule` it stands for, the
methods it judges, and a *check*, a function of the typed message and its sender's side
of the connection (:class:`SenderView`) that returns the :class:`Problem` (the rule
broken, where, why) or ``None``. On ``send`` the sender is this side, on ``receive``
the peer, so one check reads the same whichever way the message goes. A problem found
on ``send`` raises the rule's local-misuse error (:func:`misuse`; nothing is recorded),
on ``receive`` it becomes a :class:`~mcpspec.runtime.session.events.ProtocolViolation`, and a
request is answered with the rule's error (unless the rule says it is never answered,
as a duplicate id is not: the answer would read as the first request's).

A message goes through, in this order, and stops at the first problem:

1. while the lifecycle gates what may flow (before the session is ready, on every
   send; on receive only then): :data:`PHASE`, the gate of the phase (:mod:`.state`);
2. a request: :data:`REQUEST_RULES`, the rules of every request (:data:`NEW_ID`: its
   id is not that of another request of its sender in flight);
3. the rules of its method, :data:`MESSAGE_RULES` (the lifecycle moves of
   ``initialize`` and ``notifications/initialized``, the monotonic progress of
   ``notifications/progress``, cancellation, 2026-07-28 logging and subscriptions);
4. a request, once its model's ``_meta`` is read (:mod:`.stateless`): :data:`DECLARED`,
   the capability its receiver declared (:mod:`.capabilities`), then, once its
   progress token is read, :func:`token_problem` (free, and within the limit).

Then, and only then, the session records the message (the pending table, the progress
tokens, the subscriptions) and makes its event or its bytes. Which rules a method has,
for which sender and protocol model, is read from the table when a session is built
and when its revision changes (:func:`rule_table`, :func:`request_rules`), so a message
does only the dict lookups of its class. :func:`register` adds a rule, of one method or
of every request; sessions built from then on enforce it both ways.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..declared import ProtocolModel
from ..envelope import RequestId
from ..errors import show
from .capabilities import required_capability
from .misuse import (
    CapabilityError,
    LimitError,
    LocalProtocolError,
    ProgressError,
    RequestIdError,
    StateError,
    SubscriptionError,
)
from .pending import IncomingRequest, OutgoingRequest, PendingTable
from .progress import Tokens
from .rules import Problem, Rule
from .state import Lifecycle, Phase, Role, Trigger
from .stateless import ACKNOWLEDGED, FILTER_FIELDS, LEVELS, LISTEN, Subscriptions, subscription_of

if TYPE_CHECKING:
    from .negotiated_terms import NegotiatedTerms
    from .progress import ProgressTracker

__all__ = [
    "DECLARED",
    "IGNORED",
    "MESSAGE_RULES",
    "NEW_ID",
    "PHASE",
    "REQUEST_RULES",
    "MessageRule",
    "Problem",
    "SenderView",
    "first_problem",
    "log_problem",
    "misuse",
    "register",
    "request_rules",
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


# -- what a check sees -----------------------------------------------------------------------------


class SenderView:
    """What a rule sees of the side that sends a message: the requests it sent and
    received that are still in flight, their progress tokens, the subscriptions, the
    lifecycle, and whether the message's receiver declared a capability. A session has
    two: its own (for ``send``) and its peer's (for ``receive``), over the same parts."""

    __slots__ = (
        "_pending",
        "_terms",
        "life",
        "received",
        "receiving",
        "reported",
        "role",
        "sent",
        "subscriptions",
        "tokens",
    )

    def __init__(
        self,
        role: Role,
        pending: PendingTable,
        subscriptions: Subscriptions,
        *,
        receiving: bool,
        life: Lifecycle | None = None,
        progress: ProgressTracker | None = None,
        terms: NegotiatedTerms | None = None,
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
        #: The lifecycle of this side (the sender's when sending, the receiver's else).
        self.life = life if life is not None else Lifecycle(role, Phase.READY)
        #: The progress tokens of the sender's requests, and of the requests it received
        #: (on which it reports progress).
        self.tokens: Tokens | None = None
        self.reported: Tokens | None = None
        if progress is not None:
            self.tokens = progress.reporting if receiving else progress.expected
            self.reported = progress.expected if receiving else progress.reporting
        self._terms = terms

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

    def receiver_lacks(self, request: Any) -> tuple[str, ...] | None:
        """The capability ``request`` needs that its receiver did not declare."""
        terms = self._terms
        if terms is None:
            return None
        if self.receiving:  # the receiver is this side
            return terms.own_gate.missing(request)
        path = required_capability(request, terms.peer_table, terms.peer_defined)
        return path if path is not None and terms.peer_lacks(path) else None


#: What a check returns for a message to drop without a word: it crossed the
#: receiver's cancellation of the request it is about.
IGNORED: Final = Problem(Rule.INTERNAL_ERROR, "$", "crossed a cancellation")

#: A check: the message and its sender, the problem or ``None`` (or :data:`IGNORED`).
Check = Callable[[Any, SenderView], Problem | None]


@dataclass(frozen=True, eq=False, slots=True)
class MessageRule:
    """A rule of the requests or notifications of ``methods`` (of every request when
    ``None``): ``check`` gets the typed message and its :class:`SenderView` and returns
    the :class:`Problem` or ``None``. ``senders``: whose messages it judges (both sides'
    unless given); ``models``: the protocol models it holds in (both unless given);
    ``error``: what ``send`` raises for it; ``answered``: whether a request that breaks
    it is answered with the rule's error."""

    rule: Rule
    methods: frozenset[str] | None
    check: Check
    senders: frozenset[Role] = frozenset(Role)
    models: frozenset[ProtocolModel] = frozenset(ProtocolModel)
    error: type[LocalProtocolError] = LocalProtocolError
    answered: bool = True


#: The rules of single methods, by method.
MESSAGE_RULES: Final[dict[str, tuple[MessageRule, ...]]] = {}
#: The rules of every request, judged first, in this order.
REQUEST_RULES: Final[list[MessageRule]] = []


def register(rule: MessageRule) -> None:
    """Add ``rule`` to the table (sessions built from now on enforce it)."""
    if rule.methods is None:
        REQUEST_RULES.append(rule)
    else:
        for method in rule.methods:
            MESSAGE_RULES[method] = (*MESSAGE_RULES.get(method, ()), rule)
    rule_table.cache_clear()
    request_rules.cache_clear()


def unregister(rule: MessageRule) -> None:
    """Remove ``rule`` from the table."""
    if rule.methods is None:
        REQUEST_RULES.remove(rule)
    else:
        for method in rule.methods:
            kept = tuple(r for r in MESSAGE_RULES.get(method, ()) if r is not rule)
            if kept:
                MESSAGE_RULES[method] = kept
            else:
                MESSAGE_RULES.pop(method, None)
    rule_table.cache_clear()
    request_rules.cache_clear()


def _holds(rule: MessageRule, sender: Role, model: ProtocolModel) -> bool:
    return sender in rule.senders and model in rule.models


def rules_for(method: str, sender: Role, model: ProtocolModel) -> tuple[MessageRule, ...]:
    """The rules of ``method`` for messages of ``sender`` in ``model``."""
    return tuple(r for r in MESSAGE_RULES.get(method, ()) if _holds(r, sender, model))


@functools.cache
def rule_table(sender: Role, model: ProtocolModel) -> dict[str, tuple[MessageRule, ...]]:
    """The rules of ``sender``'s messages in ``model``, by method (only methods that
    have some); computed once per table (read it, never change it)."""
    table = {method: rules_for(method, sender, model) for method in MESSAGE_RULES}
    return {method: rules for method, rules in table.items() if rules}


@functools.cache
def request_rules(sender: Role, model: ProtocolModel) -> tuple[MessageRule, ...]:
    """The rules of every request of ``sender`` in ``model``, in order."""
    return tuple(r for r in REQUEST_RULES if _holds(r, sender, model))


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


def phase_problem(method: str, phase: Phase) -> Problem:
    """The problem of a message of ``method`` the lifecycle does not allow in
    ``phase``: a second ``initialize`` or ``notifications/initialized`` comes too late,
    anything else too early."""
    if method == "initialize" or (method == "notifications/initialized" and phase is Phase.READY):
        return Problem(Rule.ALREADY_INITIALIZED, "$.method", f"{method} comes once")
    return Problem(
        Rule.NOT_INITIALIZED, "$.method", f"{show(method)} is not allowed in phase {phase.value}"
    )


# -- the rules of the table ----------------------------------------------------------------------


def _allowed_now(message: Any, sender: SenderView) -> Problem | None:
    """What may flow in the lifecycle's phase: the gate of the direction (:data:`~.state.
    GATES`)."""
    life = sender.life
    gate = life.receive_gate if sender.receiving else life.send_gate
    allowed = gate.requests if hasattr(message, "id") else gate.notifications
    method = message.method
    if allowed is None or method in allowed:
        return None
    return phase_problem(method, life.phase)


def _new_id(message: Any, sender: SenderView) -> Problem | None:
    """A request's id is not that of another request of its sender still in flight."""
    if message.id in sender.sent:
        return Problem(
            Rule.DUPLICATE_REQUEST_ID,
            "$.id",
            f"request id {show(message.id)} is already outstanding",
        )
    return None


#: The lifecycle move a message of a method makes, by method and direction.
_MOVES: Final[dict[tuple[str, bool], Trigger]] = {
    ("initialize", True): Trigger.RECEIVE_INITIALIZE,
    ("initialize", False): Trigger.SEND_INITIALIZE,
    ("notifications/initialized", True): Trigger.RECEIVE_INITIALIZED,
    ("notifications/initialized", False): Trigger.SEND_INITIALIZED,
}


def _legal_move(message: Any, sender: SenderView) -> Problem | None:
    """A message that moves the lifecycle comes when the move is legal
    (:data:`~.state.TRANSITIONS`): ``initialize`` and ``notifications/initialized``
    once each, in order."""
    life = sender.life
    if life.can(_MOVES[(message.method, sender.receiving)]):
        return None
    return phase_problem(message.method, life.phase)


def _declared(message: Any, sender: SenderView) -> Problem | None:
    """A request needs the capability its receiver declared."""
    path = sender.receiver_lacks(message)
    if path is None:
        return None
    who = "this side" if sender.receiving else "the peer"
    return Problem(
        Rule.CAPABILITY_NOT_DECLARED,
        "$.method",
        f"{message.method} needs the {'.'.join(path)} capability, which {who} did not declare",
    )


def _progress_in_order(message: Any, sender: SenderView) -> Problem | None:
    """Progress refers to an active token of a request the sender received, and
    increases; nothing after the request completed (progress for a request the
    receiver cancelled is dropped: it may have crossed the cancellation)."""
    params = message.params
    token = params.progress_token
    tokens = sender.reported
    assert tokens is not None
    if token in tokens.active:
        last = tokens.last.get(token)
        if last is None or params.progress > last:
            return None
        return Problem(
            Rule.PROGRESS_NOT_INCREASING,
            "$.params.progress",
            f"progress {show(params.progress)} does not increase",
        )
    if token in tokens.cancelled.items:
        return IGNORED
    if token in tokens.done.items:
        return Problem(
            Rule.PROGRESS_AFTER_COMPLETION,
            "$.params.progressToken",
            f"progress for token {show(token)} after its request completed",
        )
    return Problem(
        Rule.PROGRESS_UNKNOWN_TOKEN,
        "$.params.progressToken",
        f"no active request has progress token {show(token)}",
    )


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
    :meth:`~mcpspec.runtime.session.stateless.Subscriptions.verify`, which records the
    acknowledged filter)."""
    params = message.params
    problem = sender.subscriptions.verify(message.method, params)
    if problem is not None and sender.crossed(subscription_of(params)):
        return IGNORED
    return problem


_SERVER: Final = frozenset({Role.SERVER})
_STATELESS: Final = frozenset({ProtocolModel.STATELESS})

#: The gate of the lifecycle's phase: judged for every message while it gates.
PHASE: Final = MessageRule(Rule.NOT_INITIALIZED, None, _allowed_now, error=StateError)
#: A request's id is new among its sender's requests in flight (never answered).
NEW_ID: Final = MessageRule(
    Rule.DUPLICATE_REQUEST_ID, None, _new_id, error=RequestIdError, answered=False
)
#: A request needs the capability its receiver declared.
DECLARED: Final = MessageRule(Rule.CAPABILITY_NOT_DECLARED, None, _declared, error=CapabilityError)
register(NEW_ID)
for _rule in (
    MessageRule(
        Rule.ALREADY_INITIALIZED,
        frozenset(method for method, _ in _MOVES),
        _legal_move,
        error=StateError,
    ),
    MessageRule(
        Rule.PROGRESS_NOT_INCREASING,
        frozenset({"notifications/progress"}),
        _progress_in_order,
        error=ProgressError,
    ),
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
