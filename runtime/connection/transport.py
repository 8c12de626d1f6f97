"""Message streams: what a connection reads framed messages from and writes them to.

A :class:`MessageStream` carries whole JSON-RPC messages as bytes, one per ``receive``
and ``send``; how they are framed on the wire is the stream's business. This module has
the protocol and two implementations:

* :class:`NewlineFramedStream` frames messages one per line over any anyio byte stream
  pair (a subprocess's pipes, stdin/stdout, a socket). A line longer than the limit is
  refused without being held in memory: the stream skips it in chunks up to the next
  newline, raises :class:`~mcpspec.runtime.connection.errors.MessageTooLarge`, and
  reads on.
* :func:`memory_pair` connects two in-memory streams, message by message, for tests;
  :func:`memory_byte_pipe` is an in-memory byte pipe to put a
  :class:`NewlineFramedStream` on when a test needs to write raw lines.
"""

from __future__ import annotations

import contextlib
import math
from typing import Final, Protocol

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpspec.runtime.envelope import RequestId
from mcpspec.runtime.session.limits import DEFAULT_LIMITS
from mcpspec.runtime.unparsed_response import WINDOW

from .errors import ConnectionClosed, MessageTooLarge

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "MemoryMessageStream",
    "MessageStream",
    "NewlineFramedStream",
    "memory_byte_pipe",
    "memory_pair",
]

#: The default limit of one framed message, in bytes: the sessions' own default, so a
#: line the framing lets through is one the session takes.
DEFAULT_MAX_MESSAGE_SIZE: Final = DEFAULT_LIMITS.max_message_bytes
#: How much a framed stream asks its byte stream for at a time.
READ_SIZE: Final = 64 * 1024

#: What the anyio byte streams raise when the other end is gone.
_GONE = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)


class MessageStream(Protocol):
    """A bidirectional stream of framed messages (the bytes of one JSON-RPC message
    each)."""

    async def receive(self) -> bytes:
        """The next message. Raises
        :class:`~mcpspec.runtime.connection.errors.ConnectionClosed` at the end of the
        stream (and on every call after), and
        :class:`~mcpspec.runtime.connection.errors.MessageTooLarge` for a message over
        the stream's limit, which is skipped: the next call reads on."""
        ...

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Write one message (its bytes hold no framing). Raises
        :class:`~mcpspec.runtime.connection.errors.ConnectionClosed` when the stream
        cannot be written any more.

        ``related_request_id`` is the request of the other side that the message is
        about (progress, a log message or a request sent by that request's handler), or
        ``None``. A stream with one way out (stdio, memory) ignores it; one whose
        messages leave on the response of the request they are about (Streamable HTTP)
        routes by it. A response needs none: it is about the request it answers."""
        ...

    async def aclose(self) -> None:
        """Close both directions; idempotent."""
        ...


class NewlineFramedStream:
    """Messages framed one per line (``\\n``; a ``\\r`` before it is dropped; blank
    lines are skipped) over a byte receive stream and a byte send stream, as stdio
    uses.

    ``max_message_size`` bounds one line: a longer one is skipped chunk by chunk, so at
    most ``max_message_size`` plus one read (``read_size``) is ever buffered, and
    ``receive`` raises :class:`MessageTooLarge` for it. A final line without a newline
    at the end of the stream is still a message. A message given to ``send`` must not
    contain a newline (a compact JSON encoder never writes one).
    """

    def __init__(
        self,
        receiver: ByteReceiveStream,
        sender: ByteSendStream,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        read_size: int = READ_SIZE,
    ) -> None:
        if max_message_size < 1 or read_size < 1:
            raise ValueError("max_message_size and read_size must be positive")
        self._receiver = receiver
        self._sender = sender
        #: Whether a message given to ``send`` is always written whole, even when the
        #: caller is cancelled (a connection then needs no shield around each write).
        self._completes_sends: bool = getattr(sender, "_completes_sends", False)
        self.max_message_size = max_message_size
        self._read_size = read_size
        self._buffer = bytearray()
        #: Where the next newline search starts (the buffer before it has none).
        self._scanned = 0
        self._eof = False
        self._closed = False

    async def _read(self) -> bytes:
        """The next chunk; ``b""`` at the end of the stream."""
        if self._eof:
            return b""
        try:
            return await self._receiver.receive(self._read_size)
        except _GONE:
            self._eof = True
            return b""

    async def receive(self) -> bytes:
        """The next line, without its newline."""
        buffer = self._buffer
        limit = self.max_message_size
        while True:
            end = buffer.find(b"\n", self._scanned)
            if end >= 0:
                self._scanned = 0
                stop = end - 1 if end and buffer[end - 1] == 0x0D else end
                with memoryview(buffer) as view:
                    line = bytes(view[:stop])
                del buffer[: end + 1]
                if stop > limit:
                    raise MessageTooLarge(stop, limit, line[:WINDOW])
                if not line or line.isspace():
                    continue
                return line
            # A trailing CR may be the first half of the line's CRLF: not counted yet.
            if len(buffer) - (buffer[-1:] == b"\r") > limit:
                head = bytes(buffer[:WINDOW])
                raise MessageTooLarge(await self._skip_line(), limit, head)
            self._scanned = len(buffer)
            chunk = await self._read()
            if not chunk:
                return self._last_line()
            buffer += chunk

    async def _skip_line(self) -> int:
        """Drop the buffered start of an oversized line and read on to its newline,
        keeping what follows; the number of bytes dropped."""
        skipped = len(self._buffer)
        self._buffer.clear()
        self._scanned = 0
        while True:
            chunk = await self._read()
            if not chunk:
                return skipped
            end = chunk.find(b"\n")
            if end < 0:
                skipped += len(chunk)
                continue
            self._buffer += memoryview(chunk)[end + 1 :]
            return skipped + end

    def _last_line(self) -> bytes:
        """At the end of the stream: what is buffered, if anything, else the end."""
        line = bytes(self._buffer).rstrip(b"\r")
        self._buffer.clear()
        self._scanned = 0
        if line and not line.isspace():
            return line
        raise ConnectionClosed("the stream ended")

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        """Write ``data`` and a newline (one way out: ``related_request_id`` is
        ignored)."""
        if self._closed:
            raise ConnectionClosed("the stream is closed")
        try:
            await self._sender.send(data + b"\n")
        except _GONE as exc:
            raise ConnectionClosed(f"the stream cannot be written: {exc!r}") from exc

    async def aclose(self) -> None:
        """Close the send side, then the receive side."""
        if self._closed:
            return
        self._closed = True
        self._eof = True
        with anyio.CancelScope(shield=True):
            for stream in (self._sender, self._receiver):
                with contextlib.suppress(*_GONE):
                    await stream.aclose()


class MemoryMessageStream:
    """One end of an in-memory connection (see :func:`memory_pair`)."""

    def __init__(
        self,
        receiver: MemoryObjectReceiveStream[bytes],
        sender: MemoryObjectSendStream[bytes],
    ) -> None:
        self._receiver = receiver
        self._sender = sender

    async def receive(self) -> bytes:
        try:
            return await self._receiver.receive()
        except _GONE:
            raise ConnectionClosed("the other end closed") from None

    async def send(self, data: bytes, *, related_request_id: RequestId | None = None) -> None:
        try:
            await self._sender.send(data)
        except _GONE:
            raise ConnectionClosed("the other end closed") from None

    async def aclose(self) -> None:
        self._sender.close()
        self._receiver.close()


def memory_pair() -> tuple[MemoryMessageStream, MemoryMessageStream]:
    """Two connected in-memory message streams (unbounded buffers): what one sends, the
    other receives; closing one ends the other's ``receive``."""
    a_send, b_receive = anyio.create_memory_object_stream[bytes](math.inf)
    b_send, a_receive = anyio.create_memory_object_stream[bytes](math.inf)
    return MemoryMessageStream(a_receive, a_send), MemoryMessageStream(b_receive, b_send)


class _MemoryByteSendStream(ByteSendStream):
    def __init__(self, sender: MemoryObjectSendStream[bytes]) -> None:
        self._sender = sender

    async def send(self, item: bytes) -> None:
        await self._sender.send(bytes(item))

    async def aclose(self) -> None:
        self._sender.close()

    async def send_eof(self) -> None:
        self._sender.close()


class _MemoryByteReceiveStream(ByteReceiveStream):
    def __init__(self, receiver: MemoryObjectReceiveStream[bytes]) -> None:
        self._receiver = receiver
        self._rest = b""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = self._rest or await self._receiver.receive()
        self._rest = data[max_bytes:]
        return data[:max_bytes]

    async def aclose(self) -> None:
        self._receiver.close()


def memory_byte_pipe() -> tuple[ByteSendStream, ByteReceiveStream]:
    """An in-memory byte pipe (unbounded): the chunks written to the first end are read
    from the second, at most ``max_bytes`` at a time; closing the first ends the second
    (``anyio.EndOfStream``)."""
    sender, receiver = anyio.create_memory_object_stream[bytes](math.inf)
    return _MemoryByteSendStream(sender), _MemoryByteReceiveStream(receiver)
