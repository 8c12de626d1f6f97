"""The JSON report of a check run (``--json FILE``): every finding, in a stable shape.

Shape (version 2)::

    {
      "format": "mcpspec-report", "version": 1,
      "target": "python server.py",        # the command line, URL or files checked
      "seconds": 1.23,
      "exit_status": 1,                    # what the command exits with
      "counts": {"passed": 40, "failed": 1, "warning": 2, "skipped": 3, "note": 1},
      "revisions": [
        {
          "revision": "2025-06-18",         # or "negotiation"
          "source": "",                     # validate: the file; check: ""
          "accepted": true,                 # null: negotiation never finished
          "stopped": "",                    # why the revision was not checked further
          "findings": [
            {"check": "schema.message", "category": "schema", "level": "MUST",
             "outcome": "failed", "where": "stdout line 7: $.result.tools[0].name",
             "why": "Expected `str`, got `int`",
             "probe": "surface",             # the probe that provoked it, if one did
             "subject": "tool \"add\"",      # the tool, resource or prompt it is about
             "count": 1}                     # times seen for this cause (where: the first)
          ]
        }
      ],
      "stderr": ""                         # what the server wrote on stderr (stdio)
    }

Keys are only ever added in a new version (2 added ``probe``, ``subject``, ``count`` and
the ``note`` outcome); ``outcome`` is one of ``passed``, ``failed``, ``warning``,
``skipped``, ``note`` (what a probe provoked and the specification allows); ``level`` is
``MUST`` or ``SHOULD``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from .catalog import CHECKS
from .findings import Finding, Outcome, Report, RevisionReport

__all__ = ["FORMAT", "VERSION", "as_json", "dumps", "write_json"]

FORMAT: Final = "mcpspec-report"
VERSION: Final = 2


def _finding(finding: Finding) -> dict[str, Any]:
    info = CHECKS[finding.check]
    return {
        "check": finding.check,
        "category": info.category.value,
        "level": info.level.value,
        "outcome": finding.outcome.value,
        "where": finding.where,
        "why": finding.why,
        "probe": finding.probe,
        "subject": finding.subject,
        "count": finding.count,
    }


def _revision(revision: RevisionReport) -> dict[str, Any]:
    return {
        "revision": revision.revision,
        "source": revision.source,
        "accepted": revision.accepted,
        "stopped": revision.stopped,
        "findings": [_finding(f) for f in revision.findings],
    }


def as_json(report: Report, *, strict_warnings: bool = False) -> dict[str, Any]:
    """``report`` as plain JSON values, in the shape of the module docstring."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "target": report.target,
        "seconds": round(report.seconds, 3),
        "exit_status": report.exit_status(strict_warnings=strict_warnings),
        "counts": {outcome.value: report.count(outcome) for outcome in Outcome},
        "revisions": [_revision(r) for r in report.revisions],
        "stderr": report.stderr,
    }


def dumps(report: Report, *, strict_warnings: bool = False) -> bytes:
    """The JSON document, UTF-8 (a lone surrogate from a peer stays a ``\\udXXX`` escape)."""
    text = json.dumps(
        as_json(report, strict_warnings=strict_warnings), ensure_ascii=False, indent=2
    )
    return (text + "\n").encode("utf-8", "backslashreplace")


def write_json(report: Report, path: str | Path, *, strict_warnings: bool = False) -> None:
    """Write the JSON report to ``path``."""
    Path(path).write_bytes(dumps(report, strict_warnings=strict_warnings))
