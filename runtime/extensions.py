"""Protocol extensions the runtime knows: which revision each is defined for, the
generated module of its messages, and the core requests it lets a peer answer
differently.

An extension is opt-in: its module is imported only for a session that declared it,
and a session that did speaks the extension's methods on top of its revision's
(:func:`extended_codec`). Whether the peer declared it too is the application's rule
(per request in 2026-07-28: ``_meta["io.modelcontextprotocol/clientCapabilities"]``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final, Union

from .codec import Codec

__all__ = ["KNOWN", "TASKS", "Extension", "extended_codec", "known_extensions"]

#: The tasks extension (SEP-2663).
TASKS: Final = "io.modelcontextprotocol/tasks"


@dataclass(frozen=True)
class Extension:
    """One extension: its identifier, the revisions it is defined for, its generated
    module, and the core requests whose result it may replace with ``CreateTaskResult``
    (or the like: the extension module's result named in ``augmented_result``)."""

    name: str
    revisions: frozenset[str]
    module_name: str
    augmented: tuple[str, ...] = ()
    augmented_result: str | None = None

    @property
    def module(self) -> ModuleType:
        """The generated module of the extension's messages (imported on first use)."""
        return importlib.import_module(self.module_name)


#: The extensions the runtime speaks, by identifier.
KNOWN: Final = {
    TASKS: Extension(
        TASKS, frozenset({"2026-07-28"}), "mcpspec.ext_tasks", ("tools/call",), "CreateTaskResult"
    ),
}


def known_extensions(names: Iterable[str]) -> frozenset[str]:
    """``names``, checked: ``ValueError`` names one the runtime does not speak."""
    out = frozenset(names)
    unknown = sorted(out - KNOWN.keys())
    if unknown:
        raise ValueError(f"unknown extensions {unknown} (known: {sorted(KNOWN)})")
    return out


@functools.cache
def extended_codec(codec: Codec, names: frozenset[str]) -> Codec:
    """``codec`` with the messages of the extensions ``names`` defined for its
    revision: their requests (the client's), notifications (the server's), input
    requests and results, and the augmented requests' results widened to the
    extension's (``tools/call``: ``CreateTaskResult`` beside the core's). ``codec``
    itself where none applies."""
    applying = [KNOWN[n] for n in sorted(names) if codec.revision in KNOWN[n].revisions]
    if not applying:
        return codec
    client_requests = dict(codec.client_requests)
    server_notifications = dict(codec.server_notifications)
    results: dict[str, Any] = dict(codec.results)
    for extension in applying:
        module = extension.module
        client_requests.update(module.REQUESTS)
        server_notifications.update(module.NOTIFICATIONS)
        results.update(module.RESULTS)
        if extension.augmented_result is not None:
            extra = getattr(module, extension.augmented_result)
            for method in extension.augmented:
                results[method] = Union[results[method], extra]  # noqa: UP007 (built at run time)
    return Codec(
        codec.revision,
        client_requests=client_requests,
        server_requests=codec.server_requests,
        client_notifications=codec.client_notifications,
        server_notifications=server_notifications,
        input_requests=codec.input_requests,
        results=results,
        task_results=codec.task_results,
        complete_results=codec.complete_results,
        owned_unions=codec.owned_unions,
        batches=codec.batches,
        error_id_required=codec.error_id_required,
        protocol_model=codec.protocol_model,
    )
