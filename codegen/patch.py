"""Bring an official schema to the form the generator reads: errata applied, every
revision's messages in full wire form.

Both steps edit the schema as JSON, so the same patched schema drives the generator and
the differential tests that compare our decoders with a JSON Schema validator.
"""

from __future__ import annotations

import copy
from typing import Any

from mcpspec.codegen.schema import Erratum

__all__ = [
    "ErratumMismatch",
    "apply_errata",
    "definitions_key",
    "inherit_request_meta",
    "normalise_wire_form",
]


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
    """Give every request and notification definition its JSON-RPC envelope fields, and
    its params the inherited ``_meta``.

    Up to 2025-06-18 the request and notification definitions describe only ``method`` and
    ``params``; ``id`` and ``jsonrpc`` live in ``JSONRPCRequest``, and ``params._meta``
    (``progressToken``) only in the generic ``Request``/``Notification``; a few inline
    params of 2025-11-25 (``tasks/get``, ...) omit the ``_meta`` of ``RequestParams``.
    Adding both here gives every revision the same message types
    (``CallToolRequest(id=1, params=...)`` is a whole wire message everywhere, and
    ``params.meta`` keeps the progress token). Edits ``schema`` in place and returns how
    many definitions it changed.
    """
    key = definitions_key(schema)
    defs: dict[str, Any] = schema[key]
    changed = 0
    jsonrpc = {"const": "2.0", "type": "string"}
    request_id = {"$ref": f"#/{key}/RequestId"}
    for union, envelope, base in (
        ("ClientRequest", {"jsonrpc": jsonrpc, "id": request_id}, "Request"),
        ("ServerRequest", {"jsonrpc": jsonrpc, "id": request_id}, "Request"),
        ("ClientNotification", {"jsonrpc": jsonrpc}, "Notification"),
        ("ServerNotification", {"jsonrpc": jsonrpc}, "Notification"),
    ):
        base_meta = _params_meta(defs, base)
        for name in _union_members(defs, union, key):
            node = defs[name]
            props = node.setdefault("properties", {})
            missing = [p for p in envelope if p not in props]
            for prop in missing:
                props[prop] = copy.deepcopy(envelope[prop])
            if missing:
                node["required"] = sorted(set(node.get("required", [])) | set(missing))
            # Concrete params of these revisions omit the ``_meta`` (``progressToken``)
            # that every message inherits from Request/Notification in the TS source.
            params = props.get("params", {})
            inherits = base_meta is not None and "properties" in params
            gains_meta = inherits and "_meta" not in params["properties"]
            if gains_meta:
                params["properties"]["_meta"] = copy.deepcopy(base_meta)
            changed += bool(missing) or gains_meta
    return changed


def _params_meta(defs: dict[str, Any], base: str) -> Any:
    """The ``_meta`` schema every params of ``base`` (Request, Notification) inherits:
    inline in ``Request.params`` up to 2025-06-18, ``RequestParams`` after."""
    params = defs.get(base, {}).get("properties", {}).get("params", {})
    inline = params.get("properties", {}).get("_meta")
    named = defs.get(f"{base}Params", {}).get("properties", {}).get("_meta")
    return inline if inline is not None else named


def inherit_request_meta(extension: dict[str, Any], revision: dict[str, Any]) -> int:
    """Give the inline params of an extension's requests the ``_meta`` every request
    of its revision has (``RequestParams._meta``: required in 2026-07-28, where it
    carries the per-request protocol version and client capabilities). An extension's
    schema declares its requests on ``JSONRPCRequest`` alone, so their params lack it.
    Edits ``extension`` in place and returns how many requests it changed."""
    key = definitions_key(extension)
    base = revision[definitions_key(revision)].get("RequestParams", {})
    if "_meta" not in base.get("properties", {}):
        return 0
    required = "_meta" in base.get("required", [])
    defs: dict[str, Any] = extension[key]
    meta = {"$ref": f"#/{key}/MetaObject"} if "MetaObject" in defs else {"type": "object"}
    request = f"#/{key}/JSONRPCRequest"
    changed = 0
    for node in defs.values():
        parts = node.get("allOf", [])
        if not any(part.get("$ref") == request for part in parts):
            continue
        for part in parts:
            params = part.get("properties", {}).get("params", {})
            if "properties" not in params or "_meta" in params["properties"]:
                continue
            params["properties"]["_meta"] = copy.deepcopy(meta)
            if required:
                params["required"] = sorted({*params.get("required", []), "_meta"})
            changed += 1
    return changed
