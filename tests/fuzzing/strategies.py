"""The fuzzer's inputs as Hypothesis strategies, so Hypothesis can search and shrink them.

- :func:`mutated_seeds`: a seed of the corpus after the mutation engine's edits, the
  random choices drawn by Hypothesis (so a failure shrinks to fewer, simpler edits);
- :func:`mutated_schema_messages`: a message drawn from the revision's patched schema
  (``tests/schema_strategies.py``: every request and notification the client sends,
  wrapped in the JSON-RPC envelope), then edited the same way;
- :func:`issue_rows`: the issue's fixed inputs.
"""

from __future__ import annotations

import functools
import json
import os
import random
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from mcpspec.codegen import load_wire_schema

from ..schema_strategies import SchemaStrategies
from .mutators import FuzzInput, Generator, Profile
from .seeds import ROOT, Seed

__all__ = ["issue_rows", "mutated_schema_messages", "mutated_seeds"]

#: Small enough for a Hypothesis example: no input above 32 KB.
PROFILE = Profile(max_batch=200, max_string=10_000, max_depth=3_000, max_bytes=32 * 1024)


@functools.cache
def _generator() -> Generator:
    return Generator(0, PROFILE)


def _randoms() -> SearchStrategy[random.Random]:
    return st.randoms(use_true_random=False)


def mutated_seeds(revision: str | None = None) -> SearchStrategy[FuzzInput]:
    """A corpus seed (of ``revision``, when given) after one to three edits."""
    gen = _generator()
    seeds = gen.pool(revision, None)
    return st.builds(gen.mutate, st.sampled_from(seeds), _randoms())


@functools.cache
def _schema_strategies(revision: str) -> SchemaStrategies:
    # Where the tests find the official schemas (as conftest.py does); else the pinned download.
    schema_dir = Path(os.environ.get("MCPSPEC_SCHEMA_DIR", ROOT.parent / "shared" / "mcp-schema"))
    schema = load_wire_schema(revision, schema_dir if schema_dir.is_dir() else None)[0]
    return SchemaStrategies(schema)


def _enveloped(message: Any, request_id: int | str) -> dict[str, Any]:
    wire = dict(message)
    wire["jsonrpc"] = "2.0"
    if "method" in wire and not wire["method"].startswith("notifications/"):
        wire.setdefault("id", request_id)
    return wire


def mutated_schema_messages(revision: str) -> SearchStrategy[FuzzInput]:
    """A client message drawn from ``revision``'s schema, then edited."""
    strategies = _schema_strategies(revision)
    messages = strategies.definition("ClientRequest") | strategies.definition("ClientNotification")
    ids = st.integers(-(2**53), 2**53) | st.text(max_size=8)
    gen = _generator()

    def build(message: Any, request_id: int | str, rng: random.Random) -> FuzzInput:
        data = json.dumps(_enveloped(message, request_id)).encode()
        return gen.mutate(Seed(revision, "client", data, "schema instance"), rng)

    return st.builds(build, messages, ids, _randoms())


def issue_rows() -> SearchStrategy[FuzzInput]:
    """The issue's fixed inputs, unchanged."""
    return st.sampled_from(
        [FuzzInput(r.data, r.revision, "client", (r.name,)) for r in _generator().rows]
    )
