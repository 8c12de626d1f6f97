"""The client side of one MCP connection: :class:`ClientSession`.

What only a client does: it opens the connection (``initialize``, or the
``server/discover`` probe of ``auto`` mode), negotiates from the answer (falling back to
``initialize`` on -32601 or any error an older server answers, retrying once on -32022;
an answer it cannot use fails negotiation), and hands over what negotiation
makes it write as :class:`~mcpspec.runtime.events.Outgoing` events. In the stateless
model it puts the protocol version, its capabilities and identity in the ``_meta`` of
every request, retries requests answered with ``InputRequiredResult``, and checks that
log messages and subscription notifications are ones it asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import msgspec
from msgspec import UNSET, Raw

from .capabilities import as_json
from .checks import cancel_problem, log_problem
from .codec import DECODE_FAILURES
from .contract import RESULT_INPUT_REQUIRED
from .core import Sendable, error_object, revision_of
from .envelope import ErrorObject, ErrorResponse, RequestId, ResultResponse
from .errors import ErrorCode, InvalidMessage
from .events import (
    Event,
    NegotiationFailed,
    NotificationReceived,
    Outgoing,
    ProtocolViolation,
    ResponseReceived,
    SessionReady,
)
from .inbound import Handler, Inbound
from .limits import Limits
from .misuse import LocalProtocolError, NegotiationError, RevisionError, StateError
from .negotiation import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    RESULT_VERSION_DECODER,
    ClientMode,
    accepted_revisions,
    client_plan,
    is_stateless,
    newest_mutual,
)
from .outbound import Outbound
from .pending import OutgoingRequest
from .rules import Rule
from .state import Phase, Role, Trigger
from .stateless import (
    ACKNOWLEDGED,
    FILTER_FIELDS,
    LEVELS,
    LISTEN,
    input_required_problem,
    subscription_of,
)

__all__ = ["ClientSession"]

#: Requests that negotiate, and so may pick the revision before negotiation.
_NEGOTIATING = frozenset({"initialize", "server/discover"})
#: Errors with which a 2026-07-28 server refuses a probe it read (-32022 is retried).
_MODERN_REFUSALS = frozenset(
    {ErrorCode.HEADER_MISMATCH, ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY}
)


class ClientSession(Inbound, Outbound):
    """The client side of one MCP connection, in either protocol model.

    ``mode`` is ``"auto"`` (probe ``server/discover``; fall back to ``initialize`` when
    the server answers -32601 or another error that is not a 2026-07-28 refusal, id null
    included, or a result that is not a discover result; on -32022 retry once with the
    newest mutually accepted revision; on -32020 or -32021, fail), ``"legacy"``
    (``initialize`` only), or
    one revision to pin.
    ``revisions`` restricts the revisions accepted; ``info`` and ``capabilities`` are
    the client's identity and capabilities (generated values of any revision, or
    mappings); ``limits`` bound what the server can make the session hold
    (:class:`~mcpspec.runtime.limits.Limits`; the defaults when ``None``).

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
        limits: Limits | None = None,
    ) -> None:
        accepted = accepted_revisions(revisions)
        if mode in accepted_revisions(None) and revisions is None:
            accepted = (mode,)
        self._mode = mode
        kind, version = client_plan(mode, accepted)
        self._plan = kind
        #: The version this client offered (initialize) or probed with.
        self._offered: str | None = None
        self._probe_retried = False
        #: The id of the ``server/discover`` that :meth:`start` sent, if it sent one.
        self._opening: RequestId | None = None
        #: The capabilities of the last discover result, typed and as the JSON object
        #: kept; its server identity, as JSON and typed.
        self._discovered: tuple[Any, dict[str, Any]] | None = None
        self._discovered_info: tuple[Any, Any] | None = None
        phase = Phase.READY if kind == "stateless" else Phase.IDLE
        super().__init__(accepted, info, capabilities, phase, version, limits)
        if kind == "stateless":
            self._ready("stateless")

    @property
    def mode(self) -> ClientMode:
        """The negotiation mode."""
        return self._mode

    def _notification_handlers(self) -> dict[str, Handler]:
        handlers = super()._notification_handlers()
        handlers["notifications/message"] = self._on_log
        for method in (*FILTER_FIELDS, ACKNOWLEDGED):
            handlers[method] = self._on_subscription_note
        return handlers

    # -- starting ---------------------------------------------------------------------------------

    def start(self) -> bytes:
        """The first message of the connection: the ``server/discover`` probe (``auto``
        with 2026-07-28 accepted, or pinned 2026-07-28) or ``initialize``."""
        if self._plan == "initialize":
            return self.send(self._initialize_request(self._codec.revision))
        request = self._discover_request(self._codec.revision)
        data = self.send(request)
        self._opening = request.id
        return data

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

    def _send_own(self, request: Any, events: list[Event]) -> None:
        """Send a request negotiation calls for, handing its bytes over as an event."""
        events.append(Outgoing(data=self.send(request), message=request))

    # -- sending -----------------------------------------------------------------------------------

    def send(self, message: Sendable, *, progress_token: int | str | None = None) -> bytes:
        """As :meth:`Outbound.send <mcpspec.runtime.outbound.Outbound.send>`; before
        negotiation, an ``initialize`` or ``server/discover`` of any accepted revision
        also picks that revision."""
        method = getattr(type(message), "method", None)
        if method in _NEGOTIATING and self._life.phase in (Phase.IDLE, Phase.PROBING):
            revision = revision_of(type(message))
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
            self._info_json = as_json(message.params.client_info)
            self._set_own_caps(as_json(message.params.capabilities))
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

    # -- negotiation -------------------------------------------------------------------------

    def _fail_negotiation(
        self,
        reason: str,
        answered: Sequence[str],
        events: list[Event],
        error: ErrorObject | None = None,
        rule: Rule = Rule.UNSUPPORTED_VERSION,
    ) -> list[Event]:
        """No revision both sides accept: report it and close."""
        supported = tuple(reversed(self._accepted))
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

    def _on_initialize_result(
        self, record: OutgoingRequest, response: ResultResponse
    ) -> list[Event]:
        try:
            version = RESULT_VERSION_DECODER.decode(response.result).protocol_version
        except DECODE_FAILURES:
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
            violation = self._invalid_result(record, exc)
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
        self._ready("handshake")
        events: list[Event] = [
            ResponseReceived(
                request_id=record.id, method="initialize", result=result, request=record.request
            )
        ]
        self._send_own(self._module.InitializedNotification(), events)
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

    def _after_result(self, record: OutgoingRequest, result: Any, events: list[Event]) -> None:
        if record.method != "server/discover":
            return
        if record.id == self._opening:
            self._opening = None
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
                self._send_own(self._initialize_request(version), events)
                return
            if version != self._codec.revision:
                self._set_revision(version)
            self._life.fire(Trigger.PROBE_ANSWERED)
        elif not (self._stateless and self._life.phase is Phase.READY):
            return  # a discover result outside the stateless model teaches nothing
        # A server sends the same capabilities and identity in every discover result:
        # they are converted again only when they differ from the last ones.
        caps = result.capabilities
        known = self._discovered
        if known is None or known[1] is not self._peer_caps or known[0] != caps:
            self._peer_caps = as_json(caps)
            self._discovered = (caps, self._peer_caps)
        meta = result.meta if result.meta is not UNSET else {}
        info = meta.get(META_SERVER_INFO)
        if info is not None:
            seen = self._discovered_info
            if seen is None or seen[1] is not self._peer_info or seen[0] != info:
                try:
                    self._peer_info = msgspec.convert(info, self._module.Implementation)
                    self._discovered_info = (info, self._peer_info)
                except msgspec.ValidationError:
                    self._peer_info = None
        if not self._ready_emitted:
            self._ready_emitted = True
            self._ready("stateless")
            events.append(
                SessionReady(
                    revision=self._codec.revision,
                    model="stateless",
                    peer_info=self._peer_info,
                    peer_capabilities=result.capabilities,
                    instructions=None if result.instructions is UNSET else result.instructions,
                )
            )

    def _after_error(
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
        if record.method != "server/discover":
            return
        opening = record.id == self._opening
        if opening:
            self._opening = None
        if self._life.phase is not Phase.PROBING:
            if opening and not self._ready_emitted and self._retry_pinned(error, events):
                return
            if opening and not self._ready_emitted:
                # A client pinned to 2026-07-28 opened with server/discover: refused, no
                # revision is left to negotiate.
                self._fail_negotiation(
                    f"the server refused server/discover: {error.code} {error.message}",
                    [],
                    events,
                    error=error,
                    rule=Rule.METHOD_NOT_FOUND
                    if error.code == ErrorCode.METHOD_NOT_FOUND
                    else Rule.UNSUPPORTED_VERSION,
                )
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
            request = (
                self._discover_request(version)
                if is_stateless(version)
                else self._initialize_request(version)
            )
            self._send_own(request, events)
            return
        if error.code in _MODERN_REFUSALS:
            # A 2026-07-28 server that refuses the probe itself: no older model to try.
            self._fail_negotiation(
                f"the server refused server/discover: {error.code} {error.message}",
                [],
                events,
                error=error,
            )
            return
        # -32601, or an error no 2026-07-28 server answers a probe with (-32000 "Server
        # not initialized", -32600, ...): an older server, which wants initialize first.
        handshake = [r for r in self._accepted if not is_stateless(r)]
        if not handshake:
            self._fail_negotiation(
                "the server has no server/discover and this client has no handshake revision",
                [],
                events,
                error=error,
                rule=Rule.METHOD_NOT_FOUND,
            )
            return
        self._send_own(self._initialize_request(handshake[-1]), events)

    def _retry_pinned(self, error: ErrorObject, events: list[Event]) -> bool:
        """A client pinned to a stateless revision whose opening ``server/discover``
        was refused with -32022 listing a revision it accepts: retry once with it (the
        client SHOULD pick a supported version and retry). Whether it did."""
        if error.code != ErrorCode.UNSUPPORTED_PROTOCOL_VERSION or self._probe_retried:
            return False
        data = error.data if isinstance(error.data, dict) else {}
        theirs = data.get("supported")
        version = newest_mutual(theirs if isinstance(theirs, list) else [], self._accepted)
        if version is None or not is_stateless(version):
            return False
        self._probe_retried = True
        request = self._discover_request(version)
        self._opening = request.id
        self._send_own(request, events)
        return True

    def _on_error(self, response: ErrorResponse) -> list[Event]:
        request_id = response.id
        if request_id is None or request_id is UNSET:
            # An older server that cannot read the probe may answer it with id null (or
            # none): while negotiation awaits the probe's answer, that error is it.
            probe = self._open_probe()
            if probe is not None:
                response = msgspec.structs.replace(response, id=probe)
        return super()._on_error(response)

    def _result_refused(
        self, record: OutgoingRequest, exc: InvalidMessage, raw: Raw | None = None
    ) -> list[Event]:
        events = super()._result_refused(record, exc, raw)
        probing = self._life.phase is Phase.PROBING
        if record.method != "server/discover" or not (probing or record.id == self._opening):
            return events
        self._opening = None
        handshake = [r for r in self._accepted if not is_stateless(r)]
        if probing and handshake and raw is not None and not _names_versions(raw):
            # Not a discover result at all (an older server that answers any method
            # with an empty result, say): an older server, which wants initialize.
            self._send_own(self._initialize_request(handshake[-1]), events)
            return events
        if not self._ready_emitted and (probing or self._life.phase is Phase.READY):
            # The probe was answered with a result this client cannot use (it broke the
            # schema): negotiation ends here rather than waiting for nothing.
            violation = events[0]
            assert isinstance(violation, ProtocolViolation)
            self._fail_negotiation(
                f"the server answered server/discover with an invalid result: {violation.reason}",
                [],
                events,
                error=violation.error,
                rule=Rule.INVALID_RESULT,
            )
        return events

    def _open_probe(self) -> RequestId | None:
        """The id of the ``server/discover`` whose answer negotiation awaits, if any:
        the probe of an ``auto`` client, or the opening discover of a client pinned to
        a stateless revision."""
        if self._life.phase is Phase.PROBING:
            for record in self._outgoing.values():
                if record.method == "server/discover":
                    return record.id
            return None
        opening = self._opening
        if opening is not None and not self._ready_emitted and opening in self._outgoing:
            return opening
        return None

    # -- receiving ---------------------------------------------------------------------------

    def _check_result(self, record: OutgoingRequest, result: Any) -> ProtocolViolation | None:
        if (
            not self._stateless
            or getattr(type(result), "result_type", None) != RESULT_INPUT_REQUIRED
        ):
            return None
        problem = input_required_problem(result, record.capabilities, self._own_defined)
        if problem is None:
            return None
        return self._result_violation(record, problem.rule, problem.reason, problem.path)

    def _on_cancelled(self, message: Any) -> list[Event]:
        if not self._stateless:
            return super()._on_cancelled(message)
        # 2026-07-28: a server cancels only a subscriptions/listen stream.
        request_id = message.params.request_id
        record = self._outgoing.get(request_id)
        if record is not None and record.method == LISTEN:
            del self._outgoing[request_id]
            self._subscriptions.closed(request_id)
            return [self._cancelled(message, True)]
        if record is None and request_id in self._pending.cancelled_out:
            return [self._cancelled(message, False)]
        problem = cancel_problem(
            None if record is None else record.method, stateless=True, by_server=True
        )
        assert problem is not None  # an open listen request was handled above
        return [self._reported(problem, method=message.method)]

    def _on_log(self, message: Any) -> list[Event]:
        if self._stateless:
            levels = [r.log_level for r in self._outgoing.values() if r.log_level is not None]
            if self._cancelled_log_level is not None:
                # A message may have crossed the cancellation of the request it is for.
                levels.append(self._cancelled_log_level)
            level = message.params.level
            problem = log_problem(level, LEVELS[level], levels)
            if problem is not None:
                return [self._reported(problem, method=message.method)]
        return self._on_notification(message)

    def _on_subscription_note(self, message: Any) -> list[Event]:
        """``notifications/subscriptions/acknowledged`` or a subscription notification:
        on an open subscription, acknowledged first, within its filter (2026-07-28)."""
        if self._stateless:
            problem = self._subscriptions.verify(message.method, message.params)
            if problem is not None:
                if subscription_of(message.params) in self._pending.cancelled_out:
                    return []  # crossed this side's cancellation of the subscription
                return [
                    self._violation(
                        problem.rule, problem.reason, path=problem.path, method=message.method
                    )
                ]
        return [NotificationReceived(notification=message, method=message.method)]


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
