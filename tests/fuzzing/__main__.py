"""The long fuzz run behind ``nox -s fuzz``: ``python -m tests.fuzzing [options]``.

1. The mutation run: ``--inputs`` inputs (default 1,000,000; 86% into the codecs, 14%
   into the session states), split over ``--jobs`` processes by index, line coverage of
   ``mcpspec.runtime`` measured with coverage.py in each.
2. The coverage-guided run: atheris for ``--seconds`` seconds (0 skips it), seeded with
   the corpus (:mod:`.atheris_target`).
3. ``--results`` (default tests/fuzzing/RESULTS.md): inputs run, problems found with a
   reproducer each, the slowest input, coverage.

``--target connection`` runs instead the connection targets (a stdio server fed mutated
streams, the ASGI app fed mutated requests, the client against a hostile server:
:mod:`.connection_run`), ``--connection-inputs`` inputs into each over ``--jobs``
processes, and writes their section of the results (``--target all``: both runs).

Exits 1 when any invariant broke (for the connection targets: in a way no entry of
:data:`.known_faults.KNOWN_FAULTS` explains). Nothing of mcpspec is imported at the top: a worker
starts coverage before its first import of the package.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import hashlib
import json
import multiprocessing
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .worker import worker

if TYPE_CHECKING:
    from .engine import Report

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
#: Share of the mutation inputs fed to sessions (the issue's run: 140,000 of 1,000,000).
SESSION_SHARE = 0.14
#: The transport layer: its lines are reported apart (no input here goes through it).
TRANSPORTS = "runtime/connection/"
#: Inputs per chunk handed to a worker.
CHUNK = 10_000


@dataclass
class Coverage:
    """Line coverage of the runtime: per file, statements and missed lines."""

    files: dict[str, tuple[int, int]] = field(default_factory=dict)

    def percent(self, *, without: str | None = None) -> float:
        """Lines run of all lines, over the files not under ``without``."""
        kept = [v for k, v in self.files.items() if without is None or not k.startswith(without)]
        statements = sum(s for s, _ in kept)
        missed = sum(m for _, m in kept)
        return 100.0 * (statements - missed) / max(1, statements)


def mutation_run(
    seed: int, inputs: int, jobs: int, seconds: float | None, data_file: str
) -> tuple[Report, Coverage]:
    """The mutation run over ``jobs`` processes; the merged report and the coverage."""
    sessions = int(inputs * SESSION_SHARE)
    codec = inputs - sessions
    chunks = [("codec", i, min(codec, i + CHUNK)) for i in range(0, codec, CHUNK)]
    chunks += [("session", i, min(sessions, i + CHUNK)) for i in range(0, sessions, CHUNK)]
    work = [(seed, chunks[j::jobs], data_file, seconds) for j in range(jobs)]
    context = multiprocessing.get_context("spawn")
    with context.Pool(jobs) as pool:
        reports = pool.map(worker, work)
    from .engine import Report

    merged = Report(seed)
    for report in reports:
        merged.merge(report)
    return merged, _coverage(data_file)


def _coverage(data_file: str) -> Coverage:
    import coverage

    cov = coverage.Coverage(data_file=data_file, source_pkgs=["mcpspec.runtime"])
    cov.combine()
    cov.save()
    result = Coverage()
    for path in sorted(cov.get_data().measured_files()):
        _name, statements, _excluded, missing, _text = cov.analysis2(path)
        parts = Path(path).parts
        short = "/".join(parts[parts.index("runtime") :]) if "runtime" in parts else path
        result.files[short] = (len(statements), len(missing))
    return result


@dataclass
class AtherisRun:
    """What the coverage-guided run did."""

    seconds: int
    runs: int = 0
    last_stats: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[tuple[str, ...], int] = field(default_factory=dict)


def atheris_run(seconds: int, workdir: Path) -> AtherisRun:
    """libFuzzer through atheris for ``seconds``, seeded with the small corpus seeds."""
    from .seeds import corpus, issue_rows

    result = AtherisRun(seconds)
    if seconds <= 0:
        return result
    seeds_dir = workdir / "atheris-corpus"
    seeds_dir.mkdir(parents=True, exist_ok=True)
    seeds = [s.data for s in corpus() if len(s.data) <= 16_384]
    seeds += [r.data for r in issue_rows(batch_members=2_000, method_bytes=4_000)]
    for data in seeds:
        (seeds_dir / hashlib.sha1(data).hexdigest()).write_bytes(data)
    findings = workdir / "atheris-findings.jsonl"
    command = [
        sys.executable,
        "-m",
        "tests.fuzzing.atheris_target",
        str(findings),
        str(seeds_dir),
        f"-max_total_time={seconds}",
        "-max_len=16384",
        "-timeout=30",
        "-rss_limit_mb=4096",
        "-print_final_stats=1",
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    log = done.stderr
    matched = re.findall(r"Done (\d+) runs", log)
    stats = [line for line in log.splitlines() if "cov:" in line]
    result.last_stats = stats[-1].strip() if stats else ""
    counts_file = Path(str(findings) + ".counts")
    if counts_file.exists():
        snapshot = json.loads(counts_file.read_text())
        result.counts = {tuple(k[:-1]): k[-1] for k in snapshot["counts"]}
        result.runs = snapshot["runs"]
    if matched:
        result.runs = int(matched[-1])
    if findings.exists():
        for line in findings.read_text().splitlines():
            record = json.loads(line)
            if record["count"] == 1:
                result.findings.append(record)
    if done.returncode not in (0,) and not matched:
        result.last_stats = f"atheris exited {done.returncode}: {log[-2000:]}"
    return result


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def _short_bytes(data: bytes, most: int = 200) -> str:
    if len(data) <= most:
        return repr(data)
    return f"{data[: most // 2]!r} ... {data[-most // 4 :]!r}"


def results_markdown(
    report: Report, cov: Coverage, fuzz: AtherisRun, seconds: float, args: argparse.Namespace
) -> str:
    """RESULTS.md: what ran, what broke, the slowest input, the coverage."""
    from .engine import reproducer

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Fuzz results",
        "",
        f"Written by `nox -s fuzz` (`python -m tests.fuzzing`) on {now}, commit {_commit()}, "
        f"CPython {platform.python_version()}, {args.jobs} processes, seed {args.seed}.",
        "",
        "## Mutation run",
        "",
        "| | |",
        "|---|---|",
        f"| inputs run | {report.inputs:,} ({report.codec_inputs:,} into `codec.decode` of "
        f"the five revisions, {report.session_inputs:,} into `receive` of 14 session states) |",
        f"| wall time | {seconds:.0f} s |",
        f"| distinct problems | {len(report.findings)} |",
        f"| inputs that broke an invariant | {report.escapes:,} |",
    ]
    slow = report.slowest
    if slow.input is not None:
        lines.append(
            f"| slowest input (under coverage tracing) | {slow.seconds * 1000:.1f} ms, "
            f"{len(slow.input.data):,} bytes, "
            f"into {slow.target}: {slow.input.describe()} |"
        )
    lines += [
        f"| line coverage of mcpspec/runtime | {cov.percent():.1f}% of all lines; "
        f"{cov.percent(without=TRANSPORTS):.1f}% without `runtime/connection/` (the "
        "transports, which wire input reaches through the sessions measured here) |",
        "",
    ]
    if report.findings:
        lines += ["### Problems", "", "```"]
        lines += [reproducer(f, report.seed) for f in report.findings.values()]
        lines += ["```", ""]
    lines += ["### Coverage by file", "", "| file | statements | missed | covered |"]
    lines.append("|---|---|---|---|")
    for name, (statements, missed) in sorted(cov.files.items()):
        share = 100.0 * (statements - missed) / max(1, statements)
        lines.append(f"| {name} | {statements} | {missed} | {share:.0f}% |")
    lines += [
        "",
        "## Coverage-guided run (atheris)",
        "",
        f"{fuzz.seconds} s of libFuzzer over `codec.decode` and `ServerSession.receive` "
        f"(mcpspec.runtime instrumented): {fuzz.runs:,} inputs; last stats: "
        f"`{fuzz.last_stats or 'not run'}`; distinct problems: {len(fuzz.counts)}.",
        "",
    ]
    for record in fuzz.findings:
        data = base64.b64decode(record["input"])
        count = fuzz.counts.get(tuple(record["key"]), record["count"])
        lines.append(
            f"- {record['kind']}: {record['exception']} at {record['where']} ({count}x), "
            f"{record['target']}, input ({record['size']} bytes) {_short_bytes(data)}"
        )
    return "\n".join(lines).rstrip() + "\n"


#: The heading of the connection run's section of RESULTS.md (kept when the codec run
#: rewrites the file, and the other way round).
CONNECTION_HEADING = "## Connection targets"


#: Share of ``--connection-inputs`` a connection target runs: the client's inputs wait
#: out timeouts (a fifth of a second each), so it runs a fifth as many.
CONNECTION_SHARE = {"client": 0.2}


def _split_results(text: str) -> tuple[str, str]:
    """RESULTS.md as (codec part, connection section)."""
    at = text.find(CONNECTION_HEADING)
    return (text, "") if at < 0 else (text[:at], text[at:])


def connection_markdown(report: Any, args: argparse.Namespace) -> str:
    """The connection run's section of RESULTS.md."""
    from .known_faults import KNOWN_FAULTS

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        CONNECTION_HEADING,
        "",
        f"Written by `nox -s fuzz` (`python -m tests.fuzzing --target connection`) on {now}, "
        f"commit {_commit()}, CPython {platform.python_version()}, {args.jobs} processes, "
        f"seed {args.seed}. Input `i` of a target is "
        "`TARGETS[target].generate(seed, i)` (`tests/fuzzing/connection_run.py`).",
        "",
        "| target | inputs | seconds (slowest process) |",
        "|---|---|---|",
    ]
    for name, count in report.inputs.items():
        lines.append(f"| {name} | {count:,} | {report.seconds[name]:.0f} |")
    lines += [
        "",
        f"Distinct failures: {len(report.findings)}, of which not a known fault: "
        f"{len(report.new)} (known faults listed: {len(KNOWN_FAULTS)}, "
        "`tests/fuzzing/known_faults.py`).",
        "",
    ]
    if report.findings:
        lines += ["```"]
        lines += [f.reproducer()[:1200] for f in report.findings.values()]
        lines += ["```", ""]
    return "\n".join(lines)


def connection_main(args: argparse.Namespace) -> int:
    """The connection targets' run: ``--connection-inputs`` inputs into each."""
    from .connection_run import TARGETS, ConnectionReport, run_chunk

    report = ConnectionReport(args.seed)
    context = multiprocessing.get_context("spawn")
    with context.Pool(args.jobs) as pool:
        for name in TARGETS:
            count = max(1, int(args.connection_inputs * CONNECTION_SHARE.get(name, 1.0)))
            share = -(-count // args.jobs)
            work = [
                (args.seed, name, start, min(share, count - start), args.connection_seconds)
                for start in range(0, count, share)
            ]
            for part in pool.map(run_chunk, work):
                report.merge(part)
            print(f"{name}: {report.inputs[name]} inputs in {report.seconds[name]:.0f} s")
    old = args.results.read_text(encoding="utf-8") if args.results.exists() else ""
    codec_part, _ = _split_results(old)
    section = connection_markdown(report, args)
    args.results.write_text(codec_part.rstrip() + "\n\n" + section, encoding="utf-8")
    print(report.summary())
    return 1 if report.new else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzzing", description=__doc__)
    parser.add_argument("--inputs", type=int, default=1_000_000, help="mutation inputs")
    parser.add_argument("--seconds", type=int, default=240, help="atheris run time (0: skip)")
    parser.add_argument("--mutation-seconds", type=float, default=None, help="cap per process")
    parser.add_argument("--jobs", type=int, default=2, help="processes of the mutation run")
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--results", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument(
        "--target",
        choices=("codec", "connection", "all"),
        default="codec",
        help="codec: the codec and session run; connection: the stdio server, the ASGI "
        "app and the client (tests/fuzzing/connection_run.py); all: both",
    )
    parser.add_argument(
        "--connection-inputs",
        type=int,
        default=20_000,
        help="inputs per connection target (the client target: a fifth)",
    )
    parser.add_argument(
        "--connection-seconds", type=float, default=None, help="cap per connection target"
    )
    args = parser.parse_args(argv)
    if args.target == "connection":
        return connection_main(args)
    failed = 0
    if args.target == "all":
        failed = connection_main(args)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mcpspec-fuzz-") as tmp:
        data_file = os.path.join(tmp, ".coverage")
        report, cov = mutation_run(
            args.seed, args.inputs, args.jobs, args.mutation_seconds, data_file
        )
        mutation_seconds = time.perf_counter() - start
        print(report.summary().split("\n")[0], f"in {mutation_seconds:.0f} s")
        fuzz = atheris_run(args.seconds, Path(tmp))
    text = results_markdown(report, cov, fuzz, mutation_seconds, args)
    old = args.results.read_text(encoding="utf-8") if args.results.exists() else ""
    _, section = _split_results(old)
    args.results.write_text(
        text.rstrip() + ("\n\n" + section if section else "\n"), encoding="utf-8"
    )
    print(text)
    return 1 if report.findings or fuzz.counts or failed else 0


if __name__ == "__main__":
    sys.exit(main())
