"""The per-request rules of the stateless revision (2026-07-28).

There is no ``initialize``: each request names its protocol version and the client's
capabilities (and, optionally, identity and log level) in ``params._meta``;
:class:`MetaReader` checks and types them, remembering the last values it typed since a
client sends the same ones on every request. :data:`LEVELS` ranks log levels for the
rule that ``notifications/message`` goes only to a request that asked, at its level or
above. :class:`Subscriptions` follows ``subscriptions/listen`` streams: acknowledged
once, before anything else, and carrying only the notification types the client asked
for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

import msgspec

from .envelope import RequestId
from .negotiation import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
)
from .rules import Rule

__all__ = ["LEVELS", "MetaProblem", "MetaReader", "RequestMeta", "Subscriptions"]

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
    """The checked ``_meta`` entries of one request."""

    version: str
    capabilities: Any
    capabilities_json: dict[str, Any]
    client_info: Any
    log_level: str | None


class MetaProblem(NamedTuple):
    """Why a request's ``_meta`` is refused."""

    rule: Rule
    path: str
    reason: str


def _at(key: str) -> str:
    return f'$.params._meta["{key}"]'


class MetaReader:
    """Checks the ``_meta`` of 2026-07-28 requests against the versions a server
    accepts, and types capabilities and identity with a one-entry cache."""

    __slots__ = ("_accepted", "_caps", "_caps_type", "_info", "_info_type")

    def __init__(
        self, accepted: tuple[str, ...], capabilities_type: Any, implementation_type: Any
    ) -> None:
        self._accepted = accepted
        self._caps_type = capabilities_type
        self._info_type = implementation_type
        self._caps: tuple[Any, Any] = (None, None)
        self._info: tuple[Any, Any] = (None, None)

    def read(self, meta: Mapping[str, Any]) -> RequestMeta | MetaProblem:
        version = meta.get(META_PROTOCOL_VERSION)
        if version is None:
            return MetaProblem(Rule.MISSING_PROTOCOL_VERSION, _at(META_PROTOCOL_VERSION), "missing")
        if not isinstance(version, str):
            return MetaProblem(
                Rule.INVALID_REQUEST_META, _at(META_PROTOCOL_VERSION), "must be a string"
            )
        if version not in self._accepted:
            return MetaProblem(
                Rule.UNSUPPORTED_PROTOCOL_VERSION,
                _at(META_PROTOCOL_VERSION),
                f"unsupported protocol version {version!r}",
            )
        caps_json = meta.get(META_CLIENT_CAPABILITIES)
        if caps_json is None:
            return MetaProblem(
                Rule.MISSING_CLIENT_CAPABILITIES, _at(META_CLIENT_CAPABILITIES), "missing"
            )
        cached_json, caps = self._caps
        if caps_json != cached_json or caps is None:
            try:
                caps = msgspec.convert(caps_json, self._caps_type)
            except msgspec.ValidationError as exc:
                return MetaProblem(
                    Rule.INVALID_REQUEST_META, _at(META_CLIENT_CAPABILITIES), str(exc)
                )
            self._caps = (caps_json, caps)
        info = None
        info_json = meta.get(META_CLIENT_INFO)
        if info_json is not None:
            cached_json, info = self._info
            if info_json != cached_json or info is None:
                try:
                    info = msgspec.convert(info_json, self._info_type)
                except msgspec.ValidationError as exc:
                    return MetaProblem(Rule.INVALID_REQUEST_META, _at(META_CLIENT_INFO), str(exc))
                self._info = (info_json, info)
        level = meta.get(META_LOG_LEVEL)
        if level is not None and level not in LEVELS:
            return MetaProblem(
                Rule.INVALID_REQUEST_META,
                _at(META_LOG_LEVEL),
                f"not a logging level: {level!r} (one of {', '.join(LEVELS)})",
            )
        return RequestMeta(version, caps, caps_json, info, level)


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

    def closed(self, request_id: RequestId) -> bool:
        """The subscription ended (result or cancellation); whether it was open."""
        return self.open.pop(request_id, None) is not None

    def acknowledge(self, subscription_id: Any, agreed: dict[str, Any]) -> tuple[Rule, str] | None:
        """Check and record ``notifications/subscriptions/acknowledged``."""
        sub = self.open.get(subscription_id) if isinstance(subscription_id, (int, str)) else None
        if sub is None:
            return Rule.SUBSCRIPTION_UNKNOWN, f"no open subscriptions/listen {subscription_id!r}"
        if sub.agreed is not None:
            return Rule.SUBSCRIPTION_NOT_ACKNOWLEDGED, "the subscription is already acknowledged"
        problem = _subset(agreed, sub.requested)
        if problem is not None:
            return Rule.SUBSCRIPTION_FILTER, problem
        sub.agreed = agreed
        return None

    def check(self, method: str, subscription_id: Any, params: Any) -> tuple[Rule, str] | None:
        """Whether a subscription notification may flow on ``subscription_id``."""
        sub = self.open.get(subscription_id) if isinstance(subscription_id, (int, str)) else None
        if sub is None:
            return Rule.SUBSCRIPTION_UNKNOWN, (
                f"{method} names no open subscriptions/listen request "
                f"(io.modelcontextprotocol/subscriptionId {subscription_id!r})"
            )
        if sub.agreed is None:
            return Rule.SUBSCRIPTION_NOT_ACKNOWLEDGED, (
                f"{method} before notifications/subscriptions/acknowledged"
            )
        if not _allows(sub.agreed, method, params):
            return Rule.SUBSCRIPTION_FILTER, f"the subscription did not opt in to {method}"
        return None
