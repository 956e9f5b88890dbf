"""One page's main text as the XHTML body of an EPUB chapter.

The main text is what the index searches (`archiver_plugins.markup.text.main_content`:
no navigation, side bars or footers).  E-readers validate strictly and render little, so
the chapter keeps only the elements of a text (headings, paragraphs, lists, tables,
quotes, code, figures, images and links) and of their attributes only those a reader
uses; every other element gives way to its content.  Links are handed to the book,
which knows the chapters and images: a link to a chapter stays inside the book, one to
any other web page points to the live web, anything else loses its link.

The main text comes from the markup library, as the index takes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser, LexborNode

from ..markup.text import main_content

__all__ = ["Chapter", "LinkTarget", "chapter_of"]


def _tags(names: str) -> frozenset[str]:
    return frozenset(names.split())


KEPT = _tags(
    "h1 h2 h3 h4 h5 h6 p ul ol li dl dt dd blockquote pre code kbd samp var em strong b i u s"
    " sub sup small mark q cite abbr dfn table caption thead tbody tfoot tr th td figure"
    " figcaption a img br hr"
)
"""Elements a chapter keeps; every other one is replaced by its content."""
_VOID = _tags("br hr img")
_BLOCK_IN_INLINE = _tags("h1 h2 h3 h4 h5 h6 p ul ol li dl dt dd blockquote pre table figure figcaption hr")
_INLINE = _tags("a code kbd samp var em strong b i u s sub sup small mark q cite abbr dfn")
_CELL_SPANS = ("colspan", "rowspan")
_ROWS = frozenset({"table", "thead", "tbody", "tfoot"})
_PARENTS: dict[str, frozenset[str]] = {
    "li": frozenset({"ul", "ol"}),
    "dt": frozenset({"dl"}),
    "dd": frozenset({"dl"}),
    "tr": _ROWS,
    "td": frozenset({"tr"}),
    "th": frozenset({"tr"}),
    "thead": frozenset({"table"}),
    "tbody": frozenset({"table"}),
    "tfoot": frozenset({"table"}),
    "caption": frozenset({"table"}),
    "figcaption": frozenset({"figure"}),
}
"""Elements valid only inside these (an HTML page may have them anywhere)."""
_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,100}$")
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
MAX_HEADINGS = 50
MAX_DEPTH = 200
"""Elements nested deeper than this give only their text (Python's stack is the limit)."""

LinkTarget = Callable[[str], str | None]
"""An absolute URL -> the href it becomes in the book (None: no link)."""


def _join(base: str, raw: str) -> str | None:
    """`raw` resolved against `base`, or None when it is not a URL urljoin can read ("http://[")."""
    try:
        return urljoin(base, raw)
    except ValueError:
        return None


def _text(value: str) -> str:
    """`value` escaped for XHTML, without the characters XML forbids."""
    return escape(_CONTROL.sub("", value), quote=True)


@dataclass
class Chapter:
    title: str
    body: str
    """Well-formed XHTML, the content of the chapter's <body>."""
    headings: list[tuple[int, str]] = field(default_factory=list)
    """(level, text) of the chapter's headings, for the table of contents."""
    words: int = 0


class _Writer:
    def __init__(self, base: str, page: LinkTarget, image: LinkTarget) -> None:
        self.base = base
        self.page = page
        self.image = image
        self.out: list[str] = []
        self.ids: set[str] = set()
        self.headings: list[tuple[int, str]] = []
        self.words = 0
        self.depth = 0

    def node(self, node: LexborNode, parent: str, in_link: bool, in_inline: bool) -> None:
        tag = node.tag or ""
        if tag == "-text":
            text = node.text_content or ""
            self.words += len(text.split())
            self.out.append(_text(text))
            return
        if tag.startswith(("-", "!")):
            return  # comments, doctype
        if self.depth > MAX_DEPTH:
            text = node.text(deep=True, separator=" ")
            self.words += len(text.split())
            self.out.append(_text(text))
            return
        keep = (
            tag in KEPT
            and not (tag == "a" and in_link)
            and not (in_inline and tag in _BLOCK_IN_INLINE)
            and (tag not in _PARENTS or parent in _PARENTS[tag])
        )
        if keep and tag == "img":
            self._img(node)
            return
        if not keep:
            self.children(node, parent, in_link, in_inline)
            return
        attributes = self._attributes(node, tag)
        if tag == "a" and not attributes:
            self.children(node, parent, in_link, in_inline)
            return
        if "id" in attributes:
            self.ids.add(attributes["id"])
        if tag in _HEADINGS and len(self.headings) < MAX_HEADINGS:
            text = " ".join(node.text(deep=True, separator=" ").split())
            if text:
                self.headings.append((int(tag[1]), text))
        shown = "".join(f' {name}="{_text(value)}"' for name, value in attributes.items())
        if tag in _VOID:
            self.out.append(f"<{tag}{shown}/>")
            return
        self.out.append(f"<{tag}{shown}>")
        self.children(node, tag, in_link or tag == "a", in_inline or tag in _INLINE or tag == "p")
        self.out.append(f"</{tag}>")

    def children(self, node: LexborNode, parent: str, in_link: bool, in_inline: bool) -> None:
        self.depth += 1
        child = node.child
        while child is not None:
            self.node(child, parent, in_link, in_inline)
            child = child.next
        self.depth -= 1

    def _attributes(self, node: LexborNode, tag: str) -> dict[str, str]:
        found: dict[str, str] = {}
        identifier = node.attributes.get("id")
        if identifier and _ID.match(identifier) and identifier not in self.ids:
            found["id"] = identifier  # taken when the element is written
        if tag == "a":
            raw = (node.attributes.get("href") or "").strip()
            target = _join(self.base, raw) if raw and not raw.startswith("#") else None
            href = self.page(target) if target is not None else None
            if raw.startswith("#") and len(raw) > 1:
                href = raw  # checked against the chapter's ids once it is written
            if href is not None:
                found["href"] = href
        if tag in ("td", "th"):
            for name in _CELL_SPANS:
                value = node.attributes.get(name) or ""
                if value.isdigit() and 0 < int(value) < 1000:
                    found[name] = str(int(value))
        return found

    def _img(self, node: LexborNode) -> None:
        raw = (node.attributes.get("src") or "").strip()
        target = _join(self.base, raw) if raw and not raw.startswith("data:") else None
        src = self.image(target) if target is not None else None
        if src is None:
            alt = (node.attributes.get("alt") or "").strip()
            if alt:
                self.out.append(_text(alt))
            return
        alt = node.attributes.get("alt") or ""
        self.out.append(f'<img src="{_text(src)}" alt="{_text(alt)}"/>')


_LOCAL_FRAGMENT = re.compile(r' href="#([^"]*)"')


def chapter_of(html: str, url: str, page: LinkTarget, image: LinkTarget) -> Chapter | None:
    """The chapter for the page at `url` whose markup is `html`, or None when it has no text."""
    tree = LexborHTMLParser(html)
    title_node = tree.css_first("title")
    title = " ".join(title_node.text(deep=True).split()) if title_node is not None else ""
    base_node = tree.css_first("base[href]")
    base = _join(url, (base_node.attributes.get("href") or "").strip()) if base_node is not None else url
    base = base or url
    body = tree.body
    if body is None:
        return None
    main = main_content(body)
    writer = _Writer(base, page, image)
    writer.children(main, "body", in_link=False, in_inline=False)
    if writer.words == 0 and "<img" not in "".join(writer.out):
        return None
    text = "".join(writer.out)

    def local(match: re.Match[str]) -> str:
        return match.group(0) if match.group(1) in writer.ids else ""

    text = _LOCAL_FRAGMENT.sub(local, text)
    if not title:
        title = writer.headings[0][1] if writer.headings else url
    if not any(level == 1 for level, _ in writer.headings):
        text = f"<h1>{_text(title)}</h1>\n{text}"
    return Chapter(title=_CONTROL.sub("", title), body=text, headings=writer.headings, words=writer.words)
