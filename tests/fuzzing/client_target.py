"""Target: the :class:`Client` over a newline-framed in-memory stream against a hostile
server, scripted by what it does with each request it gets.

An input is a :class:`Hostile`: the client's mode, the calls it makes (each with a
timeout), and what the server does with its n-th request (answer well, never, with a
wrong or reused id, twice, with garbage, a non-JSON line naming the id, a line over the
limit, an error, a broken result, a fresh page cursor for ever, a request of its own
with the id of the client's call, a flood of notifications, or hang up).

The oracle (:func:`check`): every call (entering the client included) ends with its
result or a typed error of :mod:`mcpspec.runtime.connection.errors` within its timeout
(plus a margin); nothing else escapes; nothing is logged at ERROR.
"""

from __future__ import annotations

import contextlib
import random
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
import msgspec

from mcpspec.runtime.connection import Client, NewlineFramedStream, errors, memory_byte_pipe
from mcpspec.runtime.connection.errors import (
    ConnectionClosed,
    MessageTooLarge,
    NegotiationRefused,
    RequestTimeout,
)

from .conversation import LIMIT, Failure, drop_one_at_a_time, errors_logged, logged_failures, where

__all__ = ["BEHAVIOURS", "CALLS", "Hostile", "check", "generate", "run"]

#: Errors a call may end in.
#: The typed errors a call may end with: every one the connection's errors module exports.
TYPED: tuple[type[Exception], ...] = tuple(getattr(errors, name) for name in errors.__all__)
#: A call's timeout, and how much later than it the call must have ended.
TIMEOUT = 0.2
MARGIN = 2.0
BEHAVIOURS = (
    "ok",
    "never",
    "wrong id",
    "twice",
    "garbage",
    "not JSON with the id",
    "over the limit",
    "error",
    "broken result",
    "endless cursor",
    "slow endless cursor",
    "request with the same id",
    "notification flood",
    "hang up",
)
CALLS = ("list_tools", "call_tool", "ping", "list_resources", "read_resource", "list_prompts")


@dataclass(frozen=True)
class Hostile:
    """One input: the client's mode, its calls, the server's behaviour per request."""

    mode: str
    calls: tuple[str, ...]
    behaviours: tuple[str, ...]

    def describe(self) -> str:
        """The input as Python (a regression test can paste it)."""
        return f"Hostile(mode={self.mode!r}, calls={self.calls!r}, behaviours={self.behaviours!r})"


@dataclass
class Outcome:
    """What each call ended in."""

    ended: list[tuple[str, str, float]] = field(default_factory=list)
    escaped: list[tuple[str, BaseException]] = field(default_factory=list)
    late: list[tuple[str, float]] = field(default_factory=list)


def generate(seed_value: int, index: int) -> Hostile:
    """Input ``index`` of the run with ``seed_value``."""
    rng = random.Random(f"client/{seed_value}/{index}")
    mode = rng.choice(("auto", "legacy", "2025-11-25", "2025-06-18", "2024-11-05"))
    calls = tuple(rng.choice(CALLS) for _ in range(rng.randint(1, 4)))
    count = len(calls) + 2
    weights = [6] + [1] * (len(BEHAVIOURS) - 1)
    behaviours = tuple(rng.choices(BEHAVIOURS, weights, k=count))
    return Hostile(mode, calls, behaviours)


def _result(method: str, params: Any) -> Any:
    if method == "initialize":
        version = params.get("protocolVersion") if isinstance(params, dict) else None
        return {
            "protocolVersion": version if isinstance(version, str) else "2025-11-25",
            "capabilities": {"tools": {}, "resources": {}, "prompts": {}, "logging": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
    return {
        "tools/list": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]},
        "tools/call": {"content": [{"type": "text", "text": "ok"}]},
        "resources/list": {"resources": []},
        "resources/read": {"contents": [{"uri": "x://a", "text": "a"}]},
        "prompts/list": {"prompts": []},
    }.get(method, {})


async def _serve(stream: NewlineFramedStream, hostile: Hostile) -> None:
    """The hostile server, until the client is gone."""
    with contextlib.suppress(ConnectionClosed):
        await _answer(stream, hostile)


async def _answer(stream: NewlineFramedStream, hostile: Hostile) -> None:
    """The hostile server: what it does with its n-th request is ``behaviours[n]``
    (then ``ok``); a ``tools/list`` after an endless cursor gets one more."""
    turn = 0
    endless = ""

    async def send(body: Any) -> None:
        await stream.send(msgspec.json.encode(body))

    while True:
        try:
            raw = await stream.receive()
        except MessageTooLarge:
            continue
        except ConnectionClosed:
            return
        try:
            got = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            continue
        if not isinstance(got, dict) or "method" not in got or "id" not in got:
            continue
        method, rid, params = got["method"], got["id"], got.get("params")
        if method == "server/discover":
            await send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
            continue
        behaviour = hostile.behaviours[turn] if turn < len(hostile.behaviours) else "ok"
        turn += 1
        result = _result(method, params)
        if endless and method.endswith("/list"):
            behaviour = endless
        if behaviour == "ok":
            await send({"jsonrpc": "2.0", "id": rid, "result": result})
        elif behaviour == "wrong id":
            await send({"jsonrpc": "2.0", "id": 10_000 + turn, "result": result})
        elif behaviour == "twice":
            await send({"jsonrpc": "2.0", "id": rid, "result": result})
            await send({"jsonrpc": "2.0", "id": rid, "result": result})
        elif behaviour == "garbage":
            await stream.send(b"\xff\x00garbage{")
        elif behaviour == "not JSON with the id":
            await stream.send(b'{"jsonrpc":"2.0","id":' + msgspec.json.encode(rid) + b",")
        elif behaviour == "over the limit":
            head = b'{"jsonrpc":"2.0","id":' + msgspec.json.encode(rid) + b',"result":{"x":"'
            await stream.send(head + b"x" * (LIMIT + 1) + b'"}}')
        elif behaviour == "error":
            await send({"jsonrpc": "2.0", "id": rid, "error": {"code": -1, "message": "no"}})
        elif behaviour == "broken result":
            await send({"jsonrpc": "2.0", "id": rid, "result": {"tools": 7, "content": 7}})
        elif behaviour in ("endless cursor", "slow endless cursor"):
            endless = behaviour if method.endswith("/list") else ""
            if behaviour.startswith("slow"):
                await anyio.sleep(TIMEOUT * 0.75)  # each page within the call's timeout
            page = {**result, "nextCursor": f"c{turn}"} if isinstance(result, dict) else result
            await send({"jsonrpc": "2.0", "id": rid, "result": page})
        elif behaviour == "request with the same id":
            params = {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}
            await send(
                {"jsonrpc": "2.0", "id": rid, "method": "elicitation/create", "params": params}
            )
            await send({"jsonrpc": "2.0", "id": rid, "result": result})
        elif behaviour == "notification flood":
            note = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": 1},
            }
            for _ in range(200):
                await send(note)
            await send({"jsonrpc": "2.0", "id": rid, "result": result})
        elif behaviour == "hang up":
            await stream.aclose()
            return
        # "never": nothing


async def _call(client: Client, name: str) -> Any:
    if name == "list_tools":
        return await client.list_tools(timeout=TIMEOUT)
    if name == "call_tool":
        return await client.call_tool("t", {}, timeout=TIMEOUT)
    if name == "ping":
        return await client.ping(timeout=TIMEOUT)
    if name == "list_resources":
        return await client.list_resources(timeout=TIMEOUT)
    if name == "read_resource":
        return await client.read_resource("x://a", timeout=TIMEOUT)
    return await client.list_prompts(timeout=TIMEOUT)


async def run(hostile: Hostile) -> Outcome:
    """Run the client against the hostile server."""
    outcome = Outcome()
    to_server, server_in = memory_byte_pipe()
    server_out, from_server = memory_byte_pipe()
    server_side = NewlineFramedStream(server_in, server_out, max_message_size=LIMIT)
    client_side = NewlineFramedStream(from_server, to_server, max_message_size=LIMIT)

    async def timed(name: str, call: Any) -> bool:
        began = anyio.current_time()
        try:
            with anyio.fail_after(TIMEOUT + MARGIN):
                await call()
            outcome.ended.append((name, "result", anyio.current_time() - began))
        except TimeoutError as exc:
            if isinstance(exc, RequestTimeout):
                outcome.ended.append((name, type(exc).__name__, anyio.current_time() - began))
                return True
            outcome.late.append((name, anyio.current_time() - began))
            return False
        except TYPED as exc:
            outcome.ended.append((name, type(exc).__name__, anyio.current_time() - began))
            return not isinstance(exc, ConnectionClosed | NegotiationRefused)
        except Exception as exc:
            outcome.escaped.append((name, exc))
            return False
        return True

    bound = (len(hostile.calls) + 2) * (TIMEOUT + MARGIN) + 5
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(_serve, server_side, hostile)
        client = Client.over(client_side, mode=hostile.mode, open_timeout=TIMEOUT)
        began = anyio.current_time()
        stage = "open"
        try:
            with anyio.fail_after(bound) as scope:
                async with client:
                    if anyio.current_time() - began > TIMEOUT + MARGIN:
                        outcome.late.append(("open", anyio.current_time() - began))
                    for name in hostile.calls:
                        stage = name
                        if not await timed(name, lambda name=name: _call(client, name)):
                            break
                    stage = "close"
        except TYPED as exc:
            if stage == "open" and anyio.current_time() - began > TIMEOUT + MARGIN:
                outcome.late.append(("open", anyio.current_time() - began))
            outcome.ended.append((stage, type(exc).__name__, anyio.current_time() - began))
        except TimeoutError as exc:
            if scope.cancel_called:
                outcome.late.append((stage, anyio.current_time() - began))
            else:  # a bare TimeoutError, not a typed error
                outcome.escaped.append((stage, exc))
        except Exception as exc:
            outcome.escaped.append((stage, exc))
        await server_side.aclose()
        task_group.cancel_scope.cancel()
    return outcome


def check(hostile: Hostile) -> list[Failure]:
    """Run ``hostile`` and judge what happened."""
    with errors_logged() as records:
        outcome = anyio.run(run, hostile, backend="trio")
    failures = logged_failures(records)
    for name, exc in outcome.escaped:
        failures.append(
            Failure("a call raised an untyped error", where(exc), f"{name}: {exc!r}"[:300])
        )
    for name, seconds in outcome.late:
        failures.append(
            Failure(
                "a call outlived its timeout", name, f"{name} still running after {seconds:.1f} s"
            )
        )
    return failures


def shrink(hostile: Hostile, failure: Failure) -> Hostile:
    """A shorter input that still fails the same way (calls dropped one at a time)."""

    def still_fails(calls: tuple[str, ...]) -> bool:
        return any(f.key == failure.key for f in check(replace(hostile, calls=calls)))

    return replace(hostile, calls=drop_one_at_a_time(hostile.calls, still_fails, keep=1))
