"""Hypothesis strategies and mutations driven by a patched MCP JSON Schema.

Why our own strategies: ``hypothesis-jsonschema`` 0.23.1 (the newest release) calls
``cu.many(...).more()``, a Hypothesis internal that current Hypothesis no longer has, so
every object schema fails with ``AttributeError: 'many' object has no attribute 'more'``.
The strategies below cover exactly the keywords the MCP schemas use (``$ref``, ``anyOf``,
``allOf``, ``const``, ``enum``, type arrays, ``properties``/``required``,
``additionalProperties``, ``items``, ``minItems``/``maxItems``, ``minimum``/``maximum``,
``format``) and fail loudly on anything else. They are not trusted blindly: the tests
assert that the reference validator (``jsonschema``) accepts every instance drawn here.

Instances carry unknown keys (names no object of the revision defines, plus property
names of other revisions, as real peers send), strings drawn partly from the schema's
own constants (so ``resultType``, ``method``, ``mode`` often hold meaningful values) and
strings that ignore ``format``.

:class:`Mutator` lists the changes the schema forbids at each location of a valid
instance: drop a required property, give a value a JSON type its schema does not allow,
change a constant or enum value.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

__all__ = [
    "JSON_TYPES",
    "Mutation",
    "Mutator",
    "SchemaStrategies",
    "json_type",
    "json_values",
]

JSON = Any
Segment = str | int
Location = tuple[Segment, ...]

#: JSON Schema type names, in the order replacement values are tried.
JSON_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")

#: One value of each JSON type that is surely not of the others (2.5 is not an integer).
_REPLACEMENTS: dict[str, JSON] = {
    "null": None,
    "boolean": True,
    "integer": 7,
    "number": 2.5,
    "string": "mutated",
    "array": [],
    "object": {},
}

#: Keywords that only annotate; everything else must be understood by the generator.
_ANNOTATIONS = frozenset({"description", "title", "$comment", "examples", "default"})
_KNOWN = _ANNOTATIONS | {
    "$ref",
    "anyOf",
    "allOf",
    "const",
    "enum",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "format",
    "$schema",
}

#: Well-formed samples for the formats the schemas use. ``format`` is an annotation the
#: decoders do not check, so arbitrary strings are drawn as well.
_FORMAT_SAMPLES: dict[str, list[str]] = {
    "uri": ["https://example.com/a?b=c#d", "file:///project/readme.md", "urn:isbn:0451450523"],
    "uri-template": ["file:///{path}", "https://example.com/{id}/items{?page}"],
    "byte": ["", "AAAA", "aGVsbG8gd29ybGQ="],
    "date-time": ["2025-01-12T15:00:58Z"],
}


class UnsupportedKeyword(ValueError):
    """The schema uses a keyword these strategies do not implement."""


def json_type(value: JSON) -> str:
    """The most specific JSON Schema type name of a JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    raise TypeError(f"not a JSON value: {value!r}")


def json_values(nested: bool = True) -> SearchStrategy[JSON]:
    """Any small JSON value (containers two levels deep at most: cheap to draw)."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=8)
    )
    if not nested:
        return scalars
    return (
        scalars
        | st.lists(scalars, max_size=2)
        | st.dictionaries(st.text(max_size=6), scalars, max_size=2)
    )


def _collect(schema: JSON, props: set[str], strings: set[str]) -> None:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                props.update(value)
                for sub in value.values():
                    _collect(sub, props, strings)
            elif key == "const" and isinstance(value, str):
                strings.add(value)
            elif key == "enum":
                strings.update(v for v in value if isinstance(v, str))
            else:
                _collect(value, props, strings)
    elif isinstance(schema, list):
        for item in schema:
            _collect(item, props, strings)


def property_names(schema: dict[str, Any]) -> set[str]:
    """Every property name any object of ``schema`` defines."""
    props: set[str] = set()
    _collect(schema, props, set())
    return props


class SchemaStrategies:
    """Strategies for the definitions of one patched schema.

    Nesting (objects and arrays) is generated in full up to ``full_depth`` levels; below
    it only required properties are drawn, arrays stay at their minimum size and no
    unknown keys are added, so recursive definitions (``JSONValue``, content blocks in
    tool results) stay finite.
    """

    def __init__(
        self,
        schema: dict[str, Any],
        *,
        foreign_names: frozenset[str] = frozenset(),
        full_depth: int = 2,
    ) -> None:
        self.key = "$defs" if "$defs" in schema else "definitions"
        self.defs: dict[str, Any] = schema[self.key]
        props: set[str] = set()
        strings: set[str] = set()
        _collect(self.defs, props, strings)
        self.property_names = frozenset(props)
        self.full_depth = full_depth
        #: Unknown keys: never a property of this revision, so they cannot make an
        #: instance of one union member look like another.
        extra = sorted(
            ({"xUnknown", "x-extra", "__extension", "io.example/ext", "zz"} | foreign_names) - props
        )
        self.extra_keys: SearchStrategy[str] = st.sampled_from(extra) | st.text(
            min_size=1, max_size=6
        ).filter(lambda k: k not in self.property_names)
        self.strings: SearchStrategy[str] = st.sampled_from(sorted(strings)) | st.text(max_size=12)
        self._memo: dict[tuple[int, int], SearchStrategy[JSON]] = {}
        #: Merged ``allOf`` nodes by the id of their source node (which the schema keeps
        #: alive), so each is made once and its own id() stays a valid memo key.
        self._merged: dict[int, dict[str, Any]] = {}

    # -- resolution ----------------------------------------------------------------------

    def deref(self, node: dict[str, Any]) -> dict[str, Any]:
        """``node`` with ``$ref`` chains followed (siblings of ``$ref`` are annotations)."""
        seen = 0
        while "$ref" in node:
            ref = node["$ref"]
            prefix = f"#/{self.key}/"
            if not ref.startswith(prefix):
                raise UnsupportedKeyword(f"$ref outside the definitions: {ref}")
            node = self.defs[ref[len(prefix) :]]
            seen += 1
            if seen > 50:
                raise UnsupportedKeyword(f"$ref cycle at {ref}")
        return node

    def merged_all_of(self, node: dict[str, Any]) -> dict[str, Any]:
        """One object schema for an ``allOf`` of object schemas: properties combined
        with ``allOf`` where several parts define them, required names united."""
        found = self._merged.get(id(node))
        if found is None:
            found = self._merged[id(node)] = self._merge(node)
        return found

    def _merge(self, node: dict[str, Any]) -> dict[str, Any]:
        props: dict[str, list[Any]] = {}
        required: list[str] = []
        addl: list[Any] = []
        for part in node["allOf"]:
            part = self.deref(part)
            if "allOf" in part:
                part = self.merged_all_of(part)
            if part.get("type", "object") != "object":
                raise UnsupportedKeyword(f"allOf of non-objects: {node!r}")
            for key, sub in part.get("properties", {}).items():
                props.setdefault(key, []).append(sub)
            required += [r for r in part.get("required", []) if r not in required]
            if "additionalProperties" in part:
                addl.append(part["additionalProperties"])
        merged: dict[str, Any] = {
            "type": "object",
            "properties": {k: v[0] if len(v) == 1 else {"allOf": v} for k, v in props.items()},
            "required": required,
        }
        if addl:
            merged["additionalProperties"] = addl[0]
        return merged

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        """``node`` with references followed and an ``allOf`` merged, when it is one."""
        node = self.deref(node)
        if "allOf" in node:
            parts = [self.deref(p) for p in node["allOf"]]
            if all(p.get("type", "object") == "object" and "const" not in p for p in parts):
                return self.merged_all_of(node)
        return node

    # -- strategies ----------------------------------------------------------------------

    def definition(self, name: str) -> SearchStrategy[JSON]:
        """Instances of the definition ``name``."""
        return self.strategy(self.defs[name], 0)

    def strategy(self, node: dict[str, Any], depth: int) -> SearchStrategy[JSON]:
        depth = min(depth, self.full_depth + 1)
        memo_key = (id(node), depth)
        found = self._memo.get(memo_key)
        if found is None:
            found = self._memo[memo_key] = st.deferred(lambda: self._build(node, depth))
        return found

    def _build(self, node: dict[str, Any], depth: int) -> SearchStrategy[JSON]:
        unknown = set(node) - _KNOWN
        if unknown:
            raise UnsupportedKeyword(f"keywords {sorted(unknown)} in {node!r}")
        if "$ref" in node:
            return self.strategy(self.deref(node), depth)
        if "const" in node:
            return st.just(node["const"])
        if "enum" in node:
            return st.sampled_from(node["enum"])
        if "anyOf" in node:
            return st.one_of([self.strategy(arm, depth) for arm in node["anyOf"]])
        if "allOf" in node:
            resolved = self.resolve(node)
            if resolved is not node:
                return self.strategy(resolved, depth)
            parts = [self.deref(p) for p in node["allOf"]]
            const = [p["const"] for p in parts if "const" in p]
            if const:
                return st.just(const[0])
            raise UnsupportedKeyword(f"allOf without object parts or const: {node!r}")
        kind = node.get("type")
        if isinstance(kind, list):
            return st.one_of([self._typed(node, k, depth) for k in kind])
        if kind is None and "properties" in node:
            kind = "object"
        if kind is None:
            if set(node) <= _ANNOTATIONS:
                return json_values()
            raise UnsupportedKeyword(f"no type in {node!r}")
        return self._typed(node, kind, depth)

    def _typed(self, node: dict[str, Any], kind: str, depth: int) -> SearchStrategy[JSON]:
        if kind == "null":
            return st.none()
        if kind == "boolean":
            return st.booleans()
        if kind == "string":
            fmt = node.get("format")
            if fmt is not None:
                samples = _FORMAT_SAMPLES.get(fmt)
                if samples is None:
                    raise UnsupportedKeyword(f"format {fmt!r}")
                return st.sampled_from(samples) | st.text(max_size=12)
            return self.strings
        low, high = node.get("minimum"), node.get("maximum")
        if kind == "integer":
            return st.integers(
                None if low is None else math.ceil(low), None if high is None else math.floor(high)
            )
        if kind == "number":
            return st.integers(
                None if low is None else math.ceil(low), None if high is None else math.floor(high)
            ) | st.floats(low, high, allow_nan=False, allow_infinity=False)
        if kind == "array":
            shallow = depth > self.full_depth
            min_size = node.get("minItems", 0)
            max_size = node.get("maxItems", 3 if not shallow else min_size)
            max_size = min(max_size, max(min_size, 3 if not shallow else min_size))
            items = self.strategy(node.get("items", {}), depth + 1)
            return st.lists(items, min_size=min_size, max_size=max_size)
        if kind == "object":
            return self._object(node, depth)
        raise UnsupportedKeyword(f"type {kind!r}")

    def _object(self, node: dict[str, Any], depth: int) -> SearchStrategy[JSON]:
        shallow = depth > self.full_depth
        props: dict[str, Any] = node.get("properties", {})
        required = node.get("required", [])
        fixed = {
            k: self.strategy(props[k], depth + 1) if k in props else json_values() for k in required
        }
        optional = (
            {}
            if shallow
            else {k: self.strategy(v, depth + 1) for k, v in props.items() if k not in fixed}
        )
        base = st.fixed_dictionaries(fixed, optional=optional)
        if shallow:
            return base
        addl = node.get("additionalProperties", True)
        if addl is False:
            return base
        if isinstance(addl, dict) and addl:
            values = self.strategy(addl, depth + 1)
        else:
            values = json_values(nested=False)
        # Objects that list no properties are maps: any key. Others get unknown keys.
        keys = st.text(max_size=8) if not props else self.extra_keys
        extras = st.dictionaries(keys, values, max_size=2)
        return st.builds(lambda known, more: {**more, **known}, base, extras)


@dataclass(frozen=True)
class Mutation:
    """One change the schema forbids, at ``location`` (keys and indexes from the root).

    ``kind`` is ``drop`` (remove the required property ``location[-1]`` from its
    object), ``type`` (replace the value with one of a JSON type the schema does not
    allow there) or ``const`` (replace a constant or enum value by another value of the
    same JSON type). ``chain`` holds the resolved schema node of every prefix of
    ``location`` (the root's first; for ``drop`` it ends at the parent object).
    """

    kind: Literal["drop", "type", "const"]
    location: Location
    value: JSON = None
    chain: tuple[dict[str, Any], ...] = field(default=(), compare=False, repr=False)

    def apply(self, instance: JSON) -> JSON:
        if not self.location:
            return copy.deepcopy(self.value)
        out = copy.deepcopy(instance)
        parent = out
        for segment in self.location[:-1]:
            parent = parent[segment]
        if self.kind == "drop":
            del parent[self.location[-1]]
        else:
            parent[self.location[-1]] = copy.deepcopy(self.value)
        return out

    def describe(self) -> str:
        where = "$" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in self.location)
        if self.kind == "drop":
            return f"drop required {where}"
        return f"{self.kind} {where} -> {self.value!r}"


class Mutator:
    """The mutations the schema forbids, found by walking a valid instance along its
    schema. Where a value sits under an ``anyOf``, the walk follows the first arm it
    matches (``is_valid(arm, value)``, asked of the reference validator)."""

    def __init__(
        self,
        strategies: SchemaStrategies,
        is_valid: Callable[[dict[str, Any], JSON], bool],
        max_items: int = 2,
    ) -> None:
        self.s = strategies
        self.is_valid = is_valid
        self.max_items = max_items

    def allowed_types(self, node: dict[str, Any]) -> set[str]:
        """JSON types a value may have under ``node`` (``integer`` counted apart from a
        non-integral ``number``)."""
        node = self.s.resolve(node)
        if "const" in node:
            return {json_type(node["const"])}
        if "enum" in node:
            return {json_type(v) for v in node["enum"]}
        if "anyOf" in node:
            return set().union(*(self.allowed_types(a) for a in node["anyOf"]))
        if "allOf" in node:
            return set.intersection(*(self.allowed_types(p) for p in node["allOf"]))
        kind = node.get("type")
        if kind is None:
            return {"object"} if "properties" in node else set(JSON_TYPES)
        kinds = set(kind) if isinstance(kind, list) else {kind}
        if "number" in kinds:
            kinds.add("integer")
        return kinds

    def constant_of(self, node: dict[str, Any]) -> tuple[JSON, ...] | None:
        """The values a constant or enum node allows, else ``None``."""
        node = self.s.resolve(node)
        if "const" in node:
            return (node["const"],)
        if "enum" in node:
            return tuple(node["enum"])
        for part in node.get("allOf", []):
            found = self.constant_of(part)
            if found is not None:
                return found
        return None

    def mutations(self, instance: JSON, root: dict[str, Any]) -> list[Mutation]:
        """Every forbidden change this walk finds in ``instance`` (valid under ``root``)."""
        out: list[Mutation] = []
        self._value(instance, root, (), (), out)
        return out

    def _value(
        self,
        value: JSON,
        node: dict[str, Any],
        loc: Location,
        chain: tuple[dict[str, Any], ...],
        out: list[Mutation],
    ) -> None:
        resolved = self.s.resolve(node)
        here = (*chain, resolved)
        allowed = self.allowed_types(node)
        out += [
            Mutation("type", loc, _REPLACEMENTS[kind], here)
            for kind in JSON_TYPES
            if kind not in allowed
        ]
        constants = self.constant_of(node)
        if constants is not None:
            changed = _other_value(constants)
            if changed is not None:
                out.append(Mutation("const", loc, changed, here))
            return
        self._inside(value, resolved, loc, chain, out)

    def _inside(
        self,
        value: JSON,
        node: dict[str, Any],
        loc: Location,
        chain: tuple[dict[str, Any], ...],
        out: list[Mutation],
    ) -> None:
        if "anyOf" in node:
            for arm in node["anyOf"]:
                if self.is_valid(arm, value):
                    self._inside(value, self.s.resolve(arm), loc, chain, out)
                    return
            return
        here = (*chain, node)
        kinds = node.get("type")
        kinds = set(kinds) if isinstance(kinds, list) else {kinds}
        if isinstance(value, dict) and ("object" in kinds or "properties" in node):
            props = node.get("properties", {})
            out += [
                Mutation("drop", (*loc, key), None, here)
                for key in node.get("required", [])
                if key in value
            ]
            addl = node.get("additionalProperties")
            for key, item in value.items():
                if key in props:
                    self._value(item, props[key], (*loc, key), here, out)
                elif isinstance(addl, dict) and addl:
                    self._value(item, addl, (*loc, key), here, out)
        elif isinstance(value, list) and "array" in kinds:
            items = node.get("items", {})
            for index, item in enumerate(value[: self.max_items]):
                self._value(item, items, (*loc, index), here, out)


def _other_value(constants: tuple[JSON, ...]) -> JSON:
    """A value of the same JSON type as ``constants[0]`` that is none of them."""
    first = constants[0]
    if isinstance(first, bool):
        return None if set(constants) >= {True, False} else (not first)
    if isinstance(first, int):
        number = first + 1
        while number in constants:
            number += 1
        return number
    if isinstance(first, str):
        text = first + "-x"
        while text in constants:
            text += "x"
        return text
    return None


def iter_locations(value: JSON, loc: Location = ()) -> Iterator[tuple[Location, JSON]]:
    """Every (location, value) pair of a JSON value, the root first."""
    yield loc, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from iter_locations(item, (*loc, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from iter_locations(item, (*loc, index))
