"""The three report formats of a check run, from hand-built reports: terminal text (and
its live progress line), JSON and JUnit XML."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from typing import Any

import pytest

from mcpspec.check import Finding, Outcome, Report, RevisionReport
from mcpspec.check.findings import MAX_PROBLEMS, broken
from mcpspec.check.report_json import as_json, dumps, write_json
from mcpspec.check.report_junit import dumps as junit_dumps
from mcpspec.check.report_junit import write_junit
from mcpspec.check.report_text import WHY_LINES, Progress, render, use_color, write

LONG_WHY = "the value " + "is wrong and " * 80 + "ends here"
ESC = "\x1b[31mred\x1b[0m"


def _report() -> Report:
    new = RevisionReport("2025-11-25", accepted=True)
    new.add(broken("schema.message", "stdout line 7: $.result.tools[0].name", "Expected `str`"))
    new.add(Finding("wire.message", Outcome.PASSED, "", "57 messages"))
    new.add(broken("protocol.parse-error", "stdout line 9", "answered -32600, not -32700"))
    new.add(Finding("surface.call", Outcome.SKIPPED, "", "tools are called only with --call-tools"))
    new.add(broken("protocol.cancellation", "stdout line 12: $.id", LONG_WHY))
    new.add(Finding("protocol.ping", Outcome.PASSED, "stdout line 4", f"answered {ESC}"))
    old = RevisionReport("2024-11-05", accepted=False, stopped="the server answered 2025-11-25")
    negotiation = RevisionReport("negotiation")
    negotiation.add(
        Finding("protocol.negotiation", Outcome.PASSED, "stdout line 1", "offered 1999")
    )
    report = Report("python server.py", [new, old, negotiation])
    report.stderr = "".join(f"log line {n}\n" for n in range(1, 31)) + f"bad {ESC}\n"
    report.seconds = 1.5
    return report


# -- text ------------------------------------------------------------------------------------


def test_text_has_a_table_per_revision_and_warnings_apart() -> None:
    text = render(_report(), width=100)
    lines = text.splitlines()
    assert lines[0] == "mcpspec check: python server.py"
    heads = [line for line in lines if line.startswith(("Revision", "Negotiation"))]
    assert heads == [
        "Revision 2025-11-25: accepted",
        "Revision 2024-11-05: not accepted; stopped: the server answered 2025-11-25",
        "Negotiation (versions no revision has)",
    ]
    first = text.split("Revision 2024-11-05")[0]
    table, warnings = first.split("Warnings (2):")
    # The main table: the failure first, then passes in catalog order.
    rows = [
        line.split()[:2]
        for line in table.splitlines()
        if line.startswith(("schema", "wire", "protocol"))
    ]
    assert rows == [
        ["schema.message", "failed"],
        ["wire.message", "passed"],
        ["protocol.ping", "passed"],
    ]
    assert "stdout line 7:" in table and "$.result.tools[0].name" in table
    warn_rows = [line.split()[:2] for line in warnings.splitlines() if line.startswith("protocol")]
    assert warn_rows == [["protocol.parse-error", "warning"], ["protocol.cancellation", "warning"]]
    assert "Skipped: surface.call (tools are called only with --call-tools)" in warnings
    assert lines[-1] == "3 passed, 1 failed, 2 warnings, 1 skipped in 1.50 s"


@pytest.mark.parametrize("width", [40, 59, 60, 80, 100, 160])
def test_text_fits_the_width(width: int) -> None:
    text = render(_report(), width=width)
    too_long = [line for line in text.splitlines()[1:] if len(line) > width]
    assert too_long == []
    # Long texts are wrapped and then clipped, never lost silently.
    assert "…" in text
    assert "ends here" not in text


def test_long_why_is_wrapped_then_clipped() -> None:
    text = render(_report(), width=100)
    start = text.index("protocol.cancellation  warning")
    block = text[start:].split("\n")
    continued = [block[0], *(line for line in block[1 : WHY_LINES + 2] if line.startswith(" "))]
    assert len(continued) == WHY_LINES
    assert continued[-1].endswith("…")


def test_text_escapes_control_characters_and_shows_stderr_tail() -> None:
    text = render(_report(), width=100)
    assert "\x1b" not in text
    assert "answered \\x1b[31mred\\x1b[0m" in text
    assert "Server stderr (last 20 of 31 lines):" in text
    assert "  log line 12\n" in text and "  log line 11\n" not in text
    assert text.index("  log line 30") < text.index("  bad \\x1b[31mred")


def test_text_escapes_lone_surrogates_for_a_strict_utf8_stream() -> None:
    revision = RevisionReport("2025-06-18", source="log\udcff.jsonl")
    revision.add(broken("schema.message", "line 2: $.id", "bad \ud800 value"))
    report = Report("log\udcff.jsonl", [revision])
    text = render(report, width=100)
    text.encode("utf-8")  # strict: raises on any lone surrogate left
    assert "log\\udcff.jsonl" in text and "bad \\ud800 value" in text


def test_a_huge_why_is_cut_before_it_is_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpspec.check import report_text

    wrap = report_text.textwrap.wrap
    lengths: list[int] = []

    def spy(text: str, *args: Any, **kwargs: Any) -> list[str]:
        lengths.append(len(text))
        assert len(text) < 100_000, "wrapped whole: slow on a huge value"
        return wrap(text, *args, **kwargs)

    monkeypatch.setattr(report_text.textwrap, "wrap", spy)
    revision = RevisionReport("2025-06-18", stopped="no " * 500_000)
    revision.add(broken("protocol.negotiation", "initialize", "got " + "9" * 1_000_000))
    revision.add(broken("protocol.ping", "ping", "x " * 500_000))
    revision.add(Finding("surface.call", Outcome.SKIPPED, "", "y " * 500_000))
    text = render(Report("server", [revision]), width=100)
    assert lengths and len(text) < 20_000
    block = text[text.index("protocol.negotiation") :].split("\n")[:WHY_LINES]
    assert block[-1].endswith("…")


def test_no_stderr_section_when_empty() -> None:
    report = _report()
    report.stderr = "\n  \n"
    assert "Server stderr" not in render(report)


def test_color_only_when_asked() -> None:
    plain = render(_report(), color=False)
    colored = render(_report(), color=True)
    assert "\x1b[" not in plain
    assert "\x1b[31mfailed " in colored and "\x1b[33mwarning" in colored
    # Colour changes no text.
    import re

    assert re.sub(r"\x1b\[[0-9;]*m", "", colored) == plain


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_write_colors_a_tty_unless_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    pipe, tty = io.StringIO(), _Tty()
    assert not use_color(pipe) and use_color(tty)
    write(_report(), pipe)
    write(_report(), tty)
    assert "\x1b[" not in pipe.getvalue() and "\x1b[31m" in tty.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    quiet = _Tty()
    write(_report(), quiet)
    assert not use_color(quiet) and "\x1b[" not in quiet.getvalue()


def test_progress_is_silent_when_not_a_tty() -> None:
    stream = io.StringIO()
    progress = Progress(stream)
    progress("2025-11-25: connecting", None)
    progress("2025-11-25: ping", broken("protocol.ping", "x", "y"))
    progress.close()
    assert stream.getvalue() == ""
    assert progress.failed == 1


def test_progress_rewrites_one_line_on_a_tty() -> None:
    stream = _Tty()
    progress = Progress(stream)
    progress("2025-11-25: connecting", None)
    progress("2025-11-25: parse error \x1b[2J", broken("protocol.parse-error", "x", "y"))
    out = stream.getvalue()
    assert "\n" not in out
    assert out.count("\r") == 2
    assert out.endswith("2025-11-25: parse error \\x1b[2J [0 failed, 1 warnings]\x1b[K")
    progress.close()
    assert stream.getvalue().endswith("\r\x1b[K")


# -- JSON ------------------------------------------------------------------------------------


def test_json_shape() -> None:
    doc: dict[str, Any] = json.loads(dumps(_report()))
    assert list(doc) == [
        "format",
        "version",
        "target",
        "seconds",
        "exit_status",
        "counts",
        "revisions",
        "stderr",
    ]
    assert (doc["format"], doc["version"], doc["target"]) == (
        "mcpspec-report",
        2,
        "python server.py",
    )
    assert doc["exit_status"] == 1 and doc["seconds"] == 1.5
    assert doc["counts"] == {"passed": 3, "failed": 1, "warning": 2, "skipped": 1, "note": 0}
    assert [r["revision"] for r in doc["revisions"]] == ["2025-11-25", "2024-11-05", "negotiation"]
    first = doc["revisions"][0]
    assert set(first) == {"revision", "source", "accepted", "stopped", "findings"}
    assert first["findings"][0] == {
        "check": "schema.message",
        "category": "schema",
        "level": "MUST",
        "outcome": "failed",
        "where": "stdout line 7: $.result.tools[0].name",
        "why": "Expected `str`",
        "probe": "",
        "subject": "",
        "count": 1,
    }
    assert first["findings"][2]["level"] == "SHOULD"
    assert doc["revisions"][1]["accepted"] is False
    assert doc["revisions"][2]["accepted"] is None
    assert doc["stderr"].endswith(f"bad {ESC}\n")


def test_json_exit_status_follows_strict_warnings(tmp_path: Any) -> None:
    report = Report("t", [RevisionReport("2025-11-25", [broken("protocol.lifecycle", "", "w")])])
    assert as_json(report)["exit_status"] == 0
    assert as_json(report, strict_warnings=True)["exit_status"] == 1
    path = tmp_path / "r.json"
    write_json(report, path, strict_warnings=True)
    assert json.loads(path.read_bytes())["exit_status"] == 1


def test_json_survives_lone_surrogates() -> None:
    report = _report()
    report.stderr = "bad \udc80 byte"
    assert json.loads(dumps(report))["stderr"] == "bad \udc80 byte"


# -- JUnit -----------------------------------------------------------------------------------


def _suites(data: bytes) -> tuple[ET.Element, dict[str, ET.Element]]:
    root = ET.fromstring(data)
    return root, {s.attrib["name"]: s for s in root.iter("testsuite")}


def _cases(suite: ET.Element) -> dict[str, ET.Element]:
    return {c.attrib["name"].split(":")[0]: c for c in suite.iter("testcase")}


def test_junit_counts_and_cases() -> None:
    report = _report()
    report.revisions[0].seconds = 0.75
    root, suites = _suites(junit_dumps(report))
    assert root.tag == "testsuites"
    assert list(suites) == ["2025-11-25", "2024-11-05", "negotiation"]
    new = suites["2025-11-25"]
    assert new.attrib["time"] == "0.750"
    # one testcase per problem (rule and cause), one per check with none
    names = [c.attrib["name"] for c in new.iter("testcase")]
    assert names[:2] == [
        "schema.message: Expected `str`",
        "protocol.parse-error: answered -32600, not -32700",
    ]
    assert names[2].startswith("protocol.cancellation: the value is wrong and")
    assert names[3:] == ["wire.message", "protocol.ping", "surface.call"]
    cases = _cases(new)
    assert (new.attrib["tests"], new.attrib["failures"], new.attrib["skipped"]) == ("6", "1", "1")
    failure = cases["schema.message"].find("failure")
    assert failure is not None and failure.attrib["type"] == "MUST"
    assert "stdout line 7: $.result.tools[0].name" in (failure.text or "")
    assert cases["surface.call"].find("skipped") is not None
    # A warning passes, told in a property and on system-out.
    warning = cases["protocol.parse-error"]
    assert warning.find("failure") is None
    properties = {p.attrib["name"]: p.attrib["value"] for p in warning.iter("property")}
    assert properties == {"warning": "answered -32600, not -32700", "level": "SHOULD"}
    out = warning.find("system-out")
    assert out is not None and "warning: stdout line 9" in (out.text or "")
    assert suites["2024-11-05"].attrib["tests"] == "0"
    assert suites["2024-11-05"].find("properties/property").attrib["value"].startswith("the server")
    assert (root.attrib["tests"], root.attrib["failures"], root.attrib["skipped"]) == (
        "7",
        "1",
        "1",
    )


def test_junit_cases_take_their_probe_s_time_and_say_how_often() -> None:
    section = RevisionReport("2025-11-25", probe_seconds={"surface": 1.25})
    for line in (3, 8):
        finding = broken("surface.call", f"stdout line {line}", "no structuredContent")
        section.add(replace(finding, probe="surface", subject="tool 'add'"))
    section.add(Finding("protocol.lifecycle", Outcome.NOTE, "stdout line 1", "probe: early"))
    _, suites = _suites(junit_dumps(Report("t", [section])))
    cases = _cases(suites["2025-11-25"])
    call = cases["surface.call"]
    assert call.attrib["time"] == "1.250"
    failure = call.find("failure")
    assert failure is not None
    assert failure.text == (
        "failed: stdout line 3: no structuredContent; about: tool 'add'; probe: surface; "
        "seen 2 times (where: the first)"
    )
    note = cases["protocol.lifecycle"]
    assert "time" not in note.attrib and note.find("failure") is None
    assert (note.findtext("system-out") or "").startswith("note: stdout line 1: probe: early")


def test_junit_strict_warnings_fail(tmp_path: Any) -> None:
    path = tmp_path / "r.xml"
    write_junit(_report(), path, strict_warnings=True)
    root, suites = _suites(path.read_bytes())
    assert suites["2025-11-25"].attrib["failures"] == "3"
    assert root.attrib["failures"] == "3"
    failure = _cases(suites["2025-11-25"])["protocol.parse-error"].find("failure")
    assert failure is not None and failure.attrib["type"] == "SHOULD"


def test_junit_escapes_everything() -> None:
    report = _report()
    report.revisions[0].add(
        broken("protocol.ping", '<where> & "x"', "nul \x00, esc \x1b, surrogate \udc80 ]]>")
    )
    report.target = "a <b> & c"
    root, suites = _suites(junit_dumps(report))
    assert root.attrib["name"] == "mcpspec a <b> & c"
    case = next(
        c
        for c in suites["2025-11-25"].iter("testcase")
        if c.attrib["name"].startswith("protocol.ping: nul")
    )
    failure = case.find("failure")
    assert failure is not None
    assert '<where> & "x": nul \\x00, esc \\x1b, surrogate \\xdc80 ]]>' in (failure.text or "")
    err = root.find("system-err")
    assert err is not None and "bad \\x1b[31mred" in (err.text or "")


def test_problems_past_the_cap_are_counted_in_one_finding() -> None:
    section = RevisionReport("2025-11-25")
    listed = [
        section.add(broken("protocol.capabilities", f"stdout line {n}", f"undeclared {n}"))
        for n in range(MAX_PROBLEMS + 150)
    ]
    section.add(Finding("protocol.capabilities", Outcome.SKIPPED, "", "skipped stays"))
    section.add(broken("protocol.ping", "stdout line 9", "not answered"))
    assert listed == [True] * MAX_PROBLEMS + [False] * 150
    capped = [f for f in section.findings if f.check == "protocol.capabilities"]
    assert [f.where for f in capped[:MAX_PROBLEMS]] == [
        f"stdout line {n}" for n in range(MAX_PROBLEMS)
    ]
    summary = capped[MAX_PROBLEMS]
    assert summary.outcome is Outcome.FAILED
    assert summary.why.startswith("150 more failed findings of this check are not listed")
    assert [f.why for f in capped[MAX_PROBLEMS + 1 :]] == ["skipped stays"]
    assert section.problems(Outcome.FAILED)[-1].check == "protocol.ping"
    assert len(section.findings) == MAX_PROBLEMS + 3


def test_one_rule_broken_for_one_cause_is_one_finding_counted() -> None:
    """The same rule, the same cause: one finding (the first place), counted; another
    cause, another probe or another subject is a finding of its own."""
    section = RevisionReport("2025-11-25")
    why = "notifications/message without the logging capability declared"
    added = [section.add(broken("protocol.capabilities", f"stdout line {n}", why)) for n in (3, 9)]
    added.append(section.add(broken("protocol.capabilities", "stdout line 12", "other")))
    probe = replace(broken("protocol.capabilities", "stdout line 14", why), probe="surface")
    added.append(section.add(probe))
    assert added == [True, False, True, True]
    first, other, probed = section.findings
    assert (first.where, first.count) == ("stdout line 3", 2)
    assert (other.count, probed.count, probed.probe) == (1, 1, "surface")


def test_causes_gather_a_rule_over_revisions() -> None:
    report = Report("t")
    why = "notifications/message without the logging capability declared"
    for revision in ("2025-11-25", "2025-06-18"):
        section = RevisionReport(revision)
        for n in range(3):
            section.add(broken("protocol.capabilities", f"stdout line {n}", why, revision))
        section.add(broken("protocol.lifecycle", "x", "late", revision))
        report.revisions.append(section)
    [capability, lifecycle] = report.causes()
    assert capability.finding.why == why and capability.count == 6
    assert capability.revisions == ["2025-11-25", "2025-06-18"]
    assert lifecycle.finding.outcome is Outcome.WARNING and lifecycle.count == 2


# -- SARIF -----------------------------------------------------------------------------------


def test_sarif_has_every_rule_and_one_result_per_problem(tmp_path: Any) -> None:
    from mcpspec.check import CHECKS
    from mcpspec.check.report_sarif import write_sarif

    report = _report()
    path = tmp_path / "r.sarif"
    write_sarif(report, path)
    doc = json.loads(path.read_text())
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-2.1.0.json")
    [run] = doc["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(CHECKS)
    levels = {r["id"]: r["defaultConfiguration"]["level"] for r in rules}
    assert levels["schema.message"] == "error" and levels["protocol.parse-error"] == "warning"
    results = run["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("schema.message", "error"),
        ("protocol.parse-error", "warning"),
        ("protocol.cancellation", "warning"),
    ]
    first = results[0]
    assert rules[first["ruleIndex"]]["id"] == "schema.message"
    assert first["message"]["text"] == (
        "Expected `str` | where: stdout line 7: $.result.tools[0].name | revision: 2025-11-25"
    )
    [location] = first["locations"]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == "python%20server.py"
    assert location["logicalLocations"] == [
        {"name": "stdout line 7: $.result.tools[0].name", "kind": "message"}
    ]
    assert len({r["partialFingerprints"]["mcpspecCause/v1"] for r in results}) == 3
    assert run["invocations"][0]["exitCode"] == 1
