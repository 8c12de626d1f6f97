"""Names and docstrings: how schema names and descriptions are spelled in Python."""

from __future__ import annotations

import keyword
import re

__all__ = ["clean_doc", "merged_name", "pascal_case", "snake_case"]


def snake_case(wire: str) -> str:
    """Python attribute name for a JSON property (``inputSchema`` -> ``input_schema``)."""
    name = wire.lstrip("_$")
    name = re.sub(r"[^0-9A-Za-z_]", "_", name)
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    name = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", name).lower()
    if not name:
        return "value"
    return name + "_" if keyword.iskeyword(name) else name


def pascal_case(wire: str) -> str:
    """A class name part for a JSON property (``params`` -> ``Params``)."""
    parts = re.split(r"[^0-9A-Za-z]+", wire)
    return "".join(p[:1].upper() + p[1:] for p in parts if p)


def merged_name(members: list[str]) -> str:
    """A stable name for an inline union: ``TextResourceContents`` and
    ``BlobResourceContents`` give ``TextOrBlobResourceContents``."""
    words = [re.findall(r"[A-Z][a-z0-9]*|[a-z0-9]+", m) for m in members]
    common = 0
    while (
        all(len(w) > common + 1 for w in words)
        and len({tuple(w[len(w) - common - 1 :]) for w in words}) == 1
    ):
        common += 1
    heads = ["".join(w[: len(w) - common]) for w in words]
    return "Or".join(heads) + "".join(words[0][len(words[0]) - common :])


_LINK = re.compile(r"\{@link\s+([^}]*)\}")


def clean_doc(text: str | None, names: frozenset[str]) -> str:
    """A schema description as docstring text: ``{@link X}`` becomes ```X```."""
    if not text:
        return ""

    def link(match: re.Match[str]) -> str:
        target = match.group(1).strip()
        for name in sorted(names, key=len, reverse=True):
            if target.startswith(name) and target != name:
                return f"`{name}` ({target[len(name) :].lstrip(' |')})"
        return f"`{target}`"

    return _LINK.sub(link, text).strip()
