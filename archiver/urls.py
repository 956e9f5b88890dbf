"""URL clean-up, canonical keys and the crawl's scope: pure functions, no I/O.

A URL is fetched and archived as it was found; only the seen-set key is canonical
(w3lib's `canonicalize_url`, as Scrapy does), so `?b=2&a=1` and `?a=1&b=2` are one page.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urldefrag, urlsplit

from w3lib.url import canonicalize_url, safe_url_string

from .guard import literal_address

ALLOWED_SCHEMES = ("http", "https")
_HOST_CHARS_REFUSED = frozenset(" \t\r\n<>\"'\\{}|^`")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def canonical_key(url: str) -> str:
    """The seen-set key: query sorted, escapes normalized, fragment dropped."""
    try:
        return canonicalize_url(url, keep_fragments=False)
    except ValueError:
        return url


# A URL `safe_url_string` returns unchanged: lower-case ASCII host, a port without leading
# zeros, a path and a non-empty query of characters that never need escaping.  Most URLs of a
# crawl look like this, and the check costs a tenth of the call.
_WIRE_READY = re.compile(
    r"https?://[a-z0-9.\-]+(?::([1-9][0-9]{0,4}))?"
    r"/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*(?:\?[A-Za-z0-9\-._~!$&()*+,;=:@/?]+)?"
)


def wire_url(url: str) -> str:
    """The URL as it goes on the request line: non-ASCII and spaces percent-encoded, nothing else."""
    ready = _WIRE_READY.fullmatch(url)
    if ready is not None and (ready.group(1) is None or int(ready.group(1)) <= 65535):
        return url
    return safe_url_string(url)


def clean_url(url: str) -> str | None:
    """`url` without fragment if it is a fetchable absolute http(s) URL, else None."""
    url = url.strip()
    if not url:
        return None
    url = urldefrag(url)[0]
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname  # a property that parses the netloc again on each use
    if parts.scheme.lower() not in ALLOWED_SCHEMES or not host:
        return None
    if port == 0:
        return None
    if not _HOST_CHARS_REFUSED.isdisjoint(host):
        return None
    return url


# "scheme://authority" at the start of a URL, when `urlsplit` reads the same authority in it
# alone (it deletes tabs and newlines anywhere, so an authority holding one is left to it).
_ORIGIN = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/?#\t\r\n]*(?=[/?#]|\Z)")


def site_of(url: str) -> str:
    """`host` or `host:port` (default ports dropped, `www.` kept): what a host rule compares.

    Asked several times for every URL (politeness, scope, traps), so it is remembered by
    origin: the host rules depend on nothing after the authority.
    """
    origin = _ORIGIN.match(url)
    if origin is None:
        return _site_of(url)
    return _site_of_origin(origin.group())


@functools.lru_cache(maxsize=4096)
def _site_of_origin(origin: str) -> str:
    return _site_of(origin)


def _site_of(url: str) -> str:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower().rstrip(".")
    port = parts.port
    if port is None or port == _DEFAULT_PORTS.get(parts.scheme.lower()):
        return host
    return f"{host}:{port}"


def _strip_www(site: str) -> str:
    return site[4:] if site.startswith("www.") else site


def registered_domain(site: str) -> str:
    """The last two labels of the host (an IP stays whole): what lenient matching compares."""
    host, _, port = site.partition(":") if not site.startswith("[") else (site, "", "")
    if literal_address(host) is not None:
        return site
    labels = host.split(".")
    domain = ".".join(labels[-2:])
    return f"{domain}:{port}" if port else domain


@dataclass
class Scope:
    """Which URLs belong to the crawl: the roots' hosts, then include/exclude patterns.

    Strict matching treats `www.example.org` and `example.org` as one site and every
    other subdomain as foreign; lenient matching admits any host under a root's domain.
    """

    roots: Iterable[str]
    strict: bool = True
    include: Iterable[str] = ()
    exclude: Iterable[str] = ()
    sites: set[str] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        self._include = [re.compile(p) for p in self.include]
        self._exclude = [re.compile(p) for p in self.exclude]
        for root in self.roots:
            self.add_site(root)

    def add_site(self, url: str) -> None:
        """Admit the host of `url` (a root, or where a root redirected to)."""
        site = site_of(url)
        self.sites.add(_strip_www(site) if self.strict else registered_domain(_strip_www(site)))

    def host_allows(self, url: str) -> bool:
        site = site_of(url)
        if self.strict:
            return _strip_www(site) in self.sites
        domain = registered_domain(_strip_www(site))
        return domain in self.sites

    def add_pattern(self, pattern: str, *, exclude: bool) -> None:
        """An include or exclude pattern added while the crawl runs (`archiver control`)."""
        (self._exclude if exclude else self._include).append(re.compile(pattern))

    def pattern_verdict(self, url: str) -> str | None:
        """None when the patterns admit `url`, else the rule that refused it."""
        for pattern in self._exclude:
            if pattern.search(url):
                return f"exclude pattern {pattern.pattern!r}"
        if self._include and not any(p.search(url) for p in self._include):
            return "no include pattern matches"
        return None
