"""Links of an HTML or XHTML document, read with the lexbor parser of selectolax."""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

from .collector import LinkCollector
from .grammar import ELEMENTS
from .rules import css_links, element_links

# One query for every element the grammar looks at; lexbor returns them in document order.
# Plain tag names are cheaper for lexbor to match than attribute conditions.
SELECTOR = ", ".join(sorted({name.lower() for name in ELEMENTS} | {"style", "[style]"}))


def parsed_links(text: str, out: LinkCollector) -> None:
    """Add the links of an HTML document.  `text` must be decoded: lexbor ignores
    `<meta charset>` when given bytes."""
    tree = LexborHTMLParser(text)
    base = tree.css_first("base[href]")
    if base is not None:
        href = base.attributes.get("href")
        if href:
            out.rebase(href)
    for node in tree.css(SELECTOR):
        tag = node.tag
        if tag == "style":
            css = node.text()
            if css:
                css_links(css, out)
        if tag is not None:
            element_links(tag, node.attributes, out)
        if out.overflow:
            return
