"""The export's rewriting of HTML and CSS: links point at the mirror's files.

Links are found and replaced by the shared rewriter (`archiver_plugins.markup.rewrite`),
which keeps every other byte; what each becomes is the `LinkMap`'s answer.  Here are the
export's own changes.  ``<base href>`` decides how the others resolve and is then
disabled (renamed), since the mirror's links are relative to each file; so is a
``<meta http-equiv=refresh>`` whose target is not in the mirror, which would otherwise
take the reader to the live web without a click.  A local stylesheet or script loses
`integrity`/`crossorigin`, which file:// pages cannot satisfy.  Links left pointing at
the web on `<a>`/`<area>` can be marked with ``data-archive-missing=REASON`` and a
`title` that says why, so they are visible without CSS.
"""

from __future__ import annotations

import re

from archiver.api import LinkKind

from ..markup import rewrite
from ..markup.markup import DISARMED, Tag, disarm_refreshes
from ..markup.rewrite import Edits, quote_attribute
from .mapping import PAGE, LinkMap, Mapped

__all__ = ["MISSING_ATTRIBUTE", "rewrite_css", "rewrite_html"]

MISSING_ATTRIBUTE = "data-archive-missing"

_MARKED = frozenset({"a", "area"})
_TO_THE_WEB = re.compile(r"(?:(?:https?|ftp|wss?):|[/\\\\]{2})", re.IGNORECASE)
_CHARSET_META = re.compile(r"<meta\b[^>]*?(?:charset\s*=|http-equiv\s*=\s*[\"']?content-type)", re.IGNORECASE)
_DOCTYPE = re.compile(r"\s*<!doctype[^>]*>", re.IGNORECASE)


class _Export:
    """The export's side of the rewriting of one HTML document."""

    def __init__(self, links: LinkMap, mark_missing: bool) -> None:
        self.links = links
        self.mark_missing = mark_missing
        self.charset_at: dict[str, int] = {}
        self._local = False
        self._missing: Mapped | None = None

    def link(self, raw: str, base: str, kind: LinkKind | None, tag: Tag | None) -> str | None:
        mapped = self.links(raw, base, kind or PAGE)
        if mapped.missing:
            if kind is LinkKind.PAGE:
                self._missing = mapped
            if tag is not None and tag.name == "meta":
                return None  # a refresh to the web is disarmed instead
        elif mapped.value is not None:
            self._local = True
        return mapped.value

    def tag_done(self, tag: Tag, edits: Edits) -> None:
        name = tag.name
        if name in ("head", "html") and tag.closed:
            self.charset_at.setdefault(name, tag.end)
        elif name == "base":
            href = tag.get("href")
            if href is not None:
                edits.rename(href, "data-archived-base-href")
        elif name == "meta" and self._missing is not None:
            equiv = tag.get("http-equiv")
            if equiv is not None:  # a refresh to the web: kept visible, but inert
                edits.rename(equiv, DISARMED)
        elif self._local and name in ("link", "script"):
            for dropped in ("integrity", "crossorigin"):
                attribute = tag.get(dropped)
                if attribute is not None:
                    edits.remove(attribute)
        elif self._missing is not None and self.mark_missing and name in _MARKED and tag.closed:
            reason = self._missing.reason or "not archived"
            extra = f" {MISSING_ATTRIBUTE}=" + quote_attribute(reason)
            if tag.get("title") is None:
                title = f"Not in the archive ({reason}): {self._missing.target or ''}"
                extra += " title=" + quote_attribute(title)
            edits.insert(tag.end - 1, extra)
        self._local = False
        self._missing = None

    def charset_position(self, text: str) -> int:
        for wanted in ("head", "html"):
            if wanted in self.charset_at:
                return self.charset_at[wanted]
        doctype = _DOCTYPE.match(text)
        return doctype.end() if doctype else 0


def rewrite_html(
    text: str,
    url: str,
    links: LinkMap,
    *,
    mark_missing: bool = True,
    charset: str | None = None,
) -> str:
    """`text` (the document found at `url`) with its links mapped through `links`.

    `charset`, when given, is declared with a ``<meta charset>`` if the document does not
    declare one itself: a file opened from disk has no Content-Type header to say it.
    """
    export = _Export(links, mark_missing)
    edits = rewrite.html_edits(text, url, export, also=frozenset({"head", "html"}))
    if charset and not _CHARSET_META.search(text):
        edits.insert(export.charset_position(text), f'<meta charset="{charset}">')
    return disarm_refreshes(edits.apply(text), _stays_local)


def rewrite_css(text: str, base: str, links: LinkMap, *, imports: bool = True) -> str:
    """`text` with each `url()` and `@import` mapped through `links`, relative to `base`."""

    def link(raw: str, base: str, kind: LinkKind | None, tag: Tag | None) -> str | None:
        return links(raw, base, kind or PAGE).value

    return rewrite.rewrite_css(text, base, link, imports=imports)


def _stays_local(url: str) -> bool:
    """A refresh target that does not lead to the web (a file of the mirror)."""
    return _TO_THE_WEB.match(url.replace("\t", "").replace("\n", "").replace("\r", "")) is None
