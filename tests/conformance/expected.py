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

__all__ = ["EXPECTED", "EXPECTED_THROUGH_A_CLUSTER", "Expected"]


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
#: The tasks extension (io.modelcontextprotocol/tasks, SEP-2663): one scenario of ten.
_TASKS_SPEC = (
    "SEP-2663 (an extension: 'not required for any tier', SEP-1730; the suite does not score it)"
)
_add(
    ALPHA_SERVER,
    "tasks-status-notifications",
    ["nothing-checked"],
    "the suite skips the scenario's only check (its harness awaits a rewrite); the server "
    "sends no notifications/tasks, which the extension leaves optional",
    _TASKS_SPEC + ": servers 'MAY push status updates via notifications/tasks'",
)

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


#: Through several workers behind a balancer (``tests/test_cluster_conformance.py``):
#: what fails against one process fails there too, and nothing more.
EXPECTED_THROUGH_A_CLUSTER: dict[tuple[str, str, str], Expected] = dict(EXPECTED)
