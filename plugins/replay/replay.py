"""Rewrite archived HTML and CSS so that everything they load comes from the archive.

A replayed page must never reach the live web: every URL in an attribute, a
``srcset``, a ``<meta refresh>``, an inline style, a ``<style>`` block or a
stylesheet is made absolute against the page's (or ``<base>``'s) URL and pointed at
``/replay/TIMESTAMP[MODIFIER]/URL`` on this server.  Links to pages the archive does
not hold go to ``/missing/TIMESTAMP/URL`` instead, so a reader sees at once that
they lead nowhere.  Scripts are not rewritten; the Content-Security-Policy the
server adds keeps whatever they compute inside the server.

The HTML is not re-serialized: the links are found and replaced by the rewriter shared
with the export (`archiver_plugins.markup.rewrite`), which keeps every other byte and
quotes each rewritten value so that it can never break out of its attribute.  A link
that would open a new window (``target=_blank``) opens in the same one, since replayed
pages may open none.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from archiver.api import LinkKind

from ..markup import rewrite
from ..markup.markup import Tag, disarm_refreshes
from ..markup.rewrite import Edits

REPLAY_PREFIX = "/replay/"
MISSING_PREFIX = "/missing/"

FRAME = "if_"
"""Modifier for a document shown inside a frame: rewritten, no banner."""
IDENTITY = "id_"
"""Modifier for the bytes exactly as archived (still under the replay CSP)."""
MODIFIERS = ("", FRAME, IDENTITY)

_KEEP_SCHEMES = ("data:", "blob:", "about:", "javascript:", "mailto:", "tel:", "#")
_NAVIGATION = frozenset({"a", "area"})
_FRAMES = frozenset({"iframe", "frame"})
_TARGETS = frozenset({"a", "area", "form", "base"})
_DROPPED = frozenset({"integrity", "ping"})
"""`integrity` would reject a rewritten stylesheet; `ping` reports clicks to a live server."""
_DOCTYPE = re.compile(r"\A\ufeff?\s*<!doctype[^>]*>", re.IGNORECASE)


@dataclass
class UrlRewriter:
    """Maps URLs found in one archived document to URLs on this server.

    `is_archived(url)` answers whether the archive holds `url` (any capture); it is
    asked for navigational links only, which become ``/missing/`` links when not.
    """

    base: str
    timestamp: str
    is_archived: Callable[[str], bool] | None = None

    def absolute(self, value: str, base: str | None = None) -> str | None:
        """`value` resolved against `base` (the document's by default): an http(s) URL, or None."""
        value = value.strip().replace("\n", "").replace("\r", "").replace("\t", "")
        if not value:
            return None
        try:
            url = urljoin(base or self.base, value)
            parts = urlsplit(url)
        except ValueError:
            return None
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return None
        return url

    def rewrite(
        self, value: str, *, modifier: str = "", navigational: bool = False, base: str | None = None
    ) -> str:
        stripped = value.strip()
        if not stripped or stripped.lower().startswith(_KEEP_SCHEMES):
            return value
        url = self.absolute(stripped, base)
        if url is None:
            return MISSING_PREFIX + self.timestamp + "/" + stripped
        if navigational and self.is_archived is not None:
            target = url.split("#", 1)[0]
            if not self.is_archived(target):
                return MISSING_PREFIX + self.timestamp + "/" + url
        return replay_path(self.timestamp, url, modifier)

    def link(self, raw: str, base: str, kind: LinkKind | None, tag: Tag | None) -> str | None:
        """The replay's answer to the shared rewriter: where the URL `raw` is served from."""
        name = tag.name if tag is not None else ""
        new = self.rewrite(
            raw,
            modifier=FRAME if name in _FRAMES else "",
            navigational=name in _NAVIGATION and kind is LinkKind.PAGE,
            base=base,
        )
        return None if new == raw else new

    def rewrite_css(self, css: str) -> str:
        return rewrite.rewrite_css(css, self.base, self.link)


def replay_path(timestamp: str, url: str, modifier: str = "") -> str:
    """The path on this server that replays `url` as archived near `timestamp`."""
    return f"{REPLAY_PREFIX}{timestamp}{modifier}/{url}"


@dataclass
class _Replay:
    """The replay's side of the rewriting of one HTML document."""

    urls: UrlRewriter
    ends: dict[str, int] = field(default_factory=dict)
    """Where the first complete ``<head>``, ``<html>`` and ``<body>`` start tags end."""

    def link(self, raw: str, base: str, kind: LinkKind | None, tag: Tag | None) -> str | None:
        return self.urls.link(raw, base, kind, tag)

    def tag_done(self, tag: Tag, edits: Edits) -> None:
        name = tag.name
        if name in ("head", "html", "body") and tag.closed:
            self.ends.setdefault(name, tag.end)
        for attribute in tag.attributes:
            value = attribute.value
            if attribute.name in _DROPPED:
                edits.remove(attribute)
            elif value is None:
                continue
            elif name == "base" and attribute.name == "href":
                new = self.urls.rewrite(value)
                if new != value:
                    edits.set_value(attribute, new)
            elif attribute.name == "target" and name in _TARGETS and value.strip().lower() == "_blank":
                edits.set_value(attribute, "_self")  # replayed pages open no window: the link opens here


def rewrite_html(text: str, urls: UrlRewriter, banner: str = "", preamble: str = "") -> str:
    """The document `text` with its URLs rewritten; `banner` (trusted HTML) follows ``<body>``.

    `preamble` (trusted HTML) comes before anything of the document that can run: after
    the ``<head>`` or ``<html>`` start tag, or else after the doctype.

    Only the rewritten attribute values (and the CSS of ``<style>`` elements) change;
    every other byte stays as archived, and the tags are found as a browser finds them.
    """
    replay = _Replay(urls)
    edits = rewrite.html_edits(text, urls.base, replay, also=frozenset({"head", "html", "body"}))
    if preamble:
        doctype = _DOCTYPE.match(text)
        at = replay.ends.get("head", replay.ends.get("html", doctype.end() if doctype else 0))
        edits.insert(at, preamble)
    if banner and "body" in replay.ends:
        edits.insert(replay.ends["body"], banner)
        banner = ""
    # no <body> tag: the browser moves trailing content into the body
    return disarm_refreshes(edits.apply(text) + banner, _on_server)


def _on_server(url: str) -> bool:
    return url.startswith((REPLAY_PREFIX, MISSING_PREFIX))
