"""Fetching turns: at most `max_tasks` workers fetch at once, and a page's processing is not one of them.

A worker takes a turn before it asks the frontier for a URL and gives it back as soon as the
response is in, before the page is parsed, archived and its links queued.  Another worker
takes the turn and starts the next request meanwhile, so the requests in flight stay at
`max_tasks` while pages are processed beside them (the crawler keeps twice as many workers as
turns).  The limit may change while the crawl runs (`archiver control tasks`).
"""

from __future__ import annotations

import asyncio
import collections


class Turns:
    """A semaphore whose limit may be lowered or raised while turns are held."""

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 1)
        self.held = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def take(self) -> None:
        """Wait for a free turn and hold it; first come, first served."""
        if self.held < self.limit and not self._waiters:
            self.held += 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        try:
            await future  # the turn is counted as held by whoever woke us
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.give_back()  # handed a turn just as this task was cancelled
            elif future in self._waiters:
                self._waiters.remove(future)
            raise

    def give_back(self) -> None:
        self.held -= 1
        self._wake()

    def set_limit(self, limit: int) -> None:
        """Turns held beyond a lowered limit end as their fetches end."""
        self.limit = max(limit, 1)
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.held < self.limit:
            future = self._waiters.popleft()
            if not future.done():
                self.held += 1
                future.set_result(None)


class Turn:
    """One worker's turn, given back once however many places end it."""

    __slots__ = ("_turns",)

    def __init__(self, turns: Turns) -> None:
        self._turns: Turns | None = turns

    @property
    def ended(self) -> bool:
        return self._turns is None

    def end(self) -> None:
        if self._turns is not None:
            self._turns.give_back()
            self._turns = None
