"""Tools declared from typed Python functions: the input schema from the annotations,
the arguments converted and validated by msgspec.

A tool function is a coroutine function. Its arguments are either

* one parameter annotated with a ``msgspec.Struct``: the tool's arguments object is
  converted into it, and its JSON schema is the tool's ``inputSchema``; or
* annotated parameters, one per argument (defaults make them optional), gathered into
  a Struct made for the function;

plus, optionally, a parameter annotated :class:`~mcpspec.runtime.connection.RequestContext`,
which gets the request's context. Its return value becomes the ``CallToolResult``: a
string is one text block; a content object (:mod:`.content`: an image, audio, an
embedded resource, a resource link), or a list of them and strings, is those blocks; a
``CallToolResult`` (of any revision) or a mapping in wire form is the result itself.
A function annotated to return a ``msgspec.Struct``, a dataclass, a ``TypedDict`` or a
plain scalar has an ``outputSchema`` (:mod:`.structured`): its value is checked against
the type and sent as ``structuredContent`` beside its JSON as a text block (the text
block alone before 2025-06-18). Anything else is its JSON as one text block.

Arguments that do not convert (the reason names their JSON path), an exception the
function raises (:class:`ToolError` or any other), and a return that does not fit the
tool's own output schema are tool errors (``isError: true`` with the reason), which
the model can read, as the specification asks of tool execution errors; a
:class:`~mcpspec.runtime.connection.RequestError` the function raises is answered as
that JSON-RPC error.
"""

from __future__ import annotations

import inspect
import logging
import re
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final, Literal

import msgspec

import mcpspec
from mcpspec.runtime.errors import ErrorCode

from ..session.mirrored_headers import MirrorError, ParamHeader, param_headers
from .content import Content, ContentUnsupported, content_block
from .context import RequestContext
from .errors import RequestError
from .structured import OutputType, StructuredMismatch, has_structured_output

__all__ = ["TaskSupport", "Tool", "ToolError"]

#: How a tool runs as a task (2025-11-25 ``execution.taskSupport``; ``None``: never).
TaskSupport = Literal["optional", "required"]

logger = logging.getLogger("mcpspec.connection")
#: The revision assumed when a tool is called or listed without a connection (a test's
#: direct call).
_NEWEST: Final = mcpspec.REVISIONS[-1]
#: From this revision on, arguments that do not fit a tool's input schema are a tool
#: execution error (an ``isError`` result the model reads and may correct: SEP-1303);
#: before it, a protocol error (-32602), as the tools page of each revision says.
_ARGUMENT_ERRORS_ARE_TOOL_ERRORS: Final = "2025-11-25"
#: The revision whose tools say how they run as tasks (``execution``): 2026-07-28
#: moves tasks to an extension.
_TASKS_IN_CORE: Final = "2025-11-25"
#: Where msgspec's validation message says the value it refused is.
_AT_PATH: Final = re.compile(r" - at `\$(.*)`$")


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
        output: OutputType | None = None,
        scopes: Iterable[str] = (),
        task: TaskSupport | None = None,
        ask_before_task: bool = False,
    ) -> None:
        if task not in (None, "optional", "required"):
            raise ValueError(f"a tool's task support is 'optional' or 'required'; not {task!r}")
        if ask_before_task and task is None:
            raise ValueError(f"tool {name!r}: ask_before_task is for a tool that runs as a task")
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
        #: The structured output its return annotation declares, if any.
        self.output = output
        #: The OAuth scopes a principal needs to see and call the tool (over HTTP with
        #: authorization; nothing is enforced where no principal is verified).
        self.scopes: frozenset[str] = frozenset(scopes)
        #: Whether clients may (``"optional"``) or must (``"required"``) call it as a
        #: task (2025-11-25); ``None``: never.
        self.task_support: TaskSupport | None = task
        #: Whether, as a task of the extension (2026-07-28), its questions before
        #: ``ctx.start_task()`` are asked in the request's rounds, the task created
        #: there (:meth:`~.context.RequestContext.start_task`).
        self.ask_before_task = ask_before_task

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
        task: TaskSupport | None = None,
        ask_before_task: bool = False,
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
            output=OutputType.of(hints.get("return")),
            scopes=scopes,
            task=task,
            ask_before_task=ask_before_task,
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

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """The tool's ``outputSchema`` (wire form), or ``None`` when it declares none."""
        return self.output.schema if self.output is not None else None

    def definition(self, revision: str = _NEWEST) -> dict[str, Any]:
        """The tool as ``tools/list`` lists it in ``revision`` (wire form)."""
        out: dict[str, Any] = {"name": self.name, "inputSchema": self._input_schema}
        if self.output is not None and has_structured_output(revision):
            out["outputSchema"] = self.output.schema
        if self.title is not None:
            out["title"] = self.title
        if self.description is not None:
            out["description"] = self.description
        if self.annotations is not None:
            out["annotations"] = self.annotations
        if self.task_support is not None and revision == _TASKS_IN_CORE:
            out["execution"] = {"taskSupport": self.task_support}
        return out

    async def call(self, arguments: Mapping[str, Any] | None, ctx: RequestContext) -> Any:
        """Run the tool on the ``arguments`` of a ``tools/call``: the result in wire form
        or a ``CallToolResult``."""
        try:
            given = arguments if type(arguments) is dict else dict(arguments or {})
            converted = msgspec.convert(given, self.arguments)
        except msgspec.ValidationError as exc:
            if ctx is not None and ctx.revision < _ARGUMENT_ERRORS_ARE_TOOL_ERRORS:
                raise _invalid_arguments(exc) from None
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
        except RequestError:
            raise
        except Exception as exc:
            # A tool execution error: the model reads it and may correct itself.
            logger.debug("tool %r raised", self.name, exc_info=True)
            return _tool_error(str(exc) or type(exc).__name__)
        if ctx is None:  # called directly (a test): the result in wire form
            return self._result(value, _NEWEST)
        if type(value) is str:
            # The revision's own Struct: the server sends it as it is.
            types = ctx.types
            return types.CallToolResult(content=[types.TextContent(text=value)])
        return self._result(value, ctx.revision)

    def _result(self, value: Any, revision: str) -> Any:
        """:meth:`_as_result`, or the tool error saying why ``value`` cannot be sent."""
        try:
            return self._as_result(value, revision)
        except (StructuredMismatch, ContentUnsupported) as exc:
            return _tool_error(str(exc))
        except TypeError as exc:  # not JSON: msgspec cannot encode it
            return _tool_error(f"the tool's result cannot be sent: {exc}")

    def _as_result(self, value: Any, revision: str) -> Any:
        """The tool function's return ``value`` as a ``tools/call`` result of
        ``revision`` (wire form, or a ``CallToolResult`` it returned)."""
        if isinstance(value, str):
            return {"content": [{"type": "text", "text": value}]}
        if isinstance(value, Content):
            return {"content": [value.wire(revision)]}
        if type(value).__name__ == "CallToolResult":
            return value
        output = self.output
        if output is None:
            if isinstance(value, Mapping) and "content" in value:
                return value  # a result in wire form
            if isinstance(value, list) and any(isinstance(item, Content) for item in value):
                return {"content": [_block(item, revision) for item in value]}
            return {"content": [{"type": "text", "text": _json_text(value)}]}
        # Declared structured: a mapping is the value (a TypedDict may have "content").
        wire, structured = output.structured(value)
        result: dict[str, Any] = {"content": [{"type": "text", "text": _json_text(wire)}]}
        if has_structured_output(revision):
            result["structuredContent"] = structured
        return result


def _invalid_arguments(exc: msgspec.ValidationError) -> RequestError:
    """The -32602 error of arguments that do not fit the tool's input schema (before
    2025-11-25), naming where in the request the value it refused is."""
    found = _AT_PATH.search(str(exc))
    path = "$.params.arguments" + (found.group(1) if found else "")
    return RequestError.of(
        ErrorCode.INVALID_PARAMS, f"invalid arguments: {exc}", data={"path": path}
    )


def _tool_error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _json_text(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _block(item: Any, revision: str) -> dict[str, Any]:
    """One item of a list a tool returned, as a content block."""
    if isinstance(item, (str, Content)):
        return content_block(item, revision)
    return {"type": "text", "text": _json_text(item)}
