"""The official conformance suite's server scenarios through the cluster as deployed
(``nox -s cluster``): the conformance fixture server (tests/conformance/server.py) as
three workers sharing their sessions in Debian's ``redis-server``, ``nginx`` in front
balancing round-robin with no affinity, and the suite driving the nginx endpoint. Each
scenario passes as it passes against one process: the same checks fail as the table
of expected failures (tests/conformance/expected.py) lists for that run, and no other.

``nox -s cluster`` installs the suite versions and Node, as ``nox -s interop`` does.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import anyio
import pytest

from tests.cluster_stack import cluster_stack
from tests.conformance.expected import EXPECTED_THROUGH_A_CLUSTER
from tests.conformance.suite import SERVER_SCRIPT, Run, Verdict, installed_suites, run_scenarios
from tests.conformance.verdicts import RUNS, judge

pytestmark = pytest.mark.cluster

SUITES = installed_suites()
#: The server runs of each installed suite version.
SERVER_RUNS = {
    version: tuple(run for run in RUNS[version] if run.leg == "server") for version in SUITES
}
needs_suite = pytest.mark.skipif(
    not SUITES,
    reason="MCPSPEC_NODE and MCPSPEC_CONFORMANCE are not set: run `nox -s cluster`",
)


def _cases() -> list[object]:
    cases: list[object] = []
    for version, runs in SERVER_RUNS.items():
        for run in runs:
            for scenario in run.scenarios(SUITES[version]):
                cases.append(
                    pytest.param(version, run, scenario, id=f"{version}-{run.name}-{scenario}")
                )
    return cases or [pytest.param("", Run("", "server"), "", id="suite-not-installed")]


@functools.cache
def _verdicts(version: str, run: Run) -> dict[str, Verdict]:
    """The verdicts of one whole run through a cluster of its own (run on first use)."""
    output = Path(tempfile.mkdtemp(prefix=f"conformance-cluster-{version}-{run.name}-"))

    async def through_the_cluster() -> dict[str, Verdict]:
        async with cluster_stack(3, SERVER_SCRIPT) as stack:
            return await anyio.to_thread.run_sync(
                functools.partial(run_scenarios, SUITES[version], run, output, url=stack.url)
            )

    return anyio.run(through_the_cluster)


@needs_suite
@pytest.mark.parametrize(("version", "run", "scenario"), _cases())
def test_server_scenario_through_the_balancer(version: str, run: Run, scenario: str) -> None:
    judge(_verdicts(version, run), version, run, scenario, EXPECTED_THROUGH_A_CLUSTER)
