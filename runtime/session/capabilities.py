"""Which capability each request needs, and whether a capability set has it.

A request needs a capability of its *receiver*: a client sends ``tools/call`` only to a
server that declared ``tools``; a server sends ``sampling/createMessage`` only to a
client that declared ``sampling``. Capabilities are handled as plain JSON objects (the
wire form, ``msgspec.to_builtins`` of the generated capability Struct), so one table
serves every revision; a capability a revision's schema does not define is not required
in that revision (``completions`` before 2025-03-26, ``tasks`` before 2025-11-25).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import msgspec
from msgspec import UNSET

__all__ = [
    "CAPABILITY_PATHS",
    "CLIENT_PROVIDED",
    "MODE_DEPENDENT",
    "SERVER_PROVIDED",
    "CapabilityGate",
    "as_json",
    "defined_capabilities",
    "has_capability",
    "required_capability",
]

Path = tuple[str, ...]

#: Requests a client sends, by the server capability they need.
SERVER_PROVIDED: Final[Mapping[str, Path]] = {
    "completion/complete": ("completions",),
    "logging/setLevel": ("logging",),
    "prompts/get": ("prompts",),
    "prompts/list": ("prompts",),
    "resources/list": ("resources",),
    "resources/read": ("resources",),
    "resources/templates/list": ("resources",),
    "resources/subscribe": ("resources", "subscribe"),
    "resources/unsubscribe": ("resources", "subscribe"),
    "tools/call": ("tools",),
    "tools/list": ("tools",),
    "tasks/list": ("tasks", "list"),
    "tasks/cancel": ("tasks", "cancel"),
    "tasks/get": ("tasks",),
    "tasks/result": ("tasks",),
}

#: Requests a server sends (or, in 2026-07-28, embeds as input requests), by the
#: client capability they need.
CLIENT_PROVIDED: Final[Mapping[str, Path]] = {
    "sampling/createMessage": ("sampling",),
    "roots/list": ("roots",),
    "elicitation/create": ("elicitation",),
    "tasks/list": ("tasks", "list"),
    "tasks/cancel": ("tasks", "cancel"),
    "tasks/get": ("tasks",),
    "tasks/result": ("tasks",),
}

#: Requests whose needed capability depends on a params field other than ``task``
#: (``mode: "url"`` needs ``elicitation.url``).
MODE_DEPENDENT: Final = frozenset({"elicitation/create"})

#: Task-augmented requests (``params.task`` set), by the capability they need.
_TASK_AUGMENTED: Final[Mapping[str, Path]] = {
    "tools/call": ("tasks", "requests", "tools", "call"),
    "sampling/createMessage": ("tasks", "requests", "sampling", "createMessage"),
    "elicitation/create": ("tasks", "requests", "elicitation", "create"),
}


#: Every capability path a request can need (what the checks ask of a capability set).
CAPABILITY_PATHS: Final[frozenset[Path]] = frozenset(
    {
        *SERVER_PROVIDED.values(),
        *CLIENT_PROVIDED.values(),
        *_TASK_AUGMENTED.values(),
        ("elicitation", "form"),
        ("elicitation", "url"),
    }
)


def as_json(value: Any) -> dict[str, Any]:
    """A capability (or identity) value as its JSON object: a generated Struct, a
    mapping, or ``None`` (an empty object)."""
    if value is None:
        return {}
    # The usual kinds first: the ABC check of ``Mapping`` costs more than both.
    if value.__class__ is dict:
        return dict(value)
    if not isinstance(value, msgspec.Struct) and isinstance(value, Mapping):
        return dict(value)
    out = msgspec.to_builtins(value)
    if not isinstance(out, dict):
        raise TypeError(f"expected an object (Struct or mapping), got {type(value).__name__}")
    return out


def required_capability(
    request: Any, table: Mapping[str, Path], defined: frozenset[str]
) -> Path | None:
    """The capability path ``request`` needs from its receiver, or ``None``.

    ``defined`` is the set of top-level capabilities the revision's schema has; a path
    outside it is not required in that revision.
    """
    method = request.method
    params = getattr(request, "params", None)
    path: Path | None = None
    if params is not None and params is not UNSET:
        if getattr(params, "task", UNSET) is not UNSET:
            path = _TASK_AUGMENTED.get(method)
        elif method == "elicitation/create" and getattr(params, "mode", UNSET) == "url":
            path = ("elicitation", "url")
    if path is None:
        path = table.get(method)
    if path is None or path[0] not in defined:
        return None
    return path


def has_capability(capabilities: Mapping[str, Any], path: Path) -> bool:
    """Whether ``capabilities`` (JSON) declares ``path``: every level present, and a
    boolean leaf (``resources.subscribe``) true.

    ``elicitation.form`` is implied by an empty ``elicitation`` object (the form mode
    predates the ``form``/``url`` split).
    """
    node: Any = capabilities
    for depth, key in enumerate(path):
        # A JSON object is a dict: the ABC check of ``Mapping`` only for anything else.
        if node.__class__ is not dict and not isinstance(node, Mapping):
            return False
        if key not in node or node[key] is None or node[key] is False:
            # An empty ``elicitation`` object means form mode (before the form/url split).
            return path[:1] == ("elicitation",) and depth == 1 and key == "form" and not node
        node = node[key]
    return True


def defined_capabilities(capability_type: Any) -> frozenset[str]:
    """The top-level capability names a revision's capability Struct defines."""
    return frozenset(getattr(capability_type, "__struct_encode_fields__", ()))


class CapabilityGate:
    """Which requests a capability set lets through, by method.

    ``static(method)`` is the capability path a plain request of ``method`` needs and
    the set lacks, or ``None``; ``missing(request)`` the same for one request, which
    differs only for a task-augmented request and a URL elicitation
    (:data:`MODE_DEPENDENT`). Verdicts are computed once per method.
    """

    __slots__ = ("_caps", "_defined", "_depends", "_table", "_verdicts")

    def __init__(
        self, table: Mapping[str, Path], defined: frozenset[str], capabilities: Mapping[str, Any]
    ) -> None:
        self._table = table
        self._defined = defined
        self._caps = capabilities
        self._verdicts: dict[str, Path | None] = {}
        depends = {m for m in _TASK_AUGMENTED if "tasks" in defined}
        if "elicitation" in defined:
            depends |= MODE_DEPENDENT
        self._depends = frozenset(depends)

    def static(self, method: str) -> Path | None:
        """The capability a request of ``method`` without task or mode needs and the
        set lacks."""
        try:
            return self._verdicts[method]
        except KeyError:
            path = self._table.get(method)
            if path is not None and (
                path[0] not in self._defined or has_capability(self._caps, path)
            ):
                path = None
            self._verdicts[method] = path
            return path

    def missing(self, request: Any) -> Path | None:
        """The capability ``request`` needs and the set lacks."""
        method = request.method
        if method in self._depends:
            params = request.params
            if (
                getattr(params, "task", UNSET) is not UNSET
                or getattr(params, "mode", None) == "url"
            ):
                path = required_capability(request, self._table, self._defined)
                if path is None or has_capability(self._caps, path):
                    return None
                return path
        return self.static(method)
