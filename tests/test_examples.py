"""Every official example instance of 2026-07-28 decodes as its type and re-encodes equal.

The examples are checked against the patched schema first: an example the schema
rejects must be rejected by the decoder too (the two agree), and is listed below.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest

import mcpspec.v2026_07_28 as rev
from mcpspec.codegen import load_wire_schema
from mcpspec.runtime import InvalidMessage

from .conftest import EXAMPLES_DIR, SCHEMA_DIR, SCHEMAS_MISSING

#: Every test here reads the official schemas or their examples.
NEEDS_SCHEMAS = True
#: Without the schemas, one placeholder that fails saying where they belong.
EXAMPLES = sorted(EXAMPLES_DIR.glob("*/*.json")) if SCHEMAS_MISSING is None else [EXAMPLES_DIR]

#: Examples the schema itself rejects, and why. The decoder must reject them as well.
SCHEMA_INVALID: dict[str, str] = {}

#: Examples the schema accepts only through a member the example does not mean, and
#: the decoder rejects: ``resultType`` selects the member of a result union (spec rule),
#: whereas the schema's ``anyOf`` also lets a ``"complete"`` result pass as an
#: ``InputRequiredResult``, every field of which is optional.
REJECTED_BY_RESULT_TYPE = {
    "ReadResourceResultResponse/read-resource-result-response.json": (
        "a complete ReadResourceResult without ttlMs and cacheScope, which it requires"
    ),
}

#: Keys an example carries that its definition does not declare. Unknown keys are
#: ignored on decode (objects are open), so they are absent from the re-encoding.
UNDECLARED_KEYS = {
    "ListRootsRequest/list-roots-request.json": {"id"},
}


@pytest.fixture(scope="module")
def validator_for() -> Any:
    schema = load_wire_schema("2026-07-28", SCHEMA_DIR)[0]

    def make(name: str) -> jsonschema.protocols.Validator:
        root = {**schema, "$ref": f"#/$defs/{name}"}
        return jsonschema.Draft202012Validator(root)

    return make


def test_examples_are_all_found() -> None:
    assert len(EXAMPLES) == 129
    assert len({p.parent.name for p in EXAMPLES}) == 88


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_example_round_trips(path: Path, validator_for: Any) -> None:
    key = f"{path.parent.name}/{path.name}"
    type_ = getattr(rev, path.parent.name)
    data = path.read_bytes()
    instance = json.loads(data)
    schema_valid = validator_for(path.parent.name).is_valid(instance)
    assert schema_valid == (key not in SCHEMA_INVALID)
    if not schema_valid or key in REJECTED_BY_RESULT_TYPE:
        with pytest.raises(InvalidMessage) as caught:
            rev.codec.decode_as(type_, data)
        assert caught.value.path.startswith("$")
        return
    decoded = rev.codec.decode_as(type_, data)
    if inspect.isclass(type_) and issubclass(type_, msgspec.Struct):
        assert type(decoded) is type_
    expected = {k: v for k, v in instance.items() if k not in UNDECLARED_KEYS.get(key, set())}
    assert json.loads(rev.codec.encode(decoded)) == expected
    # And the value is stable: decoding its own encoding gives the same value.
    assert rev.codec.decode_as(type_, rev.codec.encode(decoded)) == decoded
