"""The file-descriptor streams stdio reads and writes (``pipes.py``), on both backends:
everything written arrives in order (also when the reader falls behind the reading
callback's limit), the end of the stream and closing are reported, a message larger
than the pipe is written whole even when its sender is cancelled; and a connection's
request handlers are cancelled and awaited when it is left while they run."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import anyio
import anyio.abc
import pytest

from mcpspec.runtime import ClientSession, ServerSession
from mcpspec.runtime.connection import ConnectionClosed, Peer, memory_pair, pipes
from mcpspec.runtime.connection.pipes import FdReceiveStream, FdSendStream
from mcpspec.runtime.session.events import RequestReceived

from .connection_kit import HANG_GUARD

pytestmark = pytest.mark.anyio


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_end, write_end = os.pipe()
    yield read_end, write_end
    for fd in (read_end, write_end):
        with contextlib.suppress(OSError):
            os.close(fd)


async def read_all(stream: FdReceiveStream) -> bytes:
    received = bytearray()
    while True:
        try:
            received += await stream.receive()
        except anyio.EndOfStream:
            return bytes(received)


async def test_what_is_written_arrives_in_order_then_the_end(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    # A small limit: the reading callback pauses and resumes many times.
    stream = FdReceiveStream(read_end, read_size=1000, buffer_limit=3000)
    payload = bytes(range(256)) * 400
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:

            async def write() -> None:
                sender = FdSendStream(write_end, owned=True)
                for start in range(0, len(payload), 7000):
                    await sender.send(payload[start : start + 7000])
                    await anyio.sleep(0)
                await sender.aclose()

            task_group.start_soon(write)
            received = await read_all(stream)
    assert received == payload
    with pytest.raises(anyio.EndOfStream):
        await stream.receive()
    await stream.aclose()


async def test_a_receive_asks_for_at_most_max_bytes(pipe: tuple[int, int]) -> None:
    read_end, write_end = pipe
    stream = FdReceiveStream(read_end)
    os.write(write_end, b"abcdef")
    with anyio.fail_after(HANG_GUARD):
        assert await stream.receive(4) == b"abcd"
        assert await stream.receive(4) == b"ef"
    await stream.aclose()


async def test_closing_wakes_a_waiting_receive(pipe: tuple[int, int]) -> None:
    read_end, _ = pipe
    stream = FdReceiveStream(read_end)
    outcome: list[BaseException] = []
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:

            async def receive() -> None:
                try:
                    await stream.receive()
                except anyio.ClosedResourceError as exc:
                    outcome.append(exc)

            task_group.start_soon(receive)
            await anyio.wait_all_tasks_blocked()
            await stream.aclose()
    assert len(outcome) == 1
    with pytest.raises(anyio.ClosedResourceError):
        await stream.receive()


async def cancelled_send(
    task_group: anyio.abc.TaskGroup, sender: FdSendStream, message: bytes
) -> anyio.CancelScope:
    """Send ``message`` in a task of ``task_group`` and cancel it once it waits on the
    full pipe; the send's cancel scope."""
    sending = anyio.CancelScope()

    async def send() -> None:
        with sending:
            await sender.send(message)

    task_group.start_soon(send)
    await anyio.wait_all_tasks_blocked()  # the pipe is full: the send waits
    sending.cancel()
    return sending


async def test_a_message_larger_than_the_pipe_is_written_whole_despite_cancellation(
    pipe: tuple[int, int],
) -> None:
    read_end, write_end = pipe
    sender = FdSendStream(write_end)
    receiver = FdReceiveStream(read_end)
    message = b"x" * (4 * 1024 * 1024)  # far more than a pipe holds
    received = bytearray()
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            sending = await cancelled_send(task_group, sender, message)
            while len(received) < len(message):
                received += await receiver.receive()
    assert not sending.cancelled_caught  # the write was not cut short
    assert bytes(received) == message
    await sender.aclose()
    await receiver.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await sender.send(b"more")


async def test_a_cancelled_send_whose_reader_takes_nothing_closes_the_stream(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipes, "SEND_GRACE", 0.05)
    _read_end, write_end = pipe
    sender = FdSendStream(write_end)
    message = b"x" * (4 * 1024 * 1024)  # far more than a pipe holds, never read
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as task_group:
            sending = await cancelled_send(task_group, sender, message)
    # The caller was not held past the grace; the message could not be finished, so
    # the stream is closed rather than left with half a message.
    assert sending.cancelled_caught
    with pytest.raises(anyio.ClosedResourceError):
        await sender.send(b"more")


async def test_leaving_a_peer_cancels_its_running_handlers_and_waits_for_them() -> None:
    client_end, server_end = memory_pair()
    started = anyio.Event()
    ended: list[str] = []

    server_session = ServerSession(capabilities={"tools": {}})

    async def handle(event: RequestReceived) -> object:
        if event.method == "initialize":
            return server_session.initialize_result()
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.01)  # cleanup that takes a while still finishes
            ended.append("cleaned up")
        return None  # pragma: no cover - never reached

    client = ClientSession(mode="2025-11-25")

    async def call(peer: Peer[ClientSession]) -> None:
        with pytest.raises(ConnectionClosed):
            await peer.request(client.types.ListToolsRequest(id=peer.next_id()))

    with anyio.fail_after(HANG_GUARD):
        async with Peer(client, client_end) as peer, anyio.create_task_group() as task_group:
            async with Peer(server_session, server_end, request_handler=handle, linger=HANG_GUARD):
                await peer.open()
                task_group.start_soon(call, peer)
                await started.wait()
                assert ended == []
            assert ended == ["cleaned up"]
