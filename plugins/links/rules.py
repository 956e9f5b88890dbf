"""Which attribute of which element holds a URL, and what kind of link it is.

Shared by the parser-based extractor and the tokenizer fallback, so both read a document
the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from archiver import LinkKind

from .collector import LinkCollector
from .css import css_links

PAGE = LinkKind.PAGE
REQUISITE = LinkKind.REQUISITE

# Elements whose attributes each hold one URL.
SINGLE_URL_ATTRIBUTES: dict[str, tuple[tuple[str, LinkKind], ...]] = {
    "a": (("href", PAGE),),
    "area": (("href", PAGE),),
    "iframe": (("src", REQUISITE),),
    "frame": (("src", REQUISITE),),
    "img": (("src", REQUISITE),),
    "source": (("src", REQUISITE),),
    "script": (("src", REQUISITE),),
    "video": (("src", REQUISITE), ("poster", REQUISITE)),
    "audio": (("src", REQUISITE),),
    "track": (("src", REQUISITE),),
    "object": (("data", REQUISITE),),
    "embed": (("src", REQUISITE),),
    "input": (("src", REQUISITE),),
}

SRCSET_ATTRIBUTES = {"img": "srcset", "source": "srcset", "link": "imagesrcset"}

# `<link rel>` tokens naming something the page needs to render.
REQUISITE_RELS = frozenset(
    {
        "stylesheet",
        "icon",
        "apple-touch-icon",
        "apple-touch-icon-precomposed",
        "mask-icon",
        "fluid-icon",
        "preload",
        "modulepreload",
        "manifest",
    }
)
# `<link rel>` tokens whose href is only an origin to connect to: nothing to fetch.
IGNORED_RELS = frozenset({"dns-prefetch", "preconnect"})

# Every element the rules above look at, for the parser's selector and the tokenizer.
ELEMENTS = frozenset({*SINGLE_URL_ATTRIBUTES, "link", "meta", "base", "style"})

_SPACE = " \t\n\r\f"
_SPACE_OR_COMMA = _SPACE + ","
_NON_SPACE = re.compile(r"[^ \t\n\r\f]+")
# Descriptors of one srcset candidate: anything up to a comma outside parentheses.
_DESCRIPTORS = re.compile(r"(?:[^,(]++|\([^)]*+\)?)*+")
_REFRESH = re.compile(r"\s*[0-9.]*\s*[;,]?\s*(?:url\s*=\s*)?(.*)", re.IGNORECASE | re.DOTALL)


def srcset_urls(value: str) -> list[str]:
    """The image URLs of a `srcset`, split as the HTML standard does (URLs may hold commas)."""
    stripped = value.strip(_SPACE)
    if "," not in stripped and " " not in stripped:
        return [stripped] if stripped else []
    urls: list[str] = []
    pos, end = 0, len(value)
    while pos < end:
        while pos < end and value[pos] in _SPACE_OR_COMMA:
            pos += 1
        match = _NON_SPACE.match(value, pos)
        if match is None:
            break
        url = match.group()
        pos = match.end()
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            descriptors = _DESCRIPTORS.match(value, pos)
            pos = descriptors.end() + 1 if descriptors is not None else end
        if url:
            urls.append(url)
    return urls


def refresh_url(content: str) -> str | None:
    """The URL of a `<meta http-equiv=refresh content="5; url=...">`, if it names one."""
    match = _REFRESH.match(content)
    if match is None:
        return None
    url = match.group(1).strip(_SPACE)
    if url[:1] in ("'", '"'):
        quote = url[0]
        url = url[1:]
        closing = url.find(quote)
        if closing >= 0:
            url = url[:closing]
    return url or None


def element_links(tag: str, attributes: Mapping[str, str | None], out: LinkCollector) -> None:
    """Add the links held by one element's attributes (not its text)."""
    single = SINGLE_URL_ATTRIBUTES.get(tag)
    if single is not None:
        for name, kind in single:
            value = attributes.get(name)
            if value:
                out.add(value, kind)
    elif tag == "link":
        href = attributes.get("href")
        if href:
            rels = (attributes.get("rel") or "").lower().split()
            if any(rel in REQUISITE_RELS for rel in rels):
                out.add(href, REQUISITE)
            elif not any(rel in IGNORED_RELS for rel in rels):
                out.add(href, PAGE)
    elif tag == "meta" and (attributes.get("http-equiv") or "").strip().lower() == "refresh":
        url = refresh_url(attributes.get("content") or "")
        if url:
            out.add(url, PAGE)
    srcset_name = SRCSET_ATTRIBUTES.get(tag)
    if srcset_name is not None:
        srcset = attributes.get(srcset_name)
        if srcset:
            for url in srcset_urls(srcset):
                out.add(url, REQUISITE)
    background = attributes.get("background")
    if background:
        out.add(background, REQUISITE)
    style = attributes.get("style")
    if style and "url(" in style.lower():
        css_links(style, out, imports=False)
