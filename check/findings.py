"""What a check run found: one :class:`Finding` per check and place, gathered in a
:class:`Report`.

A finding is the outcome of one check (named by its id in :data:`~.catalog.CHECKS`) at one
place: ``where`` is a JSON path inside a message (``$.result.tools[3].inputSchema``), a
line of the server's output (``stdout line 7``), a method (``tools/list``) or an HTTP
exchange (``POST /mcp``). ``why`` says what is wrong, or what was seen when it passed.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Final

from .catalog import CHECKS, Level

__all__ = ["MAX_PROBLEMS", "Cause", "Finding", "Outcome", "Report", "RevisionReport", "broken"]

#: Problems (failures and warnings) listed at most per check and revision; the rest are
#: counted in one more finding.
MAX_PROBLEMS: Final = 100


class Outcome(str, enum.Enum):
    """How a check came out at one place."""

    PASSED = "passed"
    #: A MUST-level rule is broken.
    FAILED = "failed"
    #: A SHOULD-level rule is broken: shown apart, fails only with ``--strict-warnings``.
    WARNING = "warning"
    #: The check could not run here (the server lacks the feature, or an earlier failure
    #: left nothing to check); ``why`` says which.
    SKIPPED = "skipped"
    #: What a probe provoked on purpose and the specification allows: said, never held
    #: against the server.
    NOTE = "note"


@dataclass(frozen=True)
class Finding:
    """The outcome of check ``check`` at ``where``, for protocol revision ``revision``.

    ``probe`` names the probe that provoked it (``""``: none in particular), ``subject``
    the tool, resource or prompt it is about, and ``count`` how many times the same rule
    broke for the same cause in this revision (``where`` is the first place)."""

    check: str
    outcome: Outcome
    where: str = ""
    why: str = ""
    revision: str | None = None
    probe: str = ""
    subject: str = ""
    count: int = 1

    def __post_init__(self) -> None:
        if self.check not in CHECKS:
            raise ValueError(f"unknown check {self.check!r}")

    @property
    def problem(self) -> bool:
        """Whether this finding is a failure or a warning."""
        return self.outcome in (Outcome.FAILED, Outcome.WARNING)


def broken(check: str, where: str, why: str, revision: str | None = None) -> Finding:
    """A finding of a broken rule: a failure for a MUST rule, a warning for a SHOULD."""
    outcome = Outcome.FAILED if CHECKS[check].level is Level.MUST else Outcome.WARNING
    return Finding(check, outcome, where, why, revision)


@dataclass
class RevisionReport:
    """Every finding of one protocol revision, on one fresh connection (or, for
    ``validate``, one transcript)."""

    revision: str
    findings: list[Finding] = field(default_factory=list)
    #: Whether the server accepted the revision; ``None`` until negotiation is done.
    accepted: bool | None = None
    #: Why the revision was not checked further, when it was not.
    stopped: str = ""
    #: What was judged, when not the run's target (``validate``: the file).
    source: str = ""
    #: How long the revision's check took, and each of its probes (by name).
    seconds: float = 0.0
    probe_seconds: dict[str, float] = field(default_factory=dict)

    #: Problems filed per check, and where the finding counting those not listed is.
    _problems: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    _unlisted_at: dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    #: Where the finding of each (check, outcome, why, probe, subject) is.
    _causes: dict[tuple[str, Outcome, str, str, str], int] = field(
        default_factory=dict, repr=False, compare=False
    )

    def add(self, finding: Finding) -> bool:
        """Keep ``finding``; whether it is listed as itself (``False``: it is counted in
        an earlier finding of the same rule and cause, or in the one finding that stands
        for a check's problems past :data:`MAX_PROBLEMS`)."""
        if finding.problem:
            key = (finding.check, finding.outcome, finding.why, finding.probe, finding.subject)
            at = self._causes.get(key)
            if at is not None:
                # One bug, many messages: one finding, counted.
                first = self.findings[at]
                self.findings[at] = replace(first, count=first.count + finding.count)
                return False
            filed = self._problems[finding.check] = self._problems.get(finding.check, 0) + 1
            if filed > MAX_PROBLEMS:
                self._unlisted(finding, filed - MAX_PROBLEMS)
                return False
            self._causes[key] = len(self.findings)
        self.findings.append(finding)
        return True

    def _unlisted(self, finding: Finding, count: int) -> None:
        # A server can break one rule with every message it sends: past the cap, one
        # finding counts the rest, so a flood grows a number, not the report.
        summary = Finding(
            finding.check,
            finding.outcome,
            "",
            f"{count} more {finding.outcome.value} findings of this check are not listed: "
            f"only the first {MAX_PROBLEMS} are",
            finding.revision,
        )
        at = self._unlisted_at.get(finding.check)
        if at is None:
            self._unlisted_at[finding.check] = len(self.findings)
            self.findings.append(summary)
        else:
            self.findings[at] = summary

    def problems(self, outcome: Outcome) -> list[Finding]:
        return [f for f in self.findings if f.outcome is outcome]


@dataclass
class Cause:
    """One broken rule for one cause, over a whole run: its first finding, how many times
    it was seen, and in which revisions."""

    finding: Finding
    count: int
    revisions: list[str]


@dataclass
class Report:
    """A whole run: the target, each revision's findings and the server's stderr."""

    target: str
    revisions: list[RevisionReport] = field(default_factory=list)
    #: The command that made it (``check`` or ``validate``), for the report's heading.
    command: str = "check"
    #: What the server wrote on stderr (stdio targets), newest bytes kept; never judged.
    stderr: str = ""
    started: float = field(default_factory=time.time)
    seconds: float = 0.0

    def findings(self) -> Iterator[Finding]:
        for revision in self.revisions:
            yield from revision.findings

    def count(self, outcome: Outcome) -> int:
        return sum(1 for f in self.findings() if f.outcome is outcome)

    def causes(self) -> list[Cause]:
        """Every problem once per (check, outcome, why, probe, subject) over all
        revisions, failures first, each with its count and the revisions it was seen in."""
        causes: dict[tuple[str, Outcome, str, str, str], Cause] = {}
        for revision in self.revisions:
            for f in revision.findings:
                if not f.problem:
                    continue
                key = (f.check, f.outcome, f.why, f.probe, f.subject)
                cause = causes.get(key)
                if cause is None:
                    causes[key] = Cause(f, f.count, [revision.revision])
                    continue
                cause.count += f.count
                if revision.revision not in cause.revisions:
                    cause.revisions.append(revision.revision)
        return sorted(causes.values(), key=lambda c: c.finding.outcome is not Outcome.FAILED)

    def exit_status(self, *, strict_warnings: bool = False) -> int:
        """0 when nothing failed (and, with ``strict_warnings``, nothing warned), else 1."""
        bad: Iterable[Outcome] = (
            (Outcome.FAILED, Outcome.WARNING) if strict_warnings else (Outcome.FAILED,)
        )
        return 1 if any(self.count(o) for o in bad) else 0
