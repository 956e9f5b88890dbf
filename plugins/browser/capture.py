"""The per-run browser capture: which pages to render, and the crawl's side of each request.

Registered by `configure` when ``--browser`` or ``[plugins.browser] match`` asks for it.
A page is rendered in `discover_links`, after `page_fetched` archived its HTML: the
links of the rendered DOM join the frontier, and `page_rendered` hands the DOM and the
screenshot to the other plugins (the WARC plugin stores them).  A request of the page
is answered, in order, from the responses the crawl fetched lately (`page_fetched`
fills a bounded cache), from a fetch made now by the crawl, or from the archive.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from urllib.parse import urljoin

import pluggy

from archiver.api import Crawl, FetchError, FetchRequisite, Hooks, Link, LinkKind, Page, find_header, hookimpl

from .cache import Answer, ResponseCache
from .loading import Browser, PageSession, Rendering, ResolverRefused
from .settings import BrowserSettings

log = logging.getLogger("archiver.browser")

_MAX_CACHED_BODY = 8 * 1024 * 1024


def answer_of(page: Page) -> Answer:
    return Answer(page.url, page.status, page.headers, page.content)


class BrowserCapture:
    """Renders the chosen HTML pages of one crawl in Chromium."""

    def __init__(self, settings: BrowserSettings, executable: str, pm: pluggy.PluginManager) -> None:
        self.settings = settings
        self.hooks = Hooks(pm)
        self.browser = Browser(executable, settings)
        self.cache = ResponseCache(settings.cache_size)
        self._tabs: asyncio.Semaphore | None = None
        self._not_held: set[str] = set()

    # -- hooks ---------------------------------------------------------------------------

    @hookimpl
    def crawl_started(self, crawl: Crawl) -> None:
        self._tabs = asyncio.Semaphore(self.settings.tabs)

    @hookimpl
    def page_fetched(self, page: Page, links: Sequence[Link], crawl: Crawl) -> None:
        if not page.is_redirect and len(page.content) <= _MAX_CACHED_BODY and not page.decode_error:
            self.cache.put(answer_of(page))
        elif page.is_redirect:
            self.cache.put(Answer(page.url, page.status, page.headers, b""))

    @hookimpl
    async def discover_links(
        self, page: Page, links: Sequence[Link], fetch: FetchRequisite, crawl: Crawl
    ) -> list[Link]:
        if not (page.kind is LinkKind.PAGE and 200 <= page.status < 300 and page.is_html):
            return []
        if not self.settings.wants(page.url):
            return []
        assert self._tabs is not None
        async with self._tabs:
            rendering = await self._render(page, fetch, crawl)
        self._record(page, rendering, crawl)
        if rendering.dom is not None:
            await self.hooks.page_rendered(page, rendering.dom, rendering.screenshot, crawl)
        cap = crawl.config.max_links_per_page
        found = rendering.links[:cap] if cap else rendering.links
        return [Link(url) for url in found]

    @hookimpl
    async def crawl_finished(self, crawl: Crawl) -> None:
        await self.browser.close()

    # -- one page ------------------------------------------------------------------------

    async def _render(self, page: Page, fetch: FetchRequisite, crawl: Crawl) -> Rendering:
        async def resolve(url: str) -> Answer:
            return await self._resolve(url, fetch, crawl)

        session = PageSession(
            page.url, answer_of(page), resolve, self.settings, crawl.identity, self.browser.memory
        )
        try:
            browser = await self.browser.get()
        except Exception as exc:
            session.note(f"Chromium did not start: {str(exc).strip().splitlines()[0][:200]}")
            return session.result
        return await session.run(browser)

    async def _resolve(self, url: str, fetch: FetchRequisite, crawl: Crawl) -> Answer:
        """The answer for `url`, its redirects followed here: Chromium does not follow a
        redirect given to `route.fulfill` for a script's or an image's request."""
        answer = await self._resolve_one(url, fetch, crawl)
        for _ in range(crawl.config.max_redirect):
            location = find_header(answer.headers, "Location")
            if not 300 <= answer.status < 400 or not location:
                break
            answer = await self._resolve_one(urljoin(answer.url, location.strip()), fetch, crawl)
        return answer

    async def _resolve_one(self, url: str, fetch: FetchRequisite, crawl: Crawl) -> Answer:
        cached = self.cache.get(url)
        if cached is not None:
            crawl.stats["browser.cached"] += 1
            return cached
        try:
            page = await fetch(url)
        except FetchError as exc:
            raise ResolverRefused(exc.message, blocked=exc.kind in ("refused", "limit")) from None
        if page is not None:
            crawl.stats["browser.fetched"] += 1
            return answer_of(page)
        stored = await self._from_archive(url, crawl)
        if stored is None:
            crawl.stats["browser.not_held"] += 1
            raise ResolverRefused(f"{url} is queued, not yet fetched")
        return stored

    async def _from_archive(self, url: str, crawl: Crawl) -> Answer | None:
        """The stored response of a URL the crawl holds but the cache has let go."""
        if url in self._not_held:
            return None
        since = 0.0 if crawl.resumed else crawl.started_at.timestamp()
        for page in await self.hooks.archived_pages([url], since, crawl):
            if page.status:
                crawl.stats["browser.from_archive"] += 1
                answer = Answer(page.url, page.status, page.headers, await _decoded(page, crawl))
                self.cache.put(answer)
                return answer
        if len(self._not_held) < 100_000:
            self._not_held.add(url)
        return None

    def _record(self, page: Page, rendering: Rendering, crawl: Crawl) -> None:
        crawl.stats["browser.pages"] += 1
        if rendering.dom is None:
            crawl.stats["browser.failed"] += 1
        if rendering.over_memory:
            crawl.stats["browser.over_memory"] += 1
        if rendering.notes:
            crawl.stats["browser.notes"] += 1
            log.info("browser: %s: %s", page.url, "; ".join(rendering.notes))
        if crawl.crawl_log is not None:
            crawl.crawl_log.write(
                {
                    "url": page.url,
                    "outcome": "rendered" if rendering.dom is not None else "render_failed",
                    "reason": "; ".join(rendering.notes) or None,
                    "num_urls": len(rendering.links),
                    "requests": rendering.requests,
                    "elapsed": round(rendering.elapsed, 3),
                    "depth": page.depth,
                }
            )


async def _decoded(page: Page, crawl: Crawl) -> bytes:
    """A stored body with its Content-Encoding undone, as the browser must be given it
    (in a thread: inflating up to max_decoded_size must not hold the event loop)."""
    from archiver.api import decode_stored

    return (await decode_stored(page, crawl.config)).content
