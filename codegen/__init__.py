"""The mcpspec generator: official MCP JSON Schemas in, msgspec revision modules out.

Pipeline, one module a step: :mod:`.sources` finds and verifies the pinned schema files,
:mod:`.patch` applies the errata and brings every revision to the same wire form,
:mod:`.build` lowers a patched schema to the small model in :mod:`.model`, and
:mod:`.render` turns that model into Python source with jinja2 templates.
"""

from __future__ import annotations

from .generate import GenerationReport, generate_all, generate_revision, load_wire_schema

__all__ = ["GenerationReport", "generate_all", "generate_revision", "load_wire_schema"]
