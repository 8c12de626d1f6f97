"""The generator's intermediate model: what a revision module declares, before rendering.

A small, frozen vocabulary: :class:`Type` expressions, :class:`Field`, :class:`Struct`
(plain, tagged or merged) and :class:`Alias`, collected in a :class:`Module`. What the
runtime reads from a generated module is typed with the runtime's own vocabulary
(:mod:`mcpspec.runtime.declared`): the protocol model and the kinds of owned unions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from mcpspec.runtime.declared import ProtocolModel, UnionKind

__all__ = [
    "Alias",
    "Arm",
    "Field",
    "Module",
    "Struct",
    "Type",
    "UnionStrategy",
    "UnsupportedSchema",
]


class UnsupportedSchema(ValueError):
    """The schema uses a construct the generator has no rule for."""


TypeKind = Literal["prim", "ref", "list", "dict", "union", "literal", "any", "raw"]

#: How a union is decoded. ``tagged``: msgspec tagged union on a constant field;
#: ``plain``: members msgspec tells apart by JSON type; ``merged``: one Struct with every
#: member's fields and a check that the value is one of the members; ``keyed``: decoded by
#: the method of the request it answers; ``classified``: the codec classifies the JSON-RPC
#: message by its keys; ``any``: every JSON value.
UnionStrategy = Literal["tagged", "plain", "merged", "keyed", "classified", "any"]


@dataclass(frozen=True)
class Type:
    """A type expression. ``name`` is a primitive (``str``, ``int``, ``float``, ``bool``,
    ``None``) or a definition name; ``args`` are element types; ``values`` literal values;
    ``ge``/``le`` numeric bounds; ``min_items``/``max_items`` array bounds."""

    kind: TypeKind
    name: str = ""
    args: tuple[Type, ...] = ()
    values: tuple[str | int | bool, ...] = ()
    ge: int | float | None = None
    le: int | float | None = None
    min_items: int | None = None
    max_items: int | None = None


ANY = Type("any")
RAW = Type("raw")


@dataclass(frozen=True)
class Field:
    """One Struct field: Python ``name``, JSON ``wire`` name, type and presence."""

    name: str
    wire: str
    type: Type
    required: bool
    #: A constant the field always holds (``jsonrpc``, error ``code``): filled in by default.
    const: str | int | bool | None = None
    doc: str = ""
    #: A required open object that starts empty: the ``_meta`` of 2026-07-28 requests,
    #: which the client session fills with the protocol fields before sending.
    empty_default: bool = False
    #: A required Struct-typed field whose Struct can be built without arguments starts
    #: as one: the all-optional ``params`` of 2026-07-28 requests (``ListToolsRequest(
    #: id=1)``), whose ``_meta`` the client session fills.
    default_factory: str | None = None


@dataclass(frozen=True)
class Arm:
    """One member of a merged union: the wire fields it requires and the constants (or
    enumerations) it restricts them to."""

    name: str
    required: tuple[str, ...]
    consts: tuple[tuple[str, tuple[str | int | bool, ...]], ...]
    #: Primitive fields this member declares more narrowly than the merged Struct types
    #: them (untyped, or a wider union): wire name -> the member's JSON kinds.
    kinds: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass
class Struct:
    """A msgspec Struct. ``tag_field``/``tag`` make it a member of tagged unions; ``arms``
    make it a merged union with a check."""

    name: str
    doc: str
    fields: list[Field]
    tag_field: str | None = None
    tag: str | None = None
    arms: tuple[Arm, ...] = ()
    origin: str = "definition"  # or "hoisted" or "merged"


@dataclass
class Alias:
    """A named type expression: unions, primitives, open objects."""

    name: str
    doc: str
    type: Type
    strategy: UnionStrategy | None = None
    #: Members of a union whose decoding the codec owns (``keyed``, ``classified``).
    members: tuple[str, ...] = ()
    #: How the codec decodes the union, where it owns it (``keyed``, ``classified``).
    kind: UnionKind | None = None


@dataclass
class Module:
    """Everything one revision module declares, plus its dispatch tables."""

    revision: str
    structs: dict[str, Struct] = field(default_factory=dict)
    aliases: dict[str, Alias] = field(default_factory=dict)
    #: method -> request/notification type name, per sending side.
    client_requests: dict[str, str] = field(default_factory=dict)
    server_requests: dict[str, str] = field(default_factory=dict)
    client_notifications: dict[str, str] = field(default_factory=dict)
    server_notifications: dict[str, str] = field(default_factory=dict)
    #: method -> result type names (one, or the members of a resultType-tagged union).
    results: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: methods whose task-augmented form answers ``CreateTaskResult``.
    task_results: dict[str, str] = field(default_factory=dict)
    #: method -> input request type name (2026-07-28 multi round-trip requests).
    input_requests: dict[str, str] = field(default_factory=dict)
    #: Whether the revision allows JSON-RPC batches (2025-03-26).
    batches: bool = False
    #: Whether an error response must carry ``id`` (optional from 2025-11-25 on).
    error_id_required: bool = True
    #: How the revision negotiates: stateless where the schema has ``server/discover``.
    protocol_model: ProtocolModel = ProtocolModel.HANDSHAKE
    #: method -> the complete member of its ``resultType``-tagged result union.
    complete_results: dict[str, str] = field(default_factory=dict)
    errata_applied: int = 0
    normalised: int = 0
    definitions: int = 0
