"""JSON Schema work of the surface checks: is a tool's schema a schema, does a value
match one, and a value that matches (arguments for ``--call-tools``).

The schemas' dialect is the one they name in ``$schema``, else JSON Schema 2020-12 (the
default the specification sets from 2025-11-25 on; earlier revisions name none). The
validator is ``jsonschema`` (``pip install 'mcpspec[check]'``).
"""

from __future__ import annotations

import re
from typing import Any, Final

from mcpspec.runtime.errors import clip

__all__ = ["check_schema", "example_of", "validate"]

#: How deep :func:`example_of` follows nested schemas.
MAX_DEPTH: Final = 8


def _validator_class(schema: Any) -> Any:
    import jsonschema
    import jsonschema.validators

    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def _path(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def check_schema(schema: Any) -> str | None:
    """What is wrong with ``schema`` as a JSON Schema (with where), or ``None``."""
    import jsonschema

    if not isinstance(schema, dict):
        return f"a schema is an object; got {type(schema).__name__}"
    try:
        cls = _validator_class(schema)
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return clip(f"at {_path(exc.path) or '(root)'}: {exc.message}")
    except (RecursionError, ValueError, TypeError) as exc:
        return clip(f"cannot be read as a schema: {exc}")
    return None


def validate(value: Any, schema: Any) -> tuple[str, str] | None:
    """The first place where ``value`` breaks ``schema`` (JSON path below the value,
    reason), or ``None``."""
    import referencing.exceptions  # jsonschema's, as lazily imported

    try:
        cls = _validator_class(schema)
        error = next(iter(cls(schema).iter_errors(value)), None)
    except (
        RecursionError,
        ValueError,
        TypeError,
        re.error,  # a pattern that is no regex: the schema is broken, not the value
        referencing.exceptions.Unresolvable,  # a $ref to nowhere: likewise
    ) as exc:
        return "", clip(f"cannot validate: {exc}")
    if error is None:
        return None
    return _path(error.absolute_path), clip(error.message)


def example_of(schema: Any, depth: int = 0) -> Any:
    """A simple value meant to match ``schema``: its default, example, const or first
    enum member, else one built from its type (objects get their required members)."""
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return None
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    for key in ("examples", "enum"):
        values = schema.get(key)
        if isinstance(values, list) and values:
            return values[0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return example_of(options[0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        required = schema.get("required")
        names = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
        return {name: example_of(properties.get(name, {}), depth + 1) for name in names}
    if kind == "array":
        count = schema.get("minItems")
        count = count if isinstance(count, int) and 0 < count <= 16 else 0
        return [example_of(schema.get("items", {}), depth + 1) for _ in range(count)]
    if kind == "string":
        if schema.get("format") == "uri":
            return "https://example.com/"
        length = schema.get("minLength")
        return "x" * (length if isinstance(length, int) and 0 < length <= 1024 else 1)
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        if isinstance(low, int | float) and not isinstance(low, bool):
            return int(low) + 1 if "exclusiveMinimum" in schema else low
        return 1
    if kind == "boolean":
        return False
    return None
