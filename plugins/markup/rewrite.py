"""Rewrite the links of an HTML document or a stylesheet in place, keeping every other byte.

A parser that builds a tree (selectolax, html5lib) writes the document back in its own
form: attribute quoting, entity spelling, whitespace and broken markup all change.  Here
the tags are found as a browser's tokenizer finds them (`markup.scan_tags`), the links
in them as the `grammar` describes them, and the document is copied with just those
spans replaced: a rewritten attribute value is written again in double quotes, escaped
so it cannot break out; in CSS only the URL (with its quotes) changes.

The export and the replay share this; each passes a `Rewriting` that says what a URL
becomes (a file of the mirror, a path on the replay server) and what else changes in a
tag (a ``<base>``, ``integrity``, a mark on a missing link).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urljoin, urlsplit

from archiver.api import LinkKind

from .grammar import CSS, ELEMENTS, REFRESH, SRCSET, css_references, refresh_span, slots, srcset_spans
from .markup import Attribute, Tag, scan_tags

__all__ = ["Edits", "MapUrl", "Rewriting", "document_base", "html_edits", "quote_attribute", "rewrite_css"]

_WS = "\t\n\f\r "

MapUrl = Callable[[str, str, LinkKind | None, Tag | None], str | None]
"""(raw URL, base URL, kind, tag or None in a stylesheet) -> what to write instead, or None to keep it."""


class Rewriting(Protocol):
    """What one user of the rewriter changes."""

    def link(self, raw: str, base: str, kind: LinkKind | None, tag: Tag | None) -> str | None:
        """What to write instead of the URL `raw` found in `tag` (None: keep it)."""
        ...

    def tag_done(self, tag: Tag, edits: Edits) -> None:
        """Any other change to `tag`, once its links are mapped."""
        ...


def quote_attribute(value: str) -> str:
    """`value` as a double-quoted attribute value: only ``&`` and ``"`` need escaping there."""
    return '"' + value.replace("&", "&amp;").replace('"', "&quot;") + '"'


@dataclass
class Edits:
    """Replacements of spans of one text, applied at once."""

    spans: list[tuple[int, int, str]] = field(default_factory=list)

    def replace(self, start: int, end: int, text: str) -> None:
        self.spans.append((start, end, text))

    def insert(self, at: int, text: str) -> None:
        self.spans.append((at, at, text))

    def set_value(self, attribute: Attribute, value: str) -> None:
        self.spans.append((attribute.value_start, attribute.end, quote_attribute(value)))

    def rename(self, attribute: Attribute, name: str) -> None:
        self.spans.append((attribute.start, attribute.start + len(attribute.name), name))

    def remove(self, attribute: Attribute) -> None:
        self.spans.append((attribute.start, attribute.end, ""))

    def apply(self, text: str) -> str:
        """`text` with the edits made (`text` itself when there are none)."""
        if not self.spans:
            return text
        out: list[str] = []
        last = 0
        for start, end, replacement in sorted(self.spans, key=lambda span: (span[0], span[1])):
            if start < last:
                continue  # overlapping edits are not made; none are expected
            out.append(text[last:start])
            out.append(replacement)
            last = end
        out.append(text[last:])
        return "".join(out)


def document_base(tags: list[Tag], url: str) -> str:
    """The URL the document's links resolve against: the first ``<base>`` with an ``href``,
    when that resolves to an http(s) URL, else the document's own."""
    for tag in tags:
        href = tag.get("href") if tag.name == "base" else None
        if href is None:
            continue
        try:
            base = urljoin(url, (href.value or "").strip(_WS))
            parts = urlsplit(base)
        except ValueError:
            return url
        return base if parts.scheme in ("http", "https") and parts.netloc else url
    return url


def _quote_css(value: str, quote: str) -> str:
    escaped = value.replace("\\", "\\\\").replace(quote, "\\" + quote).replace("\n", "\\a ")
    return quote + escaped + quote


def _srcset_url(value: str) -> str:
    """`value` made to read back as one srcset URL: no space in it, no comma at its ends."""
    for space in _WS:
        if space in value:
            value = value.replace(space, "%" + format(ord(space), "02X"))
    if value.startswith(",") or value.endswith(","):
        value = value.replace(",", "%2C")
    return value


def rewrite_css(text: str, base: str, link: MapUrl, *, imports: bool = True, tag: Tag | None = None) -> str:
    """`text` with each ``url()`` and ``@import`` mapped by `link`, relative to `base`.

    `imports=False` for a ``style`` attribute, where ``@import`` means nothing.
    """
    lowered = text.lower()
    if "url(" not in lowered and "@import" not in lowered:
        return text
    edits = Edits()
    for start, end, url, kind, quote in css_references(text, imports=imports):
        new = link(url, base, kind, tag)
        if new is not None and new != url:
            edits.replace(start, end, _quote_css(new, quote or '"'))
    return edits.apply(text)


def _rewrite_value(syntax: str, value: str, base: str, link: MapUrl, kind: LinkKind | None, tag: Tag) -> str:
    if syntax is CSS:
        return rewrite_css(value, base, link, imports=False, tag=tag)
    if syntax is SRCSET:
        spans = srcset_spans(value)
    elif syntax is REFRESH:
        span = refresh_span(value)
        spans = [] if span is None else [span]
    else:
        spans = [(0, len(value))]
    edits = Edits()
    for start, end in spans:
        raw = value[start:end]
        new = link(raw.strip(_WS), base, kind, tag)
        if new is not None and new != raw:
            edits.replace(start, end, _srcset_url(new) if syntax is SRCSET else new)
    return edits.apply(value)


def html_edits(text: str, url: str, rewriting: Rewriting, also: frozenset[str] = frozenset()) -> Edits:
    """The edits that map every link of the HTML document `text` (found at `url`).

    `rewriting.tag_done` sees every tag that holds a link and those named in `also`.
    """
    tags = scan_tags(text, ELEMENTS | also | {"base", "style"})
    base = document_base(tags, url)
    edits = Edits()
    for tag in tags:
        attributes = {attribute.name: attribute.value for attribute in tag.attributes}
        for name, syntax, kind in slots(tag.name, attributes):
            attribute = tag.get(name)
            if attribute is None or not attribute.value:
                continue
            new = _rewrite_value(syntax, attribute.value, base, rewriting.link, kind, tag)
            if new != attribute.value:
                edits.set_value(attribute, new)
        if tag.name == "style" and tag.content is not None:
            start, end = tag.content
            css = text[start:end]
            new = rewrite_css(css, base, rewriting.link, tag=tag)
            if new != css:
                edits.replace(start, end, new)
        rewriting.tag_done(tag, edits)
    return edits
