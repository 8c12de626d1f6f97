"""JSON paths in findings: the keys a decoder leaves as ``[...]`` are named."""

from __future__ import annotations

import json

from mcpspec.check.json_path import NOWHERE, named_path, value_at

FORM = json.dumps(
    {
        "params": {
            "requestedSchema": {
                "properties": {
                    "name": {"type": "string"},
                    "tags": {"type": "array"},
                    "odd key": {"type": "number"},
                }
            }
        }
    }
).encode()


def test_the_key_whose_value_the_reason_shows_is_named() -> None:
    path = "$.params.requestedSchema.properties[...].type"
    reason = "Invalid enum value 'array'"
    assert named_path(FORM, path, reason) == "$.params.requestedSchema.properties.tags.type"


def test_a_key_that_is_no_name_is_quoted_and_can_be_followed() -> None:
    path = "$.params.requestedSchema.properties[...].type"
    named = named_path(FORM, path, "Expected `str`, got 'number'")
    assert named == '$.params.requestedSchema.properties["odd key"].type'
    assert value_at(FORM, named) == "number"


def test_the_only_key_the_rest_of_the_path_exists_under_is_named() -> None:
    data = json.dumps({"a": {"x": {"b": 1}, "y": {"c": 2}}}).encode()
    assert named_path(data, "$.a[...].b") == "$.a.x.b"


def test_what_cannot_be_told_stays_as_it_was() -> None:
    path = "$.params.requestedSchema.properties[...].type"
    assert named_path(FORM, path, "no value shown") == path
    assert named_path(b"not json", path) == path
    assert named_path(FORM, "$.params.nothing[...].type") == "$.params.nothing[...].type"
    assert value_at(FORM, path) is NOWHERE
