"""Hypothesis property tests and the differential test against ``jsonschema``.

For every definition of every revision (no exceptions: :data:`UNCOVERED` is empty and the
count of covered definitions is asserted), instances are drawn from the *patched* schema
(:func:`mcpspec.codegen.load_wire_schema`: errata applied, requests and notifications in
wire form), and:

1. **Round trip.** An instance the decoder accepts re-encodes to its *projection* (below)
   and decoding the encoded bytes gives an equal value.
2. **Mutations.** Changes the schema forbids (drop a required property, give a value a
   JSON type its schema does not allow, change a constant or enum value) are rejected
   with :class:`~mcpspec.runtime.InvalidMessage` whose ``path`` points at the mutated
   location: the value's own path, or for a dropped property its object's path (or the
   dropped key's own path). A ``[...]`` step of a msgspec path stands for one map key.
3. **Differential.** For every drawn instance and every mutation, the reference validator
   (``Draft7Validator`` or ``Draft202012Validator`` on the patched schema, format
   checking off) and our decoder agree on accept/reject, or the disagreement is explained
   by a row of :data:`LENIENCIES` whose condition is checked on that very case (never a
   blanket skip). Each row is also shown on a hand-written case (:data:`LENIENCY_CASES`)
   that must still disagree and be explained by that row alone, so a row that is no
   longer needed fails. Rows named "known bug pending fix: ..." are bugs: fix the code,
   then delete the row and its case.

Instances come from :mod:`tests.schema_strategies` (hypothesis-jsonschema cannot run with
this Hypothesis: see there), and every drawn instance is asserted valid by the reference
validator, so the strategies are checked rather than trusted.

How a definition is decoded (:class:`Case`): ``direct`` ones with
``codec.decode_as(T, data)``; the ``classified`` unions (``JSONRPCMessage``,
``JSONRPCResponse``) with ``decode_as`` too, which goes through ``codec.decode`` and types
each request or notification by its method; the ``keyed`` unions (``ServerResult``,
``ClientResult``, ``InputResponse``) with ``codec.decode_result(method, data)`` for a
method drawn from those whose result type is a member of the union, the reference being
the schema of that method's result.

**Projection** of a JSON instance onto a decoded type ``T`` (:func:`project`), what
``json.loads(codec.encode(decoded))`` must equal:

* ``Any``/``msgspec.Raw``: the value unchanged;
* a Struct: only keys that are fields (by wire name), each projected onto the field's
  type; an absent field with a default (the constants: ``jsonrpc``, error ``code``
  refinements) appears with its default; a tagged Struct always carries its tag;
* ``dict[str, V]``/``list[V]``: every value projected onto ``V``;
* a union: the member the value decodes as (JSON type; the tag for Structs; in
  2026-07-28 a result without ``resultType`` is the ``"complete"`` member);
* scalars and literals: unchanged (``1`` and ``1.0`` compare equal, as JSON numbers).

Profiles: ``HYPOTHESIS_PROFILE`` unset or ``ci`` (the suite's default) runs
``mcpspec-properties``: 10 examples per definition, derandomized, no database, about a
minute on two cores. ``HYPOTHESIS_PROFILE=deep`` runs ``mcpspec-properties-deep``: 150
per definition, random (half an hour or so). Any other registered profile is used as is.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, Union, get_args, get_origin

import jsonschema
import msgspec
import msgspec.inspect as mi
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import mcpspec
from mcpspec.codegen import load_wire_schema as _load_wire_schema
from mcpspec.runtime import ErrorCode, ErrorResponse, InvalidMessage, ResultResponse
from mcpspec.runtime.declared import UnionKind

from .conftest import SCHEMAS_MISSING
from .schema_strategies import (
    JSON,
    Mutation,
    Mutator,
    SchemaStrategies,
    json_type,
    property_names,
)

#: Every test here reads the official schemas.
NEEDS_SCHEMAS = True

# -- Hypothesis profiles -------------------------------------------------------------------

_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
#: The suite-wide profiles (conftest.py loads HYPOTHESIS_PROFILE: "ci", the default, or
#: "deep") budget one test; this module runs one test per definition (553), so it maps
#: them to budgets per definition. Any other registered profile name is used as it is.
settings.register_profile(
    "mcpspec-properties",
    max_examples=10,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=_HEALTH,
    print_blob=True,
)
settings.register_profile(
    "mcpspec-properties-deep",
    max_examples=150,
    deadline=None,
    suppress_health_check=_HEALTH,
    print_blob=True,
)
_SUITE_PROFILES = {"ci": "mcpspec-properties", "deep": "mcpspec-properties-deep"}
_REQUESTED = os.environ.get("HYPOTHESIS_PROFILE") or "ci"
PROFILE = _SUITE_PROFILES.get(_REQUESTED, _REQUESTED)
PROFILE_SETTINGS = settings.get_profile(PROFILE)

#: Mutations tried on each drawn instance.
MUTATIONS_PER_EXAMPLE = 3

#: Definitions not covered by the property tests, with the reason. Empty: all are.
UNCOVERED: dict[tuple[str, str], str] = {}

#: Definitions per revision (the BRIEF's figures), all of them covered.
DEFINITIONS = {
    "2024-11-05": 79,
    "2025-03-26": 83,
    "2025-06-18": 91,
    "2025-11-25": 145,
    "2026-07-28": 155,
}

#: Names of open objects: their inner schema is not checked (leniency ``open-objects``).
OPEN_PROPERTIES = frozenset({"_meta", "inputSchema", "outputSchema"})


# -- per-revision data ---------------------------------------------------------------------


def _schema_dir() -> Path | None:
    """$MCPSPEC_SCHEMA_DIR, else ../shared/mcp-schema beside the checkout (as conftest.py
    finds it), else None: the generator downloads the pinned files."""
    env = os.environ.get("MCPSPEC_SCHEMA_DIR")
    if env:
        return Path(env)
    shared = Path(__file__).resolve().parent.parent.parent / "shared" / "mcp-schema"
    return shared if shared.is_dir() else None


@functools.cache
def load_wire_schema(rev: str) -> dict[str, Any]:
    """The patched schema of ``rev``: THE reference of these tests."""
    schema: dict[str, Any] = _load_wire_schema(rev, _schema_dir())[0]
    return schema


@dataclass
class Revision:
    """A revision's patched schema, its generated module, validators and strategies."""

    revision: str
    schema: dict[str, Any]
    key: str
    defs: dict[str, Any]
    module: ModuleType
    codec: Any
    validator_class: type[jsonschema.protocols.Validator]
    strategies: SchemaStrategies
    mutator: Mutator = field(init=False)
    _validators: dict[str, Any] = field(default_factory=dict)
    _sub: dict[int, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.mutator = Mutator(self.strategies, self.is_valid_node)

    def validator(self, name: str) -> Any:
        found = self._validators.get(name)
        if found is None:
            root = {**self.schema, "$ref": f"#/{self.key}/{name}"}
            found = self._validators[name] = self.validator_class(root)
        return found

    def is_valid(self, name: str, instance: JSON) -> bool:
        return bool(self.validator(name).is_valid(instance))

    def is_valid_node(self, node: dict[str, Any], instance: JSON) -> bool:
        """Validity under any node of this schema (its ``$ref``s resolve in the schema)."""
        found = self._sub.get(id(node))
        if found is None:
            found = self._sub[id(node)] = self.validator("Result").evolve(schema=node)
        return bool(found.is_valid(instance))

    def errors(self, name: str, instance: JSON) -> list[str]:
        return [e.message for e in self.validator(name).iter_errors(instance)][:3]

    def ref(self, name: str) -> dict[str, Any]:
        return {"$ref": f"#/{self.key}/{name}"}


@functools.cache
def _all_property_names() -> dict[str, frozenset[str]]:
    return {rev: frozenset(property_names(load_wire_schema(rev))) for rev in mcpspec.REVISIONS}


@functools.cache
def revision(rev: str) -> Revision:
    schema = load_wire_schema(rev)
    key = "$defs" if "$defs" in schema else "definitions"
    dialect = schema.get("$schema", "")
    validator_class: type[jsonschema.protocols.Validator] = (
        jsonschema.Draft202012Validator if "2020-12" in dialect else jsonschema.Draft7Validator
    )
    assert ("2020-12" in dialect) == (key == "$defs"), (rev, dialect, key)
    names = _all_property_names()
    foreign = frozenset().union(*(v for r, v in names.items() if r != rev)) - names[rev]
    module = importlib.import_module(mcpspec.module_name(rev))
    return Revision(
        revision=rev,
        schema=schema,
        key=key,
        defs=schema[key],
        module=module,
        codec=module.codec,
        validator_class=validator_class,
        strategies=SchemaStrategies(schema, foreign_names=foreign),
    )


def definition_names(rev: str) -> list[str]:
    schema = load_wire_schema(rev)
    return list(schema["$defs" if "$defs" in schema else "definitions"])


# -- how each definition is decoded --------------------------------------------------------

Mode = Literal["direct", "classified", "keyed"]


@dataclass
class Case:
    rev: Revision
    name: str
    mode: Mode
    type: Any
    #: keyed: the methods whose result type is a member of the union.
    methods: tuple[str, ...] = ()

    def root_schema(self, method: str | None) -> dict[str, Any]:
        if self.mode == "keyed":
            assert method is not None
            return result_schema(self.rev, method)
        return self.rev.ref(self.name)

    def reference(self, instance: JSON, method: str | None) -> bool:
        """The reference validator's verdict."""
        if self.mode == "keyed":
            assert method is not None
            return self.rev.is_valid_node(result_schema(self.rev, method), instance)
        return self.rev.is_valid(self.name, instance)

    def decode(self, data: bytes, method: str | None) -> Any:
        codec = self.rev.codec
        if self.mode == "keyed":
            return codec.decode_result(method, data)
        return codec.decode_as(self.type, data)


def owned_strategy(rev: Revision, name: str) -> str | None:
    """``keyed`` or ``classified`` for a union the codec decodes itself, else ``None``."""
    for type_id, (owned, kind) in rev.codec._owned.items():
        if owned == name and id(getattr(rev.module, name)) == type_id:
            return "keyed" if kind is UnionKind.KEYED else "classified"
    return None


def union_members(t: Any) -> tuple[Any, ...]:
    return get_args(t) if get_origin(t) is Union else (t,)


@functools.cache
def case_of(rev_name: str, name: str) -> Case:
    rev = revision(rev_name)
    t = getattr(rev.module, name)
    strategy = owned_strategy(rev, name)
    if strategy == "keyed":
        members = union_members(t)
        methods = tuple(
            sorted(
                m
                for m, result in rev.codec.results.items()
                if all(any(r is x for x in members) for r in union_members(result))
            )
        )
        assert methods, f"{rev_name} {name}: no method answers with a member of it"
        return Case(rev, name, "keyed", t, methods)
    if strategy == "classified":
        return Case(rev, name, "classified", t)
    assert strategy is None, (name, strategy)
    return Case(rev, name, "direct", t)


# -- request -> result, independently of the generated tables ------------------------------


def method_table(rev: Revision, union: str) -> dict[str, str]:
    """method -> definition name, for the members of a schema union (``ClientRequest``)."""
    node = rev.defs.get(union)
    if node is None:
        return {}
    arms = node.get("anyOf")
    if arms is None:
        # A "union" of one message is that message: 2026-07-28 defines ClientNotification
        # as a copy of CancelledNotification, and the copy named for the message wins.
        method = node.get("properties", {}).get("method", {}).get("const")
        same = [
            n
            for n, other in rev.defs.items()
            if method is not None
            and n != union
            and other.get("properties", {}).get("method", {}).get("const") == method
        ]
        arms = [rev.ref(union)] + [rev.ref(n) for n in same]
    out: dict[str, str] = {}
    for arm in arms:
        name = arm["$ref"].rsplit("/", 1)[1]
        method = rev.defs[name].get("properties", {}).get("method", {}).get("const")
        assert isinstance(method, str), (union, name)
        # The same method may be defined twice; a definition named for its direction
        # (ClientNotification) loses to one named for the message.
        if method not in out or out[method].startswith(("Client", "Server")):
            out[method] = name
    return out


def request_definitions(rev: Revision) -> dict[str, str]:
    out: dict[str, str] = {}
    for union in ("ClientRequest", "ServerRequest", "InputRequest"):
        out.update(method_table(rev, union))
    return out


def result_definition_names(rev: Revision, method: str) -> tuple[str, ...]:
    """The schema's result definitions of ``method``: the ``*ResultResponse`` result
    where the revision has one, else ``<Base>Result``, else ``EmptyResult``."""
    request = request_definitions(rev)[method]
    base = request.removesuffix("Request")
    response = rev.defs.get(f"{base}ResultResponse")
    if response is not None:
        result = response["properties"]["result"]
        arms = result.get("anyOf", [result])
        return tuple(a["$ref"].rsplit("/", 1)[1] for a in arms)
    for candidate in (f"{base}Result", "EmptyResult", "Result"):
        if candidate in rev.defs:
            return (candidate,)
    raise AssertionError(f"{rev.revision}: no result definition for {method}")


@functools.cache
def _result_schema(rev_name: str, method: str) -> dict[str, Any]:
    rev = revision(rev_name)
    names = result_definition_names(rev, method)
    if len(names) == 1:
        return rev.ref(names[0])
    return {"anyOf": [rev.ref(n) for n in names]}


def result_schema(rev: Revision, method: str) -> dict[str, Any]:
    return _result_schema(rev.revision, method)


# -- msgspec types: projection and the declared type along a path --------------------------


_TYPE_INFO: dict[Any, mi.Type] = {}


def type_info(t: Any) -> mi.Type:
    """msgspec's description of a type (cached: recursive types are large)."""
    found = _TYPE_INFO.get(t)
    if found is None:
        found = _TYPE_INFO[t] = mi.type_info(t)
    return found


def is_merged(t: mi.Type | None) -> bool:
    """A merged Struct: one Struct for an untaggable union, with a membership check."""
    return isinstance(t, mi.StructType) and hasattr(t.cls, "__post_init__")


def _literal_has(t: mi.LiteralType, value: JSON) -> bool:
    return any(v == value and type(v) is type(value) for v in t.values)


def select(t: mi.Type, value: JSON) -> mi.Type | None:
    """The member of a union ``t`` that ``value`` decodes as; ``None`` if none."""
    if not isinstance(t, mi.UnionType):
        return t
    members = list(t.types)  # type_info leaves UNSET out
    fallback = next((m for m in members if isinstance(m, (mi.AnyType, mi.RawType))), None)

    def first(kinds: tuple[type, ...]) -> mi.Type | None:
        return next((m for m in members if isinstance(m, kinds)), None)

    literal = next(
        (m for m in members if isinstance(m, mi.LiteralType) and _literal_has(m, value)), None
    )
    found: mi.Type | None = None
    if value is None:
        found = first((mi.NoneType,))
    elif isinstance(value, bool):
        found = first((mi.BoolType,)) or literal
    elif isinstance(value, int):
        found = first((mi.IntType,)) or literal or first((mi.FloatType,))
    elif isinstance(value, float):
        found = first((mi.FloatType,))
    elif isinstance(value, str):
        found = literal or first((mi.StrType,))
    elif isinstance(value, list):
        found = first((mi.ListType,))
    elif isinstance(value, dict):
        structs = [m for m in members if isinstance(m, mi.StructType)]
        if len(structs) == 1 and structs[0].tag_field is None:
            found = structs[0]
        elif structs:
            tag_field = structs[0].tag_field
            tag = value.get(tag_field) if tag_field else None
            if tag_field == "resultType" and tag_field not in value:
                tag = "complete"  # a result from an earlier revision reads as complete
            found = next((s for s in structs if s.tag == tag), None)
        found = found or first((mi.DictType,))
    return found or fallback


def project(value: JSON, t: mi.Type) -> JSON:
    """What ``value`` encodes as once decoded as ``t`` (see the module docstring)."""
    if isinstance(t, mi.UnionType):
        member = select(t, value)
        assert member is not None, f"no member of {t} for {value!r}"
        return project(value, member)
    if isinstance(t, mi.StructType):
        assert isinstance(value, dict)
        out: dict[str, JSON] = {}
        if t.tag_field is not None:
            out[t.tag_field] = t.tag
        for f in t.fields:
            if f.encode_name in value:
                out[f.encode_name] = project(value[f.encode_name], f.type)
            elif f.default is not msgspec.NODEFAULT:
                out[f.encode_name] = msgspec.to_builtins(f.default)
        return out
    if isinstance(t, mi.DictType):
        assert isinstance(value, dict)
        return {k: project(v, t.value_type) for k, v in value.items()}
    if isinstance(t, mi.ListType):
        assert isinstance(value, list)
        return [project(v, t.item_type) for v in value]
    return value


@dataclass
class Step:
    """The type at one location: as declared by the enclosing type, and the member
    chosen when the declared type is a union. ``key`` is how the location was reached."""

    declared: mi.Type | None
    selected: mi.Type | None
    key: str | int | None


def type_steps(t: mi.Type, value: JSON, location: tuple[str | int, ...]) -> list[Step]:
    """The types along ``location`` in ``value`` decoded as ``t``. Ends early where the
    decoder stops looking: an ``Any`` or ``Raw`` value, or a key the Struct ignores (a
    last step with ``declared`` None)."""
    steps = [Step(t, select(t, value), None)]
    for segment in location:
        here = steps[-1].selected
        if isinstance(here, mi.StructType) and isinstance(segment, str):
            f = next((f for f in here.fields if f.encode_name == segment), None)
            if f is None:
                steps.append(Step(None, None, segment))
                break
            declared = f.type
        elif isinstance(here, mi.DictType):
            declared = here.value_type
        elif isinstance(here, mi.ListType):
            declared = here.item_type
        else:
            break
        value = value[segment]
        steps.append(Step(declared, select(declared, value), segment))
    return steps


def msgspec_path(steps: list[Step], location: tuple[str | int, ...], prefix: str) -> str:
    """The JSON path msgspec writes for ``location``: ``.name`` for a Struct field,
    ``[...]`` for a map key, ``[i]`` for an array index."""
    path = prefix
    for index, segment in enumerate(location):
        parent = steps[index].selected if index < len(steps) else None
        if isinstance(segment, int):
            path += f"[{segment}]"
        elif isinstance(parent, mi.DictType):
            path += "[...]"
        else:
            path += f".{segment}"
    return path


# -- leniencies ------------------------------------------------------------------------


@dataclass
class Disagreement:
    """A case where the decoder and the reference validator disagree."""

    case: Case
    instance: JSON  # the instance both judged
    original: JSON  # the valid instance it was mutated from (the instance itself if none)
    decoded_original: Any  # the original as decoded (the types along paths)
    method: str | None
    mutation: Mutation | None
    error: InvalidMessage | None  # the decoder's, when it rejected

    @property
    def rev(self) -> Revision:
        return self.case.rev

    def root_type(self) -> tuple[mi.Type, JSON, tuple[str | int, ...]]:
        """(type, value, location) to walk for the mutation, the batch member resolved."""
        assert self.mutation is not None
        loc = self.mutation.location
        if self.case.mode == "keyed":
            return type_info(self.rev.codec.result_type(self.method)), self.original, loc
        if self.case.mode == "classified":
            decoded, value = self.decoded_original, self.original
            if isinstance(decoded, list) and loc:
                assert isinstance(loc[0], int)
                decoded, value, loc = decoded[loc[0]], value[loc[0]], loc[1:]
            return type_info(type(decoded)), value, loc
        return type_info(self.case.type), self.original, loc

    def decoded_member(self) -> Any:
        """The decoded original, or its batch member holding the mutation."""
        decoded = self.decoded_original
        if isinstance(decoded, list) and self.mutation is not None and self.mutation.location:
            index = self.mutation.location[0]
            assert isinstance(index, int)
            return decoded[index]
        return decoded

    def steps(self) -> tuple[list[Step], tuple[str | int, ...]]:
        t, value, loc = self.root_type()
        return type_steps(t, value, loc), loc


def _drop_parent(d: Disagreement) -> tuple[Step, str] | None:
    """(the parent's step, the dropped key) of a ``drop`` mutation the types reach."""
    if d.mutation is None or d.mutation.kind != "drop":
        return None
    steps, loc = d.steps()
    if len(steps) < len(loc):
        return None
    key = loc[-1]
    assert isinstance(key, str)
    return steps[len(loc) - 1], key


def _open_entry(d: Disagreement) -> tuple[int, Step] | None:
    """Where the mutation's path enters a value the decoder does not look into: the
    index and step of an ``Any`` or ``Raw`` value at or above the changed value (above
    the object a property was dropped from), or of a ``dict[str, Any]`` above it."""
    if d.mutation is None:
        return None
    steps, loc = d.steps()
    last = len(loc) - 1 if d.mutation.kind == "drop" else len(loc)
    for index, step in enumerate(steps):
        if step.declared is None:
            return None  # a key the Struct does not know: not an open object
        t = step.selected
        if isinstance(t, (mi.AnyType, mi.RawType)) and index <= last:
            return index, step
        open_dict = isinstance(t, mi.DictType) and isinstance(t.value_type, mi.AnyType)
        if open_dict and index < len(loc):
            return index, step
    return None


def chain_node(d: Disagreement, index: int) -> dict[str, Any] | None:
    """The schema node the mutator saw at step ``index`` of :meth:`Disagreement.steps`."""
    assert d.mutation is not None
    _, loc = d.steps()
    offset = len(d.mutation.location) - len(loc)  # a batch member's index
    chain = d.mutation.chain
    return chain[index + offset] if index + offset < len(chain) else None


def _dropped_field(d: Disagreement) -> tuple[str | None, Any]:
    """The key the mutation dropped from a Struct, with that Struct's field of it
    (``msgspec.inspect`` ``Field``, or ``None``); ``(None, None)`` when the dropped key's
    parent is no Struct."""
    found = _drop_parent(d)
    if found is None or not isinstance(found[0].selected, mi.StructType):
        return None, None
    step, key = found
    assert isinstance(step.selected, mi.StructType)
    return key, next((f for f in step.selected.fields if f.encode_name == key), None)


def constant_default(d: Disagreement) -> bool:
    _, f = _dropped_field(d)
    return (
        f is not None
        and f.default is not msgspec.NODEFAULT
        and isinstance(f.type, mi.LiteralType)
        and f.type.values == (f.default,)
    )


def lone_tag(d: Disagreement) -> bool:
    found = _drop_parent(d)
    if found is None:
        return False
    step, key = found
    if isinstance(step.declared, mi.StructType):
        return step.declared.tag_field == key  # decoded as itself, not as a union member
    # decode_result in 2026-07-28: a result without resultType reads as "complete".
    return (
        d.case.mode == "keyed"
        and d.mutation is not None
        and d.mutation.location == ("resultType",)
        and isinstance(step.selected, mi.StructType)
        and step.selected.tag == "complete"
    )


def open_objects(d: Disagreement) -> bool:
    found = _open_entry(d)
    if found is None:
        return False
    index, step = found
    if index == 0:
        return d.case.name.endswith("MetaObject")
    return step.key in OPEN_PROPERTIES


_PRIMITIVES = frozenset({"null", "boolean", "integer", "number", "string"})


def _merged_object(d: Disagreement) -> tuple[mi.StructType, JSON] | None:
    """(merged Struct, the mutated object it decodes) when the nearest Struct at or above
    the changed value's parent is a merged union, else None."""
    if d.mutation is None:
        return None
    steps, loc = d.steps()
    parent = max(len(loc) - 1, 0)
    for index in range(min(parent, len(steps) - 1), -1, -1):
        t = steps[index].selected
        if isinstance(t, mi.StructType):
            if not is_merged(t):
                return None
            offset = len(d.mutation.location) - len(loc)  # a batch member's index
            value = d.instance
            for segment in d.mutation.location[: offset + index]:
                value = value[segment]
            return t, value
    return None


def member_matches(
    rev: Revision, member: str, obj: JSON, merged: mi.StructType, *, enums: bool
) -> bool:
    """Whether ``obj`` passes the membership rule of merged unions for the schema
    definition ``member``: its required properties are present, its constants (and, with
    ``enums``, its enum values) hold, and its primitive properties that the merged Struct
    leaves untyped (``Any``) have their JSON kind. What the rule leaves out (values of a
    field typed with the union of the members' types, the inside of a structured field
    typed ``Any``) is the leniency."""
    m = rev.mutator
    node = m.s.resolve(rev.defs[member])
    if not isinstance(obj, dict) or any(r not in obj for r in node.get("required", [])):
        return False
    untyped = {f.encode_name for f in merged.fields if isinstance(f.type, mi.AnyType)}
    for key, prop in node.get("properties", {}).items():
        if key not in obj:
            continue
        value = obj[key]
        constants = m.constant_of(prop)
        allowed = m.allowed_types(prop)
        if constants is not None:
            if len(constants) > 1 and not enums:
                continue
            if not any(c == value and type(c) is type(value) for c in constants):
                return False
        elif key in untyped and allowed <= _PRIMITIVES and json_type(value) not in allowed:
            return False
    return True


def _members_of(rev: Revision, merged: mi.StructType) -> list[str]:
    """The schema definitions a merged Struct stands for."""
    members = getattr(rev.module, f"_{merged.cls.__name__}_MEMBERS")
    names = [member.name for member in members]
    assert all(n in rev.defs for n in names), names
    return names


def _members(d: Disagreement, merged: mi.StructType) -> list[str]:
    return _members_of(d.rev, merged)


def merged_union(d: Disagreement) -> bool:
    found = _merged_object(d)
    if found is None:
        return False
    merged, obj = found
    return any(member_matches(d.rev, n, obj, merged, enums=True) for n in _members(d, merged))


def declared_additional_properties(d: Disagreement) -> bool:
    found = _open_entry(d)
    if found is None:
        return False
    index, step = found
    node = chain_node(d, index)
    return (
        isinstance(step.selected, mi.DictType)
        and node is not None
        and bool(node.get("properties"))
        and node.get("additionalProperties") not in (None, False)
    )


def raw_by_method(d: Disagreement) -> bool:
    found = _open_entry(d)
    if found is None:
        return False
    index, step = found
    if isinstance(step.selected, mi.RawType):
        return True
    # ResultResponse.result is declared Any; codec.decode fills it with msgspec.Raw.
    steps, _ = d.steps()
    parent = steps[index - 1].selected if index > 0 else None
    return (
        isinstance(parent, mi.StructType)
        and parent.cls is ResultResponse
        and step.key == "result"
        and isinstance(getattr(d.decoded_member(), "result", None), msgspec.Raw)
    )


def required_meta_default(d: Disagreement) -> bool:
    key, f = _dropped_field(d)
    return key == "_meta" and f is not None and f.default_factory is dict


def required_params_default(d: Disagreement) -> bool:
    key, f = _dropped_field(d)
    return (
        key == "params"
        and f is not None
        and f.default_factory is not msgspec.NODEFAULT
        and isinstance(f.type, mi.StructType)
        and isinstance(f.default_factory(), f.type.cls)
    )


_INVALID_VALUE = re.compile(r"Invalid value '(.*)'$", re.DOTALL)


def result_type_tag(d: Disagreement) -> bool:
    e = d.error
    if e is None or d.rev.revision != "2026-07-28" or not e.path.endswith(".resultType"):
        return False
    return _INVALID_VALUE.match(e.reason) is not None


def _offending_message(d: Disagreement) -> JSON:
    instance = d.instance
    if isinstance(instance, list) and d.error is not None:
        match = re.match(r"\$\[(\d+)\]", d.error.path)
        if match:
            return instance[int(match.group(1))]
    return instance


def typed_by_method(d: Disagreement) -> bool:
    if d.case.mode != "classified" or d.error is None:
        return False
    message = _offending_message(d)
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return False
    table = d.rev.codec.requests if "id" in message else d.rev.codec.notifications
    typed = table.get(message["method"])
    if typed is None:
        return bool(d.error.code == ErrorCode.METHOD_NOT_FOUND)
    return not d.rev.is_valid(typed.__name__, message)


def empty_batch(d: Disagreement) -> bool:
    return d.case.mode == "classified" and d.instance == [] and d.rev.codec.batches


_PATH_TOKEN = re.compile(r"\.([^.\[]+)|\[(\d+)\]")


def error_location(path: str) -> tuple[str | int, ...] | None:
    """The location a msgspec path names (``$.a.b[0]``); None where it is ambiguous (a
    ``[...]`` map key)."""
    if not path.startswith("$") or "[...]" in path:
        return None
    tokens = _PATH_TOKEN.findall(path[1:])
    if "".join(f".{k}" if k else f"[{i}]" for k, i in tokens) != path[1:]:
        return None
    return tuple(k if k else int(i) for k, i in tokens)


def merged_structured_field(d: Disagreement) -> bool:
    """The decoder rejected a value of another JSON kind under a structured field of a
    merged union that not every member declares."""
    if d.error is None or d.case.mode != "direct":
        return False
    loc = error_location(d.error.path)
    if not loc or not isinstance(loc[-1], str):
        return False
    steps = type_steps(type_info(d.case.type), d.instance, loc[:-1])
    if len(steps) != len(loc):
        return False
    merged = steps[-1].selected
    if not is_merged(merged):
        return False
    assert isinstance(merged, mi.StructType)
    f = next((f for f in merged.fields if f.encode_name == loc[-1]), None)
    shapes = {mi.StructType: dict, mi.DictType: dict, mi.ListType: list}
    value = d.instance
    for segment in loc:
        value = value[segment]
    declared_by = [
        n
        for n in _members_of(d.rev, merged)
        if loc[-1] in d.rev.mutator.s.resolve(d.rev.defs[n]).get("properties", {})
    ]
    return (
        f is not None
        and type(f.type) in shapes
        and not isinstance(value, shapes[type(f.type)])
        and len(declared_by) < len(_members_of(d.rev, merged))
    )


@dataclass(frozen=True)
class Leniency:
    """A deliberate difference from the schema (or a known bug), and the condition that
    must hold on a case for the row to explain it."""

    key: str
    #: ``accepts``: the decoder accepts what the schema rejects; ``rejects``: the reverse;
    #: ``agrees``: listed for completeness, no disagreement.
    direction: Literal["accepts", "rejects", "agrees"]
    reason: str
    applies: Callable[[Disagreement], bool] | None = None
    #: Where the row is observed when not in the property test.
    observed_by: str | None = None


LENIENCIES: tuple[Leniency, ...] = (
    Leniency(
        "unknown-properties",
        "agrees",
        "Unknown properties are ignored. Every object of the schemas is open (none sets "
        "additionalProperties false), so this agrees with the schema; drawn instances "
        "carry unknown keys, including property names of other revisions, and the round "
        "trip drops them.",
        observed_by="round trips of instances with unknown keys (counted)",
    ),
    Leniency(
        "constant-default",
        "accepts",
        "Required constant fields (jsonrpc, error code refinements) default to their "
        "constant when absent, so constructing a message needs no boilerplate.",
        constant_default,
    ),
    Leniency(
        "required-meta-default",
        "accepts",
        "In 2026-07-28 a request's params require _meta (protocolVersion and "
        "clientCapabilities inside); the field defaults to an empty dict, which the client "
        "session fills before sending, so a params object without _meta decodes as _meta "
        "{}. Whether the protocol fields are present is the stateless runtime's check.",
        required_meta_default,
    ),
    Leniency(
        "required-params-default",
        "accepts",
        "In 2026-07-28 a request's params are required (for their _meta) though every "
        "field of them may be left out; the field defaults to params with every field "
        "left out, so ListToolsRequest(id=1) builds as in the other revisions, and a "
        "request without params decodes as params {} (then _meta {}, as the row above). "
        "Whether the protocol fields are present is the stateless runtime's check.",
        required_params_default,
    ),
    Leniency(
        "lone-tag",
        "accepts",
        "Tag fields (method, type, and resultType in 2026-07-28) may be absent when a "
        "Struct is decoded as itself (msgspec reads the tag only to choose a union "
        "member); inside unions they are required. decode_result in 2026-07-28 reads a "
        "result without resultType as 'complete' (the spec's rule for older peers).",
        lone_tag,
    ),
    Leniency(
        "format",
        "agrees",
        "format (uri, uri-template, byte, date-time) is an annotation: it is not checked. "
        "The reference runs with format checking off, so this never disagrees here.",
        observed_by="test_format_is_not_checked",
    ),
    Leniency(
        "open-objects",
        "accepts",
        "_meta objects (and the *MetaObject definitions) and tool inputSchema/"
        "outputSchema are dict[str, Any]: every key the sender wrote is kept and their "
        "inner constraints (progressToken's type, inputSchema's type: 'object') are not "
        "checked.",
        open_objects,
    ),
    Leniency(
        "declared-additional-properties",
        "accepts",
        "An object that declares additionalProperties is a dict even where it also lists "
        "properties (Result, EmptyResult, GetTaskPayloadResult, JSONRPCRequest.params in "
        "2024-11-05/2025-03-26, error data objects): the listed properties are not checked "
        "(Result._meta; Result.resultType, required in 2026-07-28, where an absent one "
        "reads as 'complete' anyway).",
        declared_additional_properties,
    ),
    Leniency(
        "result-type-tag",
        "rejects",
        "In 2026-07-28 a Struct tagged on resultType rejects any resultType but its own "
        "tag ('complete' / 'input_required'), where the schema allows any string.",
        result_type_tag,
    ),
    Leniency(
        "merged-union",
        "accepts",
        "Merged unions (text|blob resource contents, elicitation primitive and enum "
        "schemas, ElicitRequestParams, 2025-03-26 batch members) are one Struct whose "
        "fields take the union of the members' types; membership is checked by required "
        "fields, constants and the JSON kind each member gives its primitive fields. A "
        "structured field whose types conflict across members (Any) is not looked into "
        "(checked here: some member passes exactly that rule).",
        merged_union,
    ),
    Leniency(
        "merged-structured-field",
        "rejects",
        "A structured field of a merged union keeps its type even where only some members "
        "declare it (ElicitRequestParams.requestedSchema), for typed access: a value of "
        "another shape there is rejected, though a member without the field would take "
        "it (a URL-mode ElicitRequestParams with 'requestedSchema': 5).",
        merged_structured_field,
    ),
    Leniency(
        "raw-by-method",
        "accepts",
        "A value whose type depends on the request it answers is kept as msgspec.Raw, to "
        "be typed by codec.decode_result(method): a response's result in codec.decode "
        "(JSONRPCMessage, JSONRPCResponse), and in 2026-07-28 the InputResponses values "
        "(keyed like the InputRequests they answer).",
        raw_by_method,
    ),
    Leniency(
        "typed-by-method",
        "rejects",
        "codec.decode (JSONRPCMessage, JSONRPCResponse) types a request or notification "
        "by its method: an unknown method is -32601 and params that fail the method's "
        "definition are -32602, though the generic JSONRPCRequest/JSONRPCNotification "
        "schema accepts any method and params object.",
        typed_by_method,
    ),
    Leniency(
        "empty-batch",
        "rejects",
        "An empty JSON-RPC batch is an Invalid Request in JSON-RPC 2.0; the 2025-03-26 "
        "batch schema has no minItems.",
        empty_batch,
    ),
)


def explain(d: Disagreement, direction: str) -> Leniency | None:
    for row in LENIENCIES:
        if row.direction == direction and row.applies is not None and row.applies(d):
            return row
    return None


# -- statistics ------------------------------------------------------------------------


@dataclass
class Stats:
    examples: int = 0
    accepted: int = 0
    round_trips: int = 0
    with_unknown_keys: int = 0
    mutations: int = 0
    mutations_rejected: int = 0
    paths_checked: int = 0
    leniency_hits: Counter[str] = field(default_factory=Counter)
    #: A few cases per leniency row: (revision, definition, what happened).
    leniency_samples: dict[str, list[str]] = field(default_factory=dict)
    per_definition: Counter[tuple[str, str]] = field(default_factory=Counter)
    covered: set[tuple[str, str]] = field(default_factory=set)

    def summary(self) -> str:
        hits = ", ".join(f"{k} {v}" for k, v in sorted(self.leniency_hits.items()))
        return (
            f"property tests ({PROFILE}): {len(self.covered)} definitions, "
            f"{self.examples} examples ({self.accepted} decoded, {self.round_trips} round "
            f"trips, {self.with_unknown_keys} with unknown keys), {self.mutations} mutations "
            f"({self.mutations_rejected} rejected, {self.paths_checked} paths checked); "
            f"leniencies seen: {hits or 'none'}"
        )


STATS = Stats()
#: Every definition of every revision; without the schemas one placeholder, which fails
#: saying where they belong (tests/conftest.py).
CASES = (
    [(rev, name) for rev in mcpspec.REVISIONS for name in definition_names(rev)]
    if SCHEMAS_MISSING is None
    else [("(no schemas)", "(no schemas)")]
)


@pytest.fixture(scope="module", autouse=True)
def _report(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None and STATS.examples:
        with capture.global_and_fixture_disabled():
            reporter.write_line("")
            reporter.write_line(STATS.summary())
    if STATS.per_definition:
        assert STATS.examples > 0
        assert STATS.round_trips > 0
        assert STATS.mutations_rejected > 0
    if STATS.covered >= set(CASES) - set(UNCOVERED):
        # A full run: the drawn instances did carry unknown keys (leniency table row 1).
        assert STATS.with_unknown_keys > 0


# -- the checks ----------------------------------------------------------------------------


def encode_json(instance: JSON) -> bytes:
    return json.dumps(instance, ensure_ascii=False).encode()


def has_unknown_keys(value: JSON, t: mi.Type) -> bool:
    """Whether a Struct somewhere in ``value`` decoded as ``t`` gets keys it ignores."""
    t = select(t, value) or t
    if isinstance(t, mi.StructType) and isinstance(value, dict):
        fields = {f.encode_name: f for f in t.fields}
        if any(k not in fields and k != t.tag_field for k in value):
            return True
        return any(has_unknown_keys(value[k], f.type) for k, f in fields.items() if k in value)
    if isinstance(t, mi.DictType) and isinstance(value, dict):
        return any(has_unknown_keys(v, t.value_type) for v in value.values())
    if isinstance(t, mi.ListType) and isinstance(value, list):
        return any(has_unknown_keys(v, t.item_type) for v in value)
    return False


def check_classified_type(case: Case, instance: JSON, decoded: Any) -> None:
    if isinstance(decoded, (ResultResponse, ErrorResponse)):
        assert "method" not in instance
        assert ("error" in instance) == isinstance(decoded, ErrorResponse)
        return
    assert case.name != "JSONRPCResponse", "a JSONRPCResponse decoded as a request"
    table = case.rev.codec.requests if "id" in instance else case.rev.codec.notifications
    assert type(decoded) is table[instance["method"]]


def check_round_trip(case: Case, instance: JSON, decoded: Any, method: str | None) -> None:
    codec = case.rev.codec
    encoded = codec.encode(decoded)
    if case.mode == "classified" and isinstance(decoded, list):
        assert isinstance(instance, list) and len(instance) == len(decoded)
        for item, value in zip(instance, decoded, strict=True):
            check_classified_type(case, item, value)
        pairs = zip(instance, decoded, strict=True)
        expected: JSON = [project(i, type_info(type(v))) for i, v in pairs]
    elif case.mode == "classified":
        check_classified_type(case, instance, decoded)
        expected = project(instance, type_info(type(decoded)))
    else:
        t = type_info(codec.result_type(method)) if case.mode == "keyed" else type_info(case.type)
        expected = project(instance, t)
        if has_unknown_keys(instance, t):
            STATS.with_unknown_keys += 1
    assert json.loads(encoded) == expected, "re-encoded JSON differs from the projection"
    again = case.decode(encoded, method)
    assert again == decoded, "decode(encode(x)) != x"
    STATS.round_trips += 1


def decode(case: Case, instance: JSON, method: str | None) -> tuple[Any, InvalidMessage | None]:
    """(decoded, error): only InvalidMessage may escape the codec. A batch with a bad
    member counts as rejected (its first bad member's error)."""
    try:
        value = case.decode(encode_json(instance), method)
    except InvalidMessage as exc:
        return None, exc
    if isinstance(value, list) and case.mode == "classified":
        bad = [v for v in value if isinstance(v, InvalidMessage)]
        if bad:
            return value, bad[0]
    return value, None


def expected_paths(d: Disagreement, prefix: str) -> set[str]:
    """The paths that point at a mutation: the value's own, or for a dropped property its
    object's (or the key's own); a membership error of a merged union is reported at the
    merged object."""
    assert d.mutation is not None
    steps, loc = d.steps()
    batch = ""
    if len(loc) < len(d.mutation.location):  # a batch member
        batch = f"[{d.mutation.location[0]}]"
    base = prefix + batch
    full = msgspec_path(steps, loc, base)
    parent = msgspec_path(steps, loc[:-1], base) if loc else base
    paths = {full}
    if d.mutation.kind == "drop":
        paths.add(parent)
    if len(steps) >= len(loc) and loc and is_merged(steps[len(loc) - 1].selected):
        paths.add(parent)
    return paths


def record(row: Leniency, d: Disagreement, outcome: str) -> None:
    STATS.leniency_hits[row.key] += 1
    what = d.mutation.describe() if d.mutation else "drawn instance"
    sample = f"{d.rev.revision} {d.case.name}: {what}: {outcome}"
    samples = STATS.leniency_samples.setdefault(row.key, [])
    if len(samples) < 50:
        samples.append(sample)
    note(f"explained by {row.key}: {sample}")


def check_instance(
    case: Case,
    instance: JSON,
    original: JSON,
    decoded_original: Any,
    method: str | None,
    mutation: Mutation | None,
) -> tuple[bool, Any]:
    """Judge one instance with both sides; returns (decoder accepted, decoded)."""
    reference = case.reference(instance, method)
    decoded, error = decode(case, instance, method)
    accepted = error is None
    d = Disagreement(case, instance, original, decoded_original, method, mutation, error)
    if accepted and reference:
        check_round_trip(case, instance, decoded, method)
    elif accepted and not reference:
        row = explain(d, "accepts")
        assert row is not None, (
            f"decoder accepts what the schema rejects: {mutation and mutation.describe()}"
        )
        record(row, d, "accepted")
    elif reference:
        assert error is not None
        row = explain(d, "rejects")
        assert row is not None, (
            f"decoder rejects a valid instance: {error.path}: {error.reason} "
            f"({mutation and mutation.describe()})"
        )
        record(row, d, f"rejected at {error.path}: {error.reason}")
    else:
        assert error is not None
        if mutation is not None:
            STATS.mutations_rejected += 1
            prefix = "$.result" if case.mode == "keyed" else "$"
            paths = expected_paths(d, prefix)
            assert error.path in paths, (
                f"{mutation.describe()}: rejected at {error.path!r} ({error.reason}), "
                f"expected one of {sorted(paths)}"
            )
            STATS.paths_checked += 1
    return accepted, decoded


@pytest.mark.parametrize(("rev", "name"), CASES, ids=[f"{r}-{n}" for r, n in CASES])
@PROFILE_SETTINGS
@given(data=st.data())
def test_definition(rev: str, name: str, data: st.DataObject) -> None:
    """Round trip, mutations and the differential, for one definition."""
    if (rev, name) in UNCOVERED:
        pytest.skip(UNCOVERED[(rev, name)])
    case = case_of(rev, name)
    revision_ = case.rev
    method: str | None = None
    strategy = revision_.strategies.definition(name)
    if case.mode == "keyed":
        method = data.draw(st.sampled_from(case.methods), label="method")
        members = [revision_.strategies.strategy(result_schema(revision_, method), 0)]
        strategy = st.one_of(strategy, *members)
    instance = data.draw(strategy, label="instance")
    STATS.examples += 1
    STATS.per_definition[(rev, name)] += 1
    STATS.covered.add((rev, name))
    note(f"instance: {json.dumps(instance)}")
    # The strategies are checked, not trusted: every drawn instance is schema-valid.
    assert revision_.is_valid(name, instance), revision_.errors(name, instance)
    accepted, decoded = check_instance(case, instance, instance, None, method, None)
    if not accepted or not case.reference(instance, method):
        return  # mutations of an instance the decoder rejects (explained) prove nothing
    STATS.accepted += 1
    candidates = revision_.mutator.mutations(instance, case.root_schema(method))
    if not candidates:
        return
    chosen = data.draw(
        st.lists(
            st.sampled_from(candidates), max_size=MUTATIONS_PER_EXAMPLE, unique_by=Mutation.describe
        ),
        label="mutations",
    )
    for mutation in chosen:
        STATS.mutations += 1
        note(f"mutation: {mutation.describe()}")
        mutated = mutation.apply(instance)
        check_instance(case, mutated, instance, decoded, method, mutation)


def test_every_definition_is_covered() -> None:
    for rev in mcpspec.REVISIONS:
        names = definition_names(rev)
        covered = [n for n in names if (rev, n) not in UNCOVERED]
        modes = Counter(case_of(rev, n).mode for n in covered)
        assert len(covered) == len(names), (rev, sorted(set(names) - set(covered)))
        assert sum(modes.values()) == len(names)
        assert len(covered) == DEFINITIONS[rev], (rev, len(covered))
    assert len(CASES) == sum(DEFINITIONS.values())


# -- every leniency row, shown on one hand-written case -----------------------------------

_META_2026 = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}

#: row -> (revision, definition, method for keyed unions, valid instance, mutation or None
#: for the instance itself). Each must be a disagreement the row (and no other) explains.
LENIENCY_CASES: dict[str, tuple[str, str, str | None, JSON, str | None]] = {
    "constant-default": (
        "2025-11-25",
        "PingRequest",
        None,
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        "drop required $.jsonrpc",
    ),
    "required-meta-default": (
        "2026-07-28",
        "PaginatedRequestParams",
        None,
        {"_meta": _META_2026},
        "drop required $._meta",
    ),
    "required-params-default": (
        "2026-07-28",
        "ListToolsRequest",
        None,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": _META_2026}},
        "drop required $.params",
    ),
    "lone-tag": (
        "2025-11-25",
        "TextContent",
        None,
        {"type": "text", "text": "hi"},
        "drop required $.type",
    ),
    "open-objects": (
        "2025-11-25",
        "Tool",
        None,
        {"name": "t", "inputSchema": {"type": "object"}},
        "const $.inputSchema.type -> 'object-x'",
    ),
    "declared-additional-properties": (
        "2025-11-25",
        "Result",
        None,
        {"_meta": {}},
        "type $._meta -> 7",
    ),
    "result-type-tag": (
        "2026-07-28",
        "CallToolResult",
        None,
        {"resultType": "deferred", "content": []},
        None,
    ),
    "merged-union": (
        "2025-11-25",
        "PrimitiveSchemaDefinition",
        None,
        {"type": "array", "items": {"type": "string", "enum": ["a"]}},
        "type $.items -> 7",
    ),
    "merged-structured-field": (
        "2025-11-25",
        "ElicitRequestParams",
        None,
        {
            "mode": "url",
            "url": "https://example.com",
            "message": "m",
            "elicitationId": "e",
            "requestedSchema": 5,
        },
        None,
    ),
    "raw-by-method": (
        "2025-11-25",
        "JSONRPCMessage",
        None,
        {"jsonrpc": "2.0", "id": 1, "result": {"_meta": {}}},
        "type $.result._meta -> 7",
    ),
    "typed-by-method": (
        "2025-11-25",
        "JSONRPCMessage",
        None,
        {"jsonrpc": "2.0", "id": 1, "method": "no/such/method"},
        None,
    ),
    "empty-batch": ("2025-03-26", "JSONRPCMessage", None, [], None),
}
_KEYED_LONE_TAG = (
    "2026-07-28",
    "ServerResult",
    "tools/call",
    {"resultType": "complete", "content": []},
    "drop required $.resultType",
)


def _leniency_params() -> list[Any]:
    cases = [pytest.param(key, *case, id=key) for key, case in LENIENCY_CASES.items()]
    cases.append(pytest.param("lone-tag", *_KEYED_LONE_TAG, id="lone-tag-decode_result"))
    return cases


def test_every_leniency_row_has_a_case() -> None:
    rows = {row.key for row in LENIENCIES if row.applies is not None}
    assert rows == set(LENIENCY_CASES)
    assert len({row.key for row in LENIENCIES}) == len(LENIENCIES)


@pytest.mark.parametrize(("key", "rev", "name", "method", "original", "change"), _leniency_params())
def test_leniency_row(
    key: str, rev: str, name: str, method: str | None, original: JSON, change: str | None
) -> None:
    """The row's disagreement happens on its case, and the row (only) explains it."""
    case = case_of(rev, name)
    r = case.rev
    assert r.is_valid(name, original)
    mutation = None
    instance = original
    decoded_original = None
    if change is not None:
        decoded_original, error = decode(case, original, method)
        assert error is None, error
        found = r.mutator.mutations(original, case.root_schema(method))
        matching = [m for m in found if m.describe() == change]
        assert matching, [m.describe() for m in found]
        mutation = matching[0]
        instance = mutation.apply(original)
    reference = case.reference(instance, method)
    _, error = decode(case, instance, method)
    assert reference == (error is not None), "no disagreement: is the row still needed?"
    d = Disagreement(case, instance, original, decoded_original, method, mutation, error)
    direction = "accepts" if error is None else "rejects"
    explaining = [
        row.key
        for row in LENIENCIES
        if row.direction == direction and row.applies is not None and row.applies(d)
    ]
    assert explaining == [key]


# -- dispatch tables -----------------------------------------------------------------------


@pytest.mark.parametrize("rev", mcpspec.REVISIONS)
def test_dispatch_tables(rev: str) -> None:
    r = revision(rev)
    m = r.module
    tables = {
        "CLIENT_REQUESTS": ("ClientRequest", m.CLIENT_REQUESTS),
        "SERVER_REQUESTS": ("ServerRequest", m.SERVER_REQUESTS),
        "CLIENT_NOTIFICATIONS": ("ClientNotification", m.CLIENT_NOTIFICATIONS),
        "SERVER_NOTIFICATIONS": ("ServerNotification", m.SERVER_NOTIFICATIONS),
        "INPUT_REQUESTS": ("InputRequest", m.INPUT_REQUESTS),
    }
    for table_name, (union, table) in tables.items():
        for method, t in table.items():
            assert isinstance(t, type) and issubclass(t, msgspec.Struct), (table_name, method)
            assert getattr(t, "method", None) == method, (table_name, method, t)
            assert t.__struct_config__.tag_field == "method", (table_name, method)
            assert t.__struct_config__.tag == method, (table_name, method)
        # The table is the schema's union, member for member.
        expected = {k: getattr(m, v) for k, v in method_table(r, union).items()}
        assert dict(table) == expected, table_name
    requests = {**m.CLIENT_REQUESTS, **m.SERVER_REQUESTS, **m.INPUT_REQUESTS}
    assert set(m.RESULTS) == set(requests), "RESULTS must have an entry for every request"
    for method in requests:
        names = result_definition_names(r, method)
        members = union_members(m.RESULTS[method])
        assert len(members) == len(names), (method, members, names)
        for member, name in zip(members, names, strict=True):
            assert member is getattr(m, name), (method, member, name)
    for method, result in m.TASK_RESULTS.items():
        assert method in requests, method
        assert result is m.CreateTaskResult, method
        request = requests[method]
        params = next(f for f in msgspec.structs.fields(request) if f.encode_name == "params")
        params_types = [a for a in get_args(params.type) or (params.type,) if isinstance(a, type)]
        assert any(
            "task" in {f.encode_name for f in msgspec.structs.fields(p)} for p in params_types
        ), method
    if "CreateTaskResult" in r.defs:
        assert m.TASK_RESULTS, "a revision with tasks has task-augmented requests"
    # The codec uses the module's tables.
    c = r.codec
    assert c.client_requests is m.CLIENT_REQUESTS
    assert c.server_requests is m.SERVER_REQUESTS
    assert c.client_notifications is m.CLIENT_NOTIFICATIONS
    assert c.server_notifications is m.SERVER_NOTIFICATIONS
    assert c.input_requests is m.INPUT_REQUESTS
    assert c.results is m.RESULTS
    assert c.task_results is m.TASK_RESULTS
    for method in requests:
        assert c.result_type(method) is m.RESULTS[method]


# -- format ----------------------------------------------------------------------------

#: (definition, instance with an ill-formed value, the property whose format it breaks)
_FORMAT_CASES: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("Resource", {"uri": "not a uri at all", "name": "n"}, "uri"),
    ("BlobResourceContents", {"uri": "u", "blob": "*** not base64 ***"}, "blob"),
    ("ResourceTemplate", {"uriTemplate": "{{{", "name": "n"}, "uriTemplate"),
)


@pytest.mark.parametrize("rev", mcpspec.REVISIONS)
def test_format_is_not_checked(rev: str) -> None:
    """Leniency ``format``: a value that breaks its property's format still decodes."""
    r = revision(rev)
    for name, instance, prop in _FORMAT_CASES:
        node = r.strategies.resolve(r.defs[name])
        assert "format" in r.strategies.resolve(node["properties"][prop]), (name, prop)
        assert r.is_valid(name, instance)  # format checking off: the reference agrees
        decoded = r.codec.decode_as(getattr(r.module, name), encode_json(instance))
        assert json.loads(r.codec.encode(decoded))[prop] == instance[prop]
