"""Calls to Redis, bounded: what the Redis-backed parts of a cluster share.

A call that Redis does not answer in time, or that fails, is
:class:`~.session_store.StoreUnavailable`: the caller answers 503 (or the request's
JSON-RPC error), never hangs. redis-py is imported only when a Redis part is made.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from .session_store import StoreUnavailable

__all__ = ["bounded_call", "redis_module", "unbounded"]

T = TypeVar("T")


def redis_module() -> Any:
    """``redis.asyncio`` (the ``redis`` extra)."""
    try:
        import redis.asyncio
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise ImportError('sessions in Redis need redis-py: pip install "mcpspec[redis]"') from exc
    return redis.asyncio


def _failures() -> tuple[type[BaseException], ...]:
    import redis.exceptions

    return (redis.exceptions.RedisError, OSError, TimeoutError)


async def bounded_call(timeout: float, call: Callable[[], Awaitable[T]]) -> T:
    """``call()`` within ``timeout`` seconds; :class:`StoreUnavailable` when Redis
    does not answer in time or fails."""
    try:
        with anyio.fail_after(timeout):
            return await call()
    except _failures() as exc:
        raise StoreUnavailable(f"Redis did not answer: {exc!r}") from exc


async def unbounded(call: Awaitable[T]) -> T:
    """``call`` (that may wait for as long as it likes); :class:`StoreUnavailable`
    when Redis fails."""
    try:
        return await call
    except _failures() as exc:
        raise StoreUnavailable(f"Redis failed: {exc!r}") from exc
