"""Hot paths before and after a change, measured side by side in one run.

    python bench/compare.py BASELINE [--rounds N] [--markdown FILE]

``BASELINE`` is a git revision of this repository (``HEAD~3``, a commit id, a tag). Its
tree is built into a folder of its own, and the same measuring process, run alternately
with the baseline's mcpspec and with the checkout's, times ``codec.decode`` and
``session.receive`` of every corpus message next to ``orjson.loads`` (the floor). A time
is the median per-call time of a batch, taken over the runs; the comparison is the
median over runs of (after ÷ floor) ÷ (before ÷ floor), so the load of a shared machine
cancels out. 1.00 means no change; above 1, the change made the path slower.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OPS = ("orjson.loads", "codec.decode", "session.receive")
PIP_INSTALL = (sys.executable, "-m", "pip", "install", "--quiet", "--no-deps")


def measure(rounds: int) -> dict[str, dict[str, float]]:
    """Per message (``revision message``), the median seconds per call of each of
    :data:`OPS`, with whichever mcpspec this process imports."""
    sys.path.insert(0, str(HERE))
    import corpus
    import orjson
    import run

    import mcpspec

    settings = run.Settings(
        rounds=rounds, batch_s=0.004, max_loops=200_000, import_runs=1, echo_calls=1
    )
    out: dict[str, dict[str, float]] = {}
    for revision in corpus.REVISIONS:
        codec = mcpspec.codec(revision)
        for message in corpus.build(revision):
            receive, cap = run.session_receiver(revision, codec, message, settings)
            data = message.data
            ops = {
                "orjson.loads": lambda data=data: orjson.loads(data),
                "codec.decode": run.codec_decoder(codec, message),
                "session.receive": receive,
            }
            timing = run.time_side_by_side(
                ops,
                rounds=settings.rounds,
                batch_s=settings.batch_s,
                max_loops=settings.max_loops,
                caps={"session.receive": cap},
            )
            out[f"{revision} {message.name}"] = {
                op: statistics.median(times) for op, times in timing.rounds.items()
            }
    return out


def build_baseline(revision: str, into: Path) -> Path:
    """The baseline's mcpspec installed (without dependencies) into ``into``."""
    source = into / "source"
    source.mkdir()
    archive = into / "baseline.tar"
    subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), revision],
        check=True,
    )
    with tarfile.open(archive) as tar:
        tar.extractall(source, filter="data")
    target = into / "site"
    subprocess.run(
        [*PIP_INSTALL, "--target", str(target), str(source)],
        check=True,
    )
    return target


def run_worker(rounds: int, site: Path | None) -> dict[str, dict[str, float]]:
    """:func:`measure` in a fresh process, importing mcpspec from ``site`` if given."""
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, __file__, "--worker", "--rounds", str(rounds)],
        check=True,
        capture_output=True,
        env=env,
        cwd=tempfile.gettempdir(),  # not the checkout, whose folders are not the package
    )
    result = json.loads(done.stdout)
    # The baseline must really be the one measured (not the installed package).
    assert (site is not None) == result["mcpspec"].startswith(str(site)), result["mcpspec"]
    rows: dict[str, dict[str, float]] = result["rows"]
    return rows


def compare(
    before: list[dict[str, dict[str, float]]], after: list[dict[str, dict[str, float]]]
) -> list[dict[str, Any]]:
    """One row per message: the medians, and the after ÷ before ratio of each path."""
    rows = []
    for name in before[0]:
        row: dict[str, Any] = {"message": name}
        for op in OPS[1:]:
            ratios = [
                (a[name][op] / a[name]["orjson.loads"]) / (b[name][op] / b[name]["orjson.loads"])
                for b, a in zip(before, after, strict=True)
            ]
            row[op] = {
                "before_us": statistics.median(b[name][op] for b in before) * 1e6,
                "after_us": statistics.median(a[name][op] for a in after) * 1e6,
                "after_over_before": statistics.median(ratios),
            }
        rows.append(row)
    return rows


def markdown(rows: list[dict[str, Any]], baseline: str, runs: int) -> str:
    """The comparison as a Markdown table, with the medians over all messages."""
    lines = [
        f"# Hot paths before and after (baseline `{baseline}`, {runs} alternating runs each)",
        "",
        "Written by `python bench/compare.py`; see its docstring for the method. Cells: "
        "median µs per call before → after, and the after ÷ before ratio of the "
        "floor-relative times (1.00: unchanged; above 1: slower).",
        "",
        "| message | codec.decode µs | ratio | session.receive µs | ratio |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        cells = []
        for op in OPS[1:]:
            entry = row[op]
            cells.append(f"{entry['before_us']:.2f} → {entry['after_us']:.2f}")
            cells.append(f"{entry['after_over_before']:.2f}")
        lines.append(f"| {row['message']} | " + " | ".join(cells) + " |")
    for op in OPS[1:]:
        ratios = [row[op]["after_over_before"] for row in rows]
        lines.append("")
        lines.append(
            f"{op}: median ratio {statistics.median(ratios):.3f} over {len(ratios)} messages "
            f"(lowest {min(ratios):.2f}, highest {max(ratios):.2f})."
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("baseline", nargs="?", help="git revision to compare against")
    parser.add_argument("--rounds", type=int, default=7, help="rounds per run (default 7)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each side (default 3)")
    parser.add_argument("--markdown", type=Path, help="write the table here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        import mcpspec

        print(json.dumps({"mcpspec": mcpspec.__file__, "rows": measure(args.rounds)}))
        return 0
    if not args.baseline:
        parser.error("name the baseline revision")
    with tempfile.TemporaryDirectory() as directory:
        site = build_baseline(args.baseline, Path(directory))
        before, after = [], []
        for _ in range(args.runs):
            before.append(run_worker(args.rounds, site))
            after.append(run_worker(args.rounds, None))
    rows = compare(before, after)
    text = markdown(rows, args.baseline, args.runs)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
