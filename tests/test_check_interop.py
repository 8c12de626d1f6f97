"""``mcpspec check`` on real servers: the official Python SDK's (a clean bill in every
revision it speaks) and ``@modelcontextprotocol/server-everything`` (its real defects,
each named, and nothing else).

``nox -s interop`` installs the peers and runs these (``pytest -m interop``); they skip,
saying why, only when a peer is absent.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import anyio
import pytest

from mcpspec.check import Outcome, Report
from mcpspec.check.run import Options, check_server
from mcpspec.check.stdio import StdioTarget

pytestmark = [pytest.mark.interop]

PEERS = Path(__file__).resolve().parent / "peers"
NODE = os.environ.get("MCPSPEC_NODE")
EVERYTHING = os.environ.get("MCPSPEC_SERVER_EVERYTHING")
HANDSHAKE = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
ALL = ("2026-07-28", *HANDSHAKE)

needs_sdk = pytest.mark.skipif(
    importlib.util.find_spec("mcp") is None,
    reason="the official Python SDK (mcp==2.3.0) is missing: run `nox -s interop`",
)
needs_everything = pytest.mark.skipif(
    not (NODE and EVERYTHING),
    reason="MCPSPEC_NODE and MCPSPEC_SERVER_EVERYTHING are not set: run `nox -s interop`",
)

#: A (revision, check, outcome, where) row of a report's problems; ``where`` is a substring.
Problem = tuple[str, str, str, str]

#: What the SDK's stdio server does not do: answer malformed JSON (it logs it). JSON-RPC 2.0
#: answers an unparsable message with -32700; the checker files it as a warning.
SDK_STDIO_WARNINGS = {(r, "protocol.parse-error", "warning", "malformed JSON") for r in ALL}

_RESOURCE_LINK = "$.result.content[1].type"
#: server-everything's defects over stdio, with tools called: the same three SHOULD-level
#: deviations in every revision (it serves tools/list before initialize, answers a
#: tools/call without name with -32603 instead of -32602, and ignores malformed JSON),
#: ``resource_link`` content (2025-06-18 on) sent to older clients, and 2025-11-25
#: elicitation schemas sent to a 2025-06-18 client.
EVERYTHING_STDIO = {
    *((r, "protocol.lifecycle", "warning", "stdout line 1") for r in HANDSHAKE),
    *((r, "protocol.invalid-params", "warning", "stdout line") for r in HANDSHAKE),
    *((r, "protocol.parse-error", "warning", "malformed JSON") for r in HANDSHAKE),
    ("2025-03-26", "schema.message", "failed", _RESOURCE_LINK),
    ("2024-11-05", "schema.message", "failed", _RESOURCE_LINK),
    ("2025-06-18", "schema.message", "failed", "$.params.requestedSchema.properties[...].type"),
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
    capability = [f for f in report.findings() if f.check == "protocol.capabilities"]
    assert {f.why for f in capability} == {
        "notifications/message without the logging capability declared"
    }
    assert len(capability) == 2  # the note tool logs twice


@needs_everything
def test_server_everything_over_stdio_has_its_known_defects_and_no_others() -> None:
    assert NODE is not None and EVERYTHING is not None
    target = StdioTarget(NODE, [str(Path(EVERYTHING) / "dist" / "index.js"), "stdio"])
    report = run(target, call_tools=True)
    accepted = {r.revision: r.accepted for r in report.revisions if r.revision in ALL}
    assert accepted == {"2026-07-28": False, **dict.fromkeys(HANDSHAKE, True)}
    assert_problems(report, EVERYTHING_STDIO)
    assert report.exit_status() == 1
