"""The frontier: the set of URLs ever seen and the queue of those still to fetch.

Every frontier (in memory, SQLite in the archive, Redis shared by many processes)
speaks the small `Frontier` protocol, so the crawler does not care which one it has.
Termination is the frontier's job: `get()` returns None only when nothing is queued
and nothing is in flight anywhere, which is the one condition that ends a crawl.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .model import Counts, LinkKind

if TYPE_CHECKING:
    from .config import Config

__all__ = ["Counts", "Frontier", "Item", "MemoryFrontier", "Recovered"]


@dataclass(frozen=True, slots=True)
class Item:
    """One URL waiting in the frontier, with what the crawler needs to handle it."""

    url: str
    depth: int = 0
    redirects_left: int = 10
    referrer: str | None = None
    kind: LinkKind = LinkKind.PAGE


@dataclass(frozen=True, slots=True)
class Recovered:
    """A URL that was in flight when the previous run stopped, and when it was taken."""

    key: str
    item: Item
    taken_at: float


class Frontier(Protocol):
    """What the crawler needs from a frontier; `key` is the canonical form of `item.url`.

    A frontier that keeps nothing from one run to the next may subclass this protocol for
    the three members resume needs (`recovered`, `mark_done`, `requeue`): they do nothing.
    """

    @property
    def recovered(self) -> Sequence[Recovered]:
        """After `open`: the URLs a persistent frontier found in flight (the last run stopped
        mid-fetch), queued again; resume looks for their responses in the archive."""
        return ()

    async def open(self) -> None:
        """Acquire resources; a persistent frontier puts in-flight items back in the queue."""

    async def close(self) -> None:
        """Save and release resources; must be safe to call after a failed `open`."""

    async def add(self, entries: Sequence[tuple[str, Item]]) -> list[bool]:
        """Queue each item whose key was never seen; True where it was new."""

    async def get(self) -> Item | None:
        """The next item (now in flight), waiting while others are in flight; None when all is done."""

    async def done(self, item: Item, *, failed: bool = False) -> None:
        """`item` is finished: its outcome is recorded and it is no longer in flight."""

    async def counts(self) -> Counts:
        """Current totals, for progress and status; also before `open` and after `close`
        (the last totals known), since the progress display outlives the crawl on both ends."""

    async def mark_done(self, keys: Iterable[str]) -> int:
        """Mark queued URLs done without fetching them (resume found them archived); how many."""
        return 0

    async def requeue(self, keys: Iterable[str]) -> int:
        """Put failed URLs back in the queue, for the next run to try again; how many."""
        return 0

    async def drop(self, refusal: Callable[[Item], str | None]) -> list[tuple[Item, str]]:
        """Remove from the queue the items `refusal` gives a reason for (a rule added while the
        crawl runs); the items removed, with their reasons.  Items in flight are left alone."""
        return []

    async def share(self, command: dict[str, Any], config: Config) -> None:
        """Pass a live-control command (`archiver control`) to the other processes of a shared
        crawl, with the configuration it changed; a frontier of one process has nobody to tell."""
        return None

    async def shared_commands(self) -> list[dict[str, Any]]:
        """The live-control commands other processes shared since the last call."""
        return []


class MemoryFrontier(Frontier):
    """A frontier in memory: for tests, tiny crawls and `--frontier memory`."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._queue: collections.deque[Item] = collections.deque()
        self._in_flight = 0
        self._done = 0
        self._failed = 0
        self._changed = asyncio.Condition()

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def add(self, entries: Sequence[tuple[str, Item]]) -> list[bool]:
        added = []
        for key, item in entries:
            new = key not in self._seen
            if new:
                self._seen.add(key)
                self._queue.append(item)
            added.append(new)
        if any(added):
            async with self._changed:
                self._changed.notify_all()
        return added

    async def get(self) -> Item | None:
        async with self._changed:
            while not self._queue:
                if self._in_flight == 0:
                    self._changed.notify_all()
                    return None
                await self._changed.wait()
            self._in_flight += 1
            return self._queue.popleft()

    async def done(self, item: Item, *, failed: bool = False) -> None:
        async with self._changed:
            self._in_flight -= 1
            if failed:
                self._failed += 1
            else:
                self._done += 1
            self._changed.notify_all()

    async def drop(self, refusal: Callable[[Item], str | None]) -> list[tuple[Item, str]]:
        dropped: list[tuple[Item, str]] = []
        kept: collections.deque[Item] = collections.deque()
        for item in self._queue:
            reason = refusal(item)
            if reason is None:
                kept.append(item)
            else:
                dropped.append((item, reason))
        self._queue = kept
        return dropped

    async def counts(self) -> Counts:
        return Counts(
            queued=len(self._queue),
            in_flight=self._in_flight,
            done=self._done,
            failed=self._failed,
            seen=len(self._seen),
            fetching=self._in_flight,
        )
