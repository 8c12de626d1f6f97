"""What the HTTP side of ``mcpspec check`` reads and judges with, shared by the link
(:mod:`.http`) and the probes (:mod:`.http_probes`): the limits, the reading of a body
and of what a message answers, and the filing of a transport finding."""

from __future__ import annotations

import secrets
from typing import Any, Final

import httpx
import msgspec
from msgspec import UNSET

from mcpspec.runtime.connection.http.decoding import decoded_chunks
from mcpspec.runtime.session.version_negotiation import is_stateless

from .findings import RevisionReport, broken

__all__ = [
    "ACCEPT_BOTH",
    "DECODE_FAILURES",
    "MAX_MESSAGE",
    "VERSION_HEADER_SINCE",
    "BodyTooLarge",
    "file_once",
    "incoming",
    "minted_why",
    "read_body",
    "transport_page",
    "unknown_session_id",
    "visible_ascii",
]

#: What decoding a message received may raise.
DECODE_FAILURES: Final = (
    msgspec.DecodeError,
    msgspec.ValidationError,
    RecursionError,
    UnicodeError,
)

#: The largest body or SSE event read, in bytes.
MAX_MESSAGE: Final = 16 * 1024 * 1024
ACCEPT_BOTH: Final = "application/json, text/event-stream"
#: The first revision with the ``MCP-Protocol-Version`` header.
VERSION_HEADER_SINCE: Final = "2025-06-18"


class _ErrorCode(msgspec.Struct):
    code: Any = None


class _Incoming(msgspec.Struct):
    """The members of a message received that tell what it answers."""

    id: Any = UNSET
    method: Any = None
    result: msgspec.Raw = msgspec.Raw(b"")
    error: _ErrorCode | None = None


_INCOMING = msgspec.json.Decoder(_Incoming)


def incoming(data: bytes) -> _Incoming | None:
    """What a message received answers, or ``None`` when it is not one JSON object."""
    try:
        return _INCOMING.decode(data)
    except DECODE_FAILURES:
        return None


class BodyTooLarge(Exception):
    """A body went past :data:`MAX_MESSAGE`."""


async def read_body(response: httpx.Response, limit: int = MAX_MESSAGE) -> bytes:
    """The body, read up to ``limit`` bytes; :class:`BodyTooLarge` past it."""
    body = bytearray()
    async for chunk in decoded_chunks(response, error=httpx.DecodingError):
        body += chunk
        if len(body) > limit:
            raise BodyTooLarge(f"the body is over the limit of {limit} bytes")
    return bytes(body)


def visible_ascii(value: str) -> bool:
    """Whether ``value`` is non-empty visible ASCII (0x21 to 0x7E), as a session id must be."""
    return bool(value) and all(0x21 <= ord(c) <= 0x7E for c in value)


def transport_page(revision: str) -> str:
    """The specification page whose rules apply to Streamable HTTP in ``revision``."""
    if is_stateless(revision):
        return f"{revision} Streamable HTTP"
    if revision in ("2025-03-26", "2025-06-18", "2025-11-25"):
        return f"{revision} transports, Streamable HTTP"
    # 2024-11-05 (and unknown versions) over Streamable HTTP: the transport's first page.
    return "2025-03-26 transports, Streamable HTTP"


def file_once(report: RevisionReport, check: str, where: str, why: str) -> None:
    """File the broken rule once: the same check, place and reason are not repeated."""
    for finding in report.findings:
        if finding.check == check and finding.where == where and finding.why == why:
            return
    report.add(broken(check, where, why, report.revision))


def minted_why(method: Any) -> str:
    """Why a 2026-07-28 answer carrying an ``Mcp-Session-Id`` is wrong."""
    return (
        f"{method} was answered with an Mcp-Session-Id; 2026-07-28 has no sessions: a "
        "server does not mint or echo session ids (2026-07-28 Streamable HTTP, Backward "
        "Compatibility)"
    )


def unknown_session_id() -> str:
    """A session id no server minted."""
    return "mcpspec-check-" + secrets.token_hex(16)
