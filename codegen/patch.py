"""Bring an official schema to the form the generator reads: errata applied, every
revision's messages in full wire form.

Both steps edit the schema as JSON, so the same patched schema drives the generator and
the differential tests that compare our decoders with a JSON Schema validator.
"""

from __future__ import annotations

import copy
from typing import Any

from mcpspec.schema import Erratum

__all__ = ["ErratumMismatch", "apply_errata", "definitions_key", "normalise_wire_form"]


class ErratumMismatch(ValueError):
    """An erratum's expected old value is not what the schema holds."""


def definitions_key(schema: dict[str, Any]) -> str:
    """``definitions`` (draft-07 revisions) or ``$defs`` (2020-12 revisions)."""
    return "$defs" if "$defs" in schema else "definitions"


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _resolve_parent(doc: Any, pointer: str) -> tuple[Any, str | int]:
    tokens = [_unescape(t) for t in pointer.split("/")[1:]]
    node = doc
    for token in tokens[:-1]:
        node = node[int(token)] if isinstance(node, list) else node[token]
    last = tokens[-1]
    return node, (int(last) if isinstance(node, list) else last)


def apply_errata(schema: dict[str, Any], errata: list[Erratum]) -> dict[str, Any]:
    """A copy of ``schema`` with every erratum applied, after asserting its old value."""
    patched = copy.deepcopy(schema)
    for erratum in errata:
        try:
            parent, key = _resolve_parent(patched, erratum.pointer)
            current = parent[key]
        except (KeyError, IndexError, TypeError) as exc:
            raise ErratumMismatch(
                f"{erratum.revision} {erratum.pointer}: no such location ({exc!r}); "
                "upstream moved or fixed it: review and remove the erratum"
            ) from None
        if current != erratum.old:
            raise ErratumMismatch(
                f"{erratum.revision} {erratum.pointer}: expected {erratum.old!r}, found "
                f"{current!r}; upstream changed it: review and remove the erratum"
            )
        parent[key] = copy.deepcopy(erratum.new)
    return patched


def _union_members(defs: dict[str, Any], name: str, key: str) -> list[str]:
    node = defs.get(name, {})
    prefix = f"#/{key}/"
    return [arm["$ref"][len(prefix) :] for arm in node.get("anyOf", []) if "$ref" in arm]


def normalise_wire_form(schema: dict[str, Any]) -> int:
    """Give every request and notification definition its JSON-RPC envelope fields.

    Up to 2025-06-18 the request and notification definitions describe only ``method`` and
    ``params``; ``id`` and ``jsonrpc`` live in ``JSONRPCRequest``. Later revisions define
    the complete message. Adding the envelope here gives every revision the same message
    types (``CallToolRequest(id=1, params=...)`` is a whole wire message everywhere).
    Edits ``schema`` in place and returns how many definitions it changed.
    """
    key = definitions_key(schema)
    defs: dict[str, Any] = schema[key]
    changed = 0
    jsonrpc = {"const": "2.0", "type": "string"}
    request_id = {"$ref": f"#/{key}/RequestId"}
    for union, envelope in (
        ("ClientRequest", {"jsonrpc": jsonrpc, "id": request_id}),
        ("ServerRequest", {"jsonrpc": jsonrpc, "id": request_id}),
        ("ClientNotification", {"jsonrpc": jsonrpc}),
        ("ServerNotification", {"jsonrpc": jsonrpc}),
    ):
        for name in _union_members(defs, union, key):
            node = defs[name]
            props = node.setdefault("properties", {})
            missing = [p for p in envelope if p not in props]
            if not missing:
                continue
            for prop in missing:
                props[prop] = copy.deepcopy(envelope[prop])
            node["required"] = sorted(set(node.get("required", [])) | set(missing))
            changed += 1
    return changed
