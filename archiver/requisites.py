"""Page requisites fetched on a plugin's demand (`discover_links`' `fetch`), each at most once.

A plugin rendering a page (the browser) asks for a stylesheet or an image while the page is
open: the URL is queued in the frontier (so a resume knows of it) and claimed here first,
then fetched at once in a task of its own.  A worker that takes its frontier entry meanwhile
waits for that fetch (`claim_of`) and marks the entry done, or fetches the URL itself when
the claim came to nothing.  A caller that stops waiting leaves the fetch to finish, so a
URL claimed here is always fetched, archived and logged.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from .admission import Admission
from .errors import FetchError
from .frontier import Frontier, Item
from .model import Crawl, LinkKind, Page
from .retries import HeldBack, Outcome
from .urls import canonical_key, clean_url

MEMORY = 100_000
"""Requisites remembered as fetched; past this, the oldest half is forgotten."""


class Requisites:
    """The requisites plugins asked for: a future while in flight, then remembered as fetched."""

    def __init__(
        self,
        crawl: Crawl,
        frontier: Frontier,
        admission: Admission,
        process: Callable[[Item, list[Outcome]], Awaitable[bool]],
        follow_redirect: Callable[[Item, Page], Awaitable[int]],
    ) -> None:
        self.crawl = crawl
        self.frontier = frontier
        self.admission = admission
        self.process = process
        """Fetch an item and hand it on, its outcome kept in the list; True when it failed for good."""
        self.follow_redirect = follow_redirect
        self._answers: dict[str, asyncio.Future[Outcome | None] | None] = {}
        """Keys fetched through `fetch`: a future while in flight, then None
        (the oldest half dropped past MEMORY)."""
        self._claimed: dict[str, asyncio.Future[bool | None]] = {}
        """Their frontier entries: a worker that takes one waits for the plugin's fetch and marks
        it done (the future gives `failed`), or fetches it itself when it gives None."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._abandoned: set[str] = set()

    def claim_of(self, item: Item) -> asyncio.Future[bool | None] | None:
        """For a worker that took `item` from the frontier: the plugin's fetch of it under way, if any."""
        return self._claimed.pop(canonical_key(item.url), None) if self._claimed else None

    async def cancel_all(self) -> None:
        """Only left when stopping (or another process holds their entries): in flight for a resume."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def fetch(self, parent: Item, url: str) -> Page | None:
        """`discover_links`' `fetch`: `url` fetched now as a requisite of `parent`, at most once.

        The fetch runs in a task of its own: a caller that stops waiting (the page's rendering
        ended) leaves it to finish, so a URL claimed here is always fetched, archived and logged.
        """
        cleaned = clean_url(url)
        if cleaned is None:
            raise FetchError(url, "not an http(s) URL", kind="refused")
        item = Item(cleaned, parent.depth + 1, self.crawl.config.max_redirect, parent.url, LinkKind.REQUISITE)
        key = canonical_key(cleaned)
        if key in self._answers:
            pending = self._answers[key]
            outcome = None if pending is None else await asyncio.shield(pending)
            return None if outcome is None else outcome.page
        reason = self.admission.refusal(item)
        if reason is not None:
            self.admission.skip(cleaned, reason, parent.url, item.depth)
            raise FetchError(cleaned, reason, kind="refused")
        if self.crawl.config.max_pages and self.admission.added >= self.crawl.config.max_pages:
            self.crawl.stats["limit_max_pages"] += 1
            raise FetchError(cleaned, f"max_pages {self.crawl.config.max_pages} reached", kind="limit")
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Outcome | None] = loop.create_future()
        claim: asyncio.Future[bool | None] = loop.create_future()
        # claimed before it is queued: a worker taking it meanwhile waits for this fetch
        self._answers[key] = answer
        self._claimed[key] = claim
        new = False
        try:
            new = (await self.frontier.add([(key, item)]))[0]
        finally:
            if not new:
                self._unclaim(key, answer, claim)
        if not new:
            return None
        self.admission.added += 1
        self._start(self._fetch_claimed(item, key, answer, claim))
        try:
            outcome = await asyncio.shield(answer)
        except asyncio.CancelledError:
            if answer.done():  # answered, but the caller went away before reading it
                self._start(self._follow_if_redirect(item, answer.result()))
            else:
                self._abandoned.add(key)
            raise
        if outcome is None or outcome.page is None:
            error = outcome.error if outcome else None
            raise error or FetchError(cleaned, "refused by robots.txt", kind="refused")
        return outcome.page

    def _start(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _follow_if_redirect(self, item: Item, outcome: Outcome | None) -> None:
        if outcome is not None and outcome.page is not None and outcome.page.is_redirect:
            await self.follow_redirect(item, outcome.page)

    def _unclaim(
        self, key: str, answer: asyncio.Future[Outcome | None], claim: asyncio.Future[bool | None]
    ) -> None:
        """Not fetched here after all: waiting plugins get nothing, a worker fetches it."""
        self._abandoned.discard(key)
        if self._answers.get(key) is answer:
            del self._answers[key]
        if self._claimed.get(key) is claim:
            del self._claimed[key]
        answer.set_result(None)
        claim.set_result(None)

    async def _fetch_claimed(
        self,
        item: Item,
        key: str,
        answer: asyncio.Future[Outcome | None],
        claim: asyncio.Future[bool | None],
    ) -> None:
        outcomes: list[Outcome] = []
        try:
            failed = await self.process(item, outcomes)
        except asyncio.CancelledError:
            self._unclaim(key, answer, claim)
            raise
        except HeldBack:
            # not sent (paused): the plugin goes without it, the worker that takes its entry
            # gives it back to the queue
            self._answers[key] = None
            self._claimed.pop(key, None)
            paused = FetchError(item.url, "not sent: the crawl or its host is paused", kind="paused")
            answer.set_result(Outcome(None, paused, 0))
            claim.set_result(None)
            return
        except Exception as exc:  # the worker that takes it fails as on any other URL
            self._answers[key] = None
            answer.set_result(Outcome(None, FetchError(item.url, f"not fetched: {exc}"), 1))
            claim.set_exception(exc)
            return
        outcome = outcomes[0] if outcomes else None
        answer.set_result(outcome)
        self._answers[key] = None
        try:
            if key in self._abandoned:
                # its plugin stopped waiting, so nobody asks for the redirect's target: queued here
                self._abandoned.discard(key)
                await self._follow_if_redirect(item, outcome)
        finally:
            claim.set_result(failed)
        if len(self._answers) > MEMORY:
            for old in list(itertools.islice(self._answers, len(self._answers) // 2)):
                if self._answers[old] is None:
                    del self._answers[old]
