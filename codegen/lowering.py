"""Type lowering: schema definitions and nodes to the model's Structs, aliases and types.

Rules, in the order they apply to an object schema:

* ``_meta``, tool ``inputSchema``/``outputSchema`` and every ``*MetaObject`` are open
  objects whatever the schema lists: ``dict[str, Any]`` keeps every key the sender wrote.
* An object with ``additionalProperties`` (``{}``, ``true`` or a schema), or with no
  properties at all, is a ``dict``; any other object is a Struct. Struct decoding ignores
  unknown fields, as it must: peers send fields newer than the negotiated revision.
* An inline object becomes a Struct named ``<Owner><Property>``, the name later revisions
  give the same concept (``CallToolRequest.params`` -> ``CallToolRequestParams``).
* A Struct with a constant ``method`` or ``type`` is tagged on it; in the stateless
  revisions results are tagged on ``resultType`` (on its constant where the schema
  gives one: an extension's ``CreateTaskResult`` is ``"task"``). Other constants are
  fields that default to the constant.
* A required ``_meta`` (2026-07-28 requests) defaults to an empty dict, so a message
  can be built before the session adds the per-request protocol fields.
* ``number`` is ``int | float``, so ``5`` re-encodes as ``5``.
* An object whose ``additionalProperties`` is ``{"not": {}}`` and that lists no
  properties is an empty Struct (the extension capabilities of an extension schema).
* Unions follow :mod:`.unions`. An inline union arm identical to a definition is that
  definition (the TypeScript conversion inlines named arms). ``allOf`` of a base and a
  union distributes: each arm joined with the base is a Struct named ``<Owner><Arm>``,
  and the definition is the union of those.
"""

from __future__ import annotations

import json
from typing import Any

from mcpspec.runtime.declared import RESULT_COMPLETE, RESULT_INPUT_REQUIRED

from .model import ANY, RAW, Alias, Field, Module, Struct, Type, UnsupportedSchema
from .naming import clean_doc, pascal_case, snake_case
from .patch import definitions_key
from .unions import ANY_UNIONS, OWNED_UNIONS, UnionPlanner, strategy_of

__all__ = ["DISCOVER_METHOD", "OPEN_PROPERTIES", "RESULT_TYPE_TAGS", "SchemaLowering"]

#: The request that replaces ``initialize`` in the stateless protocol model: a schema
#: that defines it is of a revision negotiated per request.
DISCOVER_METHOD = "server/discover"

#: Open objects by property name: their keys are the sender's, never a fixed set.
OPEN_PROPERTIES = frozenset({"_meta", "inputSchema", "outputSchema"})

#: ``resultType`` tags of 2026-07-28 results; every other result is ``complete``.
RESULT_TYPE_TAGS = {"InputRequiredResult": RESULT_INPUT_REQUIRED}

_TAG_FIELDS = ("method", "type")


class SchemaLowering:
    """Lowers the definitions of one patched schema into ``module``, on demand: each
    definition once, what it references first."""

    def __init__(
        self, revision: str, schema: dict[str, Any], stateless: bool | None = None
    ) -> None:
        self.key = definitions_key(schema)
        self.defs: dict[str, Any] = schema[self.key]
        self.names = frozenset(self.defs)
        self.module = Module(revision=revision, definitions=len(self.defs))
        self.unions = UnionPlanner(self.module)
        self._by_shape: dict[str, str] | None = None
        #: Negotiated per request (results are tagged on ``resultType``), where the
        #: schema defines ``server/discover`` (an extension's schema: where ``stateless``
        #: says its revision is).
        self.stateless = (
            stateless
            if stateless is not None
            else any(
                node.get("properties", {}).get("method", {}).get("const") == DISCOVER_METHOD
                for node in self.defs.values()
            )
        )

    # -- references ---------------------------------------------------------------------

    def deref(self, node: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        """The definition a ``$ref`` node names (its name and schema), else ``node``."""
        ref = node.get("$ref")
        if ref is None:
            return None, node
        name = ref.rsplit("/", 1)[1]
        return name, self.defs[name]

    @staticmethod
    def is_closed_empty(node: dict[str, Any]) -> bool:
        """An object that admits no member at all (``additionalProperties: {not: {}}``)."""
        return node.get("additionalProperties") == {"not": {}} and not node.get("properties")

    @classmethod
    def is_open_object(cls, node: dict[str, Any]) -> bool:
        if cls.is_closed_empty(node):
            return False
        addl = node.get("additionalProperties")
        return addl not in (None, False) or not node.get("properties")

    def named_arm(self, arm: dict[str, Any]) -> dict[str, Any]:
        """``arm``, an inline object, as a reference to the definition it is identical
        to, if any."""
        if arm.get("type") != "object":
            return arm
        if self._by_shape is None:
            self._by_shape = {}
            for definition, node in self.defs.items():
                shape = {k: v for k, v in node.items() if k != "$schema"}
                self._by_shape.setdefault(json.dumps(shape, sort_keys=True), definition)
        found = self._by_shape.get(json.dumps(arm, sort_keys=True))
        return arm if found is None else {"$ref": f"#/{self.key}/{found}"}

    @staticmethod
    def distributed_union(node: dict[str, Any]) -> int | None:
        """The index of the union part of an ``allOf`` that joins a base and a union."""
        parts = node.get("allOf", [])
        unions = [i for i, part in enumerate(parts) if "anyOf" in part and len(part) == 1]
        return unions[0] if len(unions) == 1 else None

    def def_category(self, name: str) -> str:
        """``struct``, ``dict`` or ``alias`` for a named definition."""
        node = self.defs[name]
        if name.endswith("MetaObject"):
            return "dict"
        if self.distributed_union(node) is not None:
            return "alias"
        if "allOf" in node:
            return "struct"
        if node.get("type") == "object" or "properties" in node:
            return "dict" if self.is_open_object(node) else "struct"
        return "alias"

    # -- types --------------------------------------------------------------------------

    def type_of(self, node: dict[str, Any], owner: str, prop: str) -> Type:
        """The type of a schema node found at ``owner``.``prop``; hoists inline objects."""
        name = self.deref(node)[0]
        if name is not None:
            self.ensure(name)
            if name in self.module.aliases and self.module.aliases[name].kind is not None:
                return RAW
            return Type("ref", name)
        if "const" in node:
            return Type("literal", values=(node["const"],))
        if "enum" in node:
            return Type("literal", values=tuple(node["enum"]))
        if "anyOf" in node:
            arms = [self.type_of(self.named_arm(arm), owner, prop) for arm in node["anyOf"]]
            return self.unions.union(arms, f"{owner}.{prop}")
        if self.distributed_union(node) is not None:
            hoisted = owner + pascal_case(prop)
            self.add_distributed(hoisted, f"The `{prop}` member of `{owner}`.", node)
            return Type("ref", hoisted)
        if "allOf" in node:
            hoisted = owner + pascal_case(prop)
            self.add_struct(hoisted, node, origin="hoisted", about=(owner, prop))
            return Type("ref", hoisted)
        kind = node.get("type")
        if isinstance(kind, list):
            return self.unions.union(
                [self.type_of({**node, "type": k}, owner, prop) for k in kind],
                f"{owner}.{prop}",
            )
        if kind == "string":
            return Type("prim", "str")
        if kind == "integer":
            return Type("prim", "int", ge=node.get("minimum"), le=node.get("maximum"))
        if kind == "number":
            ge, le = node.get("minimum"), node.get("maximum")
            return Type(
                "union",
                args=(Type("prim", "int", ge=ge, le=le), Type("prim", "float", ge=ge, le=le)),
            )
        if kind == "boolean":
            return Type("prim", "bool")
        if kind == "null":
            return Type("prim", "None")
        if kind == "array":
            items = node.get("items", {})
            return Type(
                "list",
                args=(self.type_of(items, owner, prop + "Item"),),
                min_items=node.get("minItems"),
                max_items=node.get("maxItems"),
            )
        if kind == "object" or "properties" in node:
            if prop in OPEN_PROPERTIES or self.is_open_object(node):
                addl = node.get("additionalProperties")
                value = (
                    self.type_of(addl, owner, prop + "Value")
                    if isinstance(addl, dict) and addl
                    else ANY
                )
                return Type("dict", args=(Type("prim", "str"), value))
            hoisted = owner + pascal_case(prop)
            self.add_struct(hoisted, node, origin="hoisted", about=(owner, prop))
            return Type("ref", hoisted)
        if not node or set(node) <= {"description", "title"}:
            return ANY
        raise UnsupportedSchema(f"{self.module.revision} {owner}.{prop}: {node!r}")

    # -- definitions --------------------------------------------------------------------

    def ensure(self, name: str) -> None:
        """Lower definition ``name`` unless it already is."""
        if name in self.module.structs or name in self.module.aliases:
            return
        category = self.def_category(name)
        if category == "struct":
            self.add_struct(name, self.defs[name])
        else:
            self.ensure_alias(name)

    def ensure_alias(self, name: str) -> None:
        if name in self.module.aliases:
            return
        node = self.defs[name]
        doc = clean_doc(node.get("description"), self.names)
        if name in ANY_UNIONS:
            self.module.aliases[name] = Alias(name, doc, ANY, "any")
            return
        if self.distributed_union(node) is not None:
            self.add_distributed(name, doc, node)
            return
        if "anyOf" in node:
            self.add_union(name, doc, node["anyOf"])
            return
        if self.def_category(name) == "dict":
            t = self.type_of(
                {**node, "additionalProperties": node.get("additionalProperties", {})}, name, ""
            )
            if name.endswith("MetaObject"):
                t = Type("dict", args=(Type("prim", "str"), ANY))
            self.module.aliases[name] = Alias(name, doc, t)
            return
        # A primitive, an array, or a bare reference to another definition.
        self.module.aliases[name] = Alias(name, doc, ANY)  # placeholder against cycles
        self.module.aliases[name] = Alias(name, doc, self.type_of(node, name, ""))

    def add_union(self, name: str, doc: str, arms_schema: list[dict[str, Any]]) -> None:
        """A named union: owned by the codec, tagged or plain, or merged."""
        arms_schema = [self.named_arm(a) for a in arms_schema]
        arm_names = [self.deref(a)[0] for a in arms_schema]
        for arm in arm_names:
            if arm is not None:
                self.ensure(arm)
        kind = OWNED_UNIONS.get(name)
        if kind is not None:
            members = tuple(a for a in arm_names if a is not None)
            self.module.aliases[name] = Alias(
                name,
                doc,
                Type("union", args=tuple(Type("ref", m) for m in members)),
                strategy_of(kind),
                members,
                kind,
            )
            return
        self.add_union_of(name, doc, [self.type_of(a, name, "") for a in arms_schema])

    def add_union_of(self, name: str, doc: str, arms: list[Type]) -> None:
        """A named union of lowered ``arms``: tagged or plain, else merged."""
        unions = self.unions
        expanded = [m for a in arms for m in unions.expand(a)]
        if unions.compatible(expanded):
            tagged = any(unions.category(m) == "struct" for m in expanded) and len(expanded) > 1
            self.module.aliases[name] = Alias(
                name, doc, Type("union", args=tuple(expanded)), "tagged" if tagged else "plain"
            )
            return
        if all(unions.category(m) == "struct" for m in expanded):
            unions.add_merged(name, doc, [m.name for m in expanded])
            return
        raise UnsupportedSchema(f"{self.module.revision} {name}: untaggable union")

    def add_distributed(self, name: str, doc: str, node: dict[str, Any]) -> None:
        """``allOf`` of a base and a union, as the union of each arm joined with the base:
        ``GetTaskResult`` = ``Result`` and one of the task states."""
        index = self.distributed_union(node)
        assert index is not None
        parts = node["allOf"]
        base = parts[:index] + parts[index + 1 :]
        members: list[Type] = []
        for position, arm in enumerate(parts[index]["anyOf"]):
            arm = self.named_arm(arm)
            arm_name = self.deref(arm)[0] or f"Arm{position}"
            hoisted = name + arm_name
            self.add_struct(
                hoisted, {"allOf": [*base, arm]}, origin="hoisted", about=(name, arm_name)
            )
            members.append(Type("ref", hoisted))
        self.add_union_of(name, doc, members)

    def object_parts(self, node: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """Properties and required names of an object or an ``allOf`` of objects."""
        if "allOf" not in node:
            return dict(node.get("properties", {})), list(node.get("required", []))
        props: dict[str, Any] = {}
        required: list[str] = []
        for part in node["allOf"]:
            _, target = self.deref(part)
            sub_props, sub_required = self.object_parts(target)
            for key, value in sub_props.items():
                # An inline part refines the base it follows (error codes and data).
                if key not in props or "$ref" not in value:
                    props[key] = value
            required += [r for r in sub_required if r not in required]
        return props, required

    def add_struct(
        self,
        name: str,
        node: dict[str, Any],
        origin: str = "definition",
        about: tuple[str, str] | None = None,
    ) -> None:
        if name in self.module.structs:
            if origin == "hoisted" and self.module.structs[name].origin != "hoisted":
                raise UnsupportedSchema(f"{self.module.revision}: hoisted name {name} clashes")
            return
        if origin == "hoisted" and name in self.defs:
            raise UnsupportedSchema(f"{self.module.revision}: hoisted name {name} is a definition")
        props, required = self.object_parts(node)
        doc = clean_doc(node.get("description"), self.names)
        if not doc and about is not None:
            doc = f"The `{about[1]}` member of `{about[0]}`."
        struct = Struct(name, doc, [], origin=origin)
        self.module.structs[name] = struct  # before fields: recursive references
        for wire in _TAG_FIELDS:
            const = props.get(wire, {}).get("const")
            if isinstance(const, str):
                struct.tag_field, struct.tag = wire, const
                break
        else:
            if self.stateless and "resultType" in props and name.endswith("Result"):
                const = props["resultType"].get("const")
                struct.tag_field = "resultType"
                struct.tag = (
                    const if isinstance(const, str) else RESULT_TYPE_TAGS.get(name, RESULT_COMPLETE)
                )
        fields: list[Field] = []
        for wire, prop in props.items():
            if wire == struct.tag_field:
                continue
            t = self.type_of(prop, name, wire)
            const = prop.get("const") if "const" in prop else None
            fields.append(
                Field(
                    name=snake_case(wire),
                    wire=wire,
                    type=t,
                    required=wire in required,
                    const=const if wire in required else None,
                    doc=clean_doc(prop.get("description"), self.names),
                    empty_default=wire == "_meta" and wire in required,
                )
            )
        struct.fields = fields
