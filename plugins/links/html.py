"""Links of an HTML or XHTML document, read with the lexbor parser of selectolax."""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser

from ..markup.grammar import ATTRIBUTES, SVG_ELEMENTS
from .collector import LinkCollector
from .rules import css_links, element_links

# One query for every element that may hold a URL to fetch; lexbor returns them in document
# order.  Each name costs lexbor a test per element: the many that hold only `background`
# are asked for by that attribute, those that hold only URLs never fetched are left out,
# a few common ones are asked for only with the attribute that matters, and SVG's only
# when the document has SVG (where a script may have an `href` instead of a `src`).
_ONLY_BACKGROUND = ATTRIBUTES["body"]
_FETCHED = {
    name.lower()
    for name, slots in ATTRIBUTES.items()
    if slots != _ONLY_BACKGROUND and any(kind is not None for _, _, kind in slots)
}
_CONDITIONS = {"input": "[src]", "meta": "[http-equiv]", "param": "[name]", "script": "[src]"}
_NAMES = sorted(_FETCHED - SVG_ELEMENTS | {"link", "meta", "param", "style"})
SELECTOR = ", ".join([*(name + _CONDITIONS.get(name, "") for name in _NAMES), "[background]", "[style]"])
SVG_SELECTOR = ", ".join([SELECTOR, "script", *sorted(SVG_ELEMENTS)])


def parsed_links(text: str, out: LinkCollector) -> None:
    """Add the links of an HTML document.  `text` must be decoded: lexbor ignores
    `<meta charset>` when given bytes."""
    tree = LexborHTMLParser(text)
    base = tree.css_first("base[href]")
    if base is not None:
        href = base.attributes.get("href")
        if href:
            out.rebase(href)
    for node in tree.css(SVG_SELECTOR if tree.tags("svg") else SELECTOR):
        tag = node.tag
        if tag == "style":
            css = node.text()
            if css:
                css_links(css, out)
        if tag is not None:
            element_links(tag, node.attributes, out)
        if out.overflow:
            return
