"""Admission of URLs to the frontier: each link once, only what the rules let in, within max_pages.

Links found on a page go through the depth rule first (before they are remembered, so a
link refused as too deep here may be admitted from a shallower page), then through the
crawl's rules: scope, traps and the plugins' `accept_url` (`rules.Rules`).  A URL refused
is logged once as skipped, with its reason; one admitted is counted toward `max_pages`
and shown to the trap detector.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from .crawllog import CrawlLog
from .frontier import Frontier, Item
from .linkmemo import LinkMemo
from .model import Crawl, Link, LinkKind
from .rules import Rules, reason_kind
from .traps import TrapDetector
from .urls import canonical_key, clean_url

log = logging.getLogger(__name__)

SKIP_LOG_MEMORY = 200_000
"""URLs whose skip was logged, remembered to log each once (past this, a URL may be logged again)."""


class Admission:
    """Decides which URLs join `frontier`, and logs the others as skipped."""

    def __init__(
        self,
        crawl: Crawl,
        frontier: Frontier,
        rules: Rules,
        traps: TrapDetector,
        crawl_log: CrawlLog,
        seed_requisites: Sequence[tuple[str, str]] | None = None,
    ) -> None:
        self.crawl = crawl
        self.seed_requisites = seed_requisites
        """(url, page) pairs queued instead of the roots, each as a requisite of its page (a QA
        patch): the roots still decide the scope, the address guard and whom credentials go to."""
        self.frontier = frontier
        self.rules = rules
        self.traps = traps
        self.log = crawl_log
        self.added = 0
        """URLs queued by this crawl, its earlier runs included (`max_pages` counts them)."""
        self._known = LinkMemo()
        """Links already handed to the frontier or refused (`linkmemo`)."""
        self._skipped_logged: set[str] = set()

    async def add_links(self, links: Iterable[Link], item: Item, referrer: str) -> int:
        """The links found on `item`'s page, each once, queued if the rules let them; how many were new."""
        if item.kind is not LinkKind.PAGE:
            links = [link for link in links if link.kind is not LinkKind.PAGE]
        candidates = []
        known = self._known
        depth = item.depth + 1
        too_deep = self.rules.depth
        for link in links:
            is_page = link.kind is LinkKind.PAGE
            memo = link.url if is_page else "\0" + link.url
            if memo in known:
                continue
            url = clean_url(link.url)
            if url is None:
                continue
            refused = too_deep(url, depth, link.kind, referrer)
            if refused is not None:
                self.skip(url, refused, referrer, depth)
                continue
            known.add(memo)
            candidates.append(Item(url, depth, self.crawl.config.max_redirect, referrer, link.kind))
        return await self.add(candidates)

    async def add(self, items: list[Item], *, coalesce: bool = False) -> int:
        """Queue the items that pass scope, limits and plugins; returns how many were new."""
        entries: list[tuple[str, Item]] = []
        keys: set[str] = set()
        for item in items:
            reason = self.refusal(item)
            if reason is not None:
                self.skip(item.url, reason, item.referrer, item.depth)
                continue
            key = canonical_key(item.url)
            if key in keys:
                continue
            keys.add(key)
            entries.append((key, item))
        if not entries:
            return 0
        budget = self.crawl.config.max_pages - self.added if self.crawl.config.max_pages else len(entries)
        added = await self.frontier.add(entries[: max(budget, 0)])
        for (_key, queued), is_new in zip(entries, added, strict=False):
            if is_new:
                self.traps.admitted(queued.url)
        new = sum(added)
        self.added += new
        if coalesce and not new:
            log.debug("redirect to %s coalesced: already seen", entries[0][1].url)
            self.crawl.stats["redirects_coalesced"] += 1
        if budget < len(entries):
            self.crawl.stats["limit_max_pages"] += len(entries) - max(budget, 0)
        return new

    def refusal(self, item: Item) -> str | None:
        """Why `item` may not join the frontier, or None: the `queue` rules of `rules.Rules`."""
        return self.rules.refusal(item.url, item.depth, item.kind, item.referrer)

    def skip(self, url: str, reason: str, referrer: str | None, depth: int) -> None:
        self.crawl.stats[f"skipped_{reason_kind(reason)}"] += 1
        if url in self._skipped_logged:
            return
        if len(self._skipped_logged) < SKIP_LOG_MEMORY:
            self._skipped_logged.add(url)
        self.log.skipped(url, reason, referrer, depth)

    async def seed(self) -> None:
        """The roots, queued as the first URLs of the crawl (or the requisites a patch seeks)."""
        redirects = self.crawl.config.max_redirect
        if self.seed_requisites is not None:
            await self.add(
                [
                    Item(url, 1, redirects, page, LinkKind.REQUISITE)
                    for url, page in self.seed_requisites
                    if clean_url(url) is not None
                ]
            )
            return
        roots = []
        for root in self.crawl.config.roots:
            url = clean_url(root)
            if url is None:
                continue
            roots.append(Item(url, 0, self.crawl.config.max_redirect, None, LinkKind.PAGE))
        await self.add(roots)
