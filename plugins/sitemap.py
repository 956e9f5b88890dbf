"""Bundled plugin `sitemap`: discover pages through robots.txt and sitemaps.

Written only against the public hooks (`archiver.hookimpl`, `Page`, `Link`), as a worked
proof that a plugin needs nothing else:

* on a root page (depth 0) it links `/robots.txt` and `/sitemap.xml` of the root's host;
* in a robots.txt it reads the `Sitemap:` lines;
* in a sitemap or sitemap index (XML, or gzip-compressed XML) it reads the `<loc>` URLs,
  at most ``max_links_per_page`` of them (a sitemap may list 50,000).

The XML is read with a linear regular expression and no entity is ever expanded, so an
entity bomb or an external entity costs nothing; a gzip file is decompressed into at most
``max_size`` bytes.
"""

from __future__ import annotations

import html
import re
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from archiver.api import Link, LinkKind, hookimpl, setting

if TYPE_CHECKING:
    from archiver.api import Config, Crawl, Page

__all__ = ["SitemapSettings", "configure", "extract_links", "gunzip", "robots_sitemaps", "sitemap_urls"]


@dataclass(frozen=True)
class SitemapSettings:
    """The ``[plugins.sitemap]`` table, checked by the core (`archiver.settings`)."""

    discover: bool = True
    """Link /robots.txt and /sitemap.xml from each root page."""
    max_size: int = setting(50 * 1024 * 1024, low=1, high=1 << 32)
    """Bytes of one sitemap read (after gunzip): the protocol's own limit is 50 MB."""


GZIP_MAGIC = b"\x1f\x8b"
GZIP_TYPES = frozenset({"application/gzip", "application/x-gzip", "application/octet-stream"})
XML_TYPES = frozenset({"application/xml", "text/xml", "text/plain", ""})

_SITEMAP_LINE = re.compile(r"^[ \t]*sitemap[ \t]*:[ \t]*(\S+)", re.IGNORECASE | re.MULTILINE)
# `[^<]` keeps every match linear: an unclosed <loc> ends at the next tag.
_LOC = re.compile(r"<loc>\s*(?:<!\[CDATA\[\s*([^\]<]*?)\s*\]\]>|([^<]*?))\s*</loc>")
_SITEMAP_ROOT = re.compile(rb"<(?:[\w.\-]+:)?(?:urlset|sitemapindex)\b")


def _absolute(base: str, raw: str) -> str | None:
    """`raw` made absolute against `base`, if it is an http(s) URL with a host."""
    try:
        url = urljoin(base, raw.strip())
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
    except ValueError:  # e.g. `http://[::1`
        return None
    if any(char.isspace() for char in parts.netloc):
        return None
    return url


def gunzip(data: bytes, max_size: int) -> bytes | None:
    """Decompress gzip `data` (all members) into at most `max_size` bytes.

    Returns what fits when the output would be larger, and None for data that is not
    valid gzip.  Memory stays bounded by `max_size` whatever the compression ratio.
    """
    output = bytearray()
    remaining = data
    try:
        while remaining.startswith(GZIP_MAGIC) and len(output) < max_size:
            inflater = zlib.decompressobj(wbits=31)
            output += inflater.decompress(remaining, max_size - len(output))
            if not inflater.eof:
                break  # the cap was reached, or the member is cut short
            remaining = inflater.unused_data
    except zlib.error:
        return bytes(output) if output else None
    return bytes(output)


def robots_sitemaps(text: str, robots_url: str, limit: int = 0) -> list[Link]:
    """The URLs of the `Sitemap:` lines of a robots.txt, as page links."""
    links: list[Link] = []
    for match in _SITEMAP_LINE.finditer(text):
        url = _absolute(robots_url, match.group(1))
        if url is not None:
            links.append(Link(url, LinkKind.PAGE))
            if limit and len(links) >= limit:
                break
    return links


def sitemap_urls(document: bytes, sitemap_url: str, limit: int = 0) -> list[Link]:
    """The `<loc>` URLs of a sitemap or a sitemap index, as page links.

    Both are followed the same way: a sitemap index lists sitemaps, which this plugin
    reads in turn when the crawl fetches them.
    """
    text = document.decode("utf-8", errors="replace")
    links: list[Link] = []
    seen: set[str] = set()
    for match in _LOC.finditer(text):
        raw = match.group(1) if match.group(1) is not None else match.group(2)
        if "&" in raw:
            raw = html.unescape(raw)  # character references only: no entity is defined here
        url = _absolute(sitemap_url, raw)
        if url is None or url in seen:
            continue
        seen.add(url)
        links.append(Link(url, LinkKind.PAGE))
        if limit and len(links) >= limit:
            break
    return links


def _sitemap_document(page: Page, max_size: int) -> bytes | None:
    """The XML of `page` if it is a sitemap (plain or gzip-compressed), else None."""
    content = page.content
    path = urlsplit(page.url).path.lower()
    if content.startswith(GZIP_MAGIC) and (page.content_type in GZIP_TYPES or path.endswith(".gz")):
        unpacked = gunzip(content, max_size)
        if unpacked is None:
            return None
        content = unpacked
    elif page.content_type not in XML_TYPES and not path.endswith(".xml"):
        return None
    content = content[:max_size]
    if _SITEMAP_ROOT.search(content, 0, 4096) is None:
        return None
    return content


@hookimpl
def configure(config: Config) -> None:
    """Reject a mistyped or impossible ``[plugins.sitemap]`` setting before the crawl starts."""
    config.plugin_settings("sitemap", SitemapSettings)


@hookimpl
def extract_links(page: Page, crawl: Crawl) -> list[Link] | None:
    """Robots.txt and sitemap.xml of each root; the sitemaps they name; the pages those list."""
    settings = crawl.config.plugin_settings("sitemap", SitemapSettings)
    links: list[Link] = []
    parts = urlsplit(page.url)
    if page.depth == 0 and settings.discover and parts.scheme in ("http", "https"):
        origin = f"{parts.scheme}://{parts.netloc}"
        if not crawl.config.robots:
            # With robots on, the crawler fetches robots.txt itself and passes it through here.
            links.append(Link(origin + "/robots.txt"))
        links.append(Link(origin + "/sitemap.xml"))
    if not 200 <= page.status < 300:
        return links or None
    if parts.path == "/robots.txt":
        text = page.text[: settings.max_size]
        links += robots_sitemaps(text, page.url, crawl.config.max_links_per_page)
        return links
    document = _sitemap_document(page, settings.max_size)
    if document is not None:
        found = sitemap_urls(document, page.url, crawl.config.max_links_per_page)
        crawl.stats["sitemap.urls"] += len(found)
        links += found
    return links or None
