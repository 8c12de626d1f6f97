"""The runs of the official conformance suite each pinned version makes, and how a
verdict is read: a scenario fails when a check the suite made failed, none succeeded
(the suite calls a run without checks a pass: ``nothing-checked`` here), or our client
raised (``client-raised``). Shared by the tests against one process
(tests/test_conformance.py) and through the cluster (tests/test_cluster_conformance.py)."""

from __future__ import annotations

from tests.conformance.expected import EXPECTED, Expected
from tests.conformance.suite import Run, Verdict

__all__ = ["CLIENT_RAISED", "NOTHING_CHECKED", "NOT_FAILED", "RUNS", "describe", "failed_checks"]

#: The runs of each suite version (the versions ``nox -s interop`` installs).
RUNS: dict[str, tuple[Run, ...]] = {
    "0.1.16": (
        Run("server", "server"),
        Run("client", "client"),
        Run("client-legacy", "client", client_mode="legacy", auth=False),
    ),
    "0.2.0-alpha.12": (
        Run("server", "server"),
        Run("server@2026-07-28", "server", requirements="2026-07-28"),
        # The OAuth scenarios once per version: 0.1.16 lists the 2025-03-26 ones, the
        # 2026-07-28 requirements (unscored extensions included) all the others.
        Run("client", "client", auth=False),
        Run("client@2026-07-28", "client", requirements="2026-07-28"),
    ),
}
#: Statuses that are not a failure of the implementation.
NOT_FAILED = frozenset({"SUCCESS", "INFO", "WARNING", "SKIPPED"})
#: The check ids standing for our client raising (a traceback on its stderr), and for
#: a scenario where no check succeeded (the suite calls that a pass).
CLIENT_RAISED = "client-raised"
NOTHING_CHECKED = "nothing-checked"


def failed_checks(verdict: Verdict) -> set[str]:
    """The ids of the checks ``verdict`` failed (see the module)."""
    failed = {check.id for check in verdict.checks if check.status not in NOT_FAILED}
    if "Traceback (most recent call last)" in verdict.client_stderr:
        failed.add(CLIENT_RAISED)
    if not any(check.status == "SUCCESS" for check in verdict.checks):
        failed.add(NOTHING_CHECKED)
    return failed


def describe(verdict: Verdict) -> str:
    """The checks of ``verdict``, one a line, and the end of the client's stderr."""
    lines = [f"  {c.status} {c.id}: {c.error or c.description}" for c in verdict.checks]
    if verdict.client_stderr:
        lines.append("  client stderr (end): " + verdict.client_stderr.strip()[-600:])
    return "\n".join(lines)


def judge(
    verdicts: dict[str, Verdict],
    version: str,
    run: Run,
    scenario: str,
    expectations: dict[tuple[str, str, str], Expected] = EXPECTED,
) -> None:
    """Assert that ``scenario`` of ``run`` passed, or failed exactly the checks
    ``expectations`` (those of ``tests/conformance/expected.py``) list for it."""
    verdict = verdicts.get(scenario)
    assert verdict is not None, f"the suite wrote no verdict for {scenario}"
    failed = failed_checks(verdict)
    expected = expectations.get((version, run.name, scenario))
    if expected is None:
        assert not failed, f"{scenario} failed {sorted(failed)}:\n{describe(verdict)}"
    else:
        assert failed == expected.failing, (
            f"{scenario} was expected to fail exactly {sorted(expected.failing)} "
            f"({expected.reason}); it failed {sorted(failed)}:\n{describe(verdict)}"
        )
