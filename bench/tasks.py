"""What running a call as a task costs, against the plain call, in the same run.

    python bench/tasks.py            # 2025-11-25 and the 2026-07-28 extension (a minute)
    python bench/tasks.py --smoke    # tiny batches; asserts the harness works

One process, a server and its client joined in memory (``Client.in_memory``), so all
the time measured is the library's, both sides: a row is ``--calls`` calls of an echo
tool, each either plain (``call_tool``) or as a task (``call_tool(..., task=True)``
then ``result()``: the ``CreateTaskResult``, then ``tasks/result`` in 2025-11-25, or
``tasks/get`` until it has ended in the extension), with the tasks kept in a
``MemoryTaskStore``, and, when ``redis-server`` is installed, in a ``RedisTaskStore``
on a ``redis-server`` of its own (its CPU not counted). A batch's cost is this
process's CPU time (``time.process_time``); the rows alternate within each round, a
cell is the median over rounds of µs per call, and ``÷ plain`` the median of the
ratios within a round.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Final

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcpspec.runtime.connection import Client, Server
from mcpspec.runtime.connection.task_store import MemoryTaskStore, TaskStore
from mcpspec.runtime.connection.tasks import TaskSettings

REVISIONS: Final = ("2025-11-25", "2026-07-28")


def echo_server(store: TaskStore) -> Server:
    server = Server("bench-tasks", tasks=TaskSettings(store=store, poll_interval_ms=1))

    @server.tool(task="optional")
    async def echo(text: str) -> str:
        return text

    return server


@asynccontextmanager
async def stores(redis: bool) -> AsyncIterator[dict[str, Callable[[], TaskStore]]]:
    """The stores compared, by name (each call a store of its own)."""
    # Every task of a run is kept (an hour): bounds above what a run creates.
    bounds = {"max_tasks": 1_000_000, "max_per_owner": 1_000_000}
    made: dict[str, Callable[[], TaskStore]] = {"memory": lambda: MemoryTaskStore(**bounds)}
    if not redis:
        yield made
        return
    from mcpspec.runtime.connection.http.redis_tasks import redis_task_store
    from tests.cluster_kit import redis_server

    async with redis_server() as url, AsyncExitStack() as closing:

        def on_redis() -> TaskStore:
            store = redis_task_store(url, poll_seconds=0.001, **bounds)
            closing.push_async_callback(store.aclose)
            return store

        made["redis"] = on_redis
        yield made


async def batch(client: Client, calls: int, task: bool) -> float:
    """µs of this process's CPU per call over ``calls`` echo calls."""
    started = time.process_time()
    for number in range(calls):
        text = str(number)
        if task:
            result = await (await client.call_tool("echo", {"text": text}, task=True)).result()
        else:
            result = await client.call_tool("echo", {"text": text})
        if result.text != text:  # the harness check: each answer is this call's
            raise AssertionError(f"answer {result.text!r} for {text!r}")
    return (time.process_time() - started) / calls * 1e6


async def measure(rounds: int, calls: int, redis: bool) -> dict[tuple[str, str], list[float]]:
    """Per (revision, row): the µs per call of each round."""
    samples: dict[tuple[str, str], list[float]] = {}
    async with stores(redis) as made, AsyncExitStack() as stack:
        clients: dict[tuple[str, str], Client] = {}
        for revision in REVISIONS:
            for name, make in made.items():
                server = echo_server(make())
                await stack.enter_async_context(server.running())
                client = Client.in_memory(server, mode=revision)
                clients[revision, name] = await stack.enter_async_context(client)
        for _ in range(rounds):
            for revision in REVISIONS:
                plain = await batch(clients[revision, "memory"], calls, task=False)
                samples.setdefault((revision, "plain"), []).append(plain)
                for name in made:
                    cost = await batch(clients[revision, name], calls, task=True)
                    samples.setdefault((revision, f"task, {name} store"), []).append(cost)
                    ratios = samples.setdefault((revision, f"task, {name} store ÷ plain"), [])
                    ratios.append(cost / plain if plain else float("nan"))
    return samples


def table(samples: dict[tuple[str, str], list[float]], rounds: int, calls: int) -> str:
    lines = [
        f"In memory, {calls} echo calls a row, medians of {rounds} rounds "
        "(this process's CPU, client and server):",
        "",
        "| revision | row | µs per call |",
        "|---|---|---:|",
    ]
    for (revision, row), values in samples.items():
        median = statistics.median(values)
        cell = f"{median:.2f}x" if "÷" in row else f"{median:,.0f}"
        lines.append(f"| {revision} | {row} | {cell} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="check the harness only")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=300)
    args, _ = parser.parse_known_args()
    rounds, calls = (1, 5) if args.smoke else (args.rounds, args.calls)
    redis = shutil.which("redis-server") is not None
    samples = anyio.run(measure, rounds, calls, redis)
    if any(value <= 0 for values in samples.values() for value in values) and not args.smoke:
        raise SystemExit("the task bench measured nothing")
    print(table(samples, rounds, calls))


if __name__ == "__main__":
    main()
