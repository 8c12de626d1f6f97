"""Prompts declared from functions: the arguments from the signature, the messages
from the return value.

``Server.prompt()`` registers one (see :class:`Prompts`); the server then answers
``prompts/list`` (paged) and ``prompts/get``. Each parameter is an argument (a
string on the wire, converted to the annotation), required when it has no default,
described by ``Annotated[str, msgspec.Meta(description=...)]``. ``prompts/get`` with an
unknown prompt, a required argument missing, an argument the prompt does not take or
one that does not convert answers -32602 naming it.

A function returns a string (one user message), a message (``PromptMessage`` of any
revision or a mapping with ``role`` and ``content``), a content block (a user message
of it; a content helper of :mod:`.content`, ``image(...)``, ``audio(...)``, ..., also
as a message's ``content``), a list of those, or the whole ``GetPromptResult``. A
content helper takes the wire form of the negotiated revision; one the revision lacks
(audio before 2025-03-26, a resource link before 2025-06-18) answers -32603 naming the
revision it needs, and a function annotated to return a type that none of the server's
revisions has is refused when it is declared.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import msgspec

from mcpspec.runtime.errors import ErrorCode, show

from .content import Content, ContentUnsupported, refuse_unsupported
from .context import RequestContext
from .errors import RequestError
from .pagination import Pager
from .principal import current_principal, missing_scopes
from .resources import doc_of
from .signatures import Signature, for_revision, signature_of

__all__ = ["Prompt", "Prompts"]

PromptFn = Callable[..., Awaitable[Any]]


class Prompt:
    """One prompt: its definition (wire form), its function and the OAuth ``scopes`` a
    principal needs to see and get it."""

    def __init__(
        self,
        fn: PromptFn,
        definition: dict[str, Any],
        signature: Signature,
        scopes: frozenset[str] = frozenset(),
    ) -> None:
        self.fn = fn
        self.name: str = definition["name"]
        self.definition = definition
        self.signature = signature
        self.scopes = scopes


class Prompts:
    """The prompts of a server, and the answers to their requests."""

    def __init__(self, pager: Pager) -> None:
        self.pager = pager
        self.prompts: dict[str, Prompt] = {}

    def add(
        self,
        fn: PromptFn,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list[Any] | None = None,
        revisions: Iterable[str] | None = None,
        scopes: Iterable[str] = (),
    ) -> Prompt:
        """Declare ``fn`` as a prompt (see ``Server.prompt``) of a server speaking
        ``revisions`` (``None``: all)."""
        prompt_name = str(name or getattr(fn, "__name__", "prompt"))
        what = f"prompt {prompt_name!r}"
        signature = signature_of(fn, what)
        refuse_unsupported(fn, revisions, what)
        wire: dict[str, Any] = {"name": prompt_name}
        if title is not None:
            wire["title"] = title
        text = description if description is not None else doc_of(fn)
        if text is not None:
            wire["description"] = text
        if icons is not None:
            wire["icons"] = [msgspec.to_builtins(icon) for icon in icons]
        arguments = []
        for argument in signature.names:
            entry: dict[str, Any] = {"name": argument}
            if argument in signature.descriptions:
                entry["description"] = signature.descriptions[argument]
            if argument in signature.required:
                entry["required"] = True
            arguments.append(entry)
        if arguments:
            wire["arguments"] = arguments
        prompt = Prompt(fn, wire, signature, frozenset(scopes))
        self.prompts[prompt_name] = prompt
        return prompt

    @property
    def scoped(self) -> bool:
        """Whether any prompt needs scopes of its own."""
        return any(prompt.scopes for prompt in self.prompts.values())

    def visible(self, name: str) -> Prompt | None:
        """The prompt ``name``, when the current principal may see it."""
        prompt = self.prompts.get(name)
        if prompt is None or missing_scopes(current_principal.get(), prompt.scopes):
            return None
        return prompt

    # -- the requests -------------------------------------------------------------------------

    async def list_prompts(self, request: Any, ctx: RequestContext) -> Any:
        params = request.params
        cursor = None if params is None or params is msgspec.UNSET else params.cursor
        principal = current_principal.get()
        visible = [p for p in self.prompts.values() if not missing_scopes(principal, p.scopes)]
        page, following = self.pager.page("prompts/list", visible, cursor)
        result: dict[str, Any] = {
            "prompts": [for_revision(p.definition, ctx.revision) for p in page]
        }
        if following is not None:
            result["nextCursor"] = following
        return result

    async def get(self, request: Any, ctx: RequestContext) -> Any:
        params = request.params
        # A prompt the principal may not get is one it cannot know of (over HTTP the
        # app refused it with 403 already).
        prompt = self.visible(params.name)
        if prompt is None:
            raise RequestError.invalid_params(f"unknown prompt {show(params.name)}")
        given = params.arguments
        values: dict[str, str] = {} if given in (None, msgspec.UNSET) else dict(given)
        signature = prompt.signature
        missing = sorted(signature.required - values.keys())
        if missing:
            raise RequestError.invalid_params(
                f"prompt {show(prompt.name)}: missing required argument {show(missing[0])}"
            )
        unknown = sorted(values.keys() - set(signature.names))
        if unknown:
            raise RequestError.invalid_params(
                f"prompt {show(prompt.name)}: no argument {show(unknown[0])}"
            )
        try:
            kwargs = signature.call_arguments(values, ctx)
        except msgspec.ValidationError as exc:
            raise RequestError.invalid_params(
                f"prompt {show(prompt.name)}: invalid argument: {exc}"
            ) from None
        value = await prompt.fn(**kwargs)
        try:
            result = _result_of(value, prompt.name, ctx.revision)
        except ContentUnsupported as exc:
            raise RequestError.of(
                ErrorCode.INTERNAL_ERROR,
                f"prompt {show(prompt.name)}: {exc}",
                data={"type": exc.type, "revision": exc.revision, "needs": exc.needs},
            ) from None
        description = prompt.definition.get("description")
        if description is not None:
            result.setdefault("description", description)
        return result


def _result_of(value: Any, name: str, revision: str) -> dict[str, Any]:
    """A prompt function's return value as a ``GetPromptResult`` of ``revision`` (wire
    form; :class:`ContentUnsupported` for a content type the revision lacks)."""
    wire = msgspec.to_builtins(value) if isinstance(value, msgspec.Struct) else value
    if isinstance(wire, Mapping) and "messages" in wire:
        return dict(wire)
    items = wire if isinstance(wire, (list, tuple)) else [wire]
    return {"messages": [_message(item, name, revision) for item in items]}


def _message(value: Any, name: str, revision: str) -> dict[str, Any]:
    if isinstance(value, str):
        return {"role": "user", "content": {"type": "text", "text": value}}
    if isinstance(value, Content):
        return {"role": "user", "content": value.wire(revision)}
    wire = msgspec.to_builtins(value) if isinstance(value, msgspec.Struct) else value
    if isinstance(wire, Mapping):
        if "role" in wire and "content" in wire:
            content = wire["content"]
            if isinstance(content, Content):
                return {**wire, "content": content.wire(revision)}
            return dict(wire)
        if "type" in wire:
            return {"role": "user", "content": dict(wire)}
    raise TypeError(
        f"prompt {name!r}: a function returns a string, a message, a content block or a "
        f"list of them, not {type(value).__name__}"
    )
