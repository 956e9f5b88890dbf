"""Retries and backoff: a URL asked again when the network failed or the server said "later".

A `429` or `503` pauses the whole host for its `Retry-After` (seconds or a date, capped by
`retry_after_max`), since it is the host that asked; a network error, a timeout or a body
cut mid-way is tried again after an exponential backoff with jitter.  With a scheduling
frontier the URL waits in its host's queue meanwhile (`WaitForHost`) and the worker takes
another host's URL; otherwise the worker waits.  A request the gate stopped before it
reached the network (`gate`, a pause) is `HeldBack`: its try is not counted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .errors import RETRYABLE_KINDS, FetchError
from .frontier import Item
from .gate import RequestHeld
from .model import Crawl, Page
from .politeness import RETRY_STATUSES, HostLimiter, retry_after_seconds

log = logging.getLogger(__name__)


class HeldBack(Exception):
    """A request for `item` was stopped before it reached the network (`gate`): the URL goes
    back to its host's queue, with the tries it had made (`item.tries`)."""

    def __init__(self, item: Item) -> None:
        super().__init__(item.url)
        self.item = item


class WaitForHost(Exception):
    """The host asked to come back later: `item` (tries counted) waits in the frontier, not in a worker."""

    def __init__(self, item: Item) -> None:
        super().__init__(item.url)
        self.item = item


@dataclass(frozen=True, slots=True)
class Outcome:
    page: Page | None
    error: FetchError | None
    tries: int


class Retries:
    """Fetches a URL through its host's slot (`HostLimiter.slot`), as many times as the settings allow."""

    def __init__(self, crawl: Crawl, limiter: HostLimiter, send: Callable[[Item], Awaitable[Page]]) -> None:
        self.crawl = crawl
        self.limiter = limiter
        self.send = send
        """One request for an item, through the crawl's session."""
        self.scheduled = False
        """The frontier takes a URL back to wait for its host (`Frontier.use_limiter`)."""

    async def fetch(self, item: Item, *, may_give_back: bool = False) -> Outcome:
        """Fetch `item`, retried as the settings say; raises `WaitForHost` when the host
        paused itself, or a network error snoozed it for the backoff, and `may_give_back`
        (the URL waits in the frontier, the worker goes on)."""
        error: FetchError | None = None
        for attempt in range(item.tries + 1, self.crawl.config.max_tries + 1):
            try:
                async with self.limiter.slot(item.url):
                    page = await self.send(item)
                self.limiter.observe(item.url, page.elapsed, page.status)
                if not self.retry_later(page, attempt):
                    return Outcome(page, None, attempt)
                self.crawl.stats["retries"] += 1
                if may_give_back and self.scheduled:
                    raise WaitForHost(dataclasses.replace(item, tries=attempt))
                continue
            except RequestHeld:
                raise HeldBack(dataclasses.replace(item, tries=attempt - 1)) from None
            except FetchError as exc:
                error = exc
                error.attempts = attempt
                if exc.kind not in RETRYABLE_KINDS or attempt == self.crawl.config.max_tries:
                    break
                self.crawl.stats["retries"] += 1
                backoff = self.crawl.config.retry_backoff * 2 ** (attempt - 1) * random.uniform(0.5, 1.5)
                if may_give_back and self.scheduled:
                    # as a Retry-After: the host is snoozed, its URL waits in its queue, and
                    # the worker takes another host's URL meanwhile
                    log.info("%s: %s, retrying in %.1f s", item.url, exc.message, backoff)
                    self.limiter.pause(item.url, backoff)
                    raise WaitForHost(dataclasses.replace(item, tries=attempt)) from None
                await asyncio.sleep(backoff)
        return Outcome(None, error, self.crawl.config.max_tries if error is None else error.attempts)

    def retry_later(self, page: Page, attempt: int) -> bool:
        """True when the server asked to come back (429/503) or cut the body, and tries remain.

        Retry-After (seconds or a date, capped by `retry_after_max`) pauses the whole
        host, since it is the host that asked for it.
        """
        if attempt >= self.crawl.config.max_tries:
            return False
        backoff = self.crawl.config.retry_backoff * 2 ** (attempt - 1)
        if page.status in RETRY_STATUSES:
            told = retry_after_seconds(page.header("Retry-After"))
            wait = min(backoff if told is None else told, self.crawl.config.retry_after_max)
            self.crawl.stats[f"retry_status_{page.status}"] += 1
            log.info("%s answered %d: retrying in %.1f s", page.url, page.status, wait)
            self.limiter.pause(page.url, wait)
            return True
        if page.truncated == "disconnect":
            self.limiter.pause(page.url, backoff)
            return True
        return False
