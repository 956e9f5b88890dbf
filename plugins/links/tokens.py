"""Link extraction by tokenizing tags with regular expressions, in linear time.

Used instead of the HTML parser when `nesting.exceeds_budget` says the parser would take
too long.  It reads comments, raw-text elements (`script`, `style`, ...) and quoted
attribute values the way the HTML tokenizer does, closely enough for links; an
unterminated comment or quote runs to the end of the document, as in a browser.
"""

from __future__ import annotations

import html
import re

from .collector import LinkCollector
from .css import css_links
from .rules import ELEMENTS, element_links

# Attribute text up to the closing '>'; a quoted value may contain '>'.
_ATTRIBUTES = r"""((?:[^>"']++|"[^"]*+(?:"|\Z)|'[^']*+(?:'|\Z))*+)(?:>|\Z)"""
_TOKEN = re.compile(
    r"<!--.*?(?:-->|\Z)"
    r"|<(script|style|textarea|title|xmp|noembed|noframes)\b" + _ATTRIBUTES + r"(.*?)(?:</\1\s*>|\Z)"
    r"|<([A-Za-z][^\s/>]*)" + _ATTRIBUTES,
    re.DOTALL | re.IGNORECASE,
)
_ATTRIBUTE = re.compile(r"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"?|'([^']*)'?|([^\s>]*)))?""")


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
    elements: list[tuple[str, dict[str, str | None], str | None]] = []
    base: str | None = None
    for match in _TOKEN.finditer(text):
        raw_name, raw_attributes, content, tag_name, tag_attributes = match.groups()
        if raw_name is not None:
            name = raw_name.lower()
            elements.append((name, parse_attributes(raw_attributes), content))
            continue
        if tag_name is None:
            continue  # a comment
        name = tag_name.lower()
        if name not in ELEMENTS:
            lowered = tag_attributes.lower()
            if "style" not in lowered and "background" not in lowered:
                continue
        attributes = parse_attributes(tag_attributes)
        if name == "base":
            if base is None and attributes.get("href"):
                base = attributes["href"]
            continue
        elements.append((name, attributes, None))
    if base is not None:
        out.rebase(base)
    for name, attributes, content in elements:
        element_links(name, attributes, out)
        if name == "style" and content:
            css_links(content, out)
        if out.overflow:
            return
