"""An mcpspec server of 2026-07-28 with task tools (the tasks extension), for the
checker's extension rules: ``--defect NAME`` makes it break one of them, by a filter on
the messages it reads and writes (:class:`~tests.check_servers.stdio_defects.Defect`),
so that it stays the same server in everything else.

Its tools, in the order listed: ``ask`` (elicits: its task waits ``input_required``),
``broken`` (raises a JSON-RPC error: its task ``failed``), ``slow`` (its task
``completed``) and ``must`` (runs only as a task: a plain call is -32021).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, ClassVar

import anyio

if __package__ in (None, ""):
    # Run as a script: make ``tests.check_servers`` importable.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcpspec.runtime.connection import (
    RequestContext,
    RequestError,
    Server,
    stdio_server_stream,
)
from mcpspec.runtime.connection.tasks import TaskSettings
from mcpspec.runtime.extensions import TASKS
from tests.check_servers.stdio_defects import Defect, FilteredStream, _encode, _key

__all__ = ["DEFECTS", "build"]

_META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"


def build() -> Server:
    server = Server("task-extension-server", tasks=TaskSettings(poll_interval_ms=20))

    @server.tool(task="optional")
    async def ask(ctx: RequestContext) -> str:
        answer = await ctx.elicit(
            message="Which colour?",
            requested_schema={"type": "object", "properties": {"colour": {"type": "string"}}},
        )
        return str(answer.action)

    @server.tool(task="optional")
    async def broken() -> str:
        raise RequestError.of(-32000, "the tool's backend is down")

    @server.tool(task="optional")
    async def slow(n: int) -> str:
        await anyio.sleep(0.1)
        return f"done {n}"

    @server.tool(task="required")
    async def must(text: str) -> str:
        return text

    return server


def _declares(params: Any) -> bool:
    meta = params.get("_meta") if isinstance(params, dict) else None
    capabilities = meta.get(_META_CAPABILITIES) if isinstance(meta, dict) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and TASKS in extensions


class _Rewrite(Defect):
    """Rewrites the results of one method (:attr:`method`), as :meth:`change` says."""

    method: ClassVar[str] = ""

    def change(self, result: dict[str, Any], params: Any) -> None:
        raise NotImplementedError

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        result = message.get("result") if isinstance(message, dict) else None
        if out.method_answered(message) == self.method and isinstance(result, dict):
            self.change(result, out.params.get(_key(message["id"])))
            data = _encode(message)
        await out.write(data)


class CreatedWithInputRequests(_Rewrite):
    """A ``CreateTaskResult`` carries ``inputRequests`` (an MRTR field)."""

    name = "created-with-input-requests"
    method = "tools/call"

    def change(self, result: dict[str, Any], params: Any) -> None:
        if result.get("resultType") == "task":
            result["inputRequests"] = {}


class CreatedUntagged(_Rewrite):
    """A ``CreateTaskResult`` tagged ``resultType: "complete"``."""

    name = "created-untagged"
    method = "tools/call"

    def change(self, result: dict[str, Any], params: Any) -> None:
        if result.get("resultType") == "task":
            result["resultType"] = "complete"


class GetTaggedTask(_Rewrite):
    """``tasks/get`` answers ``resultType: "task"``."""

    name = "get-tagged-task"
    method = "tasks/get"

    def change(self, result: dict[str, Any], params: Any) -> None:
        result["resultType"] = "task"


class _ReadWithout(_Rewrite):
    """A task of :attr:`status` is read with :attr:`member` left out (or emptied)."""

    method = "tasks/get"
    status: ClassVar[str] = ""
    member: ClassVar[str] = ""
    #: What the member becomes: gone (``None``), or this value.
    left: ClassVar[Any] = None

    def change(self, result: dict[str, Any], params: Any) -> None:
        if result.get("status") == self.status:
            if self.left is None:
                result.pop(self.member, None)
            else:
                result[self.member] = self.left


class CompletedWithoutResult(_ReadWithout):
    """A ``completed`` task is read without its ``result``."""

    name = "completed-without-result"
    status, member = "completed", "result"


class FailedWithoutError(_ReadWithout):
    """A ``failed`` task is read without its ``error``."""

    name = "failed-without-error"
    status, member = "failed", "error"


class InputRequiredEmpty(_ReadWithout):
    """An ``input_required`` task is read with no questions in ``inputRequests``."""

    name = "input-required-empty"
    status, member, left = "input_required", "inputRequests", {}


class Differs(_Rewrite):
    """A task completes with a tool error where the plain call answered a result."""

    name = "differs"
    method = "tasks/get"

    def change(self, result: dict[str, Any], params: Any) -> None:
        if result.get("status") == "completed" and isinstance(result.get("result"), dict):
            result["result"]["isError"] = True


class Backwards(_Rewrite):
    """A task read ``completed`` once is read ``working`` again."""

    name = "backwards"
    method = "tasks/get"

    def __init__(self) -> None:
        self.ended: set[str] = set()

    def change(self, result: dict[str, Any], params: Any) -> None:
        task_id = result.get("taskId")
        if result.get("status") == "completed" and isinstance(task_id, str):
            if task_id in self.ended:
                result["status"] = "working"
                result.pop("result", None)
            self.ended.add(task_id)


class CancelWithTask(_Rewrite):
    """``tasks/cancel`` answers the task (as 2025-11-25 did) instead of an empty ack."""

    name = "cancel-with-task"
    method = "tasks/cancel"

    def change(self, result: dict[str, Any], params: Any) -> None:
        task_id = params.get("taskId") if isinstance(params, dict) else None
        result.update(taskId=task_id, status="cancelled")


class _Declaring(Defect):
    """Makes the server read the requests of :attr:`methods` as if they declared the
    tasks extension."""

    methods: ClassVar[frozenset[str]] = frozenset()

    async def read(self, message: Any, data: bytes, out: FilteredStream) -> bytes | None:
        if not isinstance(message, dict) or message.get("method") not in self.methods:
            return data
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict) and not _declares(params):
            capabilities = dict(meta.get(_META_CAPABILITIES) or {})
            capabilities["extensions"] = {**capabilities.get("extensions", {}), TASKS: {}}
            meta[_META_CAPABILITIES] = capabilities
            return _encode(message)
        return data


class GetUndeclaredServed(_Declaring):
    """``tasks/get`` from a request that did not declare the extension is served."""

    name = "get-undeclared-served"
    methods = frozenset({"tasks/get"})


class MissingCapabilityWithoutData(Defect):
    """-32021 is answered without ``data.requiredCapabilities``."""

    name = "missing-capability-without-data"

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        error = message.get("error") if isinstance(message, dict) else None
        if isinstance(error, dict) and error.get("code") == -32021:
            error.pop("data", None)
            data = _encode(message)
        await out.write(data)


class Unsolicited(_Declaring):
    """The server declares no extension, yet answers plain ``tools/call`` with tasks."""

    name = "unsolicited"
    methods = frozenset({"tools/call", "tasks/get", "tasks/cancel"})

    async def write(self, message: Any, data: bytes, out: FilteredStream) -> None:
        result = message.get("result") if isinstance(message, dict) else None
        if out.method_answered(message) == "server/discover" and isinstance(result, dict):
            capabilities = result.get("capabilities")
            if isinstance(capabilities, dict):
                capabilities.pop("extensions", None)
                data = _encode(message)
        await out.write(data)


#: Every defect, by name.
DEFECTS: dict[str, type[Defect]] = {
    cls.name: cls
    for cls in (
        CreatedWithInputRequests,
        CreatedUntagged,
        GetTaggedTask,
        CompletedWithoutResult,
        FailedWithoutError,
        InputRequiredEmpty,
        Differs,
        Backwards,
        CancelWithTask,
        GetUndeclaredServed,
        MissingCapabilityWithoutData,
        Unsolicited,
    )
}


async def serve(defect: Defect) -> None:
    server = build()
    async with server.running(), stdio_server_stream() as stream:
        filtered = FilteredStream(stream, defect)
        await filtered.open()
        await server.serve(filtered, linger=1.0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--defect", choices=sorted(DEFECTS))
    args = parser.parse_args()
    anyio.run(serve, DEFECTS[args.defect]() if args.defect else Defect())
