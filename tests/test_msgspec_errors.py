"""The msgspec error-text adapter against real messages of every tested msgspec version.

:data:`CASES` decode bad input into small types and say what the adapter must read from
the error: the JSON path and the reason. :data:`WORDING` holds, per tested msgspec
version, the exact message each case produced (recorded from 0.19.0, 0.20.0, 0.21.0,
0.21.1 and 0.22.0; the wording has not changed in that range). A new msgspec version
either words them the same (add it to :data:`WORDING` and to the pin in
pyproject.toml) or fails :func:`test_the_installed_msgspec_words_its_errors_as_recorded`
naming the case. ``nox -s msgspec`` runs this file under every tested version.
"""

from __future__ import annotations

from typing import Annotated, Any, NamedTuple

import msgspec
import pytest
from msgspec import UNSET, Meta, UnsetType

from mcpspec.runtime.msgspec_errors import TESTED_MSGSPEC, is_missing_field, path_and_reason


class Inner(msgspec.Struct, kw_only=True):
    name: str
    count: Annotated[int, Meta(ge=0)] | UnsetType = UNSET

    def __post_init__(self) -> None:
        if self.name == "bad":
            raise ValueError("matches none of the union's members: A (missing x)")


class Message(msgspec.Struct, kw_only=True, tag_field="method", tag="a"):
    params: Inner
    items: list[Inner] = []
    meta: dict[str, int] = msgspec.field(default_factory=dict, name="_meta")


class Other(msgspec.Struct, kw_only=True, tag_field="method", tag="b"):
    pass


class Complete(msgspec.Struct, kw_only=True, tag_field="resultType", tag="complete"):
    x: int = 0


class InputRequired(msgspec.Struct, kw_only=True, tag_field="resultType", tag="input_required"):
    y: int = 0


class Case(NamedTuple):
    type: Any
    value: bytes
    path: str
    reason: str


CASES: dict[str, Case] = {
    "wrong type": Case(
        Message, b'{"method":"a","params":{"name":5}}', "$.params.name", "Expected `str`, got `int`"
    ),
    "missing field": Case(
        Message,
        b'{"method":"a","params":{}}',
        "$.params",
        "Object missing required field `name`",
    ),
    "missing field at the root": Case(
        Message, b'{"method":"a"}', "$", "Object missing required field `params`"
    ),
    "array index": Case(
        Message,
        b'{"method":"a","params":{"name":"x"},"items":[{"name":"y"},{"name":1}]}',
        "$.items[1].name",
        "Expected `str`, got `int`",
    ),
    "dict value": Case(
        Message,
        b'{"method":"a","params":{"name":"x"},"_meta":{"k":"v"}}',
        "$._meta[...]",
        "Expected `int`, got `str`",
    ),
    "constraint": Case(
        Message,
        b'{"method":"a","params":{"name":"x","count":-1}}',
        "$.params.count",
        "Expected `int` >= 0",
    ),
    "__post_init__": Case(
        Message,
        b'{"method":"a","params":{"name":"bad"}}',
        "$.params",
        "matches none of the union's members: A (missing x)",
    ),
    "root type": Case(Message, b"[1]", "$", "Expected `object`, got `array`"),
    "unknown tag": Case(Message | Other, b'{"method":"zzz"}', "$.method", "Invalid value 'zzz'"),
    "missing tag": Case(Message | Other, b"{}", "$", "Object missing required field `method`"),
    "missing resultType": Case(
        Complete | InputRequired,
        b'{"x":1}',
        "$",
        "Object missing required field `resultType`",
    ),
    "wire name": Case(
        Message,
        b'{"method":"a","params":{"name":"x"},"_meta":[]}',
        "$._meta",
        "Expected `object`, got `array`",
    ),
    "map key with a dot": Case(
        dict[str, Inner], b'{"a.b":{"name":1}}', "$[...].name", "Expected `str`, got `int`"
    ),
}

#: The messages of msgspec 0.19 to 0.22, unchanged across those versions.
_WORDING_SINCE_0_19: dict[str, str] = {
    "wrong type": "Expected `str`, got `int` - at `$.params.name`",
    "missing field": "Object missing required field `name` - at `$.params`",
    "missing field at the root": "Object missing required field `params`",
    "array index": "Expected `str`, got `int` - at `$.items[1].name`",
    "dict value": "Expected `int`, got `str` - at `$._meta[...]`",
    "constraint": "Expected `int` >= 0 - at `$.params.count`",
    "__post_init__": "matches none of the union's members: A (missing x) - at `$.params`",
    "root type": "Expected `object`, got `array`",
    "unknown tag": "Invalid value 'zzz' - at `$.method`",
    "missing tag": "Object missing required field `method`",
    "missing resultType": "Object missing required field `resultType`",
    "wire name": "Expected `object`, got `array` - at `$._meta`",
    "map key with a dot": "Expected `str`, got `int` - at `$[...].name`",
}

#: msgspec version (major.minor) -> case -> the exact message that version gives.
WORDING: dict[str, dict[str, str]] = {
    "0.19": _WORDING_SINCE_0_19,
    "0.20": _WORDING_SINCE_0_19,
    "0.21": _WORDING_SINCE_0_19,
    "0.22": _WORDING_SINCE_0_19,
}


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def _error(case: Case) -> msgspec.ValidationError:
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.json.decode(case.value, type=case.type)
    return caught.value


def test_the_tested_versions_are_the_recorded_ones() -> None:
    assert tuple(WORDING) == TESTED_MSGSPEC
    for version, wording in WORDING.items():
        assert set(wording) == set(CASES), version


@pytest.mark.parametrize("version", list(WORDING))
@pytest.mark.parametrize("label", list(CASES))
def test_the_adapter_reads_every_recorded_message(version: str, label: str) -> None:
    """Text only: runs whatever msgspec is installed."""
    case = CASES[label]

    class Recorded(msgspec.ValidationError):
        pass

    error = Recorded(WORDING[version][label])
    assert path_and_reason(error) == (case.path, case.reason)
    # Under a prefix: the path of the decoded value within the message.
    path = "$.result" + case.path[1:]
    assert path_and_reason(error, "$.result") == (path, case.reason)


def test_the_installed_msgspec_words_its_errors_as_recorded() -> None:
    version = _minor(msgspec.__version__)
    assert version in WORDING, (
        f"msgspec {msgspec.__version__} is not a tested version ({', '.join(WORDING)}): "
        "record its messages in WORDING and widen the pin in pyproject.toml"
    )
    changed = {
        label: str(_error(case))
        for label, case in CASES.items()
        if str(_error(case)) != WORDING[version][label]
    }
    assert not changed, f"msgspec {msgspec.__version__} words these errors otherwise: {changed}"


@pytest.mark.parametrize("label", list(CASES))
def test_live_errors_read_as_path_and_reason(label: str) -> None:
    case = CASES[label]
    assert path_and_reason(_error(case)) == (case.path, case.reason)


def test_a_missing_field_is_told_by_name_and_place() -> None:
    root = _error(CASES["missing resultType"])
    assert is_missing_field(root, "resultType")
    assert not is_missing_field(root, "result")
    nested = _error(CASES["missing field"])
    assert not is_missing_field(nested, "name")  # not at the root
    assert is_missing_field(nested, "name", "$.params")
    assert not is_missing_field(_error(CASES["wrong type"]), "name", "$.params.name")
