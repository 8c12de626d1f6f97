"""A fuzz run: many generated inputs into the codecs and the session states.

Input ``i`` of a run with generator seed ``s`` is ``Generator(s, profile).input(i, ...)``
whatever else runs, so a run can be split over processes by index ranges and any finding
can be regenerated from its index alone.

Codec inputs go to the codec of their seed's revision (a third of them to another
revision's). Session inputs go round-robin to the states of :data:`states.STATES`; a
session is reused until an input changes what the next check relies on (its phase,
revision, pending ids) or it took :data:`REUSE` inputs, then built afresh. One input in
:data:`DEEP_EVERY` is fed from deep down the stack (see :func:`driver.at_depth`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import mcpspec
from mcpspec.runtime import Codec

from .driver import Problem, check_decode, check_receive, signature
from .mutators import FuzzInput, Generator, Profile
from .states import STATES, Session, State

__all__ = ["Finding", "Report", "reproducer", "run"]

#: Inputs a session takes before it is built afresh, however calm they were.
REUSE = 64
#: One input in this many is fed with only a few frames left on the stack.
DEEP_EVERY = 100
#: Session inputs are numbered from here, so they differ from the codec inputs.
SESSION_OFFSET = 1 << 40


@dataclass
class Finding:
    """The first input that broke an invariant in one way, and how often it happened."""

    problem: Problem
    target: str
    index: int
    input: FuzzInput
    deep: bool
    count: int = 1


@dataclass
class Slowest:
    """The input that took longest in one target."""

    seconds: float = 0.0
    target: str = ""
    input: FuzzInput | None = None


@dataclass
class Report:
    """What a run did and found."""

    seed: int
    codec_inputs: int = 0
    session_inputs: int = 0
    seconds: float = 0.0
    findings: dict[tuple[str, ...], Finding] = field(default_factory=dict)
    slowest: Slowest = field(default_factory=Slowest)

    @property
    def inputs(self) -> int:
        """Inputs run, codec and sessions together."""
        return self.codec_inputs + self.session_inputs

    @property
    def escapes(self) -> int:
        """Inputs that broke an invariant (each counted once per problem)."""
        return sum(f.count for f in self.findings.values())

    def add(self, problem: Problem, target: str, index: int, item: FuzzInput, deep: bool) -> None:
        key = (target.split(" ")[0], *problem.key)
        found = self.findings.get(key)
        if found is None:
            self.findings[key] = Finding(problem, target, index, item, deep)
        else:
            found.count += 1

    def timed(self, seconds: float, target: str, item: FuzzInput) -> None:
        if seconds > self.slowest.seconds:
            self.slowest = Slowest(seconds, target, item)

    def merge(self, other: Report) -> None:
        """Add ``other``'s counts and findings (the first finding of a kind is kept)."""
        self.codec_inputs += other.codec_inputs
        self.session_inputs += other.session_inputs
        self.seconds = max(self.seconds, other.seconds)
        for key, found in other.findings.items():
            mine = self.findings.get(key)
            if mine is None:
                self.findings[key] = found
            else:
                mine.count += found.count
        if other.slowest.seconds > self.slowest.seconds:
            self.slowest = other.slowest

    def summary(self) -> str:
        """Every finding with its reproducer, for a failing test or the results file."""
        lines = [
            f"{self.inputs} inputs ({self.codec_inputs} codec, {self.session_inputs} session), "
            f"{len(self.findings)} distinct problems, {self.escapes} failing inputs"
        ]
        for finding in self.findings.values():
            lines.append(reproducer(finding, self.seed))
        return "\n\n".join(lines)


def _shown(data: bytes, most: int = 400) -> str:
    if len(data) <= most:
        return repr(data)
    return f"{data[: most // 2]!r} ... {data[-most // 4 :]!r}"


def reproducer(finding: Finding, seed: int) -> str:
    """A finding as text: the problem, the target, the input and how to regenerate it."""
    p = finding.problem
    item = finding.input
    digest = hashlib.sha256(item.data).hexdigest()[:16]
    where = f" at {p.where}" if p.where else ""
    deep = " (called from deep down the stack)" if finding.deep else ""
    return (
        f"* {p.kind}: {p.exception}{where} ({finding.count}x)\n"
        f"  target: {finding.target}{deep}\n"
        f"  detail: {p.detail}\n"
        f"  input ({len(item.data)} bytes, sha256 {digest}): {_shown(item.data)}\n"
        f"  made by: {item.describe()}\n"
        f"  regenerate: Generator({seed}).input({finding.index}, revision={item.revision!r}, "
        f"...) (see engine.run)"
    )


def _codec_inputs(report: Report, gen: Generator, indices: Iterable[int], deadline: float) -> None:
    codecs: dict[str, Codec] = {r: mcpspec.codec(r) for r in mcpspec.REVISIONS}
    revisions = mcpspec.REVISIONS
    clock = time.perf_counter
    for index in indices:
        if index % 256 == 0 and clock() > deadline:
            break
        item = gen.input(index)
        revision = item.revision if index % 3 else revisions[index % len(revisions)]
        deep = index % DEEP_EVERY == 0
        start = clock()
        problem = check_decode(codecs[revision], item.data, deep=deep)
        elapsed = clock() - start
        report.codec_inputs += 1
        report.timed(elapsed, f"codec {revision}", item)
        if problem is not None:
            report.add(problem, f"codec {revision}", index, item, deep)


class _Pool:
    """One live session per state, rebuilt when used up or changed."""

    def __init__(self) -> None:
        self.live: dict[str, tuple[Session, tuple[Any, ...], int]] = {}

    def get(self, state: State) -> Session:
        found = self.live.get(state.name)
        if found is not None and found[2] < REUSE:
            session, sig, uses = found
            self.live[state.name] = (session, sig, uses + 1)
            return session
        session = state.build()
        self.live[state.name] = (session, signature(session), 1)
        return session

    def settle(self, state: State, used_up: bool) -> None:
        session, sig, _uses = self.live[state.name]
        if used_up or signature(session) != sig:
            del self.live[state.name]


def _session_inputs(
    report: Report, gen: Generator, indices: Iterable[int], deadline: float
) -> None:
    pool = _Pool()
    clock = time.perf_counter
    for index in indices:
        if index % 256 == 0 and clock() > deadline:
            break
        state = STATES[index % len(STATES)]
        item = gen.input(SESSION_OFFSET + index, revision=state.revision, sender=state.peer)
        session = pool.get(state)
        deep = index % DEEP_EVERY == 1
        start = clock()
        problems, used_up = check_receive(session, item.data, index, deep=deep)
        elapsed = clock() - start
        report.session_inputs += 1
        report.timed(elapsed, state.name, item)
        for problem in problems:
            report.add(problem, state.name, SESSION_OFFSET + index, item, deep)
        pool.settle(state, used_up)


def run(
    seed: int,
    *,
    codec: range = range(0),
    sessions: range = range(0),
    profile: Profile | None = None,
    seconds: float | None = None,
) -> Report:
    """Run the codec inputs ``codec`` and the session inputs ``sessions`` (index ranges),
    stopping early after ``seconds`` (split evenly between the two)."""
    gen = Generator(seed, profile)
    report = Report(seed)
    start = time.perf_counter()
    budget = float("inf") if seconds is None else seconds
    share = budget * len(codec) / max(1, len(codec) + len(sessions))
    _codec_inputs(report, gen, codec, start + share)
    _session_inputs(report, gen, sessions, start + budget)
    report.seconds = time.perf_counter() - start
    return report
