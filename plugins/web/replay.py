"""Rewrite archived HTML and CSS so that everything they load comes from the archive.

A replayed page must never reach the live web: every URL in an attribute, a
``srcset``, a ``<meta refresh>``, an inline style, a ``<style>`` block or a
stylesheet is made absolute against the page's (or ``<base>``'s) URL and pointed at
``/replay/TIMESTAMP[MODIFIER]/URL`` on this server.  Links to pages the archive does
not hold go to ``/missing/TIMESTAMP/URL`` instead, so a reader sees at once that
they lead nowhere.  Scripts are not rewritten; the Content-Security-Policy the
server adds keeps whatever they compute inside the server.

The HTML is re-emitted token by token (``html.parser``), not re-serialized from a
tree, so markup the browser tolerates stays as it was.  Attribute values come back
from the parser unescaped and are escaped again on the way out: an archived value
can never break out of its attribute.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

REPLAY_PREFIX = "/replay/"
MISSING_PREFIX = "/missing/"

FRAME = "if_"
"""Modifier for a document shown inside a frame: rewritten, no banner."""
IDENTITY = "id_"
"""Modifier for the bytes exactly as archived (still under the replay CSP)."""
MODIFIERS = ("", FRAME, IDENTITY)

_KEEP_SCHEMES = ("data:", "blob:", "about:", "javascript:", "mailto:", "tel:", "#")
_CSS_URL = re.compile(r"""url\(\s*(?P<q>["']?)(?P<url>[^"')]*?)(?P=q)\s*\)""", re.IGNORECASE)
_CSS_IMPORT = re.compile(r"""@import\s+(?P<q>["'])(?P<url>[^"']*)(?P=q)""", re.IGNORECASE)
_REFRESH = re.compile(
    r"""^(?P<delay>\s*[\d.]*\s*[;,]?\s*)(?:url\s*=\s*)?(?P<q>["']?)(?P<url>.*?)(?P=q)\s*$""", re.I | re.S
)

_NAVIGATION = {("a", "href"), ("area", "href")}
_FRAMES = {("iframe", "src"), ("frame", "src")}
_URL_ATTRIBUTES = {
    "href": {"a", "area", "link", "image", "use"},
    "src": {"img", "script", "input", "embed", "video", "audio", "source", "track", "iframe", "frame"},
    "poster": {"video"},
    "data": {"object"},
    "action": {"form"},
    "formaction": {"button", "input"},
    "background": {"body", "table", "td", "th"},
    "longdesc": {"img"},
    "xlink:href": {"image", "use", "a"},
}
_SRCSET_TAGS = {"img", "source"}
_DROPPED = {"integrity", "ping"}
"""`integrity` would reject a rewritten stylesheet; `ping` reports clicks to a live server."""


@dataclass
class UrlRewriter:
    """Maps URLs found in one archived document to URLs on this server.

    `is_archived(url)` answers whether the archive holds `url` (any capture); it is
    asked for navigational links only, which become ``/missing/`` links when not.
    """

    base: str
    timestamp: str
    is_archived: Callable[[str], bool] | None = None

    def absolute(self, value: str) -> str | None:
        """`value` resolved against the base: an http(s) URL, or None."""
        value = value.strip().replace("\n", "").replace("\r", "").replace("\t", "")
        if not value:
            return None
        try:
            url = urljoin(self.base, value)
            parts = urlsplit(url)
        except ValueError:
            return None
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return None
        return url

    def rewrite(self, value: str, *, modifier: str = "", navigational: bool = False) -> str:
        stripped = value.strip()
        if not stripped or stripped.lower().startswith(_KEEP_SCHEMES):
            return value
        url = self.absolute(stripped)
        if url is None:
            return MISSING_PREFIX + self.timestamp + "/" + stripped
        if navigational and self.is_archived is not None:
            target = url.split("#", 1)[0]
            if not self.is_archived(target):
                return MISSING_PREFIX + self.timestamp + "/" + url
        return replay_path(self.timestamp, url, modifier)

    def rewrite_srcset(self, value: str) -> str:
        return ", ".join(
            " ".join([self.rewrite(url), *descriptors]) for url, descriptors in parse_srcset(value)
        )

    def rewrite_css(self, css: str) -> str:
        def url_sub(match: re.Match[str]) -> str:
            quote = match.group("q") or '"'
            new = self.rewrite(match.group("url"))
            return f"url({quote}{_css_string(new, quote)}{quote})"

        def import_sub(match: re.Match[str]) -> str:
            quote = match.group("q")
            return f"@import {quote}{_css_string(self.rewrite(match.group('url')), quote)}{quote}"

        return _CSS_IMPORT.sub(import_sub, _CSS_URL.sub(url_sub, css))

    def rewrite_refresh(self, content: str) -> str:
        match = _REFRESH.match(content)
        if match is None or not match.group("url"):
            return content
        return f"{match.group('delay')}url={self.rewrite(match.group('url'))}"


def replay_path(timestamp: str, url: str, modifier: str = "") -> str:
    """The path on this server that replays `url` as archived near `timestamp`."""
    return f"{REPLAY_PREFIX}{timestamp}{modifier}/{url}"


def _css_string(value: str, quote: str) -> str:
    """`value` made safe inside a CSS string delimited by `quote`."""
    return value.replace("\\", "\\\\").replace(quote, "\\" + quote).replace("\n", "")


def parse_srcset(value: str) -> list[tuple[str, list[str]]]:
    """(url, descriptors) candidates of a ``srcset``, parsed as the HTML standard says."""
    candidates: list[tuple[str, list[str]]] = []
    position, end = 0, len(value)
    while position < end:
        while position < end and (value[position].isspace() or value[position] == ","):
            position += 1
        if position >= end:
            break
        start = position
        while position < end and not value[position].isspace():
            position += 1
        url = value[start:position]
        descriptors: list[str] = []
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            start = position
            depth = 0
            while position < end and (value[position] != "," or depth):
                if value[position] == "(":
                    depth += 1
                elif value[position] == ")":
                    depth = max(depth - 1, 0)
                position += 1
            descriptors = value[start:position].split()
        if url:
            candidates.append((url, descriptors))
    return candidates


class _HtmlRewriter(HTMLParser):
    """Re-emits a document with its URLs rewritten and the banner after ``<body>``."""

    def __init__(self, urls: UrlRewriter, banner: str) -> None:
        super().__init__(convert_charrefs=False)
        self.urls = urls
        self.banner = banner
        self.out: list[str] = []
        self._in_style = False

    def _attributes(self, tag: str, attrs: list[tuple[str, str | None]]) -> str:
        if tag == "base":
            for name, value in attrs:
                if name == "href" and value:
                    resolved = self.urls.absolute(value)
                    if resolved is not None:
                        self.urls.base = resolved
        refresh = tag == "meta" and any(
            n == "http-equiv" and (v or "").strip().lower() == "refresh" for n, v in attrs
        )
        parts: list[str] = []
        for name, value in attrs:
            if name in _DROPPED:
                continue
            if value is None:
                parts.append(f" {name}")
                continue
            new = value
            if tag in _URL_ATTRIBUTES.get(name, ()) or (tag == "base" and name == "href"):
                modifier = FRAME if (tag, name) in _FRAMES else ""
                new = self.urls.rewrite(value, modifier=modifier, navigational=(tag, name) in _NAVIGATION)
            elif name == "srcset" and tag in _SRCSET_TAGS:
                new = self.urls.rewrite_srcset(value)
            elif name == "style":
                new = self.urls.rewrite_css(value)
            elif refresh and name == "content":
                new = self.urls.rewrite_refresh(value)
            parts.append(f' {name}="{html.escape(new, quote=True)}"')
        return "".join(parts)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.out.append(f"<{tag}{self._attributes(tag, attrs)}>")
        if tag == "style":
            self._in_style = True
        if tag == "body" and self.banner:
            self.out.append(self.banner)
            self.banner = ""

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.out.append(f"<{tag}{self._attributes(tag, attrs)} />")

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False
        self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        self.out.append(self.urls.rewrite_css(data) if self._in_style else data)

    def handle_entityref(self, name: str) -> None:
        self.out.append(f"&{name};")

    def handle_charref(self, name: str) -> None:
        self.out.append(f"&#{name};")

    def handle_comment(self, data: str) -> None:
        self.out.append(f"<!--{data}-->")

    def handle_decl(self, decl: str) -> None:
        self.out.append(f"<!{decl}>")

    def handle_pi(self, data: str) -> None:
        self.out.append(f"<?{data}>")

    def unknown_decl(self, data: str) -> None:
        self.out.append(f"<![{data}]>")


def rewrite_html(text: str, urls: UrlRewriter, banner: str = "") -> str:
    """The document `text` with its URLs rewritten; `banner` (trusted HTML) follows ``<body>``."""
    rewriter = _HtmlRewriter(urls, banner)
    rewriter.feed(text)
    rewriter.close()
    if rewriter.banner:  # no <body> tag: the browser moves trailing content into the body
        rewriter.out.append(rewriter.banner)
    return "".join(rewriter.out)
