"""How a handler runs (runtime/connection/handling.py): inside a cancel scope of its
own, cancelled by that scope alone, the same on asyncio and trio."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from mcpspec.runtime.connection.handling import CANCELLED, Handling

pytestmark = pytest.mark.anyio


async def _run_cancelled(handler: Callable[[anyio.Event], Awaitable[Any]]) -> Any:
    """Run ``handler(started)`` under a Handling that another task cancels once
    ``started`` is set; its outcome."""
    handling = Handling()
    started = anyio.Event()

    async def cancel_once_started() -> None:
        await started.wait()
        handling.cancel()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(cancel_once_started)
            return await handling.run(handler(started))


async def test_a_handler_that_answers_gives_its_result() -> None:
    handling = Handling()

    async def handler() -> str:
        await anyio.sleep(0)
        return "answered"

    assert await handling.run(handler()) == "answered"
    assert not handling.cancel_called


async def test_a_waiting_handler_is_cancelled() -> None:
    reached: list[str] = []

    async def handler(started: anyio.Event) -> str:
        started.set()
        await anyio.sleep(30)
        reached.append("after")
        return "answered"

    assert await _run_cancelled(handler) is CANCELLED
    assert reached == []


async def test_a_handler_that_catches_the_cancellation_and_waits_again_is_cancelled_again() -> None:
    caught: list[str] = []

    async def handler(started: anyio.Event) -> str:
        started.set()
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            caught.append("ignored")
        await anyio.sleep(30)  # the scope is still cancelled: so is this wait
        caught.append("after")
        return "answered"

    assert await _run_cancelled(handler) is CANCELLED
    assert caught == ["ignored"]


async def test_a_handler_waiting_in_its_task_group_is_cancelled_with_its_children() -> None:
    children: list[str] = []

    async def child() -> None:
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            children.append("cancelled")
            raise

    async def handler(started: anyio.Event) -> str:
        async with anyio.create_task_group() as group:
            group.start_soon(child)
            await anyio.sleep(0)
            started.set()
            await anyio.sleep(30)
        return "answered"

    assert await _run_cancelled(handler) is CANCELLED
    assert children == ["cancelled"]


async def test_a_handler_keeps_its_own_timeouts() -> None:
    handling = Handling()

    async def handler() -> str:
        with anyio.move_on_after(0.01) as bounded:
            await anyio.sleep(30)
        await anyio.sleep(0)
        return f"bounded {bounded.cancelled_caught}"

    assert await handling.run(handler()) == "bounded True"
    assert not handling.cancel_called


async def test_a_handler_cancelling_itself_is_cancelled_at_its_next_wait() -> None:
    handling = Handling()
    reached: list[str] = []

    async def handler() -> str:
        await anyio.sleep(0)
        handling.cancel()
        reached.append("ran on")  # no wait yet: it runs on
        await anyio.sleep(30)
        reached.append("after")
        return "answered"

    with anyio.fail_after(10):
        assert await handling.run(handler()) is CANCELLED
    assert reached == ["ran on"]


async def test_cancelled_before_it_runs() -> None:
    # A handler that never waits answers (nothing could deliver the cancellation); one
    # that waits is cancelled at its first wait, as anyio cancels at a first checkpoint.
    quick, slow = Handling(), Handling()
    quick.cancel()
    slow.cancel()

    async def answers() -> str:
        return "answered"

    async def waits() -> str:
        await anyio.sleep(30)
        return "answered"

    assert await quick.run(answers()) == "answered"
    with anyio.fail_after(10):
        assert await slow.run(waits()) is CANCELLED
    assert slow.scope.cancel_called


async def test_a_cancellation_of_the_enclosing_scope_is_not_swallowed() -> None:
    handling = Handling()
    outcomes: list[Any] = []

    async def handler() -> str:
        await anyio.sleep(30)
        return "answered"

    with anyio.fail_after(10):
        with anyio.CancelScope() as outer:
            outer.cancel()
            handling.cancel()  # ours and the enclosing one's, at once
            outcomes.append(await handling.run(handler()))
    assert outcomes == []  # the enclosing scope's cancellation went through
    assert outer.cancelled_caught


async def test_a_handler_that_swallows_the_cancellation_answers() -> None:
    async def handler(started: anyio.Event) -> str:
        try:
            started.set()
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            return "swallowed"
        return "answered"

    assert await _run_cancelled(handler) == "swallowed"


@pytest.mark.parametrize("waits", [False, True])
async def test_a_handler_error_comes_out(waits: bool) -> None:
    handling = Handling()

    async def handler() -> str:
        if waits:
            await anyio.sleep(0)
        raise LookupError("the handler failed")

    with pytest.raises(LookupError, match="the handler failed"):
        await handling.run(handler())


async def test_the_scope_reports_the_cancellation() -> None:
    handling = Handling()
    handling.cancel()
    assert handling.cancel_called
    assert handling.scope.cancel_called
    other = Handling()
    other.scope.cancel()  # the handler's ctx.cancel_scope cancelled directly
    assert other.cancel_called
