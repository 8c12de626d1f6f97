"""How a broken rule becomes a :class:`~mcpspec.runtime.session.events.ProtocolViolation`.

:class:`Violations` builds the event of every rule a received message can break. When
the message is a request (or unreadable), the event carries the error response this
side now owes, recorded in the pending table so that ``send(event.response)`` answers
it like any other request.
"""

from __future__ import annotations

from typing import Any, Final

from msgspec import UNSET

from ..envelope import ErrorObject, ErrorResponse, RequestId
from ..errors import ERROR_MESSAGES, ErrorCode, InvalidMessage, clip, show
from .events import ProtocolViolation
from .limits import Limits
from .negotiated_terms import NegotiatedTerms
from .pending import IncomingRequest, OutgoingRequest, PendingTable, UnrecordedErrorResponse
from .rules import RULES, Problem, Rule
from .state import Lifecycle

__all__ = ["Violations", "error_object"]

_CODE_RULES: Final = {
    ErrorCode.PARSE_ERROR: Rule.PARSE_ERROR,
    ErrorCode.INVALID_REQUEST: Rule.INVALID_REQUEST,
    ErrorCode.METHOD_NOT_FOUND: Rule.METHOD_NOT_FOUND,
    ErrorCode.INVALID_PARAMS: Rule.INVALID_PARAMS,
}


def error_object(code: int, data: Any = UNSET, message: str = "Error") -> ErrorObject:
    """The error of a JSON-RPC error response with the standard message for ``code``
    (``message`` when it has none)."""
    return ErrorObject(code=int(code), message=ERROR_MESSAGES.get(code, message), data=data)


class Violations:
    """The violation events of one session (see the module docstring)."""

    def __init__(
        self, terms: NegotiatedTerms, pending: PendingTable, life: Lifecycle, limits: Limits
    ):
        self._terms = terms
        self._pending = pending
        self._incoming = pending.incoming
        self._life = life
        self._max_bytes = limits.max_message_bytes
        self._max_in_flight = limits.max_requests_in_flight
        self._max_bytes_in_flight = limits.request_bytes_in_flight

    def violation(
        self,
        rule: Rule,
        reason: str,
        *,
        path: str = "$",
        request_id: RequestId | None = None,
        method: str | None = None,
        answer: bool = False,
        code: int | None = None,
        data: Any = None,
        ends_request: bool = False,
    ) -> ProtocolViolation:
        """A violation event; with ``answer``, also the error response, which this side
        now owes (``send(event.response)``); with ``ends_request``, the answer to this
        side's request ``request_id``, which is over. ``reason`` and ``path`` are cut to
        a few hundred characters: they may hold what the peer sent."""
        reason = clip(reason)
        path = clip(path)
        summary = RULES[rule]
        if code is None:
            code = summary.code
        if data is None:
            data = {"rule": rule.value, "path": path, "reason": reason}
        error = error_object(code, data, summary.summary)
        return ProtocolViolation(
            rule=rule,
            error=error,
            response=self._owe(request_id, method, error) if answer else None,
            request_id=request_id,
            method=method,
            path=path,
            reason=reason,
            ends_request=ends_request,
        )

    def reported(self, problem: Problem, *, method: str | None = None) -> ProtocolViolation:
        """The violation of ``problem`` in a notification or a response (never answered)."""
        return self.violation(problem.rule, problem.reason, path=problem.path, method=method)

    def refuse(
        self, message: Any, rule: Rule, reason: str, path: str, data: Any = None
    ) -> ProtocolViolation:
        """The violation of a request that breaks ``rule``, with the error response."""
        return self.violation(
            rule,
            reason,
            path=path,
            request_id=message.id,
            method=message.method,
            answer=True,
            data=data,
        )

    def refuse_problem(self, message: Any, problem: Problem) -> ProtocolViolation:
        """The violation of a request that breaks ``problem``, with the error response."""
        return self.refuse(message, problem.rule, problem.reason, problem.path)

    def _owe(
        self, request_id: RequestId | None, method: str | None, error: ErrorObject
    ) -> ErrorResponse | None:
        """Record that this side owes an error response to a refused request (or to an
        unreadable message, id null); the response, or ``None`` when the id is already
        outstanding (an answer would read as the first request's).

        Beyond ``max_requests_in_flight`` owed answers nothing is recorded: the response
        is an :class:`UnrecordedErrorResponse` (``send`` writes it all the same), or, in
        a batch, goes straight into the batch's answer.
        """
        pending = self._pending
        batch = pending.batch
        if request_id is not None and request_id in self._incoming:
            return None
        if pending.owed() >= self._max_in_flight:
            if batch is not None:
                batch.responses.append(ErrorResponse(id=request_id, error=error))
                return None
            return UnrecordedErrorResponse(id=request_id, error=error)
        if request_id is None:
            if batch is not None:
                batch.null_owed += 1
            else:
                pending.null_owed += 1
            return ErrorResponse(id=None, error=error)
        pending.take_in(IncomingRequest(request_id, method or "", batch=batch, rejected=True))
        if batch is not None:
            batch.waiting.add(request_id)
        return ErrorResponse(id=request_id, error=error)

    # -- the violations of received messages ------------------------------------------------

    def over_limit(self, message: Any) -> ProtocolViolation:
        """The violation of a request beyond ``max_requests_in_flight`` or
        ``max_request_bytes_in_flight``: answered at once, nothing of it kept."""
        pending = self._pending
        if len(pending.incoming) >= self._max_in_flight:
            reason = (
                f"{self._max_in_flight} requests are unanswered: over the limit "
                f"max_requests_in_flight={self._max_in_flight}"
            )
        else:
            reason = (
                f"{pending.incoming_bytes} bytes of requests are unanswered: "
                f"{pending.arriving_size} more are over the limit "
                f"max_request_bytes_in_flight={self._max_bytes_in_flight}"
            )
        return self.refuse(message, Rule.LIMIT_EXCEEDED, reason, "$")

    def oversized(self, size: int) -> ProtocolViolation:
        """The violation of a message over ``max_message_bytes``, refused unread."""
        return self.violation(
            Rule.LIMIT_EXCEEDED,
            f"a message of {size} bytes is over the limit max_message_bytes={self._max_bytes}",
            answer=True,
        )

    def internal_failure(
        self, exc: Exception, request_id: RequestId | None, method: str | None, answer: bool
    ) -> ProtocolViolation:
        """The last line of defence: the session failed on a message (a bug, never the
        peer's fault). Reported as -32603; with ``answer`` (a request, or an unreadable
        message), answered with it."""
        reason = f"the session failed on this message: {type(exc).__name__}: {exc}"
        try:
            return self.violation(
                Rule.INTERNAL_ERROR,
                reason,
                request_id=request_id,
                method=method,
                answer=answer,
            )
        except Exception:  # the pending table itself failed: report, answer nothing
            return ProtocolViolation(
                rule=Rule.INTERNAL_ERROR,
                error=error_object(ErrorCode.INTERNAL_ERROR),
                request_id=request_id,
                method=method,
                reason=clip(reason),
            )

    def invalid(
        self,
        exc: InvalidMessage,
        data: bytes,
        index: int | None = None,
        answers: OutgoingRequest | None = None,
    ) -> ProtocolViolation:
        """The violation for what the codec refused (``index``: of a batch member;
        ``answers``: the request of this side it answers all the same, which it names)."""
        if exc.limit is not None:
            rule = Rule.LIMIT_EXCEEDED
        else:
            rule = _CODE_RULES.get(exc.code, Rule.INVALID_REQUEST)
            if (
                rule is Rule.INVALID_REQUEST
                and index is None
                and exc.path == "$"
                and bytes(data[:256]).lstrip()[:1] == b"["
            ):
                rule = Rule.BATCH_NOT_ALLOWED  # a top-level array the revision refuses
        answer = exc.answerable
        request_id = exc.id if answer else None
        method = exc.method
        if request_id is not None and request_id in self._incoming:
            answer = False
        if answers is not None:  # an answer itself, never answered
            request_id, method, answer = answers.id, answers.method, False
        return self.violation(
            rule,
            exc.reason,
            path=exc.path,
            request_id=request_id,
            method=method,
            answer=answer,
            code=exc.code,
            data=exc.data | {"rule": rule.value},
            ends_request=answers is not None,
        )

    def wrong_direction(self, message: Any) -> ProtocolViolation:
        """The violation of a message only the other side sends (or of no revision)."""
        method = getattr(message, "method", None)
        request_id = getattr(message, "id", None)
        kind = "request" if request_id is not None else "notification"
        peer = self._terms.peer_role.value
        return self.violation(
            Rule.METHOD_NOT_FOUND,
            f"{show(method)} is not a {peer} {kind} in revision {self._terms.codec.revision}",
            path="$.method",
            request_id=request_id,
            method=method,
            answer=request_id is not None,
        )

    def of_result(
        self, record: OutgoingRequest, rule: Rule, reason: str, path: str
    ) -> ProtocolViolation:
        """The violation of a result for ``record``, which it ends (never answered)."""
        return self.violation(
            rule, reason, path=path, request_id=record.id, method=record.method, ends_request=True
        )

    def invalid_result(self, record: OutgoingRequest, exc: InvalidMessage) -> ProtocolViolation:
        """The violation of a result for ``record`` that is not of its type."""
        return self.of_result(record, Rule.INVALID_RESULT, exc.reason, exc.path)

    def stray(self, request_id: RequestId) -> ProtocolViolation:
        """The violation of a response to no outstanding request."""
        return self.violation(
            Rule.UNKNOWN_RESPONSE_ID,
            f"no outstanding request has id {show(request_id)}",
            path="$.id",
            request_id=request_id,
        )
