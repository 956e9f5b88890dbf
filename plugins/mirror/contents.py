"""The bytes of one exported file: a rewritten page or stylesheet, a forwarding page, or the body.

Text is decoded with the document's own charset and ``surrogateescape``, so bytes that
charset cannot map survive the round trip and the untouched parts of the file stay
byte-identical; everything the rewriters insert is ASCII.
"""

from __future__ import annotations

import codecs
import html
import re

from archiver.api import choose_encoding, known_codec

from ..archive_reader.reader import StoredResponse
from ..markup.snapshot import static_snapshot
from .html import rewrite_css, rewrite_html
from .mapping import LinkMap
from .plan import Item

__all__ = ["HTML_TYPES", "declared_charset", "redirect_page", "render", "render_snapshot"]

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_CSS_CHARSET = re.compile(rb'^@charset\s+"([A-Za-z0-9_.:\-]+)";')
# Python codec names that are not WHATWG encoding labels.
_WHATWG = {
    "euc_jp": "euc-jp",
    "euc_kr": "euc-kr",
    "koi8_r": "koi8-r",
    "koi8_u": "koi8-u",
    "mac_roman": "macintosh",
    "iso2022_jp": "iso-2022-jp",
    "cp874": "windows-874",
    "utf_16_be": "utf-16be",
    "utf_16_le": "utf-16le",
    "mac_cyrillic": "x-mac-cyrillic",
}


def whatwg_label(codec: str) -> str:
    name = codecs.lookup(codec).name
    if name.startswith("cp125"):
        return "windows-" + name[2:]
    return _WHATWG.get(name, name)


def declared_charset(response: StoredResponse) -> str | None:
    value = response.header("Content-Type") or ""
    match = re.search(r"charset\s*=\s*[\"']?([^\s;\"']+)", value, re.IGNORECASE)
    return match.group(1) if match else None


def render_html(response: StoredResponse, content: bytes, links: LinkMap, mark_missing: bool) -> bytes:
    codec, source = choose_encoding(content, response.content_type, declared_charset(response))
    text = content.decode(codec, "surrogateescape")
    declare = None
    if source not in ("meta", "bom") and response.content_type == "text/html":
        declare = whatwg_label(codec)
    new = rewrite_html(text, response.url, links, mark_missing=mark_missing, charset=declare)
    if new is text:
        return content
    return new.encode(codec, "surrogateescape")


def render_css(response: StoredResponse, content: bytes, links: LinkMap) -> bytes:
    codec = known_codec(declared_charset(response))
    if codec is None and content.startswith(codecs.BOM_UTF8):
        codec = "utf-8-sig"
    if codec is None:
        match = _CSS_CHARSET.match(content)
        codec = known_codec(match.group(1).decode("ascii")) if match else None
    codec = codec or "utf-8"
    if codec.startswith("utf-16"):
        codec = "utf-8"  # @charset utf-16 in a stylesheet is ignored by browsers
    text = content.decode(codec, "surrogateescape")
    new = rewrite_css(text, response.url, links)
    if new is text:
        return content
    return new.encode(codec, "surrogateescape")


def redirect_page(status: int, target_url: str, href: str | None) -> bytes:
    """A tiny page that forwards to `href` (the target's file in the mirror); when the
    mirror lacks the target, a page with a link to `target_url` on the web, which the
    reader follows or not: opening the mirror never leads to the live web by itself."""
    shown = html.escape(target_url)
    if href is None:
        link = html.escape(target_url, quote=True)
        return (
            '<!doctype html>\n<html><head><meta charset="utf-8">\n'
            f"<title>Redirect to {shown}</title></head>\n"
            f"<body><p>This address redirected (HTTP {status}) to {shown}, which is not in the"
            f' archive: <a href="{link}" data-archive-missing="not-archived">open it on the web</a>.'
            "</p></body></html>\n"
        ).encode()
    link = html.escape(href, quote=True)
    return (
        '<!doctype html>\n<html><head><meta charset="utf-8">\n'
        f'<meta http-equiv="refresh" content="0; url={link}">\n'
        f"<title>Redirect to {shown}</title></head>\n"
        f"<body><p>This address redirected (HTTP {status})"
        f' to <a href="{link}">{shown}</a>.</p></body></html>\n'
    ).encode()


def render_snapshot(item: Item, dom: StoredResponse, links: LinkMap, mark_missing: bool = True) -> bytes:
    """The file for a page the browser capture rendered: its DOM (stored as UTF-8), without the
    scripts that built it, its links rewritten as those of any page, relative to the page's URL."""
    text = static_snapshot(dom.content().decode("utf-8", "replace"))
    page = rewrite_html(text, item.capture.url, links, mark_missing=mark_missing, charset="utf-8")
    return page.encode("utf-8")


def render(item: Item, response: StoredResponse, links: LinkMap, mark_missing: bool = True) -> bytes:
    """The file content for a non-redirect `item` whose stored response is `response`."""
    content = response.content()
    if item.mime in HTML_TYPES:
        return render_html(response, content, links, mark_missing)
    if item.mime == "text/css":
        return render_css(response, content, links)
    return content
