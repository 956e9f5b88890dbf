"""Link extraction from the tags a browser's tokenizer finds, in linear time, without a tree.

Used instead of the HTML parser when `nesting.exceeds_budget` says the parser would take
too long.  One regular expression reads the document the way the HTML tokenizer does:
comments end where the standard ends them (``<!-->``, ``<!--->``, ``--!>``), doctypes and
bogus comments at the first ``>``, end tags are read whole with their (quoted)
attributes, a value is quoted only right after ``=``, raw-text elements end at their own
end tag and ``<plaintext>`` at the end of the document.  An unterminated comment or quote
runs to the end, as in a browser.

Whether ``<style>`` or ``<title>`` is raw text depends on the tree inside SVG and MathML,
so a document with such content is read by `markup.scan_tags`, which keeps that much of
the tree (it costs about three times as much per tag).  Left to the parser: the
``<!-- <script>`` escapes inside a script.
"""

from __future__ import annotations

import html
import re

from ..markup.grammar import ELEMENTS
from .collector import LinkCollector
from .rules import css_links, element_links

_SPACE = r"\t\n\f\r "
# Attribute text up to the closing '>'; a value quoted right after '=' may contain '>'.
_ATTRIBUTES = rf"""(?:[^>=]++|=[{_SPACE}]*+(?:"[^"]*+(?:"|\Z)|'[^']*+(?:'|\Z))?)*+(?:>|\Z)"""
_RAW_TEXT = "script|style|textarea|title|xmp|iframe|noembed|noframes"
_NAME_END = rf"(?=[{_SPACE}/>]|\Z)"
# What no link comes from, skipped inside the regular expression: text, comments ('<!-->' and
# '<!--->' end at once), doctypes and bogus comments, end tags read whole, a '<' starting nothing.
_SKIPPED = (
    r"(?:[^<]++|<!--(?:-?>|.*?(?:--!?>|\Z))|<[!?][^>]*+(?:>|\Z)"
    rf"|</(?:[A-Za-z]{_ATTRIBUTES}|>|[^>]*+(?:>|\Z))|<(?![A-Za-z!?/]))*+"
)
_TOKEN = re.compile(
    _SKIPPED + rf"(?:<({_RAW_TEXT}){_NAME_END}({_ATTRIBUTES})(.*?)(?:</\1{_NAME_END}{_ATTRIBUTES}|\Z)"
    rf"|<(plaintext){_NAME_END}"
    rf"|<([A-Za-z][^{_SPACE}/>]*)({_ATTRIBUTES})"
    r"|\Z)",
    re.DOTALL | re.IGNORECASE,
)
_ATTRIBUTE = re.compile(
    rf"""([^{_SPACE}/>][^{_SPACE}/>=]*)"""
    rf"""(?:[{_SPACE}]*=[{_SPACE}]*(?:"([^"]*)"?|'([^']*)'?|([^{_SPACE}>]*)))?"""
)
_FOREIGN = frozenset({"svg", "math"})

# The elements links come from; any other tag is kept for its `style`.
_KEPT = ELEMENTS | {"base", "style"}

Element = tuple[str, dict[str, str | None], str | None]


def parse_attributes(text: str) -> dict[str, str | None]:
    """Attribute names (lower-cased) to values with character references decoded."""
    attributes: dict[str, str | None] = {}
    for match in _ATTRIBUTE.finditer(text):
        name = match.group(1).lower()
        if name in attributes:
            continue  # the first of duplicated attributes wins, as in HTML
        double, single, bare = match.group(2, 3, 4)
        value = double if double is not None else single if single is not None else bare
        if value is not None and "&" in value:
            value = html.unescape(value)
        attributes[name] = value
    return attributes


def tokenized_links(text: str, out: LinkCollector) -> None:
    """Add the links of an HTML document without building its tree."""
    elements = _matched(text)
    if elements is None:
        elements = _scanned(text)
    base = next((a["href"] for name, a, _ in elements if name == "base" and a.get("href")), None)
    if base is not None:
        out.rebase(base)
    for name, attributes, content in elements:
        if name == "base":
            continue
        element_links(name, attributes, out)
        if name == "style" and content:
            css_links(content, out)
        if out.overflow:
            return


def _matched(text: str) -> list[Element] | None:
    """The elements links come from, or None for a document with SVG or MathML in it."""
    elements: list[Element] = []
    for match in _TOKEN.finditer(text):
        raw_name, raw_attributes, content, plaintext, tag_name, tag_attributes = match.groups()
        if raw_name is not None:
            elements.append((raw_name.lower(), parse_attributes(raw_attributes), content))
        elif plaintext is not None:
            break  # the rest of the document is text
        elif tag_name is not None:
            name = tag_name.lower()
            if name in _FOREIGN:
                return None
            if name not in _KEPT and "style" not in tag_attributes.lower():
                continue
            attributes = parse_attributes(tag_attributes)
            if name in _KEPT or attributes.get("style") is not None:
                elements.append((name, attributes, None))
    return elements


def _scanned(text: str) -> list[Element]:
    # Imported here: every command line loads this plugin, and markup loads selectolax.
    from ..markup.markup import scan_tags

    elements: list[Element] = []
    for tag in scan_tags(text, _KEPT):
        attributes = {attribute.name: attribute.value for attribute in tag.attributes}
        content = None if tag.content is None else text[tag.content[0] : tag.content[1]]
        elements.append((tag.name, attributes, content))
    return elements
