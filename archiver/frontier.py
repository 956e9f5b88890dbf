"""The frontier: the set of URLs ever seen and the queue of those still to fetch.

Every frontier (in memory, SQLite in the archive, Redis shared by many processes)
speaks the small `Frontier` protocol, so the crawler does not care which one it has.
Termination is the frontier's job: `get()` returns None only when nothing is queued
and nothing is in flight anywhere, which is the one condition that ends a crawl.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .model import Counts, LinkKind
from .politeness import HostLimiter
from .schedule import HostSchedule
from .urls import site_of

if TYPE_CHECKING:
    from .config import Config

__all__ = ["Counts", "Frontier", "Holding", "HostQueues", "Item", "MemoryFrontier", "Recovered"]


@dataclass(frozen=True, slots=True)
class Item:
    """One URL waiting in the frontier, with what the crawler needs to handle it."""

    url: str
    depth: int = 0
    redirects_left: int = 10
    referrer: str | None = None
    kind: LinkKind = LinkKind.PAGE
    tries: int = 0
    """Attempts made before the URL went back to the queue to wait out its host's pause
    (`Frontier.give_back`); kept in memory only, so a resumed crawl starts the count again."""


@dataclass(frozen=True, slots=True)
class Recovered:
    """A URL that was in flight when the previous run stopped, and when it was taken."""

    key: str
    item: Item
    taken_at: float


@dataclass(frozen=True, slots=True)
class Holding:
    """How the other processes of a shared crawl answered a pause, a host pause or a stop."""

    processes: int = 0
    """Processes that hold now: none of them starts a request the command forbids."""
    on_wire: int = 0
    """Requests those processes had already sent, which finish."""
    silent: tuple[str, ...] = ()
    """Processes that looked alive and did not answer in time."""


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

    def use_limiter(self, limiter: HostLimiter) -> bool:
        """Hand out only URLs whose host `limiter` says is ready; True if this frontier does.

        A frontier that answers False leaves the crawler to wait in `HostLimiter.slot`.
        """
        return False

    async def give_back(self, item: Item, again: Item | None = None) -> bool:
        """Put `item`, handed out by `get`, back at the head of its host's queue as if never
        taken (as `again` when given: the same URL with its tries counted); False when this
        frontier cannot (then the caller keeps it)."""
        return False

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

    async def confirm_held(self, command: dict[str, Any], on_wire: int) -> None:
        """Tell the process that shared `command` (a pause, a host pause, a stop) that it holds
        here, with the requests this process had already sent."""
        return None

    async def held_everywhere(self, command: dict[str, Any]) -> Holding:
        """After `share`: wait (bounded) until every other live process of the crawl holds
        for `command`; what they answered.  Alone, nobody else has to."""
        return Holding()


class HostQueues:
    """A queue per host, breadth-first, page requisites first: the memory frontier's queue."""

    def __init__(self) -> None:
        self._queues: dict[str, tuple[collections.deque[Item], collections.deque[Item]]] = {}
        self.size = 0

    def has(self, host: str) -> bool:
        return host in self._queues

    def push(self, host: str, item: Item, *, first: bool = False) -> None:
        queues = self._queues.get(host)
        if queues is None:
            queues = self._queues[host] = (collections.deque(), collections.deque())
        queue = queues[0] if item.kind is not LinkKind.PAGE else queues[1]
        if first:
            queue.appendleft(item)
        else:
            queue.append(item)
        self.size += 1

    def pop(self, host: str) -> Item:
        requisites, pages = self._queues[host]
        item = requisites.popleft() if requisites else pages.popleft()
        if not requisites and not pages:
            del self._queues[host]  # an idle host is forgotten
        self.size -= 1
        return item

    def drop(self, refusal: Callable[[Item], str | None]) -> list[tuple[Item, str]]:
        """Remove the items `refusal` gives a reason for; a host left with none is forgotten."""
        dropped: list[tuple[Item, str]] = []
        for host, queues in list(self._queues.items()):
            for queue in queues:
                kept: collections.deque[Item] = collections.deque()
                for item in queue:
                    reason = refusal(item)
                    if reason is None:
                        kept.append(item)
                    else:
                        dropped.append((item, reason))
                queue.clear()
                queue.extend(kept)
            if not queues[0] and not queues[1]:
                del self._queues[host]
        self.size -= len(dropped)
        return dropped


class MemoryFrontier(Frontier):
    """A frontier in memory: for tests, tiny crawls and `--frontier memory`.

    Hands out URLs by the schedule of hosts (`schedule.HostSchedule`), like the SQLite
    and Redis frontiers.
    """

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._queues = HostQueues()
        self._taken: dict[int, str] = {}
        """id() of each item handed out -> its host, until `done`."""
        self._in_flight = 0
        self._done = 0
        self._failed = 0
        self._wake = asyncio.Event()
        self.schedule = HostSchedule(self._queues.has)
        self.schedule.on_ready = self._wake.set

    def use_limiter(self, limiter: HostLimiter) -> bool:
        self.schedule.attach(limiter)
        return True

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
                host = site_of(item.url)
                self._queues.push(host, item)
                self.schedule.offer(host)
            added.append(new)
        if any(added):
            self._wake.set()
        return added

    async def get(self) -> Item | None:
        while True:
            host = self.schedule.take(time.monotonic())
            if host is not None:
                item = self._queues.pop(host)
                self._hand_out(host, item)
                return item
            if not self._queues.size and self._in_flight == 0:
                self._wake.set()
                return None
            await wait_for_schedule(self._wake, self.schedule)

    def _hand_out(self, host: str, item: Item) -> None:
        if self.schedule.limiter is not None:
            self.schedule.limiter.taken(host)
        if self._queues.has(host):
            self.schedule.offer(host)
        self._taken[id(item)] = host
        self._in_flight += 1

    async def give_back(self, item: Item, again: Item | None = None) -> bool:
        host = self._taken.pop(id(item))
        self._in_flight -= 1
        self._queues.push(host, again or item, first=True)
        if self.schedule.limiter is not None:
            self.schedule.limiter.released(host)
        self.schedule.reschedule(host)
        self._wake.set()
        return True

    async def done(self, item: Item, *, failed: bool = False) -> None:
        host = self._taken.pop(id(item))
        self._in_flight -= 1
        if failed:
            self._failed += 1
        else:
            self._done += 1
        if self.schedule.limiter is not None:
            self.schedule.limiter.released(host)
        self.schedule.reschedule(host)
        self._wake.set()

    async def drop(self, refusal: Callable[[Item], str | None]) -> list[tuple[Item, str]]:
        dropped = self._queues.drop(refusal)
        for host in {site_of(item.url) for item, _ in dropped}:
            self.schedule.reschedule(host)
        return dropped

    async def counts(self) -> Counts:
        return Counts(
            queued=self._queues.size,
            in_flight=self._in_flight,
            done=self._done,
            failed=self._failed,
            seen=len(self._seen),
            fetching=self._in_flight,
        )


async def wait_for_schedule(wake: asyncio.Event, schedule: HostSchedule) -> None:
    """Sleep until `wake` is set or the first scheduled host becomes ready."""
    wake.clear()
    first = schedule.next_time()
    if first is None:
        await wake.wait()
        return
    delay = first - time.monotonic()
    if delay <= 0:
        return
    if schedule.limiter is not None and (host := schedule.first_host()) is not None:
        schedule.limiter.note_gap_wait(host)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(delay):
            await wake.wait()
