"""``mcpspec check`` against servers with one deliberate defect each
(``tests/check_servers/broken.py``): each defect is found by exactly the check meant for
it, at the right place, and the baseline server they all start from gets a clean bill in
every revision, over stdio and HTTP.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Final

import anyio
import pytest

from mcpspec.check.errors import Unreachable
from mcpspec.check.findings import Outcome, Report
from mcpspec.check.http import HttpTarget
from mcpspec.check.run import Options, check_server
from mcpspec.check.stdio import StdioTarget

from .check_servers.broken import DEFECT_NAMES
from .check_servers.http_defects import HTTP_DEFECTS
from .http_kit import http_server

SCRIPT: Final = str(Path(__file__).resolve().parent / "check_servers" / "broken.py")
ALL_REVISIONS: Final = ("2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
#: Generous bound on one answer: only a hang reaches it.
TIMEOUT: Final = 10.0

#: Each defect: the check that must catch it (and no other check may complain), the
#: outcome (a MUST rule fails, a SHOULD rule warns) and a part of every problem's ``where``.
DEFECTS: Final[dict[str, tuple[str, str, str]]] = {
    "banner": ("wire.message", "failed", "stdout line 1"),
    "partial-line": ("wire.message", "failed", "stdout line"),
    "echo-version": ("protocol.negotiation", "failed", "stdout line 1"),
    "no-server-info": ("schema.message", "failed", "stdout line 2: $.result"),
    "notification-answered": ("protocol.responses", "failed", "stdout line"),
    "duplicate-response": ("protocol.responses", "failed", "$.id"),
    "undeclared-capability": ("protocol.capabilities", "failed", "$.method"),
    "undeclared-notification": ("protocol.capabilities", "failed", "stdout line"),
    "progress-not-increasing": ("protocol.progress", "failed", "$.params.progress"),
    "cursor-loop": ("protocol.pagination", "failed", "$.result.nextCursor"),
    "invalid-input-schema": ("surface.json-schema", "failed", "$.tools[0].inputSchema"),
    "unknown-method-wrong-code": ("protocol.unknown-method", "failed", "stdout line"),
    "ping-broken": ("protocol.ping", "failed", "stdout line"),
    "cancel-answered": ("protocol.cancellation", "warning", "stdout line"),
    "version-error-without-supported": ("protocol.negotiation", "failed", "stdout line"),
    "id-dropped-from-error": ("protocol.responses", "failed", "stdout line"),
    "unasked-log": ("protocol.logging", "failed", "$.params.level"),
    "invalid-params-wrong-code": ("protocol.invalid-params", "warning", "stdout line"),
    "parse-error-wrong-code": ("protocol.parse-error", "warning", "stdout line"),
    "structured-content-mismatch": ("surface.call", "failed", "$.result.structuredContent"),
    "unreadable-resource": ("surface.read", "failed", "stdout line"),
    "http-notification-status": ("http.status", "failed", "POST"),
    "http-no-session-enforcement": ("http.session", "warning", "POST /mcp"),
    "http-wrong-content-type": ("http.headers", "failed", "POST"),
    "http-origin-ignored": ("http.origin", "failed", "POST /mcp"),
    "task-required-served": ("protocol.tasks", "failed", "stdout line"),
    "http-unknown-session-400": ("http.session", "warning", "POST /mcp"),
}

#: The revisions each defect is checked in (one that shows it; default 2025-06-18).
REVISIONS: Final[dict[str, tuple[str, ...]]] = {
    "duplicate-response": ("2026-07-28",),
    "undeclared-capability": ("2025-11-25",),
    "cursor-loop": ("2026-07-28",),
    "invalid-input-schema": ("2025-03-26",),
    "unknown-method-wrong-code": ("2024-11-05",),
    "version-error-without-supported": ("2026-07-28",),
    "unasked-log": ("2026-07-28",),
    "invalid-params-wrong-code": ("2025-11-25",),
    "http-wrong-content-type": ("2026-07-28",),
    "http-origin-ignored": ("2025-11-25",),
    "task-required-served": ("2025-11-25",),
}
#: Defects that show only when tools are called.
CALLING: Final = frozenset(
    {"progress-not-increasing", "structured-content-mismatch", "task-required-served"}
)


async def _check(defect: str | None, options: Options) -> Report:
    args = [SCRIPT] if defect is None else [SCRIPT, "--defect", defect]
    return await check_server(StdioTarget(sys.executable, args), options)


async def _check_http(defect: str | None, options: Options) -> Report:
    args = [SCRIPT] if defect is None else [SCRIPT, "--defect", defect]
    async with http_server(args) as url:
        return await check_server(HttpTarget(url), options)


def _problems(report: Report) -> list[str]:
    return [
        f"{f.revision} {f.check} {f.outcome.value} at {f.where!r}: {f.why}"
        for f in report.findings()
        if f.problem
    ]


#: Behaviours of the scripted server that are no defect: the probe that shows them is
#: reported as a note, never held against the server.
NOT_DEFECTS: Final = frozenset(
    {
        "served-before-initialize",
        "http-token-required",
        "http-id-null-on-unknown-session",
        "task-required-refused",
        "tool-error",
    }
)


def test_every_defect_is_in_the_table() -> None:
    assert set(DEFECTS) | NOT_DEFECTS == DEFECT_NAMES


def test_served_before_initialize_is_a_note_on_the_probe_not_a_problem() -> None:
    """The lifecycle rule binds the client ("the client SHOULD NOT send requests other
    than pings before the server has responded"): a server that serves the checker's
    early tools/list breaks nothing, even with --strict-warnings."""
    options = Options(revisions=("2025-06-18",), timeout=TIMEOUT)
    report = anyio.run(_check, "served-before-initialize", options)
    assert _problems(report) == []
    assert report.exit_status(strict_warnings=True) == 0
    [note] = [f for f in report.findings() if f.check == "protocol.lifecycle"]
    assert note.outcome is Outcome.NOTE
    assert note.where == "stdout line 1"
    assert note.why.startswith("probe: a request before initialize; the server answered it")
    assert "binds the client" in note.why and "SHOULD NOT send requests" in note.why
    assert note.probe == "a request before initialize"


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_defect_is_caught_by_its_check_alone(defect: str) -> None:
    check, outcome, where = DEFECTS[defect]
    options = Options(
        revisions=REVISIONS.get(defect, ("2025-06-18",)),
        call_tools=defect in CALLING,
        timeout=TIMEOUT,
    )
    run = _check_http if defect in HTTP_DEFECTS else _check
    report = anyio.run(run, defect, options)
    problems = [f for f in report.findings() if f.problem]
    shown = "\n".join(_problems(report))
    assert problems, f"{defect}: nothing found"
    assert {(f.check, f.outcome) for f in problems} == {(check, Outcome(outcome))}, shown
    assert all(where in f.where for f in problems), shown


def test_baseline_is_clean_over_stdio() -> None:
    report = anyio.run(_check, None, Options(ALL_REVISIONS, call_tools=True, timeout=TIMEOUT))
    assert [r.revision for r in report.revisions] == [*ALL_REVISIONS, "negotiation"]
    assert all(r.accepted for r in report.revisions[:-1]), [r.stopped for r in report.revisions]
    assert _problems(report) == []
    # Every check ran somewhere (the baseline exercises them all) but HTTP's.
    ran = {f.check for f in report.findings() if f.outcome is Outcome.PASSED}
    assert {"protocol.pagination", "protocol.progress", "surface.call", "surface.read"} <= ran


def test_baseline_is_clean_over_http() -> None:
    report = anyio.run(_check_http, None, Options(ALL_REVISIONS, call_tools=True, timeout=TIMEOUT))
    assert all(r.accepted for r in report.revisions[:-1]), [r.stopped for r in report.revisions]
    assert _problems(report) == []
    ran = {f.check for f in report.findings() if f.outcome is Outcome.PASSED}
    assert {"http.status", "http.headers", "http.session"} <= ran


def test_a_foreign_origin_accepted_before_2025_11_25_breaks_the_validation_rule() -> None:
    """2025-11-25 and 2026-07-28 name the answer (403); the earlier transports say only
    that the Origin MUST be validated: a foreign Origin served breaks that."""
    options = Options(revisions=("2026-07-28", "2025-11-25", "2025-06-18"), timeout=TIMEOUT)
    report = anyio.run(_check_http, "http-origin-ignored", options)
    origin = {f.revision: f for f in report.findings() if f.check == "http.origin"}
    assert {r: f.outcome for r, f in origin.items()} == dict.fromkeys(
        ("2026-07-28", "2025-11-25", "2025-06-18"), Outcome.FAILED
    )
    assert "MUST respond with HTTP 403 Forbidden" in origin["2025-11-25"].why
    assert "Security & Endpoint 1" in origin["2026-07-28"].why
    assert "MUST validate the Origin header" in origin["2025-06-18"].why
    assert "was accepted (200)" in origin["2025-06-18"].why


def test_the_baseline_refuses_a_foreign_origin_with_403() -> None:
    options = Options(revisions=("2026-07-28", "2025-11-25"), timeout=TIMEOUT)
    report = anyio.run(_check_http, None, options)
    origin = [f for f in report.findings() if f.check == "http.origin"]
    assert [(f.outcome, f.why) for f in origin] == [
        (Outcome.PASSED, "server/discover with Origin: http://mcpspec-check.invalid got 403"),
        (Outcome.PASSED, "initialize with Origin: http://mcpspec-check.invalid got 403"),
    ]


def test_a_never_minted_session_id_cites_the_rule_a_client_recovers_by() -> None:
    options = Options(revisions=("2025-11-25",), timeout=TIMEOUT)
    report = anyio.run(_check_http, "http-unknown-session-400", options)
    [finding] = [f for f in report.findings() if f.problem]
    assert "never minted was answered 400" in finding.why
    assert "no rule names the status" in finding.why and "Session Management 4" in finding.why
    assert "terminated session" in finding.why
    # The 400's body is an error without id: a refusal, not a dropped id.
    assert not any(f.check == "protocol.responses" and f.problem for f in report.findings())


def test_an_accepted_answer_with_id_null_is_a_failure_in_the_http_probes_too() -> None:
    options = Options(revisions=("2025-11-25",), timeout=TIMEOUT)
    report = anyio.run(_check_http, "http-id-null-on-unknown-session", options)
    problems = {(f.check, f.outcome) for f in report.findings() if f.problem}
    assert problems == {
        ("protocol.responses", Outcome.FAILED),
        ("http.session", Outcome.WARNING),
    }, _problems(report)
    [dropped] = [f for f in report.findings() if f.check == "protocol.responses" and f.problem]
    assert dropped.where == "POST /mcp (ping, HTTP 200)" and dropped.probe == "HTTP probes"


def test_a_server_that_wants_a_token_is_unreachable_saying_pass_header() -> None:
    async def check(headers: dict[str, str]) -> Report:
        args = [SCRIPT, "--defect", "http-token-required"]
        async with http_server(args) as url:
            target = HttpTarget(url, headers=headers)
            return await check_server(target, Options(("2025-11-25",), timeout=TIMEOUT))

    with pytest.raises(Unreachable) as raised:
        anyio.run(check, {})
    message = str(raised.value)
    assert message.startswith("initialize was answered HTTP 401 Unauthorized")
    assert "(WWW-Authenticate: Bearer)" in message
    assert "pass it with --header 'Authorization: Bearer TOKEN'" in message
    with pytest.raises(Unreachable, match="refused the Authorization header"):
        anyio.run(check, {"Authorization": "Bearer wrong"})
    report = anyio.run(check, {"Authorization": "Bearer t"})
    assert _problems(report) == []


def test_nothing_listening_is_unreachable_not_a_protocol_verdict() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    target = HttpTarget(f"http://127.0.0.1:{port}/mcp", timeout=TIMEOUT)
    with pytest.raises(Unreachable, match=r"could not reach the server .*cannot connect"):
        anyio.run(check_server, target, Options(timeout=TIMEOUT))


def _calls(defect: str | None, revision: str = "2025-11-25") -> Report:
    options = Options(revisions=(revision,), call_tools=True, timeout=TIMEOUT)
    return anyio.run(_check, defect, options)


def test_a_task_required_tool_refused_without_a_task_passes() -> None:
    report = _calls("task-required-refused")
    assert _problems(report) == []
    [tasks] = [
        f for f in report.findings() if f.check == "protocol.tasks" and "without a task" in f.why
    ]
    assert tasks.outcome is Outcome.PASSED and "tool 'add'" in tasks.why


def test_a_task_required_tool_served_names_the_tool_and_the_rule() -> None:
    report = _calls("task-required-served")
    [tasks] = [f for f in report.findings() if f.problem]
    assert tasks.subject == "tool 'add'" and tasks.probe == "surface"
    assert "Servers MUST return a -32601" in tasks.why
    assert "called without a task it was answered a result (served)" in tasks.why


def _call_summary(report: Report) -> str:
    [summary] = [
        f for f in report.findings() if f.check == "surface.call" and f.outcome is Outcome.PASSED
    ]
    return summary.why


def test_the_tool_call_summary_adds_up() -> None:
    summary = _call_summary(_calls(None))
    assert summary.startswith("3 tools: ")
    numbers = [int(part.split()[0]) for part in summary.split(": ", 1)[1].split(", ")]
    assert sum(numbers) == 3, summary
    assert "task-required" not in _call_summary(_calls(None, "2025-06-18"))
    refused = _call_summary(_calls("task-required-refused"))
    assert "1 task-required (called without a task)" in refused


def test_is_error_results_are_counted_as_tool_errors() -> None:
    report = _calls("tool-error")
    assert _problems(report) == []
    assert _call_summary(report) == "3 tools: 3 tool errors (isError)"


def test_the_python_api_checks_a_command_or_a_url() -> None:
    """What a server author writes in their own test suite."""
    from mcpspec.check import check_server as api_check_server
    from mcpspec.check import render

    async def by_command() -> Report:
        command = [sys.executable, SCRIPT, "--defect", "ping-broken"]
        return await api_check_server(command=command, options=Options(("2025-06-18",)))

    report = anyio.run(by_command)
    assert report.exit_status() == 1
    assert {f.check for f in report.findings() if f.problem} == {"protocol.ping"}
    assert "protocol.ping" in render(report)

    async def by_url() -> Report:
        async with http_server([SCRIPT]) as url:
            return await api_check_server(url=url, options=Options(("2025-11-25",)))

    assert anyio.run(by_url).exit_status(strict_warnings=True) == 0


@pytest.mark.parametrize(
    "named",
    [
        {},
        {"command": ["x"], "url": "http://127.0.0.1:1/mcp"},
        {"command": "python server.py"},
        {"url": "http://127.0.0.1:1/mcp", "env": {}},
        {"command": ["x"], "headers": {}},
    ],
)
def test_the_python_api_wants_one_server(named: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        anyio.run(lambda: check_server(**named))  # type: ignore[arg-type]


def test_record_keeps_the_traffic_findings_cite_and_validate_reads_it_back(
    tmp_path: Path,
) -> None:
    import json

    from mcpspec.check.validate import validate_file

    options = Options(("2025-06-18",), timeout=TIMEOUT, record=tmp_path)
    report = anyio.run(_check, "banner", options)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [
        "01-2025-06-18-check.jsonl",
        "02-negotiation-offer.jsonl",
        "03-negotiation-offer.jsonl",
    ]
    lines = [json.loads(line) for line in (tmp_path / names[0]).read_text().splitlines()]
    assert lines[0]["header"]["offered"] == "2025-06-18"
    assert lines[0]["header"]["transport"] == "stdio"
    assert {line["from"] for line in lines[1:]} == {"client", "server"}
    assert all(isinstance(line["time"], float) and line["where"] for line in lines[1:])
    times = [line["time"] for line in lines[1:]]
    assert times == sorted(times)
    # What the finding cites is in the recording.
    [banner] = [f for f in report.revisions[0].findings if f.problem]
    assert banner.where == "stdout line 1"
    [recorded] = [line for line in lines if line.get("where") == "stdout line 1"]
    assert recorded == {
        "from": "server",
        "time": recorded["time"],
        "where": "stdout line 1",
        "raw": "check-fixture 1.0.0 starting on stdio",
    }
    replayed = validate_file(tmp_path / names[0])
    assert replayed.revision == "2025-06-18" and replayed.accepted
    [wire] = [f for f in replayed.findings if f.check == "wire.message" and f.problem]
    assert "(stdout line 1)" in wire.where and "check-fixture" in wire.why
    # The checker's probes are the client's to answer for in validate.
    early = [f for f in replayed.findings if f.check == "protocol.lifecycle"]
    assert early and all("client broke" in f.why for f in early)


def test_record_over_http_names_the_exchanges(tmp_path: Path) -> None:
    import json

    options = Options(("2025-11-25",), timeout=TIMEOUT, record=tmp_path)
    anyio.run(_check_http, None, options)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names[:2] == ["01-2025-11-25-check.jsonl", "02-2025-11-25-http-probes.jsonl"]
    check = [json.loads(line) for line in (tmp_path / names[0]).read_text().splitlines()]
    assert check[1]["where"] == "POST 1" and check[1]["message"]["method"] == "initialize"
    assert check[2]["where"].startswith("POST 1 ") and check[2]["from"] == "server"
    probes = (tmp_path / names[1]).read_text()
    assert '"where":"POST 1 response (HTTP 200)"' in probes
