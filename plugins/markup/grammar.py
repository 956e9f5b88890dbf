"""Where an HTML or CSS document writes a URL, and what kind of link it is.

The one description of references read by the crawl (which URLs to fetch), the export
and the replay (which spans of text to point elsewhere), so the three cannot disagree.

A slot is (attribute, syntax, kind): the attribute holds one URL (`URL`), a ``srcset``
(`SRCSET`), a refresh's ``content`` (`REFRESH`) or declarations (`CSS`, ``style``).  The
kind is `None` for a URL that is rewritten but never fetched: a form's action, a
quotation's source, an origin to preconnect to.  A frame is a requisite, as for
``wget -p`` and browsers, which load it with the page.

CSS is read as the CSS Syntax standard tokenizes it: comments and strings are skipped,
``url(`` with an unquoted value is one token (a quote, space or parenthesis inside makes
it a bad URL, ignored), ``url("...")`` takes its string, and escapes are decoded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from archiver.api import LinkKind

PAGE = LinkKind.PAGE
REQUISITE = LinkKind.REQUISITE
IMPORT = LinkKind.IMPORT

URL = "url"
SRCSET = "srcset"
REFRESH = "refresh"
CSS = "css"

Slot = tuple[str, str, LinkKind | None]

_SVG_HREF: tuple[Slot, ...] = (("href", URL, REQUISITE), ("xlink:href", URL, REQUISITE))
_BACKGROUND: tuple[Slot, ...] = (("background", URL, REQUISITE),)
_CITE: tuple[Slot, ...] = (("cite", URL, None),)
_SRC: tuple[Slot, ...] = (("src", URL, REQUISITE),)

ATTRIBUTES: dict[str, tuple[Slot, ...]] = {
    "a": (("href", URL, PAGE), ("xlink:href", URL, PAGE)),
    "area": (("href", URL, PAGE),),
    "iframe": _SRC,
    "frame": _SRC,
    "img": (
        *(("src", URL, REQUISITE), ("srcset", SRCSET, REQUISITE)),
        *(("lowsrc", URL, REQUISITE), ("longdesc", URL, None)),
    ),
    "source": (("src", URL, REQUISITE), ("srcset", SRCSET, REQUISITE)),
    "script": _SRC + _SVG_HREF,
    "video": (("src", URL, REQUISITE), ("poster", URL, REQUISITE)),
    "audio": _SRC,
    "track": _SRC,
    "embed": _SRC,
    "object": (("data", URL, REQUISITE),),
    "input": (("src", URL, REQUISITE), ("formaction", URL, None)),
    "button": (("formaction", URL, None),),
    "form": (("action", URL, None),),
    **dict.fromkeys(("image", "use", "feimage", "feImage"), _SVG_HREF),  # feImage: as lexbor names it
    **dict.fromkeys(("body", "table", "thead", "tbody", "tfoot", "tr", "td", "th"), _BACKGROUND),
    **dict.fromkeys(("blockquote", "q", "ins", "del"), _CITE),
    "link": (("imagesrcset", SRCSET, REQUISITE),),
    "meta": (),
    "param": (),
}
"""Element -> the slots it always has; `slots` adds those that depend on other attributes."""

ELEMENTS = frozenset(ATTRIBUTES)
SVG_ELEMENTS = frozenset({"image", "use", "feimage"})
"""The elements above that exist only inside ``<svg>``."""

# `<link rel>` tokens naming something the page needs to render.
REQUISITE_RELS = frozenset(
    {
        *("stylesheet", "icon", "apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon"),
        *("fluid-icon", "preload", "modulepreload", "manifest"),
    }
)
# `<link rel>` tokens whose href is only an origin to connect to: nothing to fetch.
CONNECT_RELS = frozenset({"dns-prefetch", "preconnect"})
# `<param name>` values whose `value` is the URL a plugin loads.
PARAM_URLS = frozenset({"movie", "src", "url", "filename"})

_STYLE: tuple[Slot, ...] = (("style", CSS, REQUISITE),)
_REFRESH_SLOT: tuple[Slot, ...] = (("content", REFRESH, PAGE),)
_PARAM_SLOT: tuple[Slot, ...] = (("value", URL, REQUISITE),)
_DEPENDENT = frozenset({"link", "meta", "param"})


def link_kind(rel: str | None) -> LinkKind | None:
    rels = (rel or "").lower().split()
    if any(token in REQUISITE_RELS for token in rels):
        return REQUISITE
    if any(token in CONNECT_RELS for token in rels):
        return None
    return PAGE


def slots(tag: str, attributes: Mapping[str, str | None]) -> tuple[Slot, ...]:
    """The slots of one element: which of its attributes hold URLs, how, and of what kind."""
    found = ATTRIBUTES.get(tag, ())
    if tag in _DEPENDENT:
        if tag == "link":
            found = (("href", URL, link_kind(attributes.get("rel"))), *found)
        elif tag == "meta":
            if (attributes.get("http-equiv") or "").strip().lower() == "refresh":
                found = _REFRESH_SLOT
        elif (attributes.get("name") or "").strip().lower() in PARAM_URLS:
            found = _PARAM_SLOT
    if "style" in attributes:
        found += _STYLE
    return found


# -- srcset and refresh ------------------------------------------------------------------

_SPACE = " \t\n\r\f"
_SPACE_OR_COMMA = _SPACE + ","
_NON_SPACE = re.compile(r"[^ \t\n\r\f]+")
# Descriptors of one srcset candidate: anything up to a comma outside parentheses.
_DESCRIPTORS = re.compile(r"(?:[^,(]++|\([^)]*+\)?)*+")
_REFRESH = re.compile(
    r"[ \t\n\r\f]*+(?=[0-9.])[0-9.]*+[ \t\n\r\f]*+[;,]?[ \t\n\r\f]*+(?:url[ \t\n\r\f]*+=[ \t\n\r\f]*+)?",
    re.IGNORECASE,
)


def srcset_spans(value: str) -> list[tuple[int, int]]:
    """(start, end) of each URL of a ``srcset``, split as the HTML standard does: a URL runs
    to the next space (commas inside it are kept) and descriptors to a comma outside
    parentheses."""
    if "," not in value and " " not in value.strip(_SPACE):
        stripped = value.strip(_SPACE)
        start = value.find(stripped) if stripped else 0
        return [(start, start + len(stripped))] if stripped else []
    spans: list[tuple[int, int]] = []
    position, end = 0, len(value)
    while position < end:
        while position < end and value[position] in _SPACE_OR_COMMA:
            position += 1
        match = _NON_SPACE.match(value, position)
        if match is None:
            break
        start, position = match.span()
        stop = position
        if value[stop - 1] == ",":
            while value[stop - 1] == ",":
                stop -= 1
        else:
            descriptors = _DESCRIPTORS.match(value, position)
            position = descriptors.end() + 1 if descriptors is not None else end
        if stop > start:
            spans.append((start, stop))
    return spans


def srcset_urls(value: str) -> list[str]:
    """The image URLs of a ``srcset``."""
    return [value[start:end] for start, end in srcset_spans(value)]


def refresh_span(content: str) -> tuple[int, int] | None:
    """(start, end) of the URL in a refresh's content (``5; url='next.html'``), as the
    HTML standard reads it: a delay first, then an optional ``url=``, then the URL, up to
    its closing quote when it opens with one."""
    match = _REFRESH.match(content)
    if match is None:
        return None
    start, end = match.end(), len(content)
    if content[start : start + 1] in ("'", '"'):
        closing = content.find(content[start], start + 1)
        start += 1
        if closing >= 0:
            end = closing
    while start < end and content[start] in _SPACE:
        start += 1
    while end > start and content[end - 1] in _SPACE:
        end -= 1
    return (start, end) if end > start else None


def refresh_url(content: str) -> str | None:
    """The URL of a ``<meta http-equiv=refresh>``, if it names one."""
    span = refresh_span(content)
    return None if span is None else content[span[0] : span[1]]


# -- CSS -----------------------------------------------------------------------------------

_W = "[ \t\n\r\f]"


def _string(name: str) -> str:
    """A CSS string token; `{name}end` is unset when a newline ends it (a bad string)."""
    return (
        rf"""(?:"(?P<{name}d>(?:[^"\\\n]++|\\.)*+)|'(?P<{name}s>(?:[^'\\\n]++|\\.)*+))"""
        rf"""(?P<{name}end>["']|\Z)?"""
    )


# Each match first skips, in C, what holds no reference: runs of ordinary characters,
# escapes, comments, strings (but the one after ``@import``) and a `u` inside a word.  Then
# it reads one reference, so the Python loop runs once per URL and no character is read twice.
_SKIP = (
    r"""(?:[^/@u"'\\]++|\\.|/\*.*?(?:\*/|\Z)|/(?!\*)|@(?!import(?![\w-]))|(?<=[\w-])u|u(?!rl\()"""
    r"""|"(?:[^"\\\n]++|\\.)*+"?|'(?:[^'\\\n]++|\\.)*+'?)*+"""
)
_CSS_TOKEN = re.compile(
    _SKIP + rf"(?:(?P<import>@import(?![\w-]){_W}*+)?url\({_W}*+(?:{_string('u')}"
    rf"""|(?P<bare>(?:[^ \t\n\r\f"'()\\]++|\\(?:[0-9a-fA-F]{{1,6}}{_W}?|[^\n]))*+){_W}*+(?:\)|\Z)"""
    r"|(?:[^)\\]++|\\.)*+\)?)"  # the rest of a bad URL, which stands for nothing
    rf"|@import(?![\w-]){_W}*+{_string('s')}"
    r"|@import|\Z)",
    re.DOTALL | re.IGNORECASE,
)
_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})[ \t\n\r\f]?|\\(.)", re.DOTALL)


CssReference = tuple[int, int, str, LinkKind, str]
"""(start, end, url, kind, quote): the URL as written spans text[start:end] with its quotes
(`quote` is "" for an unquoted ``url()``); `url` has its escapes decoded."""


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group(1):
            code = int(match.group(1), 16)
            return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
        return "" if match.group(2) == "\n" else match.group(2)

    return _ESCAPE.sub(one, text)


def css_references(text: str, *, imports: bool = True) -> Iterator[CssReference]:
    """The ``url()`` and ``@import`` references of a stylesheet, in order.

    `imports=False` for a ``style`` attribute, where ``@import`` means nothing.
    """
    for match in _CSS_TOKEN.finditer(text):
        last = match.lastgroup  # the group that closed last tells the token
        if last == "bare":
            imported = match.group("import") is not None
        elif last == "uend":
            last = "ud" if match.group("ud") is not None else "us"
            imported = match.group("import") is not None
        elif last == "send":
            last = "sd" if match.group("sd") is not None else "ss"
            imported = True
        else:
            continue  # a bad URL or string, a bare @import, the end
        if imported and not imports:
            continue
        start, end = match.span(last)
        raw = text[start:end]
        url = _unescape(raw) if "\\" in raw else raw
        if not url:
            continue
        kind = IMPORT if imported else REQUISITE
        if last == "bare":
            yield start, end, url, kind, ""
        else:  # the span covers the quotes (the closing one is missing at the end of the text)
            quote = text[start - 1]
            yield start - 1, end + (text[end : end + 1] == quote), url, kind, quote
