"""URL clean-up, canonical keys and the crawl's scope: pure functions, no I/O.

One URL, one meaning: every URL a crawl meets is parsed once, by the WHATWG URL rules
browsers follow (`clean_url`, `resolve_url`), and what goes on is that parse's serialization.
Parsers disagree on the raw text (``http://other\\@root/`` is `other` to a browser and to
aiohttp but `root` to `urllib`), never on a serialized WHATWG URL, so scope, the address guard,
robots.txt, the patterns, the seen set and the fetcher all read the same host and path.
The seen-set key is then canonical too (w3lib's `canonicalize_url`, as Scrapy does), so
`?b=2&a=1` and `?a=1&b=2` are one page.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import ada_url
from w3lib.url import canonicalize_url, safe_url_string

ALLOWED_SCHEMES = ("http", "https")
_DEFAULT_PORTS = {"http": 80, "https": 443}

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def literal_address(host: str) -> Address | None:
    """`host` as an IP address when it is written as one in the URL, else None."""
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


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
    """`url` parsed by the WHATWG URL rules and serialized again, without its fragment, if it
    is a fetchable absolute http(s) URL, else None.

    The serialization is what every later step reads: ``\\`` is ``/`` in http(s), the host is
    lower-cased, IDNA-encoded and an IPv4 address in any of its spellings written as four
    decimal numbers, dot segments (encoded or not) are removed, and what needs escaping is.
    """
    try:
        href: str = ada_url.normalize_url(url)
    except ValueError:
        return None
    if not href.startswith(("http://", "https://")):
        return None  # an http(s) URL that parses always has a host: WHATWG refuses it without one
    if href.split("/", 3)[2].rpartition("@")[2].endswith(":0"):
        return None
    return href.partition("#")[0]


def resolve_url(base: str, reference: str) -> str:
    """`reference` (a Location, a link) made absolute against `base` as a browser does;
    the reference stripped, as it came, when it cannot be parsed (`clean_url` refuses it)."""
    reference = reference.strip()
    try:
        joined: str = ada_url.join_url(base, reference)
    except ValueError:
        return reference
    return joined


_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ENCODED_SLASH = re.compile(r"%2[Ff]")


def _unescape_unreserved(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else match.group(0)


def rule_readings(url: str) -> tuple[str, ...]:
    """The spellings of a cleaned URL that path rules (robots.txt, --exclude, --include) judge.

    Escaped unreserved characters are read as themselves (``/%70rivate`` is ``/private``, as
    RFC 3986 and RFC 9309 say and as the seen-set key has it); dot segments are already gone
    (`clean_url`).  An escaped slash stays one for RFC 9309, but many servers serve
    ``/private%2Fe`` as ``/private/e`` (and ``/public/..%2Fprivate`` as ``/private``), so the
    reading with real slashes, its dot segments then removed, is judged too and a
    rule that refuses either reading refuses the URL.
    """
    read = _ESCAPE.sub(_unescape_unreserved, url) if "%" in url else url
    if "%" not in read or _ENCODED_SLASH.search(read) is None:
        return (read,)
    return (read, _without_dot_segments(_ENCODED_SLASH.sub("/", read)))


def _without_dot_segments(url: str) -> str:
    """`url` with the dot segments its path has once escaped slashes are slashes removed
    (``/public/..%2Fprivate/g`` is served as ``/private/g``), as RFC 3986 5.2.4 does."""
    parts = urlsplit(url)
    if "." not in parts.path:
        return url
    segments: list[str] = []
    for segment in parts.path.split("/")[1:]:
        if segment == "..":
            if segments:
                segments.pop()
        elif segment != ".":
            segments.append(segment)
    last = parts.path.rsplit("/", 1)[-1]
    path = "/" + "/".join(segments) + ("/" if last in (".", "..") and segments else "")
    return urlunsplit(parts._replace(path=path))


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

    def pattern_verdict(self, url: str, *, requisite: bool = False) -> str | None:
        """None when the patterns admit `url`, else the rule that refused it.

        Patterns see each of the URL's `rule_readings`: an exclude pattern that matches one
        refuses it, an include pattern must match one.  Include patterns narrow the pages
        followed, not what a page in scope needs to look right (wget's `-I` with `-p`): a
        `requisite` is judged by the exclude patterns only.
        """
        if not self._exclude and (not self._include or requisite):
            return None
        readings = rule_readings(url)
        for pattern in self._exclude:
            if any(pattern.search(reading) for reading in readings):
                return f"exclude pattern {pattern.pattern!r}"
        if requisite or not self._include:
            return None
        if not any(p.search(reading) for p in self._include for reading in readings):
            return "no include pattern matches"
        return None
