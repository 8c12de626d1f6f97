"""The server side of one MCP connection: :class:`ServerSession`.

What only a server does is negotiate as a server (:class:`ServerNegotiation`): it picks
the protocol model from the first message (and, in the handshake, the revision from the
version the client requests), takes ``initialize`` and ``notifications/initialized``,
and checks the results it answers ``initialize`` and ``server/discover`` with. The rest
(the per-request ``_meta`` of the stateless model, the server identity on its results,
log levels and subscriptions) is the same :class:`~mcpspec.runtime.session.core.Session` as a
client's, told by the server's role data, the protocol model and the rule table.
:class:`ServerSession` adds the public methods that build a server's answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

import msgspec
from msgspec import UNSET, Raw

from ..codec import DECODE_FAILURES
from ..envelope import ErrorObject, ErrorResponse, RequestId, ResultResponse
from ..errors import ErrorCode, InvalidMessage
from ..extensions import known_extensions
from .capabilities import as_json
from .core import Session
from .events import Event, NotificationReceived, ProtocolViolation, RequestReceived, SessionReady
from .limits import Limits
from .misuse import NegotiationError, RevisionError, StateError
from .pending import IncomingRequest, OutgoingRequest
from .rules import Rule
from .state import Phase, Role, Trigger
from .stateless import RequestMeta
from .version_negotiation import (
    HANDSHAKE_REVISIONS,
    PROBE_DECODER,
    STATELESS_REVISIONS,
    accepted_revisions,
    negotiate_handshake,
)
from .violations import error_object

if TYPE_CHECKING:
    from .inbound import Handler, Receiver

__all__ = ["ServerNegotiation", "ServerSession"]


#: Requests whose answer moves a server's lifecycle on (and names the version).
_MOVED_BY_ANSWER: Final = frozenset({"initialize"})


class ServerNegotiation:
    """How a server negotiates (see :class:`~.negotiation_part.Negotiation`)."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self._terms = terms = session._terms
        self._life = session._life
        accepted = terms.accepted
        self._handshake_accepted = tuple(r for r in accepted if r in HANDSHAKE_REVISIONS)
        self._stateless_accepted = tuple(r for r in accepted if r in STATELESS_REVISIONS)
        #: The version the initialize result must name, once initialize arrived.
        self.answer_version: str | None = None
        #: The id of the initialize being negotiated (a second one is refused alone).
        self._initialize_id: RequestId | None = None

    # -- receiving ----------------------------------------------------------------------

    def handlers(self, receiver: Receiver) -> dict[str, Handler]:
        """What takes in ``initialize`` and ``notifications/initialized`` once they
        passed the rule table (which judges that each comes once, in order: the
        lifecycle's moves)."""
        take_request = receiver.take_request

        def on_initialize(message: Any) -> list[Event]:
            events = take_request(message)
            if isinstance(events[0], RequestReceived):
                self._initialize_id = message.id
                self._initialize_received(message.params)
            return events

        return {
            "initialize": on_initialize,
            "notifications/initialized": self._on_initialized,
        }

    def _initialize_received(self, params: Any) -> None:
        terms = self._terms
        self.answer_version = negotiate_handshake(params.protocol_version, self._handshake_accepted)
        terms.peer_caps = params.capabilities
        terms.peer_info = params.client_info
        self._life.fire(Trigger.RECEIVE_INITIALIZE)

    def _on_initialized(self, message: Any) -> list[Event]:
        self._life.fire(Trigger.RECEIVE_INITIALIZED)
        terms = self._terms
        terms.agree()
        return [
            NotificationReceived(notification=message, method=message.method),
            SessionReady(
                revision=terms.codec.revision,
                model="handshake",
                peer_info=terms.peer_info,
                peer_capabilities=terms.peer_capabilities,
            ),
        ]

    def first_revision(self, data: bytes) -> str | None:
        """The handshake revision an ``initialize`` negotiates, the stateless revision
        a request's ``_meta`` names (or the newest), else the newest handshake
        revision."""
        target = self._handshake_accepted[-1] if self._handshake_accepted else None
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

    def ready_by_request(self, checked: RequestMeta) -> SessionReady | None:
        """The first valid stateless request: the session is ready."""
        if self._life.phase is Phase.IDLE:
            self._life.fire(Trigger.RECEIVE_STATELESS_REQUEST)
        terms = self._terms
        terms.ready_emitted = True
        terms.agree()
        return SessionReady(
            revision=terms.codec.revision,
            model="stateless",
            peer_info=checked.client_info,
            peer_capabilities=checked.capabilities,
        )

    def initialize_answered(self, record: OutgoingRequest, response: ResultResponse) -> list[Event]:
        raise AssertionError("a server sends no initialize")  # pragma: no cover

    def result_received(self, record: OutgoingRequest, result: Any, events: list[Event]) -> None:
        """Nothing a server sends negotiates."""

    def result_refused(self, record: OutgoingRequest, raw: Raw | None, events: list[Event]) -> None:
        """Nothing a server sends negotiates."""

    def error_received(
        self, record: OutgoingRequest, error: ErrorObject, events: list[Event]
    ) -> None:
        """Nothing a server sends negotiates."""

    def unreadable_request(self) -> RequestId | None:
        return None

    # -- sending ------------------------------------------------------------------------

    def sending(self, message: Any, method: str) -> None:
        """A server sends nothing that negotiates (its table has no such method)."""

    def sent(self, message: Any, method: str) -> None:
        """A server sends nothing that negotiates."""

    def answering(self, record: IncomingRequest, result: Any) -> None:
        """The initialize and discover results declare this server's capabilities; the
        initialize result names the version negotiated, and moves the lifecycle on."""
        moves = record.method in _MOVED_BY_ANSWER
        if moves and result.protocol_version != self.answer_version:
            raise NegotiationError(
                Rule.UNSUPPORTED_VERSION,
                f"the initialize answer is {self.answer_version!r} (the requested version "
                f"when accepted, else the newest accepted); got {result.protocol_version!r}",
            )
        self._session._declare(as_json(result.capabilities))
        if moves:
            self._life.fire(Trigger.SEND_INITIALIZE_RESULT)

    def refusing(self, record: IncomingRequest) -> None:
        """The initialize being negotiated refused: the client may try again. (A
        refused second initialize leaves the first one's handshake as it is.)"""
        if self._life.phase is Phase.INITIALIZING and record.id == self._initialize_id:
            self._life.fire(Trigger.SEND_INITIALIZE_ERROR)
            self.answer_version = None
            self._terms.peer_caps = None
            self._terms.peer_info = None


class ServerSession(Session):
    """The server side of one MCP connection, in either protocol model.

    ``revisions`` restricts the revisions accepted (default: all five); ``info`` is the
    server's identity (an ``Implementation`` of any revision, or a mapping with ``name``
    and ``version``); ``capabilities`` its capabilities (a ``ServerCapabilities`` or a
    mapping); ``instructions`` go into the initialize and discover results built by
    :meth:`initialize_result` and :meth:`discover_result`; ``limits`` bound what the
    client can make the session hold (:class:`~mcpspec.runtime.session.limits.Limits`; the
    defaults when ``None``); ``extensions`` the protocol extensions it speaks
    (:mod:`mcpspec.runtime.extensions`: their methods join those of the revision they
    are for).

    The first valid request decides the model: ``initialize`` starts the handshake
    (the answer is the requested version when accepted, else the newest accepted
    handshake revision), a request carrying ``_meta`` protocolVersion starts the
    stateless model. A server that accepts only 2026-07-28 is stateless from the start.
    """

    def __init__(
        self,
        revisions: Iterable[str] | None = None,
        *,
        info: Any = None,
        capabilities: Any = None,
        instructions: str | None = None,
        limits: Limits | None = None,
        extensions: Iterable[str] = (),
    ) -> None:
        accepted = accepted_revisions(revisions)
        handshake = [r for r in accepted if r in HANDSHAKE_REVISIONS]
        self._instructions = instructions
        self._negotiating: ServerNegotiation

        def negotiator(session: Session) -> ServerNegotiation:
            self._negotiating = ServerNegotiation(session)
            return self._negotiating

        phase, revision = (Phase.IDLE, handshake[-1]) if handshake else (Phase.READY, accepted[-1])
        super().__init__(
            Role.SERVER,
            accepted,
            info,
            capabilities,
            phase,
            revision,
            limits,
            negotiator,
            known_extensions(extensions),
        )
        if not handshake:
            self._terms.agree()

    # -- building answers ----------------------------------------------------------------------

    def initialize_result(self, *, instructions: str | None = None) -> Any:
        """The ``InitializeResult`` answering the ``initialize`` just received: the
        negotiated version, this server's capabilities, identity and instructions."""
        answer_version = self._negotiating.answer_version
        if self._life.phase is not Phase.INITIALIZING or answer_version is None:
            raise StateError(Rule.NOT_INITIALIZED, "no initialize request awaits an answer")
        module = self._terms.module
        text = instructions if instructions is not None else self._instructions
        return module.InitializeResult(
            protocol_version=answer_version,
            capabilities=msgspec.convert(self._terms.own_caps, module.ServerCapabilities),
            server_info=msgspec.convert(self._terms.info_json, module.Implementation),
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
        if "server/discover" not in self._terms.peer_requests:
            raise RevisionError(
                Rule.METHOD_NOT_FOUND, "server/discover exists only in the stateless revision"
            )
        module = self._terms.module
        text = instructions if instructions is not None else self._instructions
        return module.DiscoverResult(
            supported_versions=list(reversed(self._terms.accepted)),
            capabilities=msgspec.convert(self._terms.own_caps, module.ServerCapabilities),
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
                {"supported": list(reversed(self._terms.accepted)), "requested": requested},
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
                    out[key] = self._terms.codec.decode_result(method, raw[key])
                except InvalidMessage as exc:
                    problem = f"inputResponses[{key!r}]: {exc.reason} (at {exc.path})"
                    break
        if problem is None:
            return out
        record = self._pending.incoming.get(event.request_id)
        if record is not None:
            record.rejected = True
        violation = self._violations.violation(
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
