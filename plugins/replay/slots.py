"""A bound on how many costly requests (text diffs) the server works on at once.

Each diff holds up to two parsed page prefixes and a matcher in memory and may use a
couple of seconds of CPU: a few run at once, a few more wait, the rest are told to come
back (503 with ``Retry-After``) rather than queue without end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from aiohttp import web

T = TypeVar("T")

RETRY_AFTER_SECONDS = 5


class Slots:
    def __init__(self, at_once: int, waiting: int) -> None:
        self.at_once = at_once
        self.max_waiting = waiting
        self.waiting = 0
        self.running = 0
        self._free = asyncio.Semaphore(at_once)

    async def run(self, work: Callable[[], T]) -> T:
        """`work()` in a thread once a slot is free.  The slot is held until the thread
        ends, even when the request is cancelled meanwhile: a thread cannot be stopped, so
        letting the next one start would not bound anything."""
        if self.waiting >= self.max_waiting:
            raise web.HTTPServiceUnavailable(
                reason="Busy",
                text=f"{self.at_once + self.waiting} diffs running or waiting: try again in a few seconds",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        self.waiting += 1
        try:
            await self._free.acquire()
        finally:
            self.waiting -= 1
        self.running += 1
        task = asyncio.ensure_future(asyncio.to_thread(work))
        task.add_done_callback(self._release)
        return await asyncio.shield(task)

    def _release(self, _task: asyncio.Future[T]) -> None:
        self.running -= 1
        self._free.release()
