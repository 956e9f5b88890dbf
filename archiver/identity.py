"""Who the crawl is to the sites it visits: its cookie jar, its credentials, its proxy.

The jar is aiohttp's (domain, path, secure and expiry rules of RFC 6265), accepting
cookies from hosts written as IP addresses as a browser does.  It is kept in the archive
(`cookies.COOKIES_NAME`), saved shortly after a response sets a cookie and at the end
of the run, so that a resumed or updated crawl goes on with the same login.  It lives in
a file of its own rather than in ``state.sqlite``: ``--update`` and ``--recrawl`` start the
frontier's state afresh, and the login must outlive that.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import math
import os
import time
import urllib.request
from collections.abc import Iterable, Mapping
from email.utils import formatdate
from http.cookies import CookieError, Morsel, SimpleCookie
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from yarl import URL

from .config import Config
from .cookiejar import JAR_LIMITS, site_domain
from .cookies import LAST_EXPIRY, Cookie, read_cookies_file
from .credentials import SiteCredentials
from .errors import ConfigError
from .fetcher import new_cookie_jar
from .layout import COOKIES_NAME
from .login_check import cookies_loaded, unusable_cookies
from .terminal import note

if TYPE_CHECKING:
    from aiohttp import CookieJar

log = logging.getLogger(__name__)

SAVE_DELAY = 0.5
"""Seconds between a Set-Cookie and the jar's save: a burst of cookies costs one write."""


def _morsel(cookie: Cookie) -> Morsel[str]:
    jar = SimpleCookie()
    jar[cookie.name] = cookie.value
    morsel = jar[cookie.name]
    morsel.set(cookie.name, cookie.value, cookie.value)  # the value as given, never quoted
    morsel["path"] = cookie.path
    if not cookie.host_only:
        morsel["domain"] = cookie.domain
    if cookie.secure:
        morsel["secure"] = True
    if cookie.http_only:
        morsel["httponly"] = True
    if cookie.expires is not None and math.isfinite(cookie.expires):
        # a browser's "never" (1e20) as the last date an HTTP date can say
        morsel["expires"] = formatdate(min(cookie.expires, LAST_EXPIRY), usegmt=True)
    return morsel


class CrawlIdentity:
    """The jar, the per-host headers and the proxy of one crawl, for the crawler and the browser."""

    def __init__(self, config: Config, archive: Path) -> None:
        self.config = config
        self.path = archive / COOKIES_NAME
        self.credentials = SiteCredentials(config)
        self.jar: CookieJar | None = new_cookie_jar() if config.cookies else None
        """None with --no-cookies: the fetcher then keeps none."""
        self._save_handle: asyncio.TimerHandle | None = None
        self._loaded = False
        """Set once the saved jar was read: a run that failed before never overwrites it."""
        self._proxies = urllib.request.getproxies_environment() if config.proxy == "env" else {}

    # -- the jar ---------------------------------------------------------------------------

    def load(self, resumed: bool = False) -> None:
        """The jar saved by the previous run of this archive, then the cookies file on top of it.

        A resumed run goes on with the saved jar alone: the site may have replaced the
        file's cookies since (a session renewed), and the file may be gone.
        """
        if self.jar is None:
            return
        if self.path.is_file():
            try:
                self.jar.load(self.path)
            except Exception as exc:  # a damaged jar loses the login, never the crawl
                log.warning("%s cannot be read (%s): starting without its cookies", self.path, exc)
        self._loaded = True
        if self.config.cookies_file and not (resumed and self.path.is_file()):
            cookies = self._sites_cookies(read_cookies_file(Path(self.config.cookies_file)))
            note(log, "%s", cookies_loaded(cookies, self.config.cookies_file))
            for warning in unusable_cookies(cookies, self.config.roots, self.config.cookies_file):
                log.warning("%s", warning)
            self.add(cookies)
        self.save()

    def _sites_cookies(self, cookies: list[Cookie]) -> list[Cookie]:
        """The cookies of the roots' sites (their registered domains): a whole browser's export
        holds thousands, and past its limits the jar would forget the oldest, the login among
        them, in silence.  More than the jar keeps for the crawl's own sites is an error."""
        sites = {site_domain(urlsplit(root).hostname or "") for root in self.config.roots}
        kept = [cookie for cookie in cookies if site_domain(cookie.domain) in sites]
        if len(kept) < len(cookies):
            log.warning(
                "%s: %d of its %d cookies are for other sites than the roots' (%s): not loaded",
                self.config.cookies_file,
                len(cookies) - len(kept),
                len(cookies),
                ", ".join(sorted(sites)),
            )
        total, per_domain = JAR_LIMITS
        crowded = collections.Counter(cookie.domain for cookie in kept).most_common(1)
        if len(kept) > total or (crowded and crowded[0][1] > per_domain):
            raise ConfigError(
                f"{self.config.cookies_file}: {len(kept)} cookies for the crawl's sites"
                f" ({crowded[0][1]} for {crowded[0][0]}); the jar keeps at most {total},"
                f" {per_domain} a domain, and would drop the oldest: export fewer"
            )
        return kept

    def add(self, cookies: Iterable[Cookie]) -> None:
        if self.jar is None:
            return
        for cookie in cookies:
            scheme = "https" if cookie.secure else "http"
            try:
                origin = URL.build(scheme=scheme, host=cookie.domain, path="/")
                self.jar.update_cookies({cookie.name: _morsel(cookie)}, origin)
            except (CookieError, ValueError) as exc:
                log.warning("cookie %r of %s not taken: %s", cookie.name, cookie.domain, exc)

    def save(self) -> None:
        """Write the jar, readable by its owner only, replacing the last copy in one step."""
        if self._save_handle is not None:
            self._save_handle.cancel()
            self._save_handle = None
        if self.jar is None or not self._loaded:
            return
        partial = self.path.with_name(self.path.name + ".partial")
        try:
            self.jar.save(partial)
            os.chmod(partial, 0o600)
            os.replace(partial, self.path)
        except OSError as exc:
            log.warning("cannot save the cookie jar to %s: %s", self.path, exc.strerror or exc)

    def seen(self, headers: Iterable[tuple[str, str]]) -> None:
        """A response came: when it set a cookie, save the jar soon."""
        if self._save_handle is not None or self.jar is None:
            return
        if any(name.lower() == "set-cookie" for name, _ in headers):
            self._save_handle = asyncio.get_running_loop().call_later(SAVE_DELAY, self.save)

    # -- requests ----------------------------------------------------------------------------

    def headers_for(self, url: str) -> list[tuple[str, str]]:
        return self.credentials.headers_for(url)

    def stored(self, headers: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
        return self.credentials.stored(headers)

    def proxy_hosts(self) -> frozenset[str]:
        """The hosts of the proxies this crawl may use: the address guard lets them through."""
        given = self.config.proxy
        proxies = [given] if given not in ("", "env") else list(self._proxies.values())
        return frozenset(host for proxy in proxies if (host := urlsplit(proxy).hostname))

    def proxy_for(self, url: str) -> str | None:
        """The proxy a request to `url` goes through, or None to go direct."""
        proxy = self.config.proxy
        if not proxy:
            return None
        if proxy != "env":
            return proxy
        parts = urlsplit(url)
        found = self._proxies.get(parts.scheme)
        bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]  # not in typeshed
        if not found or bypass(parts.netloc, self._proxies):
            return None
        return found

    # -- the browser plugin's side (`model.SharedIdentity`) ------------------------------

    def browser_cookies(self) -> list[dict[str, Any]]:
        """The jar's cookies as Playwright's `BrowserContext.add_cookies` takes them."""
        if self.jar is None:
            return []
        host_only = self.jar.host_only_cookies
        expirations: Mapping[tuple[str, str, str], float] = getattr(self.jar, "_expirations", {})
        found = []
        for (domain, path), cookies in self.jar.cookies.items():
            for name, morsel in cookies.items():
                only = (domain, path, name) in host_only
                cookie: dict[str, Any] = {
                    "name": name,
                    "value": morsel.value,
                    "domain": domain if only else "." + domain,
                    "path": morsel["path"] or "/",
                    "secure": bool(morsel["secure"]),
                    "httpOnly": bool(morsel["httponly"]),
                }
                expires = expirations.get((domain, path, name))
                if expires is not None:
                    if expires <= time.time():
                        continue
                    cookie["expires"] = expires
                found.append(cookie)
        return found

    def take_browser_cookies(self, cookies: Iterable[Mapping[str, Any]]) -> None:
        """Cookies a rendered page holds (set by its scripts, too) back into the jar."""
        taken = []
        for cookie in cookies:
            with contextlib.suppress(KeyError, TypeError, ValueError):
                domain = str(cookie["domain"])
                expires = float(cookie.get("expires", -1))
                taken.append(
                    Cookie(
                        name=str(cookie["name"]),
                        value=str(cookie["value"]),
                        domain=domain.lstrip(".").lower(),
                        path=str(cookie.get("path") or "/"),
                        host_only=not domain.startswith("."),
                        secure=bool(cookie.get("secure")),
                        expires=expires if expires > 0 else None,
                        http_only=bool(cookie.get("httpOnly")),
                    )
                )
        known = {(c["name"], c["domain"].lstrip("."), c["path"], c["value"]) for c in self.browser_cookies()}
        new = [c for c in taken if (c.name, c.domain, c.path, c.value) not in known]
        if new:
            self.add(new)
            self.seen((("Set-Cookie", ""),))
