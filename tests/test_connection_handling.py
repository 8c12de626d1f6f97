"""How a handler runs (runtime/connection/handling.py): eagerly on asyncio, its cancel
scope entered only once it waits; cancelled the same way whichever way it ran."""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

import anyio
import pytest

from mcpspec.runtime.connection import handling as handling_module
from mcpspec.runtime.connection.handling import CANCELLED, WAITING, Handling, eager

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ways the handlers of a test ran once they waited, in order."""
    taken: list[str] = []
    for name, label in (("_in_scope", "in-its-scope"), ("_natively", "natively")):
        original = getattr(handling_module, name)

        def spy(*args: Any, _original: Any = original, _label: str = label) -> Any:
            taken.append(_label)
            return _original(*args)

        monkeypatch.setattr(handling_module, name, spy)
    return taken


def _handling() -> Handling:
    return Handling(asyncio.get_running_loop())


async def _cancel_soon(handling: Handling, started: anyio.Event) -> None:
    await started.wait()
    await anyio.sleep(0.01)
    handling.cancel()


def test_eager_on_this_asyncio() -> None:
    # The fast path is taken with the installed anyio (else handlers pay for the scope
    # again, silently).
    assert eager()


async def test_a_handler_that_never_waits_makes_no_scope() -> None:
    handling = _handling()

    async def handler() -> str:
        return "answered"

    assert await handling.run(handler()) == "answered"
    assert handling._scope is None
    assert not handling.cancel_called


@pytest.mark.parametrize("own_scope", [False, True])
async def test_on_wait_is_called_once_when_the_handler_first_waits(own_scope: bool) -> None:
    calls: list[str] = []
    quick = _handling()
    quick.on_wait = lambda: calls.append("quick")

    async def answers_at_once() -> str:
        return "answered"

    assert await quick.run(answers_at_once()) == "answered"
    assert calls == []  # it never waited

    waiting = _handling()
    waiting.on_wait = lambda: calls.append("waiting")

    async def waits_twice() -> str:
        calls.append("first step")
        if own_scope:
            with anyio.move_on_after(30):
                await anyio.sleep(0)
        else:
            await anyio.sleep(0)
        await anyio.sleep(0)
        return "answered"

    assert await waiting.run(waits_twice()) == "answered"
    assert calls == ["first step", "waiting"]


async def test_on_wait_is_called_before_the_start_where_waits_cannot_be_seen() -> None:
    # Off the eager path (another event loop: no loop given) a first wait goes unseen:
    # the handler is taken to wait from the start, so what waiting needs is there.
    calls: list[str] = []
    handling = Handling(None)
    handling.on_wait = lambda: calls.append("on_wait")

    async def answers_at_once() -> str:
        calls.append("first step")
        return "answered"

    assert await handling.run(answers_at_once()) == "answered"
    assert calls == ["on_wait", "first step"]
    assert handling.on_wait is None


async def test_start_runs_the_first_step_and_finish_the_rest() -> None:
    calls: list[str] = []
    quick = _handling()

    async def answers_at_once() -> str:
        return "answered"

    assert quick.start(answers_at_once()) == "answered"

    waiting = _handling()
    waiting.on_wait = lambda: calls.append("on_wait")

    async def waits() -> str:
        calls.append("first step")
        await anyio.sleep(0)
        calls.append("rest")
        return "answered"

    handler = waits()
    assert waiting.start(handler) is WAITING
    assert calls == ["first step"]  # on_wait comes with finish
    rest = waiting.finish()
    assert calls == ["first step", "on_wait"]
    # Only what finish returned holds the handler now (its frame may refer back).
    held = weakref.ref(handler)
    del handler
    assert held() is not None
    assert await rest == "answered"
    del rest
    assert held() is None
    assert calls == ["first step", "on_wait", "rest"]


async def test_start_runs_nothing_where_waits_cannot_be_seen() -> None:
    calls: list[str] = []
    handling = Handling(None)

    async def answers_at_once() -> str:
        calls.append("first step")
        return "answered"

    assert handling.start(answers_at_once()) is WAITING
    assert calls == []
    assert await handling.finish() == "answered"
    assert calls == ["first step"]


@pytest.mark.parametrize("when", ["first-step", "waited"])
async def test_start_and_finish_raise_what_the_handler_raised(when: str) -> None:
    handling = _handling()

    async def handler() -> str:
        if when == "waited":
            await anyio.sleep(0)
        raise LookupError("the handler failed")

    with pytest.raises(LookupError, match="the handler failed"):
        if handling.start(handler()) is WAITING:
            assert when == "waited"
            await handling.finish()


async def _wait_long(started: anyio.Event, own_scope: bool) -> None:
    """Say so, then wait 30 s: in a cancel scope of the handler's own (entered before
    its first wait: ours can no longer enclose it), or in none."""
    if own_scope:
        with anyio.move_on_after(30):
            started.set()
            await anyio.sleep(30)
    else:
        started.set()
        await anyio.sleep(30)


async def _run_cancelled(handler_body: Any) -> tuple[Any, asyncio.Task[Any]]:
    """Run ``handler_body(started)`` under a Handling that another task cancels once
    ``started`` is set; the outcome and the task it ran in."""
    handling = _handling()
    started = anyio.Event()
    task = asyncio.current_task()
    assert task is not None
    async with anyio.create_task_group() as group:
        group.start_soon(_cancel_soon, handling, started)
        outcome = await handling.run(handler_body(started))
    return outcome, task


@pytest.mark.parametrize("own_scope", [False, True], ids=["in-its-scope", "natively"])
async def test_a_waiting_handler_is_cancelled(own_scope: bool, paths: list[str]) -> None:
    reached: list[str] = []

    async def handler(started: anyio.Event) -> str:
        await _wait_long(started, own_scope)
        reached.append("after")
        return "answered"

    outcome, task = await _run_cancelled(handler)
    assert outcome is CANCELLED
    assert reached == []
    assert paths == ["natively" if own_scope else "in-its-scope"]
    # Nothing of the cancellation is left on the task: it goes on waiting normally.
    assert task.cancelling() == 0
    await anyio.sleep(0.001)


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
            started.set()
            await anyio.sleep(30)
        return "answered"

    outcome, task = await _run_cancelled(handler)
    assert outcome is CANCELLED
    assert children == ["cancelled"]
    assert task.cancelling() == 0


@pytest.mark.parametrize("own_scope", [False, True], ids=["in-its-scope", "natively"])
async def test_a_handler_that_waits_keeps_its_own_timeouts(
    own_scope: bool, paths: list[str]
) -> None:
    handling = _handling()

    async def handler() -> str:
        if not own_scope:
            await anyio.sleep(0)  # its first wait, outside any scope of its own
        with anyio.move_on_after(0.01) as bounded:
            await anyio.sleep(30)
        await anyio.sleep(0)
        return f"bounded {bounded.cancelled_caught}"

    assert await handling.run(handler()) == "bounded True"
    assert not handling.cancel_called
    assert paths == ["natively" if own_scope else "in-its-scope"]


@pytest.mark.parametrize("own_scope", [False, True], ids=["in-its-scope", "natively"])
async def test_a_handler_cancelling_itself_is_cancelled_at_its_next_wait(
    own_scope: bool, paths: list[str]
) -> None:
    handling = _handling()
    reached: list[str] = []

    async def handler() -> str:
        if own_scope:
            with anyio.move_on_after(30):
                await anyio.sleep(0)
                handling.cancel()
                reached.append("ran on")  # no wait yet: it runs on
                await anyio.sleep(30)
        else:
            await anyio.sleep(0)
            handling.cancel()
            reached.append("ran on")
            await anyio.sleep(30)
        reached.append("after")
        return "answered"

    assert await handling.run(handler()) is CANCELLED
    assert reached == ["ran on"]
    assert paths == ["natively" if own_scope else "in-its-scope"]
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_cancelled_before_it_runs() -> None:
    # A handler that never waits answers (nothing could deliver the cancellation); one
    # that waits is cancelled at its first wait, as anyio cancels at a first checkpoint.
    quick, slow = _handling(), _handling()
    quick.cancel()
    slow.cancel()

    async def answers() -> str:
        return "answered"

    async def waits() -> str:
        await anyio.sleep(30)
        return "answered"

    assert await quick.run(answers()) == "answered"
    assert await slow.run(waits()) is CANCELLED
    assert slow.scope.cancel_called


@pytest.mark.parametrize("own_scope", [False, True], ids=["in-its-scope", "natively"])
async def test_a_cancellation_of_the_task_itself_is_not_swallowed(
    own_scope: bool, paths: list[str]
) -> None:
    handling = _handling()
    started = anyio.Event()

    async def handler() -> str:
        await _wait_long(started, own_scope)
        return "answered"

    runner = asyncio.ensure_future(handling.run(handler()))
    await started.wait()
    handling.cancel()  # ours and the task's own, at once
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner
    assert runner.cancelled()
    assert paths == ["natively" if own_scope else "in-its-scope"]


@pytest.mark.parametrize("own_scope", [False, True], ids=["in-its-scope", "natively"])
async def test_a_handler_that_swallows_the_cancellation_answers(
    own_scope: bool, paths: list[str]
) -> None:
    async def handler(started: anyio.Event) -> str:
        try:
            if own_scope:
                with anyio.CancelScope():
                    started.set()
                    await anyio.sleep(30)
            else:
                started.set()
                await anyio.sleep(30)
        except asyncio.CancelledError:
            return "swallowed"
        return "answered"

    outcome, task = await _run_cancelled(handler)
    assert outcome == "swallowed"
    assert task.cancelling() == 0
    assert paths == ["natively" if own_scope else "in-its-scope"]


@pytest.mark.parametrize("when", ["first-step", "waited"])
async def test_a_handler_error_comes_out(when: str) -> None:
    handling = _handling()

    async def handler() -> str:
        if when == "waited":
            with anyio.move_on_after(30):
                await anyio.sleep(0)
        raise LookupError("the handler failed")

    with pytest.raises(LookupError, match="the handler failed"):
        await handling.run(handler())


async def test_the_scope_asked_for_reports_the_cancellation() -> None:
    handling = _handling()
    handling.cancel()
    assert handling.cancel_called
    assert handling.scope.cancel_called  # made after the cancellation: made cancelled
    other = _handling()
    other.scope.cancel()  # the handler's ctx.cancel_scope cancelled directly
    assert other.cancel_called
