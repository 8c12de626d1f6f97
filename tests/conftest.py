"""Shared test setup: where the official schemas are, and the Hypothesis profiles."""

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


@pytest.fixture(scope="session")
def schema_dir() -> Path:
    assert SCHEMA_DIR.is_dir(), f"official schemas not found at {SCHEMA_DIR}"
    return SCHEMA_DIR
