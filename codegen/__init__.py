"""The mcpspec generator: official MCP JSON Schemas in, msgspec revision modules out.

Pipeline, one module a step: :mod:`.sources` finds and verifies the pinned schema files,
:mod:`.patch` applies the errata and brings every revision to the same wire form,
:mod:`.build` makes the small model of :mod:`.model` from a patched schema (by concern:
:mod:`.lowering` lowers definitions to Structs and aliases, :mod:`.naming` spells names,
:mod:`.unions` decides how each union is decoded, :mod:`.dispatch` builds the method and
result tables), and :mod:`.render` turns that model into Python source with the jinja2
templates of ``templates/``.

The generator's data, the pins of the upstream schemas and the errata table, is
:mod:`mcpspec.codegen.schema` (the project's ``schema/`` folder). What the generated
modules declare for the runtime is typed by :mod:`mcpspec.runtime.declared`.
"""

from __future__ import annotations

from .generate import GenerationReport, generate_all, generate_revision, load_wire_schema

__all__ = ["GenerationReport", "generate_all", "generate_revision", "load_wire_schema"]
