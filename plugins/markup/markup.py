"""Where the tags of an HTML document are, as a browser's tokenizer finds them.

The rewriters that keep every other byte of a document (the export's and the replay's)
need its start tags: where each one starts and ends, its attributes and where their
values are.  A pattern that does not follow the HTML standard hides tags that a browser
sees, and a hidden ``<meta http-equiv=refresh>`` takes the reader to the live web.  So
this scanner follows the tokenizer: comments end where the standard ends them
(``<!-->``, ``<!--->``, ``--!>``), bogus comments and doctypes at the first ``>``, end
tags are read with their (quoted) attributes, an attribute value is quoted only right
after ``=``, raw-text elements end at their own end tag and ``<script>`` only outside
its ``<!-- <script>`` escapes.  Whether ``<style>``, ``<title>`` and the like are raw text
depends on the tree: inside SVG and MathML they are not, until a tag such as ``<p>`` or
``<meta>`` breaks out or an integration point (``foreignObject``, ``mtext``) opens HTML
again; the scanner keeps that much of the tree.  An unterminated comment, quote or
raw-text element runs to the end of the document, as in a browser.

``<noscript>`` is raw text where scripts run; its content is scanned as markup too, since
a reader without scripts parses it.

Following the tree builder only that far leaves rare documents where a browser's tree
differs (an end tag that closes, or not, the SVG around it).  For the one tag that leaves
an archive without a click, `disarm_refreshes` checks the rewritten document with a
browser-grade parser (lexbor) and disarms any refresh the rewriting missed.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser

__all__ = ["RAW_TEXT", "Attribute", "Tag", "disarm_refreshes", "refresh_target", "scan_tags"]

_TAG_OPEN = re.compile(r"<(?:(!--)|(!)|(\?)|(/[A-Za-z])|(/>)|(/)|([A-Za-z]))")
_COMMENT_END = re.compile(r"--!?>")
_ATTRIBUTE = re.compile(
    r"[\t\n\f\r /]*(?:(?P<end>>)|(?P<name>[^\t\n\f\r />][^\t\n\f\r />=]*)"
    r"(?:[\t\n\f\r ]*=[\t\n\f\r ]*"
    r"""(?:"(?P<dq>[^"]*)(?:"|\Z)|'(?P<sq>[^']*)(?:'|\Z)|(?P<uq>[^\t\n\f\r >]+)))?"""
    r"|\Z)"
)
_TAG_NAME = re.compile(r"[^\t\n\f\r />]*")

RAW_TEXT = frozenset(
    {"script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript"}
)
_RAW_END = {name: re.compile(rf"</{name}[\t\n\f\r />]", re.IGNORECASE) for name in RAW_TEXT}
_SCRIPT_DATA = re.compile(r"<!--|</script[\t\n\f\r />]", re.IGNORECASE)
_SCRIPT_ESCAPED = re.compile(r"-->|</script[\t\n\f\r />]|<script[\t\n\f\r />]", re.IGNORECASE)
_SCRIPT_DOUBLE = re.compile(r"-->|</script[\t\n\f\r />]", re.IGNORECASE)

# The tree builder's foreign content: the tags that leave it, and where HTML comes back.
_BREAKOUT = frozenset(
    {
        *("b", "big", "blockquote", "body", "br", "center", "code", "dd", "div", "dl", "dt", "em"),
        *("embed", "h1", "h2", "h3", "h4", "h5", "h6", "head", "hr", "i", "img", "li", "listing"),
        *("menu", "meta", "nobr", "ol", "p", "pre", "ruby", "s", "small", "span", "strong"),
        *("strike", "sub", "sup", "table", "tt", "u", "ul", "var"),
    }
)
_INTEGRATION = {
    "svg": frozenset({"foreignobject", "desc", "title"}),
    "math": frozenset({"mi", "mo", "mn", "ms", "mtext"}),
}
_HTML_ENCODINGS = ("text/html", "application/xhtml+xml")
_VOID = frozenset(
    {
        *("area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta"),
        *("param", "source", "track", "wbr"),
    }
)


@dataclass(slots=True)
class Attribute:
    name: str
    value: str | None
    start: int  # of the name
    value_start: int  # of the value including its quote; == end when there is no value
    end: int  # just past the value (and its closing quote)


@dataclass(slots=True)
class Tag:
    name: str
    start: int
    end: int  # just past '>' (or the end of the text)
    closed: bool
    attributes: list[Attribute] = field(default_factory=list)
    content: tuple[int, int] | None = None
    """The span of a raw-text element's text (between its start and end tags)."""

    self_closing: bool = False

    def get(self, name: str) -> Attribute | None:
        for attribute in self.attributes:
            if attribute.name == name:
                return attribute
        return None

    def value(self, name: str) -> str:
        """The value of attribute `name`, "" when it is absent or has none."""
        attribute = self.get(name)
        return (attribute.value if attribute is not None else None) or ""


def _parse_tag(text: str, name: str, start: int, position: int) -> Tag:
    tag = Tag(name=name, start=start, end=len(text), closed=False)
    seen: set[str] = set()
    while True:
        match = _ATTRIBUTE.match(text, position)
        if match is None or (match.end() == position and match.group("end") is None):
            return tag
        position = match.end()
        if match.group("end") is not None:
            tag.end = position
            tag.closed = True
            tag.self_closing = match.start("end") > match.start() and text[match.start("end") - 1] == "/"
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
        tag.attributes.append(Attribute(lowered, value, match.start("name"), value_start, match.end()))


def _script_end(text: str, position: int) -> int:
    """Where the text of a ``<script>`` ends: its end tag outside the ``<!--`` escapes."""
    state = _SCRIPT_DATA
    while True:
        match = state.search(text, position)
        if match is None:
            return len(text)
        token = match.group().lower()
        if state is _SCRIPT_DATA:
            if token.startswith("</"):
                return match.start()
            state, position = _SCRIPT_ESCAPED, match.start() + 2  # '<!-->' ends where it starts
        elif token == "-->":
            state, position = _SCRIPT_DATA, match.end()
        elif state is _SCRIPT_ESCAPED and token.startswith("</"):
            return match.start()
        elif state is _SCRIPT_ESCAPED:
            state, position = _SCRIPT_DOUBLE, match.end()
        else:
            state, position = _SCRIPT_ESCAPED, match.end()


@dataclass(slots=True)
class _Tree:
    """As much of the tree builder's stack as decides whether a tag opens raw text."""

    open: list[tuple[str, str]] = field(default_factory=list)  # (name, "svg" | "math" | "html")

    def foreign(self) -> bool:
        if not self.open:
            return False
        name, space = self.open[-1]
        return space != "html" and name not in _INTEGRATION[space] and name != "annotation-xml+html"

    def _leave_foreign(self) -> None:
        while self.foreign():
            self.open.pop()

    def start(self, tag: Tag) -> bool:
        """Record a start tag; True when it is an HTML element (raw text applies)."""
        name = tag.name
        if self.foreign():
            breakout = name in _BREAKOUT or (
                name == "font" and any(a.name in ("color", "face", "size") for a in tag.attributes)
            )
            if not breakout:
                space = self.open[-1][1]
                encoding = tag.value("encoding").strip().lower()
                if name == "annotation-xml" and space == "math" and encoding in _HTML_ENCODINGS:
                    name = "annotation-xml+html"
                if not tag.self_closing:
                    self.open.append((name, "svg" if name == "svg" else space))
                return False
            self._leave_foreign()
        if name in ("svg", "math"):
            if not tag.self_closing:
                self.open.append((name, name))
            return False
        if self.open and name not in _VOID and name not in RAW_TEXT and name != "plaintext":
            self.open.append((name, "html"))
        return True

    def end(self, name: str) -> None:
        if not self.open:
            return
        if self.foreign() and name in ("br", "p"):
            self._leave_foreign()
            return
        for index in range(len(self.open) - 1, -1, -1):
            if self.open[index][0].split("+", 1)[0] == name:
                del self.open[index:]
                return
        if self.foreign():
            del self.open[:]  # an end tag for an HTML element further up closes the foreign content


def scan_tags(text: str, interesting: frozenset[str] | None = None, *, scripting: bool = True) -> list[Tag]:
    """The start tags of `text` in order, raw-text elements with their `content` span.

    Only tags named in `interesting` (all when None) are returned, with any other tag that
    has a ``style`` attribute; every tag is read, since each one moves the tokenizer.
    `scripting` False reads the document as a browser without scripts does, where
    ``<noscript>`` holds markup.
    """
    tags: list[Tag] = []
    tree = _Tree()
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
        if match.group(1):  # a comment; '<!-->' and '<!--->' end at once
            if text.startswith(">", lt + 4):
                position = lt + 5
            elif text.startswith("->", lt + 4):
                position = lt + 6
            else:
                closing = _COMMENT_END.search(text, lt + 4)
                position = length if closing is None else closing.end()
            continue
        if match.group(2) or match.group(3) or match.group(6):  # doctype, bogus comment, CDATA
            gt = text.find(">", lt + 2)
            position = length if gt < 0 else gt + 1
            continue
        if match.group(5):  # '</>' is dropped
            position = lt + 3
            continue
        if match.group(4):  # an end tag, read like a start tag (a quoted '>' does not end it)
            name_end = _TAG_NAME.match(text, lt + 2)
            assert name_end is not None
            end_tag = _parse_tag(text, text[lt + 2 : name_end.end()].lower(), lt, name_end.end())
            tree.end(end_tag.name)
            position = end_tag.end
            continue
        name_end = _TAG_NAME.match(text, lt + 1)
        assert name_end is not None
        name = text[lt + 1 : name_end.end()].lower()
        tag = _parse_tag(text, name, lt, name_end.end())
        position = tag.end
        is_html = tree.start(tag) if tag.closed else False
        if is_html and tag.closed and name in RAW_TEXT and (scripting or name != "noscript"):
            stop = _script_end(text, position) if name == "script" else None
            if stop is None:
                raw_end = _RAW_END[name].search(text, position)
                stop = length if raw_end is None else raw_end.start()
            tag.content = (position, stop)
            if name == "noscript":
                tags.extend(
                    inner
                    for inner in scan_tags(text[position:stop], interesting, scripting=False)
                    if _shift(inner, position)
                )
            position = stop
        if interesting is None or name in interesting or tag.get("style") is not None:
            tags.append(tag)
        if is_html and name == "plaintext":
            return tags


def _shift(tag: Tag, offset: int) -> bool:
    """Move a tag found in a slice to its place in the whole text."""
    tag.start += offset
    tag.end += offset
    if tag.content is not None:
        tag.content = (tag.content[0] + offset, tag.content[1] + offset)
    for attribute in tag.attributes:
        attribute.start += offset
        attribute.value_start += offset
        attribute.end += offset
    return True


_REFRESH_URL = re.compile(
    r"""^\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?(["']?)(.*?)\1\s*$""", re.IGNORECASE | re.DOTALL
)
_MENTIONS_REFRESH = re.compile("refresh", re.IGNORECASE)
DISARMED = "data-archived-http-equiv"


def refresh_target(content: str) -> str:
    """The URL of a refresh's ``content`` (``5; url='next.html'`` -> ``next.html``)."""
    match = _REFRESH_URL.match(content)
    return (match.group(2) if match else content).strip()


def disarm_refreshes(document: str, safe: Callable[[str], bool]) -> str:
    """`document`, unless a browser-grade parser finds a refresh whose target is not `safe`.

    Then the document comes back as that parser writes it, with those refreshes disarmed
    (``http-equiv`` renamed): byte-for-byte fidelity gives way only for such a document.
    """
    if _MENTIONS_REFRESH.search(document) is None:
        return document
    tree = LexborHTMLParser(document)
    unsafe = [
        meta
        for meta in tree.css("meta")
        if (meta.attributes.get("http-equiv") or "").strip().lower() == "refresh"
        and not safe(refresh_target(meta.attributes.get("content") or ""))
    ]
    if not unsafe:
        return document
    for meta in unsafe:
        meta.attrs[DISARMED] = meta.attributes.get("http-equiv") or ""
        del meta.attrs["http-equiv"]
    return tree.html or ""
