"""Check an MCP server against the protocol, rule by rule.

  mcpspec check https://example.com/mcp                 # Streamable HTTP (or HTTP+SSE)
  mcpspec check --header "Authorization: Bearer T" https://example.com/mcp
  mcpspec check -- python server.py --port 0            # a stdio server: its command line
  mcpspec check --revision 2025-06-18 --json out.json --junit out.xml -- node server.js

Every revision (or each --revision) is tried on a fresh connection; the report shows,
per revision, each check with its result, where and why. Exit status: 0 when nothing
failed (warnings fail only with --strict-warnings), 1 when something did, 2 for a usage
error or a server that could not be reached (nothing listens, the command exits at once,
the server wants a token): never a protocol verdict. Tools are called only with
--call-tools (they may have side effects).

Needs the checker's dependencies: pip install 'mcpspec[check]'.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
from typing import Any

from .reports import add_report_arguments, missing, write_files

__all__ = ["add_arguments", "run"]

_URL = re.compile(r"^https?://", re.IGNORECASE)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        nargs="*",
        metavar="TARGET",
        help="the URL of the server's HTTP endpoint, or -- COMMAND [ARGS ...] to start a "
        "stdio server",
    )
    parser.add_argument(
        "--revision",
        action="append",
        default=[],
        metavar="REVISION",
        help="check only this protocol revision (repeatable; default: every revision)",
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="an HTTP header for every request, e.g. for authentication (repeatable)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable for the stdio server (repeatable)",
    )
    parser.add_argument("--cwd", metavar="DIR", help="working directory of the stdio server")
    parser.add_argument(
        "--call-tools", action="store_true", help="call every tool (they may have side effects)"
    )
    parser.add_argument(
        "--lenient", action="store_true", help="go on checking past a failed negotiation"
    )
    parser.add_argument(
        "--record",
        metavar="DIR",
        help="record every connection's traffic in DIR, one JSON Lines transcript each "
        "(mcpspec validate reads them back)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long to wait for one answer (default: 10)",
    )
    add_report_arguments(parser)
    parser.set_defaults(usage_error=parser.error)


def _pairs(values: list[str], sep: str, what: str, fail: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        name, found, rest = value.partition(sep)
        if not found or not name.strip():
            fail(f"{what} {value!r} is not NAME{sep}VALUE")
        out[name.strip()] = rest.strip() if sep == ":" else rest
    return out


def _runnable(command: str, cwd: str | None, path: str | None) -> bool:
    if os.sep in command or (os.altsep and os.altsep in command):
        return os.path.isfile(os.path.join(cwd or os.curdir, command))
    return shutil.which(command, path=path) is not None


def target_of(args: argparse.Namespace) -> Any:
    """The :class:`~mcpspec.check.link.Target` the arguments name (usage errors exit 2)."""
    fail = args.usage_error
    if not args.target:
        fail("name the server: a URL, or -- COMMAND [ARGS...]")
    if not args.timeout > 0:
        fail("--timeout must be a positive number of seconds")
    if len(args.target) == 1 and _URL.match(args.target[0]):
        if args.env or args.cwd:
            fail("--env and --cwd are for a stdio server (a command), not a URL")
        from mcpspec.check.http import HttpTarget

        headers = _pairs(args.header, ":", "--header", fail)
        try:
            return HttpTarget(args.target[0], headers=headers, timeout=args.timeout)
        except ValueError as exc:
            fail(str(exc))
    if args.header:
        fail("--header is for an HTTP server (a URL), not a command")
    from mcpspec.check.stdio import StdioTarget

    env = {**os.environ, **_pairs(args.env, "=", "--env", fail)} if args.env else None
    command, *rest = args.target
    if not _runnable(command, args.cwd, (env or os.environ).get("PATH")):
        fail(f"command not found: {command!r} (put the server's command line after --)")
    return StdioTarget(command, rest, env=env, cwd=args.cwd)


def run(args: argparse.Namespace) -> int:
    try:
        import anyio
        import httpx  # noqa: F401  (the HTTP transport's)
        import jsonschema  # noqa: F401  (imported when the first schema is checked)

        import mcpspec
        from mcpspec.check.errors import CheckError, Unreachable
        from mcpspec.check.report_text import Progress, write
        from mcpspec.check.run import Options, check_server
    except ImportError as exc:
        raise missing("check", "the checker's dependencies", "check", exc) from None
    unknown = [r for r in args.revision if r not in mcpspec.REVISIONS]
    if unknown:
        args.usage_error(
            f"unknown revision {', '.join(unknown)}; known: {', '.join(mcpspec.REVISIONS)}"
        )
    target = target_of(args)
    progress = Progress()
    chosen = tuple(dict.fromkeys(args.revision))
    options = Options(
        **({"revisions": chosen} if chosen else {}),
        call_tools=args.call_tools,
        lenient=args.lenient,
        timeout=args.timeout,
        listener=progress,
        record=args.record,
    )
    try:
        report = anyio.run(check_server, target, options)
    except KeyboardInterrupt:
        print("mcpspec check: interrupted", file=sys.stderr)
        return 130
    except Unreachable as exc:
        print(f"mcpspec check: {exc}", file=sys.stderr)
        return 2
    except (OSError, CheckError) as exc:
        print(f"mcpspec check: cannot run the server: {exc}", file=sys.stderr)
        return 2
    finally:
        progress.close()
    write(report)
    return write_files(report, args)
