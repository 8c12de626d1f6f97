"""Before and after a change, in one run: the checkout's mcpspec against a git revision's.

    python bench/before_after.py REV [--rounds N] [--json FILE] [--markdown FILE]
    python bench/before_after.py REV --smoke     # tiny batches; asserts the harness works
    nox -s compare -- REV                        # the same, in a fresh environment
    nox -s bench -- --baseline REV               # the whole benchmark, and this section

``REV`` is a git revision of this repository (``HEAD~3``, a commit id, a tag). Its tree
is archived into a temporary folder and its mcpspec installed there, without
dependencies (``bench/compare.py``'s ``build_baseline``). The same peer code
(``bench/peers``) then serves both, side by side in the same rounds, as extra rows named
``mcpspec@REV``:

* HTTP (``http_bench.measure_against``): the mcpspec app of each in a uvicorn server of
  its own, with the SDK's ``MCPServer`` and the bare app, in 2025-11-25 and 2026-07-28,
  with 1 and 16 clients: requests per second and server CPU per request, the speed
  figure of both, and the memory per open session of each;
* stdio (``stdio.measure_against``): ``mcpspec → mcpspec`` of each (the client in a
  worker process of its own, the server launched by it), with the floor;
* ``session.receive`` (and ``codec.decode``): ``bench/compare.py``'s alternating runs
  over the corpus.

The summary gives new ÷ old as a speed (1.00: unchanged; below 1: slower): the median of
the per-round ratios of requests (calls) per second for HTTP and stdio, and the median
over the corpus messages of compare.py's floor-relative ratio, inverted, for
``session.receive``; beside each, the budget of issue 35 (HTTP req/s may drop by up to
15%, stdio round trips and ``session.receive`` by up to 10%).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import compare
import http_bench
import stdio

#: The multiplication sign, for ratios.
X: Final = "\N{MULTIPLICATION SIGN}"
#: The lowest new ÷ old speed each measure may reach (issue 35's budget).
BUDGET: Final = {"HTTP app req/s": 0.85, "stdio round trips": 0.90, "session.receive": 0.90}


def measure(
    baseline: str,
    *,
    smoke: bool = False,
    rounds: int | None = None,
    revisions: tuple[str, ...] = http_bench.REVISIONS,
) -> dict[str, Any]:
    """Every before-and-after measurement against ``baseline`` (a git revision), and
    their summary."""
    started = time.perf_counter()
    http_settings = http_bench.Settings.for_run(smoke=smoke, rounds=rounds)
    stdio_settings = stdio.Settings.for_run(smoke=smoke, rounds=rounds)
    runs, compare_rounds = (1, 2) if smoke else (3, rounds or 7)
    with tempfile.TemporaryDirectory() as directory:
        site = compare.build_baseline(baseline, Path(directory))
        http = http_bench.measure_against(site, baseline, revisions, http_settings)
        stdio_section = stdio.measure_against(site, baseline, revisions, stdio_settings)
        before, after = [], []
        for _ in range(runs):
            before.append(compare.run_worker(compare_rounds, site))
            after.append(compare.run_worker(compare_rounds, None))
    commit = subprocess.run(
        ["git", "-C", str(compare.ROOT), "rev-parse", "--short", baseline],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    report: dict[str, Any] = {
        "baseline": baseline,
        "commit": commit,
        "smoke": smoke,
        "http": http,
        "stdio": stdio_section,
        "hot_paths": {
            "runs": runs,
            "rounds": compare_rounds,
            "rows": compare.compare(before, after),
        },
    }
    report["summary"] = summary(report)
    report["elapsed_s"] = time.perf_counter() - started
    return report


def summary(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per measure and revision: new ÷ old with 1 and 16 clients (in flight),
    and whether it is within the budget."""
    old = f"{http_bench.MCPSPEC}@{report['baseline']}"
    rows: list[dict[str, Any]] = []

    def add(measure: str, revision: str, ratios: dict[str, float], note: str = "") -> None:
        limit = BUDGET.get(measure)
        # Over the corpus the budget bounds the median; its lowest message is shown only.
        known = [v for k, v in ratios.items() if k != "lowest" and not math.isnan(v)]
        within = None if limit is None or not known else min(known) >= limit
        rows.append(
            {"measure": measure, "revision": revision, "new_over_old": ratios,
             "limit": limit, "within": within, "note": note}
        )  # fmt: skip

    for revision, data in report["http"]["revisions"].items():
        new, before = data["rows"].get(http_bench.MCPSPEC), data["rows"].get(old)
        if new is None or before is None:
            continue
        runs = new["rounds"]
        add(
            "HTTP app req/s",
            revision,
            {n: stdio.median_ratio(runs[n]["rate"], before["rounds"][n]["rate"]) for n in runs},
        )
        add(
            "HTTP server CPU per request",
            revision,
            {
                n: stdio.median_ratio(before["rounds"][n]["server_cpu"], runs[n]["server_cpu"])
                for n in runs
            },
            "old CPU ÷ new: below 1, the new app takes more",
        )
    key = f"{stdio.MCPSPEC}@{report['baseline']}"
    for revision, data in report["stdio"]["revisions"].items():
        new, before = data["pairs"][stdio.MCPSPEC_PAIR.key], data["pairs"][key]
        runs = new["rounds"]
        add(
            "stdio round trips",
            revision,
            {
                n: stdio.median_ratio(before["rounds"][n]["seconds"], runs[n]["seconds"])
                for n in runs
            },
        )
    hot = report["hot_paths"]["rows"]
    for op in ("session.receive", "codec.decode"):
        speeds = [1 / row[op]["after_over_before"] for row in hot]
        add(
            op,
            "all",
            {"median": statistics.median(speeds), "lowest": min(speeds)},
            f"over {len(speeds)} corpus messages (median, lowest)",
        )
    return rows


def _cells(ratios: dict[str, float]) -> str:
    return " / ".join("n/a" if math.isnan(v) else f"{v:.2f}" for v in ratios.values())


def markdown(report: dict[str, Any], level: int = 1) -> str:
    """The summary table, then the HTTP rows, the speed figure of both, the stdio rows
    and compare.py's table; the title a heading of ``level``, the parts one below."""
    baseline = report["baseline"]
    title, part = "#" * level, "#" * (level + 1)
    lines = [
        f"{title} Before and after (baseline `{baseline}`, {report['commit']} → the checkout)"
        + (" (SMOKE: numbers are not meaningful)" if report["smoke"] else ""),
        "",
        "Written by `python bench/before_after.py`; see its docstring for the method. "
        "`new ÷ old`: the checkout over the baseline, as a speed (below 1: slower), the "
        "median of the per-round ratios; HTTP and stdio with 1 / 16 clients (calls in "
        "flight), `session.receive` and `codec.decode` median / lowest over the corpus "
        "messages. `budget`: the lowest new ÷ old issue 35 allows.",
        "",
        "| measure | revision | new ÷ old | budget | within |",
        "|---|---|---|---|---|",
    ]
    for row in report["summary"]:
        limit = "-" if row["limit"] is None else f"≥ {row['limit']:.2f}"
        within = {True: "yes", False: "NO", None: "-"}[row["within"]]
        note = f" ({row['note']})" if row["note"] else ""
        lines.append(
            f"| {row['measure']}{note} | {row['revision']} | {_cells(row['new_over_old'])} | "
            f"{limit} | {within} |"
        )
    http = report["http"]
    lines += [
        "",
        f"{part} HTTP",
        "",
        *http_bench._header(
            "server", "client", "clients", bare=True, base=http_bench.SDK_MCPSERVER
        ),
    ]
    for revision, data in http["revisions"].items():
        lines += http_bench._table(data, revision, bare=True)
    lines += ["", *http_bench.figure_lines(http["figure"])]
    lines += ["", f"{part} stdio", "", stdio.markdown({**report["stdio"], "memory": {}})]
    hot = report["hot_paths"]
    lines += [compare.markdown(hot["rows"], baseline, hot["runs"]).replace("# ", f"{part} ", 1)]
    return "\n".join(lines)


def smoke_check(report: dict[str, Any]) -> None:
    """What ``--smoke`` asserts: every side ran, every ratio is there and sane."""
    measures = {(row["measure"], row["revision"]) for row in report["summary"]}
    revisions = set(report["http"]["revisions"])
    expected = {("session.receive", "all"), ("codec.decode", "all")}
    for measure_ in ("HTTP app req/s", "HTTP server CPU per request", "stdio round trips"):
        expected |= {(measure_, r) for r in revisions}
    assert revisions and measures == expected, sorted(measures)
    for row in report["summary"]:
        values = [v for v in row["new_over_old"].values() if not math.isnan(v)]
        assert all(0 < v < 1000 for v in values), row
    old = f"{http_bench.MCPSPEC}@{report['baseline']}"
    for entries in report["http"]["figure"]["revisions"].values():
        assert {http_bench.MCPSPEC, old} <= set(entries), entries
    markdown(report)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("baseline", help="git revision to compare against (e.g. HEAD~3)")
    parser.add_argument("--smoke", action="store_true", help="tiny batches; check it works")
    parser.add_argument("--rounds", type=int, default=None, help="rounds of each part")
    parser.add_argument("-r", "--revision", action="append", choices=http_bench.REVISIONS)
    parser.add_argument("--json", type=Path, help="write the report as JSON here")
    parser.add_argument("--markdown", type=Path, help="write the tables here")
    args = parser.parse_args(argv)
    revisions = tuple(args.revision or http_bench.REVISIONS)
    report = measure(args.baseline, smoke=args.smoke, rounds=args.rounds, revisions=revisions)
    text = markdown(report)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    if args.markdown:
        args.markdown.write_text(text)
    if args.smoke:
        smoke_check(report)
    print(f"before/after against {args.baseline}: {report['elapsed_s']:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
