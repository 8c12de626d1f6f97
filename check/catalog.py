"""Every check ``mcpspec check`` and ``mcpspec validate`` run: its id, its category, how
strong the rule is, and one line saying what it checks.

Categories, in the order a run applies them:

* ``wire``: every byte a server writes is a JSON-RPC 2.0 message, one per line on stdio;
* ``schema``: every message decodes as its exact type in the negotiated revision;
* ``protocol``: the session rules (negotiation, lifecycle, ids, errors, cancellation,
  progress, pagination, capabilities, the 2026-07-28 result fields);
* ``http``: statuses and headers of Streamable HTTP and HTTP+SSE;
* ``surface``: what the server offers (tools, resources, prompts) can be listed, read and
  used, and its JSON Schemas are schemas.

A MUST rule broken is a failure; a SHOULD rule broken is a warning.
"""

from __future__ import annotations

import enum
from typing import Final, NamedTuple

__all__ = ["CHECKS", "Category", "CheckInfo", "Level"]


class Level(str, enum.Enum):
    """How strong a rule is (RFC 2119)."""

    MUST = "MUST"
    SHOULD = "SHOULD"


class Category(str, enum.Enum):
    WIRE = "wire"
    SCHEMA = "schema"
    PROTOCOL = "protocol"
    HTTP = "http"
    SURFACE = "surface"


class CheckInfo(NamedTuple):
    category: Category
    level: Level
    summary: str


_W, _S, _P, _H, _F = (
    Category.WIRE,
    Category.SCHEMA,
    Category.PROTOCOL,
    Category.HTTP,
    (Category.SURFACE),
)
_MUST, _SHOULD = Level.MUST, Level.SHOULD

#: Every check, by id.
CHECKS: Final[dict[str, CheckInfo]] = {
    # wire
    "wire.message": CheckInfo(
        _W, _MUST, "every line on stdout (every HTTP body or event) is one JSON-RPC 2.0 message"
    ),
    # schema
    "schema.message": CheckInfo(
        _S, _MUST, "every message decodes as its exact type of the negotiated revision"
    ),
    # protocol: negotiation and lifecycle
    "protocol.negotiation": CheckInfo(
        _P,
        _MUST,
        "initialize is answered with the offered version or another one the server speaks; "
        "2026-07-28: server/discover, and -32022 naming the supported versions",
    ),
    "protocol.lifecycle": CheckInfo(
        _P,
        _SHOULD,
        "a request before initialize (a probe: the rule binds the client) is answered, "
        "served or refused",
    ),
    "protocol.capabilities": CheckInfo(
        _P, _MUST, "the server only uses and serves what it declared, and serves what it declared"
    ),
    # protocol: messages
    "protocol.responses": CheckInfo(
        _P,
        _MUST,
        "one response per request, with its id; none to a notification or an unknown id",
    ),
    "protocol.unknown-method": CheckInfo(_P, _MUST, "an unknown method is answered with -32601"),
    "protocol.invalid-params": CheckInfo(_P, _SHOULD, "invalid params are answered with -32602"),
    "protocol.parse-error": CheckInfo(
        _P, _SHOULD, "malformed JSON is answered with -32700 and id null, and the session goes on"
    ),
    "protocol.ping": CheckInfo(_P, _MUST, "ping is answered with an empty result"),
    "protocol.cancellation": CheckInfo(
        _P,
        _SHOULD,
        "a cancelled request is not answered afterwards, and the server keeps serving",
    ),
    "protocol.progress": CheckInfo(
        _P,
        _MUST,
        "progress names a token of an open request and increases, and stops with the response",
    ),
    "protocol.pagination": CheckInfo(
        _P, _MUST, "every page of a list can be followed, and cursors never loop"
    ),
    "protocol.result-type": CheckInfo(
        _P,
        _MUST,
        "2026-07-28 results carry resultType (their cache fields are schema.message's)",
    ),
    "protocol.logging": CheckInfo(
        _P,
        _MUST,
        "log messages only with the logging capability; in 2026-07-28 only for a request "
        "that set a log level, at that level or above",
    ),
    "protocol.subscriptions": CheckInfo(
        _P,
        _MUST,
        "2026-07-28 subscription notifications name an open, acknowledged subscriptions/listen "
        "and only the types it asked for",
    ),
    "protocol.tasks": CheckInfo(
        _P,
        _MUST,
        'with --call-tools: a tool whose execution.taskSupport is "required", called '
        "without a task, is answered -32601; tools with taskSupport go with the "
        "tasks.requests.tools.call capability; one called as a task answers "
        "CreateTaskResult, its status moves only forward, and tasks/result answers what "
        "the plain call did; 2026-07-28 (the tasks extension): a task only for a request "
        'declaring it, CreateTaskResult tagged "task" without MRTR fields, tasks/get a '
        'DetailedTask tagged "complete" answering what the plain call did, tasks/cancel '
        "an empty acknowledgement, -32021 for a request not declaring it",
    ),
    # http
    "http.status": CheckInfo(
        _H, _MUST, "HTTP statuses as the transport says (202 for notifications, 400/404/405 ...)"
    ),
    "http.headers": CheckInfo(
        _H, _MUST, "HTTP headers as the transport says (Content-Type, Mcp-Session-Id ...)"
    ),
    "http.origin": CheckInfo(
        _H,
        _MUST,
        "a request with a foreign Origin is refused: 403 from 2025-11-25, any refusal before "
        "(the Origin is validated against DNS rebinding)",
    ),
    "http.session": CheckInfo(
        _H, _SHOULD, "a server with sessions refuses a request without Mcp-Session-Id with 400"
    ),
    # surface
    "surface.list": CheckInfo(
        _F, _MUST, "tools, resources, resource templates and prompts can be listed"
    ),
    "surface.read": CheckInfo(
        _F, _MUST, "every listed resource can be read, every prompt without required arguments got"
    ),
    "surface.json-schema": CheckInfo(
        _F, _MUST, "every tool's inputSchema and outputSchema is a valid JSON Schema"
    ),
    "surface.call": CheckInfo(
        _F,
        _MUST,
        "with --call-tools: tools answer, and structuredContent matches outputSchema",
    ),
}
