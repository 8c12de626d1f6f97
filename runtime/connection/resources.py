"""Resources declared from functions: static ones by URI, and RFC 6570 templates whose
variables are the function's arguments.

``Server.resource(uri)`` registers one (see :class:`Resources`); the server then
answers ``resources/list``, ``resources/templates/list`` (both paged) and
``resources/read``. A read looks the URI up among the static resources first, then
matches it against the templates in the order they were declared (see
:mod:`.uri_templates`); the first whose variables convert to its function's
parameters reads it. A URI nothing matches is -32002 up to 2025-11-25 and -32602 in
2026-07-28 (the code each revision's specification gives), with the URI in ``data``;
so is a :class:`ResourceNotFound` a function raises (a template's row that is not in
the database).

A function returns ``str`` (a text content), ``bytes`` (a blob, base64), a resource
contents object (``TextResourceContents``, ``BlobResourceContents``, of any revision,
or a mapping in wire form; an ``EmbeddedResource`` gives its ``resource``), a content
helper of :mod:`.content` (``image``, ``audio``: a blob with its MIME type;
``embedded_resource``: its contents), or a list of them; a contents without ``uri``
gets the URI read, one without ``mimeType`` the resource's. A function annotated to
return a resource link (which has no contents) is refused when it is declared.
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import msgspec

from mcpspec.runtime.errors import clip

from .content import Content, refuse_unsupported
from .context import RequestContext
from .errors import RequestError
from .pagination import Pager
from .principal import current_principal, missing_scopes
from .signatures import Signature, for_revision, signature_of
from .uri_templates import UriTemplate

__all__ = ["RESOURCE_NOT_FOUND", "Resource", "ResourceNotFound", "ResourceTemplate", "Resources"]

#: The error code of an unknown resource up to 2025-11-25 (2026-07-28 uses -32602).
RESOURCE_NOT_FOUND = -32002

ResourceFn = Callable[..., Awaitable[Any]]


class ResourceNotFound(Exception):
    """Raised by a resource function: the resource does not exist, answered with the
    error of the negotiated revision (-32002, or -32602 in 2026-07-28)."""


class Resource:
    """A static resource: its definition (wire form), its function and the OAuth
    ``scopes`` a principal needs to see and read it."""

    def __init__(
        self,
        fn: ResourceFn,
        definition: dict[str, Any],
        signature: Signature,
        scopes: frozenset[str] = frozenset(),
    ) -> None:
        self.fn = fn
        self.uri: str = definition["uri"]
        self.definition = definition
        self.signature = signature
        self.scopes = scopes


class ResourceTemplate:
    """A resource template: its definition (wire form), its parsed template and its
    function, whose arguments are the template's variables; ``scopes`` as for
    :class:`Resource`, for every resource it gives."""

    def __init__(
        self,
        fn: ResourceFn,
        definition: dict[str, Any],
        template: UriTemplate,
        signature: Signature,
        scopes: frozenset[str] = frozenset(),
    ) -> None:
        self.fn = fn
        self.definition = definition
        self.template = template
        self.signature = signature
        self.scopes = scopes

    def arguments(self, uri: str, ctx: RequestContext | None) -> dict[str, Any] | None:
        """The function's keyword arguments for ``uri``, or ``None`` when this template
        does not give it (no match, a required variable undefined, or a value that does
        not convert)."""
        values = self.template.match(uri)
        if values is None or not self.signature.required <= values.keys():
            return None
        try:
            return self.signature.call_arguments(values, ctx)
        except msgspec.ValidationError:
            return None


class Resources:
    """The resources and templates of a server, and the answers to their requests."""

    def __init__(self, pager: Pager) -> None:
        self.pager = pager
        self.static: dict[str, Resource] = {}
        self.templates: dict[str, ResourceTemplate] = {}

    def add(
        self,
        fn: ResourceFn,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        icons: list[Any] | None = None,
        size: int | None = None,
        scopes: Iterable[str] = (),
    ) -> None:
        """Declare ``fn`` as the resource (or, when ``uri`` has an expression, the
        template) ``uri``; see ``Server.resource``."""
        needed = frozenset(scopes)
        what = f"resource {uri!r}"
        signature = signature_of(fn, what)
        refuse_unsupported(fn, None, what, resource=True)
        wire: dict[str, Any] = {"name": name or getattr(fn, "__name__", uri)}
        optional = {
            "title": title,
            "description": description if description is not None else doc_of(fn),
            "mimeType": mime_type,
            "annotations": None if annotations is None else _wire(annotations),
            "icons": None if icons is None else [_wire(icon) for icon in icons],
        }
        wire.update({key: value for key, value in optional.items() if value is not None})
        if "{" not in uri:
            if signature.required:
                raise TypeError(
                    f"{what} is static: its function takes no arguments (got "
                    f"{', '.join(sorted(signature.required))}); a template names them in braces"
                )
            if size is not None:
                wire["size"] = size
            self.static[uri] = Resource(fn, {"uri": uri, **wire}, signature, needed)
            return
        if size is not None:
            raise TypeError(f"{what}: a template has no size (each resource it gives has its own)")
        template = UriTemplate(uri)
        variables = set(template.variables)
        missing = variables - set(signature.names)
        if missing:
            raise TypeError(f"{what}: the function has no parameter {', '.join(sorted(missing))}")
        unknown = signature.required - variables
        if unknown:
            raise TypeError(
                f"{what}: parameter {', '.join(sorted(unknown))} is not a variable of the "
                "template (give it a default)"
            )
        definition = {"uriTemplate": uri, **wire}
        self.templates[uri] = ResourceTemplate(fn, definition, template, signature, needed)

    @property
    def scoped(self) -> bool:
        """Whether any resource or template needs scopes of its own."""
        return any(r.scopes for r in self.static.values()) or any(
            t.scopes for t in self.templates.values()
        )

    def scopes_of(self, uri: str) -> frozenset[str]:
        """The scopes reading ``uri`` needs: those of the resource or template that
        reads it (none when nothing does)."""
        found = self._find(uri, None)
        return frozenset() if found is None else found[0].scopes

    # -- the requests -------------------------------------------------------------------------

    async def list_resources(self, request: Any, ctx: RequestContext) -> Any:
        page, following = self.pager.page(
            "resources/list", _visible(self.static.values()), _cursor(request)
        )
        return _listing(
            "resources", [for_revision(r.definition, ctx.revision) for r in page], following
        )

    async def list_templates(self, request: Any, ctx: RequestContext) -> Any:
        page, following = self.pager.page(
            "resources/templates/list", _visible(self.templates.values()), _cursor(request)
        )
        return _listing(
            "resourceTemplates", [for_revision(t.definition, ctx.revision) for t in page], following
        )

    async def read(self, request: Any, ctx: RequestContext) -> Any:
        uri: str = request.params.uri
        found = self._find(uri, ctx)
        if found is None or missing_scopes(current_principal.get(), found[0].scopes):
            # A resource the principal may not read is one it cannot know of (over
            # HTTP the app refused it with 403 already).
            raise not_found(uri, ctx.revision)
        item, kwargs = found
        try:
            value = await item.fn(**kwargs)
        except ResourceNotFound:
            raise not_found(uri, ctx.revision) from None
        return {"contents": contents_of(value, uri, item.definition.get("mimeType"))}

    def _find(
        self, uri: str, ctx: RequestContext | None
    ) -> tuple[Resource | ResourceTemplate, dict[str, Any]] | None:
        """The resource or template that reads ``uri`` and its function's arguments;
        ``None`` when no resource or template gives ``uri``."""
        resource = self.static.get(uri)
        if resource is not None:
            return resource, resource.signature.call_arguments({}, ctx)
        for template in self.templates.values():
            kwargs = template.arguments(uri, ctx)
            if kwargs is not None:
                return template, kwargs
        return None


def not_found(uri: str, revision: str) -> RequestError:
    """The error for an unknown resource in ``revision``: -32002 up to 2025-11-25,
    -32602 in 2026-07-28."""
    code = RESOURCE_NOT_FOUND if revision < "2026-07-28" else -32602
    return RequestError.of(code, "Resource not found", data={"uri": clip(uri)})


def contents_of(value: Any, uri: str, mime_type: str | None) -> list[dict[str, Any]]:
    """A resource function's return value as ``contents`` (wire form)."""
    if isinstance(value, (list, tuple)):
        return [_one_contents(item, uri, mime_type) for item in value]
    return [_one_contents(value, uri, mime_type)]


def _one_contents(value: Any, uri: str, mime_type: str | None) -> dict[str, Any]:
    if isinstance(value, str):
        item: dict[str, Any] = {"uri": uri, "text": value}
    elif isinstance(value, (bytes, bytearray, memoryview)):
        item = {"uri": uri, "blob": base64.b64encode(bytes(value)).decode("ascii")}
    elif isinstance(value, Content):
        try:
            item = {"uri": uri, **value.as_contents()}
        except TypeError as exc:
            raise TypeError(f"resource {uri!r}: {exc}") from None
    else:
        wire = _wire(value)
        if isinstance(wire, dict) and wire.get("type") == "resource":
            wire = wire.get("resource")
        if not isinstance(wire, dict) or not ("text" in wire or "blob" in wire):
            raise TypeError(
                f"resource {uri!r}: a function returns str, bytes, resource contents or a "
                f"list of them, not {type(value).__name__}"
            )
        item = {"uri": uri, **wire}
    if mime_type is not None:
        item.setdefault("mimeType", mime_type)
    return item


def _wire(value: Any) -> Any:
    """A typed value of any revision, or a mapping, in wire form."""
    if isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value


def _visible(items: Iterable[Any]) -> list[Any]:
    """The ``items`` (each with its ``scopes``) the current principal may see."""
    principal = current_principal.get()
    if principal is None:
        return list(items)
    return [item for item in items if not missing_scopes(principal, item.scopes)]


def _cursor(request: Any) -> Any:
    params = request.params
    return None if params is None or params is msgspec.UNSET else params.cursor


def _listing(field: str, items: list[dict[str, Any]], following: str | None) -> dict[str, Any]:
    result: dict[str, Any] = {field: items}
    if following is not None:
        result["nextCursor"] = following
    return result


def doc_of(fn: Callable[..., Any]) -> str | None:
    """A function's docstring, cleaned of indentation (``None`` when it has none)."""
    doc = fn.__doc__
    return None if doc is None else inspect.cleandoc(doc) or None
