"""The protocol rules the sessions enforce, each with the JSON-RPC error it maps to.

Every :class:`~mcpspec.runtime.session.events.ProtocolViolation` a session reports names one
:class:`Rule`, and so does every :class:`~mcpspec.runtime.session.misuse.LocalProtocolError` it
raises when the local side breaks a rule. ``RULES`` is the table: the error code a
violation of the rule is answered with (for a request) or reported with (for anything
else), and one line saying what the rule is.
"""

from __future__ import annotations

from enum import Enum
from typing import Final, NamedTuple

from ..errors import ErrorCode

__all__ = ["RULES", "Problem", "Rule", "RuleInfo"]


class Rule(str, Enum):
    """A rule of JSON-RPC 2.0 or MCP that wire input (or the local side) can break."""

    # JSON-RPC 2.0 envelope
    PARSE_ERROR = "parse-error"
    INVALID_REQUEST = "invalid-request"
    BATCH_NOT_ALLOWED = "batch-not-allowed"
    METHOD_NOT_FOUND = "method-not-found"
    INVALID_PARAMS = "invalid-params"
    INTERNAL_ERROR = "internal-error"
    # pending table
    DUPLICATE_REQUEST_ID = "duplicate-request-id"
    UNKNOWN_RESPONSE_ID = "unknown-response-id"
    INVALID_RESULT = "invalid-result"
    # cancellation
    CANCEL_INITIALIZE = "cancel-initialize"
    CANCEL_NOT_LISTEN = "cancel-not-listen"
    # progress
    PROGRESS_TOKEN_IN_USE = "progress-token-in-use"
    PROGRESS_UNKNOWN_TOKEN = "progress-unknown-token"
    PROGRESS_NOT_INCREASING = "progress-not-increasing"
    PROGRESS_AFTER_COMPLETION = "progress-after-completion"
    # capabilities
    CAPABILITY_NOT_DECLARED = "capability-not-declared"
    # lifecycle of the handshake revisions
    NOT_INITIALIZED = "not-initialized"
    ALREADY_INITIALIZED = "already-initialized"
    INITIALIZE_IN_BATCH = "initialize-in-batch"
    UNSUPPORTED_VERSION = "unsupported-version"
    # the stateless revision
    MISSING_PROTOCOL_VERSION = "missing-protocol-version"
    UNSUPPORTED_PROTOCOL_VERSION = "unsupported-protocol-version"
    MISSING_CLIENT_CAPABILITIES = "missing-client-capabilities"
    INVALID_REQUEST_META = "invalid-request-meta"
    INPUT_REQUIRED_EMPTY = "input-required-empty"
    INPUT_RESPONSES_MISMATCH = "input-responses-mismatch"
    LOG_LEVEL = "log-level"
    SUBSCRIPTION_UNKNOWN = "subscription-unknown"
    SUBSCRIPTION_NOT_ACKNOWLEDGED = "subscription-not-acknowledged"
    SUBSCRIPTION_FILTER = "subscription-filter"
    # the session itself
    LIMIT_EXCEEDED = "limit-exceeded"
    SESSION_CLOSED = "session-closed"
    WRONG_REVISION = "wrong-revision"


class Problem(NamedTuple):
    """A rule broken by one message: which, where (JSON path) and why. The checks that
    find them (:mod:`.checks`, :mod:`.stateless`) serve both directions: ``send`` raises
    for a problem, ``receive`` reports it as a violation."""

    rule: Rule
    path: str
    reason: str


class RuleInfo(NamedTuple):
    """The error a rule maps to, and what the rule says."""

    code: ErrorCode
    summary: str


_P = ErrorCode.INVALID_PARAMS
_R = ErrorCode.INVALID_REQUEST

#: Every rule: its JSON-RPC error code and a one-line statement of the rule.
RULES: Final[dict[Rule, RuleInfo]] = {
    Rule.PARSE_ERROR: RuleInfo(ErrorCode.PARSE_ERROR, "a message is JSON"),
    Rule.INVALID_REQUEST: RuleInfo(
        _R,
        'a message is a JSON-RPC 2.0 object: jsonrpc "2.0"; a request id is a string or an '
        "integer, never null; a response has result xor error",
    ),
    Rule.BATCH_NOT_ALLOWED: RuleInfo(
        _R, "JSON-RPC batches only in revision 2025-03-26, and never empty"
    ),
    Rule.METHOD_NOT_FOUND: RuleInfo(
        ErrorCode.METHOD_NOT_FOUND,
        "the method exists in the negotiated revision, in the sender's direction",
    ),
    Rule.INVALID_PARAMS: RuleInfo(_P, "params match the schema of the negotiated revision"),
    Rule.INTERNAL_ERROR: RuleInfo(ErrorCode.INTERNAL_ERROR, "a handler that fails answers -32603"),
    Rule.DUPLICATE_REQUEST_ID: RuleInfo(_R, "request ids are unique among outstanding requests"),
    Rule.UNKNOWN_RESPONSE_ID: RuleInfo(_R, "a response answers an outstanding request"),
    Rule.INVALID_RESULT: RuleInfo(
        _P, "a result matches the result type of the method its id was sent with"
    ),
    Rule.CANCEL_INITIALIZE: RuleInfo(_R, "the initialize request cannot be cancelled"),
    Rule.CANCEL_NOT_LISTEN: RuleInfo(
        _R, "in 2026-07-28 a server cancels nothing but a subscriptions/listen request"
    ),
    Rule.PROGRESS_TOKEN_IN_USE: RuleInfo(_P, "progress tokens are unique among active requests"),
    Rule.PROGRESS_UNKNOWN_TOKEN: RuleInfo(
        _P, "progress refers to the token of a request that asked for it"
    ),
    Rule.PROGRESS_NOT_INCREASING: RuleInfo(_P, "progress increases with every notification"),
    Rule.PROGRESS_AFTER_COMPLETION: RuleInfo(_P, "no progress after the request is complete"),
    Rule.CAPABILITY_NOT_DECLARED: RuleInfo(
        ErrorCode.METHOD_NOT_FOUND,
        "a request needs the capability its receiver declared",
    ),
    Rule.NOT_INITIALIZED: RuleInfo(
        _R,
        "initialize comes first; before its response only ping; the server sends nothing "
        "but ping and logging until notifications/initialized",
    ),
    Rule.ALREADY_INITIALIZED: RuleInfo(_R, "initialize and notifications/initialized come once"),
    Rule.INITIALIZE_IN_BATCH: RuleInfo(_R, "initialize is never part of a batch"),
    Rule.UNSUPPORTED_VERSION: RuleInfo(
        ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
        "the negotiated revision is one both sides accept",
    ),
    Rule.MISSING_PROTOCOL_VERSION: RuleInfo(
        _P, "a 2026-07-28 request carries _meta io.modelcontextprotocol/protocolVersion"
    ),
    Rule.UNSUPPORTED_PROTOCOL_VERSION: RuleInfo(
        ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
        "the per-request protocol version is one the server supports",
    ),
    Rule.MISSING_CLIENT_CAPABILITIES: RuleInfo(
        _P, "a 2026-07-28 request carries _meta io.modelcontextprotocol/clientCapabilities"
    ),
    Rule.INVALID_REQUEST_META: RuleInfo(
        _P, "the io.modelcontextprotocol/ entries of a request's _meta match the schema"
    ),
    Rule.INPUT_REQUIRED_EMPTY: RuleInfo(
        _P, "an InputRequiredResult carries inputRequests or requestState"
    ),
    Rule.INPUT_RESPONSES_MISMATCH: RuleInfo(
        _P, "a retried request answers every input request, each with its result type"
    ),
    Rule.LOG_LEVEL: RuleInfo(
        _R,
        "in 2026-07-28 notifications/message only for a request that set "
        "io.modelcontextprotocol/logLevel, at that level or above",
    ),
    Rule.SUBSCRIPTION_UNKNOWN: RuleInfo(
        _R, "a subscription notification names an open subscriptions/listen request"
    ),
    Rule.SUBSCRIPTION_NOT_ACKNOWLEDGED: RuleInfo(
        _R,
        "a subscription is acknowledged once, before any other notification on it",
    ),
    Rule.SUBSCRIPTION_FILTER: RuleInfo(
        _R, "a subscription carries only the notification types the client asked for"
    ),
    Rule.LIMIT_EXCEEDED: RuleInfo(
        _R,
        "input stays within the session's limits: message size, batch members, requests in "
        "flight, progress tokens, resource subscriptions (see Limits)",
    ),
    Rule.SESSION_CLOSED: RuleInfo(_R, "nothing is exchanged after the session closed"),
    Rule.WRONG_REVISION: RuleInfo(
        _R, "messages are values of the negotiated revision's generated types"
    ),
}
