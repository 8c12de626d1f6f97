"""Response bodies decoded in bounded steps: :func:`decoded_chunks`.

The HTTP library undoes ``Content-Encoding`` itself, but a whole network chunk at a
time: a few hundred bytes of ``gzip, gzip`` expand to a gigabyte before a reader can
count a byte of it. Here the raw body is inflated with :mod:`zlib` in steps of at most
:data:`STEP` bytes, so a reader that stops at its size limit stops the inflating too.

Only what :data:`ACCEPT_ENCODING` asks for is undone (``gzip``, of one member or more;
``deflate``, zlib-wrapped or raw; and ``identity``); anything else, more than
:data:`MAX_CODINGS` layers, a corrupt body or one cut short raise the library's
decoding error.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from typing import Any, Final, Protocol

__all__ = ["ACCEPT_ENCODING", "MAX_CODINGS", "STEP", "decoded_chunks"]

#: The ``Accept-Encoding`` every request sends: the codings undone here.
ACCEPT_ENCODING: Final = "gzip, deflate"
#: The most bytes one inflating step yields.
STEP: Final = 64 * 1024
#: The most codings a body may be wrapped in (one is what servers send).
MAX_CODINGS: Final = 2


class _Response(Protocol):
    """What is read of a response (of ``httpx`` or ``httpx2``)."""

    @property
    def headers(self) -> Any: ...

    def aiter_raw(self) -> AsyncIterator[bytes]: ...


#: zlib's window bits for a gzip member.
_GZIP: Final = zlib.MAX_WBITS | 16


class _Inflater:
    """One coding undone: ``gzip`` (members one after another, as RFC 1952 allows), or
    ``deflate`` (zlib-wrapped, or raw as some servers send it: told apart by the zlib
    header, once its two bytes are in)."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._zlib = zlib.decompressobj(_GZIP) if coding == "gzip" else None
        #: The first bytes of a deflate body, until there are two to tell it by.
        self._head = b""
        #: Whether any byte came (an empty body is no compressed stream cut short).
        self._fed = False

    def _deflate(self, data: bytes) -> tuple[Any, bytes]:
        """The deflate decompressor once the body's first two bytes are in (with what
        is left to give it), else ``None``."""
        head = self._head = self._head + data
        if len(head) < 2:
            return None, b""
        cmf, flg = head[0], head[1]
        wrapped = cmf & 0x0F == 8 and (cmf << 8 | flg) % 31 == 0
        self._zlib = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        self._head = b""
        return self._zlib, head

    def inflate(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """The inflated bytes of ``chunks``, at most :data:`STEP` at a time."""
        for chunk in chunks:
            self._fed = self._fed or bool(chunk)
            inflater, data = (self._zlib, chunk) if self._zlib else self._deflate(chunk)
            while inflater is not None:
                if inflater.eof:
                    data = inflater.unused_data + data
                    if self._coding != "gzip" or not data:
                        break  # what follows a deflate stream is no part of it
                    inflater = self._zlib = zlib.decompressobj(_GZIP)  # the next member
                out = inflater.decompress(data, STEP)
                data = inflater.unconsumed_tail
                if out:
                    yield out
                elif not data and not inflater.eof:
                    break  # this chunk is used up, and nothing of it is pending

    def rest(self) -> bytes:
        """What is left once the input ended (a few bytes at most); ``zlib.error``
        when the compressed stream was cut short."""
        inflater = self._zlib
        if not self._fed or (inflater is not None and inflater.eof):
            return b""
        if inflater is not None:
            inflater.flush()
        raise zlib.error("the compressed body ends before its end")


def _codings(response: _Response, error: type[Exception]) -> list[str]:
    """The codings to undo, the last one applied first."""
    header: str = response.headers.get("content-encoding", "")
    codings = [
        coding.strip().lower()
        for coding in header.split(",")
        if coding.strip() and coding.strip().lower() != "identity"
    ]
    for coding in codings:
        if coding not in ("gzip", "deflate", "x-gzip"):
            raise error(f"the body's Content-Encoding {coding[:40]!r} was not asked for")
    if len(codings) > MAX_CODINGS:
        raise error(f"the body is wrapped in {len(codings)} Content-Encodings")
    return ["gzip" if coding == "x-gzip" else coding for coding in reversed(codings)]


async def decoded_chunks(
    response: _Response, *, error: type[Exception]
) -> AsyncGenerator[bytes, None]:
    """The body of ``response`` with its ``Content-Encoding`` undone, in chunks of at
    most :data:`STEP` bytes when it is encoded. A coding not asked for, or a corrupt
    body, raises ``error`` (the library's decoding error) with the reason."""
    if getattr(response, "is_stream_consumed", False):
        # Read whole already, and decoded by the library: a response a transport made
        # in memory (a test's), not one off the network.
        yield bytes(getattr(response, "content", b""))
        return
    inflaters = [_Inflater(coding) for coding in _codings(response, error)]
    raw = response.aiter_raw()
    if not inflaters:
        async for chunk in raw:
            yield chunk
        return
    try:
        async for chunk in raw:
            pieces: Iterator[bytes] = iter((chunk,))
            for inflater in inflaters:
                pieces = inflater.inflate(pieces)
            for piece in pieces:
                yield piece
        for index, inflater in enumerate(inflaters):
            pieces = iter((inflater.rest(),))
            for later in inflaters[index + 1 :]:
                pieces = later.inflate(pieces)
            for piece in pieces:
                if piece:
                    yield piece
    except zlib.error as exc:
        raise error(f"the body cannot be decoded: {exc}") from None
