"""Shared test setup: where the official schemas are, the Hypothesis profiles, and the
anyio backends the async tests run on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
#: The official schemas: $MCPSPEC_SCHEMA_DIR, else ../shared/mcp-schema beside the checkout.
SCHEMA_DIR = Path(os.environ.get("MCPSPEC_SCHEMA_DIR", ROOT.parent / "shared" / "mcp-schema"))
EXAMPLES_DIR = SCHEMA_DIR / "2026-07-28" / "examples"
TRANSCRIPTS_DIR = ROOT / "tests" / "fixtures" / "transcripts"

settings.register_profile(
    "ci",
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("deep", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


#: Why the tests that read the official schemas cannot run, or ``None`` when they can.
SCHEMAS_MISSING: str | None = (
    None
    if (SCHEMA_DIR / "PINS.json").is_file()
    else (
        f"the official schemas are not at {SCHEMA_DIR}: put them at ../shared/mcp-schema "
        "beside the checkout or set MCPSPEC_SCHEMA_DIR (layout: <dir>/PINS.json, "
        "<dir>/<revision>/schema.json, <dir>/2026-07-28/examples/<Type>/<name>.json)"
    )
)

#: The backends an async test runs on, unless its module narrows them with a module
#: constant ``ANYIO_BACKENDS`` (saying why) or the test parametrizes ``anyio_backend``.
ANYIO_BACKENDS = ("asyncio", "trio")


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run each async test once per backend: the one place that says which.

    A parametrize mark, not ``metafunc.parametrize``: pytest then lets it override the
    anyio plugin's own parametrized ``anyio_backend`` fixture, as a test's own mark does.
    Put first, the backend leads the test's id."""
    if "anyio_backend" not in metafunc.fixturenames:
        return
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs["argnames"]
        if isinstance(names, str):
            names = [name.strip() for name in names.split(",")]
        if "anyio_backend" in names:
            return
    backends = getattr(metafunc.module, "ANYIO_BACKENDS", ANYIO_BACKENDS)
    metafunc.definition.add_marker(pytest.mark.parametrize("anyio_backend", backends), append=False)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "schemas: reads the official schemas (fails at once, saying where, without)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Without the schemas, every test of a module that declares ``NEEDS_SCHEMAS`` (and
    every test marked ``schemas``) fails with one line saying where they belong; the
    rest of the suite runs."""
    if SCHEMAS_MISSING is None:
        return
    for item in items:
        module = getattr(item, "module", None)
        if getattr(module, "NEEDS_SCHEMAS", False) or item.get_closest_marker("schemas"):
            item.add_marker(pytest.mark.schemas)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if SCHEMAS_MISSING is not None and item.get_closest_marker("schemas"):
        pytest.fail(SCHEMAS_MISSING, pytrace=False)
