"""The link grammar applied to one element or stylesheet: its links, added to a collector.

Shared by the parser-based extractor and the tokenizer fallback, so both read a document
the same way.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..markup.grammar import CSS, REFRESH, SRCSET, URL, css_references, refresh_url, slots, srcset_urls
from .collector import LinkCollector


def element_links(tag: str, attributes: Mapping[str, str | None], out: LinkCollector) -> None:
    """Add the links held by one element's attributes (not its text)."""
    for name, syntax, kind in slots(tag, attributes):
        if kind is None:
            continue
        value = attributes.get(name)
        if not value:
            continue
        if syntax is URL:
            out.add(value, kind)
        elif syntax is SRCSET:
            for url in srcset_urls(value):
                out.add(url, kind)
        elif syntax is CSS:
            if "url(" in value.lower():
                css_links(value, out, imports=False)
        elif syntax is REFRESH:
            target = refresh_url(value)
            if target:
                out.add(target, kind)


def css_links(text: str, out: LinkCollector, *, imports: bool = True) -> None:
    """Add the links of a stylesheet or a `style` attribute (`imports=False`: no @import there)."""
    for _, _, url, kind, _ in css_references(text, imports=imports):
        out.add(url, kind)
        if out.overflow:
            return
