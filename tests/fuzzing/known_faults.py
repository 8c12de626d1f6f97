"""The faults of the connection layer known and not yet fixed: the connection fuzz run
tolerates these, and only these (each entry matches the failures one fault causes, by
target, kind and where, and says what the fault is). Empty: every fault the fuzzing has
found is kept as a regression test in ``tests/test_connection_fuzz_regressions.py``
(strict ``xfail`` while it is listed here); a new one fails the run with its reproducer.
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


KNOWN_FAULTS: tuple[KnownFault, ...] = ()


def known_fault(target: str, failure: Failure) -> KnownFault | None:
    """The known fault ``failure`` of ``target`` is, if any."""
    for fault in KNOWN_FAULTS:
        if fault.matches(target, failure):
            return fault
    return None
