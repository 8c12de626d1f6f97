"""The arguments of a resource template's or a prompt's function, read from its
signature, and the fields a revision lacks.

Both take string arguments on the wire (template variables, prompt arguments), which
are converted to the parameters' annotations by msgspec, leniently (``"42"`` to an
``int``); an unannotated parameter takes a string. A parameter annotated
:class:`~mcpspec.runtime.connection.RequestContext` gets the request's context.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, NamedTuple

import msgspec

from .context import RequestContext

__all__ = ["FIELDS_SINCE", "Signature", "for_revision", "signature_of"]

#: Fields of resources, templates and prompts, and the revision that brought each.
FIELDS_SINCE: Final[Mapping[str, str]] = {"title": "2025-06-18", "icons": "2025-11-25"}


class Signature(NamedTuple):
    """What a function takes: its string arguments as a Struct, the required ones,
    their descriptions, and the parameter that takes the context (if any)."""

    arguments: type[msgspec.Struct]
    names: tuple[str, ...]
    required: frozenset[str]
    descriptions: Mapping[str, str]
    context_parameter: str | None

    def call_arguments(self, values: Mapping[str, str], ctx: Any) -> dict[str, Any]:
        """The keyword arguments of the function for the wire ``values`` (raises
        ``msgspec.ValidationError`` when one does not convert)."""
        converted = msgspec.convert(dict(values), self.arguments, strict=False)
        kwargs = {name: getattr(converted, name) for name in self.names}
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = ctx
        return kwargs


def signature_of(fn: Callable[..., Awaitable[Any]], what: str) -> Signature:
    """The :class:`Signature` of ``fn`` (``what`` names it in errors: ``"prompt
    greet"``)."""
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"{what}: a coroutine function (async def) is needed; got {fn!r}")
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: list[Any] = []
    names: list[str] = []
    required: set[str] = set()
    descriptions: dict[str, str] = {}
    context_parameter = None
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"{what}: *args and **kwargs cannot be described")
        annotation = hints.get(parameter.name, str)
        if annotation is RequestContext:
            context_parameter = parameter.name
            continue
        names.append(parameter.name)
        description = _description(annotation)
        if description is not None:
            descriptions[parameter.name] = description
        if parameter.default is parameter.empty:
            required.add(parameter.name)
            fields.append((parameter.name, annotation))
        else:
            fields.append((parameter.name, annotation, parameter.default))
    name = getattr(fn, "__name__", "function")
    arguments = msgspec.defstruct(f"{name}_arguments", fields, kw_only=True)
    return Signature(arguments, tuple(names), frozenset(required), descriptions, context_parameter)


def _description(annotation: Any) -> str | None:
    """The description of an ``Annotated[..., msgspec.Meta(description=...)]``."""
    if typing.get_origin(annotation) is typing.Annotated:
        for meta in typing.get_args(annotation)[1:]:
            if isinstance(meta, msgspec.Meta) and meta.description is not None:
                return meta.description
    return None


def for_revision(wire: dict[str, Any], revision: str) -> dict[str, Any]:
    """``wire`` without the fields ``revision`` lacks (``title`` before 2025-06-18,
    ``icons`` before 2025-11-25)."""
    if revision >= "2025-11-25":
        return wire
    return {
        key: value
        for key, value in wire.items()
        if key not in FIELDS_SINCE or FIELDS_SINCE[key] <= revision
    }
