"""Per-host manners: how many requests at once, how far apart, and when to back off.

Where the delay is decided: `delay_for_host`, one function of a host's state, gives the gap
between two requests to a host: the user's `delay`, else the host's robots.txt
`Crawl-delay`, else `DEFAULT_DELAY`; the adaptive throttle may only lengthen it.  A host
may then start its next request at `next_start`: a gap after its last one, and not while
it is paused (a `Retry-After`, an unavailable robots.txt, `archiver control host HOST
pause`).  Every frontier gets its answer from these two: the memory and SQLite frontiers
through `HostLimiter.ready_at`, the Redis frontier through `SharedHosts.claim_start`,
which keeps the last start and the pauses of every host in Redis for all processes.

One `HostLimiter` per crawl.  The limiter serves two parties.  A scheduling frontier
(memory, SQLite) asks `ready_at` when a host may next be handed out and tells
`taken`/`released` as its URLs come and go, so a worker is only given a URL whose host
is ready; whenever a host's ready time moves (a pause, a new gap, a request started) the
frontier hears of it through `on_change`.  `slot`, around every request, is the guarantee
the server sees whatever the frontier: at most `concurrency` at once and starts at least a
gap apart (robots.txt fetches and retries included, and with a Redis frontier the other
processes' requests too); with a scheduling frontier it rarely has to wait.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Protocol

from .config import Config
from .urls import site_of

DEFAULT_DELAY = 0.25
"""The gap used when `delay` is auto (negative) and robots.txt names no Crawl-delay."""

THROTTLE_MAX_DELAY = 60.0
"""The adaptive throttle never spaces requests further apart than this (Scrapy's default)."""

RETRY_STATUSES = frozenset({429, 503})
WAKE_SECONDS = 1.0
"""A request waiting in `slot` looks again at least this often: a pause may have been lifted."""
HELD_SECONDS = 10 * 365 * 86_400.0
"""A host paused by `archiver control host HOST pause` waits this long: until resumed."""


def configured_delay(config: Config) -> float:
    """The gap of a host that has told nothing: `delay` if the user set one, else the default."""
    return config.delay if config.delay >= 0 else DEFAULT_DELAY


def delay_for_host(
    *,
    user_delay: float | None,
    crawl_delay: float | None,
    latency: float | None,
    default: float,
    throttle_max: float,
) -> tuple[float, str]:
    """The gap kept between two requests to a host, and where it comes from.

    `latency` is the adaptive throttle's estimate for the host (None when it is off or has
    not seen an answer yet); it may lengthen the gap, up to `throttle_max`, never shorten it.
    """
    if user_delay is not None:
        base, source = user_delay, "set by --delay or the config"
    elif crawl_delay is not None:
        base, source = crawl_delay, "robots.txt Crawl-delay"
    else:
        base, source = default, "the default"
    throttled = min(latency, throttle_max) if latency is not None else 0.0
    return (throttled, "adaptive throttle") if throttled > base else (base, source)


def next_start(last_start: float, gap: float, pause_until: float) -> float:
    """When a host's next request may start: a gap after its last one, and not while paused."""
    return max(last_start + gap, pause_until)


class SharedHosts(Protocol):
    """The hosts' clock of a crawl shared by several processes (the Redis frontier keeps it), so
    that a gap, a Retry-After or a robots.txt pause met by one process binds all of them."""

    async def claim_start(self, site: str, gap: float) -> float:
        """Start a request to `site` now if the whole crawl allows it (0.0; the next one then a
        `gap` later), else the seconds to wait."""
        ...

    def pause(self, site: str, seconds: float) -> None:
        """Hold every process's requests to `site` for `seconds` (told in the background)."""
        ...

    async def robots_of(self, origin: str) -> tuple[int, bytes] | None:
        """The robots.txt answer (status, body) another process fetched for `origin`, waiting
        while one fetches it; None when this process is to fetch it (then `robots_fetched` or
        `robots_failed`)."""
        ...

    async def robots_fetched(self, origin: str, status: int, body: bytes) -> None:
        """Keep the answer for the other processes: robots.txt is fetched once per crawl."""
        ...

    async def robots_failed(self, origin: str) -> None:
        """No answer to keep (robots.txt unavailable for now): another process may try."""
        ...


class _HostState:
    __slots__ = (
        "active",
        "delay",
        "fetched",
        "fetching",
        "handed_out",
        "last_start",
        "latency",
        "pause_until",
        "slots",
    )

    def __init__(self, concurrency: int) -> None:
        self.slots = asyncio.Semaphore(concurrency)
        self.last_start = -1e9
        """When the last request started; the next starts a gap later (the gap of now, so a
        Crawl-delay learnt from robots.txt counts from the robots.txt request)."""
        self.handed_out = -1e9
        """When the frontier last handed out a URL of the host, whose request may not have started."""
        self.pause_until = 0.0
        self.active = 0
        """URLs of the host handed out by the frontier, not fetched yet and not done."""
        self.fetched = 0
        """URLs of the host handed out and fetched, whose pages are processed: not done yet."""
        self.fetching = 0
        """Requests holding a slot now."""
        self.delay: float | None = None
        self.latency: float | None = None


class HostLimiter:
    """At most `per_host_concurrency` requests per host, starting at least a delay apart."""

    def __init__(self, config: Config) -> None:
        self.concurrency = config.per_host_concurrency
        self.user_delay = config.delay if config.delay >= 0 else None
        self.delay = configured_delay(config)
        self.adaptive = config.adaptive_throttle
        self.max_delay = max(min(THROTTLE_MAX_DELAY, config.retry_after_max), self.delay)
        self._hosts: dict[str, _HostState] = {}
        self.active_hosts = 0
        """Hosts with a URL handed out and not done."""
        self.on_change: Callable[[str], None] | None = None
        """Called with a host whose ready time may have moved (set by a scheduling frontier)."""
        self._waited: tuple[float, str] | None = None
        """When a request last waited for its host's gap, and the host: the gap bounds the pace."""
        self._paused: dict[str, float] = {}
        """Hosts paused (Retry-After, robots.txt unavailable, held) -> until when; few at a time."""
        self._held: set[str] = set()
        """Hosts paused by `archiver control host HOST pause`, until resumed."""
        self.shared: SharedHosts | None = None
        """The whole crawl's clock of hosts, when several processes share it (set by the frontier)."""

    def last_wait(self, within: float = 2.0) -> tuple[str, float, str] | None:
        """(host, gap, where the gap comes from) when a request waited for the gap lately."""
        if self._waited is None or time.monotonic() - self._waited[0] > within:
            return None
        site = self._waited[1]
        return site, *self._gap(self._site_state(site))

    def _gap(self, state: _HostState) -> tuple[float, str]:
        """The gap kept between two requests to a host, and where it comes from (`delay_for_host`)."""
        return delay_for_host(
            user_delay=self.user_delay,
            crawl_delay=state.delay,
            latency=state.latency if self.adaptive else None,
            default=self.delay,
            throttle_max=self.max_delay,
        )

    def _state(self, url: str) -> _HostState:
        return self._site_state(site_of(url))

    def _site_state(self, site: str) -> _HostState:
        state = self._hosts.get(site)
        if state is None:
            state = self._hosts[site] = _HostState(self.concurrency)
        return state

    def _changed(self, site: str) -> None:
        if self.on_change is not None:
            self.on_change(site)

    def pause(self, url: str, seconds: float) -> None:
        """Hold every request to this host for `seconds` (Retry-After, robots.txt 5xx)."""
        self.pause_host(site_of(url), seconds)

    def pause_host(self, site: str, seconds: float) -> None:
        """`pause` by host name; a shorter pause than the one running changes nothing."""
        state = self._site_state(site)
        state.pause_until = max(state.pause_until, time.monotonic() + seconds)
        self._paused[site] = state.pause_until
        self._changed(site)
        if self.shared is not None:
            self.shared.pause(site, seconds)

    def set_crawl_delay(self, url: str, seconds: float) -> bool:
        """Use robots.txt's Crawl-delay for this host, unless the user chose a delay; True if taken."""
        if self.user_delay is not None:
            return False
        site = site_of(url)
        self._site_state(site).delay = max(seconds, 0.0)
        self._changed(site)
        return True

    def set_delay(self, seconds: float | None) -> None:
        """The gap for every host from now on (None: back to Crawl-delay or the default)."""
        self.user_delay = seconds
        self.delay = seconds if seconds is not None else DEFAULT_DELAY
        self.max_delay = max(self.max_delay, self.delay)
        for site in list(self._hosts):
            self._changed(site)

    def set_concurrency(self, concurrency: int) -> None:
        """Requests at once per host from now on; requests in flight keep the slots they hold."""
        self.concurrency = max(concurrency, 1)
        for site, state in list(self._hosts.items()):
            state.slots = asyncio.Semaphore(self.concurrency)
            self._changed(site)

    def hold(self, site: str, held: bool) -> None:
        """Pause every request to `site` until told otherwise, or end that pause (`archiver
        control host`); a Retry-After pause ends with it."""
        state = self._site_state(site)
        state.pause_until = time.monotonic() + HELD_SECONDS if held else 0.0
        if held:
            self._held.add(site)
        else:
            self._held.discard(site)
        self._paused[site] = state.pause_until
        self._changed(site)

    # -- the schedule's view -------------------------------------------------------------

    def ready_at(self, site: str) -> float | None:
        """When a URL of `site` may next be handed out (monotonic time); None while its slots are full.

        A host without state (new, or forgotten once idle) is ready now, not since time began:
        the schedule serves ready hosts by how long they have been ready, and a host kept
        (waiting on its gap, say) whose time came a while ago must go before it.
        """
        state = self._hosts.get(site)
        if state is None:
            return time.monotonic()
        if state.active >= self.concurrency:
            return None
        return next_start(max(state.last_start, state.handed_out), self._gap(state)[0], state.pause_until)

    def may_start(self, url: str) -> bool:
        """Whether a request to the host of `url` could start now (its gap passed, no pause)."""
        state = self._hosts.get(site_of(url))
        if state is None:
            return True
        return next_start(state.last_start, self._gap(state)[0], state.pause_until) <= time.monotonic()

    def taken(self, site: str) -> None:
        """A URL of `site` was handed out: one slot busy, and the next one a gap later."""
        state = self._site_state(site)
        state.active += 1
        if state.active == 1:
            self.active_hosts += 1
        state.handed_out = time.monotonic()

    def fetched(self, site: str) -> None:
        """The request of a URL of `site` handed out earlier is over: its page is processed
        without holding one of the host's slots, so the frontier may hand out the next."""
        state = self._hosts.get(site)
        if state is None or state.active == 0:
            return
        if state.active == 1:
            self.active_hosts -= 1
        state.active -= 1
        state.fetched += 1
        self._changed(site)

    def released(self, site: str) -> None:
        """A URL of `site` handed out earlier is done; a host with nothing left is forgotten."""
        state = self._hosts.get(site)
        if state is None:
            return
        if state.fetched:
            state.fetched -= 1  # its slot was freed when its request ended
        else:
            if state.active == 1:
                self.active_hosts -= 1
            state.active = max(state.active - 1, 0)
        now = time.monotonic()
        if (
            state.active == 0
            and state.fetched == 0
            and state.fetching == 0
            and state.delay is None
            and state.latency is None
            and next_start(max(state.last_start, state.handed_out), self._gap(state)[0], state.pause_until)
            <= now
            and (self._waited is None or self._waited[1] != site)
        ):
            del self._hosts[site]

    def held(self, site: str) -> bool:
        """Whether `site` is paused by `archiver control host HOST pause`."""
        return site in self._held

    def paused(self, site: str, now: float) -> bool:
        state = self._hosts.get(site)
        return state is not None and state.pause_until > now

    def paused_sites(self, now: float) -> list[str]:
        """The hosts paused at `now`; the pauses that ended are forgotten."""
        ended = [site for site, until in self._paused.items() if until <= now]
        for site in ended:
            del self._paused[site]
        return list(self._paused)

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
        """Held around one request: waits for a free slot, the gap and any pause."""
        site = site_of(url)
        state = self._site_state(site)
        async with state.slots:
            while True:
                gap = self._gap(state)[0] if delay is None else delay
                now = time.monotonic()
                start = next_start(state.last_start, gap, state.pause_until)
                if start > now:
                    if state.last_start + gap > now >= state.pause_until:
                        self._waited = (now, site)
                    await asyncio.sleep(min(start - now, WAKE_SECONDS))
                    continue
                if self.shared is None or gap <= 0:
                    break
                # the other processes' requests count too: one round trip, only for a host with a gap
                wait = await self.shared.claim_start(site, gap)
                if wait <= 0:
                    break
                self._waited = (time.monotonic(), site)
                await asyncio.sleep(min(wait, WAKE_SECONDS))
            state.last_start = time.monotonic()
            self._changed(site)
            state.fetching += 1
            try:
                yield
            finally:
                state.fetching -= 1

    def note_gap_wait(self, site: str) -> None:
        """The frontier held a ready worker back for this host's gap: politeness bounds the pace."""
        self._waited = (time.monotonic(), site)


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
