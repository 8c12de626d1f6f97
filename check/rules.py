"""Which check a session rule belongs to.

The sans-IO sessions report every broken rule of the wire as a
:class:`~mcpspec.runtime.ProtocolViolation` naming a :class:`~mcpspec.runtime.Rule`; the
checker files each one under the check of :data:`~.catalog.CHECKS` that covers it.
"""

from __future__ import annotations

from typing import Final

from mcpspec.runtime.session.rules import Rule

__all__ = ["CHECK_OF_RULE"]

_WIRE, _SCHEMA = "wire.message", "schema.message"

#: The check that covers each rule (every rule has one).
CHECK_OF_RULE: Final[dict[Rule, str]] = {
    Rule.PARSE_ERROR: _WIRE,
    Rule.INVALID_REQUEST: _WIRE,
    Rule.BATCH_NOT_ALLOWED: _WIRE,
    Rule.LIMIT_EXCEEDED: _WIRE,
    Rule.METHOD_NOT_FOUND: _SCHEMA,
    Rule.INVALID_PARAMS: _SCHEMA,
    Rule.INVALID_RESULT: _SCHEMA,
    Rule.INVALID_REQUEST_META: _SCHEMA,
    Rule.WRONG_REVISION: _SCHEMA,
    Rule.INTERNAL_ERROR: "protocol.responses",
    Rule.DUPLICATE_REQUEST_ID: "protocol.responses",
    Rule.UNKNOWN_RESPONSE_ID: "protocol.responses",
    Rule.SESSION_CLOSED: "protocol.responses",
    Rule.INPUT_RESPONSES_MISMATCH: "protocol.responses",
    Rule.CANCEL_INITIALIZE: "protocol.cancellation",
    Rule.CANCEL_NOT_LISTEN: "protocol.cancellation",
    Rule.PROGRESS_TOKEN_IN_USE: "protocol.progress",
    Rule.PROGRESS_UNKNOWN_TOKEN: "protocol.progress",
    Rule.PROGRESS_NOT_INCREASING: "protocol.progress",
    Rule.PROGRESS_AFTER_COMPLETION: "protocol.progress",
    Rule.CAPABILITY_NOT_DECLARED: "protocol.capabilities",
    Rule.NOT_INITIALIZED: "protocol.lifecycle",
    Rule.ALREADY_INITIALIZED: "protocol.lifecycle",
    Rule.INITIALIZE_IN_BATCH: "protocol.lifecycle",
    Rule.UNSUPPORTED_VERSION: "protocol.negotiation",
    Rule.MISSING_PROTOCOL_VERSION: "protocol.negotiation",
    Rule.UNSUPPORTED_PROTOCOL_VERSION: "protocol.negotiation",
    Rule.MISSING_CLIENT_CAPABILITIES: "protocol.negotiation",
    Rule.INPUT_REQUIRED_EMPTY: "protocol.result-type",
    Rule.LOG_LEVEL: "protocol.logging",
    Rule.SUBSCRIPTION_UNKNOWN: "protocol.subscriptions",
    Rule.SUBSCRIPTION_NOT_ACKNOWLEDGED: "protocol.subscriptions",
    Rule.SUBSCRIPTION_FILTER: "protocol.subscriptions",
}
