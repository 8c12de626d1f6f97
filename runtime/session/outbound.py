"""Sending: a generated message in, the bytes to write out.

:class:`Sender` is the sending part of a session. ``send`` checks a message against
every rule the session keeps before it records anything: the revision and direction of
the method, then the rule table (:mod:`.checks`) in its order, the same rules the
receiving part judges the peer's messages by (the phase's gate, the rules of every
request, the rules of the method, the capability the peer declared, the progress
token), what the protocol model adds (:mod:`.protocol_models`) and, for the messages that
negotiate, the negotiation part. A message that breaks a rule raises a
:class:`~mcpspec.runtime.session.misuse.LocalProtocolError` subclass and leaves no trace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import msgspec
from msgspec import UNSET

from ..envelope import ErrorObject, ErrorResponse, RequestId, ResultResponse
from ..errors import ErrorCode
from .checks import DECLARED, IGNORED, PHASE, SenderView, first_problem, misuse, token_problem
from .inbound import SETTLED_BY_ANSWER, finish_answered
from .misuse import (
    ProgressError,
    RequestIdError,
    RevisionError,
    SessionClosed,
    StateError,
)
from .parts import MessagePath
from .pending import IncomingRequest, OutgoingRequest, UnrecordedErrorResponse
from .progress import TERMINAL_TASK_STATUSES
from .protocol_models import misuse_of_result
from .rules import Rule
from .state import Phase
from .version_negotiation import NEGOTIATING, NEVER_BATCHED

if TYPE_CHECKING:
    from .parts import SessionParts

__all__ = ["Sendable", "Sender", "params_meta", "revision_of"]

#: What ``send`` takes: a generated request or notification, or a response envelope.
Sendable: TypeAlias = "msgspec.Struct | ResultResponse | ErrorResponse"

#: Methods whose results update more than the pending table.
_RESULT_HOOKED: Final = NEGOTIATING | frozenset(SETTLED_BY_ANSWER)


def params_meta(params: Any) -> Any:
    """The ``_meta`` of request params: a Struct's ``meta``, the ``_meta`` member of the
    open params of ``ping``, ``roots/list``, ... up to 2025-06-18 (plain objects), or
    ``None``."""
    meta = getattr(params, "meta", None)
    if meta is None and params.__class__ is dict:
        return params.get("_meta")
    return None if meta is UNSET else meta


def revision_of(cls: type) -> str:
    """``mcpspec.v2025_11_25.X`` -> ``"2025-11-25"``."""
    return cls.__module__.rpartition(".v")[2].replace("_", "-")


def _with_token(message: Any, token: Any) -> Any:
    """``message`` with ``token`` in ``params._meta.progressToken``."""
    params = message.params
    if params is UNSET:
        declared = {f.name: f.type for f in msgspec.structs.fields(type(message))}
        params = msgspec.convert({"_meta": {"progressToken": token}}, declared["params"])
    elif params.__class__ is dict:
        meta = params.get("_meta")
        params = {
            **params,
            "_meta": {**(meta if isinstance(meta, dict) else {}), "progressToken": token},
        }
    elif hasattr(params, "meta"):
        meta = {} if params.meta is UNSET else params.meta
        params = msgspec.structs.replace(params, meta={**meta, "progressToken": token})
    else:
        raise TypeError(
            f"the params of {type(message).__name__} have no _meta to carry a progress token"
        )
    return msgspec.structs.replace(message, params=params)


class Sender(MessagePath):
    """The sending part of a session: ``send`` and what builds on it.

    It works on the session's parts as :class:`~.parts.MessagePath` binds them.
    """

    def __init__(self, parts: SessionParts) -> None:
        super().__init__(parts)
        #: What the rules see of the sender of a sent message: this side.
        self._own = SenderView(
            parts.terms.role,
            parts.pending,
            parts.subscriptions,
            receiving=False,
            life=parts.life,
            progress=parts.progress,
            terms=parts.terms,
        )
        #: What a notification of this side changes once it passed its rules, by method.
        self._recorded: dict[str, Callable[[Any], None]] = {
            "notifications/cancelled": self._send_cancel,
            "notifications/progress": self._record_progress,
            "notifications/tasks/status": self._record_task_status,
            "notifications/initialized": self._record_initialized,
        }

    def send(self, message: Sendable, *, progress_token: int | str | None = None) -> bytes:
        """The bytes of ``message`` (a generated request or notification of the revision
        in use, or a :class:`ResultResponse`/:class:`ErrorResponse`) after checking it
        against every rule the session keeps; ``b""`` when there is nothing to write (an
        answer to a request the peer cancelled, or a 2025-03-26 batch still waiting for
        other answers).

        ``progress_token`` asks the peer for progress on a request: it is put into
        ``params._meta.progressToken`` (building the params when the request has none),
        the same as sending the request with it there. Before negotiation, an
        ``initialize`` or ``server/discover`` of any accepted revision also picks that
        revision.

        Raises a :class:`~mcpspec.runtime.session.misuse.LocalProtocolError` subclass when the
        message breaks a rule; nothing is recorded then.
        """
        if self._life.phase is Phase.CLOSED:
            raise SessionClosed(Rule.SESSION_CLOSED, "the session is closed")
        if isinstance(message, ResultResponse):
            return self._send_result(message)
        if isinstance(message, ErrorResponse):
            return self._send_error(message)
        cls = type(message)
        method = getattr(cls, "method", None)
        if not isinstance(method, str) or not isinstance(message, msgspec.Struct):
            raise TypeError(
                f"send() takes a generated request or notification, a ResultResponse or an "
                f"ErrorResponse; got {cls.__name__}"
            )
        terms = self._terms
        if (
            cls.__module__ != terms.module.__name__
            and cls.__module__ not in terms.extension_modules
        ):
            self._other_revision(cls, method)
        request = hasattr(message, "id")
        if not request and progress_token is not None:
            raise TypeError("progress_token is for requests")
        own = terms.own_requests if request else terms.own_notifications
        if method not in own:
            kind = "request" if request else "notification"
            raise RevisionError(
                Rule.METHOD_NOT_FOUND,
                f"{method!r} is not a {terms.role.value} {kind} in revision {terms.codec.revision}",
            )
        # The rule table, in its order (see checks): the phase's gate, the rules of
        # every request, the rules of the method.
        rules = terms.own_rules.get(method, ())
        rules = (PHASE, *terms.own_request_rules, *rules) if request else (PHASE, *rules)
        broken = first_problem(rules, message, self._own)
        if broken is not None:
            rule, problem = broken
            if problem is IGNORED:
                return b""  # it crossed the peer's cancellation: nothing to send
            raise misuse(problem, rule.error)
        if request:
            return self._send_request(message, method, progress_token)
        return self._send_notification(message, method)

    def _other_revision(self, cls: type, method: str) -> None:
        """A message of another revision's types: before negotiation, an opening request
        of an accepted revision switches to it; else it is refused."""
        revision = revision_of(cls)
        terms = self._terms
        if (
            method in NEGOTIATING
            and self._life.phase in (Phase.IDLE, Phase.PROBING)
            and revision in terms.accepted
            and terms.sends_in(revision, method)
        ):
            self._switch(revision)
        if cls.__module__ != self._terms.module.__name__:
            raise RevisionError(
                Rule.WRONG_REVISION,
                f"{cls.__module__}.{cls.__name__} is not a type of revision "
                f"{self._terms.codec.revision} (use session.types)",
            )

    def send_batch(self, messages: Sequence[Sendable]) -> bytes:
        """The bytes of a JSON-RPC batch of requests and notifications (revision
        2025-03-26 only). If one member is refused, the requests registered before it
        are forgotten and the exception propagates."""
        codec = self._terms.codec
        if not codec.batches:
            raise RevisionError(
                Rule.BATCH_NOT_ALLOWED,
                f"revision {codec.revision} has no JSON-RPC batches",
            )
        if not messages:
            raise RevisionError(Rule.BATCH_NOT_ALLOWED, "a batch cannot be empty")
        parts: list[bytes] = []
        registered: list[RequestId] = []
        try:
            for message in messages:
                if isinstance(message, (ResultResponse, ErrorResponse)):
                    raise TypeError("send_batch() takes requests and notifications")
                method = getattr(type(message), "method", None)
                if method in NEVER_BATCHED:
                    raise StateError(Rule.INITIALIZE_IN_BATCH, f"{method} is never batched")
                part = self.send(message)
                request_id = getattr(message, "id", None)
                if request_id is not None:
                    registered.append(request_id)
                if part:
                    parts.append(part)
        except Exception:
            for request_id in registered:
                record = self._outgoing.pop(request_id, None)
                if record is not None and record.progress_token is not None:
                    self._expected.drop(record.progress_token)
            raise
        return b"[" + b",".join(parts) + b"]"

    def cancel(self, request_id: RequestId, reason: str | None = None) -> bytes:
        """Send ``notifications/cancelled`` for an outstanding request of this side; its
        late response will be ignored."""
        module = self._terms.module
        params = module.CancelledNotificationParams(
            request_id=request_id, reason=UNSET if reason is None else reason
        )
        return self.send(module.CancelledNotification(params=params))

    def internal_error(
        self, request_id: RequestId, message: str = "Internal error", data: Any = UNSET
    ) -> bytes:
        """Answer a request whose handler failed with -32603."""
        error = ErrorObject(code=int(ErrorCode.INTERNAL_ERROR), message=message, data=data)
        return self.send(ErrorResponse(id=request_id, error=error))

    # -- requests ---------------------------------------------------------------------------

    def _send_request(self, message: Any, method: str, token_arg: int | str | None) -> bytes:
        """A request that passed the rules of every request and of its method: the
        capability the peer declared and the progress token judged (the rule table's
        :data:`~.checks.DECLARED` and :func:`~.checks.token_problem`), it is stamped
        and recorded."""
        terms = self._terms
        request_id = message.id
        negotiating = method in NEGOTIATING
        if negotiating:
            self._negotiation.sending(message, method)
        own = self._own
        problem = DECLARED.check(message, own)
        if problem is not None:
            raise misuse(problem, DECLARED.error)
        message, caps_json, log_level = terms.model.stamp_request(
            terms.role, message, terms.codec.revision, terms.own_caps, terms.info_json
        )
        params: Any = getattr(message, "params", None)
        meta = params_meta(params)
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if token_arg is not None and token_arg != token:
            if token is not None:
                raise ProgressError(
                    Rule.PROGRESS_TOKEN_IN_USE,
                    "progress_token differs from params._meta.progressToken",
                )
            message = _with_token(message, token_arg)
            params = message.params
            token = token_arg
        if token is not None:
            problem = token_problem(token, self._expected)
            if problem is not None:
                raise misuse(problem, ProgressError)
        codec = terms.codec
        data = codec.encode(message)
        task = getattr(params, "task", UNSET) is not UNSET and method in codec.task_results
        self._outgoing[request_id] = OutgoingRequest(
            request_id,
            method,
            message,
            task=task,
            progress_token=token,
            log_level=log_level,
            capabilities=caps_json,
            plain=token is None
            and not task
            and method not in _RESULT_HOOKED
            and method not in terms.input_methods,
        )
        if token is not None:
            self._expected.begin(token, request_id)
        self._subscriptions.recorded(request_id, method, params)
        if negotiating:
            self._negotiation.sent(message, method)
        return data

    # -- notifications ------------------------------------------------------------------------

    def _send_notification(self, message: Any, method: str) -> bytes:
        """A notification that passed the rules of its method: what it changes, and its
        bytes."""
        record = self._recorded.get(method)
        if record is not None:
            record(message)
        return self._terms.codec.encode(message)

    def _record_progress(self, message: Any) -> None:
        """Progress the rule table let through: its value is the last one now."""
        params = message.params
        self._reporting.last[params.progress_token] = params.progress

    def _record_task_status(self, message: Any) -> None:
        if message.params.status in TERMINAL_TASK_STATUSES:
            self._progress.task_finished(message.params.task_id)

    def _record_initialized(self, message: Any) -> None:
        self._negotiation.sending(message, "notifications/initialized")

    def _send_cancel(self, message: Any) -> None:
        """This side cancels a request it sent (its late response will be ignored), or,
        in 2026-07-28, a server ends a subscription it serves (the rule table decided it
        may)."""
        request_id = message.params.request_id
        record = self._outgoing.get(request_id)
        if record is not None:
            del self._outgoing[request_id]
            pending = self._pending
            pending.cancelled_out.add(request_id)
            if record.progress_token is not None:
                self._expected.finish(record.progress_token, cancelled=True)
            if record.log_level is not None:
                current = pending.cancelled_log_rank
                if current is None or record.log_level < current:
                    pending.cancelled_log_rank = record.log_level
            self._subscriptions.closed(request_id)
            return
        if request_id in self._incoming and self._subscriptions.closed(request_id):
            self._pending.release(request_id)  # a subscription this side serves
            return
        raise RequestIdError(
            Rule.UNKNOWN_RESPONSE_ID,
            f"no outstanding request of this side has id {request_id!r}",
        )

    # -- answers ----------------------------------------------------------------------------------

    def _incoming_record(self, request_id: Any) -> IncomingRequest | None:
        """The peer's request an answer is for; ``None`` if the peer cancelled it."""
        record = self._incoming.get(request_id)
        if record is None:
            if request_id in self._pending.cancelled_in:
                return None
            raise RequestIdError(
                Rule.UNKNOWN_RESPONSE_ID,
                f"no request of the peer with id {request_id!r} awaits an answer",
            )
        return record

    def _send_result(self, response: ResultResponse) -> bytes:
        record = self._incoming_record(response.id)
        if record is None:
            return b""  # the peer cancelled it: send nothing
        if record.rejected:
            raise RequestIdError(
                Rule.INVALID_REQUEST,
                f"request {response.id!r} broke a rule: answer it with the violation's "
                "error response",
            )
        terms = self._terms
        result = response.result
        codec, model = terms.codec, terms.model
        if record.revision is None:
            classes = terms.result_classes_of(record.method, record.task)
        else:  # read before negotiation picked the revision in use: answered in its own
            codec, model, classes, result = terms.answer_terms(
                record.revision, record.method, record.task, result
            )
            response = ResultResponse(id=response.id, result=result)
        if not isinstance(result, classes):
            raise RevisionError(
                Rule.INVALID_RESULT,
                f"{type(result).__name__} is not a result of {record.method} in revision "
                f"{codec.revision}",
            )
        if record.method in NEGOTIATING:
            self._negotiation.answering(record, result)
        problem = model.result_problem(result, record.capabilities, terms.client_defined)
        if problem is not None:
            raise misuse_of_result(problem)
        stamped = model.stamp_result(terms.role, result, terms.info_json)
        if stamped is not result:
            response = ResultResponse(id=response.id, result=stamped)
        data = codec.encode(response)
        self._pending.release(response.id)
        finish_answered(self._progress, self._subscriptions, record, result)
        return self._pending.answered(record, response, data, codec.encode)

    def _send_error(self, response: ErrorResponse) -> bytes:
        encode = self._terms.codec.encode
        if response.__class__ is UnrecordedErrorResponse:
            return encode(response)  # the session kept no record to settle
        request_id = response.id
        if request_id is None or request_id is UNSET:
            pending = self._pending
            batched = pending.null_answered(response, encode)
            if batched is not None:
                return batched
            if not pending.null_owed:
                raise RequestIdError(
                    Rule.UNKNOWN_RESPONSE_ID,
                    "an error response with id null answers only an unreadable request "
                    "(send a violation's response)",
                )
            pending.null_owed -= 1
            return encode(response)
        record = self._incoming_record(request_id)
        if record is None:
            return b""
        if record.method in NEGOTIATING:
            self._negotiation.refusing(record)
        data = encode(response)
        self._pending.release(request_id)
        finish_answered(self._progress, self._subscriptions, record, None)
        return self._pending.answered(record, response, data, encode)
