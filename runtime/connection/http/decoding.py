"""Response bodies decoded in bounded steps: :func:`decoded_chunks`.

The HTTP library undoes ``Content-Encoding`` itself, but a whole network chunk at a
time: a few hundred bytes of ``gzip, gzip`` expand to a gigabyte before a reader can
count a byte of it. Here the raw body is inflated with :mod:`zlib` in steps of at most
:data:`STEP` bytes, so a reader that stops at its size limit stops the inflating too.

Only what :data:`ACCEPT_ENCODING` asks for is undone (``gzip``, ``deflate``, and
``identity``); a server that sends anything else, or more than
:data:`MAX_CODINGS` layers, gets the library's decoding error, as a corrupt body does.
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


class _Inflater:
    """One coding undone: ``gzip``, or ``deflate`` (zlib-wrapped, or raw as some
    servers send it)."""

    def __init__(self, coding: str) -> None:
        self._coding = coding
        self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16 if coding == "gzip" else zlib.MAX_WBITS)
        self._started = False

    def inflate(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """The inflated bytes of ``chunks``, at most :data:`STEP` at a time."""
        for chunk in chunks:
            data = chunk
            while not self._zlib.eof:
                try:
                    out = self._zlib.decompress(data, STEP)
                except zlib.error:
                    if self._coding != "deflate" or self._started:
                        raise
                    # Raw deflate, with no zlib header: start again reading it so.
                    self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                    out = self._zlib.decompress(data, STEP)
                self._started = True
                data = self._zlib.unconsumed_tail
                if out:
                    yield out
                elif not data:
                    break  # this chunk is used up, and nothing of it is pending

    def rest(self) -> bytes:
        """What is left once the input ended (a few bytes at most)."""
        return b"" if self._zlib.eof else self._zlib.flush(STEP)


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
