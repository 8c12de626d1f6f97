"""The checker's own time: ``mcpspec check`` on server-everything over stdio, every revision.

Run from a checkout, with Node and ``@modelcontextprotocol/server-everything`` where the
``interop`` and ``bench`` nox sessions put them (``MCPSPEC_NODE``,
``MCPSPEC_SERVER_EVERYTHING``)::

    python bench/check_bench.py               # 3 rounds of each configuration
    python bench/check_bench.py --profile     # cProfile of one run: where the checker's time goes

(``bench/run.py`` runs it too, as its checker section.)

What is measured. The checker runs in this process and the server in a subprocess of its
own, so this process's CPU time (``time.process_time``: every thread of this process,
no child) is the checker's own time; the wall time adds the server's work and every wait
(server-everything's long-running tool alone takes 10 s of wall time per revision when
tools are called). Two configurations: the default check (no tool is called) and
``--call-tools``. Target: under 10 s of the checker's own time for all revisions.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

#: The target: the checker's own CPU time for every revision of server-everything.
TARGET_S = 10.0
CONFIGURATIONS = {"default": False, "--call-tools": True}


@dataclass
class Settings:
    rounds: int = 3
    #: Revisions checked (all five unless smoke).
    revisions: tuple[str, ...] = ()
    call_tools: tuple[bool, ...] = (False, True)

    @classmethod
    def for_run(cls, *, smoke: bool, rounds: int | None = None) -> Settings:
        if smoke:
            return cls(rounds=1, revisions=("2025-11-25",), call_tools=(False,))
        return cls(rounds=rounds or 3)


def _everything() -> list[str] | None:
    node = os.environ.get("MCPSPEC_NODE")
    package = os.environ.get("MCPSPEC_SERVER_EVERYTHING")
    if not node or not package:
        return None
    return [node, str(Path(package) / "dist" / "index.js"), "stdio"]


def _one_run(argv: list[str], revisions: tuple[str, ...], call_tools: bool) -> dict[str, Any]:
    import anyio

    from mcpspec.check.run import Options, check_server
    from mcpspec.check.stdio import StdioTarget

    options = Options(call_tools=call_tools, **({"revisions": revisions} if revisions else {}))
    cpu, wall = time.process_time(), time.perf_counter()
    report = anyio.run(check_server, StdioTarget(argv[0], argv[1:]), options)
    return {
        "cpu_s": time.process_time() - cpu,
        "wall_s": time.perf_counter() - wall,
        "findings": sum(1 for _ in report.findings()),
        "revisions": [r.revision for r in report.revisions if r.accepted],
    }


def measure(settings: Settings, *, smoke: bool = False) -> dict[str, Any]:
    """The checker section of the report."""
    section: dict[str, Any] = {"settings": asdict(settings), "rows": {}}
    argv = _everything()
    if argv is None:
        section["skipped"] = "MCPSPEC_NODE and MCPSPEC_SERVER_EVERYTHING are not set"
        return section
    for name, call_tools in CONFIGURATIONS.items():
        if call_tools not in settings.call_tools:
            continue
        runs = [_one_run(argv, settings.revisions, call_tools) for _ in range(settings.rounds)]
        section["rows"][name] = {
            "cpu_s": statistics.median(r["cpu_s"] for r in runs),
            "wall_s": statistics.median(r["wall_s"] for r in runs),
            "findings": runs[-1]["findings"],
            "revisions": runs[-1]["revisions"],
        }
    return section


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    """The checker's target, as ``bench/run.py``'s ``evaluate_targets`` reports them."""
    name = "mcpspec check on server-everything, every revision: the checker's own CPU time"
    limit = f"< {TARGET_S:g} s"
    rows = section.get("rows", {})
    if not rows:
        measured = section.get("skipped", "not measured")
        return [{"target": name, "limit": limit, "measured": measured, "worst": "-", "pass": None}]
    slowest = max(rows, key=lambda key: rows[key]["cpu_s"])
    return [
        {
            "target": name,
            "limit": limit,
            "measured": "; ".join(f"{key}: {row['cpu_s']:.2f} s" for key, row in rows.items()),
            "worst": f"{slowest}: {rows[slowest]['cpu_s']:.2f} s",
            "pass": rows[slowest]["cpu_s"] < TARGET_S,
        }
    ]


def markdown(section: dict[str, Any]) -> str:
    """The checker section as markdown."""
    if "skipped" in section:
        return f"Not measured: {section['skipped']}."
    lines = [
        f"`mcpspec check` on server-everything over stdio, median of "
        f"{section['settings']['rounds']} runs. Checker CPU: this process's CPU time "
        "(the checker's own; the server runs in a subprocess). Wall: with the server's "
        "work and every wait.",
        "",
        "| configuration | revisions spoken | checker CPU (s) | wall (s) | findings |",
        "|---|---|---:|---:|---:|",
    ]
    for name, row in section["rows"].items():
        lines.append(
            f"| {name} | {', '.join(row['revisions'])} | {row['cpu_s']:.2f} | "
            f"{row['wall_s']:.1f} | {row['findings']} |"
        )
    return "\n".join(lines)


def smoke_check(section: dict[str, Any]) -> None:
    """What ``--smoke`` asserts: the checker ran and found the server's revision."""
    assert section["rows"], section.get("skipped", "nothing measured")
    for row in section["rows"].values():
        assert row["cpu_s"] > 0 and row["findings"] > 0 and row["revisions"], row


def profile(call_tools: bool) -> str:
    """cProfile of one whole run: the top functions by cumulative time."""
    argv = _everything()
    if argv is None:
        return "MCPSPEC_NODE and MCPSPEC_SERVER_EVERYTHING are not set"
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    _one_run(argv, (), call_tools)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(30)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--profile", action="store_true", help="cProfile one --call-tools run")
    args = parser.parse_args(argv)
    if args.profile:
        print(profile(call_tools=True))
        return 0
    section = measure(Settings.for_run(smoke=args.smoke, rounds=args.rounds), smoke=args.smoke)
    print(markdown(section))
    for target in targets(section):
        print(f"{target['target']} ({target['limit']}): {target['measured']} -> {target['pass']}")
    if args.smoke:
        smoke_check(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
