"""mcpspec.check: a strict checker of MCP servers (``mcpspec check``) and of recorded
traffic (``mcpspec validate``).

Every check has an id in :data:`CHECKS`; a run gives a :class:`Report` of
:class:`Finding` values, one per check, place and cause. In a server's own test suite::

    from mcpspec.check import check_server, render

    async def test_the_server_keeps_the_protocol() -> None:
        report = await check_server(command=["python", "server.py"])
        assert report.exit_status() == 0, render(report)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .catalog import CHECKS, Category, CheckInfo, Level
from .errors import CheckError, Unreachable
from .findings import Cause, Finding, Outcome, Report, RevisionReport
from .report_text import render

if TYPE_CHECKING:
    from .run import Options, check_server

__all__ = [
    "CHECKS",
    "Category",
    "Cause",
    "CheckError",
    "CheckInfo",
    "Finding",
    "Level",
    "Options",
    "Outcome",
    "Report",
    "RevisionReport",
    "Unreachable",
    "check_server",
    "render",
]


def __getattr__(name: str) -> Any:
    # The run needs the connection layer (anyio); validate and the reports do not.
    if name in ("Options", "check_server"):
        from . import run

        return getattr(run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
