"""A nursery whose body's own exception comes out as itself, not wrapped in an ExceptionGroup."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio


@asynccontextmanager
async def background_nursery() -> AsyncIterator[trio.Nursery]:
    """Open a nursery for background tasks; when the body raises, the tasks are cancelled and
    the body's exception propagates unwrapped (what callers of an ``async with`` API expect)."""
    failure: list[Exception] = []
    async with trio.open_nursery() as nursery:
        try:
            yield nursery
        except Exception as exc:
            failure.append(exc)
        nursery.cancel_scope.cancel()
    if failure:
        raise failure[0]
