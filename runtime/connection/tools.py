"""Tools declared from typed Python functions: the input schema from the annotations,
the arguments converted and validated by msgspec.

A tool function is a coroutine function. Its arguments are either

* one parameter annotated with a ``msgspec.Struct``: the tool's arguments object is
  converted into it, and its JSON schema is the tool's ``inputSchema``; or
* annotated parameters, one per argument (defaults make them optional), gathered into
  a Struct made for the function;

plus, optionally, a parameter annotated :class:`~mcpspec.runtime.connection.RequestContext`,
which gets the request's context. Its return value becomes the ``CallToolResult``: a
string is one text block; a ``CallToolResult`` (of any revision) or a mapping in wire
form is the result itself; anything else is its JSON as one text block. Arguments that
do not convert, and a :class:`ToolError` raised by the function, are tool errors
(``isError: true`` with the reason), which the model can read; any other exception
answers -32603.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import msgspec

from ..session.mirrored_headers import MirrorError, ParamHeader, param_headers
from .context import RequestContext

__all__ = ["Tool", "ToolError"]


class ToolError(Exception):
    """Raised by a tool function: the call fails as a tool error (``isError: true``,
    the message as text), not as a JSON-RPC error."""


def _is_struct(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, msgspec.Struct)


def _input_schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON schema of ``struct``, the object itself at the top (``$defs`` beside
    it for the types it refers to)."""
    (ref,), components = msgspec.json.schema_components([struct], ref_template="#/$defs/{name}")
    name = ref["$ref"].rpartition("/")[2]
    schema = dict(components.pop(name))
    schema.pop("title", None)
    if components:
        schema["$defs"] = components
    return schema


class Tool:
    """One tool: its definition (``name``, ``description``, ``input_schema``, ...) and
    the function behind it. Made by :meth:`from_function`; ``Server.tool`` registers
    one."""

    def __init__(
        self,
        fn: Callable[..., Awaitable[Any]],
        *,
        name: str,
        arguments: type[msgspec.Struct],
        struct_parameter: str | None,
        context_parameter: str | None,
        description: str | None = None,
        title: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        scopes: Iterable[str] = (),
    ) -> None:
        self.fn = fn
        self.name = name
        self.arguments = arguments
        self._input_schema = _input_schema(arguments)
        self._param_headers: tuple[ParamHeader, ...] | None = None
        self.description = description
        self.title = title
        self.annotations = dict(annotations) if annotations is not None else None
        #: The parameter that takes the arguments Struct whole (else one per field).
        self._struct_parameter = struct_parameter or ""
        self._spread = struct_parameter is None
        self._context_parameter = context_parameter
        #: The OAuth scopes a principal needs to see and call the tool (over HTTP with
        #: authorization; nothing is enforced where no principal is verified).
        self.scopes: frozenset[str] = frozenset(scopes)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Awaitable[Any]],
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        scopes: Iterable[str] = (),
    ) -> Tool:
        """The tool behind ``fn`` (see the module's documentation); ``name`` defaults to
        the function's name, ``description`` to its docstring."""
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(f"a tool is a coroutine function (async def); got {fn!r}")
        hints = typing.get_type_hints(fn, include_extras=True)
        context_parameter = None
        fields: list[tuple[str, Any, Any]] = []
        for parameter in inspect.signature(fn).parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise TypeError(f"tool {fn.__name__}: *args and **kwargs cannot be described")
            annotation = hints.get(parameter.name)
            if annotation is None:
                raise TypeError(f"tool {fn.__name__}: parameter {parameter.name} needs a type")
            if annotation is RequestContext:
                context_parameter = parameter.name
                continue
            default = parameter.default
            fields.append(
                (parameter.name, annotation)
                if default is parameter.empty
                else (parameter.name, annotation, default)  # type: ignore[arg-type]
            )
        whole = len(fields) == 1 and len(fields[0]) == 2 and _is_struct(fields[0][1])
        arguments = (
            fields[0][1]
            if whole
            else msgspec.defstruct(f"{fn.__name__}_arguments", fields, kw_only=True)
        )
        doc = inspect.getdoc(fn)
        return cls(
            fn,
            name=name or fn.__name__,
            arguments=arguments,
            struct_parameter=fields[0][0] if whole else None,
            context_parameter=context_parameter,
            description=description if description is not None else doc,
            title=title,
            annotations=annotations,
            scopes=scopes,
        )

    @property
    def input_schema(self) -> dict[str, Any]:
        """The tool's ``inputSchema`` (wire form): edit it in place or assign another."""
        # Whoever reads the schema may edit it: its annotations are read again.
        self._param_headers = None
        return self._input_schema

    @input_schema.setter
    def input_schema(self, schema: dict[str, Any]) -> None:
        self._input_schema = schema
        self._param_headers = None

    @property
    def param_headers(self) -> tuple[ParamHeader, ...]:
        """The ``x-mcp-header`` annotations of the input schema, which a 2026-07-28
        client mirrors as ``Mcp-Param-*`` headers; none when they break a rule (a client
        drops such a tool, and sends no header for it)."""
        if self._param_headers is None:
            try:
                self._param_headers = param_headers(self._input_schema)
            except MirrorError:
                self._param_headers = ()
        return self._param_headers

    def definition(self) -> dict[str, Any]:
        """The tool as ``tools/list`` lists it (wire form)."""
        out: dict[str, Any] = {"name": self.name, "inputSchema": self._input_schema}
        if self.title is not None:
            out["title"] = self.title
        if self.description is not None:
            out["description"] = self.description
        if self.annotations is not None:
            out["annotations"] = self.annotations
        return out

    async def call(self, arguments: Mapping[str, Any] | None, ctx: RequestContext) -> Any:
        """Run the tool on the ``arguments`` of a ``tools/call``: the result in wire form
        or a ``CallToolResult``."""
        try:
            converted = msgspec.convert(dict(arguments or {}), self.arguments)
        except msgspec.ValidationError as exc:
            return _tool_error(f"invalid arguments: {exc}")
        if self._spread:
            kwargs = {f: getattr(converted, f) for f in self.arguments.__struct_fields__}
        else:
            kwargs = {self._struct_parameter: converted}
        if self._context_parameter is not None:
            kwargs[self._context_parameter] = ctx
        try:
            value = await self.fn(**kwargs)
        except ToolError as exc:
            return _tool_error(str(exc))
        return _as_result(value)


def _tool_error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _as_result(value: Any) -> Any:
    """A tool function's return value as a ``tools/call`` result."""
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}]}
    if type(value).__name__ == "CallToolResult" or (
        isinstance(value, Mapping) and "content" in value
    ):
        return value
    return {"content": [{"type": "text", "text": msgspec.json.encode(value).decode()}]}
