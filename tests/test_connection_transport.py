"""Message streams: newline framing (chunks, CRLF, blank lines, a last line without a
newline, oversized lines skipped in bounded memory) and the in-memory pair."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from anyio.abc import ByteReceiveStream

from mcpspec.runtime.connection import (
    ConnectionClosed,
    MessageTooLarge,
    NewlineFramedStream,
    memory_byte_pipe,
    memory_pair,
)

pytestmark = pytest.mark.anyio


async def _framed(chunks: list[bytes], **options: int) -> NewlineFramedStream:
    """A framed stream whose peer wrote ``chunks`` and closed."""
    writer, reader = memory_byte_pipe()
    sink, _ = memory_byte_pipe()
    for chunk in chunks:
        await writer.send(chunk)
    await writer.aclose()
    return NewlineFramedStream(reader, sink, **options)


async def _all(stream: NewlineFramedStream) -> list[bytes | str]:
    """Every message to the end; ``MessageTooLarge`` as ``"too large: N"``."""
    out: list[bytes | str] = []
    while True:
        try:
            out.append(await stream.receive())
        except MessageTooLarge as exc:
            out.append(f"too large: {exc.size}")
        except ConnectionClosed:
            return out


async def test_lines_split_and_joined_across_chunks() -> None:
    stream = await _framed([b'{"a":', b"1}\n{", b'"b":2}\n{"c":3}\n'])
    assert await _all(stream) == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


async def test_crlf_blank_lines_and_a_last_line_without_newline() -> None:
    stream = await _framed([b"one\r\n\n  \r\ntwo\n", b"three"])
    assert await _all(stream) == [b"one", b"two", b"three"]


async def test_the_end_is_reported_on_every_call() -> None:
    stream = await _framed([b"x\n"])
    assert await stream.receive() == b"x"
    for _ in range(2):
        with pytest.raises(ConnectionClosed):
            await stream.receive()


async def test_an_oversized_line_is_skipped_and_reading_goes_on() -> None:
    big = b"x" * 5000
    stream = await _framed(
        [b"first\n", big[:1000], big[1000:], b"\nsecond\n" + big + b"\nthird\n"],
        max_message_size=100,
        read_size=64,
    )
    assert await _all(stream) == [
        b"first",
        "too large: 5000",
        b"second",
        "too large: 5000",
        b"third",
    ]


async def test_a_line_over_the_limit_within_one_chunk_is_refused() -> None:
    stream = await _framed([b"x" * 150 + b"\nok\n"], max_message_size=100, read_size=1000)
    assert await _all(stream) == ["too large: 150", b"ok"]


@pytest.mark.parametrize("cut", [100, 101, 102], ids=["before-cr", "between-cr-lf", "after-lf"])
async def test_a_line_at_the_limit_ending_in_crlf_is_taken_however_reads_split_it(
    cut: int,
) -> None:
    data = b"x" * 100 + b"\r\nok\n"
    stream = await _framed([data[:cut], data[cut:]], max_message_size=100, read_size=1000)
    assert await _all(stream) == [b"x" * 100, b"ok"]


class _Endless(ByteReceiveStream):
    """A byte stream of one huge line (then ``ok``), which records the framed stream's
    buffer size at every read."""

    def __init__(self, total: int) -> None:
        self._chunks: Iterator[bytes] = iter(
            [b"y" * 4096 for _ in range(total // 4096)] + [b"\nok\n"]
        )
        self.stream: NewlineFramedStream | None = None
        self.largest_buffer = 0

    async def receive(self, max_bytes: int = 65536) -> bytes:
        assert self.stream is not None
        self.largest_buffer = max(self.largest_buffer, len(self.stream._buffer))
        try:
            return next(self._chunks)
        except StopIteration:
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        pass


async def test_an_oversized_line_is_never_held_whole() -> None:
    source = _Endless(total=8 * 1024 * 1024)
    sink, _ = memory_byte_pipe()
    stream = NewlineFramedStream(source, sink, max_message_size=10_000, read_size=4096)
    source.stream = stream
    assert await _all(stream) == [f"too large: {8 * 1024 * 1024}", b"ok"]
    assert source.largest_buffer <= 10_000 + 4096


async def test_send_adds_the_newline_and_fails_once_closed() -> None:
    writer, reader = memory_byte_pipe()
    _, unused = memory_byte_pipe()
    stream = NewlineFramedStream(unused, writer)
    await stream.send(b'{"x":1}')
    assert await reader.receive() == b'{"x":1}\n'
    await stream.aclose()
    await stream.aclose()  # idempotent
    with pytest.raises(ConnectionClosed):
        await stream.send(b"{}")


async def test_memory_pair_delivers_messages_and_closing_ends_the_other_side() -> None:
    a, b = memory_pair()
    await a.send(b"one")
    await b.send(b"two")
    assert await b.receive() == b"one"
    assert await a.receive() == b"two"
    await a.aclose()
    with pytest.raises(ConnectionClosed):
        await b.receive()
    with pytest.raises(ConnectionClosed):
        await b.send(b"three")
