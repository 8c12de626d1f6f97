"""The ``mcpspec`` command.

Subcommands, each defined in a module of its own that imports its dependencies only
when it runs, so that ``mcpspec --help`` and every subcommand's ``--help`` work with
nothing but the runtime installed:

* ``mcpspec generate``: rebuild the revision modules (needs ``mcpspec[codegen]``);
* ``mcpspec check``: check an MCP server, over stdio or HTTP (needs ``mcpspec[check]``);
* ``mcpspec validate``: check recorded traffic (transcripts) offline.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["main"]

#: Subcommand -> the module that defines its arguments (``add_arguments``) and runs it
#: (``run``), with its one-line help.
_COMMANDS = {
    "generate": ("mcpspec.cli.generate", "regenerate the revision modules from the schemas"),
    "check": ("mcpspec.cli.check", "check an MCP server against the protocol, rule by rule"),
    "validate": ("mcpspec.cli.validate", "check recorded MCP traffic (transcripts) offline"),
}


def parser() -> argparse.ArgumentParser:
    """The whole command line of ``mcpspec``."""
    top = argparse.ArgumentParser(
        prog="mcpspec",
        description="Typed bindings, checker and tools for the Model Context Protocol.",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module, help_text) in _COMMANDS.items():
        command = importlib.import_module(module)
        p = sub.add_parser(
            name,
            help=help_text,
            description=command.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.add_arguments(p)
        p.set_defaults(run=command.run)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``mcpspec`` with ``argv`` (default: this process's arguments); the exit status."""
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    status: int = args.run(args)
    return status
