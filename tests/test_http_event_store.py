"""The in-memory event store is bounded in count, bytes and age, per session and in all:
200 answers of 256 KiB once held 52 MB for one session (only a count bounded it)."""

from __future__ import annotations

import pytest

from mcpspec.runtime.connection.http.event_store import MemoryEventStore

pytestmark = pytest.mark.anyio
ANYIO_BACKENDS = ("asyncio",)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def _ids(store: MemoryEventStore, session: str, stream: str, sizes: list[int]) -> list[str]:
    return [await store.append(session, stream, b"x" * size) for size in sizes]


async def test_a_session_keeps_at_most_per_session_bytes_newest_first() -> None:
    store = MemoryEventStore(per_session_bytes=1000)
    ids = await _ids(store, "s", "a", [400, 400, 400])
    assert store.held_bytes == 800  # the oldest went
    assert await store.replay("s", ids[0]) is None  # no longer known: it was dropped
    replayed = await store.replay("s", ids[1])
    assert replayed is not None and [e.event_id for e in replayed] == [ids[2]]


async def test_an_event_larger_than_the_session_bound_is_not_kept() -> None:
    store = MemoryEventStore(per_session_bytes=100)
    first = await store.append("s", "a", b"x" * 50)
    await store.append("s", "a", b"x" * 500)
    assert store.held_bytes == 0 and await store.replay("s", first) is None
    # Ids stay unique after the session's events all went.
    assert await store.append("s", "a", b"y") == "a.3"


async def test_all_sessions_keep_at_most_total_bytes_the_least_active_losing_first() -> None:
    store = MemoryEventStore(total_bytes=1000)
    quiet = await _ids(store, "quiet", "a", [300, 300])
    busy = await _ids(store, "busy", "b", [300])
    assert store.held_bytes == 900
    await store.append("busy", "b", b"x" * 300)  # over: the quiet session loses its oldest
    assert store.held_bytes == 900
    assert await store.replay("quiet", quiet[0]) is None
    assert await store.replay("quiet", quiet[1]) == []
    replayed = await store.replay("busy", busy[0])
    assert replayed is not None and len(replayed) == 1


async def test_events_older_than_max_age_are_dropped() -> None:
    clock = Clock()
    store = MemoryEventStore(max_age_seconds=60, clock=clock)
    old = await store.append("s", "a", b"old")
    clock.now = 30
    middle = await store.append("s", "a", b"middle")
    clock.now = 61
    assert await store.replay("s", old) is None  # expired at replay
    replayed = await store.replay("s", middle)
    assert replayed == []
    assert store.held_bytes == len(b"middle")
    clock.now = 200
    await store.append("s", "a", b"new")
    assert store.held_bytes == len(b"new")


async def test_the_count_bound_still_holds_and_forget_frees_the_bytes() -> None:
    store = MemoryEventStore(per_session=2)
    ids = await _ids(store, "s", "a", [10, 10, 10])
    assert await store.replay("s", ids[0]) is None
    assert store.held_bytes == 20
    await store.forget("s")
    assert store.held_bytes == 0 and await store.replay("s", ids[2]) is None


async def test_two_hundred_large_answers_hold_at_most_the_session_bound() -> None:
    """The fault as found: 200 answers of 256 KiB held 52 MB for one session."""
    store = MemoryEventStore()
    for _ in range(200):
        await store.append("s", "a", b"x" * (256 * 1024))
    assert store.held_bytes <= store.per_session_bytes == 4 * 1024 * 1024


@pytest.mark.parametrize(
    "settings",
    [{"per_session": 0}, {"per_session_bytes": 0}, {"total_bytes": 0}, {"max_age_seconds": 0}],
)
def test_bounds_must_be_positive(settings: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        MemoryEventStore(**settings)
