"""The crawl's cookie jar: aiohttp's, with the checks a browser makes that aiohttp's lacks.

aiohttp's `CookieJar` keeps RFC 6265's domain, path, secure and expiry rules, but takes a
``Domain`` attribute that names a public suffix (``Domain=com``, ``co.uk``, ``github.io``)
and then sends that cookie to every site under it (aio-libs/aiohttp#13653), and compares
the attribute with the host case-sensitively.  Browsers refuse such a cookie with the
Public Suffix List; so does this jar, with the list the `publicsuffixlist` package ships
(no network at run time).  The correction sits in the one method every cookie passes
through, whether it came in a response or from a saved jar or cookies.txt: aiohttp's private
`_update_cookies` (aiohttp 3.14), so `tests/test_cookie_jar.py` proves it is still called.

Against the RFC 6265 parser tests of abarth/http-state (`tests/test_cookie_conformance.py`)
two more corrections are made: a ``Set-Cookie`` whose ``Domain`` the host is not under is
ignored before aiohttp reads it, and each value is sent as the server wrote it, quotes
included (aiohttp's private `_build_morsel`).  The cases still failing are aiohttp's and
are listed, with their upstream reasons, in that test.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from http.cookies import Morsel
from typing import Any

import aiohttp
from publicsuffixlist import PublicSuffixList
from yarl import URL

from .urls import literal_address

log = logging.getLogger(__name__)


@functools.cache
def _suffixes() -> PublicSuffixList:
    """The list is read once a process, when the first cookie with a Domain comes."""
    return PublicSuffixList()


def is_public_suffix(domain: str) -> bool:
    """Whether `domain` (lower case, no leading dot) is one under which anyone may register a
    site (``com``, ``co.uk``, ``github.io``); never true of an IP address."""
    return literal_address(domain) is None and _suffixes().is_public(domain)


def site_domain(host: str) -> str:
    """The domain a site was registered under (``shop.example.co.uk`` -> ``example.co.uk``);
    an IP address, or a host that is itself a public suffix, as it is."""
    host = host.lower().rstrip(".")
    if literal_address(host) is not None:
        return host
    return _suffixes().privatesuffix(host) or host


def domain_refusal(domain: str, host: str) -> str | None:
    """Why a cookie with the ``Domain`` attribute `domain`, sent by `host`, may not be kept;
    None when it may.  A public suffix is taken only from that very host, as a host-only
    cookie (as browsers do)."""
    if is_public_suffix(domain) and domain != host:
        return f"Domain={domain} is a public suffix: it would go to every site under it"
    return None


JAR_LIMITS = (3300, 180)
"""What aiohttp's jar keeps: 3,300 cookies, 180 a domain; past them it forgets the oldest."""


def set_cookie_refusal(header: str, host: str) -> str | None:
    """Why the cookie of one ``Set-Cookie`` value from `host` must be ignored, as RFC 6265
    (5.2.3, 5.3 step 6) reads its ``Domain`` attribute; None when it may be kept.

    The last non-empty ``Domain`` counts, one leading dot dropped, in any case; a value that
    does not domain-match the host (``..home.example.org``, ``home.example.org.``, a quoted
    one) means the cookie is ignored, where aiohttp keeps it for the host."""
    domain = None
    for attribute in header.split(";")[1:]:
        name, _, value = attribute.partition("=")
        if name.strip().lower() == "domain" and value.strip():
            domain = value.strip()
    if domain is None:
        return None
    domain = domain.removeprefix(".").lower()
    matches = host == domain or (host.endswith("." + domain) and literal_address(host) is None)
    if not matches:
        return f"Domain={domain} is not {host}'s nor one it is under"
    return domain_refusal(domain, host)


class CrawlCookieJar(aiohttp.CookieJar):
    """aiohttp's jar, refusing cookies for public suffixes and for a Domain the host is not
    under, reading Domain in any case, and sending each value as the server wrote it."""

    def update_cookies_from_headers(self, headers: Sequence[str], response_url: URL) -> None:
        host = (response_url.raw_host or "").lower()
        kept = []
        for header in headers:
            refusal = set_cookie_refusal(header, host)
            if refusal is None:
                kept.append(header)
            else:
                log.info("cookie from %s not kept: %s", host, refusal)
        super().update_cookies_from_headers(kept, response_url)

    def _build_morsel(self, cookie: Morsel[str]) -> Morsel[str]:
        """The cookie as the request sends it: its value as the server wrote it, quotes
        included (``foo="bar"`` is sent as ``foo="bar"``, RFC 6265 5.4).  aiohttp sends the
        value unquoted with ``quote_cookie=False``, and re-quotes one that needs quotes in
        its own way without it."""
        morsel: Morsel[str] = Morsel()
        coded = cookie.coded_value or cookie.value
        morsel.__setstate__({"key": cookie.key, "value": cookie.value, "coded_value": coded})  # type: ignore[attr-defined]
        return morsel

    def _update_cookies(self, cookies: Any, response_url: URL, **options: Any) -> None:
        host = (response_url.raw_host or "").lower().rstrip(".")
        items = cookies.items() if hasattr(cookies, "items") else cookies
        kept: list[tuple[str, Any]] = []
        for name, cookie in items:
            if isinstance(cookie, Morsel) and cookie["domain"]:
                domain = cookie["domain"].strip().lower().lstrip(".")
                refusal = domain_refusal(domain, host) if domain else None
                if refusal is not None:
                    log.info("cookie %r from %s not kept: %s", name, host, refusal)
                    continue
                cookie = cookie.copy()  # the caller's morsel stays as it was
                if domain == host and is_public_suffix(domain):
                    cookie["domain"] = ""  # host-only, as a browser keeps it
                else:
                    cookie["domain"] = domain
            kept.append((name, cookie))
        super()._update_cookies(kept, response_url, **options)
