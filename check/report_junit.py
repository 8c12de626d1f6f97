"""The JUnit XML report of a check run (``--junit FILE``), as CI systems read it.

One ``<testsuite>`` per revision (per file, for ``validate``) with the time it took. In
it, one ``<testcase>`` per kind of finding:

* each problem (a rule broken for one cause, however many times) is a case of its own,
  named ``check: why``: a MUST rule broken is a ``<failure>``; a SHOULD rule broken
  passes, its warning in a ``warning`` property and in ``<system-out>`` (with
  ``strict_warnings`` it is a failure, as the exit status says);
* each check with no problem is one case named by its id: passed (what was seen in
  ``<system-out>``, notes on probes too), or ``<skipped>`` when it could not run.

A case caused by a probe takes that probe's time. The server's stderr goes in the
``<system-err>`` of the whole run.

Every text may come from the server under check: characters XML 1.0 cannot hold are
written escaped (``\\x1b``), and the rest is escaped by the XML writer.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Final

from mcpspec.runtime.errors import clip

from .catalog import CHECKS
from .findings import Finding, Outcome, Report, RevisionReport

__all__ = ["dumps", "to_xml", "write_junit"]

#: Catalog order, for the testcases.
_ORDER: Final = {check: index for index, check in enumerate(CHECKS)}
_NOT_XML: Final = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
#: The longest ``why`` in a testcase's name.
NAME_WHY: Final = 120


def _text(value: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", value)


def _line(finding: Finding) -> str:
    where = f"{finding.where}: " if finding.where else ""
    parts = [f"{finding.outcome.value}: {where}{finding.why}"]
    if finding.subject:
        parts.append(f"about: {finding.subject}")
    if finding.probe and not finding.why.startswith("probe:"):
        parts.append(f"probe: {finding.probe}")
    if finding.count > 1:
        parts.append(f"seen {finding.count} times (where: the first)")
    return _text("; ".join(parts))


def _suite_name(revision: RevisionReport) -> str:
    return _text(f"{revision.revision} {revision.source}".strip())


def _case(suite: ET.Element, classname: str, name: str, seconds: float | None) -> ET.Element:
    attributes = {"classname": classname, "name": _text(name)}
    if seconds is not None:
        attributes["time"] = f"{seconds:.3f}"
    return ET.SubElement(suite, "testcase", attributes)


def _problem(
    suite: ET.Element,
    classname: str,
    revision: RevisionReport,
    finding: Finding,
    strict_warnings: bool,
) -> bool:
    """Add the testcase of one problem; whether it failed."""
    name = f"{finding.check}: {clip(finding.why, NAME_WHY)}"
    case = _case(suite, classname, name, revision.probe_seconds.get(finding.probe))
    level = CHECKS[finding.check].level.value
    failed = finding.outcome is Outcome.FAILED or strict_warnings
    if failed:
        failure = ET.SubElement(
            case, "failure", {"message": _text(finding.why)[:500], "type": level}
        )
        failure.text = _line(finding)
    else:
        properties = ET.SubElement(case, "properties")
        ET.SubElement(properties, "property", {"name": "warning", "value": _text(finding.why)})
        ET.SubElement(properties, "property", {"name": "level", "value": level})
        ET.SubElement(case, "system-out").text = _line(finding)
    return failed


def _check(
    suite: ET.Element, classname: str, revision: RevisionReport, findings: list[Finding]
) -> bool:
    """Add the testcase of a check with no problem; whether it was skipped."""
    timed = {f.probe for f in findings if f.probe in revision.probe_seconds}
    seconds = sum(revision.probe_seconds[probe] for probe in timed) if timed else None
    case = _case(suite, classname, findings[0].check, seconds)
    skipped = all(f.outcome is Outcome.SKIPPED for f in findings)
    if skipped:
        ET.SubElement(case, "skipped", {"message": _text(findings[0].why)[:500]})
    shown = [f for f in findings if f.outcome in (Outcome.PASSED, Outcome.NOTE)]
    if shown:
        ET.SubElement(case, "system-out").text = "\n".join(_line(f) for f in shown)
    return skipped


def to_xml(report: Report, *, strict_warnings: bool = False) -> ET.Element:
    """``report`` as a ``<testsuites>`` element."""
    root = ET.Element("testsuites", {"name": _text(f"mcpspec {report.target}")})
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for revision in report.revisions:
        name = _suite_name(revision)
        suite = ET.SubElement(root, "testsuite", {"name": name})
        if revision.stopped:
            props = ET.SubElement(suite, "properties")
            ET.SubElement(props, "property", {"name": "stopped", "value": _text(revision.stopped)})
        counts = {"tests": 0, "failures": 0, "skipped": 0}
        problems = sorted(
            (f for f in revision.findings if f.problem), key=lambda f: _ORDER[f.check]
        )
        for finding in problems:
            counts["tests"] += 1
            counts["failures"] += _problem(suite, name, revision, finding, strict_warnings)
        troubled = {f.check for f in problems}
        by_check: dict[str, list[Finding]] = {}
        for finding in revision.findings:
            if finding.check not in troubled:
                by_check.setdefault(finding.check, []).append(finding)
        for _, findings in sorted(by_check.items(), key=lambda item: _ORDER[item[0]]):
            counts["tests"] += 1
            counts["skipped"] += _check(suite, name, revision, findings)
        suite.attrib.update({k: str(v) for k, v in counts.items()})
        suite.attrib.update({"errors": "0", "time": f"{revision.seconds:.3f}"})
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
