"""What structured concurrency costs per request: the anyio steps a request of the
connection layer takes, each timed alone on asyncio, side by side in one run.

    python bench/structure_cost.py            # about 20 seconds
    python bench/structure_cost.py --smoke    # tiny batches; asserts the harness works

Every handler runs in a task group of its connection, inside a cancel scope of its own,
and a 2026-07-28 POST watches for its client going away from a task of its own in the
POST's task group (closing the stream is cancelling the request). Before that structure
a handler's first step was run by hand and a task made only when it waited. This script
times what the structure adds, so that the before-and-after table
(``bench/BEFORE_AFTER.md``) can be read against it:

* ``cancel scope``: entering and leaving an ``anyio.CancelScope`` (every handler);
* ``spawn into a task group``: ``start_soon`` of a task that ends by itself, into a
  task group that lives on (a handler of a stdio or handshake-era connection);
* ``task group, its task ends``: a task group made, one task started in it, the task
  ending by itself;
* ``task group, its task cancelled``: the same, the task cancelled when the work is
  done (the watch of a 2026-07-28 POST, cancelled once the request is answered);
* ``asyncio task`` and ``two loop turns``: the floor underneath, for scale.

A cell is the median over rounds of a batch's µs per operation.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc


async def _wait(event: asyncio.Event) -> None:
    await event.wait()


def _operations(
    task_group: anyio.abc.TaskGroup,
) -> dict[str, Callable[[], Awaitable[None]]]:
    async def cancel_scope() -> None:
        with anyio.CancelScope():
            await asyncio.sleep(0)

    async def spawn() -> None:
        event = asyncio.Event()
        task_group.start_soon(_wait, event)
        await asyncio.sleep(0)
        event.set()
        await asyncio.sleep(0)

    async def group_ends() -> None:
        event = asyncio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(_wait, event)
            await asyncio.sleep(0)
            event.set()

    async def group_cancelled() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(_wait, asyncio.Event())
            await asyncio.sleep(0)
            group.cancel_scope.cancel()

    async def asyncio_task() -> None:
        event = asyncio.Event()
        task = asyncio.get_running_loop().create_task(_wait(event))
        await asyncio.sleep(0)
        event.set()
        await task

    async def two_turns() -> None:
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    return {
        "cancel scope": cancel_scope,
        "spawn into a task group": spawn,
        "task group, its task ends": group_ends,
        "task group, its task cancelled": group_cancelled,
        "asyncio task": asyncio_task,
        "two loop turns": two_turns,
    }


async def measure(rounds: int, calls: int) -> dict[str, float]:
    """The median µs per operation of each step, the steps alternating in each round."""
    times: dict[str, list[float]] = {}
    async with anyio.create_task_group() as task_group:
        operations = _operations(task_group)
        for _ in range(rounds):
            for name, operation in operations.items():
                for _ in range(calls // 10):
                    await operation()
                started = time.perf_counter()
                for _ in range(calls):
                    await operation()
                elapsed = time.perf_counter() - started
                times.setdefault(name, []).append(elapsed / calls * 1e6)
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    rounds, calls = (1, 50) if args.smoke else (args.rounds, args.calls)
    medians = asyncio.run(measure(rounds, calls))
    print("| step | µs per operation |")
    print("|---|---|")
    for name, value in medians.items():
        print(f"| {name} | {value:.1f} |")
    if args.smoke and (len(medians) != 6 or not all(v > 0 for v in medians.values())):
        raise SystemExit("the harness measured nothing")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
