"""The client side of one MCP connection: :class:`ClientSession`.

What only a client does is negotiate as a client (:class:`ClientNegotiation`): it opens
the connection (``initialize``, or the ``server/discover`` probe of ``auto`` mode),
negotiates from the answer (falling back to ``initialize`` on -32601 or any error an
older server answers, retrying once on -32022; an answer it cannot use fails
negotiation), and hands over what negotiation makes it write as
:class:`~mcpspec.runtime.session.events.Outgoing` events. The rest (the ``_meta`` of stateless
requests, log levels and subscriptions) is the same
:class:`~mcpspec.runtime.session.core.Session` as a server's, told by the client's role data,
the protocol model and the rule table. :class:`ClientSession` adds the public methods
that open a connection and retry a request that needed input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import msgspec
from msgspec import UNSET, Raw

from ..codec import DECODE_FAILURES
from ..declared import ProtocolModel
from ..envelope import ErrorObject, RequestId, ResultResponse
from ..errors import ErrorCode, InvalidMessage
from ..extensions import known_extensions
from .capabilities import as_json
from .core import Session
from .events import (
    Event,
    NegotiationFailed,
    Outgoing,
    ProtocolViolation,
    ResponseReceived,
    SessionReady,
)
from .kept import Kept
from .limits import Limits
from .misuse import LocalProtocolError, NegotiationError, RevisionError, StateError
from .pending import IncomingRequest, OutgoingRequest
from .rules import Rule
from .state import Phase, Role, Trigger
from .stateless import RequestMeta
from .version_negotiation import (
    HANDSHAKE_REVISIONS,
    META_SERVER_INFO,
    RESULT_VERSION_DECODER,
    STATELESS_REVISIONS,
    ClientMode,
    accepted_revisions,
    client_plan,
    newest_mutual,
)
from .violations import error_object

if TYPE_CHECKING:
    from .inbound import Handler, Receiver

__all__ = ["ClientNegotiation", "ClientSession"]

#: Errors with which a 2026-07-28 server refuses a probe it read (-32022 is retried).
_MODERN_REFUSALS = frozenset(
    {ErrorCode.HEADER_MISMATCH, ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY}
)


class ClientNegotiation:
    """How a client negotiates (see :class:`~.negotiation_part.Negotiation`)."""

    def __init__(self, session: Session, plan: str) -> None:
        self._session = session
        self._terms = session._terms
        self._life = session._life
        self._outgoing = session._pending.outgoing
        #: How the client opens: ``"probe"``, ``"initialize"`` or ``"stateless"``.
        self.plan = plan
        #: The version this client offered (initialize) or probed with.
        self._offered: str | None = None
        self._probe_retried = False
        #: The id of the ``server/discover`` that ``start`` sent, if it sent one.
        self.opening: RequestId | None = None
        #: The server identity of the last discover result (JSON): converted again only
        #: when it changes (kept within a small multiple of its size).
        self._discovered_info: Kept[Any] | None = None

    # -- the requests that negotiate ---------------------------------------------------------

    def initialize_request(self, version: str) -> Any:
        """An ``initialize`` offering ``version`` (switching to that revision)."""
        terms = self._terms
        if version != terms.codec.revision:
            self._session._use_revision(version)
        module = terms.module
        return module.InitializeRequest(
            id=self._session.next_id(),
            params=module.InitializeRequestParams(
                protocol_version=version,
                capabilities=msgspec.convert(terms.own_caps, module.ClientCapabilities),
                client_info=msgspec.convert(terms.info_json, module.Implementation),
            ),
        )

    def discover_request(self, version: str) -> Any:
        """A ``server/discover`` of ``version`` (switching to that revision)."""
        if version != self._terms.codec.revision:
            self._session._use_revision(version)
        module = self._terms.module
        return module.DiscoverRequest(id=self._session.next_id(), params=module.RequestParams())

    def _send_own(self, request: Any, events: list[Event]) -> None:
        """Send a request negotiation calls for, handing its bytes over as an event."""
        events.append(Outgoing(data=self._session.send(request), message=request))

    # -- sending ------------------------------------------------------------------------

    def sending(self, message: Any, method: str) -> None:
        """Before a message that negotiates is recorded (see :data:`_SENDING`)."""
        check = _SENDING.get(method)
        if check is not None:
            check(self, message)

    def _sending_initialize(self, message: Any) -> None:
        """An initialize offers an accepted handshake revision, in its types (the rule
        table judged it may come now)."""
        version = message.params.protocol_version
        if version not in self._terms.accepted or version not in HANDSHAKE_REVISIONS:
            raise NegotiationError(
                Rule.UNSUPPORTED_VERSION,
                f"protocolVersion {version!r} is not an accepted handshake revision",
            )
        if version != self._terms.codec.revision:
            raise RevisionError(
                Rule.WRONG_REVISION,
                f"an initialize offering {version} is a value of that revision's types",
            )

    def _sending_discover(self, message: Any) -> None:
        life = self._life
        if life.phase is Phase.IDLE and not life.can(Trigger.SEND_PROBE):
            raise StateError(Rule.NOT_INITIALIZED, "cannot probe now")

    def _sending_initialized(self, message: Any) -> None:
        """The rule table judged the move legal: it is made."""
        self._life.fire(Trigger.SEND_INITIALIZED)

    def sent(self, message: Any, method: str) -> None:
        """After a request that negotiates was recorded (see :data:`_SENT`)."""
        record = _SENT.get(method)
        if record is not None:
            record(self, message)

    def _sent_initialize(self, message: Any) -> None:
        self._life.fire(Trigger.SEND_INITIALIZE)
        self._offered = message.params.protocol_version
        self._terms.info_json = as_json(message.params.client_info)
        self._session._declare(as_json(message.params.capabilities))

    def _sent_discover(self, message: Any) -> None:
        if self._life.phase is Phase.IDLE:
            self._life.fire(Trigger.SEND_PROBE)
            self._offered = self._terms.codec.revision

    def answering(self, record: IncomingRequest, result: Any) -> None:
        """A client answers nothing that negotiates (its peer sends no such request)."""

    def refusing(self, record: IncomingRequest) -> None:
        """A client answers nothing that negotiates."""

    # -- receiving ----------------------------------------------------------------------

    def handlers(self, receiver: Receiver) -> dict[str, Handler]:
        """A server sends nothing that negotiates."""
        return {}

    def first_revision(self, data: bytes) -> str | None:
        """A client reads with the revision it opened with."""
        return None

    def ready_by_request(self, checked: RequestMeta) -> SessionReady | None:
        """A client reads no request's ``_meta``."""
        return None

    def _fail(
        self,
        reason: str,
        answered: Sequence[str],
        events: list[Event],
        error: ErrorObject | None = None,
        rule: Rule = Rule.UNSUPPORTED_VERSION,
    ) -> list[Event]:
        """No revision both sides accept: report it and close."""
        supported = tuple(reversed(self._terms.accepted))
        if error is None:
            error = error_object(
                ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
                {"supported": list(supported), "requested": self._offered},
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

    def initialize_answered(self, record: OutgoingRequest, response: ResultResponse) -> list[Event]:
        terms = self._terms
        try:
            version = RESULT_VERSION_DECODER.decode(response.result).protocol_version
        except DECODE_FAILURES:
            version = None
        if (
            not isinstance(version, str)
            or version not in terms.accepted
            or version not in HANDSHAKE_REVISIONS
        ):
            return self._fail(
                f"the server answered initialize with protocolVersion {version!r}, which this "
                "client does not accept",
                [version] if isinstance(version, str) else [],
                [],
            )
        if version != terms.codec.revision:
            self._session._use_revision(version)
        try:
            result = terms.codec.decode_result("initialize", response.result)
        except InvalidMessage as exc:
            violation = self._session._violations.invalid_result(record, exc)
            return self._fail(
                f"invalid initialize result: {exc.reason}",
                [version],
                [violation],
                error=violation.error,
                rule=Rule.INVALID_RESULT,
            )
        terms.peer_caps = result.capabilities
        terms.peer_info = result.server_info
        self._life.fire(Trigger.RECEIVE_INITIALIZE_RESULT)
        terms.agree()
        events: list[Event] = [
            ResponseReceived(
                request_id=record.id, method="initialize", result=result, request=record.request
            )
        ]
        self._send_own(terms.module.InitializedNotification(), events)
        instructions = result.instructions
        events.append(
            SessionReady(
                revision=version,
                model="handshake",
                peer_info=result.server_info,
                peer_capabilities=result.capabilities,
                instructions=None if instructions is UNSET else instructions,
            )
        )
        return events

    def result_received(self, record: OutgoingRequest, result: Any, events: list[Event]) -> None:
        """A discover result: the probe's answer picks the model and revision; any
        discover result in the stateless model updates the server's capabilities."""
        if record.method != "server/discover":
            return
        terms = self._terms
        if record.id == self.opening:
            self.opening = None
        supported = result.supported_versions
        if self._life.phase is Phase.PROBING:
            version = newest_mutual(supported, terms.accepted)
            if version is None:
                self._fail(
                    f"the server supports {supported}, none of which this client accepts",
                    supported,
                    events,
                )
                return
            if version not in STATELESS_REVISIONS:
                self._send_own(self.initialize_request(version), events)
                return
            if version != terms.codec.revision:
                self._session._use_revision(version)
            self._life.fire(Trigger.PROBE_ANSWERED)
        elif not (terms.model.kind is ProtocolModel.STATELESS and self._life.phase is Phase.READY):
            return  # a discover result outside the stateless model teaches nothing
        # A server sends the same capabilities and identity in every discover result:
        # they are converted again only when they differ from the last ones.
        caps = result.capabilities
        if terms.peer_capabilities != caps:
            terms.peer_caps = caps
        meta = result.meta if result.meta is not UNSET else {}
        info = meta.get(META_SERVER_INFO)
        if info is not None:
            seen = self._discovered_info
            if seen is None or seen.get() != info:
                try:
                    terms.peer_info = msgspec.convert(info, terms.module.Implementation)
                    self._discovered_info = Kept(info)
                except msgspec.ValidationError:
                    terms.peer_info = self._discovered_info = None
        if not terms.ready_emitted:
            terms.ready_emitted = True
            terms.agree()
            events.append(
                SessionReady(
                    revision=terms.codec.revision,
                    model="stateless",
                    peer_info=terms.peer_info,
                    peer_capabilities=result.capabilities,
                    instructions=None if result.instructions is UNSET else result.instructions,
                )
            )

    def _refused(self, method: str, error: ErrorObject, events: list[Event]) -> None:
        """Negotiation failed: the server refused the request that opens it, ``method``."""
        self._fail(
            f"the server refused {method}: {error.code} {error.message}",
            [],
            events,
            error=error,
            rule=Rule.METHOD_NOT_FOUND
            if error.code == ErrorCode.METHOD_NOT_FOUND
            else Rule.UNSUPPORTED_VERSION,
        )

    def error_received(
        self, record: OutgoingRequest, error: ErrorObject, events: list[Event]
    ) -> None:
        if record.method == "initialize":
            self._refused(record.method, error, events)
            return
        if record.method != "server/discover":
            return
        terms = self._terms
        opening = record.id == self.opening
        if opening:
            self.opening = None
        if self._life.phase is not Phase.PROBING:
            if opening and not terms.ready_emitted and self._retry_pinned(error, events):
                return
            if opening and not terms.ready_emitted:
                # A client pinned to 2026-07-28 opened with server/discover: refused, no
                # revision is left to negotiate.
                self._refused(record.method, error, events)
            return
        if error.code == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION:
            data = error.data if isinstance(error.data, dict) else {}
            theirs = data.get("supported")
            theirs = theirs if isinstance(theirs, list) else []
            version = newest_mutual(theirs, terms.accepted)
            if version is None or self._probe_retried:
                self._fail(
                    f"the server supports {theirs}; no retry possible",
                    [v for v in theirs if isinstance(v, str)],
                    events,
                    error=error,
                )
                return
            self._probe_retried = True
            request = (
                self.discover_request(version)
                if version in STATELESS_REVISIONS
                else self.initialize_request(version)
            )
            self._send_own(request, events)
            return
        if error.code in _MODERN_REFUSALS:
            # A 2026-07-28 server that refuses the probe itself: no older model to try.
            self._fail(
                f"the server refused server/discover: {error.code} {error.message}",
                [],
                events,
                error=error,
            )
            return
        # -32601, or an error no 2026-07-28 server answers a probe with (-32000 "Server
        # not initialized", -32600, ...): an older server, which wants initialize first.
        handshake = [r for r in terms.accepted if r in HANDSHAKE_REVISIONS]
        if not handshake:
            self._fail(
                "the server has no server/discover and this client has no handshake revision",
                [],
                events,
                error=error,
                rule=Rule.METHOD_NOT_FOUND,
            )
            return
        self._send_own(self.initialize_request(handshake[-1]), events)

    def _retry_pinned(self, error: ErrorObject, events: list[Event]) -> bool:
        """A client pinned to a stateless revision whose opening ``server/discover``
        was refused with -32022 listing a revision it accepts: retry once with it (the
        client SHOULD pick a supported version and retry). Whether it did."""
        if error.code != ErrorCode.UNSUPPORTED_PROTOCOL_VERSION or self._probe_retried:
            return False
        data = error.data if isinstance(error.data, dict) else {}
        theirs = data.get("supported")
        version = newest_mutual(theirs if isinstance(theirs, list) else [], self._terms.accepted)
        if version is None or version not in STATELESS_REVISIONS:
            return False
        self._probe_retried = True
        request = self.discover_request(version)
        self.opening = request.id
        self._send_own(request, events)
        return True

    def result_refused(self, record: OutgoingRequest, raw: Raw | None, events: list[Event]) -> None:
        """An answer negotiation cannot use: an older server's answer to any method
        (fall back to ``initialize``), or a broken one (negotiation fails). ``raw`` is
        ``None`` when the answer could not be read at all."""
        if record.method not in ("initialize", "server/discover"):
            return
        violation = events[0]
        assert isinstance(violation, ProtocolViolation)
        if record.method == "initialize":
            # A broken answer to initialize: no revision was agreed, none will be.
            self._fail(
                "the server answered initialize with a message this client cannot read: "
                + violation.reason,
                [],
                events,
                error=violation.error,
                rule=violation.rule,
            )
            return
        probing = self._life.phase is Phase.PROBING
        if not (probing or record.id == self.opening):
            return
        self.opening = None
        terms = self._terms
        handshake = [r for r in terms.accepted if r in HANDSHAKE_REVISIONS]
        if probing and handshake and (raw is None or not _names_versions(raw)):
            # Not a discover result at all (an older server that answers any method
            # with an empty result, or that cannot answer it in valid JSON-RPC): an
            # older server, which wants initialize.
            self._send_own(self.initialize_request(handshake[-1]), events)
            return
        if not terms.ready_emitted and (probing or self._life.phase is Phase.READY):
            # The probe was answered with something this client cannot use (it broke
            # the schema): negotiation ends here rather than waiting for nothing.
            what = "a message this client cannot read" if raw is None else "an invalid result"
            self._fail(
                f"the server answered server/discover with {what}: {violation.reason}",
                [],
                events,
                error=violation.error,
                rule=violation.rule,
            )

    def unreadable_request(self) -> RequestId | None:
        """The id of the ``server/discover`` whose answer negotiation awaits, if any:
        the probe of an ``auto`` client, or the opening discover of a client pinned to
        a stateless revision."""
        if self._life.phase is Phase.PROBING:
            for record in self._outgoing.values():
                if record.method == "server/discover":
                    return record.id
            return None
        opening = self.opening
        if opening is not None and not self._terms.ready_emitted and opening in self._outgoing:
            return opening
        return None


#: What a client checks of a message that negotiates before it is recorded, by method.
_SENDING: Final[dict[str, Callable[[ClientNegotiation, Any], None]]] = {
    "initialize": ClientNegotiation._sending_initialize,
    "server/discover": ClientNegotiation._sending_discover,
    "notifications/initialized": ClientNegotiation._sending_initialized,
}
#: What a client does once a request that negotiates is recorded, by method.
_SENT: Final[dict[str, Callable[[ClientNegotiation, Any], None]]] = {
    "initialize": ClientNegotiation._sent_initialize,
    "server/discover": ClientNegotiation._sent_discover,
}


class ClientSession(Session):
    """The client side of one MCP connection, in either protocol model.

    ``mode`` is ``"auto"`` (probe ``server/discover``; fall back to ``initialize`` when
    the server answers -32601 or another error that is not a 2026-07-28 refusal, id null
    included, a result that is not a discover result, or an answer that is not valid
    JSON-RPC; on -32022 retry once with the newest mutually accepted revision; on
    -32020 or -32021, fail), ``"legacy"`` (``initialize`` only), or one revision to pin.
    ``revisions`` restricts the revisions accepted; ``info`` and ``capabilities`` are
    the client's identity and capabilities (generated values of any revision, or
    mappings); ``limits`` bound what the server can make the session hold
    (:class:`~mcpspec.runtime.session.limits.Limits`; the defaults when ``None``);
    ``extensions`` the protocol extensions it speaks (their methods join the revision's;
    a request declares one in its own ``_meta`` capabilities).

    Start with :meth:`start` (or send an ``initialize``/``server/discover`` request
    yourself); a client pinned to 2026-07-28 may send requests right away.
    """

    def __init__(
        self,
        revisions: Iterable[str] | None = None,
        *,
        mode: ClientMode = "auto",
        info: Any = None,
        capabilities: Any = None,
        limits: Limits | None = None,
        extensions: Iterable[str] = (),
    ) -> None:
        accepted = accepted_revisions(revisions)
        if mode in accepted_revisions(None) and revisions is None:
            accepted = (mode,)
        self._mode = mode
        plan, version = client_plan(mode, accepted)
        self._negotiating: ClientNegotiation

        def negotiator(session: Session) -> ClientNegotiation:
            self._negotiating = ClientNegotiation(session, plan)
            return self._negotiating

        phase = Phase.READY if plan == "stateless" else Phase.IDLE
        super().__init__(
            Role.CLIENT,
            accepted,
            info,
            capabilities,
            phase,
            version,
            limits,
            negotiator,
            known_extensions(extensions),
        )
        if plan == "stateless":
            self._terms.agree()

    @property
    def mode(self) -> ClientMode:
        """The negotiation mode."""
        return self._mode

    def start(self) -> bytes:
        """The first message of the connection: the ``server/discover`` probe (``auto``
        with 2026-07-28 accepted, or pinned 2026-07-28) or ``initialize``."""
        negotiating = self._negotiating
        revision = self._terms.codec.revision
        if negotiating.plan == "initialize":
            return self.send(negotiating.initialize_request(revision))
        request = negotiating.discover_request(revision)
        data = self.send(request)
        negotiating.opening = request.id
        return data

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
            if not isinstance(value, self._terms.result_classes_of(method, False)):
                raise LocalProtocolError(
                    Rule.INPUT_RESPONSES_MISMATCH,
                    f"input response {key!r} answers {method}: not a {type(value).__name__}",
                )
            raw[key] = msgspec.Raw(self._terms.codec.encode(value))
        original = event.request
        params = msgspec.structs.replace(
            original.params,
            input_responses=raw if raw else UNSET,
            request_state=result.request_state,
        )
        new_id = self.next_id() if request_id is None else request_id
        return msgspec.structs.replace(original, id=new_id, params=params)


class _Versions(msgspec.Struct):
    supported: Any = msgspec.field(default=UNSET, name="supportedVersions")


_VERSIONS: Final = msgspec.json.Decoder(_Versions)


def _names_versions(raw: Raw) -> bool:
    """Whether a refused discover result says which versions it supports (a 2026-07-28
    server's broken answer), rather than being no discover result at all."""
    try:
        return _VERSIONS.decode(raw).supported is not UNSET
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
