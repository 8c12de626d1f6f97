"""Completers of prompt arguments and resource template variables.

``Server.completion(prompt=..., argument=...)`` (or ``template=...``) registers one
(see :class:`Completers`); the server then answers ``completion/complete`` and
declares the ``completions`` capability (from 2025-03-26; 2024-11-05 answers the
request without declaring it, as that revision has no such capability). A completer is
a coroutine function taking the value typed so far (its first parameter) and,
optionally, a parameter named ``context`` (the other arguments already chosen, a
``dict[str, str]``, empty before 2025-06-18) and one annotated
:class:`~mcpspec.runtime.connection.RequestContext`. It returns the suggested values
(an iterable of strings): the first :data:`MAX_VALUES` are sent, with ``total`` and
``hasMore``. An argument without a completer completes to nothing; a reference to no
prompt or template of the server answers -32602.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final

import msgspec

from mcpspec.runtime.errors import show

from .context import RequestContext
from .errors import RequestError

__all__ = ["MAX_VALUES", "Completer", "Completers"]

#: The most values one answer carries (the specification's limit).
MAX_VALUES: Final = 100

CompleterFn = Callable[..., Awaitable[Iterable[str]]]


class Completer:
    """One completer: the function, and how it takes the value, the context and the
    request's context."""

    def __init__(self, fn: CompleterFn, what: str) -> None:
        if not inspect.iscoroutinefunction(fn):
            raise TypeError(f"{what}: a coroutine function (async def) is needed; got {fn!r}")
        hints = typing.get_type_hints(fn)
        parameters = list(inspect.signature(fn).parameters.values())
        self.fn = fn
        self.value_parameter: str | None = None
        self.context_parameter: str | None = None
        self.request_parameter: str | None = None
        for parameter in parameters:
            if hints.get(parameter.name) is RequestContext:
                self.request_parameter = parameter.name
            elif parameter.name == "context":
                self.context_parameter = parameter.name
            elif self.value_parameter is None:
                self.value_parameter = parameter.name
            else:
                raise TypeError(
                    f"{what}: a completer takes the value, `context` and a RequestContext; "
                    f"{parameter.name!r} is none of them"
                )
        if self.value_parameter is None:
            raise TypeError(f"{what}: a completer takes the value typed so far")

    async def complete(self, value: str, context: dict[str, str], ctx: RequestContext) -> list[str]:
        kwargs: dict[str, Any] = {}
        if self.value_parameter is not None:
            kwargs[self.value_parameter] = value
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = context
        if self.request_parameter is not None:
            kwargs[self.request_parameter] = ctx
        return [str(item) for item in await self.fn(**kwargs)]


class Completers:
    """The completers of a server, by reference (``("ref/prompt", name)`` or
    ``("ref/resource", template)``) and argument, and the answer to
    ``completion/complete``. ``known`` tells which references exist (the server's
    prompts and templates)."""

    def __init__(self, known: Callable[[str, str], bool]) -> None:
        self._known = known
        self.completers: dict[tuple[str, str, str], Completer] = {}

    def add(
        self, fn: CompleterFn, *, prompt: str | None, template: str | None, argument: str
    ) -> None:
        """Declare ``fn`` as the completer of ``argument`` of ``prompt`` or
        ``template`` (exactly one of them)."""
        if (prompt is None) == (template is None):
            raise TypeError("a completer is for one prompt or one template: give one of them")
        kind, name = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", template)
        assert name is not None
        what = f"completer of {argument!r} of {name!r}"
        self.completers[(kind, name, argument)] = Completer(fn, what)

    async def complete(self, request: Any, ctx: RequestContext) -> Any:
        params = request.params
        ref = params.ref
        kind = ref.type
        name: str = ref.name if kind == "ref/prompt" else ref.uri
        if not self._known(kind, name):
            what = "prompt" if kind == "ref/prompt" else "resource or resource template"
            raise RequestError.invalid_params(f"no {what} {show(name)}")
        argument = params.argument
        completer = self.completers.get((kind, name, argument.name))
        if completer is None:
            return {"completion": {"values": []}}
        given = getattr(params, "context", msgspec.UNSET)
        context: dict[str, str] = {}
        if given not in (None, msgspec.UNSET) and given.arguments not in (None, msgspec.UNSET):
            context = dict(given.arguments)
        values = await completer.complete(argument.value, context, ctx)
        completion: dict[str, Any] = {"values": values[:MAX_VALUES], "total": len(values)}
        if len(values) > MAX_VALUES:
            completion["hasMore"] = True
        return {"completion": completion}
