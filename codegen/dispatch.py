"""Dispatch tables: which message types each side sends, by method, and what answers
each request."""

from __future__ import annotations

from mcpspec.runtime.declared import RESULT_COMPLETE

from .lowering import SchemaLowering
from .model import Alias, UnsupportedSchema

__all__ = ["add_tables"]


def members_of(lowering: SchemaLowering, union: str) -> list[str]:
    """The definitions a message union (``ClientRequest``, ...) lists."""
    node = lowering.defs.get(union)
    if node is None:
        return []
    if "anyOf" not in node:
        # 2026-07-28 defines ClientNotification as a copy of CancelledNotification.
        method = node.get("properties", {}).get("method", {}).get("const")
        if method is None:
            return []
        same = [
            name
            for name, other in lowering.defs.items()
            if other.get("properties", {}).get("method", {}).get("const") == method
            and not name.startswith(("Client", "Server"))
        ]
        return same[:1] or [union]
    return [n for n in (lowering.deref(a)[0] for a in node["anyOf"]) if n is not None]


def method_table(lowering: SchemaLowering, union: str) -> dict[str, str]:
    """method -> message type name, for the members of ``union``."""
    table: dict[str, str] = {}
    for name in members_of(lowering, union):
        lowering.ensure(name)
        struct = lowering.module.structs[name]
        if struct.tag_field != "method" or struct.tag is None:
            continue
        current = table.get(struct.tag)
        # 2026-07-28 ClientNotification duplicates CancelledNotification: prefer the
        # definition named for its message over one named for its direction.
        if current is None or current.startswith(("Client", "Server")):
            table[struct.tag] = name
    return table


def result_names(lowering: SchemaLowering, request: str) -> tuple[str, ...]:
    """Result types of a request, by the schema's ``*ResultResponse`` where it has one,
    else by name (``FooRequest`` -> ``FooResult``, else ``EmptyResult``)."""
    base = request.removesuffix("Request")
    response = lowering.defs.get(f"{base}ResultResponse")
    if response is not None:
        result = response["properties"]["result"]
        arms = result.get("anyOf", [result])
        names = tuple(n for n in (lowering.deref(a)[0] for a in arms) if n is not None)
        for n in names:
            lowering.ensure(n)
        return names
    for candidate in (f"{base}Result", "EmptyResult", "Result"):
        if candidate in lowering.defs:
            lowering.ensure(candidate)
            return (candidate,)
    raise UnsupportedSchema(f"{lowering.module.revision}: no result type for {request}")


def add_tables(lowering: SchemaLowering) -> None:
    """Fill the module's dispatch tables, result tables and params aliases."""
    m = lowering.module
    m.client_requests = method_table(lowering, "ClientRequest")
    m.server_requests = method_table(lowering, "ServerRequest")
    m.client_notifications = method_table(lowering, "ClientNotification")
    m.server_notifications = method_table(lowering, "ServerNotification")
    m.input_requests = method_table(lowering, "InputRequest")
    for table in (m.client_requests, m.server_requests, m.input_requests):
        for method, request in table.items():
            m.results.setdefault(method, result_names(lowering, request))
    _complete_results(lowering)
    _params_aliases(lowering)
    if "CreateTaskResult" in lowering.defs:
        lowering.ensure("CreateTaskResult")
        for table in (m.client_requests, m.server_requests):
            for method, request in table.items():
                params = next((f for f in m.structs[request].fields if f.wire == "params"), None)
                if params is None or params.type.kind != "ref":
                    continue
                target = m.structs.get(params.type.name)
                if target is not None and any(f.wire == "task" for f in target.fields):
                    m.task_results[method] = "CreateTaskResult"


def _complete_results(lowering: SchemaLowering) -> None:
    """The complete member of every result union tagged on ``resultType``: what a result
    without the tag decodes as."""
    m = lowering.module
    for method, names in m.results.items():
        if len(names) < 2:
            continue
        complete = [
            n
            for n in names
            if m.structs[n].tag_field == "resultType" and m.structs[n].tag == RESULT_COMPLETE
        ]
        if len(complete) != 1:
            raise UnsupportedSchema(
                f"{m.revision}: the results of {method} ({', '.join(names)}) have "
                f"{len(complete)} complete members, not one"
            )
        m.complete_results[method] = complete[0]


def _params_aliases(lowering: SchemaLowering) -> None:
    """``ListToolsRequestParams`` in every revision: where a message's params are a
    shared definition (``PaginatedRequestParams``), alias the message's own name."""
    m = lowering.module
    tables = (
        m.client_requests,
        m.server_requests,
        m.client_notifications,
        m.server_notifications,
        m.input_requests,
    )
    for message in sorted({name for table in tables for name in table.values()}):
        params = next((f for f in m.structs[message].fields if f.wire == "params"), None)
        alias = f"{message}Params"
        if params is None or params.type.kind != "ref" or params.type.name == alias:
            continue
        if alias in m.structs or alias in m.aliases or alias in lowering.defs:
            continue
        doc = f"The params of `{message}`, which the schema names `{params.type.name}`."
        m.aliases[alias] = Alias(alias, doc, params.type)
