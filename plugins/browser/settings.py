"""The ``[plugins.browser]`` table: every key checked, unknown keys refused by name."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from archiver.errors import ConfigError


@dataclass(frozen=True)
class BrowserSettings:
    """What the browser capture does; docs/browser.md explains each key."""

    all: bool = False
    """Render every HTML page (``--browser``)."""
    match: tuple[str, ...] = ()
    """Render the HTML pages whose URL matches one of these regular expressions."""
    tabs: int = 2
    """Pages rendered at once (``--browser-tabs``), each in its own browser context."""
    page_timeout: float = 30.0
    """Seconds one page may take in the browser, from the first byte to the screenshot."""
    idle_timeout: float = 5.0
    """Seconds to wait for the network to go quiet (500 ms without a request) before going on."""
    scroll_rounds: int = 20
    """Scrolls to the bottom at most, to trigger lazy loading; 0 scrolls not at all."""
    screenshot: bool = True
    """Store a PNG screenshot of each rendered page."""
    cache_size: int = 64 * 1024 * 1024
    """Bytes of responses kept in memory to answer a page's requests for URLs the crawl holds."""
    chromium: str = ""
    """Path of the Chromium executable; empty looks for ``chromium`` on PATH."""
    patterns: tuple[re.Pattern[str], ...] = field(default=(), compare=False, repr=False)

    @property
    def enabled(self) -> bool:
        return self.all or bool(self.match)

    def wants(self, url: str) -> bool:
        return self.all or any(pattern.search(url) for pattern in self.patterns)


def parse_settings(table: Mapping[str, Any]) -> BrowserSettings:
    """Check `table` against `BrowserSettings`; raise ConfigError naming a bad key or value."""
    known = {f.name: f for f in fields(BrowserSettings) if f.name != "patterns"}
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in known:
            close = difflib.get_close_matches(key, list(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"unknown key plugins.browser.{key}{hint}")
        default = known[key].default
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(f"plugins.browser.{key}: expected true or false, got {value!r}")
        elif isinstance(default, int):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"plugins.browser.{key}: expected a whole number, got {value!r}")
        elif isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"plugins.browser.{key}: expected a number of seconds, got {value!r}")
            value = float(value)
        elif isinstance(default, tuple):
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"plugins.browser.{key}: expected a list of regular expressions")
            value = tuple(value)
        elif not isinstance(value, str):
            raise ConfigError(f"plugins.browser.{key}: expected a string, got {value!r}")
        values[key] = value
    patterns = []
    for pattern in values.get("match", ()):
        try:
            patterns.append(re.compile(pattern))
        except re.error as exc:
            raise ConfigError(
                f"plugins.browser.match: invalid regular expression {pattern!r}: {exc}"
            ) from None
    settings = BrowserSettings(**values, patterns=tuple(patterns))
    if not 1 <= settings.tabs <= 64:
        raise ConfigError(f"plugins.browser.tabs: 1 to 64, got {settings.tabs}")
    for name in ("page_timeout", "idle_timeout"):
        seconds = getattr(settings, name)
        if not 0 < seconds <= 3600:
            raise ConfigError(f"plugins.browser.{name}: more than 0 and at most 3600 seconds, got {seconds}")
    if not 0 <= settings.scroll_rounds <= 1000:
        raise ConfigError(f"plugins.browser.scroll_rounds: 0 to 1000, got {settings.scroll_rounds}")
    if settings.cache_size < 0:
        raise ConfigError(f"plugins.browser.cache_size: at least 0, got {settings.cache_size}")
    return settings
