"""The stdio transport: one JSON-RPC message per line on a process's stdin and stdout.

Server side, :func:`stdio_server_stream` serves this process's stdin and stdout as a
:class:`~mcpspec.runtime.connection.transport.MessageStream`. While it is open, file
descriptor 1 points at stderr, so a stray ``print`` (or a child process) can never
corrupt the protocol stream; the stream writes to a private copy of the real stdout.

Client side, :func:`launch_server` starts a server command as a subprocess (``args``,
``env``, ``cwd``; its stderr forwarded, captured or discarded) and yields a
:class:`ProcessStream` over its stdin and stdout. Closing it shuts the server down as
the specification says: close its stdin, wait for it to exit; after ``grace`` seconds
SIGTERM; after ``grace`` more, SIGKILL. The stream also watches the process itself: once
it has exited, its stdout ends after :data:`EXIT_GRACE` seconds, even if a process it
started still holds that stdout open.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from signal import Signals
from typing import Any, Final, Literal

import anyio
import anyio.abc
from anyio.abc import ByteReceiveStream, ByteSendStream

from .errors import ConnectionClosed
from .pipes import FdReceiveStream, FdSendStream
from .transport import DEFAULT_MAX_MESSAGE_SIZE, NewlineFramedStream

__all__ = [
    "DEFAULT_GRACE",
    "ProcessStream",
    "StderrMode",
    "launch_server",
    "shut_down",
    "stdio_server_stream",
]

#: Seconds to wait at each step of shutting a server process down.
DEFAULT_GRACE: Final = 2.0
#: How much captured stderr is kept (the newest bytes).
STDERR_KEPT: Final = 64 * 1024
#: The longest stderr line a callback gets whole: a longer one comes in pieces of this
#: many bytes (so a server writing without newlines cannot grow this process's memory).
STDERR_LINE_MAX: Final = STDERR_KEPT
#: Seconds a server process's stdout may still deliver what it holds after the process
#: exited; then it ends, even if a process the server started keeps it open.
EXIT_GRACE: Final = 0.5

#: Where a server process's stderr goes: ``"forward"`` (this process's stderr),
#: ``"capture"`` (kept: :attr:`ProcessStream.stderr`), ``"discard"``, or a callable
#: that gets each line (bytes, without the newline; a line longer than
#: :data:`STDERR_LINE_MAX` comes in pieces of that size, each passed as a line).
StderrMode = Literal["forward", "capture", "discard"] | Callable[[bytes], None]


# -- server side ---------------------------------------------------------------------------------


class _ThreadReceiveStream(ByteReceiveStream):
    """Reads a binary file in a worker thread (where file descriptors cannot be waited
    on: Windows)."""

    def __init__(self, file: Any) -> None:
        self._file = file

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data: bytes = await anyio.to_thread.run_sync(
            self._file.read1, max_bytes, abandon_on_cancel=True
        )
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        pass


class _ThreadSendStream(ByteSendStream):
    """Writes a binary file in a worker thread."""

    def __init__(self, file: Any) -> None:
        self._file = file

    def _write(self, item: bytes) -> None:
        self._file.write(item)
        self._file.flush()

    async def send(self, item: bytes) -> None:
        await anyio.to_thread.run_sync(self._write, item)

    async def aclose(self) -> None:
        pass


@asynccontextmanager
async def stdio_server_stream(
    *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
) -> AsyncIterator[NewlineFramedStream]:
    """This process's stdin and stdout as a message stream, for a server.

    Inside the block, file descriptor 1 and ``sys.stdout`` point at stderr (output
    that is not protocol goes to the log); the stream writes to the real stdout. Both
    are restored on exit.
    """
    sys.stdout.flush()
    if os.name == "nt":  # pragma: no cover - no file descriptor waiting on Windows
        stream = NewlineFramedStream(
            _ThreadReceiveStream(sys.stdin.buffer),
            _ThreadSendStream(sys.stdout.buffer),
            max_message_size=max_message_size,
        )
        try:
            yield stream
        finally:
            await stream.aclose()
        return
    protocol_out = os.dup(1)
    saved_stdout = sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    stream = NewlineFramedStream(
        FdReceiveStream(0),
        FdSendStream(protocol_out),
        max_message_size=max_message_size,
    )
    try:
        yield stream
    finally:
        await stream.aclose()
        sys.stdout = saved_stdout
        with suppress(OSError):
            os.dup2(protocol_out, 1)  # fd 1 back to the real stdout
        with suppress(OSError):
            os.close(protocol_out)


# -- client side ---------------------------------------------------------------------------------


class _PipedProcess(anyio.abc.Process):
    """An anyio process whose stdin and stdout are pipes of this module's own
    (:class:`~mcpspec.runtime.connection.pipes.FdSendStream` and
    :class:`~mcpspec.runtime.connection.pipes.FdReceiveStream`), which write and read
    without a checkpoint of their own when the pipe is ready."""

    def __init__(
        self, process: anyio.abc.Process, stdin: FdSendStream, stdout: FdReceiveStream
    ) -> None:
        self._process = process
        self._stdin = stdin
        self._stdout = stdout

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            await self._stdin.aclose()
            await self._stdout.aclose()
        await self._process.aclose()

    async def wait(self) -> int:
        return await self._process.wait()

    def terminate(self) -> None:
        self._process.terminate()

    def kill(self) -> None:
        self._process.kill()

    def send_signal(self, signal: Signals) -> None:
        self._process.send_signal(signal)

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    @property
    def stdin(self) -> FdSendStream:
        return self._stdin

    @property
    def stdout(self) -> FdReceiveStream:
        return self._stdout

    @property
    def stderr(self) -> ByteReceiveStream | None:
        return self._process.stderr


async def _open_process(
    command: list[str],
    *,
    stderr: int | None,
    env: dict[str, str] | None,
    cwd: str | os.PathLike[str] | None,
) -> anyio.abc.Process:
    """``anyio.open_process`` with its stdin and stdout piped. On POSIX the pipes are
    this module's own streams (see :class:`_PipedProcess`); elsewhere anyio's."""
    if os.name == "nt":  # pragma: no cover - no file descriptor waiting on Windows
        return await anyio.open_process(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=cwd
        )
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    try:
        process = await anyio.open_process(
            command, stdin=stdin_read, stdout=stdout_write, stderr=stderr, env=env, cwd=cwd
        )
    except BaseException:
        os.close(stdin_write)
        os.close(stdout_read)
        raise
    finally:  # the child's ends: the child has its copies
        os.close(stdin_read)
        os.close(stdout_write)
    return _PipedProcess(
        process, FdSendStream(stdin_write, owned=True), FdReceiveStream(stdout_read, owned=True)
    )


class _ProcessOutput(ByteReceiveStream):
    """A server process's stdout that can be ended (:meth:`end`) while a process the
    server started still holds it open."""

    def __init__(self, stream: ByteReceiveStream) -> None:
        self._stream = stream
        #: Whether a ``receive`` is under way (waiting: the pipe had nothing for it).
        self._receiving = False
        self._ended = False

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._ended:
            return await self._receive_rest(max_bytes)
        # A plain read: end() wakes one that waits by closing the stream (_receiving
        # tells it one waits), so the read needs no cancel scope of its own.
        self._receiving = True
        try:
            return await self._stream.receive(max_bytes)
        finally:
            self._receiving = False

    async def _receive_rest(self, max_bytes: int) -> bytes:
        """After :meth:`end`: what the stream has at once, then its end."""
        with anyio.CancelScope() as scope:
            scope.cancel()  # delivered only if the read has to wait
            return await self._stream.receive(max_bytes)
        raise anyio.EndOfStream

    async def end(self) -> None:
        """End reading: a ``receive`` still gets what is there without waiting, then
        ``anyio.EndOfStream``; one waiting now ends at once."""
        self._ended = True
        if self._receiving:
            # It waits, so nothing is buffered for it: closing the stream wakes it.
            await self._stream.aclose()

    async def aclose(self) -> None:
        await self._stream.aclose()


class ProcessStream(NewlineFramedStream):
    """A server subprocess's stdin and stdout as a message stream (see
    :func:`launch_server`). ``process`` is the anyio process; :attr:`stderr` what was
    captured of its stderr (with ``stderr="capture"``).

    Once the process has exited (:meth:`watch_exit`), ``receive`` raises
    :class:`~mcpspec.runtime.connection.errors.ConnectionClosed` naming its exit status
    after at most :data:`EXIT_GRACE` seconds, even if a process the server started keeps
    its stdout open."""

    def __init__(
        self,
        process: anyio.abc.Process,
        *,
        max_message_size: int,
        grace: float,
    ) -> None:
        assert process.stdout is not None and process.stdin is not None
        self._output = _ProcessOutput(process.stdout)
        super().__init__(self._output, process.stdin, max_message_size=max_message_size)
        self.process = process
        self.grace = grace
        self._stderr = bytearray()
        self._shut = False
        #: Why the stdout was ended after the process exited (see :meth:`watch_exit`).
        self._exit_reason: str | None = None

    @property
    def stderr(self) -> bytes:
        """The captured stderr (its newest bytes, up to 64 KiB)."""
        return bytes(self._stderr)

    @property
    def returncode(self) -> int | None:
        """The process's exit status, once it exited."""
        return self.process.returncode

    async def receive(self) -> bytes:
        """The next message. At the end of the stdout,
        :class:`~mcpspec.runtime.connection.errors.ConnectionClosed` names the exit
        status when the process exited (or exits within :data:`EXIT_GRACE` of it)."""
        try:
            return await super().receive()
        except ConnectionClosed:
            if self._exit_reason is None and not self._shut:
                with anyio.move_on_after(EXIT_GRACE):
                    await self.process.wait()
                if self.process.returncode is not None:
                    self._exit_reason = self._exited()
            if self._exit_reason is None:
                raise
            raise ConnectionClosed(self._exit_reason) from None

    def _exited(self) -> str:
        return f"the server process exited (status {self.process.returncode})"

    async def watch_exit(self) -> None:
        """Wait for the process to exit, then give its stdout :data:`EXIT_GRACE` seconds
        to deliver what it holds and end it: a process the server started may hold the
        stdout open (the end of the stream would never come)."""
        await self.process.wait()
        await anyio.sleep(EXIT_GRACE)
        self._exit_reason = self._exited()
        await self._output.end()

    def _keep_stderr(self, data: bytes) -> None:
        self._stderr += data
        if len(self._stderr) > STDERR_KEPT:
            del self._stderr[: len(self._stderr) - STDERR_KEPT]

    async def aclose(self) -> None:
        """Shut the server down: close its stdin and wait for it to exit; then SIGTERM
        and wait; then SIGKILL. Idempotent."""
        if self._shut:
            return
        self._shut = True
        await shut_down(self.process, self.grace)
        with anyio.CancelScope(shield=True):
            await super().aclose()


async def shut_down(process: anyio.abc.Process, grace: float = DEFAULT_GRACE) -> None:
    """End a server process as the stdio transport says: close its stdin and wait for
    it to exit; after ``grace`` seconds SIGTERM and wait; then SIGKILL. Shielded from
    cancellation."""
    with anyio.CancelScope(shield=True):
        if process.stdin is not None:
            with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                await process.stdin.aclose()
        for signal in (process.terminate, process.kill):
            with anyio.move_on_after(grace):
                await process.wait()
            if process.returncode is not None:
                break
            with suppress(ProcessLookupError):
                signal()
        await process.wait()


async def _pump_stderr(
    receiver: ByteReceiveStream, stream: ProcessStream, mode: StderrMode, done: anyio.Event
) -> None:
    """Read the server's stderr to its end: keep it, or pass each line on."""
    try:
        await _read_stderr(receiver, stream, mode)
    finally:
        done.set()


async def _read_stderr(
    receiver: ByteReceiveStream, stream: ProcessStream, mode: StderrMode
) -> None:
    """Keep the server's stderr (``"capture"``) or pass each line to ``mode``."""
    ends = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)
    if mode == "capture":
        with suppress(*ends):
            while True:
                stream._keep_stderr(await receiver.receive())
        return
    assert callable(mode)
    pending = bytearray()
    with suppress(*ends):
        await _read_stderr_lines(receiver, mode, pending)
    if pending:
        mode(bytes(pending))


async def _read_stderr_lines(
    receiver: ByteReceiveStream, callback: Callable[[bytes], None], pending: bytearray
) -> None:
    """Pass each line read to ``callback``; ``pending`` holds the unfinished line. A
    line longer than :data:`STDERR_LINE_MAX` goes to ``callback`` in pieces of that
    size, each as a line, so ``pending`` never holds more than that after a read."""
    while True:
        data = await receiver.receive()
        start = 0
        # Only the new data is searched: ``pending`` has no newline.
        while (end := data.find(b"\n", start)) >= 0:
            if pending or end - start > STDERR_LINE_MAX:
                _extend_line(pending, memoryview(data)[start:end], callback)
                callback(bytes(pending))
                pending.clear()
            else:
                callback(data[start:end])
            start = end + 1
        _extend_line(pending, memoryview(data)[start:], callback)


def _extend_line(pending: bytearray, data: memoryview, callback: Callable[[bytes], None]) -> None:
    """Add ``data`` to the unfinished line ``pending``; while it is longer than
    :data:`STDERR_LINE_MAX`, pass its first that many bytes to ``callback``."""
    pending += data
    while len(pending) > STDERR_LINE_MAX:
        callback(bytes(pending[:STDERR_LINE_MAX]))
        del pending[:STDERR_LINE_MAX]


@asynccontextmanager
async def launch_server(
    command: str | os.PathLike[str],
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stderr: StderrMode = "forward",
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    grace: float = DEFAULT_GRACE,
) -> AsyncIterator[ProcessStream]:
    """Start ``command`` with ``args`` as a stdio server and yield its message stream.

    ``env`` is the server's whole environment (``None``: this process's); ``cwd`` its
    working directory; ``stderr`` where its log goes (:data:`StderrMode`). On exit the
    server is shut down (:meth:`ProcessStream.aclose`), whatever happened inside.
    """
    piped = stderr not in ("forward", "discard")
    process = await _open_process(
        [os.fspath(command), *args],
        stderr=subprocess.PIPE if piped else (subprocess.DEVNULL if stderr == "discard" else None),
        env=dict(env) if env is not None else None,
        cwd=cwd,
    )
    stream = ProcessStream(process, max_message_size=max_message_size, grace=grace)
    try:
        async with anyio.create_task_group() as task_group:
            pumped = anyio.Event()
            if piped:
                assert process.stderr is not None
                task_group.start_soon(_pump_stderr, process.stderr, stream, stderr, pumped)
            task_group.start_soon(stream.watch_exit)
            try:
                yield stream
            finally:
                await stream.aclose()
                # The rest of the log, unless a child of the server keeps stderr open.
                with anyio.move_on_after(grace if piped else 0):
                    await pumped.wait()
                task_group.cancel_scope.cancel()
    finally:
        await stream.aclose()
