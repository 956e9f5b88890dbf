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

from archiver.api import hookimpl, lazy_attributes

if TYPE_CHECKING:
    from archiver.api import Config, Crawl, Link, Page

    from .find import document_type, find_links
    from .settings import LinksSettings

__all__ = ["LinksSettings", "configure", "document_type", "extract_links", "find_links"]

log = logging.getLogger(__name__)

# Every command line loads this plugin: the readers (and their compiled patterns) are
# imported by the first page a crawl reads, not here.
_LAZY = {"document_type": ".find", "find_links": ".find", "LinksSettings": ".settings"}


__getattr__ = lazy_attributes(__name__, _LAZY)


@hookimpl
def configure(config: Config) -> None:
    """Reject a mistyped or impossible ``[plugins.links]`` setting before the crawl starts."""
    from .settings import LinksSettings

    config.plugin_settings("links", LinksSettings)


@hookimpl
def extract_links(page: Page, crawl: Crawl) -> list[Link] | None:
    """Links of HTML, XHTML, XML and CSS pages; other types are left to other plugins."""
    from .find import document_type, find_links
    from .settings import LinksSettings

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
