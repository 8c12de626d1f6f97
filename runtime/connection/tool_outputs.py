"""The client's side of structured tool output: the ``outputSchema`` of each tool it
listed, the check of a ``tools/call`` result against it, and the result's
``structuredContent`` as a Python type.

The specification asks a server whose tool declares an ``outputSchema`` to answer
``structuredContent`` that conforms to it, and a client to check. The check needs the
tool's definition: the client keeps those of the tools it lists (``list_tools``,
``tool_pages``), and lists the tools once by itself when a call answers structured
content before any listing. It validates with ``jsonschema`` when that is installed
(the ``check`` extra), and else checks that the structured content is there. A type asked for
(``call_tool(..., result_type=T)``) is checked by msgspec in any case.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Iterable
from typing import Any, Final, TypeVar

import msgspec
from msgspec import UNSET

from .structured import OutputType

__all__ = ["OutputSchemas", "structured_as"]

logger = logging.getLogger("mcpspec.connection")

#: How many tools' output schemas a client keeps (a server listing more tools than
#: this has the oldest ones forgotten, and unchecked).
MAX_REMEMBERED_TOOLS: Final = 10_000

R = TypeVar("R")


class OutputSchemas:
    """The output schemas of the tools listed, by name, and their validators (made
    when first needed)."""

    __slots__ = ("_schemas", "_validators", "listed")

    def __init__(self) -> None:
        self._schemas: dict[str, Any] = {}
        self._validators: dict[str, Any] = {}
        #: Whether a listing was read (else a structured answer is worth one).
        self.listed = False

    def remember(self, tools: Iterable[Any]) -> None:
        """Keep the output schemas of ``tools`` (typed ``Tool`` definitions)."""
        self.listed = True
        for tool in tools:
            schema = getattr(tool, "output_schema", UNSET)
            self._validators.pop(tool.name, None)
            if schema is UNSET:
                self._schemas.pop(tool.name, None)
                continue
            if len(self._schemas) >= MAX_REMEMBERED_TOOLS:
                del self._schemas[next(iter(self._schemas))]
            self._schemas[tool.name] = msgspec.to_builtins(schema)

    def problem(self, name: str, result: Any) -> str | None:
        """What is wrong with ``result``, a ``CallToolResult`` of tool ``name``, given
        its output schema (``None``: nothing, or the tool is not known)."""
        schema = self._schemas.get(name)
        if schema is None or result.is_error is True:
            return None
        structured = getattr(result, "structured_content", UNSET)
        if structured is UNSET:
            return f"tool {name!r} declares an outputSchema but answered no structuredContent"
        validator = self._validator(name, schema)
        if validator is None:
            return None
        error = next(iter(validator.iter_errors(structured)), None)
        if error is None:
            return None
        where = "".join(f"[{part!r}]" for part in error.absolute_path)
        return (
            f"the structuredContent of tool {name!r} does not fit its outputSchema: "
            f"{error.message} (at $.structuredContent{where})"
        )

    def _validator(self, name: str, schema: Any) -> Any:
        if name in self._validators:
            return self._validators[name]
        validator = None
        try:
            import jsonschema
        except ImportError:
            jsonschema = None  # type: ignore[assignment]
        if jsonschema is not None:
            cls = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
            try:
                cls.check_schema(schema)
                validator = cls(schema)
            except jsonschema.SchemaError as exc:
                logger.warning("tool %r: its outputSchema is not a JSON schema: %s", name, exc)
        self._validators[name] = validator
        return validator


async def remembering(
    pages: AsyncGenerator[Any, None], schemas: OutputSchemas
) -> AsyncGenerator[Any, None]:
    """``pages`` of ``tools/list``, their tools' output schemas kept in ``schemas``."""
    try:
        async for page in pages:
            schemas.remember(page.tools)
            yield page
    finally:
        await pages.aclose()


def structured_as(structured: Any, result_type: type[R]) -> R:
    """``structured`` (a ``structuredContent``) as ``result_type``: a scalar from under
    ``"result"``, as servers wrap it (``msgspec.ValidationError`` when it does not
    fit)."""
    output = OutputType.of(result_type)
    if (
        (output is None or output.wrapped)
        and isinstance(structured, dict)
        and set(structured) == {"result"}
    ):
        structured = structured["result"]
    return msgspec.convert(structured, result_type)
