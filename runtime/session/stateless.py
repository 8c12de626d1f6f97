"""The per-request rules of the stateless revision (2026-07-28).

There is no ``initialize``: each request names its protocol version and the client's
capabilities (and, optionally, identity and log level) in ``params._meta``;
:class:`MetaReader` checks and types them, remembering the last values it typed since a
client sends the same ones on every request. :data:`LEVELS` ranks log levels for the
rule that ``notifications/message`` goes only to a request that asked, at its level or
above. :class:`Subscriptions` follows ``subscriptions/listen`` streams: acknowledged
once, before anything else, and carrying only the notification types the client asked
for. :func:`input_required_problem` checks an ``InputRequiredResult`` against the
capabilities its request declared. Each check serves both sides: the receiving side
reports what it finds as a violation, the sending side raises it (the rule table of
:mod:`.checks` and the model object of :mod:`.protocol_models` say when each applies).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

import msgspec
from msgspec import UNSET

from ..envelope import RequestId
from ..errors import show
from .capabilities import CLIENT_PROVIDED, as_json, has_capability, required_capability
from .kept import KEPT_DECODED_BYTES
from .rules import Problem, Rule
from .version_negotiation import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SUBSCRIPTION_ID,
)

__all__ = [
    "ACKNOWLEDGED",
    "FILTER_FIELDS",
    "LEVELS",
    "LISTEN",
    "MetaReader",
    "Problem",
    "RequestMeta",
    "Subscriptions",
    "input_required_problem",
]

LISTEN: Final = "subscriptions/listen"
ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"

#: Log levels by rank (RFC 5424 severities, least severe first).
LEVELS: Final[Mapping[str, int]] = {
    "debug": 0,
    "info": 1,
    "notice": 2,
    "warning": 3,
    "error": 4,
    "critical": 5,
    "alert": 6,
    "emergency": 7,
}

#: Subscription notifications, by the filter field that opts in to them.
FILTER_FIELDS: Final[Mapping[str, str]] = {
    "notifications/tools/list_changed": "toolsListChanged",
    "notifications/prompts/list_changed": "promptsListChanged",
    "notifications/resources/list_changed": "resourcesListChanged",
    "notifications/resources/updated": "resourceSubscriptions",
}


class RequestMeta(NamedTuple):
    """The checked ``_meta`` entries of one request (the same for every request that
    sends equal entries)."""

    version: str
    capabilities: Any
    client_info: Any
    log_level: str | None
    #: The rank of ``log_level`` (see :data:`LEVELS`).
    log_rank: int | None


def _at(key: str) -> str:
    return f'$.params._meta["{key}"]'


def _small(json: Any) -> bool:
    """Whether ``json`` is small enough to remember for the session's lifetime: what a
    session keeps stays within a small multiple of what it received (see :mod:`.kept`).
    Asked only when the entries of a request differ from the last ones."""
    return len(msgspec.json.encode(json)) <= KEPT_DECODED_BYTES


class _Converted:
    """``msgspec.convert`` into one type, remembering the last input and its value (a
    client sends the same ``_meta`` entries on every request): ``value`` is the typed
    ``json`` while ``json`` equals the input."""

    __slots__ = ("_type", "json", "value")

    def __init__(self, type_: Any) -> None:
        self._type = type_
        self.json: Any = None
        self.value: Any = None

    def convert(self, json: Any) -> Any:
        """The typed value of ``json``; ``msgspec.ValidationError`` if it is not one.
        Only a small one is remembered (see :func:`_small`)."""
        value = msgspec.convert(json, self._type)
        if _small(json):
            self.value, self.json = value, json
        return value


class MetaReader:
    """Checks the ``_meta`` of 2026-07-28 requests against the versions a server
    accepts, and types capabilities and identity.

    A client sends the same entries on every request, so the last entries that passed
    and their :class:`RequestMeta` are kept: a request whose entries equal them passes
    with that, at the cost of four lookups and comparisons.
    """

    __slots__ = ("_accepted", "_caps", "_info", "_last", "_last_caps", "_last_info")

    def __init__(
        self, accepted: tuple[str, ...], capabilities_type: Any, implementation_type: Any
    ) -> None:
        self._accepted = accepted
        self._caps = _Converted(capabilities_type)
        self._info = _Converted(implementation_type)
        #: The last entries that passed: the result, capabilities and identity (JSON).
        self._last: RequestMeta | None = None
        self._last_caps: Any = None
        self._last_info: Any = None

    def read(self, meta: Mapping[str, Any]) -> RequestMeta | Problem:
        version = meta.get(META_PROTOCOL_VERSION)
        caps_json = meta.get(META_CLIENT_CAPABILITIES)
        info_json = meta.get(META_CLIENT_INFO)
        level = meta.get(META_LOG_LEVEL)
        last = self._last
        if (
            last is not None
            and version == last.version
            and caps_json == self._last_caps
            and info_json == self._last_info
            and level == last.log_level
        ):
            return last
        checked = self._check(version, caps_json, info_json, level)
        if checked.__class__ is RequestMeta and _small(caps_json) and _small(info_json):
            self._last, self._last_caps, self._last_info = checked, caps_json, info_json
        return checked

    def _check(
        self, version: Any, caps_json: Any, info_json: Any, level: Any
    ) -> RequestMeta | Problem:
        """The entries checked and typed, one by one."""
        if version is None:
            return Problem(Rule.MISSING_PROTOCOL_VERSION, _at(META_PROTOCOL_VERSION), "missing")
        if not isinstance(version, str):
            return Problem(
                Rule.INVALID_REQUEST_META, _at(META_PROTOCOL_VERSION), "must be a string"
            )
        if version not in self._accepted:
            return Problem(
                Rule.UNSUPPORTED_PROTOCOL_VERSION,
                _at(META_PROTOCOL_VERSION),
                f"unsupported protocol version {show(version)}",
            )
        if caps_json is None:
            return Problem(
                Rule.MISSING_CLIENT_CAPABILITIES, _at(META_CLIENT_CAPABILITIES), "missing"
            )
        typed_caps, typed_info = self._caps, self._info
        key = META_CLIENT_CAPABILITIES  # what is being typed, for the error's path
        try:
            if caps_json == typed_caps.json:
                caps = typed_caps.value
            else:
                caps = typed_caps.convert(caps_json)
            key = META_CLIENT_INFO
            if info_json is None:
                info = None
            elif info_json == typed_info.json:
                info = typed_info.value
            else:
                info = typed_info.convert(info_json)
        except msgspec.ValidationError as exc:
            return Problem(Rule.INVALID_REQUEST_META, _at(key), str(exc))
        # A level of any JSON type may arrive: only a string is looked up.
        if level is not None and (level.__class__ is not str or level not in LEVELS):
            return Problem(
                Rule.INVALID_REQUEST_META,
                _at(META_LOG_LEVEL),
                f"not a logging level: {show(level)} (one of {', '.join(LEVELS)})",
            )
        return RequestMeta(version, caps, info, level, None if level is None else LEVELS[level])


class _Subscription:
    __slots__ = ("agreed", "requested")

    def __init__(self, requested: dict[str, Any]) -> None:
        self.requested = requested
        self.agreed: dict[str, Any] | None = None


def _allows(filter_: Mapping[str, Any], method: str, params: Any) -> bool:
    field = FILTER_FIELDS[method]
    value = filter_.get(field)
    if field == "resourceSubscriptions":
        uri = getattr(params, "uri", None)
        return isinstance(value, list) and uri in value
    return value is True


def _subset(agreed: Mapping[str, Any], requested: Mapping[str, Any]) -> str | None:
    for field, value in agreed.items():
        asked = requested.get(field)
        if field == "resourceSubscriptions":
            extra = [u for u in value or () if not isinstance(asked, list) or u not in asked]
            if extra:
                return f"resourceSubscriptions {extra} were not requested"
        elif value is True and asked is not True:
            return f"{field} was not requested"
    return None


class Subscriptions:
    """Open ``subscriptions/listen`` requests, by id, with the filter asked and agreed."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        self.open: dict[RequestId, _Subscription] = {}

    def opened(self, request_id: RequestId, requested: dict[str, Any]) -> None:
        """A listen request was sent or received with filter ``requested`` (JSON)."""
        self.open[request_id] = _Subscription(requested)

    def recorded(self, request_id: RequestId, method: str, params: Any) -> None:
        """A request was recorded, sent or received: a listen request opens its
        subscription, with the filter it asks for."""
        if method == LISTEN:
            self.opened(request_id, as_json(params.notifications))

    def closed(self, request_id: RequestId) -> bool:
        """The subscription ended (result or cancellation); whether it was open."""
        return self.open.pop(request_id, None) is not None

    def verify(self, method: str, params: Any) -> Problem | None:
        """Check and record ``notifications/subscriptions/acknowledged`` or a
        subscription notification (a method of :data:`FILTER_FIELDS`) on the
        subscription its ``_meta`` names; what is wrong, or ``None``."""
        subscription_id = subscription_of(params)
        sub = self.open.get(subscription_id) if isinstance(subscription_id, (int, str)) else None
        if method == ACKNOWLEDGED:
            if sub is None:
                return Problem(
                    Rule.SUBSCRIPTION_UNKNOWN,
                    "$.params",
                    f"no open subscriptions/listen {show(subscription_id)}",
                )
            if sub.agreed is not None:
                return Problem(
                    Rule.SUBSCRIPTION_NOT_ACKNOWLEDGED,
                    "$.params",
                    "the subscription is already acknowledged",
                )
            agreed = as_json(params.notifications)
            problem = _subset(agreed, sub.requested)
            if problem is not None:
                return Problem(Rule.SUBSCRIPTION_FILTER, "$.params", problem)
            sub.agreed = agreed
            return None
        if sub is None:
            return Problem(
                Rule.SUBSCRIPTION_UNKNOWN,
                "$.params._meta",
                f"{method} names no open subscriptions/listen request "
                f"(io.modelcontextprotocol/subscriptionId {show(subscription_id)})",
            )
        if sub.agreed is None:
            return Problem(
                Rule.SUBSCRIPTION_NOT_ACKNOWLEDGED,
                "$.params._meta",
                f"{method} before notifications/subscriptions/acknowledged",
            )
        if not _allows(sub.agreed, method, params):
            return Problem(
                Rule.SUBSCRIPTION_FILTER,
                "$.params._meta",
                f"the subscription did not opt in to {method}",
            )
        return None


def subscription_of(params: Any) -> Any:
    """The ``io.modelcontextprotocol/subscriptionId`` in a notification's ``_meta``."""
    meta = getattr(params, "meta", None)
    return meta.get(META_SUBSCRIPTION_ID) if isinstance(meta, dict) else None


def input_required_problem(
    result: Any, capabilities: Mapping[str, Any] | None, defined: frozenset[str]
) -> Problem | None:
    """What is wrong with an ``InputRequiredResult`` answering a request that declared
    the client ``capabilities`` (JSON) in a revision whose ``ClientCapabilities`` define
    ``defined``: no input request and no state, or an input request for a capability
    the request did not declare."""
    requests = result.input_requests
    if requests is UNSET and result.request_state is UNSET:
        return Problem(
            Rule.INPUT_REQUIRED_EMPTY,
            "$.result",
            "an InputRequiredResult carries inputRequests or requestState",
        )
    caps = capabilities or {}
    for key, request in ({} if requests is UNSET else requests).items():
        path = required_capability(request, CLIENT_PROVIDED, defined)
        if path is not None and not has_capability(caps, path):
            return Problem(
                Rule.CAPABILITY_NOT_DECLARED,
                f"$.result.inputRequests[{key!r}]",
                f"input request {key!r} ({request.method}) needs the client capability "
                f"{'.'.join(path)}, which the request did not declare",
            )
    return None
