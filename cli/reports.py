"""What ``mcpspec check`` and ``mcpspec validate`` share: the report options, the report
files and the exit status, and the message for a missing extra."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcpspec.check.findings import Report

__all__ = ["add_report_arguments", "missing", "write_files"]


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """``--strict-warnings``, ``--json FILE``, ``--junit FILE`` and ``--sarif FILE``."""
    parser.add_argument(
        "--strict-warnings",
        action="store_true",
        help="fail (exit 1) on warnings (broken SHOULD rules) too",
    )
    parser.add_argument("--json", metavar="FILE", help="also write every finding as JSON")
    parser.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")
    parser.add_argument(
        "--sarif", metavar="FILE", help="also write a SARIF 2.1.0 report (for code scanning)"
    )


def missing(command: str, what: str, extra: str, exc: ImportError) -> SystemExit:
    """The exit of ``mcpspec COMMAND`` when a dependency of its ``extra`` is missing."""
    return SystemExit(
        f"mcpspec {command} needs {what} ({exc.name} is missing): pip install 'mcpspec[{extra}]'"
    )


def write_files(report: Report, args: argparse.Namespace) -> int:
    """Write ``--json``, ``--junit`` and ``--sarif`` when asked; the exit status (2 when
    a file cannot be written)."""
    from mcpspec.check.report_json import write_json
    from mcpspec.check.report_junit import write_junit
    from mcpspec.check.report_sarif import write_sarif

    strict = bool(args.strict_warnings)
    writers = ((args.json, write_json), (args.junit, write_junit), (args.sarif, write_sarif))
    for path, writer in writers:
        if path is None:
            continue
        try:
            writer(report, path, strict_warnings=strict)
        except OSError as exc:
            print(f"mcpspec: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    return report.exit_status(strict_warnings=strict)
