"""Per-host manners: how many requests at once, how far apart, and when to back off.

One `HostLimiter` per crawl; a worker holds a host's slot for the whole exchange.  The gap
between two requests to a host is, in order of precedence: the user's `delay`, else the
host's robots.txt `Crawl-delay`, else `DEFAULT_DELAY`; the adaptive throttle may only
lengthen it, and a `Retry-After` or an unavailable robots.txt pauses the host outright.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from .config import Config
from .urls import site_of

DEFAULT_DELAY = 0.25
"""The gap used when `delay` is auto (negative) and robots.txt names no Crawl-delay."""

THROTTLE_MAX_DELAY = 60.0
"""The adaptive throttle never spaces requests further apart than this (Scrapy's default)."""

RETRY_STATUSES = frozenset({429, 503})
HOLD_POLL_SECONDS = 1.0
"""A request waiting for its host looks again at least this often: a pause may be lifted."""


class _HostState:
    __slots__ = ("delay", "latency", "next_start", "pause_until", "slots")

    def __init__(self, concurrency: int) -> None:
        self.slots = asyncio.Semaphore(concurrency)
        self.next_start = 0.0
        self.pause_until = 0.0
        self.delay: float | None = None
        self.latency: float | None = None


class HostLimiter:
    """At most `per_host_concurrency` requests per host, starting at least a delay apart."""

    def __init__(self, config: Config) -> None:
        self.concurrency = config.per_host_concurrency
        self.user_delay = config.delay if config.delay >= 0 else None
        self.delay = self.user_delay if self.user_delay is not None else DEFAULT_DELAY
        self.adaptive = config.adaptive_throttle
        self.max_delay = max(min(THROTTLE_MAX_DELAY, config.retry_after_max), self.delay)
        self._hosts: dict[str, _HostState] = {}
        self._waited: tuple[float, str] | None = None
        """When a request last waited for its host's gap, and the host: the gap bounds the pace."""

    def last_wait(self, within: float = 2.0) -> tuple[str, float, str] | None:
        """(host, gap, where the gap comes from) when a request waited for the gap lately."""
        if self._waited is None or time.monotonic() - self._waited[0] > within:
            return None
        site = self._waited[1]
        return site, *self._gap(self._hosts[site])

    def _gap(self, state: _HostState) -> tuple[float, str]:
        """The gap kept between two requests to a host, and where it comes from."""
        if self.user_delay is not None:
            base, source = self.user_delay, "set by --delay or the config"
        elif state.delay is not None:
            base, source = state.delay, "robots.txt Crawl-delay"
        else:
            base, source = self.delay, "the default"
        throttled = min(state.latency, self.max_delay) if self.adaptive and state.latency is not None else 0.0
        return (throttled, "adaptive throttle") if throttled > base else (base, source)

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

    def set_delay(self, seconds: float) -> None:
        """The user's gap for every host from now on (`archiver control delay`)."""
        self.user_delay = self.delay = seconds
        self.max_delay = max(self.max_delay, seconds)

    def set_concurrency(self, concurrency: int) -> None:
        """Requests at once per host from now on; requests in flight keep their old slots."""
        self.concurrency = concurrency
        for state in self._hosts.values():
            state.slots = asyncio.Semaphore(concurrency)

    def hold(self, site: str, held: bool) -> None:
        """Pause (or resume) every request to `site` until told otherwise (`archiver control host`)."""
        state = self._hosts.get(site)
        if state is None:
            state = self._hosts[site] = _HostState(self.concurrency)
        state.pause_until = math.inf if held else 0.0

    def set_crawl_delay(self, url: str, seconds: float) -> bool:
        """Use robots.txt's Crawl-delay for this host, unless the user chose a delay; True if taken."""
        if self.user_delay is not None:
            return False
        self._state(url).delay = max(seconds, 0.0)
        return True

    def host_delay(self, url: str) -> float:
        """The gap now kept between two requests to the host of `url`."""
        return self._gap(self._state(url))[0]

    def observe(self, url: str, latency: float, status: int | None) -> None:
        """Feed the adaptive throttle: the gap follows the host's latency, as Scrapy's AutoThrottle.

        The gap moves halfway towards the latest latency; an error response may only
        lengthen it, so a server failing fast cannot speed the crawl up.
        """
        if not self.adaptive:
            return
        state = self._state(url)
        if state.latency is None:
            state.latency = latency
            return
        target = (state.latency + latency) / 2
        if status is None or status >= 400:
            target = max(target, state.latency)
        state.latency = min(target, self.max_delay)

    @asynccontextmanager
    async def slot(self, url: str, delay: float | None = None) -> AsyncIterator[None]:
        state = self._state(url)
        async with state.slots:
            gap = self.host_delay(url) if delay is None else delay
            while True:
                now = time.monotonic()
                start = max(now, state.next_start, state.pause_until)
                if start <= now:
                    break
                if state.next_start > now >= state.pause_until:
                    self._waited = (now, site_of(url))
                await asyncio.sleep(min(start - now, HOLD_POLL_SECONDS))
            state.next_start = time.monotonic() + gap
            yield


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After value (delta-seconds or an HTTP date); None if unusable."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    delta = (when - (now or datetime.now(UTC))).total_seconds()
    return max(delta, 0.0)
