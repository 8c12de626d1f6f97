"""``mcpspec generate``: rebuild the revision modules from the pinned schemas.

mcpspec generate                     # every pinned revision into generated/
mcpspec generate --out DIR           # ... into DIR
mcpspec generate --check             # fail if generated/ differs from a fresh run
mcpspec generate --revision 2027-01-01 --schema path/to/schema.json
"""

from __future__ import annotations

import argparse
import difflib
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .generate import generate_all

__all__ = ["main"]

#: The revision modules of a project checkout, relative to its root.
_GENERATED = Path("generated")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcpspec", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="regenerate the revision modules")
    gen.add_argument("--out", type=Path, default=_GENERATED, help="output folder")
    gen.add_argument(
        "--schema-dir",
        type=Path,
        help="folder of <revision>/schema.json (default: $MCPSPEC_SCHEMA_DIR, else "
        "../shared/mcp-schema, else download the pinned files)",
    )
    gen.add_argument("--revision", help="add this revision, from --schema")
    gen.add_argument("--schema", type=Path, help="schema.json of --revision")
    gen.add_argument(
        "--check", action="store_true", help="write nothing; fail if --out is not up to date"
    )
    return parser


def _extra_revisions(args: argparse.Namespace) -> dict[str, Path]:
    if args.revision is None and args.schema is None:
        return {}
    if args.revision is None or args.schema is None:
        raise SystemExit("mcpspec generate: --revision and --schema go together")
    return {args.revision: args.schema}


def _compare(expected: Path, actual: Path) -> list[str]:
    problems: list[str] = []
    names = sorted({p.name for p in expected.glob("*.py")} | {p.name for p in actual.glob("*.py")})
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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
