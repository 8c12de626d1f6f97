"""The decorators that declare a server's resources, resource templates, prompts and
completers (:class:`DeclaredFeatures`, a base of ``Server``): each registers with its
registry (:mod:`.resources`, :mod:`.prompts`, :mod:`.completions`), and the server then
answers the requests of that feature itself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from .completions import CompleterFn, Completers
from .principal import current_principal, missing_scopes
from .prompts import Prompts
from .resources import Resources

__all__ = ["DeclaredFeatures"]

_RESOURCES = ("resources/list", "resources/templates/list", "resources/read")
_PROMPTS = ("prompts/list", "prompts/get")

T = TypeVar("T", bound=Callable[..., Awaitable[Any]])
C = TypeVar("C", bound=CompleterFn)


class DeclaredFeatures:
    """Resources, prompts and completers declared by decorators. The server that
    derives from it gives the handlers and the registries."""

    _handlers: dict[str, Any]
    #: The methods answered for what was declared, and what that is.
    _declared: dict[str, str]
    _resources: Resources
    _prompts: Prompts
    _completers: Completers
    #: The revisions the server speaks (``None``: all).
    revisions: tuple[str, ...] | None
    #: Whether the server keeps ``resources/subscribe`` (and declares it).
    subscribe: bool

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        icons: list[Any] | None = None,
        size: int | None = None,
        subscribe: bool = False,
        scopes: Iterable[str] = (),
    ) -> Callable[[T], T]:
        """Declare the decorated coroutine function as the resource ``uri``, or, when
        ``uri`` is an RFC 6570 template (``"db://{table}/{id}"``), as the template whose
        variables are its arguments (see :mod:`mcpspec.runtime.connection.resources`).
        ``name`` defaults to the function's name, ``description`` to its docstring.
        The server then answers ``resources/list``, ``resources/templates/list`` and
        ``resources/read`` itself. ``title`` and ``icons`` are left out of the answers
        of revisions without them (before 2025-06-18 and 2025-11-25). ``subscribe``:
        clients may subscribe to it (to the resources a template gives, for one): the
        server then declares ``resources.subscribe`` and keeps the subscriptions, as
        ``Server(subscribe=True)`` does, and ``server.notify_resource_updated(uri)``
        tells the subscribers (the capability is the server's, so a client may
        subscribe to any URI). ``scopes``: the OAuth scopes a principal needs to see
        and read it (over HTTP with authorization: the lists leave it out for a
        principal without them, and a read is refused with 403 ``insufficient_scope``;
        inside a session it is as unknown)."""

        def register(fn: T) -> T:
            resources = self._resources
            self._may_declare("resources", _RESOURCES)
            resources.add(
                fn,
                uri,
                name=name,
                title=title,
                description=description,
                mime_type=mime_type,
                annotations=annotations,
                icons=icons,
                size=size,
                scopes=scopes,
            )
            self._declared.update(dict.fromkeys(_RESOURCES, "resources"))
            self._handlers["resources/list"] = resources.list_resources
            self._handlers["resources/templates/list"] = resources.list_templates
            self._handlers["resources/read"] = resources.read
            if subscribe:
                self.subscribe = True
            return fn

        return register

    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list[Any] | None = None,
        scopes: Iterable[str] = (),
    ) -> Callable[[T], T]:
        """Declare the decorated coroutine function as a prompt, its parameters the
        arguments (see :mod:`mcpspec.runtime.connection.prompts`); the server then
        answers ``prompts/list`` and ``prompts/get`` itself. ``scopes``: the OAuth
        scopes a principal needs to see and get it (as for a resource)."""

        def register(fn: T) -> T:
            self._may_declare("prompts", _PROMPTS)
            self._prompts.add(
                fn,
                name=name,
                title=title,
                description=description,
                icons=icons,
                revisions=self.revisions,
                scopes=scopes,
            )
            self._declared.update(dict.fromkeys(_PROMPTS, "prompts"))
            self._handlers["prompts/list"] = self._prompts.list_prompts
            self._handlers["prompts/get"] = self._prompts.get
            return fn

        return register

    def completion(
        self, *, argument: str, prompt: str | None = None, template: str | None = None
    ) -> Callable[[C], C]:
        """Declare the decorated coroutine function as the completer of ``argument``
        of prompt ``prompt`` or of the variable ``argument`` of resource template
        ``template`` (see :mod:`mcpspec.runtime.connection.completions`); the server
        then answers ``completion/complete`` and declares ``completions``."""

        def register(fn: C) -> C:
            self._may_declare("completers", ("completion/complete",))
            self._completers.add(fn, prompt=prompt, template=template, argument=argument)
            self._declared["completion/complete"] = "completers"
            self._handlers["completion/complete"] = self._completers.complete
            return fn

        return register

    def _may_declare(self, what: str, methods: tuple[str, ...]) -> None:
        """Refuse to answer ``methods`` for the ``what`` declared when handlers of
        one's own answer them."""
        for method in methods:
            if method in self._handlers and method not in self._declared:
                raise ValueError(f"{method} has a handler of its own: declare {what} or handle it")

    def _knows(self, kind: str, name: str) -> bool:
        """Whether the completion reference ``kind``/``name`` is a declared prompt,
        resource template or resource (which has nothing to complete) that the current
        principal may see."""
        if kind == "ref/prompt":
            return self._prompts.visible(name) is not None
        resources = self._resources
        item = resources.templates.get(name) or resources.static.get(name)
        return item is not None and not missing_scopes(current_principal.get(), item.scopes)
