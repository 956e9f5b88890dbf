"""The crawl loop: workers take URLs from the frontier, fetch them, and tell the plugins.

The shape is the 500 Lines crawler's: a fixed pool of workers, each `get -> fetch ->
done`, redirects followed by the crawler itself so that a chain reaching a URL already
seen stops there (coalesced).  What is new is around it: the frontier may be on disk or
shared, every exchange goes to the hooks, and stopping is graceful.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import logging
import random
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from . import history
from .config import Config
from .crawllog import CrawlLog, UrlRecord, logged_urls, write_report
from .errors import FetchError, SeedError
from .fetcher import (
    RETRYABLE_KINDS,
    GuardedResolver,
    compare_with_stored,
    default_headers,
    fetch,
    open_session,
    stored_page,
)
from .frontier import Frontier, Item
from .guard import AddressGuard
from .manager import Hooks
from .model import Crawl, Link, LinkKind, Page
from .politeness import RETRY_STATUSES, HostLimiter, retry_after_seconds
from .robots import ROBOTS_MAX_SIZE, RobotsCache
from .rules import Rules, reason_kind, robots_refusal
from .traps import TrapDetector
from .urls import Scope, canonical_key, clean_url

log = logging.getLogger(__name__)

GRACE_SECONDS = 5.0
_SKIP_LOG_MEMORY = 200_000
_KNOWN_LINKS_MEMORY = 100_000


class _WaitForHost(Exception):
    """The host asked to come back later: `item` (tries counted) waits in the frontier, not in a worker."""

    def __init__(self, item: Item) -> None:
        super().__init__(item.url)
        self.item = item


@dataclass(frozen=True, slots=True)
class Outcome:
    page: Page | None
    error: FetchError | None
    tries: int


class Crawler:
    """Crawls `config.roots` into `archive`, calling the plugins through `hooks`."""

    def __init__(self, config: Config, hooks: Hooks, frontier: Frontier, archive: Path) -> None:
        self.config = config
        self.hooks = hooks
        self.frontier = frontier
        self.archive = archive
        self.scope = Scope(config.roots, config.strict, config.include, config.exclude)
        self.limiter = HostLimiter(config)
        self.traps = TrapDetector(config)
        self.guard = AddressGuard(config.roots, allow_all=config.allow_private_redirects)
        self.rules = Rules(config, self.scope, self.guard, self.traps, self._plugin_refusal)
        self.robots: RobotsCache | None = None
        self.log = CrawlLog(archive)
        self.crawl = Crawl(config=config, archive=archive, roots=tuple(config.roots))
        self.crawl.crawl_log = self.log
        self.scheduled = False
        """The frontier hands out only URLs of ready hosts (`Frontier.use_limiter`)."""
        self._added = 0
        self._stopping = asyncio.Event()
        self._busy: set[asyncio.Task[None]] = set()
        self._skipped_logged: set[str] = set()
        self._known_links: dict[str, None] = {}
        """Links already handed to the frontier or refused, in insertion order: most links of a
        page were on the pages before it, and this skips their parsing, canonicalization and
        scope checks.  Bounded (oldest half dropped); the frontier stays the judge of "seen"."""
        self._seed_failures = 0
        self._requisites: dict[str, asyncio.Future[Page | None] | None] = {}
        """Keys fetched through `discover_links`' `fetch`: a future while in flight, then None
        (bounded like `_known_links`).  Their frontier entries are `_claimed`: a worker that
        takes one has nothing left to do."""
        self._claimed: set[str] = set()
        self._failed_roots: list[str] = []

    # -- public -------------------------------------------------------------------------

    def stop(self, force: bool = False) -> None:
        """Stop taking new URLs; in-flight fetches get GRACE_SECONDS, then are cancelled.

        `force` cancels them now (a second Ctrl-C).
        """
        if force and self._stopping.is_set():
            log.warning("second interrupt: cancelling now")
            for task in list(self._busy):
                task.cancel()
        if not self._stopping.is_set():
            log.warning("stopping: finishing in-flight fetches (up to %.0f s)", GRACE_SECONDS)
            self.crawl.interrupted = True
            self._stopping.set()

    async def run(self) -> Crawl:
        crawl = self.crawl
        use_limiter = getattr(self.frontier, "use_limiter", None)
        self.scheduled = bool(use_limiter(self.limiter)) if use_limiter is not None else False
        await self.frontier.open()
        self.log.open()
        counts = await self.frontier.counts()
        self._added = counts.seen
        crawl.resumed = counts.seen > 0
        self._record_start()
        try:
            resolver = GuardedResolver(self.guard)
            async with open_session(self.config, resolver) as session:
                self._session = session
                await self.guard.learn_roots(resolver.addresses)
                self.robots = self._make_robots()
                await self.hooks.crawl_started(crawl)
                if crawl.resumed:
                    await self._reconcile()
                await self._seed()
                await self._run_workers()
        finally:
            crawl.finished_at = datetime.now(UTC)
            roots_failed = bool(self._seed_failures) and crawl.stats["pages"] == 0
            if roots_failed:
                # no root answered: queued again, so the archive is resumable rather than complete
                await self.frontier.requeue(self._failed_roots)
            counts = await self.frontier.counts()
            exhausted = counts.queued == 0 and counts.in_flight == 0
            crawl.complete = not (crawl.interrupted or roots_failed) and exhausted
            waiting = {key: n for key, n in crawl.stats.items() if key.endswith(".pending") and n}
            crawl.pending_at_end = waiting
            finish_started = time.monotonic()
            try:
                await self.hooks.crawl_finished(crawl)
            finally:
                if waiting:
                    # plugins catching up after the last page (the index): a stage of its own
                    crawl.after_crawl = {
                        "seconds": round(time.monotonic() - finish_started, 3),
                        "caught_up": {
                            key.split(".", 1)[0]: n - crawl.stats[key] for key, n in waiting.items()
                        },
                    }
                await self.frontier.close()
                if self.robots is not None:
                    self.robots.close()
                self.log.close()
                history.record_finish(self.archive, crawl.number, crawl.finished_at, complete=crawl.complete)
                await write_report(crawl)
        if self._seed_failures and crawl.stats["pages"] == 0:
            raise SeedError(f"no root URL could be fetched: {crawl.seed_error or 'unknown error'}")
        return crawl

    def _record_start(self) -> None:
        """Number this crawl in the archive's history; a resumed crawl keeps its number and mode."""
        crawl = self.crawl
        if crawl.resumed:
            run = history.record_resume(self.archive, crawl.started_at)
        else:
            run = history.record_start(self.archive, crawl.mode, crawl.started_at)
        crawl.number, crawl.mode = run.number, run.mode

    async def _reconcile(self) -> int:
        """Mark done the URLs in flight when the last run stopped whose responses are archived whole.

        They were killed between the WARC write and the frontier's "done": the links of the
        stored response are queued as the lost run would have queued them (and the crawl-log
        line the crash lost is written), so nothing is fetched twice and nothing is missed.
        The others are fetched again.
        """
        recovered = {r.key: r for r in self.frontier.recovered}
        if not recovered:
            return 0
        crawl = self.crawl
        crawl.stats["resume_in_flight"] += len(recovered)
        since = min(r.taken_at for r in recovered.values())
        found: dict[str, Page] = {}
        for stored in await self.hooks.archived_pages([r.item.url for r in recovered.values()], since, crawl):
            key = canonical_key(stored.url)
            if key in recovered and key not in found:
                found[key] = stored
        logged = await asyncio.to_thread(logged_urls, self.log.path, {recovered[k].item.url for k in found})
        for key, stored in found.items():
            item = recovered[key].item
            page = await stored_page(stored, item, self.config)
            links = [] if page.is_redirect else self._extract(page)
            if page.is_redirect:
                new = await self._follow_redirect(item, page)
            else:
                new = await self._add_links(links, item, page.url)
            if item.url not in logged:
                record = self._record(item, page, 1, len(links), new, None)
                record.reason = "archived before the previous run stopped; logged on resume"
                self.log.write(record)
        marked = await self.frontier.mark_done(found)
        crawl.stats["resume_from_warc"] += marked
        log.warning(
            "resuming: %d URLs were in flight; %d already archived (not fetched again), %d fetched again",
            len(recovered),
            marked,
            len(recovered) - marked,
        )
        return marked

    # -- workers ------------------------------------------------------------------------

    async def _run_workers(self) -> None:
        async with asyncio.TaskGroup() as group:
            workers = [group.create_task(self._work()) for _ in range(self.config.max_tasks)]
            watcher = group.create_task(self._watch_stop(workers))
            await asyncio.gather(*workers, return_exceptions=True)
            watcher.cancel()

    async def _watch_stop(self, workers: list[asyncio.Task[None]]) -> None:
        await self._stopping.wait()
        for task in workers:
            if task not in self._busy:
                task.cancel()
        busy = [task for task in workers if task in self._busy]
        if busy:
            await asyncio.wait(busy, timeout=GRACE_SECONDS)
        for task in workers:
            task.cancel()

    async def _work(self) -> None:
        task = asyncio.current_task()
        assert task is not None
        while not self._stopping.is_set():
            item = await self.frontier.get()
            if item is None:
                return
            self._busy.add(task)
            try:
                if await self._not_yet(item):
                    continue
                failed = False if self._claimed and self._was_claimed(item) else await self._process(item)
            except _WaitForHost as wait:
                if await self.frontier.give_back(item, wait.item):
                    continue
                failed = await self._process(wait.item, may_give_back=False)  # a frontier that cannot
            finally:
                self._busy.discard(task)
            await self.frontier.done(item, failed=failed)

    async def _not_yet(self, item: Item) -> bool:
        """Give `item` back to the frontier when its host's robots.txt was just fetched (the
        gap runs) or is unavailable for now (the host is paused): True if given back.

        Only with a scheduling frontier, which hands the URL out again when its host is
        ready, so no worker sleeps while other hosts have work.
        """
        if not self.scheduled or self.robots is None:
            return False
        fetched, settled = await self.robots.prepare(item.url)
        if settled and not (fetched and not self.limiter.may_start(item.url)):
            return False
        return await self.frontier.give_back(item)

    # -- one URL ------------------------------------------------------------------------

    async def _fetch_with_retries(self, item: Item, *, may_give_back: bool = False) -> Outcome:
        """Fetch `item`, retried as the settings say; raises `_WaitForHost` when the host
        paused itself and `may_give_back` (the URL waits in the frontier, the worker goes on)."""
        error: FetchError | None = None
        for attempt in range(item.tries + 1, self.config.max_tries + 1):
            headers = default_headers(self.config)
            self.hooks.prepare_request(item.url, headers, self.crawl)
            try:
                async with self.limiter.slot(item.url):
                    page = await fetch(self._session, item, headers, self.config)
                self.limiter.observe(item.url, page.elapsed, page.status)
                if not self._retry_later(page, attempt):
                    return Outcome(page, None, attempt)
                self.crawl.stats["retries"] += 1
                if may_give_back and self.scheduled:
                    raise _WaitForHost(dataclasses.replace(item, tries=attempt))
                continue
            except FetchError as exc:
                error = exc
                error.attempts = attempt
                if exc.kind not in RETRYABLE_KINDS or attempt == self.config.max_tries:
                    break
                self.crawl.stats["retries"] += 1
                backoff = self.config.retry_backoff * 2 ** (attempt - 1)
                await asyncio.sleep(backoff * random.uniform(0.5, 1.5))
        return Outcome(None, error, self.config.max_tries if error is None else error.attempts)

    def _retry_later(self, page: Page, attempt: int) -> bool:
        """True when the server asked to come back (429/503) or cut the body, and tries remain.

        Retry-After (seconds or a date, capped by `retry_after_max`) pauses the whole
        host, since it is the host that asked for it.
        """
        if attempt >= self.config.max_tries:
            return False
        backoff = self.config.retry_backoff * 2 ** (attempt - 1)
        if page.status in RETRY_STATUSES:
            told = retry_after_seconds(page.header("Retry-After"))
            wait = min(backoff if told is None else told, self.config.retry_after_max)
            self.crawl.stats[f"retry_status_{page.status}"] += 1
            log.info("%s answered %d: retrying in %.1f s", page.url, page.status, wait)
            self.limiter.pause(page.url, wait)
            return True
        if page.truncated == "disconnect":
            self.limiter.pause(page.url, backoff)
            return True
        return False

    def _make_robots(self) -> RobotsCache | None:
        if not self.config.robots:
            return None
        # a byte past the cap tells whether the last line within it is whole
        config = self.config.replace(max_body_size=min(self.config.max_body_size, ROBOTS_MAX_SIZE + 1))

        async def fetch_one(url: str) -> Page:
            headers = default_headers(self.config)
            self.hooks.prepare_request(url, headers, self.crawl)
            return await fetch(self._session, Item(url, 0, 0, None, LinkKind.REQUISITE), headers, config)

        async def on_fetched(page: Page) -> None:
            # robots.txt is archived like a page, and its links (Sitemap: lines) are followed.
            self.crawl.stats["robots_fetched"] += 1
            links = self._extract(page) if 200 <= page.status < 300 else []
            await self.hooks.page_fetched(page, links, self.crawl)
            if links:
                origin = Item(page.url, 0, self.config.max_redirect, None, LinkKind.PAGE)
                await self._add_links(links, origin, page.url)

        return RobotsCache(self.config, self.limiter, fetch_one, on_fetched, self.archive, self.log.write)

    async def _process(
        self, item: Item, kept: list[Outcome] | None = None, *, may_give_back: bool = True
    ) -> bool:
        """Fetch one item and hand it on; True when it failed for good.  `kept` receives the outcome."""
        if self.robots is not None:
            verdict = await self.robots.check(item.url)
            if verdict.unreachable and _is_root(item):
                # no answer from the host at all: the root failed, robots.txt refused nothing
                error = FetchError(item.url, verdict.reason or "host unreachable", kind="network")
                return await self._failed(item, Outcome(None, error, self.config.max_tries))
            refused = robots_refusal(verdict.allowed, verdict.reason)
            if refused is not None:
                self._skip(item.url, refused, item.referrer, item.depth)
                return False
        outcome = await self._fetch_with_retries(item, may_give_back=may_give_back and kept is None)
        if kept is not None:
            kept.append(outcome)
        stats = self.crawl.stats
        if outcome.page is None:
            return await self._failed(item, outcome)

        page, stored = outcome.page, None
        if self.crawl.mode == "update":
            page, stored = await compare_with_stored(page, item, self.hooks, self.crawl)
            stats["not_modified"] += stored is not None
        stats["pages"] += 1
        stats["bytes"] += len(page.body)
        stats[f"status_{page.status // 100}xx"] += 1
        if page.truncated:
            stats[f"truncated_{page.truncated}"] += 1
        if page.decode_error:
            stats["not_parsed"] += 1
        source = stored or page  # a 304's links are the stored page's
        links = [] if source.is_redirect else self._extract(source)
        await self.hooks.page_fetched(page, links, self.crawl)
        if source.is_redirect:
            stats["redirects"] += 1
            # the plugin that asked for a requisite asks for its redirect target too
            new = 0 if kept is not None else await self._follow_redirect(item, source)
        else:
            if stored is None:
                fetch = functools.partial(self._fetch_requisite, item)
                links.extend(await self.hooks.discover_links(page, tuple(links), fetch, self.crawl))
            new = await self._add_links(links, item, page.url)
        self.log.write(self._record(item, page, outcome.tries, len(links), new, None))
        return False

    async def _fetch_requisite(self, parent: Item, url: str) -> Page | None:
        """`discover_links`' `fetch`: `url` fetched now as a requisite of `parent`, at most once."""
        cleaned = clean_url(url)
        if cleaned is None:
            raise FetchError(url, "not an http(s) URL", kind="refused")
        item = Item(cleaned, parent.depth + 1, self.config.max_redirect, parent.url, LinkKind.REQUISITE)
        key = canonical_key(cleaned)
        if key in self._requisites:
            pending = self._requisites[key]
            return None if pending is None else await asyncio.shield(pending)
        reason = self._refusal(item)
        if reason is not None:
            self._skip(cleaned, reason, parent.url, item.depth)
            raise FetchError(cleaned, reason, kind="refused")
        if self.config.max_pages and self._added >= self.config.max_pages:
            self.crawl.stats["limit_max_pages"] += 1
            raise FetchError(cleaned, f"max_pages {self.config.max_pages} reached", kind="limit")
        if not (await self.frontier.add([(key, item)]))[0]:
            return None
        self._added += 1
        pending = self._requisites[key] = asyncio.get_running_loop().create_future()
        self._claimed.add(key)
        outcomes: list[Outcome] = []
        try:
            await self._process(item, outcomes)
        finally:
            page = outcomes[0].page if outcomes else None
            pending.set_result(page)
            self._requisites[key] = None
            if not outcomes:  # cancelled before any answer: a worker fetches it in its turn
                self._claimed.discard(key)
                del self._requisites[key]
            if len(self._requisites) > _KNOWN_LINKS_MEMORY:
                for old in list(itertools.islice(self._requisites, len(self._requisites) // 2)):
                    if self._requisites[old] is None:
                        del self._requisites[old]
        if page is None:
            error = outcomes[0].error if outcomes else None
            raise error or FetchError(cleaned, "refused by robots.txt", kind="refused")
        return page

    def _was_claimed(self, item: Item) -> bool:
        key = canonical_key(item.url)
        if key in self._claimed:
            self._claimed.discard(key)
            return True
        return False

    async def _failed(self, item: Item, outcome: Outcome) -> bool:
        error = outcome.error
        assert error is not None
        stats = self.crawl.stats
        stats["failed"] += 1
        stats[f"error_{error.kind}"] += 1
        if _is_root(item):
            self._seed_failures += 1
            self._failed_roots.append(canonical_key(item.url))
            self.crawl.seed_error = self.crawl.seed_error or str(error)
        log.info("failed %s after %d tries: %s", item.url, outcome.tries, error.message)
        await self.hooks.fetch_failed(item.url, error, self.crawl)
        self.log.write(self._record(item, None, outcome.tries, 0, 0, error.message))
        return True

    def _extract(self, page: Page) -> list[Link]:
        if page.decode_error:
            log.info("not parsed %s: %s", page.url, page.decode_error)
            return []
        cap = self.config.max_links_per_page
        links: list[Link] = []
        for link in self.hooks.extract_links(page, self.crawl):
            links.append(link)
            if cap and len(links) >= cap:
                self.crawl.stats["limit_links_per_page"] += 1
                log.info("link cap %d reached on %s", cap, page.url)
                break
        return links

    async def _follow_redirect(self, item: Item, page: Page) -> int:
        target = clean_url(page.redirect_to or "")
        if target is None:
            self._skip(page.redirect_to or "", "redirect to a non-http(s) URL", item.url, item.depth)
            return 0
        if item.redirects_left <= 0:
            log.warning("redirect limit reached for %s", item.url)
            self.crawl.stats["redirect_limit"] += 1
            self._skip(target, "redirect limit reached", item.url, item.depth)
            return 0
        if _is_root(item) and not self.scope.host_allows(target):
            self.scope.add_site(target)
        next_item = Item(target, item.depth, item.redirects_left - 1, item.url, item.kind)
        return await self._add([next_item], coalesce=True)

    async def _add_links(self, links: Iterable[Link], item: Item, referrer: str) -> int:
        if item.kind is not LinkKind.PAGE:
            links = [link for link in links if link.kind is not LinkKind.PAGE]
        candidates = []
        known = self._known_links
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
                self._skip(url, refused, referrer, depth)
                continue
            known[memo] = None
            candidates.append(Item(url, depth, self.config.max_redirect, referrer, link.kind))
        if len(known) > _KNOWN_LINKS_MEMORY:
            for memo in list(itertools.islice(known, len(known) // 2)):
                del known[memo]
        return await self._add(candidates)

    async def _add(self, items: list[Item], *, coalesce: bool = False) -> int:
        """Queue the items that pass scope, limits and plugins; returns how many were new."""
        entries: list[tuple[str, Item]] = []
        keys: set[str] = set()
        for item in items:
            reason = self._refusal(item)
            if reason is not None:
                self._skip(item.url, reason, item.referrer, item.depth)
                continue
            key = canonical_key(item.url)
            if key in keys:
                continue
            keys.add(key)
            entries.append((key, item))
        if not entries:
            return 0
        budget = self.config.max_pages - self._added if self.config.max_pages else len(entries)
        added = await self.frontier.add(entries[: max(budget, 0)])
        for (_key, queued), is_new in zip(entries, added, strict=False):
            if is_new:
                self.traps.admitted(queued.url)
        new = sum(added)
        self._added += new
        if coalesce and not new:
            log.debug("redirect to %s coalesced: already seen", entries[0][1].url)
            self.crawl.stats["redirects_coalesced"] += 1
        if budget < len(entries):
            self.crawl.stats["limit_max_pages"] += len(entries) - max(budget, 0)
        return new

    def _refusal(self, item: Item) -> str | None:
        """Why `item` may not join the frontier, or None: the `queue` rules of `rules.Rules`."""
        return self.rules.refusal(item.url, item.depth, item.kind, item.referrer)

    def _plugin_refusal(self, url: str, referrer: str | None) -> str | None:
        if self.hooks.accept_url(url, referrer, self.crawl) is False:
            name = self.hooks.url_refused_by(url, referrer, self.crawl) or "a plugin"
            return f"refused by plugin {name} (accept_url)"
        return None

    def _skip(self, url: str, reason: str, referrer: str | None, depth: int) -> None:
        self.crawl.stats[f"skipped_{reason_kind(reason)}"] += 1
        if url in self._skipped_logged:
            return
        if len(self._skipped_logged) < _SKIP_LOG_MEMORY:
            self._skipped_logged.add(url)
        self.log.skipped(url, reason, referrer, depth)

    # -- seeds and records --------------------------------------------------------------

    async def _seed(self) -> None:
        roots = []
        for root in self.config.roots:
            url = clean_url(root)
            if url is None:
                continue
            roots.append(Item(url, 0, self.config.max_redirect, None, LinkKind.PAGE))
        await self._add(roots)

    def _record(
        self,
        item: Item,
        page: Page | None,
        tries: int,
        num_urls: int,
        num_new: int,
        error: str | None,
    ) -> UrlRecord:
        return UrlRecord(
            url=item.url,
            status=page.status if page else None,
            next_url=page.redirect_to if page else None,
            content_type=page.content_type or None if page else None,
            encoding=page.encoding if page else None,
            num_urls=num_urls,
            num_new_urls=num_new,
            tries=tries,
            error=error,
            depth=item.depth,
            bytes=len(page.body) if page else 0,
            elapsed=round(page.elapsed, 4) if page else 0.0,
            kind=str(item.kind),
            truncated=page.truncated if page else None,
            outcome=("not_modified" if page.unchanged and page.status == 304 else "fetched")
            if page
            else "failed",
            reason=limit_reason(page, tries, num_urls, self.config) if page else None,
        )


def _is_root(item: Item) -> bool:
    return item.depth == 0 and item.referrer is None


def limit_reason(page: Page, tries: int, num_urls: int, config: Config) -> str | None:
    """The limits that shaped this capture, in words, for the crawl log."""
    reasons = []
    if page.truncated == "length":
        reasons.append(f"body cut at max_body_size = {config.max_body_size} bytes")
    elif page.truncated == "time":
        reasons.append(
            f"body cut: over timeout = {config.timeout:g} s or under min_rate = {config.min_rate} B/s"
        )
    elif page.truncated == "disconnect":
        reasons.append(f"connection lost mid-body, partial body kept after {tries} tries")
    if page.decode_error:
        reasons.append(f"not parsed: {page.decode_error}")
    if num_urls >= config.max_links_per_page:
        reasons.append(f"only the first {config.max_links_per_page} links taken (max_links_per_page)")
    if page.status in RETRY_STATUSES:
        reasons.append(f"HTTP {page.status} after {tries} tries (Retry-After honoured)")
    return "; ".join(reasons) or None
