"""The ``[plugins.browser]`` table, checked by the core (`archiver.settings`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from archiver.api import patterns_problem, setting


def _positive(seconds: float) -> str | None:
    return None if seconds > 0 else f"must be more than 0 seconds, got {seconds}"


@dataclass(frozen=True)
class BrowserSettings:
    """What the browser capture does; docs/browser.md explains each key."""

    all: bool = False
    """Render every HTML page (``--browser``)."""
    match: tuple[str, ...] = setting((), check=patterns_problem)
    """Render the HTML pages whose URL matches one of these regular expressions."""
    tabs: int = setting(2, low=1, high=64)
    """Pages rendered at once (``--browser-tabs``), each in its own browser context."""
    page_timeout: float = setting(30.0, high=3600, check=_positive)
    """Seconds one page may take in the browser, from the first byte to the screenshot."""
    idle_timeout: float = setting(5.0, high=3600, check=_positive)
    """Seconds to wait for the network to go quiet (500 ms without a request) before going on."""
    scroll_rounds: int = setting(20, low=0, high=1000)
    """Scrolls to the bottom at most, to trigger lazy loading; 0 scrolls not at all."""
    screenshot: bool = True
    """Store a PNG screenshot of each rendered page."""
    memory_limit: int = setting(1024, low=128, high=1 << 20)
    """Megabytes one page may use in Chromium (its JavaScript heap, and its renderer process);
    a page over it is ended (``render_failed``, reason ``memory: ...``) and the crawl goes on.
    All of Chromium may use ``memory_limit * (tabs + 2)``."""
    cache_size: int = setting(64 * 1024 * 1024, low=0, high=1 << 34)
    """Bytes of responses kept in memory to answer a page's requests for URLs the crawl holds."""
    chromium: str = ""
    """Path of the Chromium executable; empty looks for ``chromium`` on PATH."""

    @property
    def enabled(self) -> bool:
        return self.all or bool(self.match)

    @cached_property
    def patterns(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(pattern) for pattern in self.match)

    def wants(self, url: str) -> bool:
        return self.all or any(pattern.search(url) for pattern in self.patterns)
