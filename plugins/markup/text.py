"""What the index keeps of a page: title, headings, description and the main text.

Runs in the writer process (or `reindex`), never in the crawl's event loop.  Navigation,
headers, footers and side bars repeat on every page of a site: they are left out so the
index holds what distinguishes a page, and whoosh (the slow part) sees less text.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from selectolax.lexbor import LexborHTMLParser
from selectolax.lexbor import LexborNode as Node

if TYPE_CHECKING:
    from archiver.api import Page

INDEXED_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/plain"})
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_DROP = (
    "script, style, template, noscript, svg, math, nav, aside, footer, form, select,"
    " button, iframe, object, [hidden], [aria-hidden=true], [role=navigation],"
    " [role=banner], [role=contentinfo], [role=search], [role=complementary]"
)
_BLOCKS = (
    "address, article, blockquote, br, caption, dd, details, dialog, div, dl, dt, fieldset,"
    " figcaption, figure, h1, h2, h3, h4, h5, h6, header, hr, li, main, ol, p, pre, section,"
    " summary, table, tbody, td, tfoot, th, thead, tr, ul, option"
)
"""Elements a browser lays out as blocks (or line breaks): their text is set apart by a space,
while inline elements (`code`, `em`, `a`, ...) join their neighbours as they are shown."""
_PERMALINKS = "a.headerlink, a.anchor-link, a.anchorjs-link, a.header-anchor, a.heading-anchor"
_PERMALINK_MARKS = frozenset({"¶", "§", "#", "🔗"})
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


@dataclass(frozen=True, slots=True)
class Extracted:
    title: str
    headings: str
    description: str
    text: str


def is_indexable(status: int, content_type: str) -> bool:
    """Only successful HTML and plain-text pages are searched."""
    return 200 <= status < 300 and content_type in INDEXED_TYPES


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name.strip().strip("'\"")).name
    except (LookupError, ValueError):
        return None


def sniff_encoding(content: bytes, declared: str | None) -> str:
    """The charset a browser would use: BOM, then the header, then `<meta charset>`, then a guess.

    `reindex` needs this because a WARC record carries no decoded text; the crawl hands
    over the engine's own choice (`Page.encoding`) instead.
    """
    for bom, name in _BOMS:
        if content.startswith(bom):
            return name
    found = _codec(declared)
    if found:
        return found
    match = _META_CHARSET.search(content[:4096])
    if match:
        found = _codec(match.group(1).decode("ascii", "replace"))
        if found:
            return "utf-8" if found.startswith("utf-16") else found
    try:
        content.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        return "utf-8"
    from charset_normalizer import from_bytes

    best = from_bytes(content[:65536]).best()
    return best.encoding if best is not None else "cp1252"


def decode(content: bytes, encoding: str | None) -> str:
    """`content` as text; undecodable bytes become U+FFFD, an unknown charset falls back to UTF-8."""
    name = _codec(encoding) or "utf-8"
    return content.decode(name, errors="replace")


def _clean(text: str | None) -> str:
    """Runs of whitespace as one space, none at the ends (str.split's whitespace is re's \\s;
    four times faster than the substitution)."""
    return " ".join(text.split()) if text else ""


def extract(content: bytes, content_type: str, encoding: str | None, max_chars: int) -> Extracted:
    """Pull the searchable parts out of one page; broken HTML gives what the parser could read."""
    text = decode(content, encoding)
    if content_type not in _HTML_TYPES:
        return Extracted("", "", "", _clean(text[: max_chars * 2])[:max_chars])
    tree = LexborHTMLParser(text)
    title_node = tree.css_first("title")
    title = _clean(title_node.text(deep=True)) if title_node is not None else ""
    description = ""
    for meta in tree.css("meta[name], meta[property]"):
        name = (meta.attributes.get("name") or meta.attributes.get("property") or "").lower()
        if name in ("description", "og:description"):
            description = _clean(meta.attributes.get("content"))
            if description:
                break
    root = tree.body
    if root is None:
        return Extracted(title[:1000], "", description[:2000], "")
    main = main_content(root)
    _set_blocks_apart(main)
    headings = " ".join(_clean(h.text(deep=True, separator="")) for h in main.css("h1, h2, h3"))
    body = _clean(main.text(deep=True, separator=""))[:max_chars]
    if not title:
        first = main.css_first("h1")
        title = _clean(first.text(deep=True, separator="")) if first is not None else ""
    return Extracted(title[:1000], headings[:5000], description[:2000], body)


def main_content(body: Node) -> Node:
    """The part of a page's `body` that is its own, with navigation, side bars, footers,
    scripts and permalink marks taken out of the tree (which is changed in place).

    The index searches its text; the EPUB export makes it a chapter."""
    for node in body.css(_DROP):
        node.decompose()
    main = body.css_first("main, [role=main], article") or body
    for node in main.css("header"):
        if node.parent is not None and node.parent.tag in ("body", "div"):
            node.decompose()
    _drop_permalinks(main)
    return main


def _drop_permalinks(root: Node) -> None:
    """Drop permalink marks (Sphinx's `¶`): they are not part of the text."""
    for node in root.css(_PERMALINKS):
        node.decompose()
    for node in root.css("h1 a, h2 a, h3 a, h4 a, h5 a, h6 a, dt a"):
        if node.text(deep=True).strip() in _PERMALINK_MARKS:
            node.decompose()


def _prepare_text(root: Node) -> None:
    """Drop permalink marks and set blocks apart, so the text reads as shown."""
    _drop_permalinks(root)
    _set_blocks_apart(root)


def _set_blocks_apart(root: Node) -> None:
    for node in root.css(_BLOCKS):
        node.insert_before(" ")
        node.insert_after(" ")


def visible_text(page: Page) -> str:
    """The text a reader sees on `page` (an HTML page or plain text), in one line.

    `Page.text` is the whole decoded document, markup and scripts included; plugins that
    want the words of a page call this.  Scripts, styles and hidden elements are left out,
    inline elements join their neighbours and blocks are separated by one space.
    """
    if page.content_type not in _HTML_TYPES:
        return _clean(page.text)
    tree = LexborHTMLParser(page.text)
    root = tree.body
    if root is None:
        return ""
    for node in root.css("script, style, template, noscript, [hidden]"):
        node.decompose()
    _prepare_text(root)
    return _clean(root.text(deep=True, separator=""))
