"""The few pieces of ASGI the app needs: headers in, bodies in, responses out.

Plain ASGI 3 (``scope``, ``receive``, ``send``), no framework: the app runs under any
ASGI server and mounts inside any ASGI framework.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from http import HTTPStatus
from typing import Any, Final

import anyio

__all__ = [
    "BodyRefused",
    "BodyStalled",
    "BodyTooLarge",
    "ClientGone",
    "Receive",
    "Scope",
    "Send",
    "client_gone",
    "header_map",
    "read_body",
    "respond",
    "start_response",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class BodyRefused(Exception):
    """The request's body was not read whole: ``status`` is the answer (the connection
    is then closed, which stops the rest of the body at the socket: kept open, the ASGI
    server would read it all, or wait for it, to reach the next request)."""

    status: int = 400


class BodyTooLarge(BodyRefused):
    """The request's body is over the limit."""

    status = 413

    def __init__(self, limit: int) -> None:
        super().__init__(f"the body is over the limit of {limit} bytes")
        self.limit = limit


class BodyStalled(BodyRefused):
    """The client did not send the body it announced within the bound."""

    status = 408

    def __init__(self, seconds: float) -> None:
        super().__init__(f"Request Timeout: the body did not arrive within {seconds:g} s")
        self.seconds = seconds


class ClientGone(Exception):
    """The client disconnected before its request's body was read."""


async def client_gone(receive: Receive) -> None:
    """Return when the client has disconnected (the request's body was read)."""
    while (await receive())["type"] != "http.disconnect":
        pass


#: Header names as :func:`header_map` gives them, by their bytes: decoding and lowering
#: a name costs more than looking it up, and a client sends the same few names on every
#: request. Bounded: a peer sending ever new names only makes it start over.
_NAMES: dict[bytes, str] = {}
_NAMES_KEPT: Final = 256


#: Longer names are not kept: the table holds a bounded number of bytes.
_NAME_KEPT_BYTES: Final = 64


def _name(raw: bytes) -> str:
    name = _NAMES.get(raw)
    if name is None:
        name = raw.decode("latin-1").lower()
        if len(raw) > _NAME_KEPT_BYTES:
            return name
        if len(_NAMES) >= _NAMES_KEPT:
            _NAMES.clear()
        _NAMES[raw] = name
    return name


def header_map(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name (latin-1 decoded, as HTTP/1.1 has
    them); a header given more than once keeps its values joined by ``", "``."""
    raw = scope.get("headers", ())
    if not isinstance(raw, list):
        raw = list(raw)
    known = _NAMES.get
    headers: dict[str, str] = {}
    for raw_name, raw_value in raw:
        headers[known(raw_name) or _name(raw_name)] = raw_value.decode("latin-1")
    if len(headers) == len(raw):
        return headers
    # A name given more than once (the rare case): its values joined, in order (once:
    # joining value by value is quadratic in the repeats).
    values: dict[str, list[str]] = {}
    for raw_name, raw_value in raw:
        values.setdefault(_name(raw_name), []).append(raw_value.decode("latin-1"))
    return {name: ", ".join(given) for name, given in values.items()}


async def read_body(
    receive: Receive, headers: Mapping[str, str], limit: int, stall: float
) -> bytes:
    """The whole body, or :class:`BodyTooLarge` as soon as it is known to be over
    ``limit`` bytes (from ``Content-Length``, or while reading: never more than
    ``limit`` plus one chunk is held), or :class:`BodyStalled` when it has not all
    arrived within ``stall`` seconds (a client announcing a body it does not send would
    else hold the request open for ever). Raises :class:`ClientGone` on a disconnect."""
    declared = headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise BodyTooLarge(limit)
    with anyio.move_on_after(stall):
        return await _read_chunks(receive, limit)
    raise BodyStalled(stall)


async def _read_chunks(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        kind = message["type"]
        if kind == "http.disconnect":
            raise ClientGone()
        if kind != "http.request":
            continue
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge(limit)
            chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _header_list(
    content_type: str | None, headers: Mapping[str, str] | None, length: int | None
) -> list[tuple[bytes, bytes]]:
    out: list[tuple[bytes, bytes]] = []
    if content_type is not None:
        out.append((b"content-type", content_type.encode("latin-1")))
    if length is not None:
        out.append((b"content-length", str(length).encode("ascii")))
    if headers:
        out.extend((k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items())
    return out


async def start_response(
    send: Send,
    status: int,
    content_type: str | None,
    headers: Mapping[str, str] | None = None,
    length: int | None = None,
) -> None:
    """Send the status and headers of a response whose body follows."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": _header_list(content_type, headers, length),
        }
    )


async def respond(
    send: Send,
    status: int,
    body: bytes | None = None,
    *,
    content_type: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> None:
    """Send a whole response. Without ``body``, a plain-text reason phrase is the
    body, except for 202 (empty)."""
    if body is None:
        if status == 202:
            body = b""
        else:
            body = HTTPStatus(status).phrase.encode("ascii")
            content_type = content_type or "text/plain; charset=utf-8"
    await start_response(send, status, content_type if body else None, headers, len(body))
    await send({"type": "http.response.body", "body": body})
