"""Rewrite the links of an HTML document in place, keeping every other byte as it was.

A parser that builds a tree (selectolax, html5lib) writes the document back in its own
form: attribute quoting, entity spelling, whitespace and broken markup all change.
Here a scanner that follows the HTML standard's tokenizer (`archiver_plugins.links.markup`)
only finds where each link is written; the document is then copied with just those
spans replaced.

What is rewritten: URL attributes of the elements that load or link something (`href`,
`src`, `poster`, `data`, `background`, `action`, `cite`, SVG `href`/`xlink:href`),
`srcset`/`imagesrcset`, `<meta http-equiv=refresh>`, `style` attributes and `<style>`
elements (CSS `url()` and `@import`).  ``<base href>`` decides how the others resolve
and is then disabled (renamed), since the mirror's links are relative to each file; so is
a ``<meta http-equiv=refresh>`` whose target is not in the mirror, which would otherwise
take the reader to the live web without a click.
A local stylesheet or script loses `integrity`/`crossorigin`, which file:// pages
cannot satisfy.  Links left pointing at the web on `<a>`/`<area>` can be marked with
``data-archive-missing=REASON`` and a `title` that says why, so they are visible without CSS.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin

from ..links.markup import DISARMED, RAW_TEXT, Attribute, Tag, disarm_refreshes, scan_tags
from .css import rewrite_css
from .mapping import PAGE, REQUISITE, LinkMap, Mapped
from .srcset import rewrite_refresh, rewrite_srcset

__all__ = ["MISSING_ATTRIBUTE", "rewrite_html"]

MISSING_ATTRIBUTE = "data-archive-missing"

_WS = "\t\n\f\r "
_STYLESHEET_RELS = frozenset(
    {"stylesheet", "icon", "shortcut", "apple-touch-icon", "preload", "prefetch", "modulepreload", "manifest"}
)

_SVG_HREF = {"href": REQUISITE, "xlink:href": REQUISITE}
URL_ATTRIBUTES: dict[str, dict[str, str]] = {
    "a": {"href": PAGE, "xlink:href": PAGE},
    "area": {"href": PAGE},
    "link": {"href": PAGE},
    "img": {"src": REQUISITE, "lowsrc": REQUISITE},
    "image": _SVG_HREF,
    "use": _SVG_HREF,
    "feimage": _SVG_HREF,
    "script": {"src": REQUISITE, "href": REQUISITE, "xlink:href": REQUISITE},
    "iframe": {"src": PAGE},
    "frame": {"src": PAGE},
    "embed": {"src": REQUISITE},
    "object": {"data": REQUISITE},
    "video": {"src": REQUISITE, "poster": REQUISITE},
    "audio": {"src": REQUISITE},
    "source": {"src": REQUISITE},
    "track": {"src": REQUISITE},
    "input": {"src": REQUISITE},
    "body": {"background": REQUISITE},
    "table": {"background": REQUISITE},
    "td": {"background": REQUISITE},
    "th": {"background": REQUISITE},
    "form": {"action": PAGE},
    "blockquote": {"cite": PAGE},
    "q": {"cite": PAGE},
    "ins": {"cite": PAGE},
    "del": {"cite": PAGE},
}
SRCSET_ATTRIBUTES = {"img": "srcset", "source": "srcset", "link": "imagesrcset"}
_MARKED = frozenset({"a", "area"})
_INTERESTING = (
    frozenset(URL_ATTRIBUTES) | frozenset(SRCSET_ATTRIBUTES) | RAW_TEXT | {"meta", "base", "head", "html"}
)
_TO_THE_WEB = re.compile(r"(?:(?:https?|ftp|wss?):|[/\\\\]{2})", re.IGNORECASE)
_CHARSET_META = re.compile(r"<meta\b[^>]*?(?:charset\s*=|http-equiv\s*=\s*[\"']?content-type)", re.IGNORECASE)


def _quote(value: str) -> str:
    return '"' + value.replace("&", "&amp;").replace('"', "&quot;") + '"'


def iter_tags(text: str) -> list[tuple[Tag, tuple[int, int] | None]]:
    """Every start tag of `text` that can hold a link, with the span of a raw-text element's text."""
    return [(tag, tag.content) for tag in scan_tags(text, _INTERESTING)]


def _link_kind(tag: Tag, attribute: str, default: str) -> str:
    if tag.name == "link" and attribute == "href":
        rel = (tag.get("rel") or Attribute("rel", "", 0, 0, 0)).value or ""
        if _STYLESHEET_RELS & set(rel.lower().split()):
            return REQUISITE
    return default


def _charset_position(text: str, tags: list[tuple[Tag, tuple[int, int] | None]]) -> int:
    for wanted in ("head", "html"):
        for tag, _ in tags:
            if tag.name == wanted and tag.closed:
                return tag.end
    stripped = text.lstrip()
    if stripped[:9].lower() == "<!doctype":
        end = text.find(">", len(text) - len(stripped))
        return 0 if end < 0 else end + 1
    return 0


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
    tags = iter_tags(text)
    base = url
    for tag, _ in tags:
        if tag.name == "base":
            href = tag.get("href")
            if href is not None and href.value is not None:
                base = urljoin(url, href.value.strip(_WS))
                break
    edits: list[tuple[int, int, str]] = []
    for tag, content in tags:
        _rewrite_tag(tag, base, links, mark_missing, edits)
        if tag.name == "style" and content is not None:
            start, end = content
            css = text[start:end]
            new = rewrite_css(css, base, links)
            if new != css:
                edits.append((start, end, new))
    if charset and not _CHARSET_META.search(text):
        position = _charset_position(text, tags)
        edits.append((position, position, f'<meta charset="{charset}">'))
    if not edits:
        return disarm_refreshes(text, _stays_local)
    edits.sort(key=lambda edit: (edit[0], edit[1]))
    out: list[str] = []
    last = 0
    for start, end, replacement in edits:
        if start < last:
            continue  # overlapping edits cannot happen; be safe anyway
        out.append(text[last:start])
        out.append(replacement)
        last = end
    out.append(text[last:])
    return disarm_refreshes("".join(out), _stays_local)


def _stays_local(url: str) -> bool:
    """A refresh target that does not lead to the web (a file of the mirror)."""
    return _TO_THE_WEB.match(url.replace("\t", "").replace("\n", "").replace("\r", "")) is None


def _replace_value(attribute: Attribute, value: str, edits: list[tuple[int, int, str]]) -> None:
    edits.append((attribute.value_start, attribute.end, _quote(value)))


def _rewrite_tag(
    tag: Tag, base: str, links: LinkMap, mark_missing: bool, edits: list[tuple[int, int, str]]
) -> None:
    name = tag.name
    if name == "base":
        href = tag.get("href")
        if href is not None:
            edits.append((href.start, href.start + len("href"), "data-archived-base-href"))
        return
    local = False
    missing: Mapped | None = None
    for attribute_name, default_kind in URL_ATTRIBUTES.get(name, {}).items():
        attribute = tag.get(attribute_name)
        if attribute is None or attribute.value is None:
            continue
        mapped = links(attribute.value.strip(_WS), base, _link_kind(tag, attribute_name, default_kind))
        if mapped.value is not None and mapped.value != attribute.value:
            _replace_value(attribute, mapped.value, edits)
        if mapped.missing:
            missing = mapped
        elif mapped.value is not None:
            local = True
    srcset_name = SRCSET_ATTRIBUTES.get(name)
    if srcset_name:
        attribute = tag.get(srcset_name)
        if attribute is not None and attribute.value:
            new = rewrite_srcset(attribute.value, base, links)
            if new != attribute.value:
                _replace_value(attribute, new, edits)
    if name == "meta":
        equiv = tag.get("http-equiv")
        content = tag.get("content")
        if equiv and (equiv.value or "").strip().lower() == "refresh" and content and content.value:
            targets: list[Mapped] = []

            def recording(raw: str, base: str, kind: str) -> Mapped:
                targets.append(links(raw, base, kind))
                return targets[-1]

            new = rewrite_refresh(content.value, base, recording)
            if any(target.missing for target in targets):  # a refresh to the web: keep it visible, but inert
                edits.append((equiv.start, equiv.start + len("http-equiv"), DISARMED))
            elif new != content.value:
                _replace_value(content, new, edits)
    style = tag.get("style")
    if style is not None and style.value:
        new = rewrite_css(style.value, base, links, imports=False)
        if new != style.value:
            _replace_value(style, new, edits)
    if local and name in ("link", "script"):
        for dropped in ("integrity", "crossorigin"):
            attribute = tag.get(dropped)
            if attribute is not None:
                edits.append((attribute.start, attribute.end, ""))
    if missing is not None and mark_missing and name in _MARKED and tag.closed:
        reason = missing.reason or "not archived"
        extra = f" {MISSING_ATTRIBUTE}=" + _quote(reason)
        if tag.get("title") is None:
            extra += " title=" + _quote(f"Not in the archive ({reason}): {missing.target or ''}")
        edits.append((tag.end - 1, tag.end - 1, extra))
