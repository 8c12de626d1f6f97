"""Requests per second through nginx, and what the Redis path costs each request.

    python bench/cluster.py            # the full run (a minute or two)
    python bench/cluster.py --smoke    # a few calls per row: checks the harness only

Three stacks run side by side, each ``nginx`` in front of worker processes
(``tests/peers/cluster_worker.py`` under uvicorn), as ``nox -s cluster`` deploys them:

* ``1 worker, in process``: one worker keeping its sessions in its memory (no Redis);
* ``1 worker, Redis``: one worker sharing its sessions in a ``redis-server``;
* ``2 workers, Redis``: two such workers, nginx round-robin with no affinity.

Each round runs every stack once, in turn, so that the machine's drift falls on all
alike: ``--clients`` concurrent mcpspec clients of a handshake-era session
(2025-11-25), each making ``--calls`` ``tools/call`` (echo). A row gives the medians
over the rounds of: requests per second (wall time of the round), and the server CPU
per request in microseconds, the workers' and redis-server's (user + system time from
``/proc``, Linux only). The cost of the Redis path per request is the server CPU of
``1 worker, Redis`` (workers and Redis) less that of ``1 worker, in process``.

The clients run in this process, on the same machine: on few cores they take CPU the
workers would have, so requests per second is the rate of the whole machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcpspec.runtime.connection import Client
from tests.cluster_stack import ClusterStack, cluster_stack

#: The stacks compared: label, workers, whether they share sessions in Redis.
STACKS = (
    ("1 worker, in process", 1, False),
    ("1 worker, Redis", 1, True),
    ("2 workers, Redis", 2, True),
)
MODE = "2025-11-25"
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def server_pids(stack: ClusterStack) -> tuple[list[int], list[int]]:
    """The workers' process ids, and redis-server's (none when not shared)."""
    redis = stack.redis.process
    return stack.worker_pids(), [redis.pid] if redis is not None else []


async def one_round(stack: ClusterStack, clients: int, calls: int) -> dict[str, float]:
    """Run ``clients`` x ``calls`` echo calls through ``stack``'s nginx; the rate and
    the CPU per request of the workers and of Redis."""
    workers, redis = server_pids(stack)

    async def client(number: int, ready: Callable[[], Any]) -> None:
        async with Client.http(stack.url, mode=MODE) as session:
            await session.call_tool("echo", {"text": "warm"})
            await ready()
            for call in range(calls):
                text = f"{number}/{call}"
                result = await session.call_tool("echo", {"text": text}, timeout=30)
                # The harness check: each answer is this call's.
                if result.content[0].text != text:
                    raise AssertionError(f"answer {result.content[0].text!r} for {text!r}")

    # Sessions are opened before the clock starts: the rows are per call.
    opened = 0
    go = anyio.Event()
    all_open = anyio.Event()

    async def ready() -> None:
        nonlocal opened
        opened += 1
        if opened == clients:
            all_open.set()
        await go.wait()

    result: dict[str, float] = {}
    async with anyio.create_task_group() as group:
        for number in range(clients):
            group.start_soon(client, number, ready)
        await all_open.wait()
        worker_cpu = sum(map(cpu_seconds, workers))
        redis_cpu = sum(map(cpu_seconds, redis))
        started = time.perf_counter()
        go.set()
    # Every client's calls done (its session's DELETE too, counted in the time).
    elapsed = time.perf_counter() - started
    requests = clients * calls
    result["rps"] = requests / elapsed
    result["worker_us"] = (sum(map(cpu_seconds, workers)) - worker_cpu) / requests * 1e6
    result["redis_us"] = (sum(map(cpu_seconds, redis)) - redis_cpu) / requests * 1e6
    return result


async def measure(rounds: int, clients: int, calls: int) -> dict[str, dict[str, float]]:
    """The medians of each stack's rows over ``rounds`` rounds, side by side."""
    samples: dict[str, list[dict[str, float]]] = {label: [] for label, _, _ in STACKS}
    async with (
        cluster_stack(1, shared=False) as alone,
        cluster_stack(1) as one,
        cluster_stack(2) as two,
    ):
        stacks = dict(zip(samples, (alone, one, two), strict=True))
        for _ in range(rounds):
            for label, stack in stacks.items():
                samples[label].append(await one_round(stack, clients, calls))
    return {
        label: {key: statistics.median(row[key] for row in rows) for key in rows[0]}
        for label, rows in samples.items()
    }


def table(medians: dict[str, dict[str, float]], rounds: int, clients: int, calls: int) -> str:
    lines = [
        f"Through nginx, {clients} clients x {calls} tools/call ({MODE}), "
        f"medians of {rounds} rounds:",
        "",
        "| stack | requests/s | worker CPU/request | Redis CPU/request |",
        "|---|---:|---:|---:|",
    ]
    for label, row in medians.items():
        lines.append(
            f"| {label} | {row['rps']:,.0f} | {row['worker_us']:,.0f} µs "
            f"| {row['redis_us']:,.0f} µs |"
        )
    alone, shared = medians[STACKS[0][0]], medians[STACKS[1][0]]
    with_redis = shared["worker_us"] + shared["redis_us"]
    cost = with_redis - alone["worker_us"]
    # CPU time comes from /proc in clock ticks (10 ms): a short run may see none.
    ratio = (
        f"x{with_redis / alone['worker_us']:.2f}" if alone["worker_us"] else "too short to measure"
    )
    lines += [
        "",
        f"The Redis path costs {cost:,.0f} µs of server CPU per request "
        f"({with_redis:,.0f} µs against {alone['worker_us']:,.0f} µs in process, {ratio}).",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="check the harness only")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=250)
    args, _ = parser.parse_known_args()
    rounds, clients, calls = (1, 2, 10) if args.smoke else (args.rounds, args.clients, args.calls)
    medians = anyio.run(measure, rounds, clients, calls)
    for label, row in medians.items():
        if not (row["rps"] > 0 and row["worker_us"] >= 0 and row["redis_us"] >= 0):
            raise SystemExit(f"the cluster bench measured nothing for {label}: {row}")
    print(table(medians, rounds, clients, calls))


if __name__ == "__main__":
    main()
