"""``mcpspec check`` on real servers, over stdio and HTTP (Streamable HTTP, and the
HTTP+SSE transport of 2024-11-05): the official Python SDK's (a clean bill in every
revision it speaks) and ``@modelcontextprotocol/server-everything`` (its real defects,
each named, and nothing else).

``nox -s interop`` installs the peers and runs these (``pytest -m interop``); they skip,
saying why, only when a peer is absent.
"""

from __future__ import annotations

import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpspec.check import Outcome, Report
from mcpspec.check.http import HttpTarget
from mcpspec.check.run import Options, check_server
from mcpspec.check.stdio import StdioTarget
from tests.interop_kit import (
    EVERYTHING,
    NODE,
    PEERS,
    everything,
    needs_everything,
    needs_http_sdk,
    needs_sdk,
    sdk_server,
)

pytestmark = [pytest.mark.interop]

HANDSHAKE = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
ALL = ("2026-07-28", *HANDSHAKE)


#: A (revision, check, outcome, where) row of a report's problems; ``where`` is a substring.
Problem = tuple[str, str, str, str]

#: What the SDK's stdio server does not do: answer malformed JSON (it logs it). JSON-RPC 2.0
#: answers an unparsable message with -32700; the checker files it as a warning.
SDK_STDIO_WARNINGS = {(r, "protocol.parse-error", "warning", "malformed JSON") for r in ALL}

_RESOURCE_LINK = "$.result.content[1].type"
#: server-everything's defects over stdio, with tools called: the same two SHOULD-level
#: deviations in every revision (it answers a tools/call without name with -32603 instead
#: of -32602, and ignores malformed JSON), ``resource_link`` content (2025-06-18 on) sent
#: to older clients, 2025-11-25 elicitation schemas sent to a 2025-06-18 client, and its
#: task-required tool served without a task (below). That it serves tools/list before
#: initialize is a note on the checker's probe, no defect: the rule binds the client.
#: 2025-11-25 tasks, Tool-Level Negotiation: 'If execution.taskSupport is "required",
#: clients MUST invoke the tool as a task. Servers MUST return a -32601 (Method not found)
#: error if a client does not attempt to do so.' server-everything's
#: simulate-research-query declares it and answers a call without a task with a result
#: (isError).
TASK_REQUIRED_SERVED = ("2025-11-25", "protocol.tasks", "failed", "")
EVERYTHING_STDIO = {
    TASK_REQUIRED_SERVED,
    *((r, "protocol.invalid-params", "warning", "stdout line") for r in HANDSHAKE),
    *((r, "protocol.parse-error", "warning", "malformed JSON") for r in HANDSHAKE),
    ("2025-03-26", "schema.message", "failed", _RESOURCE_LINK),
    ("2024-11-05", "schema.message", "failed", _RESOURCE_LINK),
    (
        "2025-06-18",
        "schema.message",
        "failed",
        "$.params.requestedSchema.properties.untitledMultipleSelectEnum.type",
    ),
}


def problems(report: Report) -> list[tuple[str, str, str, str]]:
    return [
        (r.revision, f.check, f.outcome.value, f.where)
        for r in report.revisions
        for f in r.findings
        if f.outcome in (Outcome.FAILED, Outcome.WARNING)
    ]


def assert_problems(report: Report, expected: set[Problem]) -> None:
    """Every problem matches one expected row (where as a substring), and every row is
    matched: the checker finds the defects and nothing else."""
    found = problems(report)
    unexpected = [p for p in found if not any(p[:3] == e[:3] and e[3] in p[3] for e in expected)]
    missing = [e for e in expected if not any(p[:3] == e[:3] and e[3] in p[3] for p in found)]
    detail = "\n".join(
        f"{r.revision} {f.outcome.value} {f.check} | {f.where} | {f.why}"
        for r in report.revisions
        for f in r.findings
        if f.problem
    )
    assert not unexpected and not missing, f"unexpected {unexpected}, missing {missing}\n{detail}"


def run(target: StdioTarget, **options: object) -> Report:
    return anyio.run(check_server, target, Options(**options))  # type: ignore[arg-type]


@needs_sdk
def test_sdk_stdio_server_gets_a_clean_bill_in_every_revision() -> None:
    target = StdioTarget(sys.executable, [str(PEERS / "sdk_server.py"), "--declare-logging"])
    report = run(target, call_tools=True, timeout=3.0)
    assert [r.revision for r in report.revisions if r.accepted] == list(ALL)
    assert_problems(report, SDK_STDIO_WARNINGS)
    assert report.exit_status() == 0
    assert report.exit_status(strict_warnings=True) == 1
    passed = {(r.revision, f.check) for r in report.revisions for f in r.findings}
    for revision in ALL:
        for check in ("schema.message", "surface.call", "surface.read", "protocol.negotiation"):
            assert (revision, check) in passed


@needs_sdk
def test_sdk_server_logging_without_declaring_logging_is_found() -> None:
    """The SDK declares ``logging`` only with a ``logging/setLevel`` handler, but its
    tools log without one: each log message is a capability failure, and nothing else."""
    target = StdioTarget(sys.executable, [str(PEERS / "sdk_server.py")])
    report = run(target, call_tools=True, timeout=3.0, revisions=("2025-11-25",))
    expected = {
        ("2025-11-25", "protocol.capabilities", "failed", "$.method"),
        ("2025-11-25", "protocol.parse-error", "warning", "malformed JSON"),
    }
    assert_problems(report, expected)
    [capability] = [f for f in report.findings() if f.check == "protocol.capabilities"]
    assert capability.why == "notifications/message without the logging capability declared"
    assert capability.count == 2  # the note tool logs twice: one bug, one finding, counted


@needs_everything
def test_server_everything_over_stdio_has_its_known_defects_and_no_others() -> None:
    assert NODE is not None and EVERYTHING is not None
    target = StdioTarget(NODE, [str(Path(EVERYTHING) / "dist" / "index.js"), "stdio"])
    report = run(target, call_tools=True)
    accepted = {r.revision: r.accepted for r in report.revisions if r.revision in ALL}
    assert accepted == {"2026-07-28": False, **dict.fromkeys(HANDSHAKE, True)}
    assert_problems(report, EVERYTHING_STDIO)
    assert report.exit_status() == 1
    notes = {(f.revision, f.check) for f in report.findings() if f.outcome is Outcome.NOTE}
    assert notes == {(r, "protocol.lifecycle") for r in HANDSHAKE}
    [tasks] = [f for f in report.findings() if f.check == "protocol.tasks" and f.problem]
    assert tasks.subject == "tool 'simulate-research-query'"


# -- over HTTP ---------------------------------------------------------------------------------

#: A hang guard for one whole check run (never a timed assertion).
HTTP_GUARD = 300


def run_http(server: AbstractAsyncContextManager[str], path: str, **options: Any) -> Report:
    """Start ``server`` (it yields its base URL), check the endpoint at ``path``, stop it."""

    async def check() -> Report:
        timeout = float(options.get("timeout", 10.0))
        with anyio.fail_after(HTTP_GUARD):
            async with server as base:
                target = HttpTarget(base + path, timeout=timeout)
                return await check_server(target, Options(**options))

    return anyio.run(check)


def outcomes(report: Report, check: str) -> set[tuple[str, str]]:
    """(revision, outcome) of every finding of ``check``."""
    return {
        (r.revision, f.outcome.value)
        for r in report.revisions
        for f in r.findings
        if f.check == check
    }


#: The SDK server's Streamable HTTP shapes: answers as SSE or JSON, with sessions or
#: without. Its ``wait`` tool blocks until cancelled, so calling tools costs one timeout
#: per revision: two shapes call them (one stateful, one stateless, one of each answer
#: format), the other two check the rest.
SDK_HTTP_SHAPES = {
    "sse-stateful": ((), True),
    "json-stateless": (("--json", "--stateless"), True),
    "json-stateful": (("--json",), False),
    "sse-stateless": (("--stateless",), False),
}


@needs_http_sdk
@pytest.mark.parametrize("shape", list(SDK_HTTP_SHAPES))
def test_sdk_streamable_http_server_gets_a_clean_bill_in_every_revision(shape: str) -> None:
    flags, call_tools = SDK_HTTP_SHAPES[shape]
    server = sdk_server("--declare-logging", *flags)
    report = run_http(server, "/mcp", call_tools=call_tools, timeout=3.0)
    assert [r.revision for r in report.revisions if r.accepted] == list(ALL)
    # Unlike over stdio, the SDK answers malformed JSON over HTTP (-32700): no warning.
    assert_problems(report, set())
    assert report.exit_status(strict_warnings=True) == 0
    checks = ["schema.message", "surface.read", "protocol.negotiation", "protocol.parse-error"]
    checks += ["http.status"]
    if call_tools:
        checks.append("surface.call")
    for revision in ALL:
        for check in checks:
            assert outcomes(report, check) >= {(revision, "passed")}, (revision, check)
    # Sessions are optional: without them, the session probes have nothing to probe,
    # and the only header judged in a handshake revision is the session id.
    stateful = "stateless" not in shape
    session = {(r, "passed" if stateful else "skipped") for r in HANDSHAKE}
    assert outcomes(report, "http.session") == {("2026-07-28", "passed"), *session}
    headers = {(r, "passed") for r in HANDSHAKE} if stateful else set()
    assert outcomes(report, "http.headers") == {("2026-07-28", "passed"), *headers}


@needs_http_sdk
def test_sdk_http_sse_server_gets_a_clean_bill_in_every_revision_it_speaks() -> None:
    """The HTTP+SSE transport is 2024-11-05's, but clients of later handshake revisions
    fall back to it too (their transports' backwards-compatibility section), and the SDK
    speaks every handshake revision over it; 2026-07-28 has no HTTP+SSE."""
    report = run_http(
        sdk_server("--declare-logging", "--sse"), "/sse", call_tools=True, timeout=3.0
    )
    assert [r.revision for r in report.revisions if r.accepted] == list(HANDSHAKE)
    assert_problems(report, set())
    assert report.exit_status(strict_warnings=True) == 0
    findings = list(report.findings())
    for revision in HANDSHAKE:
        passed = {
            f.check for f in findings if f.revision == revision and f.outcome is Outcome.PASSED
        }
        assert {"surface.call", "schema.message", "protocol.negotiation"} <= passed, revision
        # The answers came on the SSE stream: the link fell back to HTTP+SSE.
        assert any(
            f.where.startswith("SSE stream event") for f in findings if f.revision == revision
        )
    # The Streamable HTTP probes do not apply to an HTTP+SSE endpoint.
    http = [f for f in findings if f.check.startswith("http.")]
    assert http and all(f.outcome is Outcome.SKIPPED for f in http)


#: server-everything's defects over Streamable HTTP, with tools called. What it shares
#: with stdio: -32603 for a tools/call whose arguments are not an object (JSON-RPC 2.0:
#: -32602 is "invalid method parameter(s)"; a SHOULD-level check), ``resource_link``
#: content (2025-06-18 on) sent to 2024-11-05 and 2025-03-26 clients, and 2025-11-25
#: elicitation schemas (an ``array`` property) sent to a 2025-06-18 client. Unlike over
#: stdio, its HTTP transport answers malformed JSON (-32700), and the request before
#: initialize is not sent (over HTTP, a request without a session is http.session's).
#: It does not speak 2026-07-28 (no defect). Over HTTP only:
EVERYTHING_HTTP = {
    *((r, "protocol.invalid-params", "warning", "POST ") for r in HANDSHAKE),
    ("2025-03-26", "schema.message", "failed", _RESOURCE_LINK),
    ("2024-11-05", "schema.message", "failed", _RESOURCE_LINK),
    (
        "2025-06-18",
        "schema.message",
        "failed",
        "$.params.requestedSchema.properties.untitledMultipleSelectEnum.type",
    ),
    TASK_REQUIRED_SERVED,
    # (Its answer to the 2026-07-28 probe, 400 with -32000 "Server not initialized" and id
    # null, is an HTTP refusal: the transport refused the HTTP request before reading the
    # JSON-RPC one, which an error without id may say, as 2025-11-25 says of the 403 for
    # a foreign Origin. Every probe judges refusals so; an accepted answer with id null
    # is a failure.)
    # An initialize POSTed with a foreign Origin is served (200): 2025-11-25 transports,
    # Security Warning 1, "If the Origin header is present and invalid, servers MUST
    # respond with HTTP 403 Forbidden"; the earlier transports: "Servers MUST validate
    # the Origin header on all incoming connections to prevent DNS rebinding attacks".
    *((r, "http.origin", "failed", "POST /mcp") for r in HANDSHAKE),
    # A ping with a session id it never minted is answered 400 instead of 404 (a
    # SHOULD-level check: no rule names that status, but a client starts a new session
    # on 404 alone, Session Management 4; the MUST of Session Management 3 speaks of
    # terminated sessions).
    *((r, "http.session", "warning", "POST /mcp") for r in HANDSHAKE),
    # Not in the list, found here: after DELETE ended the session (200), a request
    # with its id is answered 400, where Session Management 3 says "the server MAY
    # terminate the session at any time, after which it MUST respond to requests
    # containing that session ID with HTTP 404 Not Found" (2025-03-26, 2025-06-18 and
    # 2025-11-25 transports; 2024-11-05 over Streamable HTTP follows 2025-03-26's).
    *((r, "http.status", "failed", "POST /mcp") for r in HANDSHAKE),
}
#: What each HTTP problem of server-everything is about (a part of its ``why``).
EVERYTHING_HTTP_WHY = {
    "protocol.tasks": "simulate-research-query' declares execution.taskSupport",
    "http.origin": "initialize with Origin: http://mcpspec-check.invalid was",
    "http.session": "Mcp-Session-Id the server never minted was answered 400",
    "http.status": "a ping on the session DELETE ended (200) was answered 400",
}

#: Over HTTP+SSE (2024-11-05) the same -32603 and ``resource_link`` defects, nothing else.
EVERYTHING_SSE = {
    ("2024-11-05", "protocol.invalid-params", "warning", "SSE stream event"),
    ("2024-11-05", "schema.message", "failed", _RESOURCE_LINK),
}


@needs_everything
def test_server_everything_over_streamable_http_has_its_known_defects_and_no_others() -> None:
    report = run_http(everything("streamableHttp"), "/mcp", call_tools=True)
    accepted = {r.revision: r.accepted for r in report.revisions if r.revision in ALL}
    assert accepted == {"2026-07-28": False, **dict.fromkeys(HANDSHAKE, True)}
    assert_problems(report, EVERYTHING_HTTP)
    for finding in report.findings():
        if finding.problem and finding.check in EVERYTHING_HTTP_WHY:
            assert EVERYTHING_HTTP_WHY[finding.check] in finding.why, finding
    assert report.exit_status() == 1


@needs_everything
def test_server_everything_over_http_sse_has_its_known_defects_and_no_others() -> None:
    report = run_http(everything("sse"), "/sse", call_tools=True, revisions=("2024-11-05",))
    assert [(r.revision, r.accepted) for r in report.revisions] == [
        ("2024-11-05", True),
        ("negotiation", None),
    ]
    assert_problems(report, EVERYTHING_SSE)
    assert any(f.where.startswith("SSE stream event") for f in report.findings())
    assert report.exit_status() == 1
