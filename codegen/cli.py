"""What ``mcpspec generate`` does: rebuild the revision modules from the pinned schemas.

The command line is defined in :mod:`mcpspec.cli.generate`, so that ``--help`` needs no
jinja2; this module runs it.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import tempfile
from pathlib import Path

from .generate import generate_all
from .render import GENERATED_HEADER

__all__ = ["run"]


def _extra_revisions(args: argparse.Namespace) -> dict[str, Path]:
    if args.revision is None and args.schema is None:
        return {}
    if args.revision is None or args.schema is None:
        raise SystemExit("mcpspec generate: --revision and --schema go together")
    return {args.revision: args.schema}


def _generated_files(folder: Path) -> set[str]:
    """The generated modules in ``folder``; hand-written ones (the package root's
    ``__init__.py``) lack the header."""
    return {
        p.name
        for p in folder.glob("*.py")
        if p.read_text(encoding="utf-8").startswith(GENERATED_HEADER)
    }


def _compare(expected: Path, actual: Path) -> list[str]:
    problems: list[str] = []
    names = sorted(_generated_files(expected) | _generated_files(actual))
    for name in names:
        a, b = expected / name, actual / name
        if not a.exists() or not b.exists():
            problems.append(f"{name}: only in {'the fresh run' if b.exists() else expected}")
            continue
        if a.read_bytes() != b.read_bytes():
            diff = difflib.unified_diff(
                a.read_text().splitlines(),
                b.read_text().splitlines(),
                f"committed/{name}",
                f"fresh/{name}",
                lineterm="",
                n=1,
            )
            problems.append("\n".join(list(diff)[:40]))
    return problems


def run(args: argparse.Namespace) -> int:
    """Carry out ``mcpspec generate`` with parsed arguments."""
    extra = _extra_revisions(args)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            reports = generate_all(tmp, args.schema_dir, extra)
            problems = _compare(args.out, Path(tmp))
        for report in reports:
            print(report.summary())
        if problems:
            print(f"\n{args.out} is not what the pinned schemas generate:", file=sys.stderr)
            print("\n\n".join(problems), file=sys.stderr)
            return 1
        print(f"{args.out}: up to date")
        return 0
    for report in generate_all(args.out, args.schema_dir, extra):
        print(report.summary())
    return 0
