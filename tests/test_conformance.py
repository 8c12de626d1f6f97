"""The official MCP conformance suite (``@modelcontextprotocol/conformance``) against
our server and our client, over Streamable HTTP.

Server leg: the suite drives the fixture server (tests/conformance/server.py: every
tool, resource and prompt its scenarios call, on our ``Server`` and its ASGI app).
Client leg: the suite runs tests/conformance/client.py (our ``Client.http``) against
its mock server of each scenario. Each pinned suite version runs its whole suite
(``--suite all``); 0.2.0-alpha.12 also runs what revision 2026-07-28 requires, at that
revision's wire (``--requirements 2026-07-28``); 0.1.16 runs the client leg both in
the client's default ``auto`` mode and in ``legacy`` mode. Each scenario of each run is
one test.

A scenario passes when no check the suite made failed, at least one succeeded (the
suite calls a run without checks a pass: ``nothing-checked`` here), and our client did
not raise (``client-raised``). The
scenarios we do not pass are listed, with the reason and the specification's words, in
tests/conformance/expected.py, and for those the test asserts that exactly the listed
checks fail, so that a fix (or a new failure) shows up. The OAuth scenarios
(``auth/...``) run our client with its OAuth client (tests/conformance/client.py).

``nox -s interop`` installs the suite versions and Node and runs these
(``pytest -m interop``); they skip, saying why, when MCPSPEC_NODE or
MCPSPEC_CONFORMANCE is not set.
"""

from __future__ import annotations

import functools
import re
import tempfile
from pathlib import Path

import pytest

from tests.conformance.expected import EXPECTED, Expected
from tests.conformance.suite import Run, Verdict, installed_suites, run_scenarios
from tests.conformance.verdicts import RUNS, judge

pytestmark = pytest.mark.interop

SUITES = installed_suites()
needs_suite = pytest.mark.skipif(
    not SUITES,
    reason="MCPSPEC_NODE and MCPSPEC_CONFORMANCE are not set: run `nox -s interop`",
)


def _cases() -> list[object]:
    cases: list[object] = []
    for version, runs in RUNS.items():
        suite = SUITES.get(version)
        if suite is None:
            continue
        for run in runs:
            for scenario in run.scenarios(suite):
                test_id = f"{version}-{run.name}-{scenario}"
                cases.append(pytest.param(version, run, scenario, id=test_id))
    return cases or [pytest.param("", Run("", "server"), "", id="suite-not-installed")]


@functools.cache
def _verdicts(version: str, run: Run) -> dict[str, Verdict]:
    """The verdicts of one whole run (run on first use, kept for the session)."""
    output = Path(tempfile.mkdtemp(prefix=f"conformance-{version}-{run.name}-"))
    return run_scenarios(SUITES[version], run, output)


@needs_suite
@pytest.mark.parametrize(("version", "run", "scenario"), _cases())
def test_scenario(version: str, run: Run, scenario: str) -> None:
    judge(_verdicts(version, run), version, run, scenario)


@needs_suite
def test_expected_failures_name_real_scenarios() -> None:
    """Every entry of the table names a run and a scenario that exist, so that a
    renamed or removed scenario leaves no stale excuse behind."""
    known: set[tuple[str, str, str]] = set()
    for version, runs in RUNS.items():
        suite = SUITES.get(version)
        if suite is not None:
            for run in runs:
                known.update((version, run.name, name) for name in run.scenarios(suite))
    stale = [key for key in EXPECTED if key[0] in SUITES and key not in known]
    assert not stale, f"entries of tests/conformance/expected.py for no scenario: {stale}"


def test_expected_table_is_well_formed() -> None:
    """Each entry names the failing checks, the reason, and the specification's words."""
    for key, entry in EXPECTED.items():
        assert isinstance(entry, Expected)
        assert entry.failing and entry.reason and entry.spec, key
        assert re.fullmatch(r"[\w.@-]+", key[1]) is not None, key
