"""mcpspec: fast, typed msgspec bindings for every revision of the Model Context Protocol.

Pin a revision by importing from its module (``from mcpspec.v2025_11_25 import Tool``), or
get its codec by name::

    import mcpspec

    codec = mcpspec.codec("2025-11-25")
    message = codec.decode(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}')

This file is the hand-written package root. Everything else in this folder is written by
``mcpspec generate`` (each file says so in its first line): one module per revision,
``vYYYY_MM_DD.py``, and ``_revisions.py``, the list of revisions they were generated for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._revisions import LATEST, REVISIONS

if TYPE_CHECKING:
    from mcpspec.runtime.codec import Codec

__all__ = ["LATEST", "REVISIONS", "codec", "module_name"]


def module_name(revision: str) -> str:
    """The module of ``revision``: ``"2025-11-25"`` -> ``"mcpspec.v2025_11_25"``. The one
    place that says how a revision's module is named: the generator names its files by it,
    the runtime imports by it."""
    return "mcpspec.v" + revision.replace("-", "_")


def codec(revision: str) -> Codec:
    """The codec of ``revision``; ``ValueError`` names the supported revisions."""
    if revision not in REVISIONS:
        raise ValueError(
            f"unsupported MCP revision {revision!r}; supported: {', '.join(REVISIONS)}"
        )
    result: Codec = importlib.import_module(module_name(revision)).codec
    return result
