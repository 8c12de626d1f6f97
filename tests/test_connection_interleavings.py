"""Random interleavings over a client peer and a Server in memory: calls that answer,
fail, report progress or wait to be released, cancelled by the caller at random points,
and a disconnect at a random moment. Every call ends exactly once, with the outcome its
kind and fate call for, and nothing is left waiting on either side."""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio
import anyio.lowlevel
from hypothesis import example, given
from hypothesis import strategies as st

from mcpspec.runtime import ClientSession
from mcpspec.runtime.connection import (
    ConnectionClosed,
    Peer,
    RequestContext,
    RequestError,
    Server,
    memory_pair,
)

from .connection_kit import HANG_GUARD

KINDS = ("echo", "fail", "progress", "held")

#: One step: start a call of a kind, cancel the n-th call, release the n-th held call,
#: let the tasks run for a few scheduling rounds, or disconnect.
steps = st.lists(
    st.one_of(
        st.tuples(st.just("call"), st.sampled_from(KINDS)),
        st.tuples(st.just("cancel"), st.integers(0, 7)),
        st.tuples(st.just("release"), st.integers(0, 7)),
        st.tuples(st.just("run"), st.integers(1, 5)),
        st.tuples(st.just("disconnect"), st.just(0)),
    ),
    max_size=24,
)


class Scenario:
    """The server, the client, and what each call did."""

    def __init__(self) -> None:
        self.releases: dict[int, anyio.Event] = {}
        self.server = Server("machine", "1.0")
        self.server.add_handler("tools/call", self.call_tool)
        self.outcomes: dict[int, list[str]] = {}
        self.kinds: dict[int, str] = {}
        self.scopes: dict[int, anyio.CancelScope] = {}

    def release(self, number: int) -> anyio.Event:
        return self.releases.setdefault(number, anyio.Event())

    async def call_tool(self, request: Any, ctx: RequestContext) -> Any:
        kind = request.params.name
        number = request.params.arguments["n"]
        if kind == "fail":
            raise RuntimeError("fails")
        if kind == "progress":
            for step in (1, 2):
                await ctx.report_progress(step, 2)
                await anyio.lowlevel.checkpoint()
        if kind == "held":
            await self.release(number).wait()
        return {"content": [{"type": "text", "text": f"{kind} {number}"}]}

    async def call(self, client: Peer[ClientSession], number: int, kind: str) -> None:
        t = client.session.types
        request = t.CallToolRequest(
            id=client.next_id(),
            params=t.CallToolRequestParams(name=kind, arguments={"n": number}),
        )
        progress: list[float] = []
        outcome = self.outcomes.setdefault(number, [])
        with anyio.CancelScope() as scope:
            self.scopes[number] = scope
            try:
                result = await client.request(
                    request, progress=lambda event: progress.append(event.progress)
                )
                outcome.append(f"answered: {result.content[0].text}")
                assert progress in ([], [1], [1, 2])  # in order, never after the answer
            except RequestError as exc:
                outcome.append(f"error {exc.code}")
            except ConnectionClosed:
                outcome.append("closed")
        if scope.cancelled_caught:
            outcome.append("cancelled")

    def expected(self, number: int, outcome: str) -> bool:
        kind = self.kinds[number]
        if outcome in ("cancelled", "closed"):
            return True
        if kind == "fail":
            return outcome == "error -32603"
        return outcome == f"answered: {kind} {number}"


async def run(plan: list[tuple[str, int | str]], revision: str) -> None:
    scenario = Scenario()
    server_end, client_end = memory_pair()
    with anyio.fail_after(HANG_GUARD):
        async with anyio.create_task_group() as outer:
            outer.start_soon(partial(scenario.server.serve, server_end, linger=0))
            client = Peer(ClientSession(mode=revision), client_end)  # type: ignore[arg-type]
            async with client:
                await client.open()
                async with anyio.create_task_group() as calls:
                    for action, value in plan:
                        if action == "call":
                            number = len(scenario.kinds)
                            scenario.kinds[number] = str(value)
                            scenario.release(number)
                            calls.start_soon(scenario.call, client, number, str(value))
                        elif action == "cancel" and value in scenario.scopes:
                            scenario.scopes[int(value)].cancel()
                        elif action == "release":
                            scenario.release(int(value)).set()
                        elif action == "run":
                            for _ in range(int(value)):
                                await anyio.lowlevel.checkpoint()
                        elif action == "disconnect":
                            await client.aclose()
                    for event in scenario.releases.values():
                        event.set()
                # Nothing of the client is left waiting.
                assert client._waiters == {}
                if not client.closed:
                    assert client.session.outstanding == frozenset()
    for number in scenario.kinds:
        outcome = scenario.outcomes.get(number, [])
        assert len(outcome) == 1, (number, outcome)  # exactly once
        assert scenario.expected(number, outcome[0]), (number, scenario.kinds[number], outcome)


#: Calls in flight when the connection goes: each must end, with ConnectionClosed.
DISCONNECTED = [("call", "held"), ("call", "progress"), ("run", 3), ("disconnect", 0)]
#: A call cancelled by its caller, another released, then the connection goes on.
CANCELLED = [("call", "held"), ("call", "held"), ("run", 2), ("cancel", 0), ("release", 1)]


@given(plan=steps, revision=st.sampled_from(["2025-06-18", "2026-07-28"]))
@example(plan=DISCONNECTED, revision="2026-07-28")
@example(plan=CANCELLED, revision="2025-06-18")
def test_every_call_ends_exactly_once(plan: list[tuple[str, int | str]], revision: str) -> None:
    anyio.run(run, plan, revision)


@given(plan=steps)
@example(plan=DISCONNECTED)
@example(plan=CANCELLED)
def test_every_call_ends_exactly_once_on_trio(plan: list[tuple[str, int | str]]) -> None:
    anyio.run(run, plan, "2025-11-25", backend="trio")
