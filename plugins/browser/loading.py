"""Loading one page in headless Chromium, every request answered by the crawl.

The page gets a browser context of its own (no storage shared, a crash stays in one
tab), started with the crawl's cookies so that its scripts see the login the crawl has;
the cookies its scripts set go back to the crawl's jar before each request the page
makes, and when it is done.  Every request it makes is intercepted and answered with `route.fulfill`
from `Resolver.answer`, which asks the crawl (politeness, limits, address guard, WARC
records) or the cache; nothing reaches the network from Chromium itself, and a proxy
that goes nowhere catches whatever interception would not see.  Then: wait for the
network to go quiet, scroll to the bottom to trigger lazy loading, take the links from
the rendered DOM (and the URLs given to ``history.pushState``), the DOM itself and a
screenshot.  Every wait has a cap; what went wrong is noted, never raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urldefrag

from archiver.api import SharedIdentity

from .cache import Answer
from .memory import POLL_SECONDS, MemoryWatchdog, js_flags
from .screenshots import page_png
from .settings import BrowserSettings

log = logging.getLogger("archiver.browser")

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--dns-prefetch-disable",
    "--mute-audio",
    # WebRTC's STUN/TURN packets go past interception and the proxy to wherever a page
    # says; this policy (checked with a UDP listener) leaves it no UDP and the dead proxy.
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    # Requests are answered by interception; anything it misses meets a closed port.
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
]

VIEWPORT = {"width": 1280, "height": 800}
IDLE_AFTER_SCROLL = 2.0
FINISH_SECONDS = 3.0
"""Of `page_timeout`, what is kept for the DOM, the links and the screenshot after the wait for
the page's own requests."""
QUIET_SECONDS = 0.5
"""The network is quiet once no request of the page was pending for this long."""
CLOSE_TIMEOUT = 10.0
MAX_DOM_LINKS = 10_000
MAX_DOM_CHARS = 64 * 1024 * 1024

_DROPPED_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection"})

HISTORY_SCRIPT = """
(() => {
  const seen = [];
  const popups = [];
  Object.defineProperty(window, '__archiverStates', {value: seen});
  Object.defineProperty(window, '__archiverPopups', {value: popups});
  window.open = function (url) {
    if (popups.length < 100) popups.push(String(url));
    return null;
  };
  for (const name of ['pushState', 'replaceState']) {
    const original = history[name];
    history[name] = function (state, title, url) {
      if (url !== undefined && url !== null && seen.length < 1000) {
        try { seen.push(new URL(String(url), document.baseURI).href); } catch (e) {}
      }
      return original.apply(this, arguments);
    };
  }
})();
"""

SCROLL_SCRIPT = """
async (rounds) => {
  // two frames (lazy loading by IntersectionObserver answers in one), then a margin for scroll handlers
  const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
  const pause = async () => {
    await frame();
    await frame();
    await new Promise((resolve) => setTimeout(resolve, 100));
  };
  for (let i = 0; i < rounds; i++) {
    const root = document.scrollingElement || document.documentElement;
    const height = root.scrollHeight;
    window.scrollTo(0, height);
    await pause();
    if (root.scrollHeight <= height && window.innerHeight + window.scrollY >= root.scrollHeight - 2) break;
  }
  window.scrollTo(0, 0);
}
"""

LINKS_SCRIPT = """
(limit) => {
  const found = new Set();
  for (const element of document.querySelectorAll('a[href], area[href]')) {
    if (typeof element.href === 'string') found.add(element.href);
    if (found.size >= limit) break;
  }
  for (const url of (window.__archiverStates || [])) found.add(url);
  found.add(location.href);
  const links = [...found].filter((url) => url.startsWith('http:') || url.startsWith('https:'));
  return [links, window.__archiverPopups || []];
}
"""
"""The page's links and the pop-ups it tried to open, in one round trip."""


class ResolverRefused(Exception):
    """The crawl will not give this URL to the page (refused, failed, or not held)."""

    def __init__(self, reason: str, *, blocked: bool = False) -> None:
        super().__init__(reason)
        self.blocked = blocked


Resolve = Callable[[str], Awaitable[Answer]]


@dataclass
class Rendering:
    """What one page gave in the browser; `notes` say what went wrong, in words."""

    dom: str | None = None
    screenshot: bytes | None = None
    links: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    requests: int = 0
    elapsed: float = 0.0
    over_memory: bool = False
    """The page was ended for using more than ``memory_limit``."""


def chromium_headers(headers: Any) -> dict[str, str]:
    """Response headers for `route.fulfill`: the body is handed over decoded and whole."""
    merged: dict[str, str] = {}
    for name, value in headers:
        lowered = name.lower()
        if lowered in _DROPPED_HEADERS:
            continue
        if lowered in merged:
            merged[lowered] += ("\n" if lowered == "set-cookie" else ", ") + value
        else:
            merged[lowered] = value
    return merged


class PageCrashed(Exception):
    """The page's renderer went away (killed for its memory, or crashed)."""


class Browser:
    """One Chromium for the crawl, started on first use and again if it dies, its memory watched."""

    def __init__(self, executable: str, settings: BrowserSettings) -> None:
        self.executable = executable
        self.settings = settings
        self.memory = MemoryWatchdog(settings.memory_limit, settings.memory_limit * (settings.tabs + 2))
        self._playwright: Any = None
        self._browser: Any = None
        self._watch: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> Any:
        async with self._lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            if self._playwright is None:
                from playwright.async_api import async_playwright

                self._playwright = await async_playwright().start()
            # an unknown switch Chromium ignores: it finds the process tree to watch
            marker = f"--archiver-capture={uuid.uuid4().hex}"
            args = [*CHROMIUM_ARGS, js_flags(self.settings.memory_limit), marker]
            self._browser = await self._playwright.chromium.launch(
                executable_path=self.executable, headless=True, args=args
            )
            if self._watch is not None:
                self._watch.cancel()
            if MemoryWatchdog.available():
                self._watch = asyncio.ensure_future(self.memory.watch(marker))
            return self._browser

    async def close(self) -> None:
        browser, playwright = self._browser, self._playwright
        self._browser = self._playwright = None
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(BaseException):
                await self._watch
            self._watch = None
        with contextlib.suppress(Exception):
            if browser is not None:
                async with asyncio.timeout(CLOSE_TIMEOUT):
                    await browser.close()
        with contextlib.suppress(Exception):
            if playwright is not None:
                async with asyncio.timeout(CLOSE_TIMEOUT):
                    await playwright.stop()


async def until_quiet(activity: Callable[[], tuple[int, float]], deadline: float) -> bool:
    """Wait until no request was pending for QUIET_SECONDS; False when `deadline` came first.

    `activity` gives (requests pending, when the last one began or ended)."""
    while True:
        pending, last = activity()
        now = time.monotonic()
        quiet_at = last + QUIET_SECONDS
        if pending == 0 and now >= quiet_at:
            return True
        if now >= deadline:
            return False
        await asyncio.sleep(min(max(quiet_at - now, 0.05), deadline - now))


class PageSession:
    """One page in its own context; `run` never raises for what the page does."""

    def __init__(
        self,
        url: str,
        main: Answer,
        resolve: Resolve,
        settings: BrowserSettings,
        identity: SharedIdentity | None = None,
        memory: MemoryWatchdog | None = None,
    ) -> None:
        self.url = url
        self.identity = identity
        self._context: Any = None
        self.main = main
        self.resolve = resolve
        self.settings = settings
        self.memory = memory
        self.result = Rendering()
        self._page: Any = None
        self._fetches: set[asyncio.Task[Answer]] = set()
        self._crashed = asyncio.Event()
        self._pending = 0
        self._last_activity = time.monotonic()
        self._started = time.monotonic()

    async def run(self, browser: Any) -> Rendering:
        started = self._started = time.monotonic()
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                context = await browser.new_context(
                    viewport=VIEWPORT, accept_downloads=False, service_workers="block"
                )
        except Exception as exc:  # Chromium died or hangs: the next page starts a new one
            self.note(f"no browser context: {_describe(exc, False)}")
            return self.result
        self._context = context
        try:
            async with asyncio.timeout(self.settings.page_timeout):
                await self._share_cookies(context)
                await self._load_until_crash(context)
                await self._take_cookies()
        except TimeoutError:
            self.note(f"page not done after page_timeout = {self.settings.page_timeout:g} s")
        except Exception as exc:  # a Playwright error: the tab crashed, the page closed itself, ...
            # a renderer ended mid-navigation fails the navigation before the crash is told
            crashed = self._crashed.is_set() or isinstance(exc, PageCrashed)
            self.note(await self._crash_note(_describe(exc, crashed)))
        finally:
            for task in self._fetches:
                task.cancel()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(CLOSE_TIMEOUT):
                    await context.close()
            self.result.elapsed = time.monotonic() - started
        return self.result

    async def _share_cookies(self, context: Any) -> None:
        if self.identity is None:
            return
        cookies = self.identity.browser_cookies()
        if cookies:
            try:
                await context.add_cookies(cookies)
            except Exception as exc:  # one cookie Chromium will not take: the page goes without
                self.note(f"the crawl's cookies not given to the page: {str(exc).splitlines()[0][:200]}")

    async def _take_cookies(self) -> None:
        """The cookies the page holds now (its scripts may have set some) into the crawl's jar."""
        if self.identity is None or self._context is None:
            return
        with contextlib.suppress(Exception):  # the context is closing: nothing new to take
            self.identity.take_browser_cookies(await self._context.cookies())

    def note(self, text: str) -> None:
        if text not in self.result.notes and len(self.result.notes) < 20:
            self.result.notes.append(text)

    async def _load_until_crash(self, context: Any) -> None:
        """`_load`, given up as soon as the tab crashes (a wait on a dead page may never end)."""
        load = asyncio.ensure_future(self._load(context))
        crashed = asyncio.ensure_future(self._crashed.wait())
        try:
            await asyncio.wait({load, crashed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            crashed.cancel()
            if not load.done():
                load.cancel()
                with contextlib.suppress(BaseException):
                    await load
        if load.cancelled():
            raise PageCrashed("the tab crashed")
        load.result()

    async def _crash_note(self, otherwise: str) -> str:
        """Why the page failed: memory when the watchdog ended a renderer (it learns of an end
        at its next look), else `otherwise`."""
        if self.memory is not None:
            deadline = time.monotonic() + 3 * POLL_SECONDS
            while not self.memory.ended_for_memory():
                if time.monotonic() >= deadline:
                    return otherwise
                await asyncio.sleep(0.05)
            self.result.over_memory = True
            return f"memory: the page used more than memory_limit = {self.settings.memory_limit} MB"
        return otherwise

    async def _load(self, context: Any) -> None:
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        await context.add_init_script(HISTORY_SCRIPT)
        await context.route("**/*", self._route)
        with contextlib.suppress(AttributeError):  # Playwright < 1.48 cannot see WebSockets
            await context.route_web_socket("**/*", self._refuse_socket)
        page = self._page = await context.new_page()
        context.on("page", self._popup)
        page.on("download", self._download)
        page.on("dialog", self._dialog)
        page.on("crash", lambda _page: self._crashed.set())
        idle_ms = self.settings.idle_timeout * 1000
        await page.goto(self.url, wait_until="commit", timeout=self.settings.page_timeout * 1000)
        settle_until = time.monotonic() + self.settings.idle_timeout
        with contextlib.suppress(PlaywrightTimeout):
            await page.wait_for_load_state("load", timeout=idle_ms)
        if not await self._quiet(settle_until):
            self.note(f"network never went quiet within idle_timeout = {self.settings.idle_timeout:g} s")
        if self.settings.scroll_rounds:
            await page.evaluate(SCROLL_SCRIPT, self.settings.scroll_rounds)
            await self._quiet(time.monotonic() + min(self.settings.idle_timeout, IDLE_AFTER_SCROLL))
        await self._answers_in()
        found = await page.evaluate(LINKS_SCRIPT, MAX_DOM_LINKS)
        links, popups = found if isinstance(found, list) and len(found) == 2 else ([], [])
        self.result.links += _strings(links)
        for url in _strings(popups)[:5]:
            self.note(f"refused a pop-up window ({url})")
        dom = await page.content()
        if len(dom) > MAX_DOM_CHARS:
            self.note(f"rendered DOM of {len(dom)} characters not stored (over {MAX_DOM_CHARS})")
            return
        self.result.dom = dom
        if self.settings.screenshot:
            self.result.screenshot = await page_png(page)

    async def _answers_in(self) -> None:
        """Wait for the answers the crawl still owes the page (its politeness spaces a host's
        requests, so a page of many images outlasts `idle_timeout`), within `page_timeout` less
        FINISH_SECONDS: the DOM and the screenshot then show the page with its own resources, the
        state `archiver qa` compares its replay with."""
        owed = [task for task in self._fetches if not task.done()]
        if not owed:
            return
        left = self._started + self.settings.page_timeout - FINISH_SECONDS - time.monotonic()
        if left > 0:
            await asyncio.wait(owed, timeout=left)
        late = sum(not task.done() for task in owed)
        if late:
            self.note(f"{late} of the page's requests still unanswered when it was saved")
        else:
            await self._quiet(time.monotonic() + QUIET_SECONDS * 2)

    async def _quiet(self, deadline: float) -> bool:
        return await until_quiet(lambda: (self._pending, self._last_activity), deadline)

    # -- what the page asks for --------------------------------------------------------

    async def _route(self, route: Any) -> None:
        self._pending += 1
        self._last_activity = time.monotonic()
        try:
            await self._answer(route)
        finally:
            self._pending -= 1
            self._last_activity = time.monotonic()

    async def _answer(self, route: Any) -> None:
        request = route.request
        url = request.url
        try:
            if request.method != "GET":
                self.note(f"refused a {request.method} request to {url} (no form posts)")
                await route.abort("blockedbyclient")
                return
            if not url.startswith(("http://", "https://")):
                await route.abort("blockedbyclient")
                return
            if urldefrag(url)[0] == urldefrag(self.url)[0] and request.resource_type == "document":
                answer = self.main
            elif request.is_navigation_request() and request.frame == getattr(self._page, "main_frame", None):
                self.note(f"the page navigated to {url}: not followed in this tab (queued as a link)")
                self.result.links.append(url)
                await route.abort("aborted")
                return
            else:
                self.result.requests += 1
                await self._take_cookies()
                task = asyncio.ensure_future(self.resolve(url))
                self._fetches.add(task)
                try:
                    answer = await task
                finally:
                    self._fetches.discard(task)
            headers = chromium_headers(answer.headers)
            await route.fulfill(status=answer.status, headers=headers, body=answer.body)
        except ResolverRefused as refused:
            with contextlib.suppress(Exception):
                await route.abort("blockedbyclient" if refused.blocked else "failed")
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await route.abort("aborted")
        except Exception as exc:  # the tab went away while the answer was on its way
            log.debug("%s: request %s not answered: %s", self.url, url, exc)

    async def _refuse_socket(self, socket: Any) -> None:
        self.note(f"refused a WebSocket to {socket.url}")
        with contextlib.suppress(Exception):
            await socket.close()

    async def _popup(self, page: Any) -> None:
        if page is self._page:
            return
        self.note("refused a pop-up window")
        with contextlib.suppress(Exception):
            await page.close()

    async def _download(self, download: Any) -> None:
        self.note(f"refused a download of {download.url}")
        with contextlib.suppress(Exception):
            await download.cancel()

    async def _dialog(self, dialog: Any) -> None:
        with contextlib.suppress(Exception):
            await dialog.dismiss()


def _strings(value: Any) -> list[str]:
    """What a page's script returned, kept only as far as it is a list of URL-sized strings."""
    if not isinstance(value, list):
        return []
    return [item for item in value[:MAX_DOM_LINKS] if isinstance(item, str) and len(item) <= 8192]


def _describe(exc: BaseException, crashed: bool) -> str:
    if crashed:
        return "the tab crashed"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"browser error: {text[:200]}"
