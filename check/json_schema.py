"""JSON Schema work of the surface checks: is a tool's schema a schema, does a value
match one, and a value that matches (arguments for ``--call-tools``).

The schemas' dialect is the one they name in ``$schema``, else JSON Schema 2020-12 (the
default the specification sets from 2025-11-25 on; earlier revisions name none). The
validator is ``jsonschema`` (``pip install 'mcpspec[check]'``).

Schemas and values come from the server, so each piece of work here is bounded: a
``pattern`` can backtrack for ever, ``uniqueItems`` compares every pair of a long array
and nested ``minItems`` multiply. Checking and validating stop after
:data:`MAX_SECONDS` (on the main thread, where a timer signal can interrupt them; the
``re`` module heeds signals while it matches), and :func:`example_of` builds at most
:data:`MAX_EXAMPLE_NODES` values and :data:`MAX_EXAMPLE_CHARS` characters. Work given up
raises :class:`GaveUp`, which says why.
"""

from __future__ import annotations

import re
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from mcpspec.runtime.errors import clip

__all__ = ["GaveUp", "check_schema", "example_of", "validate"]

#: How deep :func:`example_of` follows nested schemas.
MAX_DEPTH: Final = 8
#: Seconds one schema check or one validation may take.
MAX_SECONDS: Final = 2.0
#: Values (each array item, member and scalar) :func:`example_of` builds at most.
MAX_EXAMPLE_NODES: Final = 10_000
#: Characters of strings :func:`example_of` builds at most.
MAX_EXAMPLE_CHARS: Final = 256 * 1024


class GaveUp(Exception):
    """Schema work given up before it ended: it ran past a bound (named in the text)."""


class _OutOfTime(BaseException):
    # A BaseException: the validator's own ``except Exception`` must not swallow it.
    pass


@contextmanager
def _time_limit(what: str) -> Iterator[None]:
    """Raise :class:`GaveUp` if the block runs past :data:`MAX_SECONDS`. Unbounded off
    the main thread, without ``setitimer``, or when a timer of someone else's runs."""
    if (
        threading.current_thread() is not threading.main_thread()
        or not hasattr(signal, "setitimer")
        or signal.getitimer(signal.ITIMER_REAL)[0] > 0
    ):
        yield
        return
    armed = [True]

    def alarm(signum: int, frame: Any) -> None:
        if armed[0]:  # a late signal, after the block, is ignored
            raise _OutOfTime

    seconds = MAX_SECONDS
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _OutOfTime:
        raise GaveUp(f"{what} took over {seconds:g} s and was given up") from None
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _validator_class(schema: Any) -> Any:
    import jsonschema
    import jsonschema.validators

    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def _path(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def check_schema(schema: Any) -> str | None:
    """What is wrong with ``schema`` as a JSON Schema (with where), or ``None``.

    :raises GaveUp: checking took over :data:`MAX_SECONDS`.
    """
    import jsonschema

    if not isinstance(schema, dict):
        return f"a schema is an object; got {type(schema).__name__}"
    try:
        cls = _validator_class(schema)  # imports outside the limit: never cut short
        with _time_limit("checking the schema"):
            cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return clip(f"at {_path(exc.path) or '(root)'}: {exc.message}")
    except (RecursionError, ValueError, TypeError) as exc:
        return clip(f"cannot be read as a schema: {exc}")
    return None


def validate(value: Any, schema: Any) -> tuple[str, str] | None:
    """The first place where ``value`` breaks ``schema`` (JSON path below the value,
    reason), or ``None``.

    :raises GaveUp: validating took over :data:`MAX_SECONDS`.
    """
    import referencing.exceptions  # jsonschema's, as lazily imported

    try:
        cls = _validator_class(schema)
        with _time_limit("validating against the schema"):
            error = next(iter(cls(schema).iter_errors(value)), None)
    except (
        RecursionError,
        ValueError,
        TypeError,
        re.error,  # a pattern that is no regex: the schema is broken, not the value
        referencing.exceptions.Unresolvable,  # a $ref to nowhere: likewise
    ) as exc:
        return "", clip(f"cannot validate: {exc}")
    if error is None:
        return None
    return _path(error.absolute_path), clip(error.message)


class _Budget:
    """What :func:`example_of` may still build."""

    def __init__(self) -> None:
        self.nodes = MAX_EXAMPLE_NODES
        self.chars = MAX_EXAMPLE_CHARS

    def take(self, nodes: int = 1, chars: int = 0) -> None:
        self.nodes -= nodes
        self.chars -= chars
        if self.nodes < 0 or self.chars < 0:
            raise GaveUp(
                f"a value matching the schema is over {MAX_EXAMPLE_NODES} values or "
                f"{MAX_EXAMPLE_CHARS} characters"
            )


def example_of(schema: Any) -> Any:
    """A simple value meant to match ``schema``: its default, example, const or first
    enum member, else one built from its type (objects get their required members).

    :raises GaveUp: the value would be over :data:`MAX_EXAMPLE_NODES` values or
        :data:`MAX_EXAMPLE_CHARS` characters (nested ``minItems`` multiply).
    """
    return _example(schema, 0, _Budget())


def _example(schema: Any, depth: int, budget: _Budget) -> Any:
    budget.take()
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return None
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    for key in ("examples", "enum"):
        values = schema.get(key)
        if isinstance(values, list) and values:
            return values[0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return _example(options[0], depth + 1, budget)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        required = schema.get("required")
        names = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
        return {name: _example(properties.get(name, {}), depth + 1, budget) for name in names}
    if kind == "array":
        count = schema.get("minItems")
        count = count if isinstance(count, int) and 0 < count <= 16 else 0
        return [_example(schema.get("items", {}), depth + 1, budget) for _ in range(count)]
    if kind == "string":
        if schema.get("format") == "uri":
            return "https://example.com/"
        length = schema.get("minLength")
        length = length if isinstance(length, int) and 0 < length <= 1024 else 1
        budget.take(0, length)
        return "x" * length
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        if isinstance(low, int | float) and not isinstance(low, bool):
            return int(low) + 1 if "exclusiveMinimum" in schema else low
        return 1
    if kind == "boolean":
        return False
    return None
