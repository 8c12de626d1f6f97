"""Server-sent events, as the server writes them (the WHATWG event-stream format).

An event is ``field: value`` lines and a blank line. A JSON-RPC message written by a
compact encoder holds no line break, so its bytes are one ``data`` line; anything else
is split at its line breaks, one ``data`` line each, so that no input can forge fields.
"""

from __future__ import annotations

from typing import Final

__all__ = ["KEEPALIVE", "SSE_HEADERS", "encode_event"]

#: A comment line: keeps a quiet stream (and the proxies on its way) from timing out.
KEEPALIVE: Final = b": keep-alive\n\n"

#: The headers of every SSE response (``X-Accel-Buffering`` stops proxies buffering it).
SSE_HEADERS: Final = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def _field(name: bytes, value: bytes) -> bytes:
    if b"\n" in value or b"\r" in value:
        value = value.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        return b"".join(name + b": " + line + b"\n" for line in value.split(b"\n"))
    return name + b": " + value + b"\n"


def encode_event(
    data: bytes,
    *,
    event: str | None = "message",
    event_id: str | None = None,
    retry_ms: int | None = None,
) -> bytes:
    """One event: ``data`` (the message's bytes, or ``b""`` for a priming event), with
    an ``event`` type, an ``id`` and a ``retry`` delay when given."""
    parts: list[bytes] = []
    if event_id is not None:
        parts.append(_field(b"id", event_id.encode("utf-8")))
    if event is not None:
        parts.append(_field(b"event", event.encode("utf-8")))
    if retry_ms is not None:
        parts.append(b"retry: %d\n" % retry_ms)
    parts.append(_field(b"data", data))
    parts.append(b"\n")
    return b"".join(parts)
