"""The JUnit XML report of a check run (``--junit FILE``), as CI systems read it.

One ``<testsuite>`` per revision (per file, for ``validate``), one ``<testcase>`` per
check that has findings there, named by the check id. A check with a failure gets a
``<failure>`` listing every failed place; one that was only skipped gets ``<skipped>``;
a check that passed with warnings passes, its warnings in ``<system-out>`` (with
``strict_warnings`` they are failures, as the exit status says). The server's stderr goes
in the ``<system-err>`` of the whole run.

Every text may come from the server under check: characters XML 1.0 cannot hold are
written escaped (``\\x1b``), and the rest is escaped by the XML writer.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Final

from .catalog import CHECKS
from .findings import Finding, Outcome, Report, RevisionReport

__all__ = ["dumps", "to_xml", "write_junit"]

#: Catalog order, for the testcases.
_ORDER: Final = {check: index for index, check in enumerate(CHECKS)}
_NOT_XML: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", value)


def _line(finding: Finding) -> str:
    where = f"{finding.where}: " if finding.where else ""
    return _text(f"{finding.outcome.value}: {where}{finding.why}")


def _suite_name(revision: RevisionReport) -> str:
    return _text(f"{revision.revision} {revision.source}".strip())


def _testcase(
    suite: ET.Element, name: str, check: str, findings: list[Finding], strict_warnings: bool
) -> str:
    """Add the testcase of ``check``; its outcome ("failed", "skipped" or "passed")."""
    case = ET.SubElement(
        suite,
        "testcase",
        {"classname": name, "name": check, "time": "0"},
    )
    failing = {Outcome.FAILED, Outcome.WARNING} if strict_warnings else {Outcome.FAILED}
    failed = [f for f in findings if f.outcome in failing]
    warnings = [f for f in findings if f.outcome is Outcome.WARNING and f not in failed]
    if failed:
        failure = ET.SubElement(
            case,
            "failure",
            {
                "message": _text(failed[0].why or failed[0].where or check)[:500],
                "type": CHECKS[check].level.value,
            },
        )
        failure.text = "\n".join(_line(f) for f in failed)
        outcome = "failed"
    elif all(f.outcome is Outcome.SKIPPED for f in findings):
        ET.SubElement(case, "skipped", {"message": _text(findings[0].why)[:500]})
        outcome = "skipped"
    else:
        outcome = "passed"
    notes = [f for f in findings if f.outcome is Outcome.PASSED] + warnings
    if notes:
        ET.SubElement(case, "system-out").text = "\n".join(_line(f) for f in notes)
    return outcome


def to_xml(report: Report, *, strict_warnings: bool = False) -> ET.Element:
    """``report`` as a ``<testsuites>`` element."""
    root = ET.Element("testsuites", {"name": _text(f"mcpspec {report.target}")})
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for revision in report.revisions:
        name = _suite_name(revision)
        suite = ET.SubElement(root, "testsuite", {"name": name})
        by_check: dict[str, list[Finding]] = {}
        for finding in revision.findings:
            by_check.setdefault(finding.check, []).append(finding)
        counts = {"tests": len(by_check), "failures": 0, "skipped": 0}
        if revision.stopped:
            props = ET.SubElement(suite, "properties")
            ET.SubElement(props, "property", {"name": "stopped", "value": _text(revision.stopped)})
        for check, findings in sorted(by_check.items(), key=lambda item: _ORDER[item[0]]):
            outcome = _testcase(suite, name, check, findings, strict_warnings)
            if outcome == "failed":
                counts["failures"] += 1
            elif outcome == "skipped":
                counts["skipped"] += 1
        suite.attrib.update({k: str(v) for k, v in counts.items()})
        suite.attrib.update({"errors": "0", "time": "0"})
        for key, value in counts.items():
            totals[key] += value
    root.attrib.update({k: str(v) for k, v in totals.items()})
    root.attrib.update({"errors": "0", "time": f"{report.seconds:.3f}"})
    if report.stderr:
        ET.SubElement(root, "system-err").text = _text(report.stderr)
    return root


def dumps(report: Report, *, strict_warnings: bool = False) -> bytes:
    """The JUnit XML document, UTF-8 with an XML declaration."""
    root = to_xml(report, strict_warnings=strict_warnings)
    ET.indent(root)
    data: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return data + b"\n"


def write_junit(report: Report, path: str | Path, *, strict_warnings: bool = False) -> None:
    """Write the JUnit XML report to ``path``."""
    Path(path).write_bytes(dumps(report, strict_warnings=strict_warnings))
