"""The crawl loop: workers take URLs from the frontier, fetch them, and tell the plugins.

The shape is the 500 Lines crawler's: a fixed pool of workers, each `get -> fetch ->
done`, redirects followed by the crawler itself so that a chain reaching a URL already
seen stops there (coalesced).  What is new is around it: the frontier may be on disk or
shared, every exchange goes to the hooks, stopping is graceful, and a worker fetches in a
turn (`turns.Turns`, `max_tasks` of them) that it gives back once the response is in, so
the next request does not wait for the page to be parsed and archived.

Each job around the loop has a module of its own, which the loop calls:

* `politeness`: when a host may be asked next (the delay is decided there, in one function),
  and `gate`: the last check before a request is written (a pause holds at once);
* `retries`: retries and backoff, `Retry-After`;
* `admission`: which links join the frontier; `requisites`: the fetches plugins ask for;
* `crawl_limits`: time, bytes and disk; `live_control`: `archiver control`;
* `crawl_records`: the crawl log's line for each URL; `fetcher`: one exchange;
  `update`: the comparison with the stored copy (``crawl --update``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from . import control, history
from .admission import Admission
from .archive import save_config
from .config import Config
from .crawl_limits import CrawlLimits
from .crawl_records import url_record
from .crawllog import CrawlLog, logged_urls, write_report
from .credentials import stored_response_headers
from .errors import ArchiverError, FetchError, LoginError, ProxyFault, SeedError
from .fetcher import (
    GuardedResolver,
    default_headers,
    fetch,
    open_session,
    stored_page,
    without_validators,
)
from .frontier import Frontier, Item
from .gate import RequestGate, RequestHeld
from .guard import AddressGuard
from .identity import CrawlIdentity
from .live_control import LiveControl
from .login_check import LoginCheck
from .manager import Hooks
from .model import Crawl, Link, LinkKind, Page
from .politeness import HostLimiter
from .requisites import Requisites
from .retries import HeldBack, Outcome, Retries, WaitForHost
from .robots import ROBOTS_MAX_SIZE, RobotsCache
from .rules import Rules, robots_refusal
from .terminal import note
from .traps import TrapDetector
from .turns import Turn, Turns
from .update import compare_with_stored
from .urls import Scope, canonical_key, clean_url, site_of

log = logging.getLogger(__name__)

GRACE_SECONDS = 5.0
WORKERS_PER_TURN = 2
"""Workers per fetching turn (`turns.Turns`): while one processes its page, another fetches."""


class Crawler:
    """Crawls `config.roots` into `archive`, calling the plugins through `hooks`."""

    def __init__(
        self,
        config: Config,
        hooks: Hooks,
        frontier: Frontier,
        archive: Path,
        seed_requisites: Sequence[tuple[str, str]] | None = None,
    ) -> None:
        self.config = config
        self.hooks = hooks
        self.frontier = frontier
        self.archive = archive
        self.scope = Scope(config.roots, config.strict, config.include, config.exclude)
        self.limiter = HostLimiter(config)
        self.gate = RequestGate(self.limiter.held)
        """Closed by a pause or a stop, it lets no request that has not reached the network start."""
        self.traps = TrapDetector(config)
        self.guard = AddressGuard(config.roots, allow_all=config.allow_private_redirects)
        self.rules = Rules(config, self.scope, self.guard, self.traps, self._plugin_refusal)
        self.robots: RobotsCache | None = None
        self.log = CrawlLog(archive)
        self.crawl = Crawl(config=config, archive=archive, roots=tuple(config.roots))
        self.crawl.crawl_log = self.log
        self.identity = CrawlIdentity(config, archive)
        self.crawl.identity = self.identity
        self.scheduled = False
        """The frontier hands out only URLs of ready hosts (`Frontier.use_limiter`)."""
        self._stopping = asyncio.Event()
        self._busy: set[asyncio.Task[None]] = set()
        self._seed_failures = 0
        self._login = LoginCheck.of(config)
        self._login_failure: str | None = None
        """Why the crawl stopped as not logged in (`--expect-text`), if it did."""
        self._failed_roots: list[str] = []
        self.limits = CrawlLimits(self.crawl, archive, self._stopping)
        self.control = LiveControl(self)
        self.retries = Retries(self.crawl, self.limiter, self._send)
        self.admission = Admission(self.crawl, frontier, self.rules, self.traps, self.log, seed_requisites)
        self.requisites = Requisites(
            self.crawl, frontier, self.admission, self._process, self._follow_redirect
        )
        self.running = asyncio.Event()
        self.running.set()
        self._workers: list[asyncio.Task[None]] = []
        self._turns = Turns(config.max_tasks)
        """`max_tasks` workers fetch at once; the others process the pages fetched."""
        self._group: asyncio.TaskGroup | None = None
        self._retire = 0
        """Workers to end at their next turn (`archiver control tasks` lowered their number)."""
        self._fault: ArchiverError | None = None
        """The first fault that stopped the workers, raised once the pages in hand are archived."""
        self.patterns_added = False
        """An include or exclude pattern came while the crawl ran: URLs are checked again when taken."""

    # -- public -------------------------------------------------------------------------

    def stop(self, force: bool = False) -> None:
        """Stop taking new URLs; in-flight fetches get GRACE_SECONDS, then are cancelled.

        `force` cancels them now (a second Ctrl-C).
        """
        if force and self._stopping.is_set():
            log.info("stopping now: cancelling the fetches in flight")
            for task in list(self._busy):
                task.cancel()
        if not self._stopping.is_set():
            log.info("stopping: finishing in-flight fetches (up to %.0f s)", GRACE_SECONDS)
            self.crawl.interrupted = True
            self._stopping.set()

    async def run(self) -> Crawl:
        crawl = self.crawl
        use_limiter = getattr(self.frontier, "use_limiter", None)
        self.scheduled = bool(use_limiter(self.limiter)) if use_limiter is not None else False
        self.retries.scheduled = self.scheduled
        await self.frontier.open()
        self.log.open()
        counts = await self.frontier.counts()
        self.admission.added = counts.seen
        crawl.resumed = counts.seen > 0
        self._record_start()
        started = time.monotonic()
        limits = asyncio.create_task(self.limits.watch(started), name="archiver-limits")
        inbox = asyncio.create_task(self.control.watch(control.Inbox(self.archive)), name="archiver-control")
        try:
            self.identity.load(resumed=crawl.resumed)
            resolver = self._resolver = GuardedResolver(self.guard, self.identity.proxy_hosts())
            async with open_session(self.config, resolver, self.identity.jar) as session:
                self._session = session
                await self.guard.learn_roots(resolver.addresses)
                self.robots = self._make_robots()
                await self.hooks.crawl_started(crawl)
                if crawl.resumed:
                    await self._reconcile()
                await self.admission.seed()
                await self._run_workers()
        finally:
            limits.cancel()
            inbox.cancel()
            crawl.finished_at = datetime.now(UTC)
            roots_failed = bool(self._seed_failures) and crawl.stats["pages"] == 0
            if roots_failed:
                # no root answered: queued again, so the archive is resumable rather than complete
                await self.frontier.requeue(self._failed_roots)
            counts = await self.frontier.counts()
            exhausted = counts.queued == 0 and counts.in_flight == 0
            crawl.complete = not (crawl.interrupted or roots_failed) and exhausted
            waiting = {key: n for key, n in crawl.stats.items() if key.endswith(".pending") and n}
            crawl.pending_at_end = dict(waiting)
            finish_started = time.monotonic()
            self.identity.save()
            try:
                await self.hooks.crawl_finished(crawl)
            except BaseException:
                # a plugin's catch-up failed (a full disk): not complete, so the resume the
                # fault's message names catches up instead of finding nothing to do
                crawl.complete = False
                raise
            finally:
                if waiting:
                    # plugins catching up after the last page (the index): a stage of its own,
                    # counted from what each plugin had to do as it began (it may correct the
                    # figure of its last page in `pending_at_end`), as the progress display counts
                    at_end = crawl.pending_at_end
                    crawl.after_crawl = {
                        "seconds": round(time.monotonic() - finish_started, 3),
                        "caught_up": {
                            key.split(".", 1)[0]: max(at_end.get(key, n) - crawl.stats[key], 0)
                            for key, n in waiting.items()
                        },
                    }
                # each step runs even when one before it failed (a full disk fails them all)
                try:
                    await self.frontier.close()
                finally:
                    try:
                        if self.robots is not None:
                            self.robots.close()
                    finally:
                        self.log.close()
                        history.record_finish(
                            self.archive,
                            crawl.number,
                            crawl.finished_at,
                            complete=crawl.complete,
                            received=crawl.stats["bytes"],
                            seconds=time.monotonic() - started,
                        )
                        await write_report(crawl)
        if self._login_failure is not None:
            raise LoginError(self._login_failure)
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
        self.limits.earlier = run

    # -- what live control changes (`live_control`) -------------------------------------------

    def set_tasks(self, n: int) -> str:
        """`archiver control tasks N`: workers started, or retired at their next turn."""
        self._turns.set_limit(n)
        wanted = WORKERS_PER_TURN * n
        live = sum(not task.done() for task in self._workers) - self._retire
        if wanted > live:
            kept = min(self._retire, wanted - live)  # workers about to retire stay instead
            self._retire -= kept
            if self._group is not None:
                for _ in range(wanted - live - kept):
                    self._workers.append(self._group.create_task(self._work()))
        elif wanted < live:
            self._retire += live - wanted
        self.save(self.config.replace(max_tasks=n))
        return f"tasks {n} workers"

    def save(self, config: Config) -> None:
        """Keep a change in crawl.toml, so that a resume goes on with it."""
        self.config = self.crawl.config = config
        save_config(config, self.archive)

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
                new = await self.admission.add_links(links, item, page.url)
            if item.url not in logged:
                record = url_record(self.config, item, page, 1, len(links), new, None)
                record.reason = "archived before the previous run stopped; logged on resume"
                self.log.write(record)
        marked = await self.frontier.mark_done(found)
        crawl.stats["resume_from_warc"] += marked
        note(
            log,
            "resuming: %d URLs were in flight when the last run stopped: %d already archived"
            " (not fetched again), %d to fetch",
            len(recovered),
            marked,
            len(recovered) - marked,
        )
        return marked

    # -- workers ------------------------------------------------------------------------

    async def _run_workers(self) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                workers = WORKERS_PER_TURN * self.config.max_tasks
                self._workers = [group.create_task(self._work()) for _ in range(workers)]
                self._group = group
                watcher = group.create_task(self._watch_stop(self._workers))
                while True:  # `archiver control tasks` may add workers while they run
                    waiting = list(self._workers)
                    await asyncio.gather(*waiting, return_exceptions=True)
                    if len(self._workers) == len(waiting):
                        break
                self._group = None
                watcher.cancel()
            if self._fault is not None:
                raise self._fault
        finally:
            # only left when stopping (or another process holds their entries): in flight for a resume
            await self.requisites.cancel_all()

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
        """Take a turn, a URL, fetch it; give the turn back when the response is in, then
        process the page while another worker fetches.

        A fault that every worker shares (the frontier lost, the disk full) stops the crawl
        as Ctrl-C does, so the pages other workers already fetched are archived before it
        is raised."""
        try:
            await self._work_until_stopped()
        except ArchiverError as exc:
            if self._fault is None:
                self._fault = exc
            self.stop()

    async def _work_until_stopped(self) -> None:
        task = asyncio.current_task()
        assert task is not None
        while not self._stopping.is_set():
            await self.running.wait()
            if self._retire > 0:
                self._retire -= 1
                return
            await self._turns.take()
            turn = Turn(self._turns)
            try:
                item = await self.frontier.get()
                if item is None:
                    return
                self._busy.add(task)
                try:
                    if await self._not_yet(item):
                        continue
                    claim = self.requisites.claim_of(item)
                    if claim is None:
                        failed = await self._process(item, turn=turn)
                    else:
                        turn.end()  # the plugin's fetch of it is under way: nothing to fetch here
                        handled = await asyncio.shield(claim)
                        if handled is None:  # not fetched there after all
                            await self._turns.take()
                            turn = Turn(self._turns)
                            handled = await self._process(item, turn=turn)
                        failed = handled
                except WaitForHost as wait:
                    if await self.frontier.give_back(item, wait.item):
                        continue
                    failed = await self._process(wait.item, may_give_back=False, turn=turn)
                except HeldBack as held:
                    if await self.frontier.give_back(item, held.item):
                        continue
                    failed = await self._process_when_open(held.item, turn)
                finally:
                    self._busy.discard(task)
            finally:
                turn.end()
            await self.frontier.done(item, failed=failed)

    async def _process_when_open(self, item: Item, turn: Turn) -> bool:
        """`item` with a frontier that cannot take it back: fetched once the gate lets it through."""
        turn.end()
        while True:
            await self.running.wait()
            await self._turns.take()
            turn = Turn(self._turns)
            try:
                return await self._process(item, turn=turn)
            except HeldBack as held:
                item = held.item
                await asyncio.sleep(control.POLL_SECONDS)
            finally:
                turn.end()

    async def _not_yet(self, item: Item) -> bool:
        """Give `item` back to the frontier when its host's robots.txt was just fetched (the
        gap runs) or is unavailable for now (the host is paused): True if given back.

        Only with a scheduling frontier, which hands the URL out again when its host is
        ready, so no worker sleeps while other hosts have work.
        """
        if not self.scheduled or self.robots is None:
            return False
        try:
            fetched, settled = await self.robots.prepare(item.url)
        except RequestHeld:
            raise HeldBack(item) from None
        if settled and not (fetched and not self.limiter.may_start(item.url)):
            return False
        return await self.frontier.give_back(item)

    # -- one URL ------------------------------------------------------------------------

    def _fetched(self, item: Item, turn: Turn) -> None:
        """The worker's requests for `item` are over: its turn goes to another worker, and
        its host's slot to the host's next URL, while the page is processed."""
        if turn.ended:
            return
        if self.scheduled:
            self.limiter.fetched(site_of(item.url))
        turn.end()

    async def _send(self, item: Item) -> Page:
        """One request for `item`, with the headers of now (credentials may have changed)."""
        return await self._fetch(item, self._headers(item.url), self.config)

    def _headers(self, url: str) -> dict[str, str]:
        """The headers of a request to `url`: the defaults, the host's own (credentials), the plugins'."""
        headers = default_headers(self.config)
        headers.update(self.identity.headers_for(url))
        self.hooks.prepare_request(url, headers, self.crawl)
        return headers

    async def _fetch(self, item: Item, headers: dict[str, str], config: Config) -> Page:
        """One exchange through the crawl's jar and proxy; its request headers as the archive keeps them."""
        proxy = self.identity.proxy_for(item.url)
        if proxy is not None:
            await self._resolver.check_target(item.url)
        try:
            with self.gate.request(item.url):
                page = await fetch(self._session, item, headers, config, proxy)
        except FetchError as exc:
            if exc.kind == "proxy":
                command = f"archiver crawl --{'update' if self.crawl.mode == 'update' else 'resume'}"
                when = (
                    "once it answers"
                    if exc.message.startswith("cannot reach")
                    else "with the proxy's login right (--proxy http://USER:PASSWORD@HOST:PORT)"
                )
                raise ProxyFault(
                    f"{exc.message}: the crawl stopped; run `{command} {self.archive}` {when}"
                ) from None
            raise
        self.identity.seen(page.headers)
        if self.config.redact_credentials:
            page = dataclasses.replace(
                page,
                request_headers=self.identity.stored(page.request_headers),
                headers=stored_response_headers(page.headers),
            )
        return page

    async def _fetch_in_full(self, item: Item) -> Page:
        """`item` asked again without validators (``crawl --update``: its stored copy is unreadable)."""
        headers = self._headers(item.url)
        async with self.limiter.slot(item.url):
            return await self._fetch(item, without_validators(headers), self.config)

    def _make_robots(self) -> RobotsCache | None:
        if not self.config.robots:
            return None
        # a byte past the cap tells whether the last line within it is whole
        config = self.config.replace(max_body_size=min(self.config.max_body_size, ROBOTS_MAX_SIZE + 1))

        async def fetch_one(url: str) -> Page:
            return await self._fetch(Item(url, 0, 0, None, LinkKind.REQUISITE), self._headers(url), config)

        async def on_fetched(page: Page) -> None:
            # robots.txt is archived like a page, and its links (Sitemap: lines) are followed.
            self.crawl.stats["robots_fetched"] += 1
            links = self._extract(page) if 200 <= page.status < 300 else []
            await self.hooks.page_fetched(page, links, self.crawl)
            if links:
                origin = Item(page.url, 0, self.config.max_redirect, None, LinkKind.PAGE)
                await self.admission.add_links(links, origin, page.url)

        return RobotsCache(self.config, self.limiter, fetch_one, on_fetched, self.archive, self.log.write)

    async def _process(
        self,
        item: Item,
        kept: list[Outcome] | None = None,
        *,
        may_give_back: bool = True,
        turn: Turn | None = None,
    ) -> bool:
        """Fetch one item and hand it on; True when it failed for good.  `kept` receives the
        outcome; the worker's `turn` ends once nothing more is fetched for the item."""
        if self.patterns_added:
            # queued before a pattern came (in memory, or by another process of a shared crawl)
            refused = self.scope.pattern_verdict(item.url, requisite=self.rules.admits_requisite(item.kind))
            if refused is not None:
                self.skip(item.url, f"{refused} (added by archiver control)", item.referrer, item.depth)
                return False
        if self.robots is not None:
            try:
                verdict = await self.robots.check(item.url)
            except RequestHeld:
                raise HeldBack(item) from None
            if verdict.unreachable and _is_root(item):
                # no answer from the host at all: the root failed, robots.txt refused nothing
                error = FetchError(item.url, verdict.reason or "host unreachable", kind="network")
                return await self._failed(item, Outcome(None, error, self.config.max_tries))
            refused = robots_refusal(verdict.allowed, verdict.reason)
            if refused is not None:
                self.skip(item.url, refused, item.referrer, item.depth)
                return False
        outcome = await self.retries.fetch(item, may_give_back=may_give_back and kept is None)
        if turn is not None and self.crawl.mode != "update":
            self._fetched(item, turn)
        if kept is not None:
            kept.append(outcome)
        stats = self.crawl.stats
        if outcome.page is None:
            return await self._failed(item, outcome)

        page, stored = outcome.page, None
        if self.crawl.mode == "update":
            refetch = functools.partial(self._fetch_in_full, item)
            try:
                page, stored = await compare_with_stored(page, item, self.hooks, self.crawl, refetch)
            except RequestHeld:
                raise HeldBack(item) from None
            stats["not_modified"] += stored is not None
        if turn is not None:
            self._fetched(item, turn)
        stats["pages"] += 1
        self.limits.count_bytes(len(page.body))
        stats[f"status_{page.status // 100}xx"] += 1
        if page.truncated:
            stats[f"truncated_{page.truncated}"] += 1
        if page.decode_error:
            stats["not_parsed"] += 1
        source = stored or page  # a 304's links are the stored page's
        links = [] if source.is_redirect else self._extract(source)
        await self.hooks.page_fetched(page, links, self.crawl)
        if item.depth == 0 and item.kind is LinkKind.PAGE and self._logged_out(item, source):
            self.log.write(url_record(self.config, item, page, outcome.tries, len(links), 0, None))
            return False
        if source.is_redirect:
            stats["redirects"] += 1
            # the plugin that asked for a requisite asks for its redirect target too
            new = 0 if kept is not None else await self._follow_redirect(item, source)
        else:
            if stored is None:
                fetch = functools.partial(self.requisites.fetch, item)
                links.extend(await self.hooks.discover_links(page, tuple(links), fetch, self.crawl))
            new = await self.admission.add_links(links, item, page.url)
        self.log.write(url_record(self.config, item, page, outcome.tries, len(links), new, None))
        return False

    def _logged_out(self, item: Item, page: Page) -> bool:
        """A root, or where its redirects led: warn when it looks logged out, and stop the crawl
        (its links not followed) when it lacks `--expect-text`."""
        if _is_root(item):
            warning = self._login.root_warning(page)
            if warning is not None:
                log.warning("%s", warning)
        failure = self._login.landing_failure(page)
        if failure is None:
            return False
        if self._login_failure is None:
            self._login_failure = failure
            self._stopping.set()
        return True

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
        self.log.write(url_record(self.config, item, None, outcome.tries, 0, 0, error.message))
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
            self.skip(page.redirect_to or "", "redirect to a non-http(s) URL", item.url, item.depth)
            return 0
        if item.redirects_left <= 0:
            log.warning("redirect limit reached for %s", item.url)
            self.crawl.stats["redirect_limit"] += 1
            self.skip(target, "redirect limit reached", item.url, item.depth)
            return 0
        if _is_root(item) and not self.scope.host_allows(target):
            self.scope.add_site(target)
        next_item = Item(target, item.depth, item.redirects_left - 1, item.url, item.kind)
        if self._redirected_back(item, page, target):
            # A cookie wall or a login hand-off: the URL that sent us here answered with a
            # redirect, and may now answer with its page, the cookie set on the way.
            self.crawl.stats["redirects_back"] += 1
            await self._process(next_item)
            return 0
        return await self.admission.add([next_item], coalesce=True)

    def _redirected_back(self, item: Item, page: Page, target: str) -> bool:
        """Whether `page` set a cookie and sends the crawl back to the URL whose redirect led to it."""
        return (
            self.config.cookies
            and page.header("Set-Cookie") is not None
            and item.referrer is not None
            and item.redirects_left < self.config.max_redirect
            and canonical_key(target) == canonical_key(item.referrer)
            and self.admission.refusal(Item(target, item.depth, 0, item.url, item.kind)) is None
        )

    def _plugin_refusal(self, url: str, referrer: str | None) -> str | None:
        if self.hooks.accept_url(url, referrer, self.crawl) is False:
            name = self.hooks.url_refused_by(url, referrer, self.crawl) or "a plugin"
            return f"refused by plugin {name} (accept_url)"
        return None

    def skip(self, url: str, reason: str, referrer: str | None, depth: int) -> None:
        self.admission.skip(url, reason, referrer, depth)


def _is_root(item: Item) -> bool:
    return item.depth == 0 and item.referrer is None
