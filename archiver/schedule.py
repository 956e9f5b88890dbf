"""The schedule of hosts: which host's URL a frontier hands out next.

The memory and SQLite frontiers keep one queue per host; this is the order in which the
hosts are served.  A host with queued URLs is in a heap keyed by the time it may next
start a request (`HostLimiter.ready_at`: the gap since its last request, a pause, a free
slot).  `take` pops the first host whose time has come; ties go to the host that has
waited longest, so ready hosts take turns.  A host whose slots are all busy leaves the
heap and comes back when the request of one of its URLs is over (`HostLimiter.fetched`)
or the URL is done.  This is the Redis frontier's model (its `hosts` sorted set), kept in
memory; there a slot is free only once the URL is done.

Anything that moves a host's time (a `Retry-After` pause, a new delay, a request that
started later than planned) calls `reschedule`; the heap is lazy, so that only pushes a
fresh entry and the stale one is skipped when it reaches the top.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import NamedTuple

from .politeness import HostLimiter
from .state import describe_hosts


class HostCounts(NamedTuple):
    """Hosts by what they are doing, for the progress display and `archiver status`."""

    fetching: int = 0
    """With a URL handed out and not done."""
    waiting: int = 0
    """With queued URLs, held by politeness: the gap since their last request, or busy slots."""
    paused: int = 0
    """With queued URLs, held by a pause (Retry-After, robots.txt unavailable)."""
    ready: int = 0
    """With queued URLs that may be fetched now: waiting for a free worker."""

    def describe(self) -> str:
        return describe_hosts(self._asdict())


class HostSchedule:
    """Hosts with queued URLs, by when each may next be served; see the module docstring."""

    def __init__(self, has_queued: Callable[[str], bool]) -> None:
        self._has_queued = has_queued
        self.limiter: HostLimiter | None = None
        self._heap: list[tuple[float, int, str]] = []
        self._live: dict[str, int] = {}
        """Host -> sequence number of its entry in the heap that counts."""
        self._when: dict[str, float] = {}
        """Host -> the time of its entry in the heap that counts (for `host_counts`)."""
        self._full: set[str] = set()
        """Hosts with queued URLs whose slots are all busy: out of the heap until one is free."""
        self._order = itertools.count()
        self.on_ready: Callable[[], None] | None = None
        """Called when a host may have become ready sooner than the frontier thought."""

    def attach(self, limiter: HostLimiter) -> None:
        """Take gaps, pauses and slots from `limiter` from now on."""
        self.limiter = limiter
        limiter.on_change = self.reschedule
        for host in list(self._live) + list(self._full):
            self.reschedule(host)

    def __len__(self) -> int:
        return len(self._live) + len(self._full)

    def offer(self, host: str) -> None:
        """`host` has queued URLs: schedule it unless it is already."""
        if host in self._live or host in self._full:
            return
        self._push(host)

    def reschedule(self, host: str) -> None:
        """`host`'s ready time may have moved: place it again (if it has queued URLs)."""
        self._live.pop(host, None)
        self._when.pop(host, None)
        self._full.discard(host)
        if self._has_queued(host):
            self._push(host)
        if self.on_ready is not None:
            self.on_ready()

    def forget(self, host: str) -> None:
        """`host` has nothing queued any more."""
        self._live.pop(host, None)
        self._when.pop(host, None)
        self._full.discard(host)

    def take(self, now: float) -> str | None:
        """The first host ready at `now`, out of the schedule (the caller `offer`s it again)."""
        heap = self._heap
        while heap:
            when, order, host = heap[0]
            if self._live.get(host) != order:
                heapq.heappop(heap)
                continue
            if when > now:
                return None
            heapq.heappop(heap)
            del self._live[host]
            del self._when[host]
            return host
        return None

    def next_time(self) -> float | None:
        """When the first scheduled host becomes ready; None when none is scheduled."""
        heap = self._heap
        while heap and self._live.get(heap[0][2]) != heap[0][1]:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def first_host(self) -> str | None:
        """The host `next_time` is about (for the pace note)."""
        return self._heap[0][2] if self.next_time() is not None else None

    def host_counts(self, now: float) -> HostCounts:
        """What the hosts with queued URLs are waiting for at `now`: one pass over their ready
        times (the status is saved twice a second, and a crawl may schedule thousands of hosts)."""
        limiter = self.limiter
        when = self._when
        ready = sum(1 for at in when.values() if at <= now)
        paused = 0
        if limiter is not None:
            paused = sum(1 for site in limiter.paused_sites(now) if when.get(site, now) > now)
        waiting = len(self._full) + len(when) - ready - paused
        fetching = limiter.active_hosts if limiter is not None else 0
        return HostCounts(fetching, waiting, paused, ready)

    def _push(self, host: str) -> None:
        when = 0.0 if self.limiter is None else self.limiter.ready_at(host)
        if when is None:
            self._full.add(host)
            return
        order = next(self._order)
        self._live[host] = order
        self._when[host] = when
        heapq.heappush(self._heap, (when, order, host))
        if len(self._heap) > 4 * len(self._live) + 64:
            self._compact()

    def _compact(self) -> None:
        """Drop stale entries so the heap stays as small as the set of scheduled hosts."""
        self._heap = [entry for entry in self._heap if self._live.get(entry[2]) == entry[1]]
        heapq.heapify(self._heap)
