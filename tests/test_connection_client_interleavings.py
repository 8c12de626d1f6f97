"""Random interleavings of calls, progress, timeouts, cancelled callers and a disconnect
over an in-memory Client/Server pair (Hypothesis): every call ends exactly once, with
the outcome its kind allows, and nothing is left running or pending afterwards."""

from __future__ import annotations

import functools
from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpspec.runtime.connection import ConnectionClosed, RequestTimeout, memory_pair
from mcpspec.runtime.connection.client import Client
from mcpspec.runtime.connection.context import RequestContext
from mcpspec.runtime.connection.server import Server

#: One step: a call of some kind (with its parameter), or the client disconnecting.
Step = tuple[str, int]

steps = st.lists(
    st.one_of(
        st.tuples(st.just("echo"), st.integers(0, 9)),
        st.tuples(st.just("slow"), st.integers(1, 4)),
        st.tuples(st.just("timeout"), st.just(0)),
        st.tuples(st.just("cancel"), st.just(0)),
        st.tuples(st.just("disconnect"), st.just(0)),
        st.tuples(st.just("settle"), st.just(0)),
    ),
    max_size=12,
)


class Running:
    """How many of the server's handlers run now."""

    def __init__(self) -> None:
        self.now = 0


def busy_server(running: Running) -> Server:
    server = Server("busy")

    @server.handler("tools/call")
    async def call(request: Any, ctx: RequestContext) -> Any:
        running.now += 1
        try:
            name, n = request.params.name, request.params.arguments["n"]
            if name == "slow":
                for step in range(1, n + 1):
                    await ctx.report_progress(step, n)
            elif name == "wait":
                await anyio.sleep_forever()
            return {"content": [{"type": "text", "text": f"{name} {n}"}]}
        finally:
            running.now -= 1

    return server


async def scenario(plan: list[Step], mode: str) -> None:
    running = Running()
    outcomes: dict[int, list[str]] = {}
    progress: dict[int, list[float]] = {}
    scopes: dict[int, anyio.CancelScope] = {}
    disconnected = False
    client_end, server_end = memory_pair()

    async def call(client: Client, index: int, kind: str, n: int) -> None:
        record = outcomes.setdefault(index, [])
        seen = progress.setdefault(index, [])
        name = kind if kind in ("echo", "slow") else "wait"
        timeout = 0.001 if kind == "timeout" else None
        with anyio.CancelScope() as scope:
            scopes[index] = scope
            try:
                result = await client.call_tool(
                    name, {"n": n}, timeout=timeout, progress=lambda p: seen.append(p.progress)
                )
            except RequestTimeout:
                record.append("timeout")
            except ConnectionClosed:
                record.append("closed")
            else:
                record.append(result.text)
        if scope.cancelled_caught:
            record.append("cancelled")

    def cancel_callers() -> None:
        for index, scope in scopes.items():
            if plan[index][0] == "cancel":
                scope.cancel()

    with anyio.fail_after(20):  # a hang guard, never an assertion
        async with anyio.create_task_group() as serving:
            serving.start_soon(functools.partial(busy_server(running).serve, server_end, linger=0))
            async with Client.over(client_end, mode=mode) as client:
                async with anyio.create_task_group() as calls:
                    for index, (kind, n) in enumerate(plan):
                        if kind == "disconnect":
                            await client.aclose()
                            disconnected = True
                        elif kind == "settle":
                            await anyio.wait_all_tasks_blocked()
                            cancel_callers()
                        else:
                            calls.start_soon(call, client, index, kind, n)
                    await anyio.wait_all_tasks_blocked()
                    cancel_callers()
                # Every call has ended: nothing is pending on a live connection.
                if not disconnected:
                    assert client.session.outstanding == frozenset()
    for index, (kind, n) in enumerate(plan):
        if kind in ("disconnect", "settle"):
            continue
        record = outcomes[index]
        assert len(record) == 1, (kind, record)  # ended exactly once
        allowed = {
            "echo": {f"echo {n}", "closed"},
            "slow": {f"slow {n}", "closed"},
            "timeout": {"timeout", "closed"},
            "cancel": {"cancelled", "closed"},
        }[kind]
        assert record[0] in allowed, (kind, record)
        if record[0] == f"slow {n}":
            assert progress[index] == [float(step) for step in range(1, n + 1)]
        assert progress[index] == sorted(progress[index])
    # Nothing is left running on the server.
    assert running.now == 0


# anyio's wait_all_tasks_blocked polls every 0.1 s on asyncio and not on trio: the many
# examples run on trio, a few on asyncio.
@settings(deadline=None)
@given(plan=steps, mode=st.sampled_from(["2025-06-18", "2025-11-25", "2026-07-28"]))
def test_every_call_ends_exactly_once(plan: list[Step], mode: str) -> None:
    anyio.run(scenario, plan, mode, backend="trio")


@settings(deadline=None, max_examples=8)
@given(plan=steps, mode=st.sampled_from(["2025-11-25", "2026-07-28"]))
def test_every_call_ends_exactly_once_on_asyncio(plan: list[Step], mode: str) -> None:
    anyio.run(scenario, plan, mode)
