"""The crawl's cookie jar: aiohttp's, with the checks a browser makes that aiohttp's lacks.

aiohttp's `CookieJar` keeps RFC 6265's domain, path, secure and expiry rules, but takes a
``Domain`` attribute that names a public suffix (``Domain=com``, ``co.uk``, ``github.io``)
and then sends that cookie to every site under it (aio-libs/aiohttp#13653), and compares
the attribute with the host case-sensitively.  Browsers refuse such a cookie with the
Public Suffix List; so does this jar, with the list the `publicsuffixlist` package ships
(no network at run time).  The correction sits in the one method every cookie passes
through, whether it came in a response or from a saved jar or cookies.txt: aiohttp's private
`_update_cookies` (aiohttp 3.14), so `tests/test_cookie_jar.py` proves it is still called.
"""

from __future__ import annotations

import functools
import logging
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


class CrawlCookieJar(aiohttp.CookieJar):
    """aiohttp's jar, refusing cookies for public suffixes and reading Domain in any case."""

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
