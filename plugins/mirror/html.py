"""Rewrite the links of an HTML document in place, keeping every other byte as it was.

A parser that builds a tree (selectolax, html5lib) writes the document back in its own
form: attribute quoting, entity spelling, whitespace and broken markup all change.
Here a tokenizer written after the HTML standard's tokenizer states (comments, bogus
comments, end tags, raw-text and RCDATA elements, the three attribute value forms, an
unterminated quote running to the end) only finds where each link is written; the
document is then copied with just those spans replaced.

What is rewritten: URL attributes of the elements that load or link something (`href`,
`src`, `poster`, `data`, `background`, `action`, `cite`, SVG `href`/`xlink:href`),
`srcset`/`imagesrcset`, `<meta http-equiv=refresh>`, `style` attributes and `<style>`
elements (CSS `url()` and `@import`).  ``<base href>`` decides how the others resolve
and is then disabled (renamed), since the mirror's links are relative to each file.
A local stylesheet or script loses `integrity`/`crossorigin`, which file:// pages
cannot satisfy.  Links left pointing at the web on `<a>`/`<area>` can be marked with
``data-archive-missing=REASON`` and a `title` that says why, so they are visible without CSS.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from urllib.parse import urljoin

from .css import rewrite_css
from .mapping import PAGE, REQUISITE, LinkMap, Mapped
from .srcset import rewrite_refresh, rewrite_srcset

__all__ = ["MISSING_ATTRIBUTE", "rewrite_html"]

MISSING_ATTRIBUTE = "data-archive-missing"

_WS = "\t\n\f\r "
_TAG_OPEN = re.compile(r"<(?:(!--)|([!?])|(/)|([A-Za-z][^\t\n\f\r />]*))")
_ATTRIBUTE = re.compile(
    r"[\t\n\f\r /]*(?:(?P<end>>)|(?P<name>[^\t\n\f\r />][^\t\n\f\r />=]*)"
    r"(?:[\t\n\f\r ]*=[\t\n\f\r ]*"
    r"""(?:"(?P<dq>[^"]*)(?:"|\Z)|'(?P<sq>[^']*)(?:'|\Z)|(?P<uq>[^\t\n\f\r >]+)))?"""
    r"|\Z)"
)
# The rest of a start tag, quoted values may hold '>': to skip tags that hold no link.
_TAG_REST = re.compile(r"""(?:[^>"']++|"[^"]*+(?:"|\Z)|'[^']*+(?:'|\Z))*+(?:>|\Z)""")
_RAW_TEXT = frozenset({"script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes"})
_RAW_END = {name: re.compile(rf"</{name}[\t\n\f\r />]", re.IGNORECASE) for name in _RAW_TEXT}
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
    frozenset(URL_ATTRIBUTES)
    | frozenset(SRCSET_ATTRIBUTES)
    | _RAW_TEXT
    | {"meta", "base", "head", "html", "plaintext"}
)
_CHARSET_META = re.compile(r"<meta\b[^>]*?(?:charset\s*=|http-equiv\s*=\s*[\"']?content-type)", re.IGNORECASE)


@dataclass(slots=True)
class _Attribute:
    name: str
    value: str | None
    start: int  # of the name
    value_start: int  # of the value including its quote; == end when there is no value
    end: int  # just past the value (and its closing quote)


@dataclass(slots=True)
class _Tag:
    name: str
    start: int
    end: int  # just past '>' (or the end of the text)
    closed: bool
    attributes: list[_Attribute] = field(default_factory=list)

    def get(self, name: str) -> _Attribute | None:
        for attribute in self.attributes:
            if attribute.name == name:
                return attribute
        return None


def _quote(value: str) -> str:
    return '"' + value.replace("&", "&amp;").replace('"', "&quot;") + '"'


def _parse_tag(text: str, name: str, start: int, position: int) -> _Tag:
    tag = _Tag(name=name, start=start, end=len(text), closed=False)
    seen: set[str] = set()
    while True:
        match = _ATTRIBUTE.match(text, position)
        if match is None or (match.end() == position and match.group("end") is None):
            return tag
        position = match.end()
        if match.group("end") is not None:
            tag.end = position
            tag.closed = True
            return tag
        if match.group("name") is None:
            return tag  # end of text inside the tag
        lowered = match.group("name").lower()
        if lowered in seen:
            continue  # the first of duplicated attributes counts, as in HTML
        seen.add(lowered)
        value: str | None = None
        value_start = match.end()
        for group in ("dq", "sq", "uq"):
            raw = match.group(group)
            if raw is not None:
                value = html.unescape(raw) if "&" in raw else raw
                value_start = match.start(group) - (1 if group != "uq" else 0)
                break
        tag.attributes.append(_Attribute(lowered, value, match.start("name"), value_start, match.end()))


def iter_tags(text: str) -> list[tuple[_Tag, tuple[int, int] | None]]:
    """Every start tag of `text`, with the span of its raw text content for raw-text elements."""
    tags: list[tuple[_Tag, tuple[int, int] | None]] = []
    position = 0
    length = len(text)
    while True:
        lt = text.find("<", position)
        if lt < 0:
            return tags
        match = _TAG_OPEN.match(text, lt)
        if match is None:
            position = lt + 1
            continue
        if match.group(1):  # <!-- comment -->
            end = text.find("-->", lt + 2)
            position = length if end < 0 else end + 3
            continue
        if match.group(2) or match.group(3):  # <!doctype>, <?...>, </end tag>
            end = text.find(">", match.end())
            position = length if end < 0 else end + 1
            continue
        name = match.group(4).lower()
        if name not in _INTERESTING:
            rest = _TAG_REST.match(text, match.end())
            assert rest is not None  # the pattern matches at least the end of the text
            if "style" not in rest.group().lower():
                position = rest.end()
                continue
        tag = _parse_tag(text, name, lt, match.end())
        position = tag.end
        content: tuple[int, int] | None = None
        if name in _RAW_TEXT and tag.closed:
            closing = _RAW_END[name].search(text, position)
            stop = length if closing is None else closing.start()
            content = (position, stop)
            position = stop
        tags.append((tag, content))
        if name == "plaintext":
            return tags


def _link_kind(tag: _Tag, attribute: str, default: str) -> str:
    if tag.name == "link" and attribute == "href":
        rel = (tag.get("rel") or _Attribute("rel", "", 0, 0, 0)).value or ""
        if _STYLESHEET_RELS & set(rel.lower().split()):
            return REQUISITE
    return default


def _charset_position(text: str, tags: list[tuple[_Tag, tuple[int, int] | None]]) -> int:
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
        return text
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
    return "".join(out)


def _replace_value(attribute: _Attribute, value: str, edits: list[tuple[int, int, str]]) -> None:
    edits.append((attribute.value_start, attribute.end, _quote(value)))


def _rewrite_tag(
    tag: _Tag, base: str, links: LinkMap, mark_missing: bool, edits: list[tuple[int, int, str]]
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
            new = rewrite_refresh(content.value, base, links)
            if new != content.value:
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
