"""Build the model of one revision (:mod:`.model`) from its patched schema.

One step per concern: :mod:`.lowering` lowers every definition to Structs and aliases
(names from :mod:`.naming`, unions decided by :mod:`.unions`), :mod:`.dispatch` adds the
dispatch and result tables, and this module adds what the runtime reads about the
revision as a whole: its protocol model, batches, the error response's id, and the
defaults that let every message be built without its all-optional params.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mcpspec.runtime.declared import ProtocolModel

from .dispatch import add_tables
from .lowering import SchemaLowering
from .model import Module, Struct, UnsupportedSchema
from .unions import OWNED_UNIONS

__all__ = ["OWNED_UNIONS", "UnsupportedSchema", "build_extension", "build_module"]


def build_module(revision: str, schema: dict[str, Any]) -> Module:
    """The model of one revision, from its patched schema."""
    lowering = SchemaLowering(revision, schema)
    for name in lowering.defs:
        lowering.ensure(name)
    add_tables(lowering)
    module = lowering.module
    module.batches = "JSONRPCBatchRequest" in lowering.defs
    error = lowering.defs.get("JSONRPCErrorResponse") or lowering.defs["JSONRPCError"]
    module.error_id_required = "id" in error.get("required", [])
    module.protocol_model = (
        ProtocolModel.STATELESS if lowering.stateless else ProtocolModel.HANDSHAKE
    )
    _default_all_optional_params(module)
    return module


def _buildable_without_arguments(struct: Struct) -> bool:
    """Whether ``struct`` can be built with no arguments: every field has a default and
    no membership check needs one of them set."""
    return not struct.arms and all(
        not f.required or f.const is not None or f.empty_default or f.default_factory
        for f in struct.fields
    )


def _default_all_optional_params(module: Module) -> None:
    """A request whose required ``params`` can be built without arguments gets them by
    default, so ``ListToolsRequest(id=1)`` works in every revision (2026-07-28 requires
    params for their ``_meta``, which the client session fills)."""
    tables = (module.client_requests, module.server_requests, module.input_requests)
    for message in sorted({name for table in tables for name in table.values()}):
        struct = module.structs[message]
        for index, f in enumerate(struct.fields):
            if f.wire != "params" or not f.required or f.type.kind != "ref":
                continue
            params = module.structs.get(f.type.name)
            if params is not None and _buildable_without_arguments(params):
                struct.fields[index] = dataclasses.replace(f, default_factory=params.name)


def build_extension(revision: str, schema: dict[str, Any], stateless: bool = False) -> Module:
    """The model of one extension's schema: its definitions, its requests, input
    requests (embedded without an ``id``) and notifications by method, and each
    request's result (``XRequest`` -> ``XResult``).
    An extension schema repeats the core definitions it uses; they are lowered again
    so the module stands alone. ``stateless``: the revision is negotiated per request,
    so results are tagged on ``resultType`` as that revision's are."""
    lowering = SchemaLowering(revision, schema, stateless)
    for name in lowering.defs:
        lowering.ensure(name)
    module = lowering.module
    declared = set(module.structs) | set(module.aliases)
    for struct in module.structs.values():
        if struct.origin != "definition" or struct.tag_field != "method" or struct.tag is None:
            continue
        if any(f.wire == "id" for f in struct.fields):
            module.client_requests[struct.tag] = struct.name
            result = struct.name.removesuffix("Request") + "Result"
            if result in declared:
                module.results[struct.tag] = (result,)
        elif struct.name.endswith("Request"):
            module.input_requests[struct.tag] = struct.name
        else:
            module.server_notifications[struct.tag] = struct.name
    return module
