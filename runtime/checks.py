"""Protocol rules that both directions enforce, each written once.

A check is a pure function that returns the :class:`Problem` (the rule broken, where,
why) or ``None``. The sessions use the same check on both paths: on ``send`` a problem
raises the local-misuse error of its rule (:func:`misuse`), on ``receive`` it becomes a
:class:`~mcpspec.runtime.events.ProtocolViolation`. The checks of the stateless
revision's ``_meta`` and subscriptions work the same way (:mod:`.stateless`).

Rules of a single message (what a request or notification of some method may hold) are
:class:`MessageRule` values in :data:`MESSAGE_RULES`, by method: a session applies the
rules of a method on ``send`` (raising) and on ``receive`` (reporting, and answering a
request with the rule's error), in the protocol models and for the senders each rule
names. :func:`register` adds one; a session reads the table when it is built and when
its revision changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from .contract import ProtocolModel
from .errors import show
from .misuse import (
    LimitError,
    LocalProtocolError,
    ProgressError,
    StateError,
    SubscriptionError,
)
from .progress import Tokens
from .rules import Problem, Rule
from .state import Role
from .stateless import LISTEN

__all__ = [
    "MESSAGE_RULES",
    "MessageRule",
    "Problem",
    "cancel_problem",
    "first_problem",
    "log_problem",
    "misuse",
    "register",
    "rules_for",
    "token_problem",
    "unregister",
]

#: Where a request's progress token is.
TOKEN_PATH: Final = "$.params._meta.progressToken"


#: The local-misuse error each rule raises on ``send`` (others: the caller's default).
_MISUSE: Final[dict[Rule, type[LocalProtocolError]]] = {
    Rule.PROGRESS_TOKEN_IN_USE: ProgressError,
    Rule.LIMIT_EXCEEDED: LimitError,
    Rule.CANCEL_INITIALIZE: StateError,
    Rule.CANCEL_NOT_LISTEN: StateError,
    Rule.LOG_LEVEL: SubscriptionError,
}


def misuse(
    problem: Problem, default: type[LocalProtocolError] = LocalProtocolError
) -> LocalProtocolError:
    """The exception ``send`` raises for ``problem`` (``default`` for a rule that has no
    error class of its own)."""
    return _MISUSE.get(problem.rule, default)(problem.rule, problem.reason)


# -- rules of one message ------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class MessageRule:
    """A rule of the requests or notifications of ``methods``: ``check`` gets the typed
    message and returns the :class:`Problem` or ``None``. ``senders``: whose messages it
    judges (both sides' unless given); ``models``: the protocol models it holds in (both
    unless given); ``error``: what ``send`` raises for it."""

    rule: Rule
    methods: frozenset[str]
    check: Callable[[Any], Problem | None]
    senders: frozenset[Role] = frozenset(Role)
    models: frozenset[ProtocolModel] = frozenset(ProtocolModel)
    error: type[LocalProtocolError] = LocalProtocolError


#: The message rules, by method.
MESSAGE_RULES: Final[dict[str, tuple[MessageRule, ...]]] = {}


def register(rule: MessageRule) -> None:
    """Add ``rule`` to :data:`MESSAGE_RULES` (sessions built from now on enforce it)."""
    for method in rule.methods:
        MESSAGE_RULES[method] = (*MESSAGE_RULES.get(method, ()), rule)


def unregister(rule: MessageRule) -> None:
    """Remove ``rule`` from :data:`MESSAGE_RULES`."""
    for method in rule.methods:
        kept = tuple(r for r in MESSAGE_RULES.get(method, ()) if r is not rule)
        if kept:
            MESSAGE_RULES[method] = kept
        else:
            MESSAGE_RULES.pop(method, None)


def rules_for(method: str, sender: Role, model: ProtocolModel) -> tuple[MessageRule, ...]:
    """The rules of ``method`` for messages of ``sender`` in ``model``."""
    return tuple(
        r for r in MESSAGE_RULES.get(method, ()) if sender in r.senders and model in r.models
    )


def first_problem(
    rules: tuple[MessageRule, ...], message: Any
) -> tuple[MessageRule, Problem] | None:
    """The first rule ``message`` breaks, with its problem."""
    for rule in rules:
        problem = rule.check(message)
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


def cancel_problem(method: str | None, *, stateless: bool, by_server: bool) -> Problem | None:
    """What a ``notifications/cancelled`` may name: never ``initialize``; in 2026-07-28 a
    server cancels nothing but a ``subscriptions/listen`` request (``method``: that of
    the request named, ``None`` when no outstanding request has the id)."""
    if stateless and by_server:
        if method != LISTEN:
            return Problem(
                Rule.CANCEL_NOT_LISTEN,
                "$.params.requestId",
                "in 2026-07-28 a server cancels only a subscriptions/listen request it serves",
            )
        return None
    if method == "initialize":
        return Problem(
            Rule.CANCEL_INITIALIZE,
            "$.params.requestId",
            "the initialize request cannot be cancelled",
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
