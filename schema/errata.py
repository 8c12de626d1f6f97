"""Known defects of the official schema.json files, and the patch for each.

Every row names a JSON pointer, the value upstream has there now (``old``), the value we
use instead (``new``) and why. The generator asserts ``old`` before it writes ``new``: when
upstream fixes a defect the assertion fails and the row is removed, rather than patching a
fixed file a second time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ERRATA", "Erratum"]


@dataclass(frozen=True)
class Erratum:
    """One patch: at ``pointer`` in ``revision``'s schema, replace ``old`` by ``new``."""

    revision: str
    pointer: str
    old: Any
    new: Any
    reason: str


_TS_NUMBER = (
    "The TypeScript source says `number`; the JSON conversion ran with "
    "--defaultNumberType integer, so floats were rejected."
)
_NULL_ID = (
    'JSON-RPC 2.0 requires `"id": null` in the error response to a request whose id '
    "could not be read (parse error, invalid request); the schema only allows RequestId."
)
_ELICIT_OLD = ["string", "integer", "boolean"]
_ELICIT_NEW = ["string", "number", "boolean"]


def _nullable_id(revision: str, definition: str, defs: str) -> Erratum:
    ref = {"$ref": f"#/{defs}/RequestId"}
    return Erratum(
        revision,
        f"/{defs}/{definition}/properties/id",
        ref,
        {"anyOf": [ref, {"type": "null"}]},
        _NULL_ID,
    )


ERRATA: tuple[Erratum, ...] = (
    Erratum(
        "2025-06-18",
        "/definitions/ElicitResult/properties/content/additionalProperties/type",
        _ELICIT_OLD,
        _ELICIT_NEW,
        _TS_NUMBER,
    ),
    Erratum(
        "2025-11-25",
        "/$defs/ElicitResult/properties/content/additionalProperties/anyOf/1/type",
        _ELICIT_OLD,
        _ELICIT_NEW,
        _TS_NUMBER,
    ),
    Erratum(
        "2026-07-28",
        "/$defs/ElicitResult/properties/content/additionalProperties/anyOf/1/type",
        _ELICIT_OLD,
        _ELICIT_NEW,
        _TS_NUMBER,
    ),
    Erratum(
        "2026-07-28",
        "/$defs/JSONValue/anyOf/2/type",
        ["string", "integer", "boolean"],
        ["string", "number", "boolean", "null"],
        "JSONValue is any JSON value; the conversion dropped `number` (TS number became "
        "integer) and `null`, so capabilities, sampling metadata and every other "
        "JSON-valued field rejected floats and null.",
    ),
    _nullable_id("2024-11-05", "JSONRPCError", "definitions"),
    _nullable_id("2025-03-26", "JSONRPCError", "definitions"),
    _nullable_id("2025-06-18", "JSONRPCError", "definitions"),
    _nullable_id("2025-11-25", "JSONRPCErrorResponse", "$defs"),
    _nullable_id("2025-11-25", "URLElicitationRequiredError", "$defs"),
    _nullable_id("2026-07-28", "JSONRPCErrorResponse", "$defs"),
    _nullable_id("2026-07-28", "HeaderMismatchError", "$defs"),
    _nullable_id("2026-07-28", "MissingRequiredClientCapabilityError", "$defs"),
    _nullable_id("2026-07-28", "UnsupportedProtocolVersionError", "$defs"),
)
