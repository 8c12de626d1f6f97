"""Lower one patched schema to the generator's model (:mod:`.model`).

Rules, in the order they apply to an object schema:

* ``_meta``, tool ``inputSchema``/``outputSchema`` and every ``*MetaObject`` are open
  objects whatever the schema lists: ``dict[str, Any]`` keeps every key the sender wrote.
* An object with ``additionalProperties`` (``{}``, ``true`` or a schema), or with no
  properties at all, is a ``dict``; any other object is a Struct. Struct decoding ignores
  unknown fields, as it must: peers send fields newer than the negotiated revision.
* An inline object becomes a Struct named ``<Owner><Property>``, the name later revisions
  give the same concept (``CallToolRequest.params`` -> ``CallToolRequestParams``).
* A Struct with a constant ``method`` or ``type`` is tagged on it; in 2026-07-28 results
  are tagged on ``resultType``. Other constants are fields that default to the constant.
* A required ``_meta`` (2026-07-28 requests) defaults to an empty dict, so a message
  can be built before the session adds the per-request protocol fields.
* ``number`` is ``int | float``, so ``5`` re-encodes as ``5``.
* Unions are tagged or plain when msgspec can tell the members apart; the rest follow
  :data:`UNION_STRATEGIES` or become merged Structs with a membership check.
"""

from __future__ import annotations

import keyword
import re
from typing import Any

from .model import ANY, RAW, Alias, Arm, Field, Module, Struct, Type, UnionStrategy
from .patch import definitions_key

__all__ = ["UNION_STRATEGIES", "UnsupportedSchema", "build_module"]

#: Unions msgspec cannot decode by itself, and how they are decoded instead. A new
#: untaggable union upstream that is not merged-compatible fails generation until it is
#: listed here.
UNION_STRATEGIES: dict[str, UnionStrategy] = {
    "JSONRPCMessage": "classified",
    "JSONRPCResponse": "classified",
    "ServerResult": "keyed",
    "ClientResult": "keyed",
    "InputResponse": "keyed",
    "JSONValue": "any",
}

#: Open objects by property name: their keys are the sender's, never a fixed set.
OPEN_PROPERTIES = frozenset({"_meta", "inputSchema", "outputSchema"})

#: ``resultType`` tags of 2026-07-28 results; every other result is ``complete``.
RESULT_TYPE_TAGS = {"InputRequiredResult": "input_required"}

_TAG_FIELDS = ("method", "type")


class UnsupportedSchema(ValueError):
    """The schema uses a construct the generator has no rule for."""


def snake_case(wire: str) -> str:
    """Python attribute name for a JSON property (``inputSchema`` -> ``input_schema``)."""
    name = wire.lstrip("_$")
    name = re.sub(r"[^0-9A-Za-z_]", "_", name)
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    name = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", name).lower()
    if not name:
        return "value"
    return name + "_" if keyword.iskeyword(name) else name


def pascal_case(wire: str) -> str:
    parts = re.split(r"[^0-9A-Za-z]+", wire)
    return "".join(p[:1].upper() + p[1:] for p in parts if p)


def merged_name(members: list[str]) -> str:
    """A stable name for an inline union: ``TextResourceContents`` and
    ``BlobResourceContents`` give ``TextOrBlobResourceContents``."""
    words = [re.findall(r"[A-Z][a-z0-9]*|[a-z0-9]+", m) for m in members]
    common = 0
    while (
        all(len(w) > common + 1 for w in words)
        and len({tuple(w[len(w) - common - 1 :]) for w in words}) == 1
    ):
        common += 1
    heads = ["".join(w[: len(w) - common]) for w in words]
    return "Or".join(heads) + "".join(words[0][len(words[0]) - common :])


_LINK = re.compile(r"\{@link\s+([^}]*)\}")


def clean_doc(text: str | None, names: frozenset[str]) -> str:
    """A schema description as docstring text: ``{@link X}`` becomes ```X```."""
    if not text:
        return ""

    def link(match: re.Match[str]) -> str:
        target = match.group(1).strip()
        for name in sorted(names, key=len, reverse=True):
            if target.startswith(name) and target != name:
                return f"`{name}` ({target[len(name) :].lstrip(' |')})"
        return f"`{target}`"

    return _LINK.sub(link, text).strip()


class _Builder:
    def __init__(self, revision: str, schema: dict[str, Any]) -> None:
        self.key = definitions_key(schema)
        self.defs: dict[str, Any] = schema[self.key]
        self.names = frozenset(self.defs)
        self.module = Module(revision=revision, definitions=len(self.defs))
        self.stateless = "DiscoverRequest" in self.defs

    # -- references ---------------------------------------------------------------------

    def deref(self, node: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        ref = node.get("$ref")
        if ref is None:
            return None, node
        name = ref.rsplit("/", 1)[1]
        return name, self.defs[name]

    def is_open_object(self, node: dict[str, Any]) -> bool:
        addl = node.get("additionalProperties")
        return addl not in (None, False) or not node.get("properties")

    def def_category(self, name: str) -> str:
        """``struct``, ``dict`` or ``alias`` for a named definition."""
        node = self.defs[name]
        if name.endswith("MetaObject"):
            return "dict"
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
            if name in self.module.aliases:
                alias = self.module.aliases[name]
                if alias.strategy in ("keyed", "classified"):
                    return RAW
            return Type("ref", name)
        if "const" in node:
            return Type("literal", values=(node["const"],))
        if "enum" in node:
            return Type("literal", values=tuple(node["enum"]))
        if "anyOf" in node:
            arms = [self.type_of(arm, owner, prop) for arm in node["anyOf"]]
            return self.union(arms, f"{owner}.{prop}")
        if "allOf" in node:
            hoisted = owner + pascal_case(prop)
            self.add_struct(hoisted, node, origin="hoisted", about=(owner, prop))
            return Type("ref", hoisted)
        kind = node.get("type")
        if isinstance(kind, list):
            return self.union(
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
            return Type("list", args=(self.type_of(items, owner, prop + "Item"),))
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

    def expand(self, t: Type) -> list[Type]:
        """Union members, looking through aliases of unions."""
        if t.kind == "union":
            return [m for a in t.args for m in self.expand(a)]
        if t.kind == "ref" and t.name in self.module.aliases:
            alias = self.module.aliases[t.name]
            if alias.type.kind == "union":
                return self.expand(alias.type)
        return [t]

    def category(self, t: Type) -> str:
        if t.kind == "prim":
            return {"str": "str", "int": "int", "float": "float", "bool": "bool", "None": "none"}[
                t.name
            ]
        if t.kind == "literal":
            return "str" if isinstance(t.values[0], str) else "int"
        if t.kind == "list":
            return "array"
        if t.kind == "dict":
            return "object"
        if t.kind == "ref":
            if t.name in self.module.structs:
                return "struct"
            alias = self.module.aliases[t.name]
            return self.category(alias.type)
        return t.kind  # any, raw

    def union(self, arms: list[Type], where: str) -> Type:
        """A decodable union of ``arms``, or ``Any`` where JSON types alone cannot decide."""
        members: list[Type] = []
        for arm in (m for a in arms for m in self.expand(a)):
            if arm not in members:
                members.append(arm)
        if len(members) == 1:
            return members[0]
        if self.compatible(members):
            return Type("union", args=tuple(members))
        if all(self.category(m) == "struct" for m in members):
            name = merged_name([m.name for m in members])
            if name not in self.module.structs:
                self.add_merged(
                    name,
                    f"One of: {', '.join(m.name for m in members)}.",
                    [m.name for m in members],
                )
            return Type("ref", name)
        raise UnsupportedSchema(f"{self.module.revision} {where}: untaggable inline union")

    def compatible(self, members: list[Type]) -> bool:
        seen: dict[str, list[Type]] = {}
        for m in members:
            seen.setdefault(self.category(m), []).append(m)
        if "any" in seen or "raw" in seen:
            return False
        if any(len(seen.get(c, [])) > 1 for c in ("array", "object", "float", "bool", "none")):
            return False
        structs = seen.get("struct", [])
        if structs and "object" in seen:
            return False
        if len(structs) > 1:
            tags = [
                (self.module.structs[s.name].tag_field, self.module.structs[s.name].tag)
                for s in structs
            ]
            fields = {f for f, _ in tags}
            if None in fields or len(fields) > 1 or len({t for _, t in tags}) != len(tags):
                return False
        return True

    # -- definitions --------------------------------------------------------------------

    def ensure(self, name: str) -> None:
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
        strategy = UNION_STRATEGIES.get(name)
        if strategy == "any":
            self.module.aliases[name] = Alias(name, doc, ANY, "any")
            return
        if "anyOf" in node:
            arm_names = [self.deref(a)[0] for a in node["anyOf"]]
            for arm in arm_names:
                if arm is not None:
                    self.ensure(arm)
            if strategy in ("keyed", "classified"):
                members = tuple(a for a in arm_names if a is not None)
                self.module.aliases[name] = Alias(
                    name,
                    doc,
                    Type("union", args=tuple(Type("ref", m) for m in members)),
                    strategy,
                    members,
                )
                return
            arms = [self.type_of(a, name, "") for a in node["anyOf"]]
            expanded = [m for a in arms for m in self.expand(a)]
            if self.compatible(expanded):
                tagged = any(self.category(m) == "struct" for m in expanded) and len(expanded) > 1
                self.module.aliases[name] = Alias(
                    name, doc, Type("union", args=tuple(expanded)), "tagged" if tagged else "plain"
                )
                return
            if all(self.category(m) == "struct" for m in expanded):
                self.add_merged(name, doc, [m.name for m in expanded])
                return
            raise UnsupportedSchema(f"{self.module.revision} {name}: untaggable union")
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
                struct.tag_field = "resultType"
                struct.tag = RESULT_TYPE_TAGS.get(name, "complete")
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

    def add_merged(self, name: str, doc: str, arm_names: list[str]) -> None:
        """One Struct with every member's fields; ``__post_init__`` checks membership."""
        arms = [self.module.structs[a] for a in arm_names]
        by_wire: dict[str, list[Field]] = {}
        for arm in arms:
            for f in self.struct_fields_with_tag(arm):
                by_wire.setdefault(f.wire, []).append(f)
        fields: list[Field] = []
        for wire, versions in by_wire.items():
            types: list[Type] = []
            for v in versions:
                for m in self.expand(v.type):
                    if m not in types:
                        types.append(m)
            types = self.merge_literals(types)
            t = types[0] if len(types) == 1 else Type("union", args=tuple(types))
            # A member that does not declare a field takes any value under its name
            # (objects are open): a primitive field only some members declare is untyped
            # here and checked per member. A structured one keeps its type, for typed
            # access (``requestedSchema``); a value of another shape under that name is
            # rejected, though a member without the field would take it.
            partial = len(versions) < len(arms) and bool(self.primitive_kinds(t))
            if partial or (len(types) > 1 and not self.compatible(types)):
                t = ANY
            required = len(versions) == len(arms) and all(v.required for v in versions)
            fields.append(Field(snake_case(wire), wire, t, required, None, versions[0].doc))
        merged_type = {f.wire: f.type for f in fields}
        checks = tuple(
            Arm(
                arm.name,
                tuple(f.wire for f in self.struct_fields_with_tag(arm) if f.required),
                tuple(
                    (f.wire, f.type.values)
                    for f in self.struct_fields_with_tag(arm)
                    if f.type.kind == "literal"
                ),
                tuple(
                    (f.wire, kinds)
                    for f in self.struct_fields_with_tag(arm)
                    if (kinds := self.primitive_kinds(f.type))
                    and self.primitive_kinds(merged_type[f.wire]) != kinds
                ),
            )
            for arm in arms
        )
        self.module.structs[name] = Struct(name, doc, fields, arms=checks, origin="merged")

    def primitive_kinds(self, t: Type) -> tuple[str, ...]:
        """JSON kinds of a type made of primitives only (``("str",)``), else ``()``."""
        members = self.expand(t)
        if all(m.kind == "prim" for m in members):
            return tuple(m.name for m in members)
        return ()

    def struct_fields_with_tag(self, struct: Struct) -> list[Field]:
        """A Struct's fields, its tag written as a required literal field."""
        fields = list(struct.fields)
        if struct.tag_field is not None and struct.tag is not None:
            tag = Field(
                snake_case(struct.tag_field),
                struct.tag_field,
                Type("literal", values=(struct.tag,)),
                True,
            )
            fields.insert(0, tag)
        return fields

    @staticmethod
    def merge_literals(types: list[Type]) -> list[Type]:
        literals = [t for t in types if t.kind == "literal"]
        if len(literals) < 2:
            return types
        values: list[str | int | bool] = []
        for lit in literals:
            values += [v for v in lit.values if v not in values]
        merged = Type("literal", values=tuple(values))
        out = [t for t in types if t.kind != "literal"]
        if Type("prim", "str") in out and all(isinstance(v, str) for v in values):
            return out
        return [merged, *out]

    # -- dispatch tables ----------------------------------------------------------------

    def members_of(self, union: str) -> list[str]:
        node = self.defs.get(union)
        if node is None:
            return []
        if "anyOf" not in node:
            # 2026-07-28 defines ClientNotification as a copy of CancelledNotification.
            method = node.get("properties", {}).get("method", {}).get("const")
            if method is None:
                return []
            same = [
                name
                for name, other in self.defs.items()
                if other.get("properties", {}).get("method", {}).get("const") == method
                and not name.startswith(("Client", "Server"))
            ]
            return same[:1] or [union]
        return [n for n in (self.deref(a)[0] for a in node["anyOf"]) if n is not None]

    def method_table(self, union: str) -> dict[str, str]:
        table: dict[str, str] = {}
        for name in self.members_of(union):
            self.ensure(name)
            struct = self.module.structs[name]
            if struct.tag_field != "method" or struct.tag is None:
                continue
            current = table.get(struct.tag)
            # 2026-07-28 ClientNotification duplicates CancelledNotification: prefer the
            # definition named for its message over one named for its direction.
            if current is None or current.startswith(("Client", "Server")):
                table[struct.tag] = name
        return table

    def result_names(self, request: str) -> tuple[str, ...]:
        """Result types of a request, by the schema's ``*ResultResponse`` where it has one,
        else by name (``FooRequest`` -> ``FooResult``, else ``EmptyResult``)."""
        base = request.removesuffix("Request")
        response = self.defs.get(f"{base}ResultResponse")
        if response is not None:
            result = response["properties"]["result"]
            arms = result.get("anyOf", [result])
            names = tuple(n for n in (self.deref(a)[0] for a in arms) if n is not None)
            for n in names:
                self.ensure(n)
            return names
        for candidate in (f"{base}Result", "EmptyResult", "Result"):
            if candidate in self.defs:
                self.ensure(candidate)
                return (candidate,)
        raise UnsupportedSchema(f"{self.module.revision}: no result type for {request}")

    def tables(self) -> None:
        m = self.module
        m.client_requests = self.method_table("ClientRequest")
        m.server_requests = self.method_table("ServerRequest")
        m.client_notifications = self.method_table("ClientNotification")
        m.server_notifications = self.method_table("ServerNotification")
        m.input_requests = self.method_table("InputRequest")
        for table in (m.client_requests, m.server_requests, m.input_requests):
            for method, request in table.items():
                m.results.setdefault(method, self.result_names(request))
        self.params_aliases()
        if "CreateTaskResult" in self.defs:
            self.ensure("CreateTaskResult")
            for table in (m.client_requests, m.server_requests):
                for method, request in table.items():
                    params = next(
                        (f for f in m.structs[request].fields if f.wire == "params"), None
                    )
                    if params is None or params.type.kind != "ref":
                        continue
                    target = m.structs.get(params.type.name)
                    if target is not None and any(f.wire == "task" for f in target.fields):
                        m.task_results[method] = "CreateTaskResult"

    def params_aliases(self) -> None:
        """``ListToolsRequestParams`` in every revision: where a message's params are a
        shared definition (``PaginatedRequestParams``), alias the message's own name."""
        m = self.module
        tables = (
            m.client_requests,
            m.server_requests,
            m.client_notifications,
            m.server_notifications,
            m.input_requests,
        )
        for message in sorted({name for table in tables for name in table.values()}):
            params = next((f for f in m.structs[message].fields if f.wire == "params"), None)
            alias = f"{message}Params"
            if params is None or params.type.kind != "ref" or params.type.name == alias:
                continue
            if alias in m.structs or alias in m.aliases or alias in self.defs:
                continue
            doc = f"The params of `{message}`, which the schema names `{params.type.name}`."
            m.aliases[alias] = Alias(alias, doc, params.type)


def build_module(revision: str, schema: dict[str, Any]) -> Module:
    """The model of one revision, from its patched schema."""
    builder = _Builder(revision, schema)
    for name in builder.defs:
        builder.ensure(name)
    builder.tables()
    builder.module.batches = "JSONRPCBatchRequest" in builder.defs
    error = builder.defs.get("JSONRPCErrorResponse") or builder.defs["JSONRPCError"]
    builder.module.error_id_required = "id" in error.get("required", [])
    return builder.module
