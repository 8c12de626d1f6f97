"""The short connection fuzz run of every test run: a fixed budget of seeded inputs into
each connection target (a stdio server fed mutated streams, the ASGI app fed mutated
requests, the client against a hostile server; see ``tests/fuzzing/``).

A failure no known fault explains fails the test, with the reproducer of its first
input. The known faults of issue 35 not yet fixed on this branch are listed, each with
the failures it causes, in ``tests/fuzzing/known_faults.py`` (``KNOWN_FAULTS``); the
long run is ``nox -s fuzz``.
"""

from __future__ import annotations

import pytest

from tests.fuzzing.connection_run import ConnectionReport, run_target

#: The seed of the short run: a failure it finds is reproduced from it and the index.
SEED = 35
#: Inputs per target (about 5 s, 3 s and 15 s).
BUDGET = {"stdio": 300, "asgi": 300, "client": 80}


@pytest.mark.parametrize("target", sorted(BUDGET))
def test_no_unknown_failure(target: str) -> None:
    report = ConnectionReport(SEED)
    run_target(report, target, BUDGET[target])
    assert report.inputs[target] == BUDGET[target]
    assert not report.new, report.summary()
