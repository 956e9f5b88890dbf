"""Which reader a document needs, and the links that reader finds in it, in document order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from archiver.api import HTML_TYPES, XML_TYPES, Link

from .collector import LinkCollector
from .nesting import exceeds_budget
from .resolve import Resolver
from .rules import css_links
from .tokens import tokenized_links
from .xml import xml_links

if TYPE_CHECKING:
    from archiver.api import Page

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
            # Imported here: selectolax is loaded only by a crawl that meets HTML.
            from .html import parsed_links

            parsed_links(text, out)
    elif doc_type == CSS:
        css_links(text, out)
    elif doc_type == XML:
        xml_links(text, out)
    if out.overflow and stats is not None:
        stats["capped"] = stats.get("capped", 0) + 1
    return out.links
