"""The tools whose parameters a 2026-07-28 client mirrors: :class:`ToolHeaderMemory`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from mcpspec.runtime.session.mirrored_headers import ParamHeader

__all__ = ["MAX_REMEMBERED_TOOLS", "ToolHeaderMemory"]

#: Tools whose ``x-mcp-header`` parameters are remembered (the ones listed last).
MAX_REMEMBERED_TOOLS: Final = 4096


class ToolHeaderMemory:
    """The ``x-mcp-header`` parameters of the tools listed (Streamable HTTP 2026-07-28):
    a ``tools/call`` of one of them carries its ``Mcp-Param-*`` headers. Only tools with
    such parameters are kept, the :data:`MAX_REMEMBERED_TOOLS` listed last: a server
    listing more new tools for ever does not make the client grow for ever."""

    __slots__ = ("_params",)

    def __init__(self) -> None:
        self._params: dict[str, Sequence[ParamHeader]] = {}

    def remember(self, tools: Mapping[str, Sequence[ParamHeader]]) -> None:
        """Learn the parameters of tools (name -> ``ParamHeader``\\ s, from
        :func:`mcpspec.runtime.session.mirrored_headers.param_headers`); a tool listed again
        moves to the newest, and one listed without them is forgotten."""
        remembered = self._params
        for name, params in tools.items():
            remembered.pop(name, None)
            if params:
                remembered[name] = params
        while len(remembered) > MAX_REMEMBERED_TOOLS:
            del remembered[next(iter(remembered))]

    def params_of(self, name: str) -> Sequence[ParamHeader]:
        """The parameters of tool ``name`` to mirror (none when it is not known)."""
        return self._params.get(name, ())

    def __len__(self) -> int:
        return len(self._params)
