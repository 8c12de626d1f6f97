"""mcpspec.check: a strict checker of MCP servers (``mcpspec check``) and of recorded
traffic (``mcpspec validate``).

Every check has an id in :data:`CHECKS`; a run gives a :class:`Report` of
:class:`Finding` values, one per check and place.
"""

from __future__ import annotations

from .catalog import CHECKS, Category, CheckInfo, Level
from .findings import Finding, Outcome, Report, RevisionReport

__all__ = [
    "CHECKS",
    "Category",
    "CheckInfo",
    "Finding",
    "Level",
    "Outcome",
    "Report",
    "RevisionReport",
]
