"""Per-host manners: how many requests at once and how far apart.

One `HostLimiter` per crawl; a worker holds a host's slot for the whole exchange.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .config import Config
from .urls import site_of


class _HostState:
    __slots__ = ("next_start", "pause_until", "slots")

    def __init__(self, concurrency: int) -> None:
        self.slots = asyncio.Semaphore(concurrency)
        self.next_start = 0.0
        self.pause_until = 0.0


class HostLimiter:
    """At most `per_host_concurrency` requests per host, starting at least `delay` seconds apart."""

    def __init__(self, config: Config) -> None:
        self.concurrency = config.per_host_concurrency
        self.delay = config.delay
        self._hosts: dict[str, _HostState] = {}

    def _state(self, url: str) -> _HostState:
        site = site_of(url)
        state = self._hosts.get(site)
        if state is None:
            state = self._hosts[site] = _HostState(self.concurrency)
        return state

    def pause(self, url: str, seconds: float) -> None:
        """Hold every request to this host for `seconds` (Retry-After, robots.txt 5xx)."""
        state = self._state(url)
        state.pause_until = max(state.pause_until, time.monotonic() + seconds)

    @asynccontextmanager
    async def slot(self, url: str, delay: float | None = None) -> AsyncIterator[None]:
        state = self._state(url)
        async with state.slots:
            gap = self.delay if delay is None else delay
            while True:
                now = time.monotonic()
                start = max(now, state.next_start, state.pause_until)
                if start <= now:
                    break
                await asyncio.sleep(start - now)
            state.next_start = time.monotonic() + gap
            yield
