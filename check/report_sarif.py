"""The SARIF 2.1.0 report of a check run (``--sarif FILE``), for a repository's code
scanning.

One run of the tool ``mcpspec``, whose rules are the checks of
:data:`~.catalog.CHECKS` (a MUST rule's results are ``error``, a SHOULD rule's
``warning``). Each problem (a rule broken for one cause, in one revision) is one result:
its message says why, where in the traffic, the revision, the probe that caused it and
how often it was seen; its location is the checked server (the command line or URL, as
an artifact URI) with the place in the traffic as a logical location. A partial
fingerprint (check, cause) lets code scanning follow a finding from run to run.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from .catalog import CHECKS, Level
from .findings import Finding, Report

__all__ = ["SCHEMA", "as_sarif", "dumps", "write_sarif"]

SCHEMA: Final = "https://json.schemastore.org/sarif-2.1.0.json"


def _rule(check: str) -> dict[str, Any]:
    info = CHECKS[check]
    level = "error" if info.level is Level.MUST else "warning"
    return {
        "id": check,
        "name": check.replace(".", "/"),
        "shortDescription": {"text": info.summary},
        "defaultConfiguration": {"level": level},
        "properties": {"category": info.category.value, "level": info.level.value},
    }


def _message(finding: Finding, revision: str) -> str:
    parts = [finding.why]
    if finding.where:
        parts.append(f"where: {finding.where}")
    parts.append(f"revision: {revision}")
    if finding.subject:
        parts.append(f"about: {finding.subject}")
    if finding.probe:
        parts.append(f"probe: {finding.probe}")
    if finding.count > 1:
        parts.append(f"seen {finding.count} times")
    return " | ".join(parts)


def _result(finding: Finding, revision: str, artifact: str, index: dict[str, int]) -> Any:
    level = "error" if CHECKS[finding.check].level is Level.MUST else "warning"
    cause = hashlib.sha256(f"{finding.check}\0{finding.why}".encode("utf-8", "replace"))
    location: dict[str, Any] = {
        "physicalLocation": {"artifactLocation": {"uri": artifact}},
    }
    if finding.where:
        location["logicalLocations"] = [{"name": finding.where, "kind": "message"}]
    return {
        "ruleId": finding.check,
        "ruleIndex": index[finding.check],
        "level": level,
        "message": {"text": _message(finding, revision)},
        "locations": [location],
        "partialFingerprints": {"mcpspecCause/v1": cause.hexdigest()[:32]},
        "properties": {
            "revision": revision,
            "count": finding.count,
            "probe": finding.probe,
            "subject": finding.subject,
        },
    }


def as_sarif(report: Report, *, strict_warnings: bool = False) -> dict[str, Any]:
    """``report`` as a SARIF 2.1.0 log (plain JSON values)."""
    index = {check: n for n, check in enumerate(CHECKS)}
    artifact = quote(report.target, safe="/:@")
    results = [
        _result(finding, revision.revision, artifact, index)
        for revision in report.revisions
        for finding in revision.findings
        if finding.problem
    ]
    status = report.exit_status(strict_warnings=strict_warnings)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "mcpspec",
                        "rules": [_rule(check) for check in CHECKS],
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": True,
                        "exitCode": status,
                        "commandLine": f"mcpspec {report.command} {report.target}",
                    }
                ],
                "artifacts": [
                    {"location": {"uri": artifact}, "description": {"text": report.target}}
                ],
                "results": results,
            }
        ],
    }


def dumps(report: Report, *, strict_warnings: bool = False) -> bytes:
    """The SARIF document, UTF-8 (a lone surrogate from a peer stays an escape)."""
    text = json.dumps(
        as_sarif(report, strict_warnings=strict_warnings), ensure_ascii=False, indent=2
    )
    return (text + "\n").encode("utf-8", "backslashreplace")


def write_sarif(report: Report, path: str | Path, *, strict_warnings: bool = False) -> None:
    """Write the SARIF report to ``path``."""
    Path(path).write_bytes(dumps(report, strict_warnings=strict_warnings))
