"""The report files and exit status shared by ``mcpspec check`` and ``mcpspec validate``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcpspec.check.findings import Report

__all__ = ["write_files"]


def write_files(report: Report, args: argparse.Namespace) -> int:
    """Write ``--json`` and ``--junit`` when asked; the exit status (2 when a file cannot
    be written)."""
    from mcpspec.check.report_json import write_json
    from mcpspec.check.report_junit import write_junit

    strict = bool(args.strict_warnings)
    for path, writer in ((args.json, write_json), (args.junit, write_junit)):
        if path is None:
            continue
        try:
            writer(report, path, strict_warnings=strict)
        except OSError as exc:
            print(f"mcpspec: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    return report.exit_status(strict_warnings=strict)
