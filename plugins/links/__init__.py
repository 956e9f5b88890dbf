"""Bundled plugin `links`: the links of HTML, XHTML, XML and CSS documents.

Each link carries its kind (`archiver.LinkKind`), as the shared `grammar` says:
navigational links (`a`, `area`, `meta refresh`, `link rel=alternate/next/...`) are pages;
what a page needs to render (frames, images, stylesheets, scripts, media, fonts in CSS)
are requisites; `@import` is an import.  The work per page is bounded: at most
``[plugins.links] max_parse_size`` characters are read, documents nested deeply enough to
make the HTML parser quadratic are read by a linear tokenizer instead, and at most
``max_links_per_page`` links are kept.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from archiver import Link, hookimpl
from archiver.model import HTML_TYPES, XML_TYPES

from .collector import LinkCollector
from .nesting import exceeds_budget
from .resolve import Resolver
from .rules import css_links
from .settings import LinksSettings
from .tokens import tokenized_links
from .xml import xml_links

if TYPE_CHECKING:
    from archiver import Crawl, Page
    from archiver.config import Config

__all__ = ["LinksSettings", "configure", "extract_links", "find_links"]

log = logging.getLogger(__name__)

HTML = "html"
CSS = "css"
XML = "xml"


def document_type(page: Page) -> str | None:
    """Which reader suits the page: by Content-Type, or by sniffing when there is none."""
    content_type = page.content_type
    if content_type in HTML_TYPES:
        return HTML
    if content_type == "text/css":
        return CSS
    if content_type in XML_TYPES or content_type.endswith("+xml"):
        return XML
    if not content_type and page.header("Content-Type") is None:
        head = page.content[:256].lstrip().lower()
        if head.startswith((b"<!doctype html", b"<html")):
            return HTML
    return None


def find_links(
    url: str,
    text: str,
    doc_type: str,
    *,
    limit: int = 0,
    max_url_length: int = 0,
    stats: dict[str, int] | None = None,
) -> list[Link]:
    """The links of a decoded document of type `doc_type` found at `url`, in document order.

    `stats`, when given, counts why a shortcut was taken ('nesting_fallback', 'capped').
    """
    resolver = Resolver.for_url(url)
    if resolver is None:
        return []
    out = LinkCollector(resolver, limit=limit, max_url_length=max_url_length)
    if doc_type == HTML:
        if exceeds_budget(text):
            if stats is not None:
                stats["nesting_fallback"] = stats.get("nesting_fallback", 0) + 1
            tokenized_links(text, out)
        else:
            # Imported here: every command line loads this plugin, only a crawl parses HTML.
            from .html import parsed_links

            parsed_links(text, out)
    elif doc_type == CSS:
        css_links(text, out)
    elif doc_type == XML:
        xml_links(text, out)
    if out.overflow and stats is not None:
        stats["capped"] = stats.get("capped", 0) + 1
    return out.links


@hookimpl
def configure(config: Config) -> None:
    """Reject a mistyped or impossible ``[plugins.links]`` setting before the crawl starts."""
    config.plugin_settings("links", LinksSettings)


@hookimpl
def extract_links(page: Page, crawl: Crawl) -> list[Link] | None:
    """Links of HTML, XHTML, XML and CSS pages; other types are left to other plugins."""
    doc_type = document_type(page)
    if doc_type is None:
        return None
    config = crawl.config
    max_parse_size = config.plugin_settings("links", LinksSettings).max_parse_size
    text = page.text
    if len(text) > max_parse_size:
        text = text[:max_parse_size]
        crawl.stats["links.truncated"] += 1
        log.info("%s: only the first %d characters were read for links", page.url, max_parse_size)
    stats: dict[str, int] = {}
    links = find_links(
        page.url,
        text,
        doc_type,
        limit=config.max_links_per_page,
        max_url_length=config.max_url_length,
        stats=stats,
    )
    if stats:
        for key, count in stats.items():
            crawl.stats[f"links.{key}"] += count
        if "capped" in stats:
            log.info("%s: links beyond max_links_per_page=%d ignored", page.url, config.max_links_per_page)
        if "nesting_fallback" in stats:
            log.info("%s: nested too deeply for the HTML parser, tokenized instead", page.url)
    return links
