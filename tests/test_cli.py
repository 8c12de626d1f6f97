"""The ``mcpspec`` command line: help without optional dependencies, usage errors, and
``check``/``validate`` wiring (targets, options, reports, exit status) with a fake run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from mcpspec.check import Finding, Outcome, Report, RevisionReport
from mcpspec.check.findings import broken
from mcpspec.cli import main

from .conftest import TRANSCRIPTS_DIR
from .transcript_kit import OPENING

#: Runs mcpspec.cli.main(argv) where jinja2, httpx and anyio cannot be imported; prints
#: the exit status and which of them (or of their importers) got imported.
_BLOCKED = textwrap.dedent(
    """
    import os, sys

    BLOCKED = tuple(os.environ["MCPSPEC_BLOCKED"].split(","))

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked", name=name)
            return None

    sys.meta_path.insert(0, Block())
    from mcpspec.cli import main

    try:
        status = main(sys.argv[1:])
    except SystemExit as exc:
        status = exc.code
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    print(f"STATUS {status} LOADED {loaded}")
    """
)


def _blocked(*argv: str, blocked: str = "jinja2,httpx,anyio") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _BLOCKED, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "100", "MCPSPEC_BLOCKED": blocked},
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--help"], "usage: mcpspec [-h] COMMAND"),
        (["check", "--help"], "usage: mcpspec check"),
        (["validate", "--help"], "usage: mcpspec validate"),
        (["generate", "--help"], "usage: mcpspec generate"),
    ],
)
def test_help_works_without_optional_dependencies(argv: list[str], expected: str) -> None:
    done = _blocked(*argv)
    assert done.returncode == 0, done.stderr
    assert expected in done.stdout
    assert done.stdout.rstrip().endswith("STATUS 0 LOADED []")


def test_help_lists_the_options() -> None:
    text = _blocked("check", "--help").stdout
    for option in (
        "--revision",
        "--header",
        "--call-tools",
        "--lenient",
        "--strict-warnings",
        "--timeout",
        "--json",
        "--junit",
        "--env",
        "--cwd",
    ):
        assert option in text


def test_validate_runs_without_the_network_dependencies() -> None:
    path = TRANSCRIPTS_DIR / "2025-11-25" / "everything.jsonl"
    done = _blocked("validate", str(path))
    assert "Revision 2025-11-25" in done.stdout
    assert done.stdout.rstrip().endswith("STATUS 0 LOADED []")


def test_check_without_its_dependencies_says_what_to_install() -> None:
    done = _blocked("check", "http://127.0.0.1:9/mcp")
    assert "pip install 'mcpspec[check]'" in done.stdout + done.stderr
    assert "anyio is missing" in done.stdout + done.stderr


def test_check_without_jsonschema_says_so_in_one_line() -> None:
    """jsonschema is imported only when a first schema is checked: the command asks
    for it up front, so a missing one is a line, not a traceback halfway through."""
    done = _blocked("check", "http://127.0.0.1:9/mcp", blocked="jsonschema")
    said = (
        "mcpspec check needs the checker's dependencies (jsonschema is missing): "
        "pip install 'mcpspec[check]'"
    )
    assert done.stdout == f"STATUS {said} LOADED []\n"  # the exit's message: one line
    assert done.stderr == ""


# -- usage errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "the following arguments are required: COMMAND"),
        (["check"], "name the server"),
        (["check", "--header", "NoColon", "http://localhost/mcp"], "is not NAME:VALUE"),
        (["check", "--env", "X=1", "http://localhost/mcp"], "--env and --cwd are for"),
        (["check", "--header", "A: b", "--", sys.executable], "--header is for an HTTP"),
        (["check", "--env", "NOEQUALS", "--", sys.executable], "is not NAME=VALUE"),
        (["check", "--timeout", "0", "http://localhost/mcp"], "--timeout must be a positive"),
        (["check", "--timeout", "soon", "http://localhost/mcp"], "invalid float value"),
        (["check", "--revision", "1999-01-01", "http://localhost/mcp"], "unknown revision"),
        (["check", "--", "/no/such/server"], "command not found"),
        (["check", "ftp://host/mcp"], "command not found"),
        (["check", "--no-such-option", "http://localhost/mcp"], "unrecognized arguments"),
        (["validate"], "the following arguments are required: FILE"),
    ],
)
def test_usage_errors_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert message in capsys.readouterr().err


# -- check, with a fake run --------------------------------------------------------------------


class FakeRun:
    """Stands in for mcpspec.check.run.check_server: records what it was given."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.calls: list[tuple[Any, Any]] = []

    async def __call__(self, target: Any, options: Any) -> Report:
        self.calls.append((target, options))
        assert options.listener is not None
        options.listener("2025-11-25: ping", self.report.revisions[0].findings[0])
        return self.report


def _report(*findings: Finding) -> Report:
    section = RevisionReport("2025-11-25", list(findings), accepted=True)
    return Report("target", [section], stderr="", seconds=0.25)


@pytest.fixture
def fake_run(monkeypatch: pytest.MonkeyPatch) -> FakeRun:
    import mcpspec.check.run

    fake = FakeRun(_report(Finding("protocol.ping", Outcome.PASSED, "", "answered")))
    monkeypatch.setattr(mcpspec.check.run, "check_server", fake)
    return fake


def test_check_url_builds_an_http_target(
    fake_run: FakeRun, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(
        [
            "check",
            "--header",
            "Authorization: Bearer T:1",
            "--revision",
            "2025-06-18",
            "--revision",
            "2024-11-05",
            "--call-tools",
            "--lenient",
            "--timeout",
            "2.5",
            "https://example.com/mcp",
        ]
    )
    assert status == 0
    ((target, options),) = fake_run.calls
    from mcpspec.check.http import HttpTarget

    assert isinstance(target, HttpTarget)
    assert target.url == "https://example.com/mcp"
    assert target.headers == {"Authorization": "Bearer T:1"}
    assert target.timeout == 2.5
    assert options.revisions == ("2025-06-18", "2024-11-05")
    assert (options.call_tools, options.lenient, options.timeout) == (True, True, 2.5)
    out, err = capsys.readouterr()
    assert "Revision 2025-11-25: accepted" in out
    assert "1 passed, 0 failed, 0 warnings, 0 skipped in 0.25 s" in out
    assert "\x1b[" not in out and err == ""  # no colour, no progress line off a terminal


def test_check_command_builds_a_stdio_target(fake_run: FakeRun, tmp_path: Path) -> None:
    status = main(
        ["check", "--env", "A=1=2", "--cwd", str(tmp_path), "--", sys.executable, "-m", "srv", "-v"]
    )
    assert status == 0
    ((target, options),) = fake_run.calls
    from mcpspec.check.run import Options
    from mcpspec.check.stdio import StdioTarget

    assert isinstance(target, StdioTarget)
    assert target.argv == [sys.executable, "-m", "srv", "-v"]
    assert target.env is not None and target.env["A"] == "1=2"
    assert target.env["PATH"] == os.environ["PATH"]  # the rest of the environment stays
    assert target.cwd == str(tmp_path)
    assert options.revisions == Options().revisions  # every revision by default
    assert (options.call_tools, options.lenient, options.timeout) == (False, False, 10.0)


def test_check_without_env_keeps_the_environment(fake_run: FakeRun) -> None:
    assert main(["check", "--", sys.executable]) == 0
    ((target, _),) = fake_run.calls
    assert target.env is None and target.cwd is None


def test_check_exit_status_and_report_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import mcpspec.check.run

    warning = broken("protocol.lifecycle", "stdout line 1", "answered tools/list")
    monkeypatch.setattr(mcpspec.check.run, "check_server", FakeRun(_report(warning)))
    json_path, junit_path = tmp_path / "r.json", tmp_path / "r.xml"
    sarif_path = tmp_path / "r.sarif"
    argv = ["check", "--json", str(json_path), "--junit", str(junit_path)]
    argv += ["--sarif", str(sarif_path), "--", sys.executable]
    assert main(argv) == 0
    assert json.loads(json_path.read_text())["exit_status"] == 0
    [result] = json.loads(sarif_path.read_text())["runs"][0]["results"]
    assert (result["ruleId"], result["level"]) == ("protocol.lifecycle", "warning")
    assert main([*argv[:1], "--strict-warnings", *argv[1:]]) == 1
    assert json.loads(json_path.read_text())["exit_status"] == 1
    suite = ET.parse(junit_path).getroot().find("testsuite")
    assert suite is not None and suite.attrib["failures"] == "1"
    capsys.readouterr()

    failure = broken("protocol.ping", "stdout line 4", "no answer")
    monkeypatch.setattr(mcpspec.check.run, "check_server", FakeRun(_report(failure)))
    assert main(["check", "--", sys.executable]) == 1
    assert "0 passed, 1 failed" in capsys.readouterr().out


def test_unwritable_report_file_exits_2(
    fake_run: FakeRun, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing-dir" / "r.json"
    assert main(["check", "--json", str(target), "--", sys.executable]) == 2
    assert "cannot write" in capsys.readouterr().err


# -- validate ----------------------------------------------------------------------------------


def test_validate_exit_status_and_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Wide enough for the heading to name the file on one line, wherever the checkout is.
    monkeypatch.setenv("COLUMNS", "4000")
    clean = TRANSCRIPTS_DIR / "2025-11-25" / "python-sdk.jsonl"
    defective = TRANSCRIPTS_DIR / "2024-11-05" / "everything.jsonl"
    assert main(["validate", str(clean)]) == 0
    json_path, junit_path = tmp_path / "v.json", tmp_path / "v.xml"
    status = main(
        [
            "validate",
            str(clean),
            str(defective),
            "--json",
            str(json_path),
            "--junit",
            str(junit_path),
        ]
    )
    assert status == 1
    out = capsys.readouterr().out
    assert out.startswith("mcpspec validate: ")
    assert f"Revision 2024-11-05 ({defective})" in out
    doc = json.loads(json_path.read_text())
    assert [r["source"] for r in doc["revisions"]] == [str(clean), str(defective)]
    assert doc["counts"]["failed"] == 2  # one finding, counted twice, for one cause
    failed = [f for f in doc["revisions"][1]["findings"] if f["outcome"] == "failed"]
    assert sorted(f["count"] for f in failed) == [1, 2]
    suites = ET.parse(junit_path).getroot().findall("testsuite")
    assert [s.attrib["failures"] for s in suites] == ["0", "2"]  # one case per cause


def test_validate_warnings_fail_only_when_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A clean opening, then a ping nobody answers: one warning, nothing failed.
    messages = [m for _, m in OPENING] + [{"jsonrpc": "2.0", "id": 2, "method": "ping"}]
    path = tmp_path / "stdio.log"
    path.write_text("\n".join(json.dumps(m) for m in messages) + "\n")
    assert main(["validate", str(path)]) == 0
    assert main(["validate", "--strict-warnings", str(path)]) == 1
    out = capsys.readouterr().out
    assert "Warnings (1):" in out and "server never answered ping (id 2)" in out


def test_validate_bad_file_is_a_message_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"from": "client", "message": {}}\nnot json\n')
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcpspec validate: ") and "line 2" in err
    assert "Traceback" not in err
