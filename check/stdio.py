"""Checking a stdio server: the command is started once per connection, and every byte it
writes on stdout is judged line by line.

The stdio transport says: messages are delimited by newlines and contain none; the server
writes nothing to stdout that is not a valid MCP message; stderr is for logging. So a line
that is not one JSON message (a banner, a log line, half a message), a blank line, and
output that ends without its newline are failures of ``wire.message`` naming the line.
stderr is kept (the newest part) and shown in the report, never judged.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any, Final

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from mcpspec.runtime.connection.stdio import STDERR_KEPT, shut_down

from .errors import CheckError, LinkClosed
from .findings import RevisionReport, broken
from .link import Link, Received, Transport
from .record import Recorder, Recording

__all__ = ["StdioLink", "StdioTarget"]

#: The longest line read; a longer one is a failure, skipped without being held.
MAX_LINE: Final = 16 * 1024 * 1024
_READ = 65536


class StdioTarget:
    """A server started as ``command args...`` (``env``: its whole environment, ``None``
    for this process's; ``cwd``: its working directory)."""

    def __init__(
        self,
        command: str | os.PathLike[str],
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> None:
        self.argv = [os.fspath(command), *args]
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.description = shlex.join(self.argv)
        #: Where each connection's traffic is recorded (``--record``), if anywhere.
        self.recorder: Recorder | None = None
        #: The newest bytes the server wrote on stderr (over every connection).
        self._stderr = bytearray()

    @property
    def stderr(self) -> str:
        return self._stderr.decode("utf-8", "replace")

    async def probe_transport(self, report: RevisionReport, options: Any) -> None:
        """Nothing: every stdio rule is judged on the connection itself."""

    def _keep_stderr(self, data: bytes) -> None:
        self._stderr += data
        if len(self._stderr) > STDERR_KEPT:
            del self._stderr[: len(self._stderr) - STDERR_KEPT]

    @asynccontextmanager
    async def connect(self, report: RevisionReport) -> AsyncIterator[Link]:
        try:
            process = await anyio.open_process(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                # A group of its own: what the command starts (npx starts node) ends with it.
                start_new_session=os.name == "posix",
            )
        except OSError as exc:
            raise CheckError(f"cannot start {self.description}: {exc}") from exc
        recording = None
        if self.recorder is not None:
            purpose = "offer" if report.revision == "negotiation" else "check"
            recording = self.recorder.open(report.revision, purpose, "stdio")
        link = StdioLink(process, report, recording)
        try:
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(self._pump_stderr, process)
                task_group.start_soon(link.read_stdout)
                try:
                    yield link
                finally:
                    await shut_down(process)
                    await _end_group(process.pid)
                    task_group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                # Its pipes closed now, not by the garbage collector once the loop is gone.
                await process.aclose()
            await link.aclose()
            if recording is not None:
                recording.close()

    async def _pump_stderr(self, process: anyio.abc.Process) -> None:
        assert process.stderr is not None
        with suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            while True:
                self._keep_stderr(await process.stderr.receive(_READ))


#: Seconds the server's children get to end after SIGTERM, before SIGKILL.
GROUP_GRACE: Final = 2.0


async def _end_group(pgid: int) -> None:
    """End what is left of the server's process group (the children it started, which
    outlive it: ``npx`` leaves ``node`` running): SIGTERM, then SIGKILL after
    :data:`GROUP_GRACE` seconds. Shielded from cancellation."""
    if os.name != "posix":
        return
    with anyio.CancelScope(shield=True):
        for sent in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pgid, sent)
            except (ProcessLookupError, PermissionError):
                return
            with anyio.move_on_after(GROUP_GRACE):
                while _group_alive(pgid):
                    await anyio.sleep(0.02)
                return


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class StdioLink:
    """One server process: lines in from its stdout, messages out to its stdin."""

    transport: Transport = "stdio"

    def __init__(
        self, process: anyio.abc.Process, report: RevisionReport, recording: Recording | None = None
    ) -> None:
        self._process = process
        self._report = report
        self._recording = recording
        self._send_lines: MemoryObjectSendStream[Received | None]
        self._lines: MemoryObjectReceiveStream[Received | None]
        # Bounded by the reader: it waits for the conversation before reading on.
        self._send_lines, self._lines = anyio.create_memory_object_stream[Received | None](16)
        self._line = 0
        #: Why the link gives no more messages, once it does not.
        self.closed_reason = ""

    def _wire(self, where: str, why: str) -> None:
        self._report.add(broken("wire.message", where, why, self._report.revision))

    async def send(self, data: bytes, *, related_request_id: int | str | None = None) -> None:
        stdin = self._process.stdin
        if stdin is None:
            raise LinkClosed("the server has no stdin")
        if self._recording is not None:
            for line in data.split(b"\n"):
                self._recording.write("client", line, self._recording.client_line())
        try:
            await stdin.send(data + b"\n")
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise LinkClosed(f"the server's stdin is closed: {exc!r}") from exc

    async def receive(self) -> Received | None:
        try:
            return await self._lines.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return None

    async def aclose(self) -> None:
        await self._send_lines.aclose()
        await self._lines.aclose()

    async def read_stdout(self) -> None:
        """Split the server's stdout into lines, judging the framing, to its end."""
        stdout = self._process.stdout
        assert stdout is not None
        buffer = bytearray()
        skipping = False
        try:
            while True:
                try:
                    chunk = await stdout.receive(_READ)
                except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    break
                start = 0
                while True:
                    end = chunk.find(b"\n", start)
                    if end < 0:
                        break
                    piece = chunk[start:end]
                    start = end + 1
                    if skipping:
                        skipping = False
                        continue
                    buffer += piece
                    await self._line_done(bytes(buffer))
                    buffer.clear()
                if not skipping:
                    buffer += chunk[start:]
                    if len(buffer) > MAX_LINE:
                        self._line += 1
                        self._wire(
                            f"stdout line {self._line}",
                            f"a line longer than {MAX_LINE} bytes (skipped)",
                        )
                        buffer.clear()
                        skipping = True
            if buffer:
                self._line += 1
                where = f"stdout line {self._line}"
                self._wire(where, "the output ends without a newline after this message")
                self._record(bytes(buffer), where)
                await self._send_lines.send(Received(bytes(buffer), where))
        finally:
            self.closed_reason = "the server's output ended" + (
                "" if self._line else " before it wrote anything"
            )
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await self._send_lines.send(None)

    async def _line_done(self, line: bytes) -> None:
        self._line += 1
        where = f"stdout line {self._line}"
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            self._wire(where, "a blank line: stdout carries nothing but messages")
            return
        self._record(line, where)
        await self._send_lines.send(Received(line, where))

    def _record(self, line: bytes, where: str) -> None:
        if self._recording is not None:
            self._recording.write("server", line, where)
