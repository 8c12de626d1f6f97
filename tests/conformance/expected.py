"""The conformance scenarios we do not pass, and why: one table.

Keyed by (suite version, run, scenario) as tests/test_conformance.py names them; each
entry lists the checks that fail (by the suite's check id; ``client-raised`` when our
client raised), the reason, and the words of the specification (or of the suite's
scenario, quoted) that the failure is about. The test asserts that exactly these checks
fail: a fix, or a new failure, changes the verdict and fails the test until the table
says so.

The OAuth scenarios (``auth/...``) are judged like the others, the authorization
extensions (DPoP, enterprise-managed authorization, workload identity) included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

__all__ = ["EXPECTED", "Expected"]


@dataclasses.dataclass(frozen=True)
class Expected:
    """Why a scenario fails: the failing check ids, the reason, the spec's words."""

    failing: frozenset[str]
    reason: str
    spec: str


EXPECTED: dict[tuple[str, str, str], Expected] = {}


def _add(
    runs: Iterable[tuple[str, str]], scenario: str, failing: Iterable[str], reason: str, spec: str
) -> None:
    for version, run in runs:
        EXPECTED[(version, run, scenario)] = Expected(frozenset(failing), reason, spec)


ALPHA = "0.2.0-alpha.12"
#: The alpha's server runs that reach the 2026-07-28 scenarios (its whole suite runs
#: them at their own wire too).
ALPHA_SERVER = ((ALPHA, "server"), (ALPHA, "server@2026-07-28"))
ALPHA_CLIENT = ((ALPHA, "client"), (ALPHA, "client@2026-07-28"))

# -- our server (the library and its HTTP app) ---------------------------------------------

_add(
    [("0.1.16", "server"), (ALPHA, "server")],
    "server-sse-polling",
    ["nothing-checked"],
    "the scenario (pending in the suite) looks for a server that closes a request's SSE "
    "stream early, after the priming event's retry, so that the client polls with "
    "Last-Event-ID; the app keeps the stream open until the answer (replay after a "
    "broken stream is tested in tests/test_http_app.py), so the scenario checks nothing",
    "2025-11-25 transports: the server 'MAY close the connection' after sending an "
    "event with an id and retry (polling is optional)",
)
#: The tasks extension (io.modelcontextprotocol/tasks, SEP-2663): not implemented (the
#: Server runs the tasks of 2025-11-25 only, which no scenario of the suite exercises).
_NO_TASKS = (
    "extension not implemented: the Server runs tasks in 2025-11-25 only, not the "
    "io.modelcontextprotocol/tasks extension of 2026-07-28 (SEP-2663): it declares no "
    "extension, tools/call is answered in the request, tasks/* are -32601"
)
_TASKS_SPEC = (
    "SEP-2663 (an extension: 'not required for any tier', SEP-1730; the suite does not score it)"
)
for _scenario, _failing in {
    "tasks-lifecycle": [
        "sep-2663-cancel-ack-empty-result",
        "sep-2663-result-type-task-on-create",
        "sep-2663-tasks-get-status-completed",
        "sep-2663-tasks-get-status-failed",
        "sep-2663-tasks-get-status-working",
        "sep-2663-tool-error-uses-completed-status",
        "tasks-cancel-terminal-idempotent-ack",
        "tasks-sync-tool-call",
    ],
    "tasks-capability-negotiation": [
        "sep-2663-server-rejects-undeclared-client",
        "sep-2663-tasks-methods-non-declaring",
        "tasks-extension-advertised",
        "tasks-per-request-meta-opt-in",
    ],
    "tasks-wire-fields": [
        "tasks-no-early-ttl-expiry",
        "tasks-no-related-task-meta-on-inlined-result",
        "tasks-wire-field-renames",
    ],
    "tasks-request-state-removal": ["tasks-request-state-removal-setup"],
    "tasks-mrtr-input": [
        "sep-2663-tasks-get-status-input-required",
        "tasks-mrtr-partial-fulfillment",
        "tasks-mrtr-tasks-update-resumes",
    ],
    "tasks-request-headers": [
        "sep-2663-routing-headers-accepted-on-tasks-get",
        "sep-2663-server-rejects-mismatched-mcp-name-on-tasks-get",
        "tasks-headers-tolerate-mcp-method-on-tools-call",
    ],
    "tasks-dispatch-and-envelope": [
        "sep-2663-durable-create-strong-consistency",
        "sep-2663-legacy-task-param-ignored",
        "sep-2663-tasks-get-invalid-task-id-32602",
        "tasks-immediate-result-shortcut",
        "tasks-result-type-complete-on-non-task-responses",
        "tasks-server-directed-creation-no-hint",
    ],
    # The suite skips its only check (its harness awaits a rewrite).
    "tasks-status-notifications": ["nothing-checked"],
    "tasks-required-task-error": ["sep-2663-server-returns-missing-capability-when-required"],
    "tasks-mrtr-composition": ["sep-2663-mrtr-synchronous-before-task-creation"],
}.items():
    _add(ALPHA_SERVER, _scenario, _failing, _NO_TASKS, _TASKS_SPEC)

# -- our client -----------------------------------------------------------------------------

for _scenario in (
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
):
    _add(
        [(ALPHA, "client")],
        _scenario,
        ["nothing-checked"],
        "extension not implemented: the client has no skills (SEP-2640) and never calls "
        "skills/list, so the suite skips every check",
        "SEP-2640 (an extension, not scored by the suite)",
    )
