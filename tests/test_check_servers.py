"""``mcpspec check`` against servers with one deliberate defect each
(``tests/check_servers/broken.py``): each defect is found by exactly the check meant for
it, at the right place, and the baseline server they all start from gets a clean bill in
every revision, over stdio and HTTP.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

import anyio
import pytest

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
    "served-before-initialize": ("protocol.lifecycle", "warning", "stdout line 1"),
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
}
#: Defects that show only when tools are called.
CALLING: Final = frozenset({"progress-not-increasing", "structured-content-mismatch"})


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


def test_every_defect_is_in_the_table() -> None:
    assert set(DEFECTS) == DEFECT_NAMES


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
