"""What a ``tools/call`` costs the server through the tool decorator, against the
low-level ``@server.handler("tools/call")`` path, in the same run.

Run from a checkout::

    python bench/tool_path.py             # 2025-11-25 and 2026-07-28 (about a minute)
    python bench/tool_path.py --smoke     # tiny batches; asserts the harness works
    python bench/tool_path.py --profile   # and the decorator path's top entries

Both servers answer the echo call of ``http_bench.py``: ``handler`` is the benchmark's
stdio echo server (``peers/echo_mcpspec.py``: a handler reading ``arguments`` and
building the revision's ``CallToolResult``); ``decorator`` declares the same tool as
``async def echo(message: str) -> str`` with ``@server.tool()``, its arguments converted
and checked by msgspec. Each is its ASGI app called in process as an ASGI server calls
it (``app_cost.py``: no server, no sockets), so all the time measured is the server's;
a batch's cost is this process's CPU time (``time.process_time``), which the load of a
shared machine changes less than the wall clock. The rows alternate within each round;
a cell is the median over rounds of a batch's µs per request, and ``decorator ÷
handler`` the median of the ratios within a round. The target: at most 1.1x.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Final

HERE: Final = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from app_cost import Caller, _start  # noqa: E402

from mcpspec.runtime.connection import Server  # noqa: E402
from mcpspec.runtime.connection.http import http_app  # noqa: E402

#: The revisions measured: one of each era of the HTTP app.
REVISIONS: Final = ("2025-11-25", "2026-07-28")
#: The most the decorator path may cost, over the handler path.
TARGET: Final = 1.1


def decorator_server() -> Server:
    """The echo server with its tool declared by the decorator."""
    server = Server("mcpspec-echo", "1.0.0")

    @server.tool(description="Echo a message back unchanged.")
    async def echo(message: str) -> str:
        return message

    return server


def handler_server() -> Server:
    """The echo server with a ``tools/call`` handler of its own."""
    from peers.echo_mcpspec import build

    return build()


class CpuCaller(Caller):
    """A :class:`Caller` whose batches are timed in CPU time."""

    clock = staticmethod(time.process_time)


async def _callers(revision: str) -> dict[str, CpuCaller]:
    callers = {}
    for key, build in (("handler", handler_server), ("decorator", decorator_server)):
        app = http_app(build())
        await _start(app)
        caller = CpuCaller(app, revision)
        await caller.open()
        callers[key] = caller
    return callers


async def measure(
    revisions: tuple[str, ...] = REVISIONS, rounds: int = 9, calls: int = 5_000
) -> dict[str, Any]:
    """Per revision: µs of server CPU per request of each path (median over rounds)
    and the median ratio decorator ÷ handler."""
    report: dict[str, Any] = {"rounds": rounds, "calls": calls, "revisions": {}}
    for revision in revisions:
        callers = await _callers(revision)
        for caller in callers.values():
            await caller.batch(calls)  # warm-up
        samples: dict[str, list[float]] = {key: [] for key in callers}
        ratios: list[float] = []
        order = list(callers)
        for round_number in range(rounds):
            taken = {}
            for key in order[round_number % 2 :] + order[: round_number % 2]:
                taken[key] = await callers[key].batch(calls)
                samples[key].append(taken[key])
            ratios.append(taken["decorator"] / taken["handler"])
        report["revisions"][revision] = {
            "us_per_request": {key: statistics.median(v) for key, v in samples.items()},
            "decorator_over_handler": statistics.median(ratios),
        }
    return report


async def profile(revision: str, calls: int, top: int = 15) -> str:
    """The decorator path's top entries (cumulative time) over ``calls`` requests."""
    caller = (await _callers(revision))["decorator"]
    await caller.batch(calls)
    profiler = cProfile.Profile()
    profiler.enable()
    await caller.batch(calls)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The target, as ``bench/run.py``'s ``evaluate_targets`` reports them."""
    rows = report["revisions"]
    worst = max(rows, key=lambda revision: rows[revision]["decorator_over_handler"])
    return [
        {
            "target": "tools/call through @server.tool() vs @server.handler: server CPU",
            "limit": f"<= {TARGET:g}x",
            "measured": "; ".join(
                f"{revision}: {row['decorator_over_handler']:.2f}x"
                for revision, row in rows.items()
            ),
            "worst": f"{worst}: {rows[worst]['decorator_over_handler']:.2f}x",
            "pass": rows[worst]["decorator_over_handler"] <= TARGET,
        }
    ]


def markdown(report: dict[str, Any]) -> str:
    """The report as a Markdown table."""
    lines = [
        "A `tools/call` through `@server.tool()` against the same tool behind "
        '`@server.handler("tools/call")` (`bench/tool_path.py`): the ASGI apps called in '
        f"process, server CPU per request, median of {report['rounds']} rounds of "
        f"{report['calls']:,} echo requests.",
        "",
        "| revision | handler µs/req | decorator µs/req | decorator ÷ handler |",
        "|---|---:|---:|---:|",
    ]
    for revision, data in report["revisions"].items():
        paths = data["us_per_request"]
        lines.append(
            f"| {revision} | {paths['handler']:.1f} | {paths['decorator']:.1f} "
            f"| {data['decorator_over_handler']:.2f}\N{MULTIPLICATION SIGN} |"
        )
    return "\n".join(lines) + "\n"


def smoke_check(report: dict[str, Any]) -> None:
    """What ``--smoke`` asserts: both paths measured in every revision."""
    for data in report["revisions"].values():
        assert set(data["us_per_request"]) == {"handler", "decorator"}, data
        assert all(0 < value < 1e6 for value in data["us_per_request"].values()), data


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--smoke", action="store_true", help="tiny batches; check it works")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 9)")
    parser.add_argument("--profile", action="store_true", help="profile the decorator path")
    parser.add_argument("--json", type=Path, help="write the report as JSON here")
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.smoke else 9)
    calls = 50 if args.smoke else 5_000
    report = asyncio.run(measure(REVISIONS, rounds, calls))
    print(markdown(report))
    if args.profile:
        for revision in REVISIONS:
            print(f"decorator path, {revision}:")
            print(asyncio.run(profile(revision, calls)))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.smoke:
        smoke_check(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
