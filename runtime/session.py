"""Sans-IO MCP sessions: :class:`ServerSession` and :class:`ClientSession`.

A session turns the bytes of one framed wire message into typed events
(:meth:`~_Session.receive`) and generated message values into bytes
(:meth:`~_Session.send`). It does no I/O: the caller reads frames from a transport,
feeds them in, and writes out what ``send`` returns (and the ``data`` of any
:class:`~mcpspec.runtime.events.Outgoing` event).

Wire input never raises: a message that breaks a rule becomes a
:class:`~mcpspec.runtime.events.ProtocolViolation`. Local misuse raises a
:class:`~mcpspec.runtime.misuse.LocalProtocolError` subclass, and nothing is sent.

The rules kept, and where: the lifecycle phases and what may flow in each
(:mod:`.state`); the pending table of ids in both directions (:mod:`.pending`);
progress tokens (:mod:`.progress`); capabilities (:mod:`.capabilities`); version
negotiation in both models (:mod:`.negotiation`); the per-request rules of 2026-07-28
(:mod:`.stateless`). This module wires them together.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any, Final, Literal, TypeAlias, get_args, get_origin

import msgspec
from msgspec import UNSET

from mcpspec import module_name

from .capabilities import (
    CLIENT_PROVIDED,
    SERVER_PROVIDED,
    CapabilityGate,
    as_json,
    defined_capabilities,
    has_capability,
    required_capability,
)
from .codec import Codec
from .envelope import ErrorObject, ErrorResponse, RequestId, ResultResponse
from .errors import ErrorCode, InvalidMessage
from .events import (
    ErrorReceived,
    Event,
    NegotiationFailed,
    NotificationReceived,
    Outgoing,
    ProgressReceived,
    ProtocolViolation,
    RequestCancelled,
    RequestReceived,
    ResponseReceived,
    SessionReady,
)
from .misuse import (
    CapabilityError,
    LocalProtocolError,
    NegotiationError,
    ProgressError,
    RequestIdError,
    RevisionError,
    SessionClosed,
    StateError,
    SubscriptionError,
)
from .negotiation import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    PROBE_DECODER,
    RESULT_VERSION_DECODER,
    ClientMode,
    accepted_revisions,
    client_plan,
    is_stateless,
    negotiate_handshake,
    newest_mutual,
)
from .pending import Batch, IncomingRequest, OutgoingRequest, PendingTable
from .progress import IGNORE, TERMINAL_TASK_STATUSES, ProgressTracker
from .rules import RULES, Rule
from .state import Lifecycle, Phase, Role, Trigger
from .stateless import FILTER_FIELDS, LEVELS, MetaProblem, MetaReader, RequestMeta, Subscriptions

__all__ = ["ClientSession", "ServerSession"]

#: What ``send`` takes: a generated request or notification, or a response envelope.
Sendable: TypeAlias = "msgspec.Struct | ResultResponse | ErrorResponse"
Model = Literal["handshake", "stateless"]
_Handler = Callable[[Any, bytes], list[Event]]


@functools.cache
def _default_info() -> dict[str, str]:
    """The identity a session uses when given none: this package and its version."""
    try:
        version = importlib.metadata.version("mcpspec")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source tree
        version = "0"
    return {"name": "mcpspec", "version": version}


_ERROR_MESSAGES: Final[dict[int, str]] = {
    ErrorCode.PARSE_ERROR: "Parse error",
    ErrorCode.INVALID_REQUEST: "Invalid request",
    ErrorCode.METHOD_NOT_FOUND: "Method not found",
    ErrorCode.INVALID_PARAMS: "Invalid params",
    ErrorCode.INTERNAL_ERROR: "Internal error",
    ErrorCode.HEADER_MISMATCH: "Header mismatch",
    ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY: "Missing required client capability",
    ErrorCode.UNSUPPORTED_PROTOCOL_VERSION: "Unsupported protocol version",
}
_CODE_RULES: Final = {
    ErrorCode.PARSE_ERROR: Rule.PARSE_ERROR,
    ErrorCode.INVALID_REQUEST: Rule.INVALID_REQUEST,
    ErrorCode.METHOD_NOT_FOUND: Rule.METHOD_NOT_FOUND,
    ErrorCode.INVALID_PARAMS: Rule.INVALID_PARAMS,
}
_PROGRESS_TOKEN: Final = b'"progressToken"'
_CANCELLED: Final = "notifications/cancelled"
#: Methods whose responses update more than the pending table.
_RESULT_HOOKED: Final = frozenset(
    {
        "initialize",
        "server/discover",
        "subscriptions/listen",
        "tasks/get",
        "tasks/cancel",
        "tasks/result",
    }
)
_LISTEN: Final = "subscriptions/listen"
_ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"


class _TokenMeta(msgspec.Struct):
    progress_token: int | str | None = msgspec.field(default=None, name="progressToken")


class _TokenParams(msgspec.Struct):
    meta: _TokenMeta | None = msgspec.field(default=None, name="_meta")


class _TokenProbe(msgspec.Struct):
    params: _TokenParams | None = None


_TOKEN_DECODER: Final = msgspec.json.Decoder(_TokenProbe)
_JSON_ENCODER: Final = msgspec.json.Encoder()


def _is_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _classes(result_type: Any) -> tuple[type, ...]:
    """The classes a value of ``result_type`` (a Struct, a Union, ``dict[str, Any]``) is
    an instance of."""
    origin = get_origin(result_type)
    if origin is None:
        return (result_type,) if isinstance(result_type, type) else (object,)
    if origin is dict:
        return (dict,)
    out: list[type] = []
    for arg in get_args(result_type):
        out.extend(_classes(arg))
    return tuple(out)


class _Session:
    """What both sides share: the pending table, progress, the receive dispatch and
    the send checks. Use :class:`ServerSession` or :class:`ClientSession`."""

    _role: Role

    def __init__(
        self,
        revisions: Iterable[str] | None,
        info: Any,
        capabilities: Any,
        phase: Phase,
        revision: str,
    ) -> None:
        self._accepted = accepted_revisions(revisions)
        self._info_json: dict[str, Any] = (
            as_json(info) if info is not None else dict(_default_info())
        )
        self._own_caps: dict[str, Any] = as_json(capabilities)
        self._hooks: dict[str, Callable[[Any], ProtocolViolation | None]] = {}
        self._result_hooks: dict[str, Callable[[OutgoingRequest, Any, list[Event]], None]] = {}
        self._peer_caps: dict[str, Any] | None = None
        self._peer_info: Any = None
        self._pending = PendingTable()
        self._progress = ProgressTracker()
        self._subscriptions = Subscriptions()
        self._life = Lifecycle(self._role, phase)
        self._model: Model | None = None
        self._negotiated: str | None = None
        self._open_batches: list[Batch] = []
        self._batch: Batch | None = None
        self._counter = 0
        self._ready_emitted = False
        #: The most verbose log level of a request this side cancelled (2026-07-28).
        self._cancelled_log_level: int | None = None
        self._result_classes: dict[tuple[str, bool], tuple[type, ...]] = {}
        self._set_revision(revision)

    # -- revision -------------------------------------------------------------------------

    def _set_revision(self, revision: str) -> None:
        module = importlib.import_module(module_name(revision))
        codec: Codec = module.codec
        self._module = module
        self._codec = codec
        self._stateless = is_stateless(revision)
        self._result_classes = {}
        if self._role is Role.SERVER:
            own_requests, peer_requests = codec.server_requests, codec.client_requests
            own_notes, peer_notes = codec.server_notifications, codec.client_notifications
            self._own_table, self._peer_table = SERVER_PROVIDED, CLIENT_PROVIDED
            own_caps_type, peer_caps_type = module.ServerCapabilities, module.ClientCapabilities
        else:
            own_requests, peer_requests = codec.client_requests, codec.server_requests
            own_notes, peer_notes = codec.client_notifications, codec.server_notifications
            self._own_table, self._peer_table = CLIENT_PROVIDED, SERVER_PROVIDED
            own_caps_type, peer_caps_type = module.ClientCapabilities, module.ServerCapabilities
        self._own_requests = own_requests
        self._own_notifications = own_notes
        self._own_defined = defined_capabilities(own_caps_type)
        self._peer_defined = defined_capabilities(peer_caps_type)
        self._own_gate = CapabilityGate(self._own_table, self._own_defined, self._own_caps)
        self._decode = codec.decode
        self._decode_result = codec.decode_result
        self._task_methods = frozenset(codec.task_results)
        #: Methods a 2026-07-28 server may answer with an InputRequiredResult.
        self._input_methods = frozenset(
            m
            for m, t in codec.results.items()
            if any(getattr(c, "result_type", None) == "input_required" for c in _classes(t))
        )
        #: A server in the stateless model checks every request's _meta.
        self._per_request_meta = self._stateless and self._role is Role.SERVER
        handlers: dict[type, _Handler] = {
            ResultResponse: self._on_result,
            ErrorResponse: self._on_error,
        }
        for method in peer_requests:
            handlers[codec.requests[method]] = self._on_request
        special = self._notification_handlers()
        for method in peer_notes:
            handlers[codec.notifications[method]] = special.get(method, self._on_notification)
        self._handlers = handlers

    def _set_own_caps(self, capabilities: dict[str, Any]) -> None:
        self._own_caps = capabilities
        self._own_gate = CapabilityGate(self._own_table, self._own_defined, capabilities)

    def _notification_handlers(self) -> dict[str, _Handler]:
        return {
            _CANCELLED: self._on_cancelled,
            "notifications/progress": self._on_progress,
            "notifications/tasks/status": self._on_task_status,
        }

    # -- public state -----------------------------------------------------------------------

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
        messages given to :meth:`send` are values of its types."""
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
        return frozenset(self._pending.outgoing)

    @property
    def unanswered(self) -> frozenset[RequestId]:
        """Ids of the peer's requests this side has not answered yet."""
        return frozenset(self._pending.incoming)

    def next_id(self) -> int:
        """A request id not outstanding (a counter from 1)."""
        outgoing = self._pending.outgoing
        while True:
            self._counter += 1
            if self._counter not in outgoing:
                return self._counter

    def close(self) -> None:
        """Close the session: nothing more is sent or received."""
        self._life.fire(Trigger.CLOSE)

    # -- receiving --------------------------------------------------------------------------

    def receive(self, data: bytes) -> list[Event]:
        """The events of one framed wire message (never raises on wire input)."""
        if self._life.early:
            return self._receive_early(data)
        try:
            message = self._decode(data)
        except InvalidMessage as exc:
            return [self._invalid(exc, data)]
        handler = self._handlers.get(message.__class__)
        if handler is not None:
            return handler(message, data)
        if type(message) is list:
            return self._receive_batch(message, data)
        return [self._wrong_direction(message)]

    def _receive(self, data: bytes) -> list[Event]:
        try:
            message = self._codec.decode(data)
        except InvalidMessage as exc:
            return [self._invalid(exc, data)]
        handler = self._handlers.get(type(message))
        if handler is not None:
            return handler(message, data)
        if type(message) is list:
            return self._receive_batch(message, data)
        return [self._wrong_direction(message)]

    def _receive_early(self, data: bytes) -> list[Event]:
        if self._life.phase is Phase.CLOSED:
            return [self._violation(Rule.SESSION_CLOSED, "the session is closed")]
        return self._receive(data)

    def _receive_batch(self, items: list[Any], data: bytes) -> list[Event]:
        raws: list[Any] = msgspec.json.decode(data)
        batch = self._batch = Batch()
        events: list[Event] = []
        try:
            for index, item in enumerate(items):
                if isinstance(item, InvalidMessage):
                    events.append(self._invalid(item, data, index))
                    continue
                method = getattr(item, "method", None)
                if method == "initialize":
                    events.append(
                        self._violation(
                            Rule.INITIALIZE_IN_BATCH,
                            "initialize is never part of a batch",
                            request_id=item.id,
                            method=method,
                            answer=True,
                        )
                    )
                    continue
                handler = self._handlers.get(type(item))
                raw = _JSON_ENCODER.encode(raws[index])
                if handler is None:
                    events.append(self._wrong_direction(item))
                else:
                    events.extend(handler(item, raw))
        finally:
            self._batch = None
        if not batch.complete:
            self._open_batches.append(batch)
        return events

    # -- violations ---------------------------------------------------------------------------

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
        now owes (``send(event.response)``)."""
        if code is None:
            code = RULES[rule].code
        if data is None:
            data = {"rule": rule.value, "path": path, "reason": reason}
        error = ErrorObject(
            code=int(code), message=_ERROR_MESSAGES.get(code, RULES[rule].summary), data=data
        )
        response = None
        if answer:
            pending = self._pending
            if request_id is None:
                batch = self._batch
                if batch is not None:
                    batch.null_owed += 1
                else:
                    pending.null_owed += 1
                response = ErrorResponse(id=None, error=error)
            elif request_id not in pending.incoming:
                pending.incoming[request_id] = IncomingRequest(
                    request_id, method or "", batch=self._batch, rejected=True
                )
                if self._batch is not None:
                    self._batch.waiting.add(request_id)
                response = ErrorResponse(id=request_id, error=error)
        return ProtocolViolation(
            rule=rule,
            error=error,
            response=response,
            request_id=request_id,
            method=method,
            path=path,
            reason=reason,
        )

    def _invalid(self, exc: InvalidMessage, data: bytes, index: int | None = None) -> Event:
        """The violation for what the codec refused."""
        rule = _CODE_RULES.get(exc.code, Rule.INVALID_REQUEST)
        if (
            rule is Rule.INVALID_REQUEST
            and index is None
            and exc.path == "$"
            and data.lstrip()[:1] == b"["
        ):
            rule = Rule.BATCH_NOT_ALLOWED  # a top-level array the revision refuses
        answer, request_id = _answerable(data, index)
        if request_id is None and exc.id is not None and answer:
            request_id = exc.id
        if request_id is not None and request_id in self._pending.incoming:
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
        answer = request_id is not None and request_id not in self._pending.incoming
        peer = "server" if self._role is Role.CLIENT else "client"
        return self._violation(
            Rule.METHOD_NOT_FOUND,
            f"{method!r} is not a {peer} {kind} in revision {self._codec.revision}",
            path="$.method",
            request_id=request_id,
            method=method,
            answer=answer,
        )

    def _gate_violation(self, method: str, request_id: RequestId | None) -> ProtocolViolation:
        if method == "initialize" or (
            method == "notifications/initialized" and self._life.phase is Phase.READY
        ):
            rule = Rule.ALREADY_INITIALIZED
            reason = f"{method} comes once"
        else:
            rule = Rule.NOT_INITIALIZED
            reason = f"{method!r} is not allowed in phase {self._life.phase.value}"
        return self._violation(
            rule,
            reason,
            path="$.method",
            request_id=request_id,
            method=method,
            answer=request_id is not None,
        )

    # -- incoming requests ----------------------------------------------------------------------

    def _on_request(self, message: Any, data: bytes) -> list[Event]:
        request_id: RequestId = message.id
        pending = self._pending
        if request_id in pending.incoming:
            return [
                self._violation(
                    Rule.DUPLICATE_REQUEST_ID,
                    f"request id {request_id!r} is already outstanding",
                    path="$.id",
                    request_id=request_id,
                    method=message.method,
                )
            ]
        if self._per_request_meta:
            return self._on_stateless_request(message, data)
        method: str = message.method
        allowed = self._life.receive_gate.requests
        refused = allowed is not None and method not in allowed
        if (refused or method == "initialize") and (
            method != "initialize" or self._life.phase is not Phase.IDLE
        ):
            return [self._gate_violation(method, request_id)]
        missing = self._own_gate.missing(message)
        if missing is not None:
            return [self._capability_violation(message, missing)]
        params = message.params
        meta = getattr(params, "meta", None)
        if meta.__class__ is dict:
            token = meta.get("progressToken")
            if token is not None and token.__class__ is not str and token.__class__ is not int:
                return [self._bad_token(message, f"not a string or an integer: {token!r}")]
        elif meta is None and _PROGRESS_TOKEN in data:
            token = self._scanned_token(message, data)
            if token.__class__ is ProtocolViolation:
                return [token]
        else:
            token = None
        if token is not None and not self._progress.reporting.begin(token, request_id):
            return [self._token_in_use(message, token)]
        hook = self._hooks.get(method)
        if hook is not None:
            problem = hook(message)
            if problem is not None:
                if token is not None:
                    self._progress.report_done(token, cancelled=True)
                return [problem]
        batch = self._batch
        pending.incoming[request_id] = IncomingRequest(
            request_id,
            method,
            token,
            None,
            None,
            batch,
            False,
            method in self._task_methods and getattr(params, "task", UNSET) is not UNSET,
        )
        if batch is not None:
            batch.waiting.add(request_id)
        return [
            RequestReceived(
                request=message, request_id=request_id, method=method, progress_token=token
            )
        ]

    def _on_stateless_request(self, message: Any, data: bytes) -> list[Event]:
        """A request in the stateless model: ``_meta`` checked first, per request."""
        method: str = message.method
        request_id: RequestId = message.id
        events: list[Event] = []
        checked = self._check_meta(message)
        if isinstance(checked, ProtocolViolation):
            return [checked]
        if self._life.phase is Phase.IDLE:
            self._life.fire(Trigger.RECEIVE_STATELESS_REQUEST)
        if not self._ready_emitted:
            self._ready_emitted = True
            self._model = "stateless"
            self._negotiated = self._codec.revision
            events.append(
                SessionReady(
                    revision=self._codec.revision,
                    model="stateless",
                    peer_info=checked.client_info,
                    peer_capabilities=checked.capabilities,
                )
            )
        missing = self._own_gate.missing(message)
        if missing is not None:
            events.append(self._capability_violation(message, missing))
            return events
        params = message.params
        token = params.meta.get("progressToken")
        if token is not None:
            if token.__class__ is not str and token.__class__ is not int:
                events.append(self._bad_token(message, f"not a string or an integer: {token!r}"))
                return events
            if not self._progress.reporting.begin(token, request_id):
                events.append(self._token_in_use(message, token))
                return events
        hook = self._hooks.get(method)
        if hook is not None:
            problem = hook(message)
            if problem is not None:
                if token is not None:
                    self._progress.report_done(token, cancelled=True)
                events.append(problem)
                return events
        level = checked.log_level
        self._pending.incoming[request_id] = IncomingRequest(
            request_id,
            method,
            token,
            None if level is None else LEVELS[level],
            checked.capabilities_json,
            None,
        )
        events.append(
            RequestReceived(
                request=message,
                request_id=request_id,
                method=method,
                progress_token=token,
                protocol_version=checked.version,
                client_capabilities=checked.capabilities,
                client_info=checked.client_info,
                log_level=level,
            )
        )
        return events

    def _capability_violation(self, message: Any, path: tuple[str, ...]) -> ProtocolViolation:
        return self._violation(
            Rule.CAPABILITY_NOT_DECLARED,
            f"{message.method} needs the {'.'.join(path)} capability, which this side did "
            "not declare",
            path="$.method",
            request_id=message.id,
            method=message.method,
            answer=True,
        )

    def _token_in_use(self, message: Any, token: Any) -> ProtocolViolation:
        return self._violation(
            Rule.PROGRESS_TOKEN_IN_USE,
            f"progress token {token!r} is in use by another active request",
            path="$.params._meta.progressToken",
            request_id=message.id,
            method=message.method,
            answer=True,
        )

    def _check_meta(self, message: Any) -> Any:
        raise NotImplementedError

    def _scanned_token(self, message: Any, data: bytes) -> Any:
        """The progress token of a request whose params type has no ``_meta`` (revisions
        up to 2025-06-18), read from the bytes; ``None``, or a violation."""
        try:
            probe = _TOKEN_DECODER.decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            return self._bad_token(message, str(exc))
        if probe.params is None or probe.params.meta is None:
            return None
        return probe.params.meta.progress_token

    def _bad_token(self, message: Any, reason: str) -> ProtocolViolation:
        return self._violation(
            Rule.INVALID_PARAMS,
            reason,
            path="$.params._meta.progressToken",
            request_id=message.id,
            method=message.method,
            answer=True,
        )

    # -- incoming notifications ---------------------------------------------------------------

    def _notification_gate(self, message: Any) -> ProtocolViolation | None:
        allowed = self._life.receive_gate.notifications
        if allowed is not None and message.method not in allowed:
            return self._gate_violation(message.method, None)
        return None

    def _on_notification(self, message: Any, data: bytes) -> list[Event]:
        allowed = self._life.receive_gate.notifications
        if allowed is not None and message.method not in allowed:
            return [self._gate_violation(message.method, None)]
        return [NotificationReceived(notification=message, method=message.method)]

    def _on_cancelled(self, message: Any, data: bytes) -> list[Event]:
        problem = self._notification_gate(message)
        if problem is not None:
            return [problem]
        params = message.params
        request_id = params.request_id
        reason = params.reason if params.reason is not UNSET else None
        pending = self._pending
        if self._stateless and self._role is Role.CLIENT:
            # 2026-07-28: a server cancels only a subscriptions/listen stream.
            out = pending.outgoing.get(request_id)
            if out is None or out.method != _LISTEN:
                if out is None and request_id in pending.cancelled_out:
                    return [
                        RequestCancelled(
                            notification=message, request_id=request_id, reason=reason, active=False
                        )
                    ]
                return [
                    self._violation(
                        Rule.CANCEL_NOT_LISTEN,
                        f"request {request_id!r} is not an open subscriptions/listen request",
                        path="$.params.requestId",
                        method=message.method,
                    )
                ]
            del pending.outgoing[request_id]
            self._subscriptions.closed(request_id)
            return [
                RequestCancelled(
                    notification=message, request_id=request_id, reason=reason, active=True
                )
            ]
        record = pending.incoming.get(request_id)
        if record is None:
            return [
                RequestCancelled(
                    notification=message, request_id=request_id, reason=reason, active=False
                )
            ]
        if record.method == "initialize":
            return [
                self._violation(
                    Rule.CANCEL_INITIALIZE,
                    "the initialize request cannot be cancelled",
                    path="$.params.requestId",
                    method=message.method,
                )
            ]
        del pending.incoming[request_id]
        pending.cancelled_in.add(request_id)
        if record.progress_token is not None:
            self._progress.report_done(record.progress_token, cancelled=True)
        self._subscriptions.closed(request_id)
        events: list[Event] = [
            RequestCancelled(
                notification=message, request_id=request_id, reason=reason, active=True
            )
        ]
        batch = record.batch
        if batch is not None:
            batch.waiting.discard(request_id)
            flushed = self._flush_batch(batch)
            if flushed:
                events.append(Outgoing(data=flushed, message=list(batch.responses)))
        return events

    def _on_progress(self, message: Any, data: bytes) -> list[Event]:
        allowed = self._life.receive_gate.notifications
        if allowed is not None and message.method not in allowed:
            return [self._gate_violation(message.method, None)]
        params = message.params
        token = params.progress_token
        track = self._progress.expected.active.get(token)
        if track is not None:
            progress = params.progress
            last = track.last
            if last is None or progress > last:
                track.last = progress
                total = params.total
                text = getattr(params, "message", UNSET)
                return [
                    ProgressReceived(
                        notification=message,
                        progress_token=token,
                        progress=progress,
                        total=None if total is UNSET else total,
                        message=None if text is UNSET else text,
                        request_id=track.request_id,
                    )
                ]
        verdict, request_id = self._progress.received(token, params.progress)
        if verdict is None:
            assert request_id is not None
            total = params.total
            text = getattr(params, "message", UNSET)
            return [
                ProgressReceived(
                    notification=message,
                    progress_token=token,
                    progress=params.progress,
                    total=None if total is UNSET else total,
                    message=None if text is UNSET else text,
                    request_id=request_id,
                )
            ]
        if verdict is IGNORE:
            return []
        assert isinstance(verdict, Rule)
        reasons = {
            Rule.PROGRESS_NOT_INCREASING: f"progress {params.progress!r} does not increase",
            Rule.PROGRESS_AFTER_COMPLETION: f"progress for token {token!r} after its request "
            "completed",
            Rule.PROGRESS_UNKNOWN_TOKEN: f"no active request has progress token {token!r}",
        }
        return [
            self._violation(
                verdict,
                reasons[verdict],
                path="$.params.progress"
                if verdict is Rule.PROGRESS_NOT_INCREASING
                else "$.params.progressToken",
                request_id=request_id,
                method=message.method,
            )
        ]

    def _on_task_status(self, message: Any, data: bytes) -> list[Event]:
        events = self._on_notification(message, data)
        if isinstance(events[0], NotificationReceived):
            params = message.params
            if params.status in TERMINAL_TASK_STATUSES:
                self._progress.task_finished(params.task_id)
        return events

    # -- incoming responses -------------------------------------------------------------------

    def _on_result(self, response: ResultResponse, data: bytes) -> list[Event]:
        record = self._pending.outgoing.pop(response.id, None)
        if record is None:
            return self._stray(response)
        if not record.plain:
            return self._special_result(record, response)
        try:
            result = self._decode_result(record.method, response.result)
        except InvalidMessage as exc:
            return [self._invalid_result(record, exc)]
        return [
            ResponseReceived(
                request_id=record.id, method=record.method, result=result, request=record.request
            )
        ]

    def _stray(self, response: Any) -> list[Event]:
        """A response to no outstanding request: ignored after a cancellation, else a
        violation."""
        if response.id is not None and self._pending.cancelled_out.discard(response.id):
            return []  # a response after cancellation is ignored
        return [
            self._violation(
                Rule.UNKNOWN_RESPONSE_ID,
                f"no outstanding request has id {response.id!r}",
                path="$.id",
                request_id=response.id,
            )
        ]

    def _invalid_result(self, record: OutgoingRequest, exc: InvalidMessage) -> ProtocolViolation:
        return self._violation(
            Rule.INVALID_RESULT,
            exc.reason,
            path=exc.path,
            request_id=record.id,
            method=record.method,
        )

    def _special_result(self, record: OutgoingRequest, response: ResultResponse) -> list[Event]:
        return self._typed_result(record, response)

    def _typed_result(self, record: OutgoingRequest, response: ResultResponse) -> list[Event]:
        method = record.method
        try:
            result = self._codec.decode_result(method, response.result, task=record.task)
        except InvalidMessage as exc:
            self._finish_outgoing(record, None)
            return [self._invalid_result(record, exc)]
        problem = self._check_result(record, result)
        self._finish_outgoing(record, result)
        if problem is not None:
            return [problem]
        events: list[Event] = [
            ResponseReceived(
                request_id=record.id, method=method, result=result, request=record.request
            )
        ]
        hook = self._result_hooks.get(method)
        if hook is not None:
            hook(record, result, events)
        return events

    def _check_result(self, record: OutgoingRequest, result: Any) -> ProtocolViolation | None:
        return None

    def _finish_outgoing(self, record: OutgoingRequest, result: Any) -> None:
        token = record.progress_token
        if token is not None:
            task = getattr(result, "task", None) if record.task else None
            task_id = getattr(task, "task_id", None)
            self._progress.expected_done(token, task_id=task_id)
        if record.method == _LISTEN:
            self._subscriptions.closed(record.id)
        if record.method in ("tasks/get", "tasks/cancel"):
            if getattr(result, "status", None) in TERMINAL_TASK_STATUSES:
                self._progress.task_finished(getattr(result, "task_id", ""))
        elif record.method == "tasks/result":
            task_id = getattr(getattr(record.request, "params", None), "task_id", None)
            if isinstance(task_id, str):
                self._progress.task_finished(task_id)

    def _on_error(self, response: ErrorResponse, data: bytes) -> list[Event]:
        if response.id is None:
            return [ErrorReceived(request_id=None, method=None, error=response.error, request=None)]
        record = self._pending.outgoing.pop(response.id, None)
        if record is None:
            return self._stray(response)
        self._finish_outgoing(record, None)
        events: list[Event] = [
            ErrorReceived(
                request_id=record.id,
                method=record.method,
                error=response.error,
                request=record.request,
            )
        ]
        self._on_error_hook(record, response.error, events)
        return events

    def _on_error_hook(
        self, record: OutgoingRequest, error: ErrorObject, events: list[Event]
    ) -> None:
        return None

    # -- sending --------------------------------------------------------------------------------

    def send(self, message: Sendable, *, progress_token: int | str | None = None) -> bytes:
        """The bytes of ``message`` (a generated request or notification of the revision
        in use, or a :class:`ResultResponse`/:class:`ErrorResponse`) after checking it
        against every rule the session keeps; ``b""`` when there is nothing to write (an
        answer to a request the peer cancelled, or a 2025-03-26 batch still waiting for
        other answers).

        ``progress_token`` asks the peer for progress on a request; it goes to
        ``params._meta.progressToken`` (the request params of revisions up to 2025-06-18
        have no ``_meta`` attribute, so pass it here for those).

        Raises a :class:`~mcpspec.runtime.misuse.LocalProtocolError` subclass when the
        message breaks a rule; nothing is recorded then.
        """
        if self._life.phase is Phase.CLOSED:
            raise SessionClosed(Rule.SESSION_CLOSED, "the session is closed")
        cls = type(message)
        if cls is ResultResponse:
            return self._send_result(message)  # type: ignore[arg-type]
        if cls is ErrorResponse:
            return self._send_error(message)  # type: ignore[arg-type]
        method = getattr(cls, "method", None)
        if not isinstance(method, str) or not isinstance(message, msgspec.Struct):
            raise TypeError(
                f"send() takes a generated request or notification, a ResultResponse or an "
                f"ErrorResponse; got {cls.__name__}"
            )
        if cls.__module__ != self._module.__name__:
            raise RevisionError(
                Rule.WRONG_REVISION,
                f"{cls.__module__}.{cls.__name__} is not a type of revision "
                f"{self._codec.revision} (use session.types)",
            )
        if hasattr(message, "id"):
            return self._send_request(message, method, progress_token)
        if progress_token is not None:
            raise TypeError("progress_token is for requests")
        return self._send_notification(message, method)

    def send_batch(self, messages: Sequence[Sendable]) -> bytes:
        """The bytes of a JSON-RPC batch of requests and notifications (revision
        2025-03-26 only). If one member is refused, the requests registered before it
        are forgotten and the exception propagates."""
        if not self._codec.batches:
            raise RevisionError(
                Rule.BATCH_NOT_ALLOWED,
                f"revision {self._codec.revision} has no JSON-RPC batches",
            )
        if not messages:
            raise RevisionError(Rule.BATCH_NOT_ALLOWED, "a batch cannot be empty")
        parts: list[bytes] = []
        registered: list[RequestId] = []
        try:
            for message in messages:
                if isinstance(message, (ResultResponse, ErrorResponse)):
                    raise TypeError("send_batch() takes requests and notifications")
                if getattr(type(message), "method", None) == "initialize":
                    raise StateError(Rule.INITIALIZE_IN_BATCH, "initialize is never batched")
                part = self.send(message)
                request_id = getattr(message, "id", None)
                if request_id is not None:
                    registered.append(request_id)
                if part:
                    parts.append(part)
        except Exception:
            for request_id in registered:
                record = self._pending.outgoing.pop(request_id, None)
                if record is not None and record.progress_token is not None:
                    self._progress.expected.active.pop(record.progress_token, None)
            raise
        return b"[" + b",".join(parts) + b"]"

    def cancel(self, request_id: RequestId, reason: str | None = None) -> bytes:
        """Send ``notifications/cancelled`` for an outstanding request of this side; its
        late response will be ignored."""
        module = self._module
        params = module.CancelledNotificationParams(
            request_id=request_id, reason=UNSET if reason is None else reason
        )
        return self.send(module.CancelledNotification(params=params))

    def _send_request(self, message: Any, method: str, token_arg: int | str | None) -> bytes:
        if self._own_requests.get(method) is None:
            side = self._role.value
            raise RevisionError(
                Rule.METHOD_NOT_FOUND,
                f"{method!r} is not a {side} request in revision {self._codec.revision}",
            )
        allowed = self._life.send_gate.requests
        if allowed is not None and method not in allowed:
            raise StateError(
                Rule.NOT_INITIALIZED,
                f"cannot send {method!r} in phase {self._life.phase.value}",
            )
        request_id = message.id
        pending = self._pending
        if request_id in pending.outgoing:
            raise RequestIdError(
                Rule.DUPLICATE_REQUEST_ID, f"request id {request_id!r} is already outstanding"
            )
        self._before_request(message, method)
        peer_caps = self._peer_caps
        if peer_caps is not None:
            path = required_capability(message, self._peer_table, self._peer_defined)
            if path is not None and not has_capability(peer_caps, path):
                raise CapabilityError(
                    Rule.CAPABILITY_NOT_DECLARED,
                    f"the peer did not declare the {'.'.join(path)} capability {method} needs",
                )
        message, caps_json, log_level = self._stamp(message)
        params: Any = getattr(message, "params", None)
        meta = getattr(params, "meta", None)
        token = meta.get("progressToken") if type(meta) is dict else None
        if token_arg is not None:
            if token is not None and token != token_arg:
                raise ProgressError(
                    Rule.PROGRESS_TOKEN_IN_USE,
                    "progress_token differs from params._meta.progressToken",
                )
            token = token_arg
        if token is not None:
            if not _is_id(token):
                raise ProgressError(
                    Rule.INVALID_PARAMS, f"a progress token is a string or an integer: {token!r}"
                )
            if token in self._progress.expected.active:
                raise ProgressError(
                    Rule.PROGRESS_TOKEN_IN_USE,
                    f"progress token {token!r} is in use by another active request",
                )
        if token_arg is not None:
            wire = msgspec.to_builtins(message)
            wire_params = wire.setdefault("params", {})
            wire_params.setdefault("_meta", {})["progressToken"] = token_arg
            data = _JSON_ENCODER.encode(wire)
        else:
            data = self._codec.encode(message)
        task = (
            params is not None
            and getattr(params, "task", UNSET) is not UNSET
            and method in self._codec.task_results
        )
        plain = (
            token is None
            and not task
            and method not in _RESULT_HOOKED
            and method not in self._input_methods
        )
        pending.outgoing[request_id] = OutgoingRequest(
            request_id,
            method,
            message,
            task=task,
            progress_token=token,
            log_level=log_level,
            capabilities=caps_json,
            plain=plain,
        )
        if token is not None:
            self._progress.expect(token, request_id)
        if method == _LISTEN:
            self._subscriptions.opened(request_id, as_json(params.notifications))
        self._after_request(message, method)
        return data

    def _before_request(self, message: Any, method: str) -> None:
        """Role-specific checks before a request is recorded (may raise)."""

    def _after_request(self, message: Any, method: str) -> None:
        """Role-specific bookkeeping after a request is recorded."""

    def _stamp(self, message: Any) -> tuple[Any, dict[str, Any] | None, int | None]:
        return message, None, None

    def _send_notification(self, message: Any, method: str) -> bytes:
        if method not in self._own_notifications:
            raise RevisionError(
                Rule.METHOD_NOT_FOUND,
                f"{method!r} is not a {self._role.value} notification in revision "
                f"{self._codec.revision}",
            )
        allowed = self._life.send_gate.notifications
        if allowed is not None and method not in allowed:
            raise StateError(
                Rule.NOT_INITIALIZED, f"cannot send {method!r} in phase {self._life.phase.value}"
            )
        if method == _CANCELLED:
            self._send_cancel(message)
        elif method == "notifications/progress":
            params = message.params
            verdict = self._progress.report(params.progress_token, params.progress)
            if verdict is IGNORE:
                return b""
            if verdict is not None:
                assert isinstance(verdict, Rule)
                raise ProgressError(
                    verdict,
                    f"progress {params.progress!r} for token {params.progress_token!r}: "
                    f"{RULES[verdict].summary}",
                )
        elif method == "notifications/tasks/status":
            if message.params.status in TERMINAL_TASK_STATUSES:
                self._progress.task_finished(message.params.task_id)
        else:
            self._before_notification(message, method)
        return self._codec.encode(message)

    def _before_notification(self, message: Any, method: str) -> None:
        """Role-specific checks of other notifications (may raise)."""

    def _send_cancel(self, message: Any) -> None:
        request_id = message.params.request_id
        pending = self._pending
        record = pending.outgoing.get(request_id)
        if record is None:
            raise RequestIdError(
                Rule.UNKNOWN_RESPONSE_ID,
                f"no outstanding request of this side has id {request_id!r}",
            )
        if record.method == "initialize":
            raise StateError(Rule.CANCEL_INITIALIZE, "the initialize request cannot be cancelled")
        del pending.outgoing[request_id]
        pending.cancelled_out.add(request_id)
        if record.progress_token is not None:
            self._progress.expected_done(record.progress_token, cancelled=True)
        if record.log_level is not None:
            current = self._cancelled_log_level
            if current is None or record.log_level < current:
                self._cancelled_log_level = record.log_level
        self._subscriptions.closed(request_id)

    def _incoming_record(self, request_id: Any) -> IncomingRequest | None:
        record = self._pending.incoming.get(request_id)
        if record is None:
            if request_id in self._pending.cancelled_in:
                return None
            raise RequestIdError(
                Rule.UNKNOWN_RESPONSE_ID,
                f"no request of the peer with id {request_id!r} awaits an answer",
            )
        return record

    def _result_classes_of(self, method: str, task: bool) -> tuple[type, ...]:
        key = (method, task)
        classes = self._result_classes.get(key)
        if classes is None:
            classes = self._result_classes[key] = _classes(
                self._codec.result_type(method, task=task)
            )
        return classes

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
        result = response.result
        if not isinstance(result, self._result_classes_of(record.method, record.task)):
            raise RevisionError(
                Rule.INVALID_RESULT,
                f"{type(result).__name__} is not a result of {record.method} in revision "
                f"{self._codec.revision}",
            )
        response = self._before_result(record, response)
        data = self._codec.encode(response)
        del self._pending.incoming[response.id]
        token = record.progress_token
        if token is not None:
            task = getattr(result, "task", None) if record.task else None
            self._progress.report_done(token, task_id=getattr(task, "task_id", None))
        if (
            record.method in ("tasks/get", "tasks/cancel")
            and getattr(result, "status", None) in TERMINAL_TASK_STATUSES
        ):
            self._progress.task_finished(getattr(result, "task_id", ""))
        if record.method == _LISTEN:
            self._subscriptions.closed(record.id)
        return self._answer_batch(record, response, data)

    def _before_result(self, record: IncomingRequest, response: ResultResponse) -> ResultResponse:
        """Role-specific checks and changes of an outgoing result (may raise)."""
        return response

    def _send_error(self, response: ErrorResponse) -> bytes:
        if response.id is None:
            for batch in self._open_batches:
                if batch.null_owed:
                    batch.null_owed -= 1
                    batch.responses.append(response)
                    return self._flush_batch(batch)
            if not self._pending.null_owed:
                raise RequestIdError(
                    Rule.UNKNOWN_RESPONSE_ID,
                    "an error response with id null answers only an unreadable request "
                    "(send a violation's response)",
                )
            self._pending.null_owed -= 1
            return self._codec.encode(response)
        record = self._incoming_record(response.id)
        if record is None:
            return b""
        self._before_error(record, response)
        data = self._codec.encode(response)
        del self._pending.incoming[response.id]
        if record.progress_token is not None:
            self._progress.report_done(record.progress_token)
        if record.method == _LISTEN:
            self._subscriptions.closed(record.id)
        return self._answer_batch(record, response, data)

    def _before_error(self, record: IncomingRequest, response: ErrorResponse) -> None:
        """Role-specific bookkeeping of an outgoing error response."""

    def _answer_batch(self, record: IncomingRequest, response: Any, data: bytes) -> bytes:
        batch = record.batch
        if batch is None:
            return data
        batch.waiting.discard(record.id)
        batch.responses.append(response)
        return self._flush_batch(batch)

    def _flush_batch(self, batch: Batch) -> bytes:
        if not batch.complete:
            return b""
        if batch in self._open_batches:
            self._open_batches.remove(batch)
        if not batch.responses:
            return b""
        return self._codec.encode(batch.responses)

    def internal_error(
        self, request_id: RequestId, message: str = "Internal error", data: Any = UNSET
    ) -> bytes:
        """Answer a request whose handler failed with -32603."""
        return self.send(
            ErrorResponse(
                id=request_id,
                error=ErrorObject(code=int(ErrorCode.INTERNAL_ERROR), message=message, data=data),
            )
        )


_NEGOTIATING: Final = frozenset({"initialize", "server/discover"})


def _revision_of(cls: type) -> str:
    """``mcpspec.v2025_11_25.X`` -> ``"2025-11-25"``."""
    return cls.__module__.rpartition(".v")[2].replace("_", "-")


def _answerable(data: bytes, index: int | None) -> tuple[bool, RequestId | None]:
    """Whether a refused message is answered (a request, or something unreadable), and
    the id to answer with."""
    try:
        obj = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return True, None
    if index is not None:
        obj = obj[index] if isinstance(obj, list) and index < len(obj) else None
    if not isinstance(obj, dict):
        return True, None
    if "method" not in obj:
        if "result" in obj or "error" in obj:
            return False, None
        request_id = obj.get("id")
        return True, request_id if _is_id(request_id) else None
    if "id" not in obj:
        return False, None
    request_id = obj["id"]
    return True, request_id if _is_id(request_id) else None


# ==========================================================================================
# Server
# ==========================================================================================


class ServerSession(_Session):
    """The server side of one MCP connection, in either protocol model.

    ``revisions`` restricts the revisions accepted (default: all five); ``info`` is the
    server's identity (an ``Implementation`` of any revision, or a mapping with ``name``
    and ``version``); ``capabilities`` its capabilities (a ``ServerCapabilities`` or a
    mapping); ``instructions`` go into the initialize and discover results built by
    :meth:`initialize_result` and :meth:`discover_result`.

    The first valid request decides the model: ``initialize`` starts the handshake
    (the answer is the requested version when accepted, else the newest accepted
    handshake revision), a request carrying ``_meta`` protocolVersion starts the
    stateless model. A server that accepts only 2026-07-28 is stateless from the start.
    """

    _role = Role.SERVER

    def __init__(
        self,
        revisions: Iterable[str] | None = None,
        *,
        info: Any = None,
        capabilities: Any = None,
        instructions: str | None = None,
    ) -> None:
        accepted = accepted_revisions(revisions)
        handshake = [r for r in accepted if not is_stateless(r)]
        stateless = [r for r in accepted if is_stateless(r)]
        self._handshake_accepted = tuple(handshake)
        self._stateless_accepted = tuple(stateless)
        self._instructions = instructions
        self._answer_version: str | None = None
        self._initialize_id: RequestId | None = None
        self._client_capabilities_typed: Any = None
        if handshake:
            super().__init__(accepted, info, capabilities, Phase.IDLE, handshake[-1])
        else:
            super().__init__(accepted, info, capabilities, Phase.READY, stateless[-1])
            self._model = "stateless"
            self._negotiated = stateless[-1]
        if stateless:
            module = importlib.import_module(module_name(stateless[-1]))
            self._meta_reader: MetaReader | None = MetaReader(
                tuple(stateless), module.ClientCapabilities, module.Implementation
            )
        else:
            self._meta_reader = None
        self._hooks = {
            "initialize": self._on_initialize,
            _LISTEN: self._on_listen,
        }

    def _notification_handlers(self) -> dict[str, _Handler]:
        handlers = super()._notification_handlers()
        handlers["notifications/initialized"] = self._on_initialized
        return handlers

    # -- receiving ---------------------------------------------------------------------------

    def _receive_early(self, data: bytes) -> list[Event]:
        if self._life.phase is Phase.CLOSED:
            return super()._receive_early(data)
        # IDLE: the revision of this message is not known yet; peek at it.
        try:
            probe = PROBE_DECODER.decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            probe = None
        target = self._handshake_accepted[-1]
        if probe is not None:
            version = probe.meta_version
            if probe.method == "initialize":
                requested = probe.protocol_version
                target = (
                    negotiate_handshake(
                        requested if isinstance(requested, str) else "", self._handshake_accepted
                    )
                    or target
                )
            elif version is not None and self._stateless_accepted:
                target = (
                    version if version in self._stateless_accepted else self._stateless_accepted[-1]
                )
        if target != self._codec.revision:
            self._set_revision(target)
        return self._receive(data)

    def _check_meta(self, message: Any) -> RequestMeta | ProtocolViolation:
        reader = self._meta_reader
        assert reader is not None
        params = message.params
        checked = reader.read(params.meta)
        if not isinstance(checked, MetaProblem):
            return checked
        data = None
        if checked.rule is Rule.UNSUPPORTED_PROTOCOL_VERSION:
            data = {
                "supported": list(reversed(self._accepted)),
                "requested": params.meta.get(META_PROTOCOL_VERSION),
            }
        return self._violation(
            checked.rule,
            checked.reason,
            path=checked.path,
            request_id=message.id,
            method=message.method,
            answer=True,
            data=data,
        )

    def _on_initialize(self, message: Any) -> ProtocolViolation | None:
        if self._batch is not None:
            return self._violation(
                Rule.INITIALIZE_IN_BATCH,
                "initialize is never part of a batch",
                request_id=message.id,
                method="initialize",
                answer=True,
            )
        params = message.params
        self._answer_version = negotiate_handshake(
            params.protocol_version, self._handshake_accepted
        )
        self._initialize_id = message.id
        self._peer_caps = as_json(params.capabilities)
        self._client_capabilities_typed = params.capabilities
        self._peer_info = params.client_info
        self._life.fire(Trigger.RECEIVE_INITIALIZE)
        return None

    def _on_listen(self, message: Any) -> ProtocolViolation | None:
        self._subscriptions.opened(message.id, as_json(message.params.notifications))
        return None

    def _on_initialized(self, message: Any, data: bytes) -> list[Event]:
        if self._life.phase is not Phase.INITIALIZED:
            return [self._gate_violation(message.method, None)]
        self._life.fire(Trigger.RECEIVE_INITIALIZED)
        self._model = "handshake"
        self._negotiated = self._codec.revision
        return [
            NotificationReceived(notification=message, method=message.method),
            SessionReady(
                revision=self._codec.revision,
                model="handshake",
                peer_info=self._peer_info,
                peer_capabilities=self._client_capabilities_typed,
            ),
        ]

    # -- sending -------------------------------------------------------------------------------

    def initialize_result(self, *, instructions: str | None = None) -> Any:
        """The ``InitializeResult`` answering the ``initialize`` just received: the
        negotiated version, this server's capabilities, identity and instructions."""
        if self._life.phase is not Phase.INITIALIZING or self._answer_version is None:
            raise StateError(Rule.NOT_INITIALIZED, "no initialize request awaits an answer")
        module = self._module
        text = instructions if instructions is not None else self._instructions
        return module.InitializeResult(
            protocol_version=self._answer_version,
            capabilities=msgspec.convert(self._own_caps, module.ServerCapabilities),
            server_info=msgspec.convert(self._info_json, module.Implementation),
            instructions=UNSET if text is None else text,
        )

    def discover_result(
        self,
        *,
        instructions: str | None = None,
        ttl_ms: int = 0,
        cache_scope: Literal["private", "public"] = "private",
    ) -> Any:
        """The ``DiscoverResult`` (2026-07-28): every accepted revision, newest first,
        this server's capabilities and instructions."""
        if not self._stateless:
            raise RevisionError(
                Rule.METHOD_NOT_FOUND, "server/discover exists only in the stateless revision"
            )
        module = self._module
        text = instructions if instructions is not None else self._instructions
        return module.DiscoverResult(
            supported_versions=list(reversed(self._accepted)),
            capabilities=msgspec.convert(self._own_caps, module.ServerCapabilities),
            instructions=UNSET if text is None else text,
            ttl_ms=ttl_ms,
            cache_scope=cache_scope,
        )

    def answer(self, request_id: RequestId, result: Any) -> bytes:
        """``send(ResultResponse(id=request_id, result=result))``."""
        return self.send(ResultResponse(id=request_id, result=result))

    def unsupported_version(self, request_id: RequestId, requested: str) -> ErrorResponse:
        """The -32022 error for a request naming a version this server does not accept."""
        return ErrorResponse(
            id=request_id,
            error=ErrorObject(
                code=int(ErrorCode.UNSUPPORTED_PROTOCOL_VERSION),
                message=_ERROR_MESSAGES[ErrorCode.UNSUPPORTED_PROTOCOL_VERSION],
                data={"supported": list(reversed(self._accepted)), "requested": requested},
            ),
        )

    def missing_capability(self, request_id: RequestId, required: Any) -> ErrorResponse:
        """The -32021 error (2026-07-28) for a request that needs a client capability the
        request did not declare (``required``: ``ClientCapabilities`` or a mapping)."""
        return ErrorResponse(
            id=request_id,
            error=ErrorObject(
                code=int(ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY),
                message=_ERROR_MESSAGES[ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY],
                data={"requiredCapabilities": as_json(required)},
            ),
        )

    def input_responses(
        self, event: RequestReceived, methods: Mapping[str, str]
    ) -> dict[str, Any] | ProtocolViolation:
        """The typed ``inputResponses`` of a retried 2026-07-28 request, given the method
        of the input request behind each key (which the server knows from its
        ``requestState``). A missing, extra or ill-typed response gives a violation whose
        ``response`` answers the request."""
        raw = getattr(event.request.params, "input_responses", UNSET)
        raw = {} if raw is UNSET else raw
        problem = None
        if set(raw) != set(methods):
            problem = (
                f"input responses {sorted(raw)} do not answer input requests {sorted(methods)}"
            )
        out: dict[str, Any] = {}
        if problem is None:
            for key, method in methods.items():
                try:
                    out[key] = self._codec.decode_result(method, raw[key])
                except InvalidMessage as exc:
                    problem = f"inputResponses[{key!r}]: {exc.reason} (at {exc.path})"
                    break
        if problem is None:
            return out
        record = self._pending.incoming.get(event.request_id)
        if record is not None:
            record.rejected = True
        violation = self._violation(
            Rule.INPUT_RESPONSES_MISMATCH,
            problem,
            path="$.params.inputResponses",
            request_id=event.request_id,
            method=event.method,
        )
        if record is None:
            return violation
        return msgspec.structs.replace(
            violation, response=ErrorResponse(id=event.request_id, error=violation.error)
        )

    def _before_result(self, record: IncomingRequest, response: ResultResponse) -> ResultResponse:
        method = record.method
        result = response.result
        if method == "initialize":
            version = result.protocol_version
            if version != self._answer_version:
                raise NegotiationError(
                    Rule.UNSUPPORTED_VERSION,
                    f"the initialize answer is {self._answer_version!r} (the requested version "
                    f"when accepted, else the newest accepted); got {version!r}",
                )
            self._set_own_caps(as_json(result.capabilities))
            self._life.fire(Trigger.SEND_INITIALIZE_RESULT)
            return response
        if not self._stateless:
            return response
        if method == "server/discover":
            self._set_own_caps(as_json(result.capabilities))
        elif getattr(type(result), "result_type", None) == "input_required":
            self._check_input_required(record, result)
        # 2026-07-28: every result carries the server identity in _meta.
        meta: Any
        if isinstance(result, dict):
            meta = result.get("_meta")
            if not isinstance(meta, dict) or META_SERVER_INFO not in meta:
                meta = meta if isinstance(meta, dict) else {}
                result = {**result, "_meta": {**meta, META_SERVER_INFO: self._info_json}}
                response = ResultResponse(id=response.id, result=result)
        else:
            meta = getattr(result, "meta", UNSET)
            if meta is UNSET or META_SERVER_INFO not in meta:
                meta = {} if meta is UNSET else meta
                result = msgspec.structs.replace(
                    result, meta={**meta, META_SERVER_INFO: self._info_json}
                )
                response = ResultResponse(id=response.id, result=result)
        return response

    def _check_input_required(self, record: IncomingRequest, result: Any) -> None:
        requests = result.input_requests
        if requests is UNSET and result.request_state is UNSET:
            raise LocalProtocolError(
                Rule.INPUT_REQUIRED_EMPTY,
                "an InputRequiredResult carries inputRequests or requestState",
            )
        caps = record.capabilities or {}
        for key, request in ({} if requests is UNSET else requests).items():
            path = required_capability(request, CLIENT_PROVIDED, self._peer_defined_for_input)
            if path is not None and not has_capability(caps, path):
                raise CapabilityError(
                    Rule.CAPABILITY_NOT_DECLARED,
                    f"input request {key!r} ({request.method}) needs the client capability "
                    f"{'.'.join(path)}, which the request did not declare; answer with "
                    "session.missing_capability(...)",
                )

    @property
    def _peer_defined_for_input(self) -> frozenset[str]:
        return defined_capabilities(self._module.ClientCapabilities)

    def _before_error(self, record: IncomingRequest, response: ErrorResponse) -> None:
        if record.method == "initialize" and self._life.phase is Phase.INITIALIZING:
            self._life.fire(Trigger.SEND_INITIALIZE_ERROR)
            self._answer_version = None
            self._peer_caps = None
            self._peer_info = None

    def _before_notification(self, message: Any, method: str) -> None:
        if not self._stateless:
            return
        params: Any = getattr(message, "params", None)
        if method == "notifications/message":
            self._check_log(message.params.level)
        elif method == _ACKNOWLEDGED:
            meta = params.meta if params.meta is not UNSET else {}
            problem = self._subscriptions.acknowledge(
                meta.get(META_SUBSCRIPTION_ID), as_json(params.notifications)
            )
            if problem is not None:
                raise SubscriptionError(*problem)
        elif method in FILTER_FIELDS:
            meta = getattr(params, "meta", UNSET)
            meta = {} if meta is UNSET or meta is None else meta
            problem = self._subscriptions.check(method, meta.get(META_SUBSCRIPTION_ID), params)
            if problem is not None:
                raise SubscriptionError(*problem)

    def _check_log(self, level: str) -> None:
        levels = [r.log_level for r in self._pending.incoming.values() if r.log_level is not None]
        if not levels:
            raise SubscriptionError(
                Rule.LOG_LEVEL,
                "no request in flight set io.modelcontextprotocol/logLevel: "
                "notifications/message has nowhere to go",
            )
        if LEVELS[level] < min(levels):
            raise SubscriptionError(
                Rule.LOG_LEVEL, f"level {level!r} is below every requested log level"
            )

    def _send_cancel(self, message: Any) -> None:
        if not self._stateless:
            super()._send_cancel(message)
            return
        request_id = message.params.request_id
        record = self._pending.incoming.get(request_id)
        if record is None or record.method != _LISTEN:
            raise StateError(
                Rule.CANCEL_NOT_LISTEN,
                "in 2026-07-28 a server cancels only a subscriptions/listen request it serves",
            )
        del self._pending.incoming[request_id]
        self._subscriptions.closed(request_id)


# ==========================================================================================
# Client
# ==========================================================================================


class ClientSession(_Session):
    """The client side of one MCP connection, in either protocol model.

    ``mode`` is ``"auto"`` (probe ``server/discover``; fall back to ``initialize`` when
    the server answers -32601; on -32022 retry once with the newest mutually accepted
    revision), ``"legacy"`` (``initialize`` only), or one revision to pin.
    ``revisions`` restricts the revisions accepted; ``info`` and ``capabilities`` are
    the client's identity and capabilities (generated values of any revision, or
    mappings).

    Start with :meth:`start` (or send an ``initialize``/``server/discover`` request
    yourself); a client pinned to 2026-07-28 may send requests right away.
    """

    _role = Role.CLIENT

    def __init__(
        self,
        revisions: Iterable[str] | None = None,
        *,
        mode: ClientMode = "auto",
        info: Any = None,
        capabilities: Any = None,
    ) -> None:
        accepted = accepted_revisions(revisions)
        if mode in accepted_revisions(None) and revisions is None:
            accepted = (mode,)
        self._mode = mode
        kind, version = client_plan(mode, accepted)
        self._plan = kind
        self._offered: str | None = None
        self._probe_retried = False
        self._ready_sent = False
        phase = Phase.READY if kind == "stateless" else Phase.IDLE
        super().__init__(accepted, info, capabilities, phase, version)
        if kind == "stateless":
            self._model = "stateless"
            self._negotiated = version
        self._result_hooks = {"server/discover": self._on_discover_result}

    @property
    def mode(self) -> ClientMode:
        """The negotiation mode."""
        return self._mode

    def _notification_handlers(self) -> dict[str, _Handler]:
        handlers = super()._notification_handlers()
        handlers["notifications/message"] = self._on_log
        for method in FILTER_FIELDS:
            handlers[method] = self._on_subscription_note
        handlers[_ACKNOWLEDGED] = self._on_acknowledged
        return handlers

    # -- starting ---------------------------------------------------------------------------------

    def start(self) -> bytes:
        """The first message of the connection: the ``server/discover`` probe (``auto``
        with 2026-07-28 accepted, or pinned 2026-07-28) or ``initialize``."""
        if self._plan == "initialize":
            return self.send(self._initialize_request(self._codec.revision))
        return self.send(self._discover_request(self._codec.revision))

    def _initialize_request(self, version: str) -> Any:
        if version != self._codec.revision:
            self._set_revision(version)
        module = self._module
        return module.InitializeRequest(
            id=self.next_id(),
            params=module.InitializeRequestParams(
                protocol_version=version,
                capabilities=msgspec.convert(self._own_caps, module.ClientCapabilities),
                client_info=msgspec.convert(self._info_json, module.Implementation),
            ),
        )

    def _discover_request(self, version: str) -> Any:
        if version != self._codec.revision:
            self._set_revision(version)
        module = self._module
        return module.DiscoverRequest(id=self.next_id(), params=module.RequestParams())

    # -- sending -----------------------------------------------------------------------------------

    def send(self, message: Sendable, *, progress_token: int | str | None = None) -> bytes:
        """As :meth:`_Session.send`; before negotiation, an ``initialize`` or
        ``server/discover`` of any accepted revision also picks that revision."""
        method = getattr(type(message), "method", None)
        if method in _NEGOTIATING and self._life.phase in (Phase.IDLE, Phase.PROBING):
            revision = _revision_of(type(message))
            if revision in self._accepted and revision != self._codec.revision:
                self._set_revision(revision)
        return super().send(message, progress_token=progress_token)

    def _before_request(self, message: Any, method: str) -> None:
        if method == "initialize":
            version = message.params.protocol_version
            if version not in self._accepted or is_stateless(version):
                raise NegotiationError(
                    Rule.UNSUPPORTED_VERSION,
                    f"protocolVersion {version!r} is not an accepted handshake revision",
                )
            if version != self._codec.revision:
                raise RevisionError(
                    Rule.WRONG_REVISION,
                    f"an initialize offering {version} is a value of that revision's types",
                )
            if not self._life.can(Trigger.SEND_INITIALIZE):
                raise StateError(Rule.ALREADY_INITIALIZED, "initialize comes once")
        elif (
            method == "server/discover"
            and self._life.phase is Phase.IDLE
            and not self._life.can(Trigger.SEND_PROBE)
        ):
            raise StateError(Rule.NOT_INITIALIZED, "cannot probe now")

    def _after_request(self, message: Any, method: str) -> None:
        if method == "initialize":
            self._life.fire(Trigger.SEND_INITIALIZE)
            self._offered = message.params.protocol_version
            self._set_own_caps(as_json(message.params.capabilities))
            self._info_json = as_json(message.params.client_info)
        elif method == "server/discover" and self._life.phase is Phase.IDLE:
            self._life.fire(Trigger.SEND_PROBE)
            self._offered = self._codec.revision

    def _stamp(self, message: Any) -> tuple[Any, dict[str, Any] | None, int | None]:
        if not self._stateless:
            return message, None, None
        params = message.params
        meta: dict[str, Any] = params.meta
        version = meta.get(META_PROTOCOL_VERSION)
        if version is not None and version != self._codec.revision:
            raise NegotiationError(
                Rule.UNSUPPORTED_PROTOCOL_VERSION,
                f"_meta protocolVersion {version!r} is not the session's {self._codec.revision}",
            )
        level = meta.get(META_LOG_LEVEL)
        if level is not None and level not in LEVELS:
            raise LocalProtocolError(Rule.INVALID_REQUEST_META, f"not a logging level: {level!r}")
        if version is None or META_CLIENT_CAPABILITIES not in meta or META_CLIENT_INFO not in meta:
            meta = {
                META_PROTOCOL_VERSION: self._codec.revision,
                META_CLIENT_CAPABILITIES: self._own_caps,
                META_CLIENT_INFO: self._info_json,
                **meta,
            }
            message = msgspec.structs.replace(
                message, params=msgspec.structs.replace(params, meta=meta)
            )
        caps = as_json(meta[META_CLIENT_CAPABILITIES])
        return message, caps, None if level is None else LEVELS[level]

    def _before_notification(self, message: Any, method: str) -> None:
        if method == "notifications/initialized":
            if not self._life.can(Trigger.SEND_INITIALIZED):
                raise StateError(Rule.ALREADY_INITIALIZED, "notifications/initialized comes once")
            self._life.fire(Trigger.SEND_INITIALIZED)

    def retry_with_input(
        self,
        event: ResponseReceived,
        responses: Mapping[str, Any],
        *,
        request_id: RequestId | None = None,
    ) -> Any:
        """The request to send after an ``InputRequiredResult`` (2026-07-28): the
        original request with a new id, ``inputResponses`` (one typed result per input
        request, by key) and the server's ``requestState``."""
        result = event.result
        if not event.input_required:
            raise LocalProtocolError(
                Rule.INPUT_RESPONSES_MISMATCH, "the response is not an InputRequiredResult"
            )
        asked = {} if result.input_requests is UNSET else result.input_requests
        if set(asked) != set(responses):
            raise LocalProtocolError(
                Rule.INPUT_RESPONSES_MISMATCH,
                f"responses {sorted(responses)} do not answer input requests {sorted(asked)}",
            )
        raw: dict[str, msgspec.Raw] = {}
        for key, value in responses.items():
            method = asked[key].method
            if not isinstance(value, self._result_classes_of(method, False)):
                raise LocalProtocolError(
                    Rule.INPUT_RESPONSES_MISMATCH,
                    f"input response {key!r} answers {method}: not a {type(value).__name__}",
                )
            raw[key] = msgspec.Raw(self._codec.encode(value))
        original = event.request
        params = msgspec.structs.replace(
            original.params,
            input_responses=raw if raw else UNSET,
            request_state=result.request_state,
        )
        new_id = self.next_id() if request_id is None else request_id
        return msgspec.structs.replace(original, id=new_id, params=params)

    # -- receiving -------------------------------------------------------------------------

    def _special_result(self, record: OutgoingRequest, response: ResultResponse) -> list[Event]:
        if record.method == "initialize":
            return self._on_initialize_result(record, response)
        return self._typed_result(record, response)

    def _fail_negotiation(
        self,
        reason: str,
        answered: Sequence[str],
        events: list[Event],
        error: ErrorObject | None = None,
        rule: Rule = Rule.UNSUPPORTED_VERSION,
    ) -> list[Event]:
        supported = tuple(reversed(self._accepted))
        if error is None:
            error = ErrorObject(
                code=int(ErrorCode.UNSUPPORTED_PROTOCOL_VERSION),
                message=_ERROR_MESSAGES[ErrorCode.UNSUPPORTED_PROTOCOL_VERSION],
                data={"supported": list(supported), "requested": self._offered},
            )
        events.append(
            NegotiationFailed(
                rule=rule,
                offered=self._offered,
                answered=tuple(answered),
                supported=supported,
                reason=reason,
                error=error,
            )
        )
        self._life.fire(Trigger.CLOSE)
        return events

    def _on_initialize_result(
        self, record: OutgoingRequest, response: ResultResponse
    ) -> list[Event]:
        try:
            version = RESULT_VERSION_DECODER.decode(response.result).protocol_version
        except (msgspec.ValidationError, msgspec.DecodeError):
            version = None
        if not isinstance(version, str) or version not in self._accepted or is_stateless(version):
            return self._fail_negotiation(
                f"the server answered initialize with protocolVersion {version!r}, which this "
                "client does not accept",
                [version] if isinstance(version, str) else [],
                [],
            )
        if version != self._codec.revision:
            self._set_revision(version)
        try:
            result = self._codec.decode_result("initialize", response.result)
        except InvalidMessage as exc:
            violation = self._violation(
                Rule.INVALID_RESULT,
                exc.reason,
                path=exc.path,
                request_id=record.id,
                method="initialize",
            )
            return self._fail_negotiation(
                f"invalid initialize result: {exc.reason}",
                [version],
                [violation],
                error=violation.error,
                rule=Rule.INVALID_RESULT,
            )
        self._peer_caps = as_json(result.capabilities)
        self._peer_info = result.server_info
        self._life.fire(Trigger.RECEIVE_INITIALIZE_RESULT)
        self._model = "handshake"
        self._negotiated = version
        note = self._module.InitializedNotification()
        data = self.send(note)
        instructions = result.instructions
        return [
            ResponseReceived(
                request_id=record.id, method="initialize", result=result, request=record.request
            ),
            Outgoing(data=data, message=note),
            SessionReady(
                revision=version,
                model="handshake",
                peer_info=result.server_info,
                peer_capabilities=result.capabilities,
                instructions=None if instructions is UNSET else instructions,
            ),
        ]

    def _on_discover_result(
        self, record: OutgoingRequest, result: Any, events: list[Event]
    ) -> None:
        supported = result.supported_versions
        if self._life.phase is Phase.PROBING:
            version = newest_mutual(supported, self._accepted)
            if version is None:
                self._fail_negotiation(
                    f"the server supports {supported}, none of which this client accepts",
                    supported,
                    events,
                )
                return
            if not is_stateless(version):
                request = self._initialize_request(version)
                events.append(Outgoing(data=self.send(request), message=request))
                return
            if version != self._codec.revision:
                self._set_revision(version)
            self._life.fire(Trigger.PROBE_ANSWERED)
        elif not (self._stateless and self._life.phase is Phase.READY):
            return  # a discover result outside the stateless model teaches nothing
        self._peer_caps = as_json(result.capabilities)
        meta = result.meta if result.meta is not UNSET else {}
        info = meta.get(META_SERVER_INFO)
        if info is not None:
            try:
                self._peer_info = msgspec.convert(info, self._module.Implementation)
            except msgspec.ValidationError:
                self._peer_info = None
        if not self._ready_sent:
            self._model = "stateless"
            self._negotiated = self._codec.revision
            self._ready_sent = True
            events.append(
                SessionReady(
                    revision=self._codec.revision,
                    model="stateless",
                    peer_info=self._peer_info,
                    peer_capabilities=result.capabilities,
                    instructions=None if result.instructions is UNSET else result.instructions,
                )
            )

    def _on_error_hook(
        self, record: OutgoingRequest, error: ErrorObject, events: list[Event]
    ) -> None:
        if record.method == "initialize":
            self._fail_negotiation(
                f"the server refused initialize: {error.code} {error.message}",
                [],
                events,
                error=error,
                rule=Rule.METHOD_NOT_FOUND
                if error.code == ErrorCode.METHOD_NOT_FOUND
                else Rule.UNSUPPORTED_VERSION,
            )
            return
        if record.method != "server/discover" or self._life.phase is not Phase.PROBING:
            return
        handshake = [r for r in self._accepted if not is_stateless(r)]
        if error.code == ErrorCode.METHOD_NOT_FOUND:
            if not handshake:
                self._fail_negotiation(
                    "the server has no server/discover and this client has no handshake revision",
                    [],
                    events,
                    error=error,
                    rule=Rule.METHOD_NOT_FOUND,
                )
                return
            request = self._initialize_request(handshake[-1])
            events.append(Outgoing(data=self.send(request), message=request))
            return
        if error.code == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION:
            data = error.data if isinstance(error.data, dict) else {}
            theirs = data.get("supported")
            theirs = theirs if isinstance(theirs, list) else []
            version = newest_mutual(theirs, self._accepted)
            if version is None or self._probe_retried:
                self._fail_negotiation(
                    f"the server supports {theirs}; no retry possible",
                    [v for v in theirs if isinstance(v, str)],
                    events,
                    error=error,
                )
                return
            self._probe_retried = True
            if is_stateless(version):
                request = self._discover_request(version)
            else:
                request = self._initialize_request(version)
            events.append(Outgoing(data=self.send(request), message=request))
            return
        self._fail_negotiation(
            f"the server answered server/discover with error {error.code} {error.message}",
            [],
            events,
            error=error,
            rule=Rule.UNSUPPORTED_VERSION,
        )

    def _check_result(self, record: OutgoingRequest, result: Any) -> ProtocolViolation | None:
        if not self._stateless or getattr(type(result), "result_type", None) != "input_required":
            return None
        requests = result.input_requests
        if requests is UNSET and result.request_state is UNSET:
            return self._violation(
                Rule.INPUT_REQUIRED_EMPTY,
                "an InputRequiredResult carries inputRequests or requestState",
                path="$.result",
                request_id=record.id,
                method=record.method,
            )
        caps = record.capabilities or {}
        for key, request in ({} if requests is UNSET else requests).items():
            path = required_capability(request, CLIENT_PROVIDED, self._own_defined)
            if path is not None and not has_capability(caps, path):
                return self._violation(
                    Rule.CAPABILITY_NOT_DECLARED,
                    f"input request {key!r} ({request.method}) needs the {'.'.join(path)} "
                    "capability, which the request did not declare",
                    path=f"$.result.inputRequests[{key!r}]",
                    request_id=record.id,
                    method=record.method,
                )
        return None

    def _on_log(self, message: Any, data: bytes) -> list[Event]:
        problem = self._notification_gate(message)
        if problem is not None:
            return [problem]
        if self._stateless:
            levels = [
                r.log_level for r in self._pending.outgoing.values() if r.log_level is not None
            ]
            if self._cancelled_log_level is not None:
                # A message may have crossed the cancellation of the request it is for.
                levels.append(self._cancelled_log_level)
            level = message.params.level
            if not levels or LEVELS[level] < min(levels):
                return [
                    self._violation(
                        Rule.LOG_LEVEL,
                        "no request in flight asked for log messages"
                        if not levels
                        else f"level {level!r} is below every requested log level",
                        path="$.params.level",
                        method=message.method,
                    )
                ]
        return [NotificationReceived(notification=message, method=message.method)]

    def _on_acknowledged(self, message: Any, data: bytes) -> list[Event]:
        gate = self._notification_gate(message)
        if gate is not None:
            return [gate]
        params = message.params
        meta = params.meta if params.meta is not UNSET else {}
        problem = self._subscriptions.acknowledge(
            meta.get(META_SUBSCRIPTION_ID), as_json(params.notifications)
        )
        if problem is not None:
            if meta.get(META_SUBSCRIPTION_ID) in self._pending.cancelled_out:
                return []  # crossed this side's cancellation of the subscription
            return [self._violation(problem[0], problem[1], path="$.params", method=message.method)]
        return [NotificationReceived(notification=message, method=message.method)]

    def _on_subscription_note(self, message: Any, data: bytes) -> list[Event]:
        problem = self._notification_gate(message)
        if problem is not None:
            return [problem]
        if self._stateless:
            params = message.params
            meta = getattr(params, "meta", UNSET)
            meta = {} if meta is UNSET or meta is None else meta
            found = self._subscriptions.check(
                message.method, meta.get(META_SUBSCRIPTION_ID), params
            )
            if found is not None:
                if meta.get(META_SUBSCRIPTION_ID) in self._pending.cancelled_out:
                    return []  # crossed this side's cancellation of the subscription
                return [
                    self._violation(
                        found[0], found[1], path="$.params._meta", method=message.method
                    )
                ]
        return [NotificationReceived(notification=message, method=message.method)]
