"""Find each revision's schema.json, check it against its pin, or download it."""

from __future__ import annotations

import hashlib
import json
import os
import urllib.request
from pathlib import Path
from typing import Any

from mcpspec.codegen.schema import ExtensionPin, Pin

__all__ = [
    "SchemaHashMismatch",
    "SchemaNotFound",
    "default_schema_dir",
    "read_pinned_extension",
    "read_pinned_schema",
]

ENV_VAR = "MCPSPEC_SCHEMA_DIR"
#: The schemas beside a project checkout, relative to its root (the working directory).
SHARED_SCHEMA_DIR = Path("..", "shared", "mcp-schema")


class SchemaNotFound(FileNotFoundError):
    """No local copy of a pinned schema and no way to download it."""


class SchemaHashMismatch(ValueError):
    """A schema file's bytes differ from its pin."""

    def __init__(self, source: str, expected: str, actual: str) -> None:
        super().__init__(
            f"{source}: sha256 is {actual}, but the pin expects {expected}; "
            "the file changed upstream or locally: review the change, then update "
            "the pin in schema/__init__.py (mcpspec.codegen.schema)"
        )
        self.source = source
        self.expected = expected
        self.actual = actual


def default_schema_dir(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """Where schemas are read from: ``explicit``, else ``$MCPSPEC_SCHEMA_DIR``, else the
    ``../shared/mcp-schema`` (relative to the working directory); ``None`` when none of
    them exists, and the pinned files are downloaded."""
    if explicit is not None:
        return Path(explicit)
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    return SHARED_SCHEMA_DIR if SHARED_SCHEMA_DIR.is_dir() else None


def _verify(data: bytes, pin: Pin | ExtensionPin, source: str) -> bytes:
    actual = hashlib.sha256(data).hexdigest()
    if actual != pin.sha256:
        raise SchemaHashMismatch(source, pin.sha256, actual)
    return data


def read_pinned_schema(pin: Pin, schema_dir: Path | None) -> dict[str, Any]:
    """The parsed schema of ``pin.revision``, from ``schema_dir`` or else downloaded,
    after its sha256 was checked against the pin."""
    local = None if schema_dir is None else schema_dir / pin.revision / "schema.json"
    return _read(pin, schema_dir, local, f"revision {pin.revision}")


def read_pinned_extension(pin: ExtensionPin, schema_dir: Path | None) -> dict[str, Any]:
    """The parsed schema of the extension ``pin.extension``, from
    ``schema_dir/extensions/<folder>`` or else downloaded, checked against the pin."""
    local = None
    if schema_dir is not None:
        local = schema_dir / "extensions" / pin.folder / "schema.json"
    return _read(pin, schema_dir, local, f"extension {pin.extension}")


def _read(
    pin: Pin | ExtensionPin, schema_dir: Path | None, path: Path | None, what: str
) -> dict[str, Any]:
    if schema_dir is not None and path is not None:
        if path.is_file():
            return _parse(_verify(path.read_bytes(), pin, str(path)))
        if os.environ.get(ENV_VAR) or schema_dir.is_dir():
            raise SchemaNotFound(f"{path}: no such file ({what})")
    try:
        with urllib.request.urlopen(pin.download_url, timeout=60) as response:
            data = response.read()
    except OSError as exc:
        raise SchemaNotFound(
            f"{what}: no local schema directory and download of "
            f"{pin.download_url} failed ({exc}); pass --schema-dir or set {ENV_VAR}"
        ) from exc
    return _parse(_verify(data, pin, pin.download_url))


def _parse(data: bytes) -> dict[str, Any]:
    schema = json.loads(data)
    if not isinstance(schema, dict):
        raise ValueError("a schema.json holds a JSON object")
    return schema
