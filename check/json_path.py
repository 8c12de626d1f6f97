"""JSON paths in findings (``$.result.tools[3].inputSchema``, ``$.a["b c"]``): the value
at one, and the names of the keys a decoder's path leaves as ``[...]``."""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

__all__ = ["NOWHERE", "named_path", "value_at", "value_at_builtin"]

#: What :func:`value_at` gives for a path that cannot be followed.
NOWHERE: Final = object()
_STEP = re.compile(r'\.([^.\[]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


def value_at(data: bytes, path: str) -> Any:
    """The value at JSON path ``path`` (``$.a.b[2]``, ``$.a["b c"]``) of the message
    ``data``, or :data:`NOWHERE` when the path cannot be followed (``[...]`` stands for
    any key)."""
    if not path.startswith("$") or "[...]" in path:
        return NOWHERE
    try:
        value: Any = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return NOWHERE
    return value_at_builtin(value, path)


def value_at_builtin(value: Any, path: str) -> Any:
    """The value at ``path`` inside the decoded JSON ``value`` (see :func:`value_at`)."""
    position = 1
    while position < len(path):
        step = _STEP.match(path, position)
        if step is None:
            return NOWHERE
        key, index, quoted = step.groups()
        if quoted is not None:
            try:
                key = msgspec.json.decode(quoted)
            except msgspec.DecodeError:
                return NOWHERE
        if key is not None and isinstance(value, dict) and key in value:
            value = value[key]
        elif index is not None and isinstance(value, list) and int(index) < len(value):
            value = value[int(index)]
        else:
            return NOWHERE
        position = step.end()
    return value


#: Concrete paths tried at most when naming the keys of a path with ``[...]``.
MAX_NAMED_PATHS: Final = 1000
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*\Z")


def named_path(data: bytes, path: str, reason: str = "") -> str:
    """``path`` with each ``[...]`` (a decoder's "some key of an object") replaced by the
    key it stands for in the message ``data``: the only key under which the rest of the
    path exists, or the first (a decoder stops at the first error) whose value there
    shows in ``reason`` (``'array'``). Left as it is when that cannot be told."""
    if "[...]" not in path or not path.startswith("$"):
        return path
    try:
        value: Any = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return path
    found = _concrete(value, path, [MAX_NAMED_PATHS])
    if len(found) > 1:
        # The decoder stops at the first error, in the message's order.
        found = [(p, leaf) for p, leaf in found if _shows(leaf, reason)][:1]
    return found[0][0] if len(found) == 1 else path


def _concrete(value: Any, path: str, budget: list[int]) -> list[tuple[str, Any]]:
    """Every path ``path`` stands for in ``value`` (each ``[...]`` a key), with the value
    at its end; at most ``budget[0]`` keys are tried in all."""
    if "[...]" not in path:
        leaf = value_at_builtin(value, path)
        return [] if leaf is NOWHERE else [(path, leaf)]
    head, _, rest = path.partition("[...]")
    found = value_at_builtin(value, head)
    if not isinstance(found, dict):
        return []
    paths: list[tuple[str, Any]] = []
    for key in found:
        if budget[0] <= 0:
            break
        budget[0] -= 1
        step = f".{key}" if _NAME.match(key) else f"[{msgspec.json.encode(key).decode()}]"
        paths += _concrete(value, head + step + rest, budget)
    return paths


def _shows(leaf: Any, reason: str) -> bool:
    """Whether ``reason`` shows the value ``leaf`` (as ``'text'``, or its JSON)."""
    if isinstance(leaf, str):
        return f"'{leaf}'" in reason or f'"{leaf}"' in reason
    if isinstance(leaf, (dict, list)):
        return False
    return msgspec.json.encode(leaf).decode() in reason
