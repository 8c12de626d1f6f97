"""The server side of one MCP connection: :class:`ServerSession`.

What only a server does: it picks the protocol model from the first message (and, in
the handshake, the revision from the version the client requests); answers
``initialize`` and ``server/discover`` with results it builds; in the stateless model it
checks the ``_meta`` of every request, stamps its identity on every result, keeps
``notifications/message`` to the log levels requests asked for, and serves
``subscriptions/listen``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import msgspec
from msgspec import UNSET

from mcpspec import module_name

from .capabilities import as_json
from .checks import cancel_problem, log_problem, misuse
from .codec import DECODE_FAILURES
from .contract import RESULT_INPUT_REQUIRED
from .core import error_object
from .envelope import ErrorResponse, RequestId, ResultResponse
from .errors import ErrorCode, InvalidMessage, clip
from .events import Event, NotificationReceived, ProtocolViolation, RequestReceived, SessionReady
from .inbound import Handler, Inbound, RequestHandler
from .limits import Limits
from .misuse import (
    CapabilityError,
    LocalProtocolError,
    NegotiationError,
    RevisionError,
    StateError,
    SubscriptionError,
)
from .negotiation import (
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    PROBE_DECODER,
    accepted_revisions,
    is_stateless,
    negotiate_handshake,
)
from .outbound import Outbound
from .pending import IncomingRequest
from .rules import Rule
from .state import Phase, Role, Trigger
from .stateless import (
    ACKNOWLEDGED,
    FILTER_FIELDS,
    LEVELS,
    LISTEN,
    MetaReader,
    Problem,
    RequestMeta,
    input_required_problem,
)

__all__ = ["ServerSession"]


class ServerSession(Inbound, Outbound):
    """The server side of one MCP connection, in either protocol model.

    ``revisions`` restricts the revisions accepted (default: all five); ``info`` is the
    server's identity (an ``Implementation`` of any revision, or a mapping with ``name``
    and ``version``); ``capabilities`` its capabilities (a ``ServerCapabilities`` or a
    mapping); ``instructions`` go into the initialize and discover results built by
    :meth:`initialize_result` and :meth:`discover_result`; ``limits`` bound what the
    client can make the session hold (:class:`~mcpspec.runtime.limits.Limits`; the
    defaults when ``None``).

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
        limits: Limits | None = None,
    ) -> None:
        accepted = accepted_revisions(revisions)
        handshake = tuple(r for r in accepted if not is_stateless(r))
        stateless = tuple(r for r in accepted if is_stateless(r))
        self._handshake_accepted = handshake
        self._stateless_accepted = stateless
        self._instructions = instructions
        # Before the dispatch table is built (in ``super().__init__``), which binds it.
        self._meta_reader: MetaReader | None = None
        if stateless:
            module = importlib.import_module(module_name(stateless[-1]))
            self._meta_reader = MetaReader(
                stateless, module.ClientCapabilities, module.Implementation
            )
        #: The version the initialize result must name, once initialize arrived.
        self._answer_version: str | None = None
        self._client_capabilities_typed: Any = None
        if handshake:
            super().__init__(accepted, info, capabilities, Phase.IDLE, handshake[-1], limits)
        else:
            super().__init__(accepted, info, capabilities, Phase.READY, stateless[-1], limits)
            self._ready("stateless")

    # -- the dispatch table ---------------------------------------------------------------------

    def _request_handler(self, cls: type) -> Handler:
        if not self._per_request_meta:
            return super()._request_handler(cls)
        return self._stateless_handler(cls, self._accept_handler(cls))

    def _request_handlers(self) -> dict[str, Handler]:
        return {"initialize": self._on_initialize_request, LISTEN: self._on_listen_request}

    def _notification_handlers(self) -> dict[str, Handler]:
        handlers = super()._notification_handlers()
        handlers["notifications/initialized"] = self._on_initialized
        return handlers

    # -- receiving ---------------------------------------------------------------------------------

    def _receive_gated(self, data: bytes) -> list[Event]:
        if self._life.phase is Phase.IDLE:
            # The revision of the first message is not known yet: peek at it.
            target = self._revision_of_first(data)
            if target != self._codec.revision:
                self._set_revision(target)
        return super()._receive_gated(data)

    def _revision_of_first(self, data: bytes) -> str:
        """The revision to read the first message with: the handshake revision an
        ``initialize`` negotiates, the stateless revision its ``_meta`` names (or the
        newest), else the newest handshake revision."""
        target = self._handshake_accepted[-1]
        try:
            probe = PROBE_DECODER.decode(data)
        except DECODE_FAILURES:
            return target
        version = probe.meta_version
        if probe.method == "initialize":
            requested = probe.protocol_version
            return (
                negotiate_handshake(
                    requested if isinstance(requested, str) else "", self._handshake_accepted
                )
                or target
            )
        if version is not None and self._stateless_accepted:
            return version if version in self._stateless_accepted else self._stateless_accepted[-1]
        return target

    def _on_initialize_request(self, message: Any) -> list[Event]:
        if message.id in self._incoming:
            return [self._duplicate(message)]
        if self._life.phase is not Phase.IDLE:
            return [self._gate_violation("initialize", message.id)]
        events = self._on_request(message)
        if isinstance(events[0], RequestReceived):
            params = message.params
            self._answer_version = negotiate_handshake(
                params.protocol_version, self._handshake_accepted
            )
            self._peer_caps = as_json(params.capabilities)
            self._client_capabilities_typed = params.capabilities
            self._peer_info = params.client_info
            self._life.fire(Trigger.RECEIVE_INITIALIZE)
        return events

    def _on_initialized(self, message: Any) -> list[Event]:
        if self._life.phase is not Phase.INITIALIZED:
            return [self._gate_violation(message.method, None)]
        self._life.fire(Trigger.RECEIVE_INITIALIZED)
        self._ready("handshake")
        return [
            NotificationReceived(notification=message, method=message.method),
            SessionReady(
                revision=self._codec.revision,
                model="handshake",
                peer_info=self._peer_info,
                peer_capabilities=self._client_capabilities_typed,
            ),
        ]

    def _stateless_handler(self, cls: type, accept: RequestHandler) -> Handler:
        """The handler of requests of ``cls`` in the stateless model: their ``_meta``
        checked first; ``accept`` takes them in once it passed. What does not change per
        message is bound once, here."""
        incoming = self._incoming
        reader = self._meta_reader
        assert reader is not None
        read = reader.read

        def on_stateless_request(message: Any) -> list[Event]:
            if message.id in incoming:
                return [self._duplicate(message)]
            meta = message.params.meta
            checked = read(meta)
            if not isinstance(checked, RequestMeta):
                return [self._meta_violation(message, meta, checked)]
            ready = None if self._ready_emitted else self._stateless_ready(checked)
            path = self._refused.get(cls)
            events: list[Event] = (
                [self._capability_violation(message, path)]
                if path is not None
                else accept(message, checked)
            )
            if ready is not None:
                events.insert(0, ready)
            return events

        return on_stateless_request

    def _on_listen_request(self, message: Any) -> list[Event]:
        events = self._stateless_handler(message.__class__, self._on_request)(message)
        if isinstance(events[-1], RequestReceived):
            self._subscriptions.opened(message.id, as_json(message.params.notifications))
        return events

    def _stateless_ready(self, checked: RequestMeta) -> SessionReady:
        """The first valid stateless request: the session is ready."""
        if self._life.phase is Phase.IDLE:
            self._life.fire(Trigger.RECEIVE_STATELESS_REQUEST)
        self._ready_emitted = True
        self._ready("stateless")
        return SessionReady(
            revision=self._codec.revision,
            model="stateless",
            peer_info=checked.client_info,
            peer_capabilities=checked.capabilities,
        )

    def _meta_violation(
        self, message: Any, meta: dict[str, Any], problem: Problem
    ) -> ProtocolViolation:
        """The violation of a request whose ``_meta`` breaks ``problem.rule``."""
        data = None
        if problem.rule is Rule.UNSUPPORTED_PROTOCOL_VERSION:
            requested = meta.get(META_PROTOCOL_VERSION)  # a string: checked already
            data = {
                "supported": list(reversed(self._accepted)),
                "requested": clip(requested) if isinstance(requested, str) else None,
            }
        return self._refuse(message, problem.rule, problem.reason, problem.path, data)

    # -- building answers ----------------------------------------------------------------------

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
            error=error_object(
                ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
                {"supported": list(reversed(self._accepted)), "requested": requested},
            ),
        )

    def missing_capability(self, request_id: RequestId, required: Any) -> ErrorResponse:
        """The -32021 error (2026-07-28) for a request that needs a client capability the
        request did not declare (``required``: ``ClientCapabilities`` or a mapping)."""
        return ErrorResponse(
            id=request_id,
            error=error_object(
                ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
                {"requiredCapabilities": as_json(required)},
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
        record = self._incoming.get(event.request_id)
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

    # -- sending -------------------------------------------------------------------------------

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
        elif getattr(type(result), "result_type", None) == RESULT_INPUT_REQUIRED:
            problem = input_required_problem(result, record.capabilities, self._peer_defined)
            if problem is not None:
                error = (
                    CapabilityError
                    if problem.rule is Rule.CAPABILITY_NOT_DECLARED
                    else LocalProtocolError
                )
                hint = (
                    "; answer with session.missing_capability(...)"
                    if error is CapabilityError
                    else ""
                )
                raise error(problem.rule, problem.reason + hint)
        # 2026-07-28: every result carries the server identity in _meta.
        return ResultResponse(id=response.id, result=self._with_identity(result))

    def _with_identity(self, result: Any) -> Any:
        """``result`` with this server's identity in ``_meta`` (unless it has one)."""
        is_dict = isinstance(result, dict)
        meta = result.get("_meta") if is_dict else getattr(result, "meta", UNSET)
        if not isinstance(meta, dict):
            meta = {}
        elif META_SERVER_INFO in meta:
            return result
        meta = {**meta, META_SERVER_INFO: self._info_json}
        if is_dict:
            return {**result, "_meta": meta}
        return msgspec.structs.replace(result, meta=meta)

    def _before_error(self, record: IncomingRequest, response: ErrorResponse) -> None:
        if record.method == "initialize" and self._life.phase is Phase.INITIALIZING:
            self._life.fire(Trigger.SEND_INITIALIZE_ERROR)
            self._answer_version = None
            self._peer_caps = None
            self._peer_info = None

    def _before_notification(self, message: Any, method: str) -> None:
        if not self._stateless:
            return
        if method == "notifications/message":
            self._check_log(message.params.level)
        elif method == ACKNOWLEDGED or method in FILTER_FIELDS:
            problem = self._subscriptions.verify(method, message.params)
            if problem is not None:
                raise SubscriptionError(problem.rule, problem.reason)

    def _check_log(self, level: str) -> None:
        levels = [r.log_level for r in self._incoming.values() if r.log_level is not None]
        problem = log_problem(level, LEVELS[level], levels)
        if problem is not None:
            raise misuse(problem)

    def _send_cancel(self, message: Any) -> None:
        if not self._stateless:
            super()._send_cancel(message)
            return
        request_id = message.params.request_id
        record = self._incoming.get(request_id)
        problem = cancel_problem(
            None if record is None else record.method, stateless=True, by_server=True
        )
        if problem is not None:
            raise misuse(problem)
        assert record is not None
        del self._incoming[request_id]
        self._subscriptions.closed(request_id)
