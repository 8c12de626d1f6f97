"""Check recorded MCP traffic offline, as the sessions of its revision judge it.

  mcpspec validate session.jsonl                   # a transcript (JSON Lines)
  mcpspec validate stdio.log --json out.json       # a plain log, one message per line

A transcript is JSON Lines: an optional first line {"header": {"revision": "2025-06-18"}},
then one {"from": "client" | "server", "message": {...}} per message, in wire order. A
plain log has one JSON-RPC message per line, as a stdio session writes them; who sent
each message is inferred. The revision is the header's, else the one the initialize
exchange settled.

Each finding names the line, the JSON path, the rule and the side that broke it. Exit
status: 0 when nothing failed (warnings fail only with --strict-warnings), 1 when
something did, 2 for a usage error or a file that is neither format.
"""

from __future__ import annotations

import argparse
import sys

from .reports import add_report_arguments, write_files

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="transcripts or plain logs")
    add_report_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from mcpspec.check.report_text import write
    from mcpspec.check.validate import TranscriptError, validate_files

    try:
        report = validate_files(args.files)
    except TranscriptError as exc:
        print(f"mcpspec validate: {exc}", file=sys.stderr)
        return 2
    write(report)
    return write_files(report, args)
