"""What the tests of recorded transcripts expect: the messages real peers sent outside
their negotiated revision (``OFF_REVISION``), the requests left unanswered on purpose
(``UNANSWERED``), and the opening of a hand-made 2025-06-18 recording (``OPENING``)."""

from __future__ import annotations

_NEWER_ELICITATION = (
    "server-everything sends 2025-11-25 elicitation (URL mode, multi-select enum schemas) "
    "to a 2025-06-18 client; that revision's ElicitRequest cannot carry them"
)
_RESOURCE_LINK = (
    "server-everything returns resource_link content (defined from 2025-06-18 on) to a "
    "client of an older revision, whose ContentBlock has no such member"
)
#: Rejections of messages a real peer sent outside its negotiated revision:
#: (transcript, JSON path) -> reason. Each one must occur, and no other.
OFF_REVISION: dict[tuple[str, str], str] = {
    ("2024-11-05/everything", "$.result.content[1].type"): _RESOURCE_LINK,
    ("2025-03-26/everything", "$.result.content[1].type"): _RESOURCE_LINK,
    ("2025-06-18/everything", "$.params.requestedSchema.properties[...].type"): (
        _NEWER_ELICITATION
    ),
    ("2025-06-18/everything", "$.params"): _NEWER_ELICITATION,
}
#: Requests left unanswered on purpose: transcript -> (methods, reason).
UNANSWERED: dict[str, tuple[set[str], str]] = {
    "2026-07-28/python-sdk-http": (
        {"tools/call", "subscriptions/listen"},
        "over Streamable HTTP in 2026-07-28 a client cancels by closing the response "
        "stream: no notification and no response are on the wire",
    ),
}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    },
}
INIT_RESULT = {
    "jsonrpc": "2.0",
    "id": 1,
    "result": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "s", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
OPENING = [("client", INIT), ("server", INIT_RESULT), ("client", INITIALIZED)]
