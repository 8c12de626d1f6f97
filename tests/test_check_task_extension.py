"""The checker's rules of the 2026-07-28 tasks extension (``protocol.tasks``, with
``--call-tools``) against an mcpspec server with task tools: it passes them, and each
defect the server can be given is found by them alone, as the finding that rule makes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

import anyio
import pytest

from mcpspec.check.findings import Finding, Outcome, Report
from mcpspec.check.http import HttpTarget
from mcpspec.check.run import Options, check_server
from mcpspec.check.stdio import StdioTarget
from mcpspec.runtime.connection.http import http_app
from tests.http_kit import serve_app
from tests.peers.task_extension_server import build

SCRIPT: Final = str(Path(__file__).resolve().parent / "peers" / "task_extension_server.py")
OPTIONS: Final = Options(revisions=("2026-07-28",), call_tools=True, timeout=10)
TASKS: Final = "io.modelcontextprotocol/tasks"
#: uvicorn runs on asyncio.
ANYIO_BACKENDS: Final = ("asyncio",)


def _check(defect: str | None) -> Report:
    args = [SCRIPT] if defect is None else [SCRIPT, "--defect", defect]
    return anyio.run(check_server, StdioTarget(sys.executable, args), OPTIONS)


def _tasks(report: Report) -> list[Finding]:
    return [f for f in report.findings() if f.check == "protocol.tasks"]


def test_a_server_with_extension_tasks_passes_the_extension_rules() -> None:
    report = _check(None)
    assert [f.why for f in report.findings() if f.problem] == []
    passed = [f.why for f in _tasks(report) if f.outcome is Outcome.PASSED]
    assert f"capabilities.extensions declares {TASKS}" in passed
    for tool in ("ask", "broken", "slow"):
        assert f"tool {tool!r}: declaring the extension, a task" in passed
    assert "tool 'ask': tasks/cancel acknowledged" in passed
    assert any(why.startswith("tool 'broken': its task working") for why in passed), passed
    assert any(why.endswith("-> completed -> completed") for why in passed), passed
    assert f"tasks/get not declaring {TASKS}: -32021" in passed
    # Three tasks followed at most: the fourth tool is not called declaring the extension.
    assert not any("'must'" in why for why in passed)


@pytest.mark.anyio
async def test_the_extension_rules_pass_over_streamable_http() -> None:
    # Over HTTP the link mirrors each task request's task id in Mcp-Name (Routing Headers).
    async with serve_app(http_app(build())) as base:
        report = await check_server(HttpTarget(base + "/mcp", timeout=10), OPTIONS)
    assert [f.why for f in report.findings() if f.problem] == []
    passed = [f.why for f in _tasks(report) if f.outcome is Outcome.PASSED]
    assert "tool 'ask': tasks/cancel acknowledged" in passed
    assert any(why.endswith("-> completed -> completed") for why in passed), passed
    assert f"tasks/get not declaring {TASKS}: -32021" in passed


#: Each defect, the tools whose finding it makes, and that finding's start (after the
#: subject) and where the rule comes from.
FOUND: Final = [
    (
        "created-with-input-requests",
        ("ask", "broken", "slow"),
        "its CreateTaskResult has inputRequests {}: 'type CreateTaskResult = Result & Task'",
        "Task Creation; Composition with Multi Round-Trip Requests",
    ),
    (
        "created-untagged",
        ("ask", "broken", "slow"),
        "a CreateTaskResult (taskId ",
        "Polymorphic Results",
    ),
    (
        "get-tagged-task",
        ("ask", "broken", "slow"),
        "tasks/get answered resultType 'task': 'The resultType field MUST be set to "
        '"complete" on this object',
        "Task Polling",
    ),
    (
        "completed-without-result",
        ("slow",),
        "its task is completed with no result: 'If the status is completed, the server MUST",
        "Task Polling",
    ),
    (
        "failed-without-error",
        ("broken",),
        "its task is failed with no error: 'If the status is failed, the server MUST",
        "Task Polling",
    ),
    (
        "input-required-empty",
        ("ask",),
        "its task is input_required with an empty inputRequests: 'If the status is "
        "input_required, the server MUST",
        "Task Polling",
    ),
    (
        "differs",
        ("slow",),
        "called plainly it answered a result, as a task a tool-error: 'The tasks/get endpoint "
        "returns exactly what the underlying request would have returned",
        "Task Execution Errors",
    ),
    (
        "backwards",
        ("slow",),
        "its task went from 'completed' to 'working': the Task Status State Diagram",
        "Task Status; Task Polling",
    ),
    (
        "cancel-with-task",
        ("ask",),
        "tasks/cancel was answered with status 'cancelled', taskId ",
        "Task Cancellation",
    ),
]


@pytest.mark.parametrize(("defect", "tools", "said", "section"), FOUND)
def test_each_extension_task_defect_is_found_by_its_rule(
    defect: str, tools: tuple[str, ...], said: str, section: str
) -> None:
    report = _check(defect)
    problems = [f for f in report.findings() if f.problem]
    assert {(f.check, f.outcome) for f in problems} == {("protocol.tasks", Outcome.FAILED)}
    assert sorted(f.subject for f in problems) == [f"tool {tool!r}" for tool in tools]
    for finding in problems:
        assert finding.why.startswith(f"{finding.subject}: {said}"), finding.why
        assert finding.why.endswith(f"(SEP-2663 tasks extension, {section})"), finding.why


def test_a_tasks_get_not_declaring_the_extension_must_be_refused() -> None:
    [problem] = [f for f in _check("get-undeclared-served").findings() if f.problem]
    assert (problem.check, problem.outcome) == ("protocol.tasks", Outcome.FAILED)
    assert problem.why == (
        f"tasks/get from a request not declaring {TASKS} was answered with result, not "
        "-32021: 'Servers MUST return this error for non-declaring clients issuing "
        "tasks/get, tasks/update, and tasks/cancel requests' (SEP-2663 tasks extension, "
        "Error Handling: -32021, Missing Required Client Capability)"
    )


def test_a_refusal_not_naming_the_extension_is_a_warning() -> None:
    [problem] = [f for f in _check("missing-capability-without-data").findings() if f.problem]
    assert (problem.check, problem.outcome) == ("protocol.tasks", Outcome.WARNING)
    assert problem.where.endswith(": $.error.data")
    assert problem.why == (
        "-32021 whose data does not name the extension (None): the error indicates 'the "
        "required extension in the error response' (data.requiredCapabilities.extensions"
        f'["{TASKS}"]; SEP-2663 tasks extension, Capability Negotiation)'
    )


def test_a_task_answering_a_request_not_declaring_the_extension_is_found() -> None:
    report = _check("unsolicited")
    tasks = [f for f in _tasks(report) if f.problem]
    # Every plain call was answered with a task; the server declares no extension, so
    # nothing is called declaring it.
    assert [f.subject for f in tasks] == [f"tool {t!r}" for t in ("ask", "broken", "slow", "must")]
    for finding in tasks:
        assert finding.outcome is Outcome.FAILED
        assert finding.where.endswith(": $.result.resultType")
        assert "which did not declare io.modelcontextprotocol/tasks, was answered by a " in (
            finding.why
        )
        assert finding.why.endswith(
            'by a server that does not declare it either with a task (resultType "task"): '
            "'A server MUST NOT return CreateTaskResult to a client that did not include the "
            "extension capability on its request, regardless of prior declarations' "
            "(SEP-2663 tasks extension, Capability Negotiation)"
        )
    assert not any(f.outcome is Outcome.PASSED for f in _tasks(report))
