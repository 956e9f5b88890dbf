"""Replaying archived pages in headless Chromium and noting what each asked for.

The web plugin's replay application (the one ``archiver serve`` runs) is started in this
process on 127.0.0.1 at a free port; Chromium loads each page from it, without the
banner (the ``if_`` modifier), in a browser context of its own.  Every request is
intercepted: one for the replay server goes on, any other is aborted before it is sent
and noted as a request for the live web, and a proxy that goes nowhere catches whatever
interception would not see.  Who asked for each request (the HTML, a stylesheet or a
script) comes from Chromium's own record of its initiator (DevTools protocol).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import html
import logging
import posixpath
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from ..browser.loading import CHROMIUM_ARGS, SCROLL_SCRIPT, VIEWPORT, until_quiet
from ..browser.screenshots import page_png
from ..replay.library import Library
from ..replay.replay import FRAME, REPLAY_PREFIX, replay_path
from .compare import SCREEN_SCRIPT, text_of, text_score
from .records import PageResult, Request

log = logging.getLogger("archiver.qa")

SERVER_PATHS = ("/static/", "/favicon.ico")
"""The replay server's own files: a request for them is no request of the archived page."""
SCRIPT_ONLY = frozenset({"fetch", "xhr", "eventsource", "websocket"})
"""Resource types only a script asks for, whatever Chromium names as the initiator."""
DIRECTIVE_TYPES = {
    "connect-src": "fetch",
    "img-src": "image",
    "font-src": "font",
    "style-src": "stylesheet",
    "style-src-elem": "stylesheet",
    "script-src": "script",
    "script-src-elem": "script",
    "media-src": "media",
    "frame-src": "document",
}
"""The resource type of a request the page's Content-Security-Policy stopped, by the directive that did."""
KEEP_SCREENSHOT_BELOW = 0.99
"""A replay screenshot scoring below this is kept, to be shown beside the capture's."""
CLOSE_TIMEOUT = 10.0
MAX_CONSOLE_ERRORS = 20
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
MAX_URLS_PER_PAGE = 10_000
"""A page asking for more distinct URLs (a script in a loop) has the rest counted, not checked."""
VIOLATIONS_SCRIPT = """
(() => {
  const seen = [];
  Object.defineProperty(window, '__qaBlocked', {value: seen});
  document.addEventListener('securitypolicyviolation', (event) => {
    const url = event.blockedURI;
    if (seen.length < 500 && url && /^https?:/.test(url)) seen.push([url, event.effectiveDirective]);
  });
})();
"""


@dataclass(frozen=True, slots=True)
class PageToCheck:
    """One archived page to check, with what its browser capture kept (if it was captured so)."""

    url: str
    timestamp: str
    screenshot: bytes | None = None
    dom: str | None = None


@dataclass(frozen=True)
class CheckSettings:
    page_timeout: float = 30.0
    idle_timeout: float = 5.0
    scroll_rounds: int = 20


class ReplayServer:
    """The web plugin's replay application, on 127.0.0.1 at a free port, in this process."""

    def __init__(self, library: Library) -> None:
        self.library = library
        self.origin = ""
        self._runner: Any = None

    async def start(self) -> None:
        from aiohttp import web

        from ..replay.app import make_app

        app = make_app(self.library, host="127.0.0.1")
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.origin = f"http://127.0.0.1:{port}"

    @property
    def address(self) -> str:
        return self.origin.removeprefix("http://")

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def page_url(self, capture: PageToCheck) -> str:
        return self.origin + replay_path(capture.timestamp, capture.url, FRAME)

    def holds(self, url: str, timestamp: str, status: int | None) -> tuple[bool, int | None]:
        """Whether the archive answers `url`, and with what status (`status`: the replay's answer)."""
        found = self.library.nearest(url, timestamp)
        if found is not None and found.capture.status is not None:
            status = found.capture.status
        return found is not None, status

    def in_archive(self, url: str) -> bool:
        return self.library.is_archived(url)

    @property
    def bypass(self) -> str:
        """The one address Chromium reaches without the proxy that goes nowhere."""
        return self.address

    def archived_url(self, url: str) -> str | None:
        """The archived URL a request to this server stands for, or None (not a replay path)."""
        if not url.startswith(self.origin + "/"):
            return None
        path = url[len(self.origin) :]
        for prefix in (REPLAY_PREFIX, "/missing/"):
            if path.startswith(prefix):
                rest = path[len(prefix) :]
                stamp, _, target = rest.partition("/")
                if stamp[:1].isdigit() and target:
                    if target.lower().startswith(("http%3a", "https%3a")):
                        target = unquote(target)
                    return target
        return None


class Site(Protocol):
    """Where the pages are loaded from: the replay server, or an exported folder (export.py)."""

    origin: str

    def page_url(self, capture: PageToCheck) -> str: ...
    def archived_url(self, url: str) -> str | None: ...
    def holds(self, url: str, timestamp: str, status: int | None) -> tuple[bool, int | None]: ...
    def in_archive(self, url: str) -> bool: ...

    @property
    def bypass(self) -> str: ...


def chromium_args(site: Site) -> list[str]:
    """The browser plugin's flags, with the replay server the only address reached directly."""
    args = [arg for arg in CHROMIUM_ARGS if not arg.startswith("--proxy-bypass-list")]
    bypass = f";{site.bypass}" if site.bypass else ""
    return [*args, f"--proxy-bypass-list=<-loopback>{bypass}"]


class Chromium:
    """One headless Chromium for a QA run, started again if it dies: a crash costs a page, not the run.

    `compare` scores two PNGs in a blank page of it (its canvas does the pixel work).
    """

    def __init__(self, playwright: Any, executable: str, args: list[str]) -> None:
        self._playwright = playwright
        self._executable = executable
        self._args = args
        self._browser: Any = None
        self._blank: Any = None
        self._lock = asyncio.Lock()
        self._compare_lock = asyncio.Lock()

    async def get(self) -> Any:
        async with self._lock:
            if self._browser is None or not self._browser.is_connected():
                if self._browser is not None:
                    log.warning("Chromium went away: starting it again")
                self._blank = None
                self._browser = await self._playwright.chromium.launch(
                    executable_path=self._executable, headless=True, args=self._args
                )
            return self._browser

    async def compare(self, capture: bytes, replay: bytes) -> float | None:
        async with self._compare_lock:
            try:
                if self._blank is None or self._blank.is_closed():
                    context = await (await self.get()).new_context()
                    await context.route("**/*", lambda route: route.abort("blockedbyclient"))
                    self._blank = await context.new_page()
                score = await self._blank.evaluate(
                    SCREEN_SCRIPT,
                    [base64.b64encode(capture).decode(), base64.b64encode(replay).decode()],
                )
            except Exception as exc:
                log.info("screenshots not compared: %s", _first_line(exc))
                self._blank = None
                return None
        return round(float(score), 4) if isinstance(score, int | float) else None

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            if self._browser is not None:
                async with asyncio.timeout(CLOSE_TIMEOUT):
                    await self._browser.close()


@contextlib.asynccontextmanager
async def running_browser(executable: str, site: Site) -> AsyncIterator[Chromium]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        chromium = Chromium(playwright, executable, chromium_args(site))
        try:
            await chromium.get()
            yield chromium
        finally:
            await chromium.close()


class PageCheck:
    """One page replayed in its own browser context; `run` never raises for what the page does."""

    def __init__(
        self,
        capture: PageToCheck,
        server: Site,
        settings: CheckSettings,
        compare: Callable[..., Any],
        keep: Callable[[str, str, bytes], str] | None = None,
    ) -> None:
        self.capture = capture
        self.keep = keep
        self.server = server
        self.settings = settings
        self.compare = compare
        self.result = PageResult(url=capture.url, timestamp=capture.timestamp)
        self._pending = 0
        self._last_activity = time.monotonic()
        self._initiators: dict[str, str] = {}
        self._stylesheets: set[str] = set()
        self._live: list[tuple[str, str]] = []
        self._answers: dict[str, tuple[str, int | None]] = {}
        self._page: Any = None
        self._loaded: str | None = None
        self._document: str | None = None

    async def run(self, browser: Any) -> PageResult:
        started = time.monotonic()
        context = None
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                context = await browser.new_context(
                    viewport=VIEWPORT, accept_downloads=False, service_workers="block"
                )
            async with asyncio.timeout(self.settings.page_timeout):
                await self._load(context)
        except TimeoutError:
            self.note(f"not loaded within {self.settings.page_timeout:g} s")
        except Exception as exc:  # a Playwright error: the tab crashed, Chromium went away
            self.note(f"not loaded: {_first_line(exc)}")
        finally:
            if context is not None:
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(CLOSE_TIMEOUT):
                        await context.close()
        await self._settle_requests()
        self.result.seconds = round(time.monotonic() - started, 3)
        return self.result

    def note(self, text: str) -> None:
        if text not in self.result.notes and len(self.result.notes) < 20:
            self.result.notes.append(text)

    async def _load(self, context: Any) -> None:
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        await context.add_init_script(VIOLATIONS_SCRIPT)
        await context.route("**/*", self._route)
        with contextlib.suppress(AttributeError):
            await context.route_web_socket("**/*", self._refuse_socket)
        page = self._page = await context.new_page()
        cdp = await context.new_cdp_session(page)
        cdp.on("Network.requestWillBeSent", self._will_be_sent)
        await cdp.send("Network.enable")
        page.on("console", self._console)
        page.on("pageerror", lambda error: self._error(f"uncaught: {_first_line(error)}"))
        page.on("response", self._response)
        page.on("requestfailed", self._failed)
        page.on("dialog", lambda dialog: asyncio.ensure_future(dialog.dismiss()))
        idle_ms = self.settings.idle_timeout * 1000
        response = await page.goto(
            self.server.page_url(self.capture), wait_until="commit", timeout=self.settings.page_timeout * 1000
        )
        document: asyncio.Future[str | None] | None = None
        if response is None or response.status >= 400:
            self.note(f"not loaded: the replay answered {response.status if response else 'nothing'}")
        else:  # read while the page loads: the body is whole long before the page is quiet
            document = asyncio.ensure_future(self._document_text(response))
        try:
            settle_until = time.monotonic() + self.settings.idle_timeout
            with contextlib.suppress(PlaywrightTimeout):
                await page.wait_for_load_state("load", timeout=idle_ms)
            if not await self._quiet(settle_until):
                self.note(f"network never went quiet within {self.settings.idle_timeout:g} s")
            if document is not None:
                self._document = await document
        finally:
            if document is not None and not document.done():
                document.cancel()
        if self.settings.scroll_rounds:
            await page.evaluate(SCROLL_SCRIPT, self.settings.scroll_rounds)
            await self._quiet(time.monotonic() + min(self.settings.idle_timeout, 2.0))
        for blocked in await page.evaluate("() => window.__qaBlocked || []"):
            if isinstance(blocked, list) and len(blocked) == 2 and isinstance(blocked[0], str):
                self._live.append((blocked[0], DIRECTIVE_TYPES.get(str(blocked[1]), "other")))
        dom = await page.content()
        self.result.text_score = self._text_score(dom)
        if self.capture.screenshot is not None:
            shot = await page_png(page, cdp)
            self.result.screenshot_score = score = await self.compare(self.capture.screenshot, shot)
            if score is not None and score < KEEP_SCREENSHOT_BELOW and self.keep is not None:
                self.result.replay_screenshot = await asyncio.to_thread(
                    self.keep, self.capture.url, self.capture.timestamp, shot
                )

    def _text_score(self, dom: str) -> float | None:
        if self.capture.dom is None:
            return None
        return text_score(text_of(self.capture.dom), text_of(dom))

    async def _quiet(self, deadline: float) -> bool:
        return await until_quiet(lambda: (self._pending, self._last_activity), deadline)

    # -- what the page asks for ------------------------------------------------------

    async def _route(self, route: Any) -> None:
        request = route.request
        url = request.url
        if self._navigates_away(request):
            self.note(f"the page navigated to {url}: not followed")
            with contextlib.suppress(Exception):
                await route.abort("aborted")
            return
        if url.startswith(self.server.origin + "/"):
            self._pending += 1
            self._last_activity = time.monotonic()
            with contextlib.suppress(Exception):
                await route.continue_()
            return
        if url.startswith(("http:", "https:", "ws:", "wss:")) and len(self._live) < MAX_URLS_PER_PAGE:
            self._live.append((url, request.resource_type))
        with contextlib.suppress(Exception):
            await route.abort("blockedbyclient")

    async def _document_text(self, response: Any) -> str | None:
        """The page as the replay served it, to tell the URLs its HTML names from those computed."""
        with contextlib.suppress(Exception):
            await response.finished()
            body = await response.body()
            if len(body) <= MAX_DOCUMENT_BYTES:
                return html.unescape(body.decode("utf-8", "replace"))
        return None

    def _in_document(self, url: str) -> bool:
        """Whether the served HTML names `url`: Chromium calls a request "parser"-made when a
        script set an element's ``src`` (sphinx's toggler images), so a URL the HTML does not
        name was a script's."""
        if self._document is None:
            return True
        path = url[len(self.server.origin) :] if url.startswith(self.server.origin) else url
        forms = {path, unquote(path)}
        if self._loaded is not None:  # the mirror's links are relative to the page's file
            folder = posixpath.dirname(urlsplit(self._loaded).path)
            relative = posixpath.relpath(urlsplit(url).path, folder)
            forms |= {relative, unquote(relative)}
        return any(form in self._document for form in forms)

    def _navigates_away(self, request: Any) -> bool:
        """A script or a refresh taking the tab to another page: QA checks the page it was given."""
        page = self._page
        if page is None or not request.is_navigation_request() or request.frame != page.main_frame:
            return False
        target: str = urldefrag(request.url)[0]
        if self._loaded is None:
            self._loaded = target  # the page itself, as Chromium spells its URL
            return False
        return target != self._loaded

    def _done(self) -> None:
        self._pending = max(self._pending - 1, 0)
        self._last_activity = time.monotonic()

    def _response(self, response: Any) -> None:
        request = response.request
        self._record(request.url, request.resource_type, response.status)
        if request.resource_type == "stylesheet":
            self._stylesheets.add(request.url)
        self._done()

    def _failed(self, request: Any) -> None:
        if request.url.startswith(self.server.origin + "/"):
            self._record(request.url, request.resource_type, None)
            self._done()

    def _record(self, url: str, resource_type: str, status: int | None) -> None:
        self.result.requests_seen += 1
        if len(self._answers) >= MAX_URLS_PER_PAGE and url not in self._answers:
            self.note(f"more than {MAX_URLS_PER_PAGE} URLs asked for: the rest not checked")
            return
        if url not in self._answers or self._answers[url][1] is None:
            self._answers[url] = (resource_type, status)

    def _will_be_sent(self, event: dict[str, Any]) -> None:
        request = event.get("request") or {}
        url = request.get("url")
        if not isinstance(url, str) or url in self._initiators or event.get("type") == "Preflight":
            return
        if len(self._initiators) >= MAX_URLS_PER_PAGE:
            return
        initiator = event.get("initiator") or {}
        kind = initiator.get("type")
        source = initiator.get("url") or ""
        if kind == "script" or (kind != "parser" and initiator.get("stack")):
            self._initiators[url] = "script"
        elif kind in ("parser", "preload", "other") and source:
            self._initiators[url] = "css" if source in self._stylesheets else "html"
        elif event.get("type") == "Document":
            self._initiators[url] = "html"
        else:
            self._initiators[url] = "other"

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self._error(message.text)

    def _error(self, text: str) -> None:
        errors = self.result.console_errors
        if len(errors) < MAX_CONSOLE_ERRORS and text not in errors:
            errors.append(text[:500])

    async def _refuse_socket(self, socket: Any) -> None:
        self._live.append((socket.url, "websocket"))
        with contextlib.suppress(Exception):
            await socket.close()

    async def _settle_requests(self) -> None:
        """Turn what was seen into `Request` records, asking the archive about each URL once."""
        own = self.server.page_url(self.capture)
        for url, (resource_type, status) in self._answers.items():
            if url == own:
                continue
            archived_url = self.server.archived_url(url)
            outside = archived_url is None
            if archived_url is None:
                path = url[len(self.server.origin) :]
                if path.startswith(SERVER_PATHS):
                    continue
                archived_url = urljoin(self.capture.url, path)
            by = self._initiators.get(url, "other")
            if resource_type in SCRIPT_ONLY or (by == "html" and not self._in_document(url)):
                by = "script"
            held, status = await asyncio.to_thread(
                self.server.holds, archived_url, self.capture.timestamp, status
            )
            archive_has = None if held else await asyncio.to_thread(self.server.in_archive, archived_url)
            self.result.requests.append(
                Request(
                    archived_url, resource_type, by, status, held, outside=outside, archive_has=archive_has
                )
            )
        for url, resource_type in dict.fromkeys(self._live):
            by = "script" if resource_type in SCRIPT_ONLY else self._initiators.get(url, "html")
            archive_has = await asyncio.to_thread(self.server.in_archive, url)
            self.result.requests.append(
                Request(url, resource_type, by, None, False, live=True, archive_has=archive_has)
            )


def _first_line(exc: object) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
