"""Union strategy: how each union of a schema is decoded.

msgspec decodes a union by itself when its members differ by JSON type, or are Structs
tagged on one field (``tagged``/``plain``). Every other union gets a deliberate
strategy, never "the first member that fits":

* the unions the runtime's codec decodes itself are listed in :data:`OWNED_UNIONS`,
  with their :class:`~mcpspec.runtime.declared.UnionKind`;
* a union of Structs that no tag tells apart becomes one merged Struct with every
  member's fields and a membership check (:meth:`UnionPlanner.add_merged`);
* anything else fails generation until it is listed.
"""

from __future__ import annotations

from mcpspec.runtime.declared import UnionKind

from .model import ANY, Arm, Field, Module, Struct, Type, UnionStrategy, UnsupportedSchema
from .naming import merged_name, snake_case

__all__ = ["ANY_UNIONS", "OWNED_UNIONS", "UnionPlanner", "strategy_of"]

#: Unions msgspec cannot decode by itself, which the runtime's codec decodes instead. A
#: new untaggable union upstream that is not merged-compatible fails generation until it
#: is listed here.
OWNED_UNIONS: dict[str, UnionKind] = {
    "JSONRPCMessage": UnionKind.MESSAGE,
    "JSONRPCResponse": UnionKind.RESPONSE,
    "ServerResult": UnionKind.KEYED,
    "ClientResult": UnionKind.KEYED,
    "InputResponse": UnionKind.KEYED,
}

#: Unions of every JSON value: typed ``Any``.
ANY_UNIONS = frozenset({"JSONValue"})


def strategy_of(kind: UnionKind) -> UnionStrategy:
    """The generator's name for how an owned union is decoded."""
    return "keyed" if kind is UnionKind.KEYED else "classified"


class UnionPlanner:
    """Decides how the unions of one module are decoded, adding the merged Structs it
    needs to the module."""

    def __init__(self, module: Module) -> None:
        self.module = module

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
        """The JSON kind a value of ``t`` has (``struct`` for a Struct), as msgspec
        tells union members apart."""
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
        """Whether msgspec can decode a union of ``members`` by itself."""
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

    @staticmethod
    def struct_fields_with_tag(struct: Struct) -> list[Field]:
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
        """Literal members merged into one literal, or dropped beside ``str``."""
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
