"""What both sessions share: the state of one connection, the revision in use, and how
a broken rule becomes a :class:`~mcpspec.runtime.events.ProtocolViolation`.

:class:`SessionCore` holds the lifecycle, the pending table, progress tokens and
subscriptions, the tables of the revision in use and the public read-only properties.
:class:`~mcpspec.runtime.inbound.Inbound` (``receive``) and
:class:`~mcpspec.runtime.outbound.Outbound` (``send``) build on it; the server and client
sessions combine both (the map is in :mod:`mcpspec.runtime.session`).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
from collections.abc import Iterable
from types import ModuleType
from typing import Any, Final, Literal, NamedTuple, TypeAlias, get_args, get_origin

import msgspec
from msgspec import UNSET

from mcpspec import module_name

from .capabilities import (
    CLIENT_PROVIDED,
    SERVER_PROVIDED,
    CapabilityGate,
    Path,
    as_json,
    defined_capabilities,
)
from .checks import MESSAGE_RULES, MessageRule, rules_for
from .codec import DECODE_FAILURES, MAX_BATCH_MEMBERS, Codec, envelope_decoder
from .contract import RESULT_INPUT_REQUIRED, ProtocolModel
from .envelope import ErrorObject, ErrorResponse, RequestId, ResultResponse
from .errors import ERROR_MESSAGES, ErrorCode, InvalidMessage, clip, show
from .events import ProtocolViolation
from .limits import DEFAULT_LIMITS, Limits
from .negotiation import accepted_revisions, is_stateless
from .pending import (
    Batch,
    IncomingRequest,
    OutgoingRequest,
    PendingTable,
    UnrecordedErrorResponse,
)
from .progress import TERMINAL_TASK_STATUSES, ProgressTracker, Tokens
from .rules import RULES, Problem, Rule
from .state import Lifecycle, Phase, Role, Trigger
from .stateless import LISTEN, Subscriptions

__all__ = [
    "Model",
    "Sendable",
    "SessionCore",
    "error_object",
    "is_id",
    "params_meta",
    "revision_of",
    "what_it_is",
]

#: What ``send`` takes: a generated request or notification, or a response envelope.
Sendable: TypeAlias = "msgspec.Struct | ResultResponse | ErrorResponse"
Model = Literal["handshake", "stateless"]

_CODE_RULES: Final = {
    ErrorCode.PARSE_ERROR: Rule.PARSE_ERROR,
    ErrorCode.INVALID_REQUEST: Rule.INVALID_REQUEST,
    ErrorCode.METHOD_NOT_FOUND: Rule.METHOD_NOT_FOUND,
    ErrorCode.INVALID_PARAMS: Rule.INVALID_PARAMS,
}
#: Requests whose result reports a task's status.
_TASK_STATUS: Final = frozenset({"tasks/get", "tasks/cancel"})


@functools.cache
def _default_info() -> dict[str, str]:
    """The identity a session uses when given none: this package and its version."""
    try:
        version = importlib.metadata.version("mcpspec")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source tree
        version = "0"
    return {"name": "mcpspec", "version": version}


def error_object(code: int, data: Any = UNSET, message: str = "Error") -> ErrorObject:
    """The error of a JSON-RPC error response with the standard message for ``code``
    (``message`` when it has none)."""
    return ErrorObject(code=int(code), message=ERROR_MESSAGES.get(code, message), data=data)


def is_id(value: Any) -> bool:
    """Whether ``value`` is a JSON-RPC request id: a string or an integer."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)


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


def result_classes(result_type: Any) -> tuple[type, ...]:
    """The classes a value of ``result_type`` (a Struct, a Union, ``dict[str, Any]``) is
    an instance of."""
    origin = get_origin(result_type)
    if origin is None:
        return (result_type,) if isinstance(result_type, type) else (object,)
    if origin is dict:
        return (dict,)
    return tuple(c for arg in get_args(result_type) for c in result_classes(arg))


def what_it_is(data: bytes) -> tuple[bool, RequestId | None, str | None]:
    """Whether a message is answered (a request, or something unreadable), with the id
    to answer with and its method, as far as they can be read."""
    try:
        envelope = envelope_decoder().decode(data)
    except DECODE_FAILURES:
        return True, None, None
    method = envelope.method if isinstance(envelope.method, str) else None
    if envelope.method is UNSET:
        return envelope.result is UNSET and envelope.error is UNSET, None, None
    if envelope.id is UNSET:
        return False, None, method
    return True, envelope.id if is_id(envelope.id) else None, method


def _rule_table(sender: Role, model: ProtocolModel) -> dict[str, tuple[MessageRule, ...]]:
    """The message rules of ``sender``'s messages in ``model``, by method (only methods
    that have some)."""
    table = {method: rules_for(method, sender, model) for method in MESSAGE_RULES}
    return {method: rules for method, rules in table.items() if rules}


class _Revision(NamedTuple):
    """What a session needs to know about one revision, computed once."""

    module: ModuleType
    codec: Codec
    client_defined: frozenset[str]
    server_defined: frozenset[str]
    #: Methods a 2026-07-28 server may answer with an InputRequiredResult.
    input_methods: frozenset[str]


@functools.cache
def _revision(revision: str) -> _Revision:
    module = importlib.import_module(module_name(revision))
    codec: Codec = module.codec
    input_methods = frozenset(
        method
        for method, result_type in codec.results.items()
        if any(
            getattr(c, "result_type", None) == RESULT_INPUT_REQUIRED
            for c in result_classes(result_type)
        )
    )
    return _Revision(
        module,
        codec,
        defined_capabilities(module.ClientCapabilities),
        defined_capabilities(module.ServerCapabilities),
        input_methods,
    )


class SessionCore:
    """The state of one connection and what both sides do with it. Use
    :class:`~mcpspec.runtime.ServerSession` or :class:`~mcpspec.runtime.ClientSession`."""

    _role: Role

    def __init__(
        self,
        revisions: Iterable[str] | None,
        info: Any,
        capabilities: Any,
        phase: Phase,
        revision: str,
        limits: Limits | None,
    ) -> None:
        self._limits = limits = DEFAULT_LIMITS if limits is None else limits
        #: The limits read on hot paths.
        self._max_bytes = limits.max_message_bytes
        self._max_in_flight = limits.max_requests_in_flight
        self._accepted = accepted_revisions(revisions)
        self._info_json: dict[str, Any] = (
            as_json(info) if info is not None else dict(_default_info())
        )
        self._own_caps: dict[str, Any] = as_json(capabilities)
        self._peer_caps: dict[str, Any] | None = None
        self._peer_info: Any = None
        self._pending = PendingTable()
        #: The two directions of the pending table (the same dicts, read on hot paths).
        self._incoming = self._pending.incoming
        self._outgoing = self._pending.outgoing
        self._progress = ProgressTracker(limits.max_progress_tokens)
        #: Its two directions (the same objects, read on hot paths).
        self._expected = self._progress.expected
        self._reporting = self._progress.reporting
        self._subscriptions = Subscriptions()
        self._life = Lifecycle(self._role, phase)
        self._model: Model | None = None
        self._negotiated: str | None = None
        #: Received 2025-03-26 batches some of whose answers are still owed, oldest
        #: first, and those of them owed error responses with id null.
        self._open_batches: dict[Batch, None] = {}
        self._null_batches: dict[Batch, None] = {}
        #: The batch being received, while its members are dispatched.
        self._batch: Batch | None = None
        self._counter = 0
        #: Whether SessionReady was reported for the stateless model.
        self._ready_emitted = False
        #: The most verbose log level of a request this side cancelled (2026-07-28).
        self._cancelled_log_level: int | None = None
        self._set_revision(revision)

    # -- the revision in use ----------------------------------------------------------------

    def _set_revision(self, revision: str) -> None:
        facts = _revision(revision)
        codec = facts.codec
        self._module = facts.module
        self._codec = codec
        max_batch = self._limits.max_batch_members
        self._decode = (
            functools.partial(codec.decode, max_batch_members=max_batch)
            if codec.batches and max_batch != MAX_BATCH_MEMBERS
            else codec.decode
        )
        self._stateless = is_stateless(revision)
        self._input_methods = facts.input_methods
        self._result_classes: dict[tuple[str, bool], tuple[type, ...]] = {}
        if self._role is Role.SERVER:
            self._own_requests, self._peer_requests = codec.server_requests, codec.client_requests
            self._own_notifications = codec.server_notifications
            self._peer_notifications = codec.client_notifications
            self._own_table, self._peer_table = SERVER_PROVIDED, CLIENT_PROVIDED
            self._own_defined, self._peer_defined = facts.server_defined, facts.client_defined
        else:
            self._own_requests, self._peer_requests = codec.client_requests, codec.server_requests
            self._own_notifications = codec.client_notifications
            self._peer_notifications = codec.server_notifications
            self._own_table, self._peer_table = CLIENT_PROVIDED, SERVER_PROVIDED
            self._own_defined, self._peer_defined = facts.client_defined, facts.server_defined
        #: A server in the stateless model checks every request's _meta.
        self._per_request_meta = self._stateless and self._role is Role.SERVER
        #: The message rules of this side's messages and of the peer's, by method.
        model = codec.protocol_model
        peer = Role.CLIENT if self._role is Role.SERVER else Role.SERVER
        self._own_rules = _rule_table(self._role, model)
        self._peer_rules = _rule_table(peer, model)
        self._set_own_caps(self._own_caps)

    def _set_own_caps(self, capabilities: dict[str, Any]) -> None:
        self._own_caps = capabilities
        self._own_gate = CapabilityGate(self._own_table, self._own_defined, capabilities)
        self._changed()

    def _changed(self) -> None:
        """Called when the revision or this side's capabilities change."""

    # -- public state -------------------------------------------------------------------------

    @property
    def revision(self) -> str | None:
        """The negotiated revision, or ``None`` before negotiation."""
        return self._negotiated

    @property
    def model(self) -> Model | None:
        """``"handshake"`` or ``"stateless"`` once negotiated, else ``None``."""
        return self._model

    @property
    def phase(self) -> Phase:
        """The lifecycle phase (see :mod:`mcpspec.runtime.state`)."""
        return self._life.phase

    @property
    def types(self) -> ModuleType:
        """The generated module of the revision in use (``session.types.Tool``):
        messages given to ``send`` are values of its types."""
        return self._module

    @property
    def codec(self) -> Codec:
        """The codec of the revision in use."""
        return self._codec

    @property
    def accepted(self) -> tuple[str, ...]:
        """The revisions this side accepts, oldest first."""
        return self._accepted

    @property
    def limits(self) -> Limits:
        """The limits this session keeps (see :class:`~mcpspec.runtime.limits.Limits`)."""
        return self._limits

    @property
    def capabilities(self) -> dict[str, Any]:
        """This side's declared capabilities (JSON object)."""
        return self._own_caps

    @property
    def peer_capabilities(self) -> dict[str, Any] | None:
        """The peer's declared capabilities (JSON object), once known."""
        return self._peer_caps

    @property
    def peer_info(self) -> Any:
        """The peer's ``Implementation``, once known."""
        return self._peer_info

    @property
    def outstanding(self) -> frozenset[RequestId]:
        """Ids of the requests this side sent that await a response."""
        return frozenset(self._outgoing)

    @property
    def unanswered(self) -> frozenset[RequestId]:
        """Ids of the peer's requests this side has not answered yet."""
        return frozenset(self._incoming)

    def next_id(self) -> int:
        """A request id not outstanding (a counter from 1)."""
        while True:
            self._counter += 1
            if self._counter not in self._outgoing:
                return self._counter

    def close(self) -> None:
        """Close the session: nothing more is sent or received."""
        self._life.fire(Trigger.CLOSE)

    def _ready(self, model: Model) -> None:
        """Negotiation is over: the session speaks the revision in use, in ``model``."""
        self._model = model
        self._negotiated = self._codec.revision

    # -- violations -------------------------------------------------------------------------------

    def _violation(
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
    ) -> ProtocolViolation:
        """A violation event; with ``answer``, also the error response, which this side
        now owes (``send(event.response)``). ``reason`` and ``path`` are cut to a few
        hundred characters: they may hold what the peer sent."""
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
        )

    def _reported(self, problem: Problem, *, method: str | None = None) -> ProtocolViolation:
        """The violation of ``problem`` in a notification or a response (never answered)."""
        return self._violation(problem.rule, problem.reason, path=problem.path, method=method)

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
        batch = self._batch
        if request_id is not None and request_id in self._incoming:
            return None
        if self._owed() >= self._max_in_flight:
            if batch is not None:
                batch.responses.append(ErrorResponse(id=request_id, error=error))
                return None
            return UnrecordedErrorResponse(id=request_id, error=error)
        if request_id is None:
            if batch is not None:
                batch.null_owed += 1
            else:
                self._pending.null_owed += 1
            return ErrorResponse(id=None, error=error)
        self._incoming[request_id] = IncomingRequest(
            request_id, method or "", batch=batch, rejected=True
        )
        if batch is not None:
            batch.waiting.add(request_id)
        return ErrorResponse(id=request_id, error=error)

    def _owed(self) -> int:
        """How many answers this side owes the peer, counting each open batch once."""
        return len(self._incoming) + self._pending.null_owed + len(self._open_batches)

    def _over_limit(self, message: Any) -> ProtocolViolation:
        """The violation of a request beyond ``max_requests_in_flight``: answered at
        once, nothing of it kept."""
        return self._refuse(
            message,
            Rule.LIMIT_EXCEEDED,
            f"{self._max_in_flight} requests are unanswered: over the limit "
            f"max_requests_in_flight={self._max_in_flight}",
            "$",
        )

    def _oversized(self, size: int) -> ProtocolViolation:
        """The violation of a message over ``max_message_bytes``, refused unread."""
        return self._violation(
            Rule.LIMIT_EXCEEDED,
            f"a message of {size} bytes is over the limit max_message_bytes={self._max_bytes}",
            answer=True,
        )

    def _internal_failure(
        self, exc: Exception, request_id: RequestId | None, method: str | None, answer: bool
    ) -> ProtocolViolation:
        """The last line of defence: the session failed on a message (a bug, never the
        peer's fault). Reported as -32603; with ``answer`` (a request, or an unreadable
        message), answered with it."""
        reason = f"the session failed on this message: {type(exc).__name__}: {exc}"
        try:
            return self._violation(
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

    def _refuse(
        self, message: Any, rule: Rule, reason: str, path: str, data: Any = None
    ) -> ProtocolViolation:
        """The violation of a request that breaks ``rule``, with the error response."""
        return self._violation(
            rule,
            reason,
            path=path,
            request_id=message.id,
            method=message.method,
            answer=True,
            data=data,
        )

    def _invalid(
        self, exc: InvalidMessage, data: bytes, index: int | None = None
    ) -> ProtocolViolation:
        """The violation for what the codec refused (``index``: of a batch member)."""
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
        if request_id is not None and request_id in self._incoming:
            answer = False
        return self._violation(
            rule,
            exc.reason,
            path=exc.path,
            request_id=request_id,
            method=exc.method,
            answer=answer,
            code=exc.code,
            data=exc.data | {"rule": rule.value},
        )

    def _wrong_direction(self, message: Any) -> ProtocolViolation:
        method = getattr(message, "method", None)
        request_id = getattr(message, "id", None)
        kind = "request" if request_id is not None else "notification"
        peer = "server" if self._role is Role.CLIENT else "client"
        return self._violation(
            Rule.METHOD_NOT_FOUND,
            f"{show(method)} is not a {peer} {kind} in revision {self._codec.revision}",
            path="$.method",
            request_id=request_id,
            method=method,
            answer=request_id is not None,
        )

    def _gate_violation(self, method: str, request_id: RequestId | None) -> ProtocolViolation:
        """The violation of a message the lifecycle does not allow now."""
        phase = self._life.phase
        if method == "initialize" or (
            method == "notifications/initialized" and phase is Phase.READY
        ):
            rule = Rule.ALREADY_INITIALIZED
            reason = f"{method} comes once"
        else:
            rule = Rule.NOT_INITIALIZED
            reason = f"{show(method)} is not allowed in phase {phase.value}"
        return self._violation(
            rule,
            reason,
            path="$.method",
            request_id=request_id,
            method=method,
            answer=request_id is not None,
        )

    def _duplicate(self, message: Any) -> ProtocolViolation:
        """The violation of a request whose id is outstanding (never answered)."""
        return self._violation(
            Rule.DUPLICATE_REQUEST_ID,
            f"request id {show(message.id)} is already outstanding",
            path="$.id",
            request_id=message.id,
            method=message.method,
        )

    def _capability_violation(self, message: Any, path: Path) -> ProtocolViolation:
        return self._refuse(
            message,
            Rule.CAPABILITY_NOT_DECLARED,
            f"{message.method} needs the {'.'.join(path)} capability, which this side did "
            "not declare",
            "$.method",
        )

    # -- requests that are over -------------------------------------------------------------------

    def _settle(
        self, tokens: Tokens, record: IncomingRequest | OutgoingRequest, result: Any
    ) -> None:
        """A request was answered (``result`` is ``None`` for an error): its progress
        token is done, or kept for its task; its subscription is closed; a task it
        reported terminal is finished."""
        token = record.progress_token
        if token is not None:
            task = getattr(result, "task", None) if record.task else None
            tokens.finish(token, task_id=getattr(task, "task_id", None))
        method = record.method
        if method == LISTEN:
            self._subscriptions.closed(record.id)
        elif method in _TASK_STATUS and getattr(result, "status", None) in TERMINAL_TASK_STATUSES:
            self._progress.task_finished(result.task_id)

    def _result_classes_of(self, method: str, task: bool) -> tuple[type, ...]:
        """The classes a result of ``method`` is an instance of."""
        key = (method, task)
        classes = self._result_classes.get(key)
        if classes is None:
            classes = self._result_classes[key] = result_classes(
                self._codec.result_type(method, task=task)
            )
        return classes

    # -- answers to a received 2025-03-26 batch -------------------------------------------------

    def _answer_batch(
        self, record: IncomingRequest, response: ResultResponse | ErrorResponse, data: bytes
    ) -> bytes:
        """What to write for the answer ``data`` to ``record``: itself, or the batch it
        completes, or nothing yet."""
        batch = record.batch
        if batch is None:
            return data
        batch.waiting.discard(record.id)
        batch.responses.append(response)
        return self._flush_batch(batch)

    def _flush_batch(self, batch: Batch) -> bytes:
        if not batch.complete:
            return b""
        self._open_batches.pop(batch, None)
        self._null_batches.pop(batch, None)
        if not batch.responses:
            return b""
        return self._codec.encode(batch.responses)
