"""A fuzz run of the connection targets: inputs ``start .. start+count`` of a seed into
one target, each failure kept once with the first input that caused it.

Input ``i`` of target ``t`` with seed ``s`` is ``TARGETS[t].generate(s, i)`` whatever
else runs, so a failure is reproduced from its target, seed and index alone:
``TARGETS[t].check(TARGETS[t].generate(s, i))``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import asgi_target, client_target, stdio_target
from .conversation import Failure
from .known_faults import known_fault

__all__ = [
    "TARGETS",
    "ConnectionFinding",
    "ConnectionReport",
    "Target",
    "run_chunk",
    "run_target",
]


@dataclass(frozen=True)
class Target:
    """One target: how to make input ``i`` of a seed, and how to run and judge it."""

    name: str
    generate: Callable[[int, int], Any]
    check: Callable[[Any], list[Failure]]


TARGETS: dict[str, Target] = {
    "stdio": Target("stdio", stdio_target.generate, stdio_target.check),
    "asgi": Target("asgi", asgi_target.generate, asgi_target.check),
    "client": Target("client", client_target.generate, client_target.check),
}


@dataclass
class ConnectionFinding:
    """The first input that failed one way, and how often that failure came."""

    target: str
    failure: Failure
    seed: int
    index: int
    input: Any
    known: str | None
    count: int = 1

    def reproducer(self) -> str:
        """How to run the input again, and what it is."""
        return (
            f"[{self.target}] {self.failure.kind} ({self.failure.where}): {self.failure.detail}\n"
            f"  known fault: {self.known or 'NO (new)'}; {self.count} input(s)\n"
            f"  reproduce: TARGETS[{self.target!r}].check(TARGETS[{self.target!r}]"
            f".generate({self.seed}, {self.index}))\n"
            f"  input: {self.input.describe()[:1500]}"
        )


@dataclass
class ConnectionReport:
    """What a run of one or more targets did and found."""

    seed: int
    inputs: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    findings: dict[tuple[str, ...], ConnectionFinding] = field(default_factory=dict)

    @property
    def new(self) -> list[ConnectionFinding]:
        """The findings no known fault explains."""
        return [f for f in self.findings.values() if f.known is None]

    def merge(self, other: ConnectionReport) -> None:
        """Add ``other``'s counts and findings (the first input of a failure is kept)."""
        for name, count in other.inputs.items():
            self.inputs[name] = self.inputs.get(name, 0) + count
        for name, seconds in other.seconds.items():
            self.seconds[name] = max(self.seconds.get(name, 0.0), seconds)
        for key, found in other.findings.items():
            mine = self.findings.get(key)
            if mine is None:
                self.findings[key] = found
            else:
                if found.index < mine.index:
                    found.count += mine.count
                    self.findings[key] = found
                else:
                    mine.count += found.count

    def summary(self) -> str:
        """Every finding with its reproducer."""
        head = ", ".join(f"{n} {t} inputs" for t, n in self.inputs.items())
        lines = [f"{head}: {len(self.findings)} distinct failures, {len(self.new)} not known"]
        lines += [f.reproducer() for f in self.findings.values()]
        return "\n\n".join(lines)


def run_target(
    report: ConnectionReport, name: str, count: int, start: int = 0, seconds: float | None = None
) -> None:
    """Run inputs ``start .. start+count`` of target ``name`` into ``report`` (stopping
    early after ``seconds``, when given)."""
    target = TARGETS[name]
    began = time.perf_counter()
    done = 0
    for index in range(start, start + count):
        item = target.generate(report.seed, index)
        for failure in target.check(item):
            key = (name, *failure.key)
            found = report.findings.get(key)
            if found is None:
                fault = known_fault(name, failure)
                report.findings[key] = ConnectionFinding(
                    name, failure, report.seed, index, item, fault.name if fault else None
                )
            else:
                found.count += 1
        done += 1
        if seconds is not None and time.perf_counter() - began > seconds:
            break
    report.inputs[name] = report.inputs.get(name, 0) + done
    report.seconds[name] = report.seconds.get(name, 0.0) + time.perf_counter() - began


def run_chunk(work: tuple[int, str, int, int, float | None]) -> ConnectionReport:
    """One process's share of a run: ``(seed, target, start, count, seconds)``."""
    seed, name, start, count, seconds = work
    report = ConnectionReport(seed)
    run_target(report, name, count, start, seconds)
    return report
