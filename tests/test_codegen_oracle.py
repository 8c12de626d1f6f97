"""Cross-check of the generator's model against an independent reading of the same schemas.

``datamodel-code-generator`` parses every revision's schema on its own (its
``JsonSchemaParser`` and the parsed models, no code generated). For every definition,
every Struct the generator hoists from an inline object, every field, its required-ness
and its type (scalars with their bounds, literals, lists, dicts, unions, references), the
two readings must agree, or the difference must be listed in :data:`LISTED` with its
reason and the exact places it covers. An unlisted difference fails, and so does a listed
one that no longer occurs.

Both readings take the schema the generator reads (:func:`load_wire_schema`: errata
applied, messages in wire form), so every difference found here is a difference in how
the schema is *read*. The patch step itself is checked exactly by ``test_codegen.py``
(the wire schema is the pinned file plus the errata plus the wire-form additions), and the
oracle could not judge an erratum anyway: it reads the same defective JSON.
"""

from __future__ import annotations

import copy
import functools
import json
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import pytest
from datamodel_code_generator.model.enum import Enum as OracleEnum
from datamodel_code_generator.parser.jsonschema import JsonSchemaParser
from datamodel_code_generator.types import DataType

import mcpspec
from mcpspec.codegen import load_wire_schema
from mcpspec.codegen.build import build_module
from mcpspec.codegen.model import Alias, Module, Struct, Type

from .conftest import SCHEMA_DIR

REVISIONS = mcpspec.REVISIONS

# -- the two readings, as comparable terms ---------------------------------------------

#: A type as a hashable tuple: ``("scalar", name, ge, le)`` (``str``, ``int``, ``float``,
#: ``bool``, ``null``), ``("lit", values)``, ``("list", item)``, ``("dict", value)``,
#: ``("union", members)``, ``("ref", definition or Struct name)``, ``("inline", oracle
#: path)`` for an object the oracle reads inline, ``("any",)``, ``("raw",)``.
Term = tuple[Any, ...]

#: Scalar types the oracle gives string formats (``uri``, ``byte``, ...): all strings on
#: the wire, and the model has no formats.
_ORACLE_STRINGS = frozenset({"str", "constr", "AnyUrl", "Base64Str", "AwareDatetime", "EmailStr"})
#: The oracle's marker in the path of a model it made from an inline schema.
_INLINE_MARK = "#-datamodel-code-generator-#"
#: The pseudo-field by which the oracle marks an object that admits extra keys.
_EXTRA_KEYS = "__pydantic_extra__"


def _scalar(name: str, ge: Any = None, le: Any = None) -> Term:
    return ("scalar", name, ge, le)


def _union(members: list[Term]) -> Term:
    flat: set[Term] = set()
    for member in members:
        flat |= member[1] if member[0] == "union" else {member}
    return next(iter(flat)) if len(flat) == 1 else ("union", frozenset(flat))


def item_bounds(t: Type) -> dict[str, int]:
    """Our array bounds, named as the oracle names them."""
    bounds = {"min_length": t.min_items, "max_length": t.max_items}
    return {k: v for k, v in bounds.items() if v is not None}


class Shape(NamedTuple):
    """What a named model is: an object (fields and whether it admits extra keys) or a
    root type (aliases, unions, enums)."""

    fields: dict[str, tuple[bool, Term]] | None
    open: bool = False
    root: Term | None = None
    #: Field constraints the oracle reads beyond numeric bounds (``maxItems`` ...).
    limits: dict[str, dict[str, Any]] | None = None


class OracleReading:
    """datamodel-code-generator's parsed models of one schema, read as terms."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.key = "$defs" if "$defs" in schema else "definitions"
        self.prefix = f"#/{self.key}/"
        parser = JsonSchemaParser(json.dumps(schema))
        parser.parse_raw()
        self.models: dict[str, Any] = {m.reference.path: m for m in parser.results}

    def definition(self, name: str) -> Any:
        return self.models.get(self.prefix + name)

    def term(self, dt: DataType) -> Term:
        term = self._term(dt)
        return _union([term, _scalar("null")]) if dt.is_optional else term

    def _term(self, dt: DataType) -> Term:
        if dt.reference is not None:
            model = self.models[dt.reference.path]
            if _INLINE_MARK not in model.reference.path:
                return ("ref", model.reference.path.removeprefix(self.prefix))
            if isinstance(model, OracleEnum):
                return self.enum_values(model)
            return ("inline", model.reference.path)
        if dt.literals:
            return ("lit", frozenset(dt.literals))
        if dt.is_list:
            return ("list", self.term(dt.data_types[0]))
        if dt.is_dict:
            return ("dict", self.term(dt.data_types[0]))
        if dt.type is None:
            return _union([self.term(member) for member in dt.data_types])
        bounds = dt.kwargs or {}
        unread = {k: v for k, v in bounds.items() if v is not None and k not in ("ge", "le")}
        if unread:  # a constraint this test does not compare: shows up as a difference
            return ("constrained", dt.type, tuple(sorted(unread.items())))
        if dt.type in _ORACLE_STRINGS:
            return _scalar("str")
        if dt.type in ("int", "conint", "float", "confloat"):
            return _scalar(dt.type.removeprefix("con"), bounds.get("ge"), bounds.get("le"))
        if dt.type in ("bool", "None"):
            return _scalar({"None": "null"}.get(dt.type, dt.type))
        if dt.type == "Any":
            return ("any",)
        raise AssertionError(f"the oracle reads a type this test does not know: {dt.type}")

    @staticmethod
    def enum_values(model: Any) -> Term:
        return ("lit", frozenset(member.default.value for member in model.fields))

    def shape(self, model: Any) -> Shape:
        if isinstance(model, OracleEnum):
            return Shape(None, root=self.enum_values(model))
        if type(model).__name__ == "RootModel":
            return Shape(None, root=self.term(model.fields[0].data_type))
        fields: dict[str, tuple[bool, Term]] = {}
        limits: dict[str, dict[str, Any]] = {}
        open_ = False
        for base in model.base_classes:  # allOf parts
            if base.reference is not None and base.reference.path in self.models:
                inherited = self.shape(self.models[base.reference.path])
                fields.update(inherited.fields or {})
                limits.update(inherited.limits or {})
                open_ = open_ or inherited.open
        for f in model.fields:
            wire = f.original_name or f.name
            if wire == _EXTRA_KEYS:
                open_ = True
                continue
            fields[wire] = (bool(f.required), self.term(f.data_type))
            declared = f.constraints.model_dump() if f.constraints is not None else {}
            bounds = f.data_type.kwargs or {}
            limit = {k: v for k, v in declared.items() if v is not None and bounds.get(k) != v}
            if limit:
                limits[wire] = limit
        return Shape(fields, open_, limits=limits)


def our_term(t: Type) -> Term:
    """The model's type expression as a term."""
    if t.kind == "prim":
        return _scalar({"None": "null"}.get(t.name, t.name), t.ge, t.le)
    if t.kind == "ref":
        return ("ref", t.name)
    if t.kind == "list":
        return ("list", our_term(t.args[0]))
    if t.kind == "dict":
        return ("dict", our_term(t.args[1]))
    if t.kind == "union":
        return _union([our_term(a) for a in t.args])
    if t.kind == "literal":
        return ("lit", frozenset(t.values))
    return (t.kind,)


def our_fields(struct: Struct) -> dict[str, tuple[bool, Term]]:
    """A Struct's fields by wire name, its tag as the required constant it is on the wire."""
    fields = {f.wire: (f.required, our_term(f.type)) for f in struct.fields}
    if struct.tag_field is not None:
        fields[struct.tag_field] = (True, ("lit", frozenset({struct.tag})))
    return fields


# -- the comparison --------------------------------------------------------------------


class Difference(NamedTuple):
    """One place where the readings differ: its kind, where (``Definition``,
    ``Owner.field``, ``[]`` for items, ``{}`` for dict values) and what each side has."""

    kind: str
    where: str
    detail: str = ""


class Comparison:
    """Walks every definition of the schema in both readings, pairing the oracle's inline
    models with the Structs the generator hoisted for them on the way."""

    def __init__(self, oracle: OracleReading, module: Module, definitions: frozenset[str]):
        self.oracle = oracle
        self.module = module
        self.definitions = definitions
        self.found: list[Difference] = []
        #: Oracle inline model path (or field location of a merged union) -> our Struct.
        self.paired: dict[str, str] = {}

    def add(self, kind: str, where: str, detail: str = "") -> None:
        self.found.append(Difference(kind, where, detail))

    def run(self) -> list[Difference]:
        ours: dict[str, Struct | Alias] = {**self.module.structs, **self.module.aliases}
        for name in sorted(self.definitions):
            model = self.oracle.definition(name)
            if model is None:
                self.add("definition only in the model", name)
            elif name not in ours:
                self.add("definition only in the oracle", name)
            else:
                self.compare_model(model, name)
        for name in sorted(set(ours) - self.definitions - set(self.paired.values())):
            declared = ours[name]
            origin = declared.origin if isinstance(declared, Struct) else "alias"
            self.add(f"{origin} name not in the schema", name)
        return self.found

    def compare_model(self, model: Any, name: str) -> None:
        ours = self.module.structs.get(name) or self.module.aliases[name]
        shape = self.oracle.shape(model)
        if isinstance(ours, Struct) and ours.origin == "merged":
            if shape.root is not None and self.merges(shape.root, ours):
                self.add("merged union", name)
            else:
                self.add("mismatch", name, f"merged Struct {ours.name} vs oracle {shape}")
        elif isinstance(ours, Struct):
            if shape.fields is None:
                self.add("mismatch", name, f"Struct vs oracle root {shape.root}")
                return
            self.compare_fields(shape.fields, ours, name)
            by_wire = {f.wire: f.type for f in ours.fields}
            for wire, limit in sorted((shape.limits or {}).items()):
                if wire in by_wire and limit == item_bounds(by_wire[wire]):
                    continue
                self.add("constraint not in the model", f"{name}.{wire}", f"oracle {limit}")
            if shape.open:
                self.add("open object as Struct", name)
        elif shape.fields is not None:
            kind = "open object" if shape.open else "object read as open"
            if ours.type.kind != "dict":
                kind = "mismatch"
            self.add(kind, name, f"oracle fields {sorted(shape.fields)}, model {ours.type}")
        elif ours.strategy in ("keyed", "classified"):
            self.compare_owned_union(shape.root, ours)
        elif ours.strategy == "any":
            members = self.oracle_members(shape.root)
            heads = {m[0] for m in members[1]} if members[0] == "union" else set()
            if {"dict", "list", "scalar"} <= heads:
                self.add("JSON value as Any", name)
            else:
                self.add("mismatch", name, f"Any vs oracle {shape.root}")
        else:
            self.compare_terms(shape.root, our_term(ours.type), name)

    def compare_owned_union(self, root: Term, ours: Alias) -> None:
        members = self.oracle_members(root)
        arms = members[1] if members[0] == "union" else frozenset({members})
        refs = {arm for arm in arms if arm[0] == "ref"}
        if {ref[1] for ref in refs} != set(ours.members):
            self.add("mismatch", ours.name, f"members {ours.members} vs oracle {sorted(refs)}")
        if arms - refs:
            others = sorted(arms - refs, key=repr)
            self.add("union arm left to the codec", ours.name, f"oracle arms {others}")

    def compare_fields(
        self, theirs: dict[str, tuple[bool, Term]], ours: Struct, owner: str
    ) -> None:
        mine = our_fields(ours)
        for wire in sorted(set(theirs) | set(mine)):
            where = f"{owner}.{wire}"
            if wire not in mine:
                self.add("field only in the oracle", where)
            elif wire not in theirs:
                self.add("field only in the model", where)
            else:
                (their_required, their_type), (our_required, our_type) = theirs[wire], mine[wire]
                if their_required != our_required:
                    self.add("required", where, f"oracle {their_required}, model {our_required}")
                if wire == ours.tag_field and their_type == _scalar("str"):
                    self.add("tag on a string field", where, f"{ours.tag!r}")
                else:
                    self.compare_terms(their_type, our_type, where)

    def oracle_members(self, term: Term) -> Term:
        """A term with the oracle's named unions and aliases spelled out."""
        if term[0] == "ref":
            root = self.oracle.shape(self.oracle.definition(term[1])).root
            if root is not None and root[0] in ("union", "list", "dict", "scalar"):
                return self.oracle_members(root)
        if term[0] == "union":
            return _union([self.oracle_members(m) for m in term[1]])
        return term

    def our_members(self, term: Term) -> Term:
        """The same for our aliases, but not the unions whose decoding the codec owns."""
        if term[0] == "ref" and term[1] in self.module.aliases:
            alias = self.module.aliases[term[1]]
            if alias.strategy in ("plain", "tagged", None):
                return self.our_members(our_term(alias.type))
        if term[0] == "union":
            return _union([self.our_members(m) for m in term[1]])
        return term

    def names(self, term: Term) -> frozenset[str]:
        """The definitions a term refers to, a merged Struct standing for its members."""
        if term[0] == "ref":
            merged = self.module.structs.get(term[1])
            if merged is not None and merged.origin == "merged":
                return frozenset(arm.name for arm in merged.arms)
            return frozenset({term[1]})
        if term[0] in ("list", "dict"):
            return self.names(term[1])
        if term[0] == "union":
            return frozenset().union(*(self.names(m) for m in term[1]))
        return frozenset()

    def merges(self, theirs: Term, merged: Struct) -> bool:
        """Whether ``theirs`` is a union of exactly the members of a merged Struct."""
        members = self.oracle_members(theirs)
        arms = {arm.name for arm in merged.arms}
        return (
            members[0] == "union"
            and all(m[0] == "ref" for m in members[1])
            and ({m[1] for m in members[1]} == arms)
        )

    def compare_terms(self, theirs: Term, ours: Term, where: str) -> None:
        if theirs == ours:
            return
        if "union" in (theirs[0], ours[0]):
            theirs, ours = self.oracle_members(theirs), self.our_members(ours)
            if theirs == ours:
                return
        target = self.module.structs.get(ours[1]) if ours[0] == "ref" else None
        if target is not None and target.origin == "merged" and self.merges(theirs, target):
            self.paired[where] = target.name
            self.add("merged union", where, target.name)
        elif theirs[0] == ours[0] == "union":
            self.compare_unions(theirs[1], ours[1], where)
        elif theirs[0] == "inline" and ours[0] == "ref" and ours[1] not in self.definitions:
            self.compare_hoisted(theirs[1], ours[1], where)
        elif theirs[0] == "inline" and ours[0] == "dict":
            shape = self.oracle.shape(self.oracle.models[theirs[1]])
            kind = "open object" if shape.open else "object read as open"
            self.add(kind, where, f"oracle fields {sorted(shape.fields or ())}")
        elif theirs[0] == ours[0] == "list":
            self.compare_terms(theirs[1], ours[1], where + "[]")
        elif theirs[0] == ours[0] == "dict":
            self.compare_terms(theirs[1], ours[1], where + "{}")
        elif theirs[:2] == ("scalar", "float") and ours == _union(
            [_scalar("int", *theirs[2:]), theirs]
        ):
            self.add("number as int | float", where)
        elif ours == ("raw",) and self.owned(theirs):
            self.add("owned union as Raw", where, theirs[1])
        else:
            self.add("type", where, f"oracle {theirs} vs model {ours}")

    def compare_unions(self, theirs: frozenset[Term], ours: frozenset[Term], where: str) -> None:
        """Members found on both sides match; the rest pair up by the definitions they
        refer to (a merged Struct standing for its members), one to one, or differ."""
        left = sorted(theirs - ours, key=repr)
        right = sorted(ours - theirs, key=repr)
        widened = len(right) == 1 and right[0][:2] == ("scalar", "int")
        if not left and widened and ("scalar", "float", *right[0][2:]) in theirs:
            self.add("number as int | float", where)
            return
        pairs = [(a, b) for a in left for b in right if self.names(a) == self.names(b)]
        if len(left) == len(right) == 1:
            pairs = [(left[0], right[0])]
        one_to_one = len({a for a, _ in pairs}) == len(pairs) == len({b for _, b in pairs})
        if not one_to_one or len(pairs) != len(left) or len(pairs) != len(right):
            self.add("type", where, f"oracle {sorted(theirs, key=repr)} vs model {ours}")
            return
        for a, b in pairs:
            self.compare_terms(a, b, where)

    def compare_hoisted(self, path: str, name: str, where: str) -> None:
        if path in self.paired:
            if self.paired[path] != name:
                self.add("mismatch", where, f"one inline object, two Structs: {name}")
            return
        model = self.oracle.models[path]
        self.paired[path] = name
        self.add("hoisted name", name, f"the oracle calls it {model.class_name}")
        self.compare_model(model, name)

    def owned(self, term: Term) -> bool:
        alias = self.module.aliases.get(term[1]) if term[0] == "ref" else None
        return alias is not None and alias.strategy in ("keyed", "classified")


# -- the inputs, read once per test session --------------------------------------------


@dataclass(frozen=True)
class Inputs:
    """One revision's two readings, and the names its schema defines."""

    oracle: OracleReading
    module: Module
    definitions: frozenset[str]


@functools.cache
def inputs(revision: str) -> Inputs:
    """The oracle's reading and the generator's model of ``revision``'s wire schema."""
    schema = load_wire_schema(revision, SCHEMA_DIR)[0]
    oracle = OracleReading(schema)
    definitions = frozenset(schema[oracle.key])
    return Inputs(oracle, build_module(revision, copy.deepcopy(schema)), definitions)


@functools.cache
def differences(revision: str) -> tuple[Difference, ...]:
    """Every difference between the two readings of ``revision``."""
    read = inputs(revision)
    return tuple(Comparison(read.oracle, read.module, read.definitions).run())


# -- the listed differences ------------------------------------------------------------


@dataclass(frozen=True)
class Listed:
    """One documented kind of difference and the exact places, per revision, it covers."""

    kind: str
    reason: str
    where: dict[str, frozenset[str]]


def _at(*parts: tuple[str, str]) -> dict[str, frozenset[str]]:
    """Places per revision from ``(revisions, places)`` pairs of space-separated names;
    ``"all"`` is every revision."""
    where: dict[str, set[str]] = {}
    for revisions, places in parts:
        for revision in REVISIONS if revisions == "all" else revisions.split():
            where.setdefault(revision, set()).update(places.split())
    return {revision: frozenset(places) for revision, places in where.items()}


LISTED: tuple[Listed, ...] = (
    Listed(
        "hoisted name",
        "An inline object becomes a Struct named <Owner><Property>, the name later revisions "
        "give the same concept (CallToolRequest.params -> CallToolRequestParams); the oracle "
        "numbers its inline models (Params1, Error2). Their fields are compared all the same.",
        _at(
            (
                "all",
                "CompleteRequestParamsArgument CompleteResultCompletion "
                "ServerCapabilitiesPrompts ServerCapabilitiesResources ServerCapabilitiesTools",
            ),
            (
                "2024-11-05",
                "AnnotatedAnnotations EmbeddedResourceAnnotations ImageContentAnnotations "
                "ResourceAnnotations ResourceTemplateAnnotations TextContentAnnotations",
            ),
            (
                "2024-11-05 2025-03-26 2025-06-18",
                "CallToolRequestParams CancelledNotificationParams CompleteRequestParams "
                "CreateMessageRequestParams GetPromptRequestParams InitializeRequestParams "
                "JSONRPCErrorError ListPromptsRequestParams ListResourceTemplatesRequestParams "
                "ListResourcesRequestParams ListToolsRequestParams "
                "LoggingMessageNotificationParams PaginatedRequestParams "
                "ProgressNotificationParams ReadResourceRequestParams "
                "ResourceUpdatedNotificationParams SetLevelRequestParams SubscribeRequestParams "
                "UnsubscribeRequestParams",
            ),
            ("2024-11-05 2025-03-26 2025-06-18 2025-11-25", "ClientCapabilitiesRoots"),
            ("2025-06-18", "ElicitRequestParams ElicitRequestParamsRequestedSchema"),
            ("2025-06-18 2025-11-25 2026-07-28", "CompleteRequestParamsContext"),
            (
                "2025-11-25",
                "CancelTaskRequestParams ClientCapabilitiesTasks ClientCapabilitiesTasksRequests "
                "ClientCapabilitiesTasksRequestsElicitation "
                "ClientCapabilitiesTasksRequestsSampling ElicitationCompleteNotificationParams "
                "GetTaskPayloadRequestParams GetTaskRequestParams ServerCapabilitiesTasks "
                "ServerCapabilitiesTasksRequests ServerCapabilitiesTasksRequestsTools "
                "URLElicitationRequiredErrorError",
            ),
            (
                "2025-11-25 2026-07-28",
                "ClientCapabilitiesElicitation ClientCapabilitiesSampling "
                "ElicitRequestFormParamsRequestedSchema TitledMultiSelectEnumSchemaItems "
                "TitledMultiSelectEnumSchemaItemsAnyOfItem TitledSingleSelectEnumSchemaOneOfItem "
                "UntitledMultiSelectEnumSchemaItems",
            ),
            (
                "2026-07-28",
                "HeaderMismatchErrorError ListRootsRequestParams "
                "MissingRequiredClientCapabilityErrorError "
                "MissingRequiredClientCapabilityErrorErrorData "
                "UnsupportedProtocolVersionErrorError UnsupportedProtocolVersionErrorErrorData",
            ),
        ),
    ),
    Listed(
        "alias name not in the schema",
        "Where a message's params are a shared definition (PaginatedRequestParams, "
        "RequestParams, ...), the module also declares <Message>Params as an alias of it, so "
        "a class name is the same in every revision.",
        _at(
            (
                "2025-11-25",
                "InitializedNotificationParams ListRootsRequestParams ListTasksRequestParams "
                "PingRequestParams RootsListChangedNotificationParams",
            ),
            (
                "2025-11-25 2026-07-28",
                "ListPromptsRequestParams ListResourceTemplatesRequestParams "
                "ListResourcesRequestParams ListToolsRequestParams "
                "PromptListChangedNotificationParams ResourceListChangedNotificationParams "
                "ToolListChangedNotificationParams",
            ),
            ("2026-07-28", "DiscoverRequestParams"),
        ),
    ),
    Listed(
        "merged union",
        "A union of Structs that no tag tells apart (text or blob resource contents, the "
        "elicitation schema family, 2025-03-26 batch items) is one merged Struct with a "
        "membership check; the oracle keeps a Union, whose members are checked to be exactly "
        "the merged Struct's.",
        _at(
            ("all", "EmbeddedResource.resource ReadResourceResult.contents[]"),
            ("2025-03-26", "JSONRPCBatchRequest[] JSONRPCBatchResponse[]"),
            ("2025-06-18 2025-11-25 2026-07-28", "PrimitiveSchemaDefinition"),
            (
                "2025-11-25 2026-07-28",
                "ElicitRequestParams EnumSchema MultiSelectEnumSchema SingleSelectEnumSchema",
            ),
        ),
    ),
    Listed(
        "number as int | float",
        "JSON Schema `number` is `int | float` (with the same bounds), so 5 re-encodes as 5, "
        "not 5.0; the oracle reads float. ElicitResult.content values are numbers by an "
        "erratum.",
        _at(
            (
                "all",
                "CreateMessageRequestParams.temperature ModelPreferences.costPriority "
                "ModelPreferences.intelligencePriority ModelPreferences.speedPriority "
                "ProgressNotificationParams.progress ProgressNotificationParams.total",
            ),
            (
                "2024-11-05",
                "AnnotatedAnnotations.priority EmbeddedResourceAnnotations.priority "
                "ImageContentAnnotations.priority ResourceAnnotations.priority "
                "ResourceTemplateAnnotations.priority TextContentAnnotations.priority",
            ),
            ("2025-03-26 2025-06-18 2025-11-25 2026-07-28", "Annotations.priority"),
            (
                "2025-06-18 2025-11-25 2026-07-28",
                "ElicitResult.content{} NumberSchema.maximum NumberSchema.minimum",
            ),
            ("2025-11-25 2026-07-28", "NumberSchema.default"),
        ),
    ),
    Listed(
        "open object",
        "The schema declares additionalProperties: the object is an open dict[str, Any] that "
        "keeps every key the sender wrote; the oracle types the few properties it names "
        "(`_meta`, the URL elicitation error's `elicitations`, `resultType`) and admits "
        "others.",
        _at(
            ("all", "Result"),
            (
                "2024-11-05 2025-03-26 2025-06-18",
                "InitializedNotification.params JSONRPCNotification.params "
                "JSONRPCRequest.params ListRootsRequest.params Notification.params "
                "PingRequest.params PromptListChangedNotification.params Request.params "
                "ResourceListChangedNotification.params RootsListChangedNotification.params "
                "ToolListChangedNotification.params",
            ),
            (
                "2025-06-18",
                "ElicitRequestParams._meta ListPromptsRequestParams._meta "
                "ListResourceTemplatesRequestParams._meta ListResourcesRequestParams._meta "
                "ListToolsRequestParams._meta",
            ),
            (
                "2025-06-18 2025-11-25",
                "CallToolRequestParams._meta CompleteRequestParams._meta "
                "CreateMessageRequestParams._meta GetPromptRequestParams._meta "
                "InitializeRequestParams._meta ReadResourceRequestParams._meta "
                "SetLevelRequestParams._meta SubscribeRequestParams._meta "
                "UnsubscribeRequestParams._meta",
            ),
            (
                "2025-11-25",
                "CancelTaskRequestParams._meta ElicitRequestFormParams._meta "
                "ElicitRequestURLParams._meta GetTaskPayloadRequestParams._meta "
                "GetTaskPayloadResult GetTaskRequestParams._meta PaginatedRequestParams._meta "
                "RequestParams._meta ResourceRequestParams._meta "
                "TaskAugmentedRequestParams._meta URLElicitationRequiredErrorError.data",
            ),
            ("2026-07-28", "Tool.inputSchema Tool.outputSchema"),
        ),
    ),
    Listed(
        "object read as open",
        "`_meta` is open by name: its keys are the sender's whatever the schema lists "
        "(`progressToken` here, without additionalProperties), so it is a dict[str, Any].",
        _at(
            (
                "2024-11-05 2025-03-26",
                "CallToolRequestParams._meta CompleteRequestParams._meta "
                "CreateMessageRequestParams._meta GetPromptRequestParams._meta "
                "InitializeRequestParams._meta ListPromptsRequestParams._meta "
                "ListResourceTemplatesRequestParams._meta ListResourcesRequestParams._meta "
                "ListToolsRequestParams._meta ReadResourceRequestParams._meta "
                "SetLevelRequestParams._meta SubscribeRequestParams._meta "
                "UnsubscribeRequestParams._meta",
            ),
        ),
    ),
    Listed(
        "object read as open",
        "A tool's inputSchema/outputSchema holds a JSON Schema, open by name: every keyword "
        "must survive, not only the `type`/`properties`/`required` the schema lists.",
        _at(
            ("2024-11-05 2025-03-26 2025-06-18 2025-11-25", "Tool.inputSchema"),
            ("2025-06-18 2025-11-25", "Tool.outputSchema"),
        ),
    ),
    Listed(
        "object read as open",
        "The *MetaObject definitions are open by name: the runtime reads and writes the "
        "io.modelcontextprotocol/* keys they list, and every other key must survive.",
        _at(
            (
                "2026-07-28",
                "MetaObject NotificationMetaObject RequestMetaObject ResultMetaObject "
                "SubscriptionsListenResultMetaObject",
            ),
        ),
    ),
    Listed(
        "open object as Struct",
        "allOf [Result, Task]: the oracle inherits Result's additionalProperties; the model "
        "makes a Struct, as for every other result, which decodes ignoring unknown keys.",
        _at(("2025-11-25", "CancelTaskResult GetTaskResult")),
    ),
    Listed(
        "union arm left to the codec",
        "2025-03-26 JSONRPCMessage lists the two batch arrays among its arms; the codec "
        "classifies messages itself and reads batches where Module.batches allows them, so "
        "the classified union's members are the four object messages.",
        _at(("2025-03-26", "JSONRPCMessage")),
    ),
    Listed(
        "tag on a string field",
        "Stateless results are tagged on resultType ('complete'; 'input_required' for "
        "InputRequiredResult) so that a result union decodes by tag; the schema types it as "
        "the string ResultType.",
        _at(
            (
                "2026-07-28",
                "CacheableResult.resultType CallToolResult.resultType CompleteResult.resultType "
                "DiscoverResult.resultType GetPromptResult.resultType "
                "InputRequiredResult.resultType ListPromptsResult.resultType "
                "ListResourceTemplatesResult.resultType ListResourcesResult.resultType "
                "ListToolsResult.resultType PaginatedResult.resultType "
                "ReadResourceResult.resultType SubscriptionsListenResult.resultType",
            ),
        ),
    ),
    Listed(
        "owned union as Raw",
        "InputResponses values are InputResponse, a union the codec decodes by the method of "
        "the input request each answers: msgspec.Raw in the model.",
        _at(("2026-07-28", "InputResponses{}")),
    ),
    Listed(
        "JSON value as Any",
        "JSONValue is any JSON value: Any in the model (msgspec cannot build the recursive "
        "union on Python 3.10/3.11); the oracle keeps the recursive union, checked to hold "
        "objects and arrays.",
        _at(("2026-07-28", "JSONValue")),
    ),
)


def _listed_places(revision: str, listed: tuple[Listed, ...]) -> Counter[tuple[str, str]]:
    return Counter(
        (entry.kind, place) for entry in listed for place in entry.where.get(revision, ())
    )


def audit(revision: str, listed: tuple[Listed, ...]) -> list[str]:
    """One line per difference found but not listed (or found twice), and per listed place
    where nothing differs any more."""
    found = Counter((d.kind, d.where) for d in differences(revision))
    details = {(d.kind, d.where): d.detail for d in differences(revision)}
    places = _listed_places(revision, listed)
    lines = [f"{kind}: {where} found twice" for (kind, where), n in found.items() if n > 1]
    lines += [
        f"unlisted {kind}: {where}" + (f" ({details[kind, where]})" * bool(details[kind, where]))
        for kind, where in sorted(found.keys() - places.keys())
    ]
    lines += [
        f"stale entry {kind}: {where} no longer differs"
        for kind, where in sorted(places.keys() - found.keys())
    ]
    return lines


# -- tests -----------------------------------------------------------------------------


@pytest.mark.schemas
@pytest.mark.parametrize("revision", REVISIONS)
def test_every_difference_from_the_oracle_is_listed_and_every_listed_one_occurs(
    revision: str,
) -> None:
    problems = audit(revision, LISTED)
    assert not problems, f"{revision}:\n" + "\n".join(problems)


@pytest.mark.schemas
def test_an_unlisted_difference_and_a_stale_entry_are_reported() -> None:
    stale = Listed("number as int | float", "not a number", _at(("2024-11-05", "Tool.name")))
    without_json_value = tuple(e for e in LISTED if e.kind != "JSON value as Any")
    assert audit("2024-11-05", (*LISTED, stale)) == [
        "stale entry number as int | float: Tool.name no longer differs"
    ]
    assert audit("2026-07-28", without_json_value) == ["unlisted JSON value as Any: JSONValue"]


def test_the_table_lists_each_place_once_with_a_reason() -> None:
    for entry in LISTED:
        assert entry.reason.strip(), entry.kind
        assert set(entry.where) <= set(REVISIONS), entry.kind
    for revision in REVISIONS:
        twice = [key for key, n in _listed_places(revision, LISTED).items() if n > 1]
        assert not twice, f"{revision}: listed twice: {twice}"


def _compare(revision: str, module: Module) -> set[tuple[str, str]]:
    read = inputs(revision)
    return {(d.kind, d.where) for d in Comparison(read.oracle, module, read.definitions).run()}


def _field(module: Module, struct: str, wire: str) -> int:
    return next(i for i, f in enumerate(module.structs[struct].fields) if f.wire == wire)


@pytest.mark.schemas
def test_the_comparison_sees_a_wrong_model() -> None:
    """A model with one required flag, one scalar, one field and one definition wrong
    yields exactly those differences on top of the listed ones."""
    revision = "2025-11-25"
    module = copy.deepcopy(inputs(revision).module)
    fields = module.structs["CallToolRequestParams"].fields
    name = _field(module, "CallToolRequestParams", "name")
    fields[name] = replace(fields[name], required=False)
    progress_fields = module.structs["ProgressNotificationParams"].fields
    progress = _field(module, "ProgressNotificationParams", "progress")
    progress_fields[progress] = replace(progress_fields[progress], type=Type("prim", "str"))
    del module.structs["Implementation"].fields[_field(module, "Implementation", "version")]
    del module.aliases["Role"]
    assert _compare(revision, module) - {(d.kind, d.where) for d in differences(revision)} == {
        ("required", "CallToolRequestParams.name"),
        ("type", "ProgressNotificationParams.progress"),
        ("field only in the oracle", "Implementation.version"),
        ("definition only in the oracle", "Role"),
    }


@pytest.mark.schemas
def test_the_comparison_sees_a_wrong_hoisted_struct_and_merged_union() -> None:
    """A hoisted Struct is compared field by field, and a merged Struct must merge
    exactly the oracle's union members."""
    revision = "2024-11-05"
    module = copy.deepcopy(inputs(revision).module)
    fields = module.structs["CallToolRequestParams"].fields
    del fields[_field(module, "CallToolRequestParams", "arguments")]
    merged = module.structs["TextOrBlobResourceContents"]
    merged.arms = merged.arms[:1]
    found = _compare(revision, module) - {(d.kind, d.where) for d in differences(revision)}
    assert found == {
        ("field only in the oracle", "CallToolRequestParams.arguments"),
        ("type", "EmbeddedResource.resource"),
        ("type", "ReadResourceResult.contents[]"),
        ("merged name not in the schema", "TextOrBlobResourceContents"),
    }
