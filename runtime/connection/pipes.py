"""Byte streams over POSIX file descriptors (pipes, terminals, sockets, files) that never
block the event loop: what stdio reads and writes.

:class:`FdReceiveStream` reads without blocking. On asyncio, once a read would block,
the descriptor stays registered with the event loop and a callback reads what arrives at
each wake-up, so that a message costs no registering and unregistering of the descriptor
(two system calls each); when the reader falls ``buffer_limit`` bytes behind, the
callback pauses until the reader catches up. Elsewhere (trio), each wait is
``anyio.wait_readable``.

:class:`FdSendStream` writes without blocking and without a checkpoint when the
descriptor takes the bytes at once (a pipe has room for a message, usually). A write it
has to wait for finishes even if the caller is cancelled meanwhile, so a message is never
cut short on the wire (:attr:`FdSendStream._completes_sends`).
"""

from __future__ import annotations

import asyncio
import os
from collections import deque
from contextlib import suppress
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

__all__ = ["FdReceiveStream", "FdSendStream"]

#: How much a read asks the descriptor for.
READ_SIZE: Final = 64 * 1024
#: How far (in bytes) the reading callback may run ahead of the stream's reader.
BUFFER_LIMIT: Final = 256 * 1024
#: Seconds a send cancelled with part of its message written goes on, for the reader to
#: take the rest, before the stream is closed.
SEND_GRACE: Final = 5.0


def running_asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The asyncio event loop the current task runs on (``None`` under another
    library, trio say, even one hosted by an asyncio loop)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop if asyncio.current_task(loop) is not None else None


class FdReceiveStream(ByteReceiveStream):
    """Reads file descriptor ``fd`` (made non-blocking while the stream is open;
    ``owned``: closed with the stream)."""

    def __init__(
        self,
        fd: int,
        *,
        owned: bool = False,
        read_size: int = READ_SIZE,
        buffer_limit: int = BUFFER_LIMIT,
    ) -> None:
        self._fd = fd
        self._owned = owned
        self._closed = False
        self._read_size = read_size
        self._buffer_limit = buffer_limit
        self._was_blocking = os.get_blocking(fd)
        os.set_blocking(fd, False)
        #: What the callback read and the reader has not taken yet.
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        #: Why reading ended (once the chunks are taken): the end of the stream, an
        #: error of the descriptor, or the stream being closed.
        self._end: type[anyio.EndOfStream | anyio.ClosedResourceError] | OSError | None = None
        #: The loop whose callback reads the descriptor, while one does.
        self._watcher: asyncio.AbstractEventLoop | None = None
        self._waiter: asyncio.Future[None] | None = None

    async def receive(self, max_bytes: int = READ_SIZE) -> bytes:
        while True:
            if self._chunks:
                return self._take(max_bytes)
            if self._end is not None:
                self._raise_end()
            if self._watcher is not None:
                await self._wait_for_callback(self._watcher)
                continue
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                if not self._watch():
                    await anyio.wait_readable(self._fd)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data

    def _take(self, max_bytes: int) -> bytes:
        chunk = self._chunks.popleft()
        if len(chunk) > max_bytes:
            self._chunks.appendleft(chunk[max_bytes:])
            chunk = chunk[:max_bytes]
        self._buffered -= len(chunk)
        return chunk

    def _raise_end(self) -> None:
        end = self._end
        if isinstance(end, OSError):
            raise anyio.BrokenResourceError from end
        assert end is not None
        raise end

    def _watch(self) -> bool:
        """Have the event loop's callback read the descriptor from now on (asyncio
        only); whether it does."""
        loop = running_asyncio_loop()
        if loop is None:
            return False
        try:
            loop.add_reader(self._fd, self._on_readable)
        except (NotImplementedError, RuntimeError, ValueError, OSError):
            return False  # a loop that cannot watch it: wait_readable decides
        self._watcher = loop
        return True

    def _unwatch(self) -> None:
        loop, self._watcher = self._watcher, None
        if loop is not None and not loop.is_closed():
            loop.remove_reader(self._fd)

    async def _wait_for_callback(self, loop: asyncio.AbstractEventLoop) -> None:
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiter = waiter
        try:
            await waiter
        finally:
            self._waiter = None

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _on_readable(self) -> None:
        """The event loop's callback: read what arrived."""
        try:
            data = os.read(self._fd, self._read_size)
        except BlockingIOError:
            return
        except OSError as exc:
            self._finish(exc)
            return
        if not data:
            self._finish(anyio.EndOfStream)
            return
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered >= self._buffer_limit:
            # Paused: the reader reads on by itself once it has taken what is here.
            self._unwatch()
        self._wake()

    def _finish(self, end: type[anyio.EndOfStream | anyio.ClosedResourceError] | OSError) -> None:
        self._end = end
        self._unwatch()
        self._wake()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._chunks.clear()
        self._finish(anyio.ClosedResourceError)
        _release(self._fd, self._owned, self._was_blocking)


class FdSendStream(ByteSendStream):
    """Writes file descriptor ``fd`` (made non-blocking while the stream is open;
    ``owned``: closed with the stream)."""

    #: A message given to :meth:`send` is written whole, even if the caller is cancelled
    #: while the descriptor has no room (the connection then needs no shield of its own),
    #: or, when the reader takes nothing for :data:`SEND_GRACE` seconds after that, the
    #: stream is closed: what follows could not be framed.
    _completes_sends: Final = True

    def __init__(self, fd: int, *, owned: bool = False) -> None:
        self._fd = fd
        self._owned = owned
        self._closed = False
        self._was_blocking = os.get_blocking(fd)
        os.set_blocking(fd, False)

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            written = os.write(self._fd, item)
        except BlockingIOError:
            written = 0
        except OSError as exc:
            raise anyio.BrokenResourceError from exc
        if written < len(item):
            rest = [memoryview(item)[written:]]
            try:
                await self._send_rest(rest)
            except anyio.get_cancelled_exc_class():
                # Part of a message is out: it is finished while the reader takes it
                # (the caller's cancellation then reaches it at its next checkpoint).
                with anyio.CancelScope(shield=True):
                    with anyio.move_on_after(SEND_GRACE):
                        await self._send_rest(rest)
                    if not rest[0]:
                        return
                    await self.aclose()
                raise

    async def _send_rest(self, rest: list[memoryview]) -> None:
        """Write ``rest[0]``, keeping in it what is left to write at each step."""
        while rest[0]:
            if self._closed:
                raise anyio.ClosedResourceError
            await anyio.wait_writable(self._fd)
            try:
                written = os.write(self._fd, rest[0])
            except BlockingIOError:
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            rest[0] = rest[0][written:]

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        _release(self._fd, self._owned, self._was_blocking)


def _release(fd: int, owned: bool, was_blocking: bool) -> None:
    """Wake whoever waits on ``fd``, then close it when the stream owns it, else give it
    its blocking mode back."""
    anyio.notify_closing(fd)
    if owned:
        os.close(fd)
    else:
        with suppress(OSError):
            os.set_blocking(fd, was_blocking)
