"""The parts of one session, handed together to its receiving and sending parts (see
:mod:`.core` for what each does)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from .limits import Limits
from .pending import PendingTable
from .progress import ProgressTracker
from .state import Lifecycle
from .stateless import Subscriptions
from .terms import Terms
from .violations import Violations

__all__ = ["Parts"]


class Parts(NamedTuple):
    """The parts of one session."""

    terms: Terms
    life: Lifecycle
    pending: PendingTable
    progress: ProgressTracker
    subscriptions: Subscriptions
    violations: Violations
    limits: Limits
    #: Switches the session to another revision, rebuilding what depends on it.
    switch: Callable[[str], None]
