"""The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663) of 2026-07-28: who
may use it on a request.

In 2026-07-28 tasks left the core: a server that runs tools as tasks declares the
extension under ``capabilities.extensions``, and a client declares it per request, in
``_meta["io.modelcontextprotocol/clientCapabilities"].extensions``. Only then does a
``tools/call`` of a task tool answer ``CreateTaskResult`` (the server decides, the
tool's ``task=`` registration says it may), and only then are ``tasks/get``,
``tasks/update`` and ``tasks/cancel`` answered: a client that did not declare it gets
-32021 (a task-required tool called by it too). There is no ``tasks/list`` nor
``tasks/result``: ``tasks/get`` inlines the result, the error, or the questions the
task waits on, which ``tasks/update`` answers.
"""

from __future__ import annotations

from msgspec import UNSET

from mcpspec.runtime.errors import ErrorCode
from mcpspec.runtime.extensions import TASKS

from .context import RequestContext
from .errors import RequestError

__all__ = ["declares_tasks", "extension_era", "missing_tasks_capability"]

#: The revisions whose core has tasks (the extension's methods do not apply there).
_CORE_TASK_REVISIONS = frozenset({"2025-11-25"})


def declares_tasks(ctx: RequestContext) -> bool:
    """Whether the request of ``ctx`` declared the tasks extension in its client
    capabilities."""
    capabilities = ctx.client_capabilities
    extensions = UNSET if capabilities is None else getattr(capabilities, "extensions", UNSET)
    return isinstance(extensions, dict) and TASKS in extensions


def missing_tasks_capability(reason: str) -> RequestError:
    """-32021: the request needs the tasks extension its client did not declare."""
    return RequestError.of(
        ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: {reason}",
        data={"requiredCapabilities": {"extensions": {TASKS: {}}}},
    )


def extension_era(ctx: RequestContext) -> bool:
    """Whether a ``tasks/*`` request of ``ctx`` is the extension's (not 2025-11-25's);
    -32021 for one whose client did not declare the extension."""
    if ctx.revision in _CORE_TASK_REVISIONS:
        return False
    if not declares_tasks(ctx):
        raise missing_tasks_capability(f"{ctx.method} needs the {TASKS} extension")
    return True
