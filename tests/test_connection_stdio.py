"""stdio with real subprocesses: the server exits cleanly when its stdin closes (even
mid-request), answers -32603 for a failing handler, writes answers still due after
stdin closed; the client side launches a command, routes its stderr, shuts it down in
the specification's order, and fails every pending request when the process dies."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from mcpspec.runtime import ClientSession
from mcpspec.runtime.connection import (
    ConnectionClosed,
    Peer,
    ProcessStream,
    RequestError,
    launch_server,
)
from mcpspec.runtime.connection.stdio import EXIT_GRACE, STDERR_LINE_MAX

from .connection_kit import HANG_GUARD, call_tool, text_of

pytestmark = pytest.mark.anyio

SERVER = str(Path(__file__).parent / "peers" / "mcpspec_server.py")


@asynccontextmanager
async def fixture_server(
    revision: str = "2025-11-25", *server_args: str, **options: Any
) -> AsyncIterator[tuple[Peer[ClientSession], ProcessStream]]:
    """A client peer connected to the fixture server in a subprocess."""
    with anyio.fail_after(HANG_GUARD):
        async with launch_server(
            sys.executable, [SERVER, *server_args], grace=HANG_GUARD, **options
        ) as stream:
            session = ClientSession(mode=revision)  # type: ignore[arg-type]
            async with Peer(session, stream) as peer:
                await peer.open()
                yield peer, stream


async def test_stdin_closing_mid_request_ends_the_server_cleanly() -> None:
    started = anyio.Event()
    outcome: list[BaseException] = []
    async with fixture_server("2025-11-25", "--linger", "0", stderr="capture") as (peer, stream):

        async def slow() -> None:
            try:
                await peer.request(call_tool(peer, "slow"), progress=lambda _: started.set())
            except ConnectionClosed as exc:
                outcome.append(exc)

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(slow)
            await started.wait()
            await peer.aclose()  # closes the server's stdin first
    assert len(outcome) == 1
    assert stream.returncode == 0  # it exited by itself: neither SIGTERM nor SIGKILL
    assert b"stdin closed: the server exits" in stream.stderr


async def test_output_printed_by_a_handler_goes_to_stderr_not_the_protocol() -> None:
    async with fixture_server("2025-11-25", stderr="capture") as (peer, stream):
        assert text_of(await peer.request(call_tool(peer, "noisy"))) == "quiet"
        assert text_of(await peer.request(call_tool(peer, "add", {"a": 1, "b": 1}))) == "2"
    assert b"noise from print" in stream.stderr
    assert b"noise from a child process" in stream.stderr


@pytest.mark.parametrize("revision", ["2024-11-05", "2026-07-28"])
async def test_a_failing_handler_answers_32603_over_stdio(revision: str) -> None:
    async with fixture_server(revision, stderr="discard") as (peer, _):
        with pytest.raises(RequestError) as caught:
            await peer.request(call_tool(peer, "fail"))
        assert caught.value.code == -32603
        result = await peer.request(call_tool(peer, "add", {"a": 1, "b": 2}))
        assert text_of(result) == "3"


async def test_answers_due_when_stdin_closes_are_still_written() -> None:
    session = ClientSession(mode="2026-07-28")
    t = session.types
    request = t.CallToolRequest(
        id=session.next_id(), params=t.CallToolRequestParams(name="add", arguments={"a": 1, "b": 1})
    )
    with anyio.fail_after(HANG_GUARD):
        async with launch_server(sys.executable, [SERVER], stderr="discard") as stream:
            await stream.send(session.send(request))
            assert stream.process.stdin is not None
            await stream.process.stdin.aclose()  # like `printf request | server`
            answer = msgspec.json.decode(await stream.receive())
            with pytest.raises(ConnectionClosed):
                await stream.receive()
            assert await stream.process.wait() == 0
    assert answer["id"] == request.id
    assert answer["result"]["content"][0]["text"] == "2"


def _line(message: dict[str, Any] | list[dict[str, Any]]) -> bytes:
    return msgspec.json.encode(message)


def _initialize(revision: str) -> list[bytes]:
    """The raw lines of a handshake (the answer to ``initialize`` is not read)."""
    params = {
        "protocolVersion": revision,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    }
    return [
        _line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}),
        _line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]


def _call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


@asynccontextmanager
async def raw_fixture_server(revision: str) -> AsyncIterator[ProcessStream]:
    """The fixture server (linger 0.2 s) with the lines of a handshake written to it
    (the answer to ``initialize`` is left to read)."""
    with anyio.fail_after(HANG_GUARD):
        async with launch_server(
            sys.executable, [SERVER, "--linger", "0.2"], stderr="discard"
        ) as stream:
            for line in _initialize(revision):
                await stream.send(line)
            yield stream


async def test_a_batch_whose_request_outlives_the_linger_is_still_answered_whole() -> None:
    async with raw_fixture_server("2025-03-26") as stream:
        assert msgspec.json.decode(await stream.receive())["id"] == 0
        await stream.send(_line([_call(1, "slow", {}), _call(2, "add", {"a": 1, "b": 1})]))
        assert stream.process.stdin is not None
        await stream.process.stdin.aclose()
        batch = msgspec.json.decode(await stream.receive())
        assert await stream.process.wait() == 0
    answers = {answer["id"]: answer for answer in batch}
    assert answers[2]["result"]["content"][0]["text"] == "2"
    # The request cancelled as the server ended is answered, with the reason.
    assert answers[1]["error"]["code"] == -32603
    assert "ended before the request was answered" in answers[1]["error"]["data"]["reason"]


async def test_a_client_that_stops_reading_does_not_keep_the_server_alive() -> None:
    async with raw_fixture_server("2025-11-25") as stream:
        # Its answer is larger than a pipe holds, and is never read.
        await stream.send(_line(_call(1, "echo", {"message": "x" * (1 << 20)})))
        assert stream.process.stdin is not None
        await stream.process.stdin.aclose()
        # The linger, then the grace of a handler stuck in a write: the server
        # exits by itself.
        assert await stream.process.wait() == 0


async def test_the_server_dying_fails_every_pending_request_at_once() -> None:
    started = anyio.Event()
    outcomes: list[BaseException] = []
    async with fixture_server("2025-06-18", stderr="discard") as (peer, stream):

        async def call(name: str) -> None:
            try:
                await peer.request(call_tool(peer, name), progress=lambda _: started.set())
            except ConnectionClosed as exc:
                outcomes.append(exc)

        async with anyio.create_task_group() as task_group:
            task_group.start_soon(call, "slow")
            await started.wait()
            task_group.start_soon(call, "exit")
    assert len(outcomes) == 2
    assert all("the server process exited (status 3)" in str(exc) for exc in outcomes)
    assert stream.returncode == 3


#: A server that reports ready, then ignores its stdin closing (and, with an argument,
#: SIGTERM too).
STUBBORN = """
import signal, sys, time
if len(sys.argv) > 1:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdout.write("ready\\n"); sys.stdout.flush()
while True:
    time.sleep(60)
"""


@pytest.mark.parametrize(("args", "returncode"), [([], -15), (["ignore-term"], -9)])
async def test_shutdown_closes_stdin_then_terminates_then_kills(
    args: list[str], returncode: int
) -> None:
    with anyio.fail_after(HANG_GUARD):
        async with launch_server(
            sys.executable, ["-c", STUBBORN, *args], grace=0.2, stderr="discard"
        ) as stream:
            assert await stream.receive() == b"ready"
        assert stream.returncode == returncode


async def test_stderr_lines_go_to_a_callback_and_env_and_cwd_reach_the_server(
    tmp_path: Path,
) -> None:
    lines: list[bytes] = []
    script = (
        "import os, sys; sys.stderr.write('one\\ntwo\\n' + os.environ['GREETING']);"
        "print(os.getcwd())"
    )
    with anyio.fail_after(HANG_GUARD):
        async with launch_server(
            sys.executable,
            ["-c", script],
            env={"GREETING": "three", "PATH": "/usr/bin:/bin"},
            cwd=tmp_path,
            stderr=lines.append,
        ) as stream:
            cwd = await stream.receive()
            with pytest.raises(ConnectionClosed):
                await stream.receive()
    assert Path(cwd.decode()).resolve() == tmp_path.resolve()
    assert lines == [b"one", b"two", b"three"]


async def test_a_stderr_line_longer_than_the_limit_reaches_the_callback_in_pieces() -> None:
    lines: list[bytes] = []
    limit = STDERR_LINE_MAX
    # Three pieces and a rest, a line of exactly the limit, then two short lines.
    script = (
        "import sys; n = int(sys.argv[1]);"
        "sys.stderr.buffer.write(b'x' * (3 * n + 10) + b'\\n' + b'y' * n + b'\\nnext\\nlast')"
    )
    with anyio.fail_after(HANG_GUARD):
        async with launch_server(
            sys.executable, ["-c", script, str(limit)], stderr=lines.append
        ) as stream:
            with pytest.raises(ConnectionClosed):
                await stream.receive()
    assert [len(line) for line in lines] == [limit, limit, limit, 10, limit, 4, 4]
    assert b"".join(lines[:4]) == b"x" * (3 * limit + 10)
    assert lines[4:] == [b"y" * limit, b"next", b"last"]


#: Starts a process that inherits its stdout and keeps it open until its stdin closes
#: (as a wrapper script's helper may), then becomes the Python program its arguments
#: name: that program exiting does not end its stdout.
HOLDING_STDOUT = """
import os, subprocess, sys
hold = "import select; p = select.poll(); p.register(0, 0); p.poll()"
subprocess.Popen([sys.executable, "-c", hold])
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
"""


async def test_a_server_exiting_fails_pending_requests_though_a_child_holds_its_stdout() -> None:
    with anyio.fail_after(HANG_GUARD):
        async with launch_server(
            sys.executable, ["-c", HOLDING_STDOUT, SERVER], grace=HANG_GUARD, stderr="discard"
        ) as stream:
            async with Peer(ClientSession(mode="2025-11-25"), stream) as peer:
                await peer.open()
                with pytest.raises(ConnectionClosed, match=r"exited \(status 3\)"):
                    await peer.request(call_tool(peer, "exit"))
            assert stream.returncode == 3


async def test_what_an_exited_server_wrote_is_received_before_the_end() -> None:
    script = "import os; os.write(1, b'one\\ntwo\\n'); os._exit(3)"
    with anyio.fail_after(HANG_GUARD):
        async with launch_server(
            sys.executable, ["-c", HOLDING_STDOUT, "-c", script], stderr="discard"
        ) as stream:
            assert await stream.process.wait() == 3
            await anyio.sleep(2 * EXIT_GRACE)  # nobody reads until the grace is over
            assert [await stream.receive(), await stream.receive()] == [b"one", b"two"]
            with pytest.raises(ConnectionClosed, match=r"exited \(status 3\)"):
                await stream.receive()
