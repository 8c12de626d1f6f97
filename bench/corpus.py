"""The benchmark corpus: realistic MCP wire messages, built deterministically in code.

Every revision gets the same seven kinds of traffic (eight for 2026-07-28), shaped the way
real peers send them in that revision (fields a revision does not know are left out, the
2026-07-28 ``_meta`` protocol keys and ``resultType`` are put in):

========================  =====================================================
initialize request        client hello (``server/discover`` in 2026-07-28)
initialize result         server hello (``server/discover`` result)
tools/list result         200 tools with realistic JSON Schema inputs (~300 KB)
tools/call request        one call with arguments and a progress token
tools/call result         10 text content blocks (~4 KB)
resources/read result     one 1 MB text resource (a log file: quotes, newlines)
progress notification     ``notifications/progress``
input_required result     2026-07-28 only: a tools/call answered with an
                          elicitation and a sampling request
========================  =====================================================

Nothing here uses ``random``: a small xorshift generator with a fixed seed makes the
bytes identical on every Python version, so runs on different machines compare.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = ["REVISIONS", "Message", "build", "tools_list_result"]

#: Revisions the corpus is built for, oldest first (the same list as ``mcpspec.REVISIONS``).
REVISIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")

Kind = Literal["request", "notification", "response"]
Sender = Literal["client", "server"]


@dataclass(frozen=True)
class Message:
    """One corpus message: its wire bytes and what it is."""

    #: Short label used in tables ("tools/list result").
    name: str
    #: ``request``, ``notification`` or ``response``.
    kind: Kind
    #: The message's method, or for a response the method of the request it answers.
    method: str
    #: Which side sends it.
    sender: Sender
    #: The JSON-RPC id (``None`` for a notification).
    id: int | None
    #: The message as plain JSON data (what ``orjson.loads`` gives back).
    value: dict[str, Any]
    #: The wire bytes (compact JSON, UTF-8).
    data: bytes


def _at_least(revision: str, other: str) -> bool:
    """True when ``revision`` is ``other`` or newer (ISO dates compare as strings)."""
    return revision >= other


def _dumps(value: Any) -> bytes:
    """Compact, deterministic JSON (key order as built, non-ASCII kept as UTF-8)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


class _Rng:
    """xorshift64*: deterministic across platforms and Python versions."""

    def __init__(self, seed: int) -> None:
        self.state = seed or 0x9E3779B97F4A7C15

    def next(self) -> int:
        """The next 64-bit value."""
        x = self.state
        x ^= (x >> 12) & 0xFFFFFFFFFFFFFFFF
        x ^= (x << 25) & 0xFFFFFFFFFFFFFFFF
        x ^= (x >> 27) & 0xFFFFFFFFFFFFFFFF
        self.state = x
        return (x * 0x2545F4914F6CDD1D) & 0xFFFFFFFFFFFFFFFF

    def below(self, n: int) -> int:
        """An integer in ``range(n)``."""
        return (self.next() >> 11) % n

    def pick(self, items: tuple[Any, ...] | list[Any]) -> Any:
        """One element of ``items``."""
        return items[self.below(len(items))]

    def chance(self, percent: int) -> bool:
        """True ``percent`` times in a hundred."""
        return self.below(100) < percent


# -- vocabulary for tools --------------------------------------------------------------------

_VERBS = (
    "list", "get", "create", "update", "delete", "search", "sync", "export", "import",
    "archive", "restore", "assign", "comment_on", "summarize", "validate", "deploy",
)  # fmt: skip
_NOUNS = (
    "issues", "pull_requests", "files", "branches", "calendar_events", "contacts", "tickets",
    "invoices", "customers", "orders", "deployments", "alerts", "dashboards", "documents",
    "messages", "channels", "pipelines", "secrets", "datasets", "notebooks", "queries",
    "reports", "users", "teams", "projects",
)  # fmt: skip
_SYSTEMS = (
    "GitHub", "Jira", "Google Drive", "Slack", "Salesforce", "Stripe", "PagerDuty",
    "Grafana", "Confluence", "Notion", "Snowflake", "Kubernetes", "Linear", "Zendesk",
)  # fmt: skip
_PHRASES = (
    "Results are paginated; pass the returned cursor to fetch the next page.",
    "Requires the caller to have write access to the target workspace.",
    "Timestamps are ISO 8601 in UTC unless a timezone is given.",
    "Use this before making changes so the user can review the current state.",
    "Large responses are truncated to the first 100 items.",
    "Fails with a tool error when the object does not exist or was deleted.",
    "The operation is idempotent: repeating it with the same arguments is safe.",
    "Prefer narrow filters: broad queries are slow and rate limited.",
)
_PROPS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("query", {"type": "string", "description": "Free-text search query; supports quoted phrases and field:value filters."}),  # noqa: E501
    ("limit", {"type": "integer", "description": "Maximum number of items to return.", "minimum": 1, "maximum": 100, "default": 25}),  # noqa: E501
    ("cursor", {"type": "string", "description": "Opaque pagination cursor from a previous call."}),
    ("owner", {"type": "string", "description": "Account or organisation that owns the object."}),
    ("repository", {"type": "string", "description": "Repository name without the owner prefix.", "pattern": "^[A-Za-z0-9_.-]+$"}),  # noqa: E501
    ("state", {"type": "string", "enum": ["open", "closed", "all"], "description": "Filter by state.", "default": "open"}),  # noqa: E501
    ("labels", {"type": "array", "items": {"type": "string"}, "description": "Only return items carrying all of these labels.", "uniqueItems": True}),  # noqa: E501
    ("since", {"type": "string", "format": "date-time", "description": "Only items updated at or after this time (ISO 8601)."}),  # noqa: E501
    ("include_archived", {"type": "boolean", "description": "Also return archived items.", "default": False}),  # noqa: E501
    ("sort", {"type": "string", "enum": ["created", "updated", "priority", "relevance"], "description": "Sort key.", "default": "updated"}),  # noqa: E501
    ("direction", {"type": "string", "enum": ["asc", "desc"], "default": "desc"}),
    ("id", {"type": "string", "description": "Identifier of the object, as returned by the list tools."}),  # noqa: E501
    ("title", {"type": "string", "description": "Short human-readable title.", "maxLength": 256}),
    ("body", {"type": "string", "description": "Markdown body. Mentions (@user) notify the mentioned people."}),  # noqa: E501
    ("assignees", {"type": "array", "items": {"type": "string", "description": "User login"}, "maxItems": 10}),  # noqa: E501
    ("priority", {"type": "integer", "description": "1 (highest) to 5 (lowest).", "minimum": 1, "maximum": 5}),  # noqa: E501
    ("amount", {"type": "number", "description": "Amount in the account currency.", "exclusiveMinimum": 0}),  # noqa: E501
    ("dry_run", {"type": "boolean", "description": "Validate and report what would change without changing anything."}),  # noqa: E501
    ("timeout_seconds", {"type": "number", "description": "Give up after this many seconds.", "default": 30.0}),  # noqa: E501
    ("filter", {
        "type": "object",
        "description": "Structured filter; every given field must match.",
        "properties": {
            "author": {"type": "string"},
            "created_after": {"type": "string", "format": "date-time"},
            "created_before": {"type": "string", "format": "date-time"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "additionalProperties": False,
    }),
    ("fields", {"type": "array", "items": {"type": "string", "enum": ["id", "title", "status", "owner", "created", "updated", "url"]}, "description": "Fields to include in each item."}),  # noqa: E501
    ("metadata", {"type": "object", "additionalProperties": {"type": "string"}, "description": "Arbitrary key/value pairs stored with the object."}),  # noqa: E501
)  # fmt: skip


def _tool(rng: _Rng, index: int, revision: str) -> dict[str, Any]:
    """One realistic tool definition, as a server of ``revision`` lists it."""
    verb, noun, system = rng.pick(_VERBS), rng.pick(_NOUNS), rng.pick(_SYSTEMS)
    name = f"{verb}_{noun}_{index:03d}"
    description = f"{verb.replace('_', ' ').capitalize()} {noun.replace('_', ' ')} in {system}. "
    description += " ".join(rng.pick(_PHRASES) for _ in range(2 + rng.below(3)))
    chosen: dict[str, dict[str, Any]] = {}
    for _ in range(4 + rng.below(8)):
        key, schema = rng.pick(_PROPS)
        chosen[key] = schema
    required = [k for k in chosen if rng.chance(35)] or [next(iter(chosen))]
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": chosen,
        "required": required,
        "additionalProperties": False,
    }
    if _at_least(revision, "2025-11-25") and rng.chance(30):
        input_schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    tool: dict[str, Any] = {"name": name}
    if _at_least(revision, "2025-06-18"):
        tool["title"] = f"{verb.replace('_', ' ').title()} {noun.replace('_', ' ')} ({system})"
    tool["description"] = description
    tool["inputSchema"] = input_schema
    if _at_least(revision, "2025-06-18") and rng.chance(25):
        tool["outputSchema"] = {
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {"type": "object"}},
                "next_cursor": {"type": "string"},
                "total": {"type": "integer"},
            },
            "required": ["items"],
        }
    if _at_least(revision, "2025-03-26") and rng.chance(60):
        read_only = verb in ("list", "get", "search", "export", "summarize", "validate")
        annotations: dict[str, Any] = {"readOnlyHint": read_only, "openWorldHint": True}
        if not read_only:
            annotations["destructiveHint"] = verb in ("delete", "archive", "update")
            annotations["idempotentHint"] = verb in ("update", "sync", "assign")
        tool["annotations"] = annotations
    if _at_least(revision, "2025-11-25") and rng.chance(20):
        tool["icons"] = [
            {
                "src": f"https://cdn.example.com/icons/{system.lower().replace(' ', '-')}.svg",
                "mimeType": "image/svg+xml",
                "sizes": ["any"],
            }
        ]
    if _at_least(revision, "2025-11-25") and rng.chance(15):
        tool["execution"] = {"taskSupport": "optional"}
    return tool


# -- message builders ------------------------------------------------------------------------

_CLIENT_INFO: Final = {"name": "example-desktop", "version": "0.14.2"}
_SERVER_INFO: Final = {"name": "acme-workspace-server", "version": "3.8.1"}


def _client_capabilities(revision: str) -> dict[str, Any]:
    caps: dict[str, Any] = {"roots": {"listChanged": True}, "sampling": {}}
    if _at_least(revision, "2025-11-25"):
        caps["elicitation"] = {"form": {}, "url": {}}
    elif _at_least(revision, "2025-06-18"):
        caps["elicitation"] = {}
    return caps


def _request_meta(revision: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """``params._meta`` of a request: the 2026-07-28 protocol keys, plus ``extra``."""
    meta: dict[str, Any] = dict(extra or {})
    if _at_least(revision, "2026-07-28"):
        meta["io.modelcontextprotocol/protocolVersion"] = revision
        meta["io.modelcontextprotocol/clientInfo"] = _CLIENT_INFO
        meta["io.modelcontextprotocol/clientCapabilities"] = _client_capabilities(revision)
    return meta


def _result(revision: str, body: dict[str, Any], *, cacheable: bool = False) -> dict[str, Any]:
    """A result body with the 2026-07-28 additions (``resultType``, cache hints)."""
    if _at_least(revision, "2026-07-28"):
        body = {**body, "resultType": "complete"}
        if cacheable:
            body["ttlMs"] = 60000
            body["cacheScope"] = "private"
        body["_meta"] = {"io.modelcontextprotocol/serverInfo": _SERVER_INFO}
    return body


def _server_capabilities(revision: str) -> dict[str, Any]:
    caps: dict[str, Any] = {
        "logging": {},
        "prompts": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "tools": {"listChanged": True},
    }
    if _at_least(revision, "2025-03-26"):
        caps["completions"] = {}
    return caps


def _hello(revision: str) -> tuple[Message, Message]:
    """initialize request and result (``server/discover`` in 2026-07-28)."""
    if _at_least(revision, "2026-07-28"):
        req = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "server/discover",
            "params": {"_meta": _request_meta(revision)},
        }
        res_body = _result(
            revision,
            {
                "supportedVersions": ["2026-07-28", "2025-11-25"],
                "capabilities": _server_capabilities(revision),
                "instructions": "Workspace tools for issues, documents and deployments. "
                "Call list tools before get tools; ids are stable.",
            },
            cacheable=True,
        )
        method, label = "server/discover", "server/discover"
    else:
        client_info = dict(_CLIENT_INFO)
        if _at_least(revision, "2025-06-18"):
            client_info["title"] = "Example Desktop"
        req = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": revision,
                "capabilities": _client_capabilities(revision),
                "clientInfo": client_info,
            },
        }
        server_info = dict(_SERVER_INFO)
        if _at_least(revision, "2025-06-18"):
            server_info["title"] = "ACME Workspace"
        res_body = {
            "protocolVersion": revision,
            "capabilities": _server_capabilities(revision),
            "serverInfo": server_info,
            "instructions": "Workspace tools for issues, documents and deployments. "
            "Call list tools before get tools; ids are stable.",
        }
        method, label = "initialize", "initialize"
    res = {"jsonrpc": "2.0", "id": 1, "result": res_body}
    return (
        Message(f"{label} request", "request", method, "client", 1, req, _dumps(req)),
        Message(f"{label} result", "response", method, "server", 1, res, _dumps(res)),
    )


def tools_list_result(revision: str, count: int = 200) -> dict[str, Any]:
    """The ``result`` of a tools/list response with ``count`` tools."""
    rng = _Rng(0x5EED0000 + count)
    tools = [_tool(rng, i, revision) for i in range(count)]
    return _result(revision, {"tools": tools, "nextCursor": "eyJvZmZzZXQiOjIwMH0="}, cacheable=True)


def _tools_list(revision: str) -> Message:
    res = {"jsonrpc": "2.0", "id": 2, "result": tools_list_result(revision)}
    return Message("tools/list result", "response", "tools/list", "server", 2, res, _dumps(res))


def _tools_call_request(revision: str) -> Message:
    req = {
        "jsonrpc": "2.0",
        "id": 17,
        "method": "tools/call",
        "params": {
            "name": "search_issues",
            "arguments": {"repo": "octo/widgets", "query": "is:open label:bug", "limit": 25},
            "_meta": _request_meta(revision, {"progressToken": "call-7f3a"}),
        },
    }
    return Message("tools/call request", "request", "tools/call", "client", 17, req, _dumps(req))


def _tools_call_result(revision: str) -> Message:
    rng = _Rng(0xB10C5)
    blocks = []
    for i in range(10):
        words = " ".join(rng.pick(_PHRASES) for _ in range(5))
        text = f"#{4100 + i} [{rng.pick(('bug', 'p1', 'regression', 'ui'))}] {words} (é✓)"
        blocks.append({"type": "text", "text": text})
    body: dict[str, Any] = {"content": blocks, "isError": False}
    res = {"jsonrpc": "2.0", "id": 17, "result": _result(revision, body)}
    return Message("tools/call result", "response", "tools/call", "server", 17, res, _dumps(res))


def _log_text(size: int) -> str:
    """About ``size`` bytes of log lines (quotes, backslashes and newlines to escape)."""
    rng = _Rng(0x10C)
    lines = []
    total = 0
    n = 0
    while total < size:
        n += 1
        line = (
            f"2025-07-01T12:{n // 3600 % 60:02d}:{n // 60 % 60:02d}.{n % 1000:03d}Z "
            f"{rng.pick(('INFO', 'INFO', 'INFO', 'WARN', 'DEBUG', 'ERROR'))} "
            f"[worker-{rng.below(16)}] request_id={rng.next():016x} method=GET "
            f'path="/api/v1/items/{rng.below(100000)}" status={rng.pick((200, 200, 304, 404))} '
            f'duration_ms={rng.below(900)} ua="Mozilla/5.0 (X11; Linux x86_64)"\n'
        )
        lines.append(line)
        total += len(line)
    return "".join(lines)


def _resources_read(revision: str) -> Message:
    body = {
        "contents": [
            {
                "uri": "file:///var/log/acme/api-2025-07-01.log",
                "mimeType": "text/plain",
                "text": _log_text(1_000_000),
            }
        ]
    }
    res = {"jsonrpc": "2.0", "id": 23, "result": _result(revision, body, cacheable=True)}
    return Message(
        "resources/read result", "response", "resources/read", "server", 23, res, _dumps(res)
    )


def _progress(revision: str) -> Message:
    params: dict[str, Any] = {"progressToken": "call-7f3a", "progress": 42, "total": 100}
    if _at_least(revision, "2025-03-26"):
        params["message"] = "Indexed 42 of 100 files"
    note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
    return Message(
        "progress notification",
        "notification",
        "notifications/progress",
        "server",
        None,
        note,
        _dumps(note),
    )


def _input_required(revision: str) -> Message:
    body = {
        "resultType": "input_required",
        "inputRequests": {
            "confirm_deploy": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "Deploy build 8121 to production?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "confirm": {"type": "boolean", "title": "Confirm", "default": False},
                            "reason": {
                                "type": "string",
                                "title": "Reason",
                                "description": "Why deploy now",
                            },
                        },
                        "required": ["confirm"],
                    },
                },
            },
            "summarize_changes": {
                "method": "sampling/createMessage",
                "params": {
                    "messages": [
                        {
                            "role": "user",
                            "content": {
                                "type": "text",
                                "text": "Summarize the 14 commits since release 3.8.0.",
                            },
                        }
                    ],
                    "systemPrompt": "You are a release manager.",
                    "maxTokens": 400,
                },
            },
        },
        "requestState": "v1." + "".join(f"{_Rng(7 + i).next():016x}" for i in range(20)),
        "_meta": {"io.modelcontextprotocol/serverInfo": _SERVER_INFO},
    }
    res = {"jsonrpc": "2.0", "id": 31, "result": body}
    return Message(
        "input_required result", "response", "tools/call", "server", 31, res, _dumps(res)
    )


def build(revision: str) -> list[Message]:
    """The corpus of ``revision``, in table order."""
    if revision not in REVISIONS:
        raise ValueError(f"unknown revision {revision!r}; known: {', '.join(REVISIONS)}")
    hello_request, hello_result = _hello(revision)
    messages = [
        hello_request,
        hello_result,
        _tools_list(revision),
        _tools_call_request(revision),
        _tools_call_result(revision),
        _resources_read(revision),
        _progress(revision),
    ]
    if _at_least(revision, "2026-07-28"):
        messages.append(_input_required(revision))
    return messages
