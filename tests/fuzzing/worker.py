"""A process of the long mutation run: coverage starts before mcpspec is first imported
(so its import-time lines count), then the engine runs the chunks it was given."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Report

__all__ = ["long_profile", "worker"]


def long_profile() -> Any:
    """The sizes of the long run: the issue's full-size rows, batches of 20,000."""
    from .mutators import Profile

    return Profile(
        max_batch=20_000,
        max_string=250_000,
        max_depth=5_000,
        row_batch=20_000,
        row_method=10_000_000,
        max_bytes=1024 * 1024,
        row_share=0.005,
    )


def worker(job: tuple[int, list[tuple[str, int, int]], str, float | None]) -> Report:
    """Run the chunks ``(kind, start, stop)`` under coverage (data in ``data_file``)."""
    seed, chunks, data_file, seconds = job
    import coverage

    cov = coverage.Coverage(data_file=data_file, data_suffix=True, source_pkgs=["mcpspec.runtime"])
    cov.start()
    from .engine import Report, run

    total = Report(seed)
    start = time.perf_counter()
    profile = long_profile()
    for kind, first, stop in chunks:
        left = None if seconds is None else seconds - (time.perf_counter() - start)
        if left is not None and left <= 0:
            break
        span = range(first, stop)
        if kind == "codec":
            total.merge(run(seed, codec=span, profile=profile, seconds=left))
        else:
            total.merge(run(seed, sessions=span, profile=profile, seconds=left))
    total.seconds = time.perf_counter() - start
    cov.stop()
    cov.save()
    return total
