"""The JSON Schema work of ``mcpspec check`` is bounded: schemas and values come from the
server, and a pattern that backtracks, a schema too big to check in time or nested
``minItems`` that multiply give :class:`GaveUp`, never a hang."""

from __future__ import annotations

import signal
import threading
from typing import Any

import pytest

from mcpspec.check import json_schema
from mcpspec.check.json_schema import GaveUp, check_schema, example_of, validate

#: A pattern that backtracks exponentially on a run of ``a`` ended by another letter.
BACKTRACKING = {"type": "string", "pattern": "^(a+)+$"}


@pytest.fixture
def short_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_schema, "MAX_SECONDS", 0.2)


def nested_arrays(levels: int, items: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "minLength": 8}
    for _ in range(levels):
        schema = {"type": "array", "minItems": items, "items": schema}
    return schema


@pytest.mark.usefixtures("short_limit")
def test_a_backtracking_pattern_is_given_up() -> None:
    assert validate("a" * 8, BACKTRACKING) is None  # short: it still matches in time
    with pytest.raises(GaveUp, match=r"validating against the schema took over 0\.2 s"):
        validate("a" * 64 + "b", BACKTRACKING)


@pytest.mark.usefixtures("short_limit")
def test_uniqueness_of_a_long_array_of_objects_is_given_up() -> None:
    # Objects cannot be sorted or hashed: every pair is compared.
    items = [{"n": n} for n in range(100_000)]
    with pytest.raises(GaveUp):
        validate(items, {"type": "array", "uniqueItems": True})


def test_a_schema_too_big_to_check_in_time_is_given_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    big = {"type": "object", "properties": {f"p{n}": {"type": "string"} for n in range(1_000)}}
    assert check_schema(big) is None
    monkeypatch.setattr(json_schema, "MAX_SECONDS", 0.01)
    with pytest.raises(GaveUp, match=r"checking the schema took over 0\.01 s"):
        check_schema(big)


@pytest.mark.usefixtures("short_limit")
def test_the_time_limit_leaves_the_alarm_as_it_found_it() -> None:
    def mine(signum: int, frame: Any) -> None:
        raise AssertionError("the caller's handler must not run")

    previous = signal.signal(signal.SIGALRM, mine)
    try:
        assert check_schema({"type": "object"}) is None
        with pytest.raises(GaveUp):
            validate("a" * 64 + "b", BACKTRACKING)
        assert signal.getsignal(signal.SIGALRM) is mine
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_off_the_main_thread_the_work_runs_unbounded(short_limit: None) -> None:
    outcome: list[object] = []

    def work() -> None:
        outcome.append(validate(["x", "x"], {"type": "array", "uniqueItems": True}))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    [(path, why)] = outcome  # type: ignore[misc]
    assert path == ""
    assert "non-unique" in why


def test_example_of_builds_nested_arrays_within_its_budget() -> None:
    value = example_of(nested_arrays(levels=3, items=4))
    assert len(value) == 4 and len(value[0]) == 4 and value[0][0] == ["x" * 8] * 4


def test_example_of_gives_up_on_nested_arrays_that_multiply() -> None:
    # 16**8 strings from a schema of a few hundred bytes
    with pytest.raises(GaveUp, match="over 10000 values"):
        example_of({"type": "object", "required": ["x"], "properties": {"x": nested_arrays(8, 16)}})


def test_example_of_gives_up_on_strings_longer_than_its_budget() -> None:
    def members(count: int) -> dict[str, Any]:
        names = [f"m{n}" for n in range(count)]
        long = {"type": "string", "minLength": 1024}
        return {"type": "object", "required": names, "properties": dict.fromkeys(names, long)}

    assert len(example_of(members(200))) == 200  # 200 KiB: within the budget
    with pytest.raises(GaveUp, match="262144 characters"):
        example_of(members(300))
