"""Rebuild the revision modules from the pinned schemas.

  mcpspec generate                     # every pinned revision into generated/
  mcpspec generate --out DIR           # ... into DIR
  mcpspec generate --check             # fail if generated/ differs from a fresh run
  mcpspec generate --revision 2027-01-01 --schema path/to/schema.json

Needs the generator's dependencies: pip install 'mcpspec[codegen]'.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .reports import missing

__all__ = ["add_arguments", "run"]

#: The revision modules of a project checkout, relative to its root.
GENERATED = Path("generated")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=GENERATED, help="output folder")
    parser.add_argument(
        "--schema-dir",
        type=Path,
        help="folder of <revision>/schema.json (default: $MCPSPEC_SCHEMA_DIR, else "
        "../shared/mcp-schema, else download the pinned files)",
    )
    parser.add_argument("--revision", help="add this revision, from --schema")
    parser.add_argument("--schema", type=Path, help="schema.json of --revision")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; fail if --out is not up to date"
    )


def run(args: argparse.Namespace) -> int:
    try:
        from mcpspec.codegen.cli import run as generate
    except ImportError as exc:
        raise missing("generate", "the generator's dependencies", "codegen", exc) from None
    return generate(args)
