"""An mcpspec server with task tools, for the checker's task rules: ``--defect``
makes it break one of them (``no-capability``: its tools declare taskSupport without
the capability; ``backwards``: a completed task reads ``working`` again; ``differs``: a
tool that answers a result plainly fails as a task)."""

from __future__ import annotations

import argparse
from typing import Any

import anyio
import msgspec

from mcpspec.runtime.connection import RequestContext, Server, ToolError
from mcpspec.runtime.connection.task_store import MemoryTaskStore, TaskRecord
from mcpspec.runtime.connection.tasks import TaskContext, TaskSettings


class Backwards(MemoryTaskStore):
    """A store that forgets that a task ended, once, after it was read ended."""

    def __init__(self) -> None:
        super().__init__()
        self._seen_ended: set[str] = set()

    async def get(self, task_id: str) -> TaskRecord | None:
        record = await super().get(task_id)
        if record is not None and record.terminal:
            if task_id in self._seen_ended:
                return msgspec.structs.replace(record, status="working")
            self._seen_ended.add(task_id)
        return record


def build(defect: str | None) -> Server:
    store = Backwards() if defect == "backwards" else MemoryTaskStore()
    options: dict[str, Any] = {"tasks": TaskSettings(store=store, poll_interval_ms=20)}
    if defect == "no-capability":
        options["capabilities"] = {"tools": {}}
    server = Server("task-server", **options)

    @server.tool(task="optional")
    async def slow(n: int, ctx: RequestContext) -> str:
        await anyio.sleep(0.1)
        if defect == "differs" and isinstance(ctx, TaskContext):
            raise ToolError("only as a task")
        return f"done {n}"

    @server.tool(task="required")
    async def must(text: str) -> str:
        return text

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--defect")
    build(parser.parse_args().defect).run()
