"""Rewrite archived HTML and CSS so that everything they load comes from the archive.

A replayed page must never reach the live web: every URL in an attribute, a
``srcset``, a ``<meta refresh>``, an inline style, a ``<style>`` block or a
stylesheet is made absolute against the page's (or ``<base>``'s) URL and pointed at
``/replay/TIMESTAMP[MODIFIER]/URL`` on this server.  Links to pages the archive does
not hold go to ``/missing/TIMESTAMP/URL`` instead, so a reader sees at once that
they lead nowhere.  Scripts are not rewritten; the Content-Security-Policy the
server adds keeps whatever they compute inside the server.

The HTML is not re-serialized: the tags are found as a browser's tokenizer finds them
(`archiver_plugins.links.markup`, shared with the export) and only the rewritten values
are replaced, escaped and quoted, so markup the browser tolerates stays as it was and a
value can never break out of its attribute.  A link that would open a new window
(``target=_blank``) opens in the same one, since replayed pages may open none.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from ..links.markup import Attribute, Tag, disarm_refreshes, scan_tags

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


_TARGETS = frozenset({"a", "area", "form", "base"})
_INTERESTING = (
    frozenset(tag for tags in _URL_ATTRIBUTES.values() for tag in tags)
    | _SRCSET_TAGS
    | _TARGETS
    | {"base", "body", "head", "html", "meta", "style"}
)


def _quote(value: str) -> str:
    return '"' + html.escape(value, quote=True) + '"'


def _rewrite_tag(tag: Tag, urls: UrlRewriter, edits: list[tuple[int, int, str]]) -> None:
    name = tag.name
    refresh = name == "meta" and (
        ((tag.get("http-equiv") or _NO_VALUE).value or "").strip().lower() == "refresh"
    )
    for attribute in tag.attributes:
        if attribute.name in _DROPPED:
            edits.append((attribute.start, attribute.end, ""))
            continue
        value = attribute.value
        if value is None:
            continue
        new = value
        if name in _URL_ATTRIBUTES.get(attribute.name, ()) or (name == "base" and attribute.name == "href"):
            modifier = FRAME if (name, attribute.name) in _FRAMES else ""
            new = urls.rewrite(value, modifier=modifier, navigational=(name, attribute.name) in _NAVIGATION)
        elif attribute.name == "srcset" and name in _SRCSET_TAGS:
            new = urls.rewrite_srcset(value)
        elif attribute.name == "style":
            new = urls.rewrite_css(value)
        elif refresh and attribute.name == "content":
            new = urls.rewrite_refresh(value)
        elif attribute.name == "target" and name in _TARGETS and value.strip().lower() == "_blank":
            new = "_self"  # replayed pages open no window: the link opens here instead
        if new != value:
            edits.append((attribute.value_start, attribute.end, _quote(new)))


_NO_VALUE = Attribute("", None, 0, 0, 0)


def rewrite_html(text: str, urls: UrlRewriter, banner: str = "", preamble: str = "") -> str:
    """The document `text` with its URLs rewritten; `banner` (trusted HTML) follows ``<body>``.

    `preamble` (trusted HTML) comes before anything of the document that can run: after
    the ``<head>`` or ``<html>`` start tag, or else after the doctype.

    Only the rewritten attribute values (and the CSS of ``<style>`` elements) change;
    every other byte stays as archived, and the tags are found as a browser finds them.
    """
    tags = scan_tags(text, _INTERESTING)
    for tag in tags:
        href = tag.get("href") if tag.name == "base" else None
        if href is not None and href.value:
            resolved = urls.absolute(href.value)
            if resolved is not None:
                urls.base = resolved  # the first <base href> decides, for the whole document
                break
    edits: list[tuple[int, int, str]] = []
    if preamble:
        at = _preamble_position(text, tags)
        edits.append((at, at, preamble))
    for tag in tags:
        _rewrite_tag(tag, urls, edits)
        if tag.name == "style" and tag.content is not None:
            start, end = tag.content
            css = text[start:end]
            new = urls.rewrite_css(css)
            if new != css:
                edits.append((start, end, new))
        if banner and tag.name == "body" and tag.closed:
            edits.append((tag.end, tag.end, banner))
            banner = ""
    edits.sort(key=lambda edit: (edit[0], edit[1]))
    out: list[str] = []
    last = 0
    for start, end, replacement in edits:
        out.append(text[last:start])
        out.append(replacement)
        last = end
    out.append(text[last:])
    out.append(banner)  # no <body> tag: the browser moves trailing content into the body
    return disarm_refreshes("".join(out), _on_server)


def _preamble_position(text: str, tags: list[Tag]) -> int:
    for name in ("head", "html"):
        for tag in tags:
            if tag.name == name and tag.closed:
                return tag.end
    doctype = _DOCTYPE.match(text)
    return doctype.end() if doctype else 0


_DOCTYPE = re.compile(r"\A\ufeff?\s*<!doctype[^>]*>", re.IGNORECASE)


def _on_server(url: str) -> bool:
    return url.startswith((REPLAY_PREFIX, MISSING_PREFIX))
