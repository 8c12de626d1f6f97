"""Generate revision modules: the pipeline from pinned schema to Python source."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpspec import module_name
from mcpspec.codegen.schema import ERRATA, EXTENSION_PINS, PINS, ExtensionPin, pin_for
from mcpspec.runtime.declared import ProtocolModel

from .build import build_extension, build_module
from .lowering import DISCOVER_METHOD
from .model import Module
from .patch import apply_errata, definitions_key, inherit_request_meta, normalise_wire_form
from .render import render_extension, render_module, render_revisions
from .sources import default_schema_dir, read_pinned_extension, read_pinned_schema

__all__ = [
    "GenerationReport",
    "generate_all",
    "generate_extension",
    "generate_revision",
    "load_wire_schema",
    "module_filename",
]

#: The generated module listing every revision, beside the revision modules.
REVISIONS_FILE = "_revisions.py"


@dataclass
class GenerationReport:
    """What one revision's generation produced."""

    #: The revision, or the extension identifier of an extension's module.
    revision: str
    definitions: int
    structs: int
    hoisted: int
    aliases: int
    unions: dict[str, int] = field(default_factory=dict)
    errata: int = 0
    normalised: int = 0
    protocol_model: ProtocolModel = ProtocolModel.HANDSHAKE

    def summary(self) -> str:
        unions = ", ".join(f"{k} {v}" for k, v in sorted(self.unions.items())) or "none"
        return (
            f"{self.revision}: {self.definitions} definitions -> {self.structs} Structs "
            f"({self.hoisted} hoisted), {self.aliases} aliases; unions: {unions}; "
            f"errata applied: {self.errata}; wire-form additions: {self.normalised}"
        )


def module_filename(revision: str) -> str:
    """The file of ``revision``'s module: ``"2025-11-25"`` -> ``"v2025_11_25.py"``."""
    return module_name(revision).rpartition(".")[2] + ".py"


def load_wire_schema(
    revision: str,
    schema_dir: str | Path | None = None,
    schema_file: str | Path | None = None,
) -> tuple[dict[str, Any], str, int, int]:
    """The schema the generator reads for ``revision``: the pinned file (or
    ``schema_file``) with errata applied and messages in wire form.

    Returns the schema, the input's sha256, and the counts of errata applied and of
    definitions given their envelope.
    """
    if schema_file is not None:
        data = Path(schema_file).read_bytes()
        raw = json.loads(data)
        digest = hashlib.sha256(data).hexdigest()
    else:
        pin = pin_for(revision)
        raw = read_pinned_schema(pin, default_schema_dir(schema_dir))
        digest = pin.sha256
    errata = [e for e in ERRATA if e.revision == revision]
    schema = apply_errata(raw, errata)
    normalised = normalise_wire_form(schema)
    return schema, digest, len(errata), normalised


def _report(module: Module, errata: int, normalised: int) -> GenerationReport:
    strategies = Counter(a.strategy for a in module.aliases.values() if a.strategy)
    strategies["merged"] += sum(1 for s in module.structs.values() if s.origin == "merged")
    return GenerationReport(
        revision=module.revision,
        definitions=module.definitions,
        structs=len(module.structs),
        hoisted=sum(1 for s in module.structs.values() if s.origin == "hoisted"),
        aliases=len(module.aliases),
        unions={k: v for k, v in strategies.items() if v},
        errata=errata,
        normalised=normalised,
        protocol_model=module.protocol_model,
    )


def generate_revision(
    revision: str,
    out_dir: str | Path,
    schema_dir: str | Path | None = None,
    schema_file: str | Path | None = None,
) -> GenerationReport:
    """Write ``out_dir/vYYYY_MM_DD.py`` for ``revision`` and report what it holds."""
    schema, digest, errata, normalised = load_wire_schema(revision, schema_dir, schema_file)
    module = build_module(revision, schema)
    source = render_module(module, digest)
    Path(out_dir, module_filename(revision)).write_text(source, encoding="utf-8")
    return _report(module, errata, normalised)


def generate_extension(
    pin: ExtensionPin, out_dir: str | Path, schema_dir: str | Path | None = None
) -> GenerationReport:
    """Write ``out_dir/<pin.module>.py`` for the extension ``pin`` and report what it
    holds. Extension schemas have no errata yet; their requests' params gain the
    revision's ``_meta`` (:func:`~.patch.inherit_request_meta`)."""
    schema = read_pinned_extension(pin, default_schema_dir(schema_dir))
    revision, _, _, _ = load_wire_schema(pin.revision, schema_dir)
    normalised = inherit_request_meta(schema, revision)
    stateless = any(
        node.get("properties", {}).get("method", {}).get("const") == DISCOVER_METHOD
        for node in revision[definitions_key(revision)].values()
    )
    module = build_extension(pin.revision, schema, stateless)
    source = render_extension(module, pin.extension, pin.sha256)
    Path(out_dir, pin.module + ".py").write_text(source, encoding="utf-8")
    report = _report(module, 0, normalised)
    report.revision = pin.extension
    return report


def generate_all(
    out_dir: str | Path,
    schema_dir: str | Path | None = None,
    extra: dict[str, Path] | None = None,
) -> list[GenerationReport]:
    """Regenerate every pinned revision (plus ``extra``: revision -> schema file), the
    list of revisions (``_revisions.py``) and every pinned extension into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    reports = [generate_revision(pin.revision, out, schema_dir) for pin in PINS]
    for revision, path in sorted((extra or {}).items()):
        reports.append(generate_revision(revision, out, schema_file=path))
    models = {r.revision: r.protocol_model for r in reports}
    (out / REVISIONS_FILE).write_text(render_revisions(models), encoding="utf-8")
    reports += [generate_extension(pin, out, schema_dir) for pin in EXTENSION_PINS]
    return reports
