"""The checker's task rules (``protocol.tasks``, 2025-11-25, with ``--call-tools``)
against an mcpspec server with task tools: it passes them, and each defect the server
can be given is found by them alone."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

import anyio
import pytest

from mcpspec.check.findings import Outcome, Report
from mcpspec.check.run import Options, check_server
from mcpspec.check.stdio import StdioTarget

SCRIPT: Final = str(Path(__file__).resolve().parent / "peers" / "task_server.py")
OPTIONS: Final = Options(revisions=("2025-11-25",), call_tools=True, timeout=10)


def _check(defect: str | None) -> Report:
    args = [SCRIPT] if defect is None else [SCRIPT, "--defect", defect]
    return anyio.run(check_server, StdioTarget(sys.executable, args), OPTIONS)


def test_a_server_with_tasks_passes_the_task_rules() -> None:
    report = _check(None)
    assert [f.why for f in report.findings() if f.problem] == []
    passed = [f.why for f in report.findings() if f.check == "protocol.tasks"]
    assert "tasks.requests.tools.call declared" in passed
    assert "tool 'must': called without a task, -32601" in passed
    assert any("tool 'slow': as a task, completed, then a result" in why for why in passed)


@pytest.mark.parametrize(
    ("defect", "said"),
    [
        ("no-capability", "does not declare the tasks.requests.tools.call capability"),
        ("backwards", "its task went from 'completed' to 'working'"),
        ("differs", "called plainly it answered a result, as a task a tool-error"),
    ],
)
def test_each_task_defect_is_found_by_the_task_rules(defect: str, said: str) -> None:
    report = _check(defect)
    problems = [f for f in report.findings() if f.problem]
    assert problems, f"{defect}: nothing found"
    assert {(f.check, f.outcome) for f in problems} == {("protocol.tasks", Outcome.FAILED)}
    assert any(said in f.why for f in problems), [f.why for f in problems]
