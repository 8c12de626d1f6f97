"""Protocol rules that both directions enforce, each written once.

A check is a pure function that returns the :class:`Problem` (the rule broken, where,
why) or ``None``. The sessions use the same check on both paths: on ``send`` a problem
raises the local-misuse error of its rule (:func:`misuse`), on ``receive`` it becomes a
:class:`~mcpspec.runtime.events.ProtocolViolation`. The checks of the stateless
revision's ``_meta`` and subscriptions work the same way (:mod:`.stateless`).
"""

from __future__ import annotations

from typing import Any, Final

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
from .stateless import LISTEN

__all__ = [
    "Problem",
    "cancel_problem",
    "log_problem",
    "misuse",
    "token_problem",
]

#: Where a request's progress token is.
TOKEN_PATH: Final = "$.params._meta.progressToken"


#: The local-misuse error each rule raises on ``send`` (others: LocalProtocolError).
_MISUSE: Final[dict[Rule, type[LocalProtocolError]]] = {
    Rule.INVALID_PARAMS: ProgressError,
    Rule.PROGRESS_TOKEN_IN_USE: ProgressError,
    Rule.LIMIT_EXCEEDED: LimitError,
    Rule.CANCEL_INITIALIZE: StateError,
    Rule.CANCEL_NOT_LISTEN: StateError,
    Rule.LOG_LEVEL: SubscriptionError,
}


def misuse(problem: Problem) -> LocalProtocolError:
    """The exception ``send`` raises for ``problem``."""
    return _MISUSE.get(problem.rule, LocalProtocolError)(problem.rule, problem.reason)


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
