"""Everything a person runs: ``nox -s tests``, ``nox -s check``, ``nox -s generate``, ...

Each session installs the project (not editable, as users get it) into its own venv.
"""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "typecheck", "check", "tests"]
nox.options.reuse_existing_virtualenvs = True


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (pytest with Hypothesis)."""
    session.install(".[test]")
    session.run("pytest", *session.posargs)


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


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on the installed package: runtime, generated revisions, generator."""
    session.install(".[codegen]", "mypy>=1.10", "types-jsonschema")
    session.run("mypy", "--strict", "-p", "mcpspec")


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks against orjson and the official SDK; ``-- --smoke`` checks the harness
    only (CI), ``-- --markdown bench/RESULTS.md`` rewrites the published table."""
    session.install(".[bench]")
    session.run("python", "bench/run.py", *session.posargs)
