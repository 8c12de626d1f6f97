"""Structured tool output: the ``outputSchema`` a tool's return annotation implies, and
its return value checked against it and sent as ``structuredContent``.

A tool whose return annotation is a ``msgspec.Struct``, a dataclass or a ``TypedDict``
has that type's JSON schema as its ``outputSchema``; one annotated with a plain scalar
(``int``, ``float``, ``bool``) has the schema of an object holding it under ``"result"``
(an output schema is an object), as the specification's examples and the official SDK
do. Any other annotation (``str``, content, a ``CallToolResult``, a mapping in wire
form, none) declares no output schema.

Structured output exists from 2025-06-18 on: older revisions list the tool without
``outputSchema`` and get the JSON text block alone.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Final

import msgspec

__all__ = ["STRUCTURED_SINCE", "OutputType", "StructuredMismatch", "has_structured_output"]

#: The first revision with ``outputSchema`` and ``structuredContent``.
STRUCTURED_SINCE: Final = "2025-06-18"
#: Scalars wrapped as ``{"result": value}``.
_SCALARS: Final = (bool, int, float)


def has_structured_output(revision: str) -> bool:
    """Whether ``revision`` has ``outputSchema`` and ``structuredContent`` (revisions
    are dates: they compare as strings)."""
    return revision >= STRUCTURED_SINCE


class StructuredMismatch(Exception):
    """A tool's return value does not fit its own output schema (the reason, with the
    JSON path where it does not)."""


def _is_object_type(annotation: Any) -> bool:
    return isinstance(annotation, type) and (
        issubclass(annotation, msgspec.Struct)
        or dataclasses.is_dataclass(annotation)
        or typing.is_typeddict(annotation)
    )


class OutputType:
    """The structured output of a tool returning ``annotation``: its ``schema`` (the
    ``outputSchema``, wire form) and :meth:`structured`, which checks a return value
    against the type and gives its ``structuredContent``. Made by :meth:`of`, which
    returns ``None`` for an annotation that declares no structured output."""

    __slots__ = ("annotation", "schema", "wrapped")

    def __init__(self, annotation: Any, schema: dict[str, Any], wrapped: bool) -> None:
        #: The return annotation.
        self.annotation = annotation
        #: The ``outputSchema`` (wire form).
        self.schema = schema
        #: Whether the value travels under ``"result"`` (a scalar).
        self.wrapped = wrapped

    @classmethod
    def of(cls, annotation: Any) -> OutputType | None:
        """The structured output of ``annotation``, or ``None`` when it has none."""
        if annotation in _SCALARS:
            inner = msgspec.json.schema(annotation)
            schema = {"type": "object", "properties": {"result": inner}, "required": ["result"]}
            return cls(annotation, schema, True)
        if not _is_object_type(annotation):
            return None
        (ref,), components = msgspec.json.schema_components(
            [annotation], ref_template="#/$defs/{name}"
        )
        name = ref["$ref"].rpartition("/")[2]
        schema = dict(components.pop(name))
        schema.pop("title", None)
        if components:
            schema["$defs"] = components
        return cls(annotation, schema, False)

    def structured(self, value: Any) -> tuple[Any, Any]:
        """``value`` (a tool's return) in wire form, checked against the type, and its
        ``structuredContent``; :class:`StructuredMismatch` when it does not fit."""
        try:
            wire = msgspec.to_builtins(value)
            # Through the type again: its constraints (msgspec.Meta) and its fields'
            # types are checked on what is sent, not on what the function claimed.
            msgspec.convert(wire, self.annotation, strict=True)
        except (msgspec.ValidationError, TypeError) as exc:
            name = getattr(self.annotation, "__name__", repr(self.annotation))
            raise StructuredMismatch(
                f"the tool's result does not fit its output schema ({name}): {exc}"
            ) from None
        return wire, ({"result": wire} if self.wrapped else wire)
