"""The faults of the connection layer already known (issue 35) and not yet fixed on
this branch: the connection fuzz run tolerates these, and only these.

Each entry matches the failures one known fault causes (by target, kind and where)
and names the issue's bullet. Once the fixes are merged, empty the list (``KNOWN_FAULTS:
tuple[KnownFault, ...] = ()``): the short run in ``tests/test_connection_fuzz.py`` then
fails on any of them, and the regression tests in
``tests/test_connection_fuzz_regressions.py`` lose their ``xfail`` marks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .conversation import Failure

__all__ = ["KNOWN_FAULTS", "KnownFault", "known_fault"]


@dataclass(frozen=True)
class KnownFault:
    """A known fault: its name, the issue's bullet, which failures it causes."""

    name: str
    bullet: str
    matches: Callable[[str, Failure], bool]


KNOWN_FAULTS: tuple[KnownFault, ...] = (
    KnownFault(
        "memory out of proportion to bytes",
        "Memory out of proportion to bytes: a request decodes to about 25x its size, and "
        "what is kept for a long time keeps all of it",
        lambda target, f: f.kind == "memory out of proportion to input",
    ),
    KnownFault(
        "an oversized line at max_requests_in_flight in 2026-07-28 goes unanswered",
        "Found by this fuzzing, not in the issue: on a 2026-07-28 stdio connection with "
        "max_requests_in_flight requests running, a line over the size limit is answered "
        "-32600 with id null, which the session refuses (logged at ERROR, nothing written)",
        lambda target, f: (
            target == "stdio" and f.kind == "ERROR logged" and "refused by the session" in f.where
        ),
    ),
)


def known_fault(target: str, failure: Failure) -> KnownFault | None:
    """The known fault ``failure`` of ``target`` is, if any."""
    for fault in KNOWN_FAULTS:
        if fault.matches(target, failure):
            return fault
    return None
