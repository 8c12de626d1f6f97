"""The terminal report of a check run, and its live progress line.

:func:`render` lays a :class:`~.findings.Report` out as plain text: per revision a table
of failures and passes (check, result, where, why), the warnings in a table of their
own, the skipped checks in one short list; then the last lines of the server's stderr
when it wrote any, and a summary line. Columns fit the given width: ``where`` is wrapped
within its column and ``why`` wrapped, a long one clipped after a few lines. Colour
(ANSI) only when asked for; :func:`write` asks for it when the stream is a terminal and
``NO_COLOR`` is unset.

Everything shown can come from the server under check, so control characters are shown
escaped (``\\x1b``), never written to the terminal.

:class:`Progress` is a :data:`Listener` of the run: a single status line on stderr,
rewritten in place, when stderr is a terminal; nothing otherwise.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any, Final, TextIO

from .catalog import CHECKS
from .findings import Finding, Outcome, Report, RevisionReport

__all__ = ["Progress", "clean", "render", "summary", "told", "use_color", "write"]

#: Lines of the server's stderr shown at most (the newest).
STDERR_LINES: Final = 20
#: Lines of one ``why`` shown at most; the rest is clipped.
WHY_LINES: Final = 6
#: At most this many lines for a heading or the list of skipped checks.
PLAIN_LINES: Final = 40
#: Below this room for ``where`` and ``why`` together, the table gives up columns and
#: stacks each finding.
_NARROW: Final = 40

_COLORS: Final = {
    Outcome.FAILED: "\x1b[31m",
    Outcome.WARNING: "\x1b[33m",
    Outcome.PASSED: "\x1b[32m",
    Outcome.SKIPPED: "\x1b[2m",
    Outcome.NOTE: "\x1b[36m",
}
_BOLD, _RESET = "\x1b[1m", "\x1b[0m"
#: Control characters, and lone surrogates (a non-UTF-8 file name or argument decoded
#: with surrogateescape), which a strict UTF-8 stream refuses to encode.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
#: Catalog order, for the passed rows.
_ORDER: Final = {check: index for index, check in enumerate(CHECKS)}


def use_color(stream: TextIO) -> bool:
    """Whether to colour output to ``stream``: a terminal, and ``NO_COLOR`` unset."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):
        return False


def clean(text: str) -> str:
    """``text`` with control characters and lone surrogates shown escaped, tabs and
    newlines as spaces."""
    text = text.replace("\t", " ").replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    """A control character as ``\\xNN``, a lone surrogate as ``\\uNNNN``."""
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def outcome(self, outcome: Outcome, text: str) -> str:
        return f"{_COLORS[outcome]}{text}{_RESET}" if self.color else text

    def bold(self, text: str) -> str:
        return f"{_BOLD}{text}{_RESET}" if self.color else text


def _bounded_wrap(
    text: str, width: int, max_lines: int, *, escape: bool = False, **options: Any
) -> list[str]:
    """``textwrap.wrap(text, width, **options)`` kept to ``max_lines`` lines, the last
    one ending in ``…`` when something was left out (``escape``: the text passed
    through :func:`clean`). The text is cut first, one character past what ``max_lines``
    can hold: wrapping a huge value only to keep a few lines of it is slow."""
    limit = width * max_lines + 1
    cut = len(text) > limit
    text = clean(text[:limit]) if escape else text[:limit]
    lines = textwrap.wrap(text, width, break_long_words=True, **options) or [""]
    if len(lines) > max_lines or cut:
        lines = lines[:max_lines]
        last = lines[-1]
        lines[-1] = (last[: width - 1] if len(last) >= width else last) + "…"
    return lines


def _wrap(text: str, width: int, max_lines: int, indent: str = "") -> list[str]:
    return _bounded_wrap(
        text, width, max_lines, escape=True, subsequent_indent=indent, break_on_hyphens=False
    )


def _wrap_plain(text: str, width: int, max_lines: int = PLAIN_LINES) -> list[str]:
    return _bounded_wrap(text, width, max_lines, subsequent_indent="  ")


def _table(findings: Sequence[Finding], width: int, style: _Style) -> list[str]:
    """Rows of findings under a header, columns fitted to ``width``."""
    check_w = max(len("check"), *(len(f.check) for f in findings))
    result_w = len("warning")
    rest = width - check_w - result_w - 6  # three gaps of two spaces
    if rest < _NARROW:
        return _stacked(findings, width, style)
    wheres = [clean(f.where) for f in findings]
    longest = max(len("where"), *(len(w) for w in wheres))
    # Room for the longest unbreakable piece (a method, a JSON path) when it is not much.
    token = max((len(t) for w in wheres for t in w.split()), default=0)
    where_w = min(longest, max(rest * 2 // 5, min(token, rest // 2)))
    why_w = rest - where_w - 2
    head = f"{'check':<{check_w}}  {'result':<{result_w}}  {'where':<{where_w}}  why"
    out = [style.bold(head.rstrip()), "-" * min(width, len(head) + why_w - 3)]
    for finding in findings:
        where = _wrap(finding.where, where_w, WHY_LINES)
        why = _wrap(told(finding), why_w, WHY_LINES)
        for index in range(max(len(where), len(why))):
            check = finding.check if index == 0 else ""
            result = finding.outcome.value if index == 0 else ""
            cell_where = where[index] if index < len(where) else ""
            cell_why = why[index] if index < len(why) else ""
            line = (
                f"{check:<{check_w}}  "
                f"{style.outcome(finding.outcome, f'{result:<{result_w}}')}  "
                f"{cell_where:<{where_w}}  {cell_why}"
            )
            out.append(line.rstrip())
    return out


def _stacked(findings: Sequence[Finding], width: int, style: _Style) -> list[str]:
    """A narrow terminal: each finding as a few indented lines."""
    width = max(width, 20)
    out: list[str] = []
    for finding in findings:
        out.append(f"{finding.check}  {style.outcome(finding.outcome, finding.outcome.value)}")
        for label, text in (("where", finding.where), ("why", told(finding))):
            if text:
                for line in _wrap(f"{label}: {text}", width - 2, WHY_LINES, "  "):
                    out.append(f"  {line}")
    return out


def told(finding: Finding) -> str:
    """A finding's ``why`` with what it is about, how often it was seen and the probe
    that provoked it."""
    why = finding.why
    if finding.subject and finding.subject not in why:
        why = f"{finding.subject}: {why}"
    if finding.count > 1:
        why += f" (seen {finding.count} times; where: the first)"
    if finding.probe and not why.startswith("probe:"):
        why += f" [probe: {finding.probe}]"
    return why


def _sorted(findings: Iterable[Finding]) -> list[Finding]:
    """Failures in the order found, then passes in catalog order."""
    findings = list(findings)
    failed = [f for f in findings if f.outcome is Outcome.FAILED]
    passed = sorted(
        (f for f in findings if f.outcome is Outcome.PASSED), key=lambda f: _ORDER[f.check]
    )
    return failed + passed


def _heading(revision: RevisionReport) -> str:
    if revision.revision == "negotiation":
        name = "Negotiation (versions no revision has)"
    else:
        name = f"Revision {revision.revision}"
    if revision.source:
        name += f" ({clean(revision.source)})"
    states = []
    if revision.accepted is True:
        states.append("accepted")
    elif revision.accepted is False:
        states.append("not accepted")
    if revision.stopped:
        states.append(f"stopped: {clean(revision.stopped)}")
    return f"{name}: {'; '.join(states)}" if states else name


def _revision(revision: RevisionReport, width: int, style: _Style) -> list[str]:
    out = [style.bold(line) for line in _wrap_plain(_heading(revision), width)]
    main = _sorted(revision.findings)
    if main:
        out += _table(main, width, style)
    warnings = revision.problems(Outcome.WARNING)
    if warnings:
        out += ["", style.outcome(Outcome.WARNING, f"Warnings ({len(warnings)}):")]
        out += _table(warnings, width, style)
    notes = revision.problems(Outcome.NOTE)
    if notes:
        out += ["", style.outcome(Outcome.NOTE, f"Notes ({len(notes)}):")]
        out += _table(notes, width, style)
    skipped = revision.problems(Outcome.SKIPPED)
    if skipped:
        items = "; ".join(f"{f.check}" + (f" ({clean(f.why)})" if f.why else "") for f in skipped)
        out += ["", *_wrap_plain(f"Skipped: {items}", width)]
    if not revision.findings:
        out.append("(no findings)")
    return out


def _causes(report: Report, width: int, style: _Style) -> list[str]:
    """Every problem once per rule and cause, over all revisions: what to fix."""
    causes = report.causes()
    if not causes:
        return []
    title = _wrap_plain(f"To fix ({len(causes)} causes):", width)
    out = ["", *(style.bold(line) for line in title)]
    for cause in causes:
        finding = cause.finding
        level = CHECKS[finding.check].level.value
        seen = f"{cause.count}x in {', '.join(cause.revisions)}"
        head = f"- {finding.check} ({level}, {finding.outcome.value}; {seen}): "
        text = clean(head + told(finding))
        if finding.where:
            text += f" at {clean(finding.where)}"
        lines = _wrap_plain(text, width, WHY_LINES)
        out += [style.outcome(finding.outcome, line) for line in lines]
    return out


def _stderr(text: str, width: int) -> list[str]:
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    shown = lines[-STDERR_LINES:]
    title = f"Server stderr (last {len(shown)} of {len(lines)} lines):"
    if len(shown) == len(lines):
        title = f"Server stderr ({len(lines)} lines):"
    out = [title]
    for line in shown:
        line = clean(line)
        out.append("  " + (line if len(line) <= width - 2 else line[: max(width - 3, 1)] + "…"))
    return out


def summary(report: Report, *, color: bool = False, width: int = 0) -> str:
    """How many checks passed, failed, warned and were skipped, and the time: one line,
    broken between its parts when ``width`` is too narrow for it."""
    style = _Style(color)
    parts: list[tuple[str, str]] = []  # (plain text, text shown)
    words = [
        (Outcome.PASSED, "passed"),
        (Outcome.FAILED, "failed"),
        (Outcome.WARNING, "warnings"),
        (Outcome.SKIPPED, "skipped"),
    ]
    notes = report.count(Outcome.NOTE)
    if notes:
        words.append((Outcome.NOTE, "notes" if notes > 1 else "note"))
    for index, (outcome, word) in enumerate(words):
        count = report.count(outcome)
        text = f"{count} {word}"
        shown = style.outcome(outcome, text) if count else text
        comma = "," if index < len(words) - 1 else ""
        parts.append((text + comma, shown + comma))
    took = f"in {report.seconds:.2f} s"
    parts.append((took, took))
    lines: list[list[tuple[str, str]]] = [[]]
    for part in parts:
        length = sum(len(plain) + 1 for plain, _ in lines[-1]) + len(part[0])
        if lines[-1] and width and length > width:
            lines.append([])
        lines[-1].append(part)
    return "\n".join(" ".join(shown for _, shown in line) for line in lines)


def render(report: Report, *, width: int = 100, color: bool = False) -> str:
    """The whole report as text, ``width`` columns wide, coloured when ``color``."""
    style = _Style(color)
    width = max(width, 20)
    heading = f"mcpspec {report.command}: {clean(report.target)}"
    out = [style.bold(line) for line in _wrap_plain(heading, width)]
    out += _causes(report, width, style)
    for revision in report.revisions:
        out += ["", *_revision(revision, width, style)]
    stderr = _stderr(report.stderr, width)
    if stderr:
        out += ["", *stderr]
    out += ["", summary(report, color=color, width=width)]
    return "\n".join(out) + "\n"


def write(report: Report, stream: TextIO | None = None) -> None:
    """Print ``report`` to ``stream`` (default stdout), fitted to the terminal."""
    stream = stream or sys.stdout
    width = shutil.get_terminal_size((100, 24)).columns
    stream.write(render(report, width=width, color=use_color(stream)))
    stream.flush()


class Progress:
    """A run's :data:`~.run.Listener`: one status line on ``stream`` (default stderr),
    rewritten as the run goes, with the failures and warnings so far. Silent when the
    stream is not a terminal. Call :meth:`close` at the end to clear the line."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        try:
            self.enabled = bool(isatty and isatty())
        except (OSError, ValueError):
            self.enabled = False
        self.failed = 0
        self.warnings = 0
        self.shown = False

    def __call__(self, status: str, finding: Finding | None) -> None:
        if finding is not None:
            if finding.outcome is Outcome.FAILED:
                self.failed += 1
            elif finding.outcome is Outcome.WARNING:
                self.warnings += 1
        if not self.enabled:
            return
        width = shutil.get_terminal_size((80, 24)).columns - 1
        tally = f" [{self.failed} failed, {self.warnings} warnings]"
        text = clean(status)
        room = max(width - len(tally), 10)
        if len(text) > room:
            text = text[: room - 1] + "…"
        self.stream.write(f"\r{text}{tally}"[: width + 1] + "\x1b[K")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        """Clear the status line."""
        if self.enabled and self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False
