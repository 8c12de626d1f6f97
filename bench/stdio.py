"""Stdio round trips (issue 9): ``tools/call`` echo calls per second through a real server
subprocess, with mcpspec and the official SDK (``mcp==2.3.0``) on either side.

Run from a checkout (``bench/run.py`` runs it as one of its sections)::

    python bench/stdio.py                                   # 2025-11-25 and 2026-07-28
    python bench/stdio.py --revision 2025-11-25 --rounds 5
    python bench/stdio.py --smoke                           # tiny counts; asserts it works
    python bench/stdio.py --profile "mcpspec → mcpspec"     # cProfile both sides of a pair

Pairs (client → server), each over a server subprocess's stdin and stdout:

* ``mcpspec → mcpspec``: the connection layer's ``Client.stdio`` and ``Server.run``
  (``bench/peers/echo_mcpspec.py``);
* ``SDK → SDK``: ``mcp.Client`` with ``StdioServerParameters`` and the SDK's low-level
  ``Server`` on its ``stdio_server`` (``bench/peers/echo_sdk.py``; its fastest server);
* the mixed pairs ``SDK → mcpspec`` and ``mcpspec → SDK``;
* ``floor``, a reference: anyio process streams writing one line and reading it back from
  ``bench/peers/line_echo.py`` (blocking reads and writes, no JSON): what the pipes, the
  two wake-ups and an asyncio event loop cost, and nothing of MCP.

Method. The clients run in a fresh worker process (this script, ``--worker``), so the
measurements do not depend on what the calling process holds. The worker opens one
connection per pair, in the revision measured (the SDK client as an SDK user pins it:
``mode="legacy"`` for 2025-11-25, the revision for 2026-07-28), warms each up, then
runs rounds: in each round every pair, in an order rotating from round to round, makes a
batch of echo calls one at a time, then a batch with 16 calls in flight (16 tasks, each
calling in turn). A batch is a fixed number of calls (every answer is checked), timed
with the garbage collector on, as an application runs. A rate is the median over rounds
of the batch's calls per second; a ratio is the median over rounds of the ratio within
the round, so the load of the shared machine cancels out. Each batch also records the
CPU time per call of the client (the worker process) and of the server (which answers
its own ``time.process_time()`` through a ``cpu`` tool, asked before and after): where
a round trip's time goes.

Before and after (``measure_against``, for ``bench/before_after.py``): the pair
``mcpspec → mcpspec`` of the checkout and that of an earlier revision (its mcpspec
installed into a folder of its own, on ``PYTHONPATH`` of a second worker and of the
servers it launches, the same peer code on both) side by side in the same rounds, with the
floor. A worker that serves batches (``--worker batches``) opens its pairs and then runs
each batch the calling process asks for on its stdin, so the rounds of the two workers
interleave batch by batch as the pairs of one worker do.

Memory per open connection (client side): in a fresh process per client, with one
connection open and warm, ``Settings.memory_connections`` more connections to the
mcpspec echo server are opened (each makes one call); the growth of the process's
resident set, then (opening as many again under ``tracemalloc``) of the memory Python
allocated, divided by their number. The server processes are not counted.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib.util
import io
import json
import math
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

HERE: Final = Path(__file__).resolve().parent
PEERS: Final = HERE / "peers"

#: The multiplication sign, for ratios.
X: Final = "\N{MULTIPLICATION SIGN}"

MCPSPEC: Final = "mcpspec"
SDK: Final = "SDK"
FLOOR: Final = "floor"
#: The server script of each server side.
SERVERS: Final = {
    MCPSPEC: PEERS / "echo_mcpspec.py",
    SDK: PEERS / "echo_sdk.py",
    FLOOR: PEERS / "line_echo.py",
}
#: The revisions measured, when asked for (the mixed pairs interoperate in both).
REVISIONS: Final = ("2025-11-25", "2026-07-28")
#: Calls in flight at once, per batch.
IN_FLIGHT: Final = (1, 16)


@dataclass(frozen=True)
class Pair:
    """A client kind talking to a server kind."""

    client: str
    server: str

    @property
    def key(self) -> str:
        """The pair's name in the report and the table."""
        return FLOOR if self.client == FLOOR else f"{self.client} → {self.server}"


MCPSPEC_PAIR: Final = Pair(MCPSPEC, MCPSPEC)
SDK_PAIR: Final = Pair(SDK, SDK)
SDK_TO_MCPSPEC: Final = Pair(SDK, MCPSPEC)
MCPSPEC_TO_SDK: Final = Pair(MCPSPEC, SDK)
FLOOR_PAIR: Final = Pair(FLOOR, FLOOR)
#: Every pair, in the table's order.
PAIRS: Final = (MCPSPEC_PAIR, SDK_PAIR, SDK_TO_MCPSPEC, MCPSPEC_TO_SDK, FLOOR_PAIR)


@dataclass
class Settings:
    """How much to measure."""

    rounds: int
    sequential_calls: int
    concurrent_calls: int
    warmup_calls: int
    memory_connections: int

    @classmethod
    def for_run(cls, *, smoke: bool, rounds: int | None = None) -> Settings:
        """The settings of a full run (or of ``--smoke``), with ``rounds`` when given."""
        if smoke:
            settings = cls(
                rounds=2,
                sequential_calls=8,
                concurrent_calls=32,
                warmup_calls=2,
                memory_connections=1,
            )
        else:
            settings = cls(
                rounds=9,
                sequential_calls=500,
                concurrent_calls=1024,
                warmup_calls=100,
                memory_connections=10,
            )
        if rounds is not None:
            settings.rounds = rounds
        return settings

    def calls(self, in_flight: int) -> int:
        """The calls of one batch with ``in_flight`` calls at once."""
        return self.sequential_calls if in_flight == 1 else self.concurrent_calls


def sdk_available() -> bool:
    """Whether the official SDK's session layer (``mcp``) is installed."""
    return importlib.util.find_spec("mcp") is not None


# -- clients (in the worker) ------------------------------------------------------------------

#: Calls a tool (``echo``, or ``cpu``: the server's CPU seconds) with a message and returns
#: the text of the answer.
Call = Callable[[str, str], Awaitable[str]]
Connect = Callable[[str, Sequence[str], str], AbstractAsyncContextManager[Call]]
#: Per pair, per calls in flight (``"1"``, ``"16"``), per measure (``seconds``,
#: ``client_cpu``, ``server_cpu``): one value per call for each round.
Rounds = dict[str, dict[str, dict[str, list[float]]]]
MEASURES: Final = ("seconds", "client_cpu", "server_cpu")


@asynccontextmanager
async def mcpspec_connect(command: str, args: Sequence[str], revision: str) -> AsyncIterator[Call]:
    """An mcpspec client of the stdio server ``command args``, pinned to ``revision``."""
    from mcpspec.runtime.connection.client import Client

    async with Client.stdio(command, args, mode=revision) as client:
        if client.revision != revision:
            raise RuntimeError(f"the mcpspec client negotiated {client.revision}")

        async def call(tool: str, message: str) -> str:
            result = await client.call_tool(tool, {"message": message})
            text: str = result.content[0].text
            return text

        yield call


@asynccontextmanager
async def floor_connect(command: str, args: Sequence[str], revision: str) -> AsyncIterator[Call]:
    """Lines to ``command args`` (a line echo) and back, over anyio process streams: a
    reader task hands each line back to the call waiting for it."""
    import anyio

    del revision
    process = await anyio.open_process([command, *args])
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout
    waiting: dict[bytes, anyio.Event] = {}
    answers: dict[bytes, bytes] = {}

    async def read() -> None:
        pending = b""
        while True:
            try:
                pending += await stdout.receive()
            except anyio.EndOfStream:
                return
            *lines, pending = pending.split(b"\n")
            for line in lines:
                key = b"cpu" if line.startswith(b"cpu ") else line
                answers[key] = line
                waiting.pop(key).set()

    async def call(tool: str, message: str) -> str:
        line = b"cpu" if tool == "cpu" else message.encode()
        waiting[line] = event = anyio.Event()
        await stdin.send(line + b"\n")
        await event.wait()
        answer = answers.pop(line)
        return answer[4:].decode() if tool == "cpu" else answer.decode()

    async with process, anyio.create_task_group() as task_group:
        task_group.start_soon(read)
        try:
            yield call
        finally:
            await stdin.aclose()
            await process.wait()


def connector(client: str) -> Connect:
    """How the ``client`` kind connects."""
    if client == SDK:
        if str(HERE) not in sys.path:
            sys.path.insert(0, str(HERE))
        from peers.sdk_client import connect

        return connect
    return floor_connect if client == FLOOR else mcpspec_connect


def server_command(server: str, profile_to: Path | None = None) -> tuple[str, list[str]]:
    """The command line of the ``server`` kind (under cProfile, to ``profile_to``)."""
    script = str(SERVERS[server])
    if profile_to is None:
        return sys.executable, [script]
    return sys.executable, ["-m", "cProfile", "-o", str(profile_to), script]


async def echo_batch(call: Call, calls: int, in_flight: int) -> float:
    """Seconds taken by ``calls`` echo calls, ``in_flight`` at a time (each checked)."""
    import anyio

    async def caller(worker: int, count: int) -> None:
        for i in range(count):
            message = f"hello {worker} {i}"
            answer = await call("echo", message)
            if answer != message:
                raise AssertionError(f"echo answered {answer!r} to {message!r}")

    start = time.perf_counter()
    if in_flight == 1:
        await caller(0, calls)
    else:
        async with anyio.create_task_group() as task_group:
            for worker in range(in_flight):
                share = calls // in_flight + (worker < calls % in_flight)
                task_group.start_soon(caller, worker, share)
    return time.perf_counter() - start


async def measured_batch(call: Call, calls: int, in_flight: int) -> dict[str, float]:
    """:func:`echo_batch`, with the CPU time of this process (the client's side) and of
    the server (its ``cpu`` tool, asked before and after): each per call."""
    server_before = float(await call("cpu", ""))
    client_before = time.process_time()
    elapsed = await echo_batch(call, calls, in_flight)
    client_cpu = time.process_time() - client_before
    server_cpu = float(await call("cpu", "")) - server_before
    return {
        "seconds": elapsed / calls,
        "client_cpu": client_cpu / calls,
        "server_cpu": server_cpu / calls,
    }


@asynccontextmanager
async def open_pairs(pairs: Sequence[Pair], revision: str) -> AsyncIterator[dict[Pair, Call]]:
    """A connection of every pair, opened at once (each held open by a task of its own,
    which enters and leaves it), by pair."""
    import anyio

    callers: dict[Pair, Call] = {}
    release = anyio.Event()

    async def hold(pair: Pair, opened: anyio.Event) -> None:
        command, args = server_command(pair.server)
        async with connector(pair.client)(command, args, revision) as call:
            callers[pair] = call
            opened.set()
            await release.wait()

    async with anyio.create_task_group() as task_group:
        opened = []
        for pair in pairs:
            opened.append(anyio.Event())
            task_group.start_soon(hold, pair, opened[-1])
        for event in opened:
            await event.wait()
        try:
            yield callers
        finally:
            release.set()


async def throughput(revision: str, pairs: Sequence[Pair], settings: Settings) -> Rounds:
    """Every pair's batches in ``revision``, round after round, side by side."""
    rounds: Rounds = {
        pair.key: {str(n): {m: [] for m in MEASURES} for n in IN_FLIGHT} for pair in pairs
    }
    async with open_pairs(pairs, revision) as callers:
        for pair in pairs:
            for in_flight in IN_FLIGHT:
                await echo_batch(callers[pair], settings.warmup_calls * in_flight, in_flight)
        for round_ in range(settings.rounds):
            shift = round_ % len(pairs)
            for pair in [*pairs[shift:], *pairs[:shift]]:
                for in_flight in IN_FLIGHT:
                    calls = settings.calls(in_flight)
                    batch = await measured_batch(callers[pair], calls, in_flight)
                    for measure_, value in batch.items():
                        rounds[pair.key][str(in_flight)][measure_].append(value)
            rates = ", ".join(
                f"{key} {1 / runs['1']['seconds'][-1]:,.0f}/{1 / runs['16']['seconds'][-1]:,.0f}"
                for key, runs in rounds.items()
            )
            print(
                f"  stdio {revision} round {round_ + 1}/{settings.rounds} "
                f"(calls/s, 1/16 in flight): {rates}",
                file=sys.stderr,
            )
    return rounds


def _rss_bytes() -> int | None:
    """This process's resident set size (Linux), else ``None``."""
    try:
        resident = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return resident * os.sysconf("SC_PAGE_SIZE")


async def connection_memory(client: str, revision: str, connections: int) -> dict[str, Any]:
    """Client-side memory per open connection of the ``client`` kind (see the module)."""
    connect = connector(client)
    command, args = server_command(MCPSPEC)

    async def open_more(stack: AsyncExitStack) -> None:
        for i in range(connections):
            call = await stack.enter_async_context(connect(command, args, revision))
            await call("echo", f"connection {i}")
        gc.collect()

    async with AsyncExitStack() as stack:
        call = await stack.enter_async_context(connect(command, args, revision))
        await call("echo", "warm-up")
        gc.collect()
        rss_before = _rss_bytes()
        await open_more(stack)
        rss_after = _rss_bytes()
        tracemalloc.start()
        traced_before = tracemalloc.get_traced_memory()[0]
        await open_more(stack)
        traced_after = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    rss = None
    if rss_before is not None and rss_after is not None:
        rss = (rss_after - rss_before) / connections / 1024
    return {
        "connections": connections,
        "server": MCPSPEC,
        "revision": revision,
        "rss_kib": rss,
        "traced_kib": (traced_after - traced_before) / connections / 1024,
    }


async def profile_pair(pair: Pair, revision: str, calls: int, in_flight: int, top: int) -> str:
    """cProfile of ``calls`` echo calls of ``pair``: the client in this process, the
    server in its own; the ``top`` functions of each by own time."""
    out = io.StringIO()
    with tempfile.TemporaryDirectory() as directory:
        server_profile = Path(directory) / "server.prof"
        command, args = server_command(pair.server, server_profile)
        profiler = cProfile.Profile()
        async with connector(pair.client)(command, args, revision) as call:
            await echo_batch(call, 100 * in_flight, in_flight)
            profiler.enable()
            elapsed = await echo_batch(call, calls, in_flight)
            profiler.disable()
        print(
            f"--- {pair.key} {revision}, {in_flight} in flight: {calls / elapsed:,.0f} calls/s "
            "under cProfile",
            file=out,
        )
        print(f"--- client ({pair.client})", file=out)
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
        if server_profile.exists():  # written when the server exits
            print(f"--- server ({pair.server}; start-up and warm-up included)", file=out)
            pstats.Stats(str(server_profile), stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


async def serve_batches(revision: str, pairs: Sequence[Pair], settings: Settings) -> None:
    """Open a connection of every pair, warm each up, say ``ready`` (a JSON line naming
    the mcpspec imported), then run each batch asked for on stdin (a line ``PAIR<tab>N``:
    the pair's key, the calls in flight) and answer its measures as a JSON line, until
    stdin closes."""
    import anyio

    import mcpspec

    by_key = {pair.key: pair for pair in pairs}
    async with open_pairs(pairs, revision) as callers:
        for pair in pairs:
            for in_flight in IN_FLIGHT:
                await echo_batch(callers[pair], settings.warmup_calls * in_flight, in_flight)
        print(json.dumps({"ready": mcpspec.__file__}), flush=True)
        while line := await anyio.to_thread.run_sync(sys.stdin.readline):
            key, in_flight = line.rstrip("\n").split("\t")
            n = int(in_flight)
            batch = await measured_batch(callers[by_key[key]], settings.calls(n), n)
            print(json.dumps(batch), flush=True)


def _worker(args: argparse.Namespace) -> None:
    """The worker's entry: one measurement, as JSON on stdout."""
    import anyio

    settings = Settings(**json.loads(args.settings))
    if args.worker == "batches":
        by_key = {pair.key: pair for pair in PAIRS}
        pairs = [by_key[key] for key in args.pairs.split(",")]
        anyio.run(serve_batches, args.revision[0], pairs, settings)
        return
    if args.worker == "throughput":
        by_key = {pair.key: pair for pair in PAIRS}
        pairs = [by_key[key] for key in args.pairs.split(",")]
        result: Any = {
            revision: anyio.run(throughput, revision, pairs, settings) for revision in args.revision
        }
    else:
        revision = args.revision[0]
        result = anyio.run(connection_memory, args.client, revision, settings.memory_connections)
    json.dump(result, sys.stdout)


# -- measuring and reporting (in the calling process) ----------------------------------------


def start_worker(script: str, settings: Any, *args: str) -> subprocess.Popen[bytes]:
    """Start ``script`` (a benchmark module) as a worker with its ``settings`` (a
    dataclass) and ``args``; its JSON answer comes on its stdout."""
    command = [sys.executable, script, "--settings", json.dumps(asdict(settings)), *args]
    return subprocess.Popen(command, stdout=subprocess.PIPE)


def worker_answer(worker: subprocess.Popen[bytes]) -> Any:
    """The JSON answer of ``worker``, once it has exited."""
    out, _ = worker.communicate()
    if worker.returncode != 0:
        raise RuntimeError(f"a benchmark worker failed (exit status {worker.returncode})")
    return json.loads(out)


def _start_worker(settings: Settings, *args: str) -> subprocess.Popen[bytes]:
    return start_worker(__file__, settings, *args)


def measure(revisions: Sequence[str], settings: Settings, *, smoke: bool = False) -> dict[str, Any]:
    """The stdio section of the report: throughput of every pair in each of
    ``revisions`` that this benchmark measures, and memory per connection. The memory
    workers run side by side (their figures do not depend on time), and with ``smoke``
    alongside the throughput worker too (its figures mean nothing then)."""
    wanted = [r for r in revisions if r in REVISIONS]
    sdk = sdk_available()
    pairs = [pair for pair in PAIRS if sdk or SDK not in (pair.client, pair.server)]
    section: dict[str, Any] = {"settings": asdict(settings), "revisions": {}, "memory": {}}
    if not sdk:
        section["sdk_error"] = "mcp not installed: the SDK pairs were not measured"
    if importlib.util.find_spec("anyio") is None:
        section["skipped"] = "not measured: anyio (the extra `mcpspec[connect]`) is not installed"
        return section
    if not wanted:
        return section
    keys = ",".join(pair.key for pair in pairs)
    timing = _start_worker(
        settings, "--worker", "throughput", *(f"-r{r}" for r in wanted), "--pairs", keys
    )

    def memory_workers() -> dict[str, subprocess.Popen[bytes]]:
        return {
            client: _start_worker(
                settings, "--worker", "memory", "-r", wanted[0], "--client", client
            )
            for client in ((MCPSPEC, SDK) if sdk else (MCPSPEC,))
        }

    if smoke:
        memory = memory_workers()
        by_revision: dict[str, Rounds] = worker_answer(timing)
    else:
        by_revision = worker_answer(timing)
        memory = memory_workers()
    section["memory"] = {client: worker_answer(worker) for client, worker in memory.items()}
    for revision in wanted:
        section["revisions"][revision] = summarize(by_revision[revision])
    return section


class BatchWorker:
    """A worker serving batches (``--worker batches``) of its pairs in one revision,
    with ``site`` (a folder holding an mcpspec) first on its ``PYTHONPATH`` if given."""

    def __init__(
        self, settings: Settings, revision: str, pairs: Sequence[Pair], site: Path | None
    ) -> None:
        env = dict(os.environ)
        if site is not None:
            env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH")) if p)
        keys = ",".join(pair.key for pair in pairs)
        command = [sys.executable, __file__, "--settings", json.dumps(asdict(settings))]
        command += ["--worker", "batches", "-r", revision, "--pairs", keys]
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
        )
        #: Where the worker's mcpspec is (its ``__file__``), once it is ready.
        self.mcpspec = str(self._answer()["ready"])

    def _answer(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError(f"a benchmark worker failed (exit status {self._process.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def batch(self, pair: Pair, in_flight: int) -> dict[str, float]:
        """The measures of one batch of ``pair`` with ``in_flight`` calls at once."""
        assert self._process.stdin is not None
        self._process.stdin.write(f"{pair.key}\t{in_flight}\n")
        self._process.stdin.flush()
        return self._answer()

    def close(self) -> None:
        """Close its stdin (it closes its connections and exits) and wait for it."""
        assert self._process.stdin is not None
        self._process.stdin.close()
        if self._process.wait() != 0:
            raise RuntimeError(
                f"a benchmark worker failed (exit status {self._process.returncode})"
            )


def measure_against(
    site: Path, label: str, revisions: Sequence[str], settings: Settings
) -> dict[str, Any]:
    """``mcpspec → mcpspec`` of the checkout and of revision ``label`` (its mcpspec
    installed in ``site``), with the floor, side by side in the same rounds (see the
    module's docstring), in each of ``revisions``: the stdio part of
    ``bench/before_after.py``. The baseline's pair is keyed ``mcpspec@LABEL``."""
    baseline_key = f"{MCPSPEC}@{label}"
    section: dict[str, Any] = {"settings": asdict(settings), "revisions": {}}
    for revision in (r for r in revisions if r in REVISIONS):
        after = BatchWorker(settings, revision, [MCPSPEC_PAIR, FLOOR_PAIR], None)
        before = BatchWorker(settings, revision, [MCPSPEC_PAIR], site)
        assert not after.mcpspec.startswith(str(site)), after.mcpspec
        assert before.mcpspec.startswith(str(site)), before.mcpspec  # the baseline's own
        lanes = [
            (MCPSPEC_PAIR.key, after, MCPSPEC_PAIR),
            (baseline_key, before, MCPSPEC_PAIR),
            (FLOOR, after, FLOOR_PAIR),
        ]
        rounds: Rounds = {
            key: {str(n): {m: [] for m in MEASURES} for n in IN_FLIGHT} for key, _, _ in lanes
        }
        try:
            for round_ in range(settings.rounds):
                shift = round_ % len(lanes)
                for key, worker, pair in [*lanes[shift:], *lanes[:shift]]:
                    for in_flight in IN_FLIGHT:
                        for measure_, value in worker.batch(pair, in_flight).items():
                            rounds[key][str(in_flight)][measure_].append(value)
                print(
                    f"  stdio {revision} round {round_ + 1}/{settings.rounds} against {label}",
                    file=sys.stderr,
                )
        finally:
            after.close()
            before.close()
        section["revisions"][revision] = summarize(rounds)
    return section


def median_ratio(numerators: list[float], denominators: list[float]) -> float:
    """The median of the rounds' ratios; a round whose denominator is 0 (a CPU time
    below the 10 ms tick of ``/proc``, in a short smoke batch) has none: NaN when no
    round has one."""
    ratios = [a / b for a, b in zip(numerators, denominators, strict=True) if b]
    return statistics.median(ratios) if ratios else math.nan


def _sums(batches: dict[str, list[float]]) -> list[float]:
    """Client and server CPU time per call, added, per round."""
    return [a + b for a, b in zip(batches["client_cpu"], batches["server_cpu"], strict=True)]


def summarize(rounds: Rounds) -> dict[str, Any]:
    """Rates, CPU per call and ratios from the per-round batches of each pair."""
    pairs: dict[str, Any] = {}
    for key, runs in rounds.items():
        entry: dict[str, Any] = {
            "calls_per_s": {n: 1 / statistics.median(r["seconds"]) for n, r in runs.items()},
            "client_cpu_us": {n: statistics.median(r["client_cpu"]) * 1e6 for n, r in runs.items()},
            "server_cpu_us": {n: statistics.median(r["server_cpu"]) * 1e6 for n, r in runs.items()},
            "rounds": runs,
        }
        if SDK_PAIR.key in rounds:
            # The SDK pair's time per call over this pair's, round by round: the speedup.
            sdk = rounds[SDK_PAIR.key]
            entry["speedup_over_sdk_pair"] = {
                n: median_ratio(sdk[n]["seconds"], r["seconds"]) for n, r in runs.items()
            }
            # The same for CPU time per call, which the machine's load hardly changes.
            entry["cpu_ratio_to_sdk_pair"] = {
                n: {
                    "client": median_ratio(sdk[n]["client_cpu"], r["client_cpu"]),
                    "server": median_ratio(sdk[n]["server_cpu"], r["server_cpu"]),
                    "both": median_ratio(_sums(sdk[n]), _sums(r)),
                }
                for n, r in runs.items()
            }
        if FLOOR in rounds and key != FLOOR:
            floor = rounds[FLOOR]
            entry["floor_ratio"] = {
                n: median_ratio(r["seconds"], floor[n]["seconds"]) for n, r in runs.items()
            }
        pairs[key] = entry
    return {"pairs": pairs}


def _speedup(section: dict[str, Any], revision: str, pair: Pair) -> dict[str, float] | None:
    entry = section["revisions"][revision]["pairs"].get(pair.key)
    if entry is None:
        return None
    speedup: dict[str, float] | None = entry.get("speedup_over_sdk_pair")
    return speedup


def _cpu_ratios(section: dict[str, Any], revision: str, pair: Pair, side: str) -> str:
    """``pair``'s CPU ratios to the SDK pair on ``side``, 1 and 16 in flight, as text."""
    ratios = section["revisions"][revision]["pairs"][pair.key]["cpu_ratio_to_sdk_pair"]
    return " / ".join(f"{ratios[str(n)][side]:.1f}{X}" for n in IN_FLIGHT)


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    """The targets of issue 9, as ``bench/run.py``'s ``evaluate_targets`` reports them:
    on calls per second; the measured column adds the ratio of CPU time per call (of both
    sides, or of the server), which the machine's load hardly changes."""
    rows = []
    for name, pair, limit, side in (
        ("stdio echo calls/s, mcpspec → mcpspec ÷ SDK → SDK", MCPSPEC_PAIR, 5.0, "both"),
        ("stdio echo calls/s under the SDK client, mcpspec server ÷ SDK server",
         SDK_TO_MCPSPEC, 3.0, "server"),
    ):  # fmt: skip
        found = [
            (revision, n, value)
            for revision in section["revisions"]
            for n, value in (_speedup(section, revision, pair) or {}).items()
        ]
        if not found:
            rows.append(
                {
                    "target": name,
                    "limit": f"≥ {limit:.0f}{X}",
                    "measured": section.get("sdk_error", "not measured"),
                    "worst": "-",
                    "pass": None,
                }
            )
            continue
        worst = min(found, key=lambda row: row[2])
        rows.append(
            {
                "target": name,
                "limit": f"≥ {limit:.0f}{X}",
                "measured": "; ".join(
                    f"{revision}: "
                    + ", ".join(f"{v:.1f}{X} ({n} in flight)" for r, n, v in found if r == revision)
                    + f" (CPU per call, {'both sides' if side == 'both' else 'server'}: "
                    + _cpu_ratios(section, revision, pair, side)
                    + ")"
                    for revision in section["revisions"]
                ),
                "worst": f"{worst[0]}, {worst[1]} in flight: {worst[2]:.1f}{X}",
                "pass": all(value >= limit for _, _, value in found),
                "per_revision": {
                    revision: _speedup(section, revision, pair) for revision in section["revisions"]
                },
            }
        )
    return rows


def markdown(section: dict[str, Any]) -> str:
    """The stdio section as markdown: a table per revision, and memory per connection."""
    settings = section["settings"]
    lines = [
        f"Echo `tools/call` through a server subprocess over stdio: median calls/s over "
        f"{settings['rounds']} rounds (batches of {settings['sequential_calls']} calls one at "
        f"a time, {settings['concurrent_calls']} with 16 in flight), pairs measured side by "
        "side. `÷ SDK → SDK`: how many times the SDK pair's rate, within each round. "
        "`floor` writes a line to a line-echo process and reads it back (no MCP); "
        f"`{X} floor`: time per call over the floor's. CPU µs/call: CPU time of the client "
        "process and of the server process per call (median over rounds); with one call "
        "in flight the two sides take turns, so a call costs at least their sum.",
        "",
    ]
    for note in ("skipped", "sdk_error"):
        if note in section:
            lines += [section[note], ""]
    header = [
        "revision",
        "client → server",
        "calls/s, 1 in flight",
        "calls/s, 16 in flight",
        "÷ SDK → SDK, 1 / 16",
        f"{X} floor, 1 / 16",
        "client CPU µs/call, 1 / 16",
        "server CPU µs/call, 1 / 16",
    ]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for revision, data in section["revisions"].items():
        for key, entry in data["pairs"].items():
            rates = entry["calls_per_s"]
            speedup = entry.get("speedup_over_sdk_pair")
            floor = entry.get("floor_ratio")
            client_cpu, server_cpu = entry["client_cpu_us"], entry["server_cpu_us"]
            cells = [
                revision,
                key,
                f"{rates['1']:,.0f}",
                f"{rates['16']:,.0f}",
                f"{speedup['1']:.2f} / {speedup['16']:.2f}" if speedup else "-",
                f"{floor['1']:.1f} / {floor['16']:.1f}" if floor else "-",
                f"{client_cpu['1']:,.0f} / {client_cpu['16']:,.0f}",
                f"{server_cpu['1']:,.0f} / {server_cpu['16']:,.0f}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    memory = section["memory"]
    if memory:
        lines.append("")
        parts = []
        for client, entry in memory.items():
            rss = "n/a" if entry["rss_kib"] is None else f"{entry['rss_kib']:,.0f} KiB"
            parts.append(f"{client} {entry['traced_kib']:,.1f} KiB allocated, {rss} resident")
        first = next(iter(memory.values()))
        lines.append(
            f"Memory per open connection, client side ({first['connections']} more "
            f"connections to the mcpspec echo server, {first['revision']}): "
            + "; ".join(parts)
            + "."
        )
    lines.append("")
    return "\n".join(lines)


def smoke_check(section: dict[str, Any]) -> None:
    """What ``--smoke`` asserts of the section: every pair ran and the numbers are sane."""
    assert section["revisions"], section.get("skipped", "no stdio revision measured")
    expected = {pair.key for pair in PAIRS} if sdk_available() else {MCPSPEC_PAIR.key, FLOOR}
    for revision, data in section["revisions"].items():
        assert set(data["pairs"]) == expected, (revision, sorted(data["pairs"]))
        for key, entry in data["pairs"].items():
            for n in IN_FLIGHT:
                rate = entry["calls_per_s"][str(n)]
                assert 0 < rate < 10_000_000, (revision, key, n, rate)
    for client, entry in section["memory"].items():
        assert entry["traced_kib"] > 0, (client, entry)
        assert entry["rss_kib"] is None or entry["rss_kib"] > -1e6, (client, entry)
    for target in targets(section):
        assert target["pass"] in (True, False, None), target
    markdown(section)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point (and the worker's)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny counts; check it works")
    parser.add_argument("-r", "--revision", action="append", choices=REVISIONS)
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 9)")
    parser.add_argument("--json", type=Path, help="write the section as JSON here")
    parser.add_argument("--profile", metavar="PAIR", help='cProfile one pair, e.g. "SDK → SDK"')
    parser.add_argument("--in-flight", type=int, default=1, help="with --profile (default 1)")
    parser.add_argument(
        "--worker", choices=("throughput", "memory", "batches"), help=argparse.SUPPRESS
    )
    parser.add_argument("--settings", help=argparse.SUPPRESS)
    parser.add_argument("--pairs", help=argparse.SUPPRESS)
    parser.add_argument("--client", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args)
        return 0
    revisions = args.revision or list(REVISIONS)
    if args.profile:
        import anyio

        pair = next(p for p in PAIRS if p.key == args.profile)
        calls = 50 if args.smoke else 3000
        print(anyio.run(profile_pair, pair, revisions[0], calls, args.in_flight, 25))
        return 0
    settings = Settings.for_run(smoke=args.smoke, rounds=args.rounds)
    section = measure(revisions, settings, smoke=args.smoke)
    section["targets"] = targets(section)
    print(markdown(section))
    for target in section["targets"]:
        verdict = {True: "PASS", False: "MISS", None: "n/a "}[target["pass"]]
        print(f"  {verdict}  {target['target']}: {target['measured']} (limit {target['limit']})")
    if args.json:
        args.json.write_text(json.dumps(section, indent=2, ensure_ascii=False) + "\n")
    if args.smoke:
        smoke_check(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
