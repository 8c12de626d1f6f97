"""Running the official conformance suite (``@modelcontextprotocol/conformance``) and
reading its verdicts.

The suite is a Node CLI. ``nox -s interop`` installs each pinned version and says where
in ``MCPSPEC_CONFORMANCE`` (``version=path`` pairs, ``;``-separated, each path the
package's directory) and which Node runs it in ``MCPSPEC_NODE``.

A :class:`Run` is one way of running a set of scenarios against one side of ours. The
server leg is one invocation over the whole set against one fixture server. The client
leg is one invocation per scenario, a few at a time: the suite's own parallel mode
starts every client at once, which on a small machine outlasts its 30 s timeout.
Either way the suite writes one directory per scenario (``checks.json``, and for the
client leg the client's ``stderr.txt``), which :func:`read_results` gathers.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, Literal

__all__ = [
    "CLIENT_SCRIPT",
    "SERVER_SCRIPT",
    "Check",
    "Run",
    "Suite",
    "installed_suites",
    "read_results",
    "run_scenarios",
    "serve_fixture",
]

HERE: Final = Path(__file__).resolve().parent
SERVER_SCRIPT: Final = HERE / "server.py"
CLIENT_SCRIPT: Final = HERE / "client.py"
#: Hang guards (never timed assertions): one invocation of the suite, and the
#: fixture server's exit once asked to stop.
RUN_GUARD: Final = 300
STOP_GUARD: Final = 5
#: Client scenarios run at once.
CLIENT_WORKERS: Final = 3

Leg = Literal["server", "client"]


@dataclasses.dataclass(frozen=True)
class Suite:
    """One installed version of the suite: its ``version``, the Node that runs it, and
    the package directory (``dist/index.js`` is the CLI)."""

    version: str
    node: str
    package: Path

    def command(self, *args: str) -> list[str]:
        return [self.node, str(self.package / "dist" / "index.js"), *args]

    def scenarios(self, leg: Leg, *, requirements: str | None = None) -> list[str]:
        """The scenario names the suite lists for ``leg`` (those a revision's
        ``requirements`` run, scored or not, when given)."""
        return list(_listed(self, leg, requirements))


@functools.cache
def _listed(suite: Suite, leg: Leg, requirements: str | None) -> tuple[str, ...]:
    """What ``conformance list`` prints for ``leg``, read section by section."""
    options = ("--requirements", requirements) if requirements else ()
    listed = subprocess.run(
        suite.command("list", f"--{leg}", *options),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    names: list[str] = []
    section: str | None = None
    for line in listed.stdout.splitlines():
        heading = re.match(r"(Server|Client|Authorization server) scenarios", line)
        if heading is not None:
            section = {"Server": "server", "Client": "client"}.get(heading.group(1), "")
            continue
        if line.startswith("Run and reported"):
            section = None  # entries say their leg: "    - name [leg]"
            continue
        entry = re.match(r"\s+- (\S+)(?: \[([^\]]*)\])?$", line)
        if entry is None:
            continue
        name, tag = entry.groups()
        if (tag if section is None else section) == leg and name not in names:
            names.append(name)
    return tuple(names)


@dataclasses.dataclass(frozen=True)
class Run:
    """One way of running the suite's scenarios for ``leg``: ``name`` labels it (test
    ids, the table of expected failures); ``requirements`` runs what that revision
    requires, at its wire (``--requirements``; per client scenario, its equivalent
    ``--spec-version``); else ``suite`` names the suite (``all``).
    ``client_mode`` is how our client negotiates when the run names no revision;
    ``auth`` keeps the OAuth scenarios (``auth/...``) in the run."""

    name: str
    leg: Leg
    requirements: str | None = None
    suite: str = "all"
    client_mode: str = "auto"
    auth: bool = True

    def scenarios(self, suite: Suite) -> list[str]:
        listed = suite.scenarios(self.leg, requirements=self.requirements)
        return [name for name in listed if self.auth or not name.startswith("auth/")]


@dataclasses.dataclass(frozen=True)
class Check:
    """One check of the suite's verdict on one scenario."""

    id: str
    status: str
    description: str
    error: str

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> Check:
        return cls(
            id=str(raw.get("id", "?")),
            status=str(raw.get("status", "?")),
            description=str(raw.get("description", "")),
            error=str(raw.get("errorMessage", "")),
        )


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What the suite and our client left for one scenario."""

    checks: list[Check]
    client_stderr: str = ""


def installed_suites() -> dict[str, Suite]:
    """The suite versions ``nox -s interop`` installed, by version (empty when the
    environment does not name them)."""
    node = os.environ.get("MCPSPEC_NODE")
    listed = os.environ.get("MCPSPEC_CONFORMANCE", "")
    if not node or not listed:
        return {}
    suites = {}
    for pair in listed.split(";"):
        version, _, path = pair.partition("=")
        if version and path:
            suites[version] = Suite(version, node, Path(path))
    return suites


def run_scenarios(
    suite: Suite, run: Run, output: Path, *, url: str | None = None
) -> dict[str, Verdict]:
    """Run ``run`` of ``suite`` (the server leg against the fixture server at ``url``,
    or one of its own) and read the verdicts it wrote under ``output``."""
    if run.leg == "server":
        selection = (
            ("--requirements", run.requirements) if run.requirements else ("--suite", run.suite)
        )
        if url is not None:
            _invoke(suite, ["server", "--url", url, *selection, "-o", str(output)])
        else:
            with serve_fixture() as own:
                _invoke(suite, ["server", "--url", own, *selection, "-o", str(output)])
    else:
        # A requirement set also runs its unscored extensions, which --spec-version
        # alone skips as off the revision's timeline: --force runs them as it does.
        wire = ("--spec-version", run.requirements, "--force") if run.requirements else ()
        command = f"{sys.executable} {CLIENT_SCRIPT} --mode {run.client_mode}"
        with ThreadPoolExecutor(CLIENT_WORKERS) as pool:
            for scenario in run.scenarios(suite):
                args = ["client", "--command", command, "--scenario", scenario, *wire]
                pool.submit(_invoke, suite, [*args, "-o", str(output)])
    return read_results(output, run.leg)


def _invoke(suite: Suite, args: list[str]) -> None:
    # The verdict is in the files written, not in the exit status (non-zero on any
    # failed check).
    subprocess.run(suite.command(*args), capture_output=True, timeout=RUN_GUARD)


def read_results(output: Path, leg: Leg) -> dict[str, Verdict]:
    """The verdict on each scenario a run wrote under ``output``: one directory per
    scenario, named after it (``server-`` prefixed on the server leg; ``/`` in a
    client scenario's name makes subdirectories) and suffixed with a timestamp."""
    results: dict[str, Verdict] = {}
    for checks_file in sorted(output.rglob("checks.json")):
        folder = checks_file.parent
        name = re.sub(r"-\d{4}-\d\d-\d\dT[\d-]+Z$", "", folder.relative_to(output).as_posix())
        if leg == "server":
            name = name.removeprefix("server-")
        raw = json.loads(checks_file.read_text())
        checks = [Check.of(entry) for entry in raw if isinstance(entry, dict)]
        stderr = folder / "stderr.txt"
        text = stderr.read_text(errors="replace") if stderr.is_file() else ""
        results[name] = Verdict(checks, text)
    return results


@contextmanager
def serve_fixture() -> Iterator[str]:
    """Run the fixture server over HTTP on a free port; yields its endpoint URL."""
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(
            [sys.executable, str(SERVER_SCRIPT), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        try:
            assert process.stdout is not None
            first = process.stdout.readline()
            found = re.fullmatch(r"PORT (\d+)\n", first)
            if found is None:
                log.seek(0)
                raise RuntimeError(f"the fixture server did not start: {first!r} {log.read()}")
            yield f"http://127.0.0.1:{found.group(1)}/mcp"
        finally:
            process.terminate()
            try:
                process.wait(timeout=STOP_GUARD)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
